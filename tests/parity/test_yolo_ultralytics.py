"""``--protocol yolo`` against ultralytics 8.4.190 itself, fed the same boxes: ``==`` on every value.

ultralytics runs inside the test: ``DetectionValidator._process_batch`` (``box_iou`` and 8.4's
``match_predictions``) per image, ``DetMetrics.update_stats`` as ``update_metrics`` calls it, then
``DetMetrics.process()``; ``mean_results()`` must equal deteval's ``stats`` and ``class_result(i)`` each
per-class row. "The same boxes": deteval's float64 pixel corners (:mod:`deteval.io.yolo`) as tensors
(``box_iou`` rounds them to float32), the confidences as float32 tensors, each image's predictions in
descending confidence (what NMS hands ultralytics). Confidences are distinct (ultralytics' ``np.argsort``
breaks ties in an order of its own).

Set-up: ``pip install torch==2.13.0`` (CPU) and ``pip install --no-deps ultralytics==8.4.190`` with the
packages the imports below load: ``opencv-python-headless``, ``pillow``, ``pyyaml``. torchvision is only read
for its version at import: a metadata-only stand-in (:func:`_torchvision_stand_in`) goes on ``sys.path``
when none is installed. ``YOLO_OFFLINE=1`` and a temporary ``YOLO_CONFIG_DIR`` keep ultralytics off the
network and out of the home directory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra")


@contextlib.contextmanager
def _torchvision_stand_in():
    """A ``torchvision`` of metadata only while ultralytics imports (it reads the version), where none is
    installed; taken off ``sys.path`` and ``sys.modules`` afterwards, so that other tests (torchmetrics')
    still see no torchvision."""
    try:
        import torchvision  # noqa: F401

        yield
        return
    except Exception:
        pass
    root = Path(tempfile.mkdtemp(prefix="torchvision-stand-in-"))
    (root / "torchvision").mkdir()
    (root / "torchvision" / "__init__.py").write_text('__version__ = "0.28.0"\n')
    meta = root / "torchvision-0.28.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.28.0\n")
    sys.modules.pop("torchvision", None)
    sys.path.append(str(root))
    try:
        yield
    finally:
        sys.path.remove(str(root))
        module = sys.modules.get("torchvision")
        if module is not None and str(root) in (getattr(module, "__file__", None) or ""):
            del sys.modules["torchvision"]


os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="ultralytics-config-"))
if importlib.util.find_spec("ultralytics") is None:
    pytest.skip("ultralytics is the reference of the yolo protocol (not installed)", allow_module_level=True)
with _torchvision_stand_in():
    from ultralytics.models.yolo.detect.val import DetectionValidator
    from ultralytics.utils.metrics import DetMetrics, box_iou

    VALIDATOR = DetectionValidator()  # its __init__ imports torchvision: made here, once (stateless for _process_batch)

from support.yolo_folders import generate, write_rows  # noqa: E402

import deteval  # noqa: E402
from deteval.geometry.float32_boxes import box_iou32  # noqa: E402
from deteval.io.yolo import read_yolo, yolo_containers  # noqa: E402
from deteval.protocols.yolo import IOU_THRS  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _validator() -> DetectionValidator:
    return VALIDATOR


def ultralytics_figures(preds: Path, labels: Path, sizes: Path | None, names: list[str] | None = None):
    """``(mean_results, [class_result(i) ...], ap_class_index)`` of ultralytics fed deteval's boxes."""
    ys = read_yolo(preds, labels, sizes, names)
    dets, gt = yolo_containers(ys)
    v = _validator()
    metrics = DetMetrics(names={int(k): str(k) for k in gt.categories.ids})
    conf32 = dets.score.astype(np.float32)
    for i, stem in enumerate(ys.stems):
        g = np.flatnonzero(gt.image == i)
        d = np.flatnonzero(dets.image == i)
        d = d[np.argsort(-conf32[d], kind="stable")]  # NMS's order: descending confidence
        cls = torch.from_numpy(gt.categories.ids[gt.category[g]].astype(np.float32))
        batch = {"cls": cls, "bboxes": torch.from_numpy(gt.boxes[g])}
        pred = {
            "cls": torch.from_numpy(gt.categories.ids[dets.category[d]].astype(np.float32)),
            "conf": torch.from_numpy(conf32[d]),
            "bboxes": torch.from_numpy(dets.boxes[d]),
        }
        no_pred = len(d) == 0
        metrics.update_stats(
            {
                **v._process_batch(pred, batch),
                "target_cls": cls.numpy(),
                "target_img": np.unique(cls.numpy()),
                "conf": np.zeros(0) if no_pred else pred["conf"].numpy(),
                "pred_cls": np.zeros(0) if no_pred else pred["cls"].numpy(),
                "im_name": stem,
            }
        )
    metrics.process()
    rows = [metrics.class_result(i) for i in range(len(metrics.box.ap_class_index))]
    return metrics.mean_results(), rows, list(metrics.box.ap_class_index)


def assert_parity(preds: Path, labels: Path, sizes: Path | None, names=None) -> None:
    expected, rows, classes = ultralytics_figures(preds, labels, sizes, names)
    result = deteval.evaluate(str(preds), str(labels), protocol="yolo", image_sizes=sizes, names=names)
    assert list(result.stats.values()) == [float(x) for x in expected]
    assert [r["category_id"] for r in result.per_class] == [int(c) for c in classes]
    got = [(r["P"], r["R"], r["AP50"], r["AP50-95"]) for r in result.per_class]
    assert got == [tuple(float(x) for x in row) for row in rows]


# ---------------------------------------------------------------- generated folders


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_sizes", [True, False])
def test_generated_folders(tmp_path: Path, seed: int, with_sizes: bool) -> None:
    assert_parity(*generate(tmp_path, seed, with_sizes=with_sizes))


def test_generated_folders_with_names(tmp_path: Path) -> None:
    # 90 names: classes listed without labels or predictions, predictions of classes without labels
    assert_parity(*generate(tmp_path, 9), names=[f"class {i}" for i in range(90)])


# ---------------------------------------------------------------- hand-made cases


def test_thresholds_are_torch_linspace() -> None:
    assert np.array_equal(IOU_THRS, torch.linspace(0.5, 0.95, 10).numpy())
    assert np.array_equal(IOU_THRS, _validator().iouv.numpy())


def test_box_iou_is_ultralytics(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    a = rng.uniform(0, 50, (60, 2))
    g = np.concatenate([a, a + rng.uniform(0, 30, (60, 2))], axis=1)
    b = rng.uniform(0, 50, (70, 2))
    d = np.concatenate([b, b + rng.uniform(0, 30, (70, 2))], axis=1)
    tiny = np.array([[0, 0, 1e-4, 1e-4], [0, 0, 2e-4, 1e-4], [3, 3, 3, 3]])  # where eps matters; empty boxes
    g, d = np.concatenate([g, tiny]), np.concatenate([d, tiny])
    assert np.array_equal(box_iou32(g, d), box_iou(torch.from_numpy(g), torch.from_numpy(d)).numpy())


def _case(tmp_path: Path, labels: dict, preds: dict, sizes: dict | None) -> tuple[Path, Path, Path | None]:
    for stem, rows in labels.items():
        write_rows(tmp_path / "labels", stem, rows)
    (tmp_path / "preds").mkdir(exist_ok=True)
    for stem, rows in preds.items():
        write_rows(tmp_path / "preds", stem, rows)
    if sizes is None:
        return tmp_path / "preds", tmp_path / "labels", None
    (tmp_path / "sizes.json").write_text(json.dumps(sizes))
    return tmp_path / "preds", tmp_path / "labels", tmp_path / "sizes.json"


def test_iou_exactly_on_thresholds(tmp_path: Path) -> None:
    # 100 x 100: label [40, 40, 60, 60], predictions of IoU 0.5, 0.75 (in float32, eps below the last bit)
    labels = {"a": [(0, 0.5, 0.5, 0.2, 0.2)], "b": [(0, 0.5, 0.5, 0.2, 0.2)], "c": [(3, 0.5, 0.5, 0.2, 0.2)]}
    preds = {
        "a": [(0, 0.5, 0.45, 0.2, 0.1, 0.9)],  # IoU 0.5
        "b": [(0, 0.5, 0.475, 0.2, 0.15, 0.8)],  # IoU 0.75
        "c": [(3, 0.5, 0.5, 0.2, 0.2, 0.7)],
    }
    sizes = {"a": [100, 100], "b": [100, 100], "c": [100, 100]}
    paths = _case(tmp_path, labels, preds, sizes)
    dets, gt = yolo_containers(read_yolo(*paths))
    assert box_iou32(gt.boxes[:1], dets.boxes[:1])[0, 0] == np.float32(0.5)
    assert box_iou32(gt.boxes[1:2], dets.boxes[1:2])[0, 0] == np.float32(0.75)
    assert_parity(*paths)


def test_equal_iou_goes_to_the_first_label_and_lower_iou_first(tmp_path: Path) -> None:
    labels = {"a": [(1, 0.05, 0.05, 0.1, 0.1), (1, 0.1, 0.05, 0.1, 0.1), (2, 0.5, 0.5, 0.2, 0.2)]}
    preds = {
        "a": [
            (1, 0.075, 0.05, 0.1, 0.1, 0.6),  # equal IoU (0.6) with both labels of class 1: the first
            (1, 0.1, 0.05, 0.1, 0.1, 0.5),
            (2, 0.5, 0.5, 0.2, 0.14, 0.9),  # higher confidence, IoU 0.7
            (2, 0.5, 0.5, 0.2, 0.19, 0.8),  # lower confidence, IoU 0.95
            (5, 0.5, 0.5, 0.2, 0.2, 0.99),  # a class without labels: ignored
        ]
    }
    assert_parity(*_case(tmp_path, labels, preds, {"a": [640, 480]}))
    assert_parity(*_case(tmp_path / "n", labels, preds, None))


def test_tiny_boxes_without_sizes(tmp_path: Path) -> None:
    # normalised boxes of area 1e-8: eps (1e-7) dominates the union, identical boxes score IoU ~0.09
    labels = {"a": [(0, 0.5, 0.5, 1e-4, 1e-4), (0, 0.2, 0.2, 0.01, 0.01)]}
    preds = {"a": [(0, 0.5, 0.5, 1e-4, 1e-4, 0.9), (0, 0.2, 0.2, 0.01, 0.01, 0.3)]}
    result = deteval.evaluate(*map(str, _case(tmp_path, labels, preds, None)[:2]), protocol="yolo")
    assert result.per_class[0]["AP50"] < 0.9
    assert_parity(*_case(tmp_path / "n", labels, preds, None))


def test_no_predictions_and_unlabelled_images(tmp_path: Path) -> None:
    labels = {"a": [(0, 0.5, 0.5, 0.2, 0.2), (7, 0.3, 0.3, 0.1, 0.1)], "b": []}
    preds = {"b": [(0, 0.5, 0.5, 0.2, 0.2, 0.9)], "a": [(0, 0.5, 0.5, 0.2, 0.2, 0.5)]}  # b: no labels, FP
    assert_parity(*_case(tmp_path, labels, preds, {"a": [10, 20], "b": [30, 40]}))
    r = deteval.evaluate(str(tmp_path / "preds"), str(tmp_path / "labels"), protocol="yolo")
    assert [row["category_id"] for row in r.per_class] == [0, 7]
    assert r.per_class[1]["AP50"] == 0.0  # a labelled class without predictions: 0, and in the means


def test_the_generator_covers_the_cases(tmp_path: Path) -> None:
    preds, labels, sizes = generate(tmp_path, 0)
    lines = [len((preds / f"{p.stem}.txt").read_text().splitlines()) if (preds / f"{p.stem}.txt").exists() else -1
             for p in sorted(labels.glob("*.txt"))]  # fmt: skip
    assert max(lines) > 300 and -1 in lines and 0 in lines
    assert any(not p.read_text() for p in labels.glob("*.txt"))

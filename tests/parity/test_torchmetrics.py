"""torchmetrics' ``MeanAveragePrecision(backend="pycocotools")`` against ``Evaluator(...).compute().to_torchmetrics()``.

torchmetrics runs inside the test on every COCO pair of ``tests/data`` (the same boxes fed to both,
as float64 xywh tensors, so that both see the same numbers), and every key of its ``compute()`` must
equal deteval's: same keys in the same order, dtype, shape and value (``torch.equal``).

torchvision: torchmetrics imports ``torchvision.ops.box_convert`` in ``update()`` and nothing else of
it for bbox evaluation. The registry's torchvision wheels are CUDA builds that fail to import beside
the CPU torch CI installs (``operator torchvision::nms does not exist``), so when no working
torchvision is installed the test puts :func:`_box_convert`, a stand-in written from torchvision's
documented conversions, in ``sys.modules`` for the test's duration only, and tells torchmetrics'
``mean_ap`` module that torchvision is available (its check ran at import, when it was not).
With ``box_format="xywh"`` (what the test feeds) box_convert is the identity either way.

:data:`REFERENCES` names the pycocotools torchmetrics imports: the installed pycocotools (``None``), and
deteval's drop-in (``deteval.init_as_pycocotools()``, issue 16), run before torchmetrics' ``compute()``;
everything put in ``sys.modules`` under ``pycocotools`` is undone after the test. Every key must equal
deteval's own ``to_torchmetrics()`` under both, so torchmetrics gives the same numbers with and without
the drop-in.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types
from collections.abc import Callable

import numpy as np
import pytest
from conftest import COCO_PAIRS, CocoPair

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install 'deteval[torch]')")
mean_ap = pytest.importorskip(
    "torchmetrics.detection.mean_ap", reason="torchmetrics is an optional extra (pip install 'deteval[compat-test]')"
)

import deteval  # noqa: E402
from deteval.errors import InputError  # noqa: E402

# the pycocotools torchmetrics' compute() runs on: None, the installed one; else a callable that installs another
REFERENCES: dict[str, Callable[[], object] | None] = {
    "pycocotools": None,
    "deteval-shim": lambda: deteval.init_as_pycocotools(),
}

# torchmetrics' default thresholds (MeanAveragePrecision.__init__): float32 grids, not pycocotools' float64 ones
TM_IOU_THRS = torch.linspace(0.5, 0.95, 10).tolist()
TM_REC_THRS = torch.linspace(0.0, 1.0, 101).tolist()
COCO_IOU_THRS = np.linspace(0.5, 0.95, 10).tolist()
COCO_REC_THRS = np.linspace(0.0, 1.0, 101).tolist()


# --------------------------------------------------------------------------------------
# torchvision.ops.box_convert, when no working torchvision is installed


def _box_convert(boxes, in_fmt: str, out_fmt: str):
    """torchvision.ops.box_convert for "xyxy", "xywh" and "cxcywh": through xyxy, as torchvision converts."""
    if in_fmt == out_fmt:
        return boxes.clone()
    a, b, c, d = boxes.unbind(-1)
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    if out_fmt == "xywh":
        return torch.stack([a, b, c - a, d - b], dim=-1)
    if out_fmt == "cxcywh":
        return torch.stack([(a + c) / 2, (b + d) / 2, c - a, d - b], dim=-1)
    return torch.stack([a, b, c, d], dim=-1)


def _working_torchvision() -> bool:
    try:
        from torchvision.ops import box_convert  # noqa: F401
    except Exception:  # absent, or a build for another torch: it raises RuntimeError on import
        return False
    return True


@pytest.fixture
def torchvision_ops(monkeypatch):
    """A torchvision whose ``ops.box_convert`` works: the installed one, or the stand-in until the test ends."""
    if not _working_torchvision():
        tv = types.ModuleType("torchvision")
        ops = types.ModuleType("torchvision.ops")
        tv.__spec__ = importlib.machinery.ModuleSpec("torchvision", None)
        ops.__spec__ = importlib.machinery.ModuleSpec("torchvision.ops", None)
        ops.box_convert = _box_convert
        tv.ops = ops
        monkeypatch.setitem(sys.modules, "torchvision", tv)
        monkeypatch.setitem(sys.modules, "torchvision.ops", ops)
    monkeypatch.setattr(mean_ap, "_TORCHVISION_AVAILABLE", True)


@pytest.fixture(params=list(REFERENCES))
def reference(request, torchvision_ops):
    """Runs the reference's setup; restores every ``pycocotools`` entry of ``sys.modules`` afterwards."""
    saved = {k: v for k, v in sys.modules.items() if k == "pycocotools" or k.startswith("pycocotools.")}
    setup = REFERENCES[request.param]
    if setup is not None:
        setup()
    yield request.param
    for k in [k for k in sys.modules if k == "pycocotools" or k.startswith("pycocotools.")]:
        del sys.modules[k]
    sys.modules.update(saved)


# --------------------------------------------------------------------------------------
# the inputs: one (pred, target) pair of dicts per ground-truth image, in image-id order


def per_image_tensors(pair: CocoPair) -> tuple[list[dict], list[dict]]:
    """torchmetrics' inputs for ``pair``: float64 xywh boxes and scores as in the files, int64 labels,
    ``iscrowd`` and ``area`` from the ground truth (all areas of these files are > 0, so torchmetrics uses them)."""
    gt, dets = pair.load_gt(), pair.load_preds()
    by_image: dict = {im["id"]: ([], []) for im in gt["images"]}
    for a in gt["annotations"]:
        by_image[a["image_id"]][0].append(a)
    for d in dets:
        by_image[d["image_id"]][1].append(d)
    preds, target = [], []
    for image_id in sorted(by_image):
        g, d = by_image[image_id]
        assert all(a["area"] > 0 for a in g)  # an area <= 0 is replaced by w*h in torchmetrics, kept by deteval
        preds.append({
            "boxes": torch.tensor([x["bbox"] for x in d], dtype=torch.float64).reshape(-1, 4),
            "scores": torch.tensor([x["score"] for x in d], dtype=torch.float64),
            "labels": torch.tensor([x["category_id"] for x in d], dtype=torch.int64),
        })  # fmt: skip
        target.append({
            "boxes": torch.tensor([x["bbox"] for x in g], dtype=torch.float64).reshape(-1, 4),
            "labels": torch.tensor([x["category_id"] for x in g], dtype=torch.int64),
            "iscrowd": torch.tensor([x.get("iscrowd", 0) for x in g], dtype=torch.int64),
            "area": torch.tensor([x["area"] for x in g], dtype=torch.float64),
        })  # fmt: skip
    return preds, target


def torchmetrics_compute(preds, target, **kwargs) -> dict:
    metric = mean_ap.MeanAveragePrecision(box_format="xywh", iou_type="bbox", backend="pycocotools", **kwargs)
    metric.warn_on_many_detections = False  # keypoints1 has 128 detections on its one image
    metric.update(preds, target)
    return metric.compute()


def deteval_compute(preds, target, **kwargs) -> deteval.EvalResult:
    ev = deteval.Evaluator(box_format="xywh", **kwargs)
    for k in range(0, len(preds), 8):  # batches of 8 images, as a loader gives them
        ev.update(preds[k : k + 8], target[k : k + 8])
    return ev.compute()


def assert_same_dict(ours: dict, ref: dict) -> None:
    assert list(ours) == list(ref)
    for key, value in ref.items():
        mine = ours[key]
        assert isinstance(mine, torch.Tensor), key
        assert (mine.dtype, tuple(mine.shape)) == (value.dtype, tuple(value.shape)), key
        assert torch.equal(mine, value), (key, mine, value)


# --------------------------------------------------------------------------------------
# every key equal


@pytest.mark.parametrize("pair_name", list(COCO_PAIRS))
@pytest.mark.parametrize("grid", ["torchmetrics", "pycocotools"])
def test_every_key_equals_torchmetrics(reference, pair_name, grid):
    """Class metrics on, with either torchmetrics' default float32 thresholds (given to deteval) or
    pycocotools' float64 grid (given to torchmetrics; deteval's defaults)."""
    preds, target = per_image_tensors(COCO_PAIRS[pair_name])
    if grid == "torchmetrics":
        ref = torchmetrics_compute(preds, target, class_metrics=True)
        res = deteval_compute(preds, target, iou_thrs=TM_IOU_THRS, rec_thrs=TM_REC_THRS)
    else:
        ref = torchmetrics_compute(
            preds, target, class_metrics=True, iou_thresholds=COCO_IOU_THRS, rec_thresholds=COCO_REC_THRS
        )
        res = deteval_compute(preds, target)
    assert_same_dict(res.to_torchmetrics(), ref)


def _xyxy_float32(items: list[dict]) -> list[dict]:
    out = []
    for d in items:
        b = d["boxes"].to(torch.float32)
        d = dict(d, boxes=torch.cat([b[:, :2], b[:, :2] + b[:, 2:]], dim=1))
        out.append(dict(d, scores=d["scores"].to(torch.float32)) if "scores" in d else d)
    return out


@pytest.mark.parametrize("pair_name", list(COCO_PAIRS))
def test_xyxy_float32_boxes_on_these_files(reference, pair_name):
    """torchmetrics' usual input. Its xyxy -> xywh runs in float32, deteval's in float64: widths can differ
    in the last bit, which could move an IoU across a threshold; on these files nothing moves."""
    preds, target = (_xyxy_float32(x) for x in per_image_tensors(COCO_PAIRS[pair_name]))
    metric = mean_ap.MeanAveragePrecision(box_format="xyxy", backend="pycocotools", class_metrics=True)
    metric.warn_on_many_detections = False
    metric.update(preds, target)
    ev = deteval.Evaluator(box_format="xyxy", iou_thrs=TM_IOU_THRS, rec_thrs=TM_REC_THRS)
    ev.update(preds, target)
    assert_same_dict(ev.compute().to_torchmetrics(), metric.compute())


def test_without_class_metrics_and_custom_max_dets(reference):
    """torchmetrics' default (``class_metrics=False``: -1 placeholders) and mar keys named after other max dets."""
    preds, target = per_image_tensors(COCO_PAIRS["coco_fake100"])
    ref = torchmetrics_compute(preds, target, max_detection_thresholds=[1, 5, 100])
    res = deteval_compute(preds, target, iou_thrs=TM_IOU_THRS, rec_thrs=TM_REC_THRS, max_dets=[1, 5, 100])
    assert "mar_5" in ref
    assert_same_dict(res.to_torchmetrics(class_metrics=False), ref)


def test_a_single_class_is_squeezed_as_torchmetrics_does(reference):
    preds, target = per_image_tensors(COCO_PAIRS["toy7"])  # one category
    ref = torchmetrics_compute(preds, target, class_metrics=True)
    assert ref["classes"].shape == ()
    assert_same_dict(deteval_compute(preds, target, iou_thrs=TM_IOU_THRS, rec_thrs=TM_REC_THRS).to_torchmetrics(), ref)


def test_torchmetrics_default_thresholds_move_the_numbers():
    """Why the thresholds matter: on torchmetrics' own example, its float32 grids give another map than
    pycocotools' float64 ones (deteval's defaults)."""
    preds, target = per_image_tensors(COCO_PAIRS["tm4"])
    tm_grid = deteval_compute(preds, target, iou_thrs=TM_IOU_THRS, rec_thrs=TM_REC_THRS).to_torchmetrics()
    coco_grid = deteval_compute(preds, target).to_torchmetrics()
    assert float(tm_grid["map"]) != float(coco_grid["map"])


# --------------------------------------------------------------------------------------
# float labels that are whole numbers (issue 16, item 6)


def test_whole_float_tensor_labels_equal_integer_labels():
    preds, target = per_image_tensors(COCO_PAIRS["coco_fake100"])
    ref = deteval_compute(preds, target)
    for dtype in (torch.float32, torch.float64):
        as_float = [dict(d, labels=d["labels"].to(dtype)) for d in preds]
        tgt_float = [dict(d, labels=d["labels"].to(dtype)) for d in target]
        res = deteval_compute(as_float, tgt_float)
        assert list(res.stats.items()) == list(ref.stats.items())
        assert res.per_class == ref.per_class
        assert np.array_equal(res.precision, ref.precision)


def test_non_whole_float_tensor_labels_are_an_error():
    pred = {"boxes": torch.tensor([[0.0, 0.0, 4.0, 4.0]]), "scores": torch.tensor([0.5]), "labels": torch.tensor([1.5])}
    tgt = {"boxes": torch.tensor([[0.0, 0.0, 4.0, 4.0]]), "labels": torch.tensor([1.0])}
    with pytest.raises(InputError, match=r"preds: update 1, preds\[0\]: labels\[0\] = 1.5 is not a whole number"):
        deteval.Evaluator().update([pred], [tgt])


# --------------------------------------------------------------------------------------
# the NumPy form, without torch's types


def test_numpy_form_holds_the_same_values():
    preds, target = per_image_tensors(COCO_PAIRS["tm4"])
    res = deteval_compute(preds, target)
    as_tensors, as_numpy = res.to_torchmetrics(), res.to_torchmetrics(tensors=False)
    assert list(as_numpy) == list(as_tensors)
    for key, value in as_tensors.items():
        assert np.array_equal(np.asarray(as_numpy[key]), value.numpy()), key
        assert np.asarray(as_numpy[key]).dtype == value.numpy().dtype, key
    assert isinstance(as_numpy["map"], np.float32)

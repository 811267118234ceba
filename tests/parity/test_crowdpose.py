"""``--protocol crowdpose`` against xtcocotools 1.14.3, run here: ``COCOeval(gt, dt, "keypoints_crowd", sigmas,
use_area=False)`` with CrowdPose's sigmas, on faster-coco-eval's CrowdPose example and on generated crowd sets.

Every stat must be ``==`` (AP, AP50, AP75, AR, AR50, AR75, AP_easy, AP_medium, AP_hard), and the printed
summary lines equal xtcocotools' own. The generated sets (``crowd_cases``) put ``crowdIndex`` on and
beside the bucket bounds (0.2 and 0.8) and give images with no ground truth in a bucket, GT visibility
flags 0/1/2 with ``num_keypoints`` counting visible joints (or not matching them, or 0), GT without any
visible keypoint (OKS against the doubled box), crowd GT, annotation id 0, more than 20 detections per
image, detections whose keypoint scores are all <= 0 (xtcocotools drops them), tied scores, and a
second category (whose -1 entries enter the bucket means).

xtcocotools' wheel is built against numpy 1.x; build it from source (CI must do the same):
``pip install --no-build-isolation --no-binary xtcocotools xtcocotools==1.14.3``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import warnings

import numpy as np
import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples

import deteval
from deteval.errors import DetevalWarning, InputError
from deteval.io.coco import load_coco_gt

xt_coco = pytest.importorskip("xtcocotools.coco", reason="xtcocotools is the CrowdPose reference (see module doc)")
xt_cocoeval = pytest.importorskip("xtcocotools.cocoeval")

SIGMAS = np.array([0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89, 0.79, 0.79]) / 10.0
K = 14
GT_FILE = DATA_DIR / "crowdpose" / "example_crowdpose_val.json"
DT_FILE = DATA_DIR / "crowdpose" / "example_crowdpose_preds.json"
EXAMPLES = settings(max_examples=examples(150))


def run_xtcocotools(gt_path, preds) -> tuple[list[float], list[str]]:
    """xtcocotools' stats and printed summary lines (it re-reads ``gt_path`` for crowdIndex)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gt = xt_coco.COCO(str(gt_path))
        dt = gt.loadRes(copy.deepcopy(preds) if isinstance(preds, list) else str(preds))
        ev = xt_cocoeval.COCOeval(gt, dt, "keypoints_crowd", SIGMAS, use_area=False)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return [float(s) for s in ev.stats], [line for line in out.getvalue().splitlines() if "Average" in line]


def check(gt_path, preds) -> None:
    want, lines = run_xtcocotools(gt_path, preds)
    res = deteval.evaluate(preds, gt_path, protocol="crowdpose", iou_type="keypoints")
    assert list(res.stats) == ["AP", "AP50", "AP75", "AR", "AR50", "AR75", "AP_easy", "AP_medium", "AP_hard"]
    assert list(res.stats.values()) == want, (list(res.stats.values()), want)
    assert res.summary_lines == lines


def test_faster_coco_eval_example():
    check(GT_FILE, DT_FILE)
    want, _ = run_xtcocotools(GT_FILE, DT_FILE)
    # the numbers faster-coco-eval's own test expects for keypoints_crowd on this example agree
    assert want[6:] == [1.0, 0.9802, 0.4116]


def test_annotation_id_0_is_an_ordinary_id(tmp_path):
    """xtcocotools marks "no match" with -1: a match to annotation id 0 is a true positive (pycocotools,
    faster-coco-eval and the coco protocol count it as a false positive)."""
    gt = json.loads(GT_FILE.read_text())
    for i, ann in enumerate(gt["annotations"]):
        ann["id"] = i
    path = tmp_path / "ids_from_0.json"
    path.write_text(json.dumps(gt))
    check(path, json.loads(DT_FILE.read_text()))
    assert run_xtcocotools(path, DT_FILE)[0] == run_xtcocotools(GT_FILE, DT_FILE)[0]


def test_bucket_ap_rounds_as_numpy_does():
    """xtcocotools' ``round(np.mean(...), 4)`` rounds an np.float64: numpy's round (x * 1e4, rint, / 1e4), not
    Python's correctly rounded one: 0.00035 (stored just below) gives 0.0004, where ``round(0.00035, 4)`` is 0.0003."""
    from deteval.protocols.crowdpose import bucket_ap

    assert round(0.00035, 4) == 0.0003
    assert bucket_ap(np.full((1, 1, 1, 1, 1), 0.00035)) == 0.0004
    assert bucket_ap(np.array([0.25, 0.5, 1.0, -1.0]).reshape(1, 4, 1, 1, 1)) == 0.1875  # -1 entries count


def test_cli_prints_xtcocotools_summary(capsys):
    from deteval.cli import main

    assert main(["--protocol", "crowdpose", "--iou-type", "keypoints", str(DT_FILE), str(GT_FILE)]) in (0, None)
    _, lines = run_xtcocotools(GT_FILE, DT_FILE)
    out = capsys.readouterr().out.splitlines()
    assert all(line in out for line in lines)


# --------------------------------------------------------------------------------------
# generated crowd sets

CROWD_INDEX = [0.0, 0, 0.1, 0.19999999999999998, 0.2, 0.20000000000000004, 0.5, 0.7999999999999999, 0.8,
               0.8000000000000002, 1.0, 1]  # fmt: skip
TIED = [(0.5,), (0.3, 0.7), (0.1, 0.5, 0.9), (0, 1)]


def _gt_ann(draw, rng, image_id: int, cat: int) -> dict:
    w, h = draw(st.sampled_from([(40, 80), (44, 44), (120, 140), (8, 10), (0, 0), None])) or rng.uniform(5, 150, 2)
    x, y = rng.uniform(0, 200, 2)
    vis_mode = draw(st.sampled_from(["mixed", "mixed", "all", "none"]))
    vs = {"none": [0] * K, "all": rng.choice([1, 2], K), "mixed": rng.choice([0, 1, 2, 2], K)}[vis_mode]
    kx, ky = rng.uniform(x, x + w + 1e-9, K), rng.uniform(y, y + h + 1e-9, K)
    kpts = [v for j in range(K) for v in (float(kx[j]) if vs[j] else 0, float(ky[j]) if vs[j] else 0, int(vs[j]))]
    # CrowdPose's num_keypoints counts visible joints (v == 2); sometimes any labelled one, or 0
    num = draw(st.sampled_from(["v2", "v2", "v>0", "zero"]))
    num_kp = {"v2": int(np.sum(np.array(vs) == 2)), "v>0": int(np.count_nonzero(vs)), "zero": 0}[num]
    return {
        "image_id": image_id,
        "category_id": cat,
        "bbox": [float(x), float(y), float(w), float(h)],
        "area": float(draw(st.sampled_from([w * h, 0.0, 5000.0]))),  # unread with use_area=False
        "iscrowd": int(draw(st.integers(0, 9)) == 0),
        "keypoints": kpts,
        "num_keypoints": num_kp,
    }


def _dt_kpts(draw, rng, g: dict | None) -> list:
    kind = draw(st.sampled_from(["jitter", "jitter", "copy", "free", "far"] if g else ["free", "far"]))
    conf_mode = draw(st.sampled_from(["pos", "pos", "pos", "mixed", "zero", "negative"]))
    conf = {
        "pos": rng.uniform(0.01, 1, K),
        "mixed": rng.choice([0.0, -0.5, 0.4], K),
        "zero": np.zeros(K),
        "negative": -rng.uniform(0, 1, K),
    }[conf_mode]
    if kind in ("jitter", "copy"):
        scale = draw(st.sampled_from([1, 4, 15])) if kind == "jitter" else 0
        xs = np.array(g["keypoints"][0::3]) + rng.uniform(-scale, scale, K)
        ys = np.array(g["keypoints"][1::3]) + rng.uniform(-scale, scale, K)
    elif kind == "far":
        xs, ys = rng.uniform(600, 2000, K), rng.uniform(-50, 50, K)
    else:
        xs, ys = rng.uniform(0, 250, K), rng.uniform(0, 250, K)
    return [float(v) for j in range(K) for v in (xs[j], ys[j], conf[j])]


@st.composite
def crowd_cases(draw) -> tuple[dict, list]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_images = draw(st.integers(1, 6))
    image_ids = draw(st.lists(st.integers(0, 40), min_size=n_images, max_size=n_images, unique=True))
    images = [{"id": i, "height": 300, "width": 300, "crowdIndex": draw(st.sampled_from(CROWD_INDEX))}
              for i in image_ids]  # fmt: skip
    cat_ids = draw(st.sampled_from([[1], [1], [1, 2]]))
    annotations = []
    for img in images:
        for _ in range(draw(st.integers(0, 5))):
            annotations.append(_gt_ann(draw, rng, img["id"], draw(st.sampled_from(cat_ids))))
    first_id = draw(st.sampled_from([0, 0, 1, 100]))  # 0: an annotation id 0, ordinary to xtcocotools
    for i, ann in enumerate(annotations):
        ann["id"] = first_id + i
    by_image: dict = {}
    for ann in annotations:
        by_image.setdefault(ann["image_id"], []).append(ann)
    tied = draw(st.sampled_from(TIED))
    preds = []
    for img in images:
        here = by_image.get(img["id"], [])
        for _ in range(draw(st.sampled_from([0, 1, 3, 6, 22]))):
            g = here[int(rng.integers(len(here)))] if here and draw(st.integers(0, 3)) > 0 else None
            cat = g["category_id"] if g is not None else draw(st.sampled_from(cat_ids))
            score = draw(st.sampled_from(tied)) if draw(st.booleans()) else float(rng.uniform(0, 2))
            preds.append(
                {"image_id": img["id"], "category_id": cat, "keypoints": _dt_kpts(draw, rng, g), "score": score}
            )
    if not preds:  # loadRes reads the first record
        preds.append({"image_id": images[0]["id"], "category_id": cat_ids[0], "keypoints": [5.0, 5.0, 1.0] * K,
                      "score": 0.5})  # fmt: skip
    categories = [{"id": c, "name": f"person{c}", "keypoints": [str(j) for j in range(K)]} for c in cat_ids]
    gt = {"images": images, "annotations": annotations, "categories": categories}
    return gt, list(draw(st.permutations(preds)))


@EXAMPLES
@given(crowd_cases())
def test_generated_crowd_sets(tmp_path_factory, case):
    gt, preds = case
    path = tmp_path_factory.mktemp("crowd") / "gt.json"
    path.write_text(json.dumps(gt))
    check(path, preds)


# --------------------------------------------------------------------------------------
# bad input


def _example_gt() -> dict:
    return json.loads(GT_FILE.read_text())


@pytest.mark.parametrize(
    "change, record, rule",
    [
        (lambda im: im.pop("crowdIndex"), r"images\[2\] \(id=\d+\)", "got no crowdIndex"),
        (lambda im: im.update(crowdIndex="0.5"), r"images\[2\] \(id=\d+\)", "got crowdIndex '0.5'"),
        (lambda im: im.update(crowdIndex=True), r"images\[2\] \(id=\d+\)", "got crowdIndex True"),
        # xtcocotools would rank a NaN among the hard images: a damaged record, refused
        (lambda im: im.update(crowdIndex=float("nan")), r"images\[2\] \(id=\d+\)", "got crowdIndex nan"),
    ],
)
def test_an_image_without_a_numeric_crowd_index_is_an_error(tmp_path, change, record, rule):
    gt = _example_gt()
    change(gt["images"][2])
    path = tmp_path / "crowd_gt.json"
    path.write_text(json.dumps(gt))
    with pytest.raises(InputError, match=rf"^{path}: {record}: a CrowdPose image needs a numeric crowdIndex.*{rule}"):
        deteval.evaluate(str(DT_FILE), str(path), protocol="crowdpose", iou_type="keypoints")


def test_other_misuse_is_an_error():
    with pytest.warns(DetevalWarning, match="have no 'area'"):  # read as COCO: pycocotools would need one
        gt = load_coco_gt(str(GT_FILE), iou_type="keypoints")
    with pytest.raises(InputError, match=r"crowdIndex: give the ground truth as a file or a dict"):
        deteval.evaluate(str(DT_FILE), gt, protocol="crowdpose", iou_type="keypoints")
    with pytest.raises(InputError, match="no fixed mode"):
        deteval.evaluate(str(DT_FILE), str(GT_FILE), protocol="crowdpose", iou_type="keypoints", compat=False)
    with pytest.raises(InputError, match=r"protocol 'crowdpose' evaluates keypoints, not 'bbox'"):
        deteval.evaluate(str(DT_FILE), str(GT_FILE), protocol="crowdpose", iou_type="bbox")


def test_a_loaded_dict_works_like_the_file():
    want = deteval.evaluate(str(DT_FILE), str(GT_FILE), protocol="crowdpose", iou_type="keypoints").stats
    got = deteval.evaluate(json.loads(DT_FILE.read_text()), _example_gt(), protocol="crowdpose", iou_type="keypoints")
    assert got.stats == want

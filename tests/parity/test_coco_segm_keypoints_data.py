"""COCO segm and keypoints parity on real data: deteval must be bit-identical to pycocotools 2.0.11.

Data under tests/data:
- coco_fake100: 100 COCO val2014 images, polygon GT and crowd regions as uncompressed RLE;
  results as compressed RLE without a bbox (pycocotools' segm branch of loadRes);
- polygons3: 3 images, polygon GT, polygon results that carry a bbox (the bbox branch:
  the area of a result is its box's w*h);
- keypoints1: one image, 14 person GT (some without visible keypoints, one crowd), 128
  keypoint results that carry a bbox.

Besides evaluate() and the CLI on the files as they are, each loadRes branch is exercised by
editing the results: a bbox added to mask results or removed from them, mask results
evaluated as bbox (pycocotools takes their box from toBbox), keypoint results without a
bbox (their area is then the keypoints' extent). Fixed mode (compat=False) reads a mask
result's area from the mask even when it has a bbox; its oracle is pycocotools on the same
results with the bbox removed.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import DATA_DIR, TESTS_DIR
from pycocotools import mask as mask_utils
from support.oracle import assert_same, compare_arrays, load_json, run_pycocotools
from support.strategies_masks import COCO_SIGMAS, run_pycocotools_sigmas

import deteval
from deteval.errors import DetevalWarning
from deteval.rle import CompressedMasks
from deteval.tuning import TUNING

REPO_ROOT = TESTS_DIR.parent

FAKE100_GT = DATA_DIR / "coco_fake100" / "instances_val2014_100.json"
FAKE100_SEGM = DATA_DIR / "coco_fake100" / "instances_val2014_fakesegm100_results.json"
FAKE100_SUMMARY = DATA_DIR / "coco_fake100" / "pycocotools_summary.txt"
POLY3_GT = DATA_DIR / "polygons3" / "gt_dataset.json"
POLY3_DT = DATA_DIR / "polygons3" / "dt_dataset.json"
POLY3_SUMMARY = DATA_DIR / "polygons3" / "pycocotools_summary_gt_dt_dataset.txt"
KPT1_GT = DATA_DIR / "keypoints1" / "gt_dataset.json"
KPT1_DT = DATA_DIR / "keypoints1" / "dt_dataset.json"
KPT1_SUMMARY = DATA_DIR / "keypoints1" / "pycocotools_summary.txt"

SEGM_PAIRS = {"coco_fake100": (FAKE100_SEGM, FAKE100_GT), "polygons3": (POLY3_DT, POLY3_GT)}

_ORACLE_CACHE: dict = {}
_JSON_CACHE: dict = {}


def _load(path):
    """A fresh copy of a JSON file (parsed once)."""
    if path not in _JSON_CACHE:
        _JSON_CACHE[path] = load_json(path)
    return copy.deepcopy(_JSON_CACHE[path])


def _oracle(key: str, preds, gt, **kwargs):
    """pycocotools, cached by a name for the inputs plus the parameters."""
    k = (key, json.dumps(kwargs, sort_keys=True, default=list))
    if k not in _ORACLE_CACHE:
        _ORACLE_CACHE[k] = run_pycocotools(preds, gt, **kwargs)
    return _ORACLE_CACHE[k]


def _recorded_stats(path, iou_type):
    """The full-precision stats pycocotools 2.0.11 printed for `iou_type` into a summary file."""
    text = path.read_text(encoding="utf-8")
    for sec in re.split(r"^type=", text, flags=re.MULTILINE)[1:]:
        if sec.startswith(iou_type):
            m = re.search(r"stats\(full precision\)=\[([^\]]*)\]", sec)
            return [float(x) for x in m.group(1).split(",")]
    raise AssertionError(f"no type={iou_type} section in {path}")


def _image_sizes(gt: dict) -> dict:
    return {img["id"]: (img["height"], img["width"]) for img in gt["images"]}


def _as_compressed_rle(preds: list, gt: dict) -> list:
    """Results with polygon segmentations rewritten as compressed RLE (str counts), as annToRLE reads them."""
    sizes = _image_sizes(gt)
    out = copy.deepcopy(preds)
    for p in out:
        seg = p["segmentation"]
        if isinstance(seg, list):
            h, w = sizes[p["image_id"]]
            rle = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
            p["segmentation"] = {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}
    return out


def _without(preds: list, key: str) -> list:
    out = copy.deepcopy(preds)
    for p in out:
        p.pop(key, None)
    return out


def _with_box(preds: list, grow: float = 0.0) -> list:
    """RLE results given a bbox: the mask's extent, grown by `grow` pixels on each side."""
    out = copy.deepcopy(preds)
    for p in out:
        x, y, w, h = (float(v) for v in mask_utils.toBbox(p["segmentation"]))
        p["bbox"] = [x - grow, y - grow, w + 2 * grow, h + 2 * grow]
    return out


def _rle_results(name: str) -> tuple[list, dict]:
    """(RLE results without bbox, GT) for a segm pair."""
    dt, gt_path = SEGM_PAIRS[name]
    gt = _load(gt_path)
    preds = _load(dt)
    if name == "polygons3":
        preds = _without(_as_compressed_rle(preds, gt), "bbox")
    return preds, gt


# --------------------------------------------------------------------------------------
# the oracle reproduces what pycocotools 2.0.11 printed


@pytest.mark.parametrize(
    "preds, gt, iou_type, summary",
    [
        (FAKE100_SEGM, FAKE100_GT, "segm", FAKE100_SUMMARY),
        (POLY3_DT, POLY3_GT, "segm", POLY3_SUMMARY),
        (KPT1_DT, KPT1_GT, "keypoints", KPT1_SUMMARY),
    ],
    ids=["coco_fake100-segm", "polygons3-segm", "keypoints1-keypoints"],
)
def test_oracle_reproduces_recorded_summary(preds, gt, iou_type, summary):
    ev = _oracle(str(preds), _load(preds), _load(gt), iou_type=iou_type)
    assert [float(s) for s in ev.stats] == _recorded_stats(summary, iou_type)


# --------------------------------------------------------------------------------------
# segm


@pytest.mark.parametrize("use_cats", [True, False], ids=["cats", "nocats"])
@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_segm_matches_pycocotools(name, use_cats):
    dt, gt = SEGM_PAIRS[name]
    preds, gt_data = _load(dt), _load(gt)
    res = deteval.evaluate(preds, gt_data, iou_type="segm", compat=True, use_cats=use_cats)
    assert preds == _load(dt) and gt_data == _load(gt), "deteval.evaluate modified its inputs"
    assert_same(res, _oracle(str(dt), _load(dt), _load(gt), iou_type="segm", use_cats=use_cats))


@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_segm_from_paths_matches_pycocotools(name):
    dt, gt = SEGM_PAIRS[name]
    res = deteval.evaluate(str(dt), gt, iou_type="segm")
    assert_same(res, _oracle(str(dt), _load(dt), _load(gt), iou_type="segm", use_cats=True))


@pytest.mark.slow
@pytest.mark.parametrize("use_cats", [True, False], ids=["cats", "nocats"])
@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_segm_scanned_results_match_pycocotools(name, use_cats, tmp_path, monkeypatch):
    """Results the byte scanner reads (large files) keep their masks as compressed text, each decoded
    where the mask overlap needs it."""
    preds, gt = _rle_results(name)
    path = tmp_path / "dets.json"
    path.write_text(json.dumps(preds), encoding="utf-8")
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0)
    dets, gt_loaded = deteval.load(str(path), SEGM_PAIRS[name][1], iou_type="segm")
    assert isinstance(dets.masks, CompressedMasks)
    res = deteval.evaluate(dets, gt_loaded, iou_type="segm", use_cats=use_cats)
    assert_same(res, run_pycocotools(preds, gt, iou_type="segm", use_cats=use_cats))


SEGM_PARAMS = {
    "iou_3": {"iou_thrs": [0.3, 0.5, 0.7]},
    "maxdets_1_3_5": {"max_dets": [1, 3, 5]},
    "areas_custom_nocats": {
        "area_ranges": {"all": (0, 1e10), "small": (0, 400), "medium": (400, 2500), "large": (2500, 1e10)},
        "use_cats": False,
    },
}


@pytest.mark.parametrize("params", list(SEGM_PARAMS))
def test_segm_custom_params_match_pycocotools(params):
    kwargs = SEGM_PARAMS[params]
    res = deteval.evaluate(_load(FAKE100_SEGM), _load(FAKE100_GT), iou_type="segm", **kwargs)
    assert_same(res, _oracle(str(FAKE100_SEGM), _load(FAKE100_SEGM), _load(FAKE100_GT), iou_type="segm", **kwargs))


@pytest.mark.parametrize("use_cats", [True, False], ids=["cats", "nocats"])
@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_segm_results_without_bbox(name, use_cats):
    """RLE results without bbox: segm branch, the area of a result is its mask's."""
    preds, gt = _rle_results(name)
    expected = run_pycocotools(preds, gt, iou_type="segm", use_cats=use_cats)
    assert_same(deteval.evaluate(preds, gt, iou_type="segm", use_cats=use_cats), expected)


@pytest.mark.parametrize("grow", [0.0, 3.0], ids=["extent", "grown"])
@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_segm_results_with_bbox(name, grow):
    """RLE results with a bbox: bbox branch, the area of a result is the box's w*h."""
    preds, gt = _rle_results(name)
    preds = _with_box(preds, grow)
    expected = run_pycocotools(preds, gt, iou_type="segm")
    assert_same(deteval.evaluate(preds, gt, iou_type="segm"), expected)
    # the bbox changes pycocotools' numbers here, so this is not the no-bbox case again
    plain = run_pycocotools(_without(preds, "bbox"), gt, iou_type="segm")
    assert not np.array_equal(plain.eval["precision"], expected.eval["precision"])


def test_segm_bbox_branch_result_without_segmentation_is_its_box():
    """bbox branch: a result without segmentation is evaluated as its box's polygon (loadRes writes it)."""
    preds = _load(POLY3_DT)
    for p in preds[1::2]:
        del p["segmentation"]
    expected = run_pycocotools(preds, _load(POLY3_GT), iou_type="segm")
    with pytest.warns(DetevalWarning, match="have no 'segmentation' in mask evaluation"):
        res = deteval.evaluate(preds, _load(POLY3_GT), iou_type="segm")
    assert_same(res, expected)
    assert not np.array_equal(
        expected.eval["precision"],
        _oracle(str(POLY3_DT), _load(POLY3_DT), _load(POLY3_GT), iou_type="segm", use_cats=True).eval["precision"],
    )


def test_segm_first_result_decides_the_branch():
    """The first result has no bbox, later ones do: segm branch for all (mask areas, given boxes kept)."""
    preds, gt = _rle_results("coco_fake100")
    boxed = _with_box(preds, grow=5.0)
    mixed = [preds[0]] + boxed[1:]
    expected = run_pycocotools(mixed, gt, iou_type="segm")
    assert_same(deteval.evaluate(mixed, gt, iou_type="segm"), expected)
    # mask areas for all: the same as without any bbox
    assert_same(deteval.evaluate(mixed, gt, iou_type="segm"), run_pycocotools(preds, gt, iou_type="segm"))


@pytest.mark.parametrize("use_cats", [True, False], ids=["cats", "nocats"])
@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_bbox_evaluation_of_mask_results(name, use_cats):
    """Mask results without a bbox evaluated as bbox: pycocotools takes the box from toBbox(mask)."""
    preds, gt = _rle_results(name)
    expected = run_pycocotools(preds, gt, iou_type="bbox", use_cats=use_cats)
    assert_same(deteval.evaluate(preds, gt, iou_type="bbox", use_cats=use_cats), expected)


def test_bbox_evaluation_of_polygon_results_with_bbox():
    expected = run_pycocotools(_load(POLY3_DT), _load(POLY3_GT), iou_type="bbox")
    assert_same(deteval.evaluate(_load(POLY3_DT), _load(POLY3_GT), iou_type="bbox"), expected)


def test_segm_results_with_empty_bbox():
    """Mask-only exporters write "bbox": []: loadRes takes the segm branch (`anns[0]['bbox'] == []`)."""
    preds, gt = _rle_results("polygons3")
    for p in preds:
        p["bbox"] = []
    expected = run_pycocotools(preds, gt, iou_type="segm")
    assert_same(deteval.evaluate(preds, gt, iou_type="segm"), expected)


# --------------------------------------------------------------------------------------
# fixed mode: a mask result's area is its mask's, bbox or not


@pytest.mark.parametrize("grow", [0.0, 3.0], ids=["extent", "grown"])
@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_fixed_segm_uses_mask_area_when_results_have_bbox(name, grow):
    preds, gt = _rle_results(name)
    boxed = _with_box(preds, grow)
    # oracle: pycocotools on the same results without bbox (segm branch for all: mask areas)
    expected = run_pycocotools(preds, gt, iou_type="segm")
    fixed = deteval.evaluate(boxed, gt, iou_type="segm", compat=False)
    assert_same(fixed, expected)
    # and compat mode keeps pycocotools' box areas
    assert_same(deteval.evaluate(boxed, gt, iou_type="segm", compat=True), run_pycocotools(boxed, gt, iou_type="segm"))


def test_fixed_segm_polygon_results_with_bbox():
    """polygons3 as shipped (polygons with bbox): fixed mode == pycocotools on the RLE of the polygons without bbox."""
    gt = _load(POLY3_GT)
    expected = run_pycocotools(_without(_as_compressed_rle(_load(POLY3_DT), gt), "bbox"), gt, iou_type="segm")
    assert_same(deteval.evaluate(_load(POLY3_DT), gt, iou_type="segm", compat=False), expected)


# --------------------------------------------------------------------------------------
# keypoints


def test_keypoints_matches_pycocotools():
    preds, gt = _load(KPT1_DT), _load(KPT1_GT)
    res = deteval.evaluate(preds, gt, iou_type="keypoints")
    assert preds == _load(KPT1_DT) and gt == _load(KPT1_GT), "deteval.evaluate modified its inputs"
    assert list(res.stats) == ["AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl"]
    assert_same(res, _oracle(str(KPT1_DT), _load(KPT1_DT), _load(KPT1_GT), iou_type="keypoints"))


def test_keypoints_from_paths_with_explicit_sigmas():
    res = deteval.evaluate(str(KPT1_DT), str(KPT1_GT), iou_type="keypoints", kpt_sigmas=COCO_SIGMAS)
    assert_same(res, _oracle(str(KPT1_DT), _load(KPT1_DT), _load(KPT1_GT), iou_type="keypoints"))


def test_keypoints_results_without_bbox():
    """No bbox: keypoints branch, a result's area is its keypoints' extent."""
    preds, gt = _without(_load(KPT1_DT), "bbox"), _load(KPT1_GT)
    expected = run_pycocotools(preds, gt, iou_type="keypoints")
    assert_same(deteval.evaluate(preds, gt, iou_type="keypoints"), expected)


def test_keypoints_results_bbox_gives_the_area():
    """With a bbox: bbox branch, a result's area is the box's w*h (here 1: outside medium and large)."""
    preds, gt = _load(KPT1_DT), _load(KPT1_GT)
    for p in preds:
        p["bbox"] = [p["bbox"][0], p["bbox"][1], 1.0, 1.0]
    expected = run_pycocotools(preds, gt, iou_type="keypoints")
    assert_same(deteval.evaluate(preds, gt, iou_type="keypoints"), expected)
    # pycocotools ignores other unmatched results then (their FPs come after the last TP here, so
    # precision does not move; the ignore flags do)
    by_extent = run_pycocotools(_without(preds, "bbox"), gt, iou_type="keypoints")
    ignored = [int(e["dtIgnore"].sum()) for ev in (expected, by_extent) for e in ev.evalImgs if e]
    assert ignored[: len(ignored) // 2] != ignored[len(ignored) // 2 :]


KPT_PARAMS = {
    "maxdets_1_5_20": {"max_dets": [1, 5, 20]},
    "maxdets_5": {"max_dets": [5]},
    "iou_3": {"iou_thrs": [0.3, 0.5, 0.7]},
    "areas": {"area_ranges": {"all": (0, 1e10), "medium": (0, 5000), "large": (5000, 1e10)}},
}


@pytest.mark.parametrize("params", list(KPT_PARAMS))
def test_keypoints_custom_params(params):
    kwargs = KPT_PARAMS[params]
    res = deteval.evaluate(_load(KPT1_DT), _load(KPT1_GT), iou_type="keypoints", **kwargs)
    assert_same(res, _oracle(str(KPT1_DT), _load(KPT1_DT), _load(KPT1_GT), iou_type="keypoints", **kwargs))


def test_keypoints_custom_sigmas():
    sigmas = [0.05] * 5 + [0.1] * 12
    res = deteval.evaluate(_load(KPT1_DT), _load(KPT1_GT), iou_type="keypoints", kpt_sigmas=sigmas)
    assert_same(res, run_pycocotools_sigmas(_load(KPT1_DT), _load(KPT1_GT), kpt_sigmas=sigmas))


def test_fixed_keypoints_pool_categories():
    """Fixed mode accepts use_cats=False for keypoints; with one category it equals pycocotools' use_cats=1."""
    expected = _oracle(str(KPT1_DT), _load(KPT1_DT), _load(KPT1_GT), iou_type="keypoints")
    res = deteval.evaluate(_load(KPT1_DT), _load(KPT1_GT), iou_type="keypoints", compat=False, use_cats=False)
    assert_same(res, expected)


# --------------------------------------------------------------------------------------
# CLI


def _check_npz(npz_path, ev, use_cats=True):
    p = ev.params
    with np.load(npz_path, allow_pickle=False) as z:
        problems = []
        for key in ("precision", "recall", "scores"):
            problems += compare_arrays(key, z[key], ev.eval[key])
        problems += compare_arrays("iou_thrs", z["iou_thrs"], np.asarray(p.iouThrs))
        problems += compare_arrays("rec_thrs", z["rec_thrs"], np.asarray(p.recThrs))
        problems += compare_arrays("max_dets", z["max_dets"], np.asarray(p.maxDets))
        cats = [int(c) for c in p.catIds] if use_cats else [-1]
        if [int(c) for c in z["cat_ids"]] != cats:
            problems.append(f"cat_ids {list(z['cat_ids'])} != {cats}")
        if [str(a) for a in z["area_labels"]] != list(p.areaRngLbl):
            problems.append(f"area_labels {list(z['area_labels'])} != {list(p.areaRngLbl)}")
    assert not problems, "CLI --arrays != pycocotools:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("no_cats", [False, True], ids=["cats", "nocats"])
@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_cli_segm_arrays(name, no_cats, tmp_path, capsys):
    from deteval.cli import main

    dt, gt = SEGM_PAIRS[name]
    npz, out_json = tmp_path / "out.npz", tmp_path / "out.json"
    argv = ["--protocol", "coco", "--iou-type", "segm", "--arrays", str(npz), "--json", str(out_json)]
    argv += ["--no-cats"] if no_cats else []
    rc = main([*argv, str(dt), str(gt)])
    out = capsys.readouterr().out
    assert rc == 0
    ev = _oracle(str(dt), _load(dt), _load(gt), iou_type="segm", use_cats=not no_cats)
    _check_npz(npz, ev, use_cats=not no_cats)
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert list(report["stats"].values()) == [float(s) for s in ev.stats]
    assert "Average Precision" in out


@pytest.mark.parametrize("sigmas", [None, "coco", "custom"])
def test_cli_keypoints_arrays(sigmas, tmp_path, capsys):
    from deteval.cli import main

    npz = tmp_path / "kp.npz"
    argv = ["--iou-type", "keypoints", "--arrays", str(npz)]
    values = {"coco": COCO_SIGMAS, "custom": [0.05] * 5 + [0.1] * 12, None: None}[sigmas]
    if values is not None:
        argv += ["--kpt-sigmas", *(repr(s) for s in values)]
    rc = main([str(KPT1_DT), str(KPT1_GT), *argv])  # PREDS GT first: --kpt-sigmas takes all numbers after it
    capsys.readouterr()
    assert rc == 0
    _check_npz(npz, run_pycocotools_sigmas(_load(KPT1_DT), _load(KPT1_GT), kpt_sigmas=values))


def test_cli_module_subprocess_segm(tmp_path):
    """`python -m deteval --iou-type segm` end to end on polygons3."""
    npz = tmp_path / "p3.npz"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO_ROOT), env.get("PYTHONPATH", "")] if p)
    cmd = [sys.executable, "-m", "deteval", "--protocol", "coco", "--iou-type", "segm"]
    cmd += ["--arrays", str(npz), str(POLY3_DT), str(POLY3_GT)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    _check_npz(npz, _oracle(str(POLY3_DT), _load(POLY3_DT), _load(POLY3_GT), iou_type="segm", use_cats=True))

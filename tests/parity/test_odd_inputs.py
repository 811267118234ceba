"""The catalog of odd-but-accepted inputs (tests/data/odd_inputs, see its README): each scored exactly as
pycocotools 2.0.11 scores it, with its warnings (one per oddity, the same from either reader), and refused
with an InputError naming the file and the first record under ``strict=True`` / ``--strict`` (exit 2)."""

from __future__ import annotations

import contextlib
import io
import json
import math
import warnings

import numpy as np
import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracle import assert_same, load_json, run_pycocotools

import deteval
from deteval import DetevalWarning, InputError
from deteval.cli import main
from deteval.tuning import TUNING

ODD = DATA_DIR / "odd_inputs"
CASES = json.loads((ODD / "cases.json").read_text(encoding="utf-8"))
_ORACLE: dict = {}


def _paths(name: str) -> tuple[str, str]:
    return str(ODD / f"{name}.dt.json"), str(ODD / f"{name}.gt.json")


def _oracle(name: str):
    if name not in _ORACLE:
        dt, gt = (load_json(p) for p in _paths(name))
        if CASES[name].get("oracle") == "iscrowd_0":  # pycocotools raises KeyError; deteval reads 0
            for a in gt["annotations"]:
                a.setdefault("iscrowd", 0)
        _ORACLE[name] = run_pycocotools(dt, gt, iou_type=CASES[name]["iou_type"])
    return _ORACLE[name]


def test_pycocotools_raises_where_the_catalog_says():
    dt, gt = (load_json(p) for p in _paths("missing_iscrowd"))
    with pytest.raises(KeyError, match="iscrowd"):
        run_pycocotools(dt, gt)


def _evaluate(preds, gt, name: str, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = deteval.evaluate(preds, gt, iou_type=CASES[name]["iou_type"], **kw)
    return result, [str(w.message) for w in caught if issubclass(w.category, DetevalWarning)]


def _check_warnings(msgs: list[str], name: str) -> None:
    expected = CASES[name]["warnings"]
    assert len(msgs) == len(expected), msgs
    for msg, part in zip(msgs, expected):
        assert part in msg, (part, msg)


@pytest.fixture(params=["general", "scanner"])
def reader(request, monkeypatch):
    """Either COCO reader: the general one, or every file through the byte scanner (which may decline)."""
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0 if request.param == "scanner" else 1 << 62)
    return request.param


@pytest.mark.parametrize("name", sorted(CASES))
def test_scored_as_pycocotools_with_one_warning_per_oddity(name, reader):
    dt, gt = _paths(name)
    result, msgs = _evaluate(dt, gt, name)
    assert_same(result, _oracle(name))
    _check_warnings(msgs, name)
    assert all(msg.startswith((dt, gt)) for msg in msgs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_loaded_objects_score_the_same(name):
    dt, gt = _paths(name)
    result, msgs = _evaluate(load_json(dt), load_json(gt), name)
    assert_same(result, _oracle(name))
    _check_warnings(msgs, name)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c["strict"]))
def test_strict_refuses_naming_the_file_and_the_first_record(name, reader):
    dt, gt = _paths(name)
    which, record = CASES[name]["strict"]
    with pytest.raises(InputError) as exc:
        deteval.evaluate(dt, gt, iou_type=CASES[name]["iou_type"], strict=True)
    assert (exc.value.source, exc.value.record) == ({"dt": dt, "gt": gt}[which], record)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c["strict"]))
def test_cli_strict_exits_2(name, capsys):
    dt, gt = _paths(name)
    assert main(["--quiet", "--strict", "--iou-type", CASES[name]["iou_type"], dt, gt]) == 2
    assert CASES[name]["strict"][1] in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if not c["strict"]))
def test_strict_accepts_what_gives_no_warning(name):
    dt, gt = _paths(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DetevalWarning)
        result = deteval.evaluate(dt, gt, iou_type=CASES[name]["iou_type"], strict=True)
    assert_same(result, _oracle(name))


def test_the_oddities_change_the_numbers():
    """The catalog's changes are seen by pycocotools (else the parity above would prove little)."""
    clean = run_pycocotools(*_cleaned("negative_size_results"))
    for name in ("negative_size_results", "repeated_annotation_ids", "non_finite_results", "non_finite_gt",
                 "non_finite_scores", "infinite_scores"):  # fmt: skip
        assert not np.array_equal(_oracle(name).eval["precision"], clean.eval["precision"]), name
    assert np.isnan(_oracle("non_finite_scores").eval["scores"]).any()  # NaN shown where pycocotools shows it


def test_nan_scores_beside_minus_inf_are_refused():
    """NaN ranks as -inf would (last), so a -inf score beside NaN has no stand-in: an error naming both."""
    dt, gt = _paths("non_finite_scores")
    dets = load_json(dt)
    dets[15]["score"] = -math.inf
    with (
        pytest.warns(DetevalWarning, match="infinite score"),
        pytest.raises(InputError, match=r"results\[1\].*score is NaN, and results\[15\].*has -inf"),
    ):
        deteval.evaluate(dets, gt)


def test_nan_scores_through_the_pycocotools_drop_in():
    """The drop-in shows NaN in eval['scores'] and in evalImgs' dtScores, as pycocotools does."""
    from deteval.pycocotools import COCO, COCOeval

    dt, gt = _paths("non_finite_scores")
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", DetevalWarning)
        g = COCO(gt)
        ev = COCOeval(g, g.loadRes(dt), "bbox")
        ev.evaluate()
        ev.accumulate()
    want = _oracle("non_finite_scores")
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(ev.eval[key], want.eval[key], equal_nan=True), key
    got = [r["dtScores"] for r in ev.evalImgs if r]
    assert any(math.isnan(x) for scores in got for x in scores)


def _cleaned(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_cases", ODD / "make_cases.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gt, dt = mod.base()
    return [{k: v for k, v in d.items() if k != "segmentation"} for d in dt], gt


@pytest.mark.parametrize(
    "name", ["repeated_annotation_ids", "negative_size_results", "non_finite_results", "non_finite_scores"]
)
def test_pooled_categories_as_pycocotools(name):
    """useCats=0 reads the per-image lists by category order: the repeated ids' stand-ins land as there."""
    dt, gt = (load_json(p) for p in _paths(name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetevalWarning)
        result = deteval.evaluate(dt, gt, use_cats=False)
    assert_same(result, run_pycocotools(dt, gt, use_cats=False))


_EDGE = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 10.0, 5.0, -5.0, 1e-200, 1e-170, 1e300, -1e300]),
    st.floats(-50, 50, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=max(1, settings().max_examples * 2 // 3))  # 200 under the ci profile
@given(
    dt=st.lists(st.lists(_EDGE, min_size=4, max_size=4), min_size=1, max_size=6),
    gt=st.lists(st.lists(_EDGE, min_size=4, max_size=4), min_size=1, max_size=6),
    crowd=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_box_iou_is_maskapi_for_any_doubles(dt, gt, crowd):
    """NaN, infinite, negative-size boxes: the IoU kernel is pycocotools' bbIou (C fmin/fmax) bit for bit."""
    from pycocotools import mask as mask_utils

    from deteval.geometry.boxes import box_iou

    crowd = crowd[: len(gt)]
    want = mask_utils.iou(np.array(dt, np.float64), np.array(gt, np.float64), [int(c) for c in crowd])
    got = box_iou(np.array(dt), np.array(gt), np.array(crowd))
    assert np.array_equal(got, want, equal_nan=True)
    numbers = ~np.isnan(want)  # a NaN's sign bit changes no comparison
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def test_lvis_fields_keyword_reads_lvis_ground_truth_without_the_warning(reader):
    from deteval.io.coco import load_coco_gt

    _, gt = _paths("lvis_fields")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DetevalWarning)
        quiet = load_coco_gt(gt, lvis_fields=True, strict=True)
    with pytest.warns(DetevalWarning, match=r"--protocol lvis"):
        warned = load_coco_gt(gt)
    assert np.array_equal(quiet.boxes, warned.boxes)


@pytest.mark.parametrize("name", ["missing_iscrowd", "lvis_fields", "repeated_image_ids", "empty_segmentation_bbox"])
def test_the_scanner_reads_these_itself_with_the_general_readers_warnings(name):
    """Not declined: the byte scanner's columns carry what the warnings need (iscrowd given, LVIS fields seen)."""
    from deteval.io.coco import gt_from_scan
    from deteval.io.coco_json import ground_truth_of_json

    _, gt = _paths(name)
    with open(gt, "rb") as f:
        raw = f.read()
    with warnings.catch_warnings(record=True) as scanned:
        warnings.simplefilter("always")
        fast = gt_from_scan(raw, gt)
    with warnings.catch_warnings(record=True) as general:
        warnings.simplefilter("always")
        slow = ground_truth_of_json(load_json(gt), gt)
    assert fast is not None
    assert [str(w.message) for w in scanned] == [str(w.message) for w in general]
    assert np.array_equal(fast.boxes, slow.boxes) and np.array_equal(fast.crowd, slow.crowd)


def test_real_data_with_images_of_size_zero_scores_as_pycocotools_in_mask_evaluation():
    """toy7's images are all 0x0 (tests/data/toy7): pycocotools rasterises every polygon empty, so its
    mask AP is 0 with its ground truth counted; deteval gives its arrays, with one warning per file."""
    toy = DATA_DIR / "toy7"
    dt, gt = str(toy / "detections_coco.json"), str(toy / "groundtruths_coco.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = deteval.evaluate(dt, gt, iou_type="segm")
    ev = run_pycocotools(load_json(dt), load_json(gt), iou_type="segm")
    assert_same(result, ev)
    assert ev.stats[0] == 0
    msgs = [str(w.message) for w in caught if issubclass(w.category, DetevalWarning)]
    assert [m.split(":")[0] for m in msgs] == [gt, dt] and all("image of height 0" in m for m in msgs)

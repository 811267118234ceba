"""The results scanner's keypoint mode (``iou_type="keypoints"``) against the general reader.

Scanned or read by the general reader, the same file gives the same :class:`Detections` bit for bit, with the
same warnings (or, where the scanner declines, the general reader's own result or error); in pieces on
threads too. Both of loadRes's readings are covered: with a ``bbox`` in the first result (the boxes as given,
area ``w*h``) and without (box and area the keypoints' extent).
"""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.scanned_either_way import assert_same_read, assert_same_tables, read_either_way, stats_either_way

from deteval.io.coco import load_coco_gt, load_coco_results, scan_results

FIELDS = ("image", "category", "score", "area", "boxes", "keypoints", "nan_scores")
K = 3  # keypoints per person in these files
GT = {
    "images": [{"id": i, "width": 100, "height": 100} for i in (1, 2, 3)],
    "categories": [{"id": 1, "name": "person", "keypoints": ["a", "b", "c"]}, {"id": 2, "name": "cat"}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "bbox": [10, 10, 30, 60], "area": 900.0,
         "num_keypoints": 2, "keypoints": [20, 20, 2, 30, 40, 1, 0, 0, 0]},
    ],
}  # fmt: skip


def _load(text: str, tmp_path, monkeypatch, scanner: bool, piece_bytes: int | None = None):
    gt = load_coco_gt(GT, iou_type="keypoints")
    read = partial(load_coco_results, gt=gt, iou_type="keypoints")
    return read_either_way(text, read, tmp_path, monkeypatch, scanner, piece_bytes)


def assert_same(fast, slow) -> None:
    assert_same_read(fast, slow, FIELDS)


# numbers as JSON writes them and as other writers do: integers, exponents, long mantissas, float32 reprs, -0
number = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(-2000, 2000, width=32).map(lambda x: repr(float(np.float32(x)))),
    st.sampled_from(["-0", "-0.0", "1e2", "1.5E-3", "0.30000000000000004", "123456789012345678901234567890e-25"]),
)


def _num(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)


@st.composite
def results_text(draw):
    boxed = draw(st.sampled_from(["all", "none", "some"]))  # some: the first decides loadRes's branch
    recs = []
    for _ in range(draw(st.integers(0, 12))):
        kp = ", ".join(_num(draw(number)) for _ in range(3 * K))
        fields = [f'"image_id": {draw(st.integers(1, 3))}', f'"category_id": {draw(st.integers(1, 2))}',
                  f'"keypoints": [{kp}]', f'"score": {_num(draw(number))}']  # fmt: skip
        if boxed == "all" or (boxed == "some" and draw(st.booleans())):
            fields.append(f'"bbox": [{", ".join(_num(draw(number)) for _ in range(4))}]')
        if draw(st.integers(0, 5)) == 0:
            fields.append('"extra": {"keypoints": [1, "x", null]}')
        order = draw(st.permutations(range(len(fields))))
        recs.append("{" + ", ".join(fields[i] for i in order) + "}")
    sep = draw(st.sampled_from([",", ",\n", " , "]))
    return "[" + sep.join(recs) + "]"


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(results_text(), st.sampled_from([None, 1]))
def test_scanned_equals_the_general_reader(tmp_path, monkeypatch, text, piece_bytes):
    fast = _load(text, tmp_path, monkeypatch, True, piece_bytes)
    assert_same(fast, _load(text, tmp_path, monkeypatch, False))
    if '"bbox"' not in text and '"extra"' not in text:  # nothing here for the scanner to decline
        assert scan_results(text.encode(), "keypoints") is not None or "keypoints" not in text


def test_the_scanner_reads_them():
    """Not a comparison of two general reads: the scanner takes plain keypoint files, with and without boxes."""
    rec = {"image_id": 1, "category_id": 1, "keypoints": [1.5, 2, 2, 3e1, 4, -0.0, 7, 8, 1], "score": 0.5}
    cols = scan_results(json.dumps([rec, rec]).encode(), "keypoints")
    assert cols is not None and cols["keypoints"].shape == (2, 9) and cols["bbox"].shape == (2, 4)
    assert cols["keypoints"][1].tolist() == [1.5, 2.0, 2.0, 30.0, 4.0, -0.0, 7.0, 8.0, 1.0]
    assert not cols["has_bbox"].any() and not cols["bbox"].any()
    boxed = scan_results(json.dumps([{**rec, "bbox": [1, 2, 3, 4]}, rec]).encode(), "keypoints")
    assert boxed["has_bbox"].tolist() == [True, False] and boxed["bbox"][0].tolist() == [1, 2, 3, 4]
    for other in ({**rec, "keypoints": [1, 2, 3]}, {**rec, "segmentation": [[1, 2, 3, 4, 5, 6]]}, {"score": 1}):
        assert scan_results(json.dumps([rec, other]).encode(), "keypoints") is None
    # the count is the first keypoints' in the file, wherever they are: inside another key first, none fits
    odd = [{**rec, "extra": {"keypoints": [1, 2]}}]
    assert scan_results(json.dumps(odd).encode(), "keypoints") is not None
    assert scan_results(json.dumps(odd, sort_keys=True).encode(), "keypoints") is None


@pytest.mark.parametrize(
    "change",
    [{"keypoints": [1, 2, 3]}, {"keypoints": []}, {"keypoints": None}, {"keypoints": [1, 2, 3, 4, 5, 6, 7, 8, 1e400]},
     {"bbox": []}, {"bbox": [1, 2, -3, 4]}, {"bbox": [1, 2, 3]}, {"score": "x"}, {"image_id": 9}, {"category_id": 7},
     {"segmentation": [[1, 2, 3, 4, 5, 6]]}],
)  # fmt: skip
@pytest.mark.parametrize("first_boxed", [False, True])
def test_what_the_scanner_declines_reads_the_general_way(tmp_path, monkeypatch, change, first_boxed):
    good = {"image_id": 1, "category_id": 1, "keypoints": [20.0, 20.0, 2, 31, 41, 1, 0, 0, 0], "score": 0.5}
    if first_boxed:
        good["bbox"] = [10, 10, 20, 30]
    for recs in ([good, {**good, **change}], [{**good, **change}, good]):
        text = json.dumps(recs)
        assert_same(_load(text, tmp_path, monkeypatch, True), _load(text, tmp_path, monkeypatch, False))


def test_evaluate_from_files_is_the_same_either_way(tmp_path, monkeypatch):
    dets = [{"image_id": 1 + i % 3, "category_id": 1, "keypoints": [20.0 + i, 20.0, 2, 30, 40.0 - i, 1, 0, 0, 0],
             "score": 0.9 - 0.01 * i} for i in range(40)]  # fmt: skip
    stats = stats_either_way(dets, GT, tmp_path, monkeypatch, iou_type="keypoints", kpt_sigmas=[0.5, 0.5, 0.5])
    assert stats[0] == stats[1] and stats[0]["AP50"] > 0


# ---------------------------------------------------------------------------------------------
# ground truth


def _load_gt(text: str, tmp_path, monkeypatch, scanner: bool):
    return read_either_way(text, partial(load_coco_gt, iou_type="keypoints"), tmp_path, monkeypatch, scanner)


GT_FIELDS = ("image", "category", "boxes", "area", "crowd", "ignore", "ann_id", "keypoints", "num_keypoints")


@st.composite
def gt_text(draw):
    """Keypoint ground truth: integer keypoints as COCO writes them (floats too), num_keypoints given or not,
    the categories (naming their keypoints under the same key) before or after the annotations."""
    anns = []
    for i in range(draw(st.integers(0, 10))):
        kp = ", ".join(_num(draw(st.one_of(st.integers(0, 640), number))) for _ in range(3 * K))
        # a negative width or height (declined by the scanner, warned of by the general reader) now and then
        size = (
            st.one_of(st.integers(0, 300), st.floats(0, 300), number)
            if draw(st.integers(0, 5)) == 0
            else st.integers(0, 300)
        )
        box = ", ".join(_num(draw(v)) for v in (number, number, size, size))
        fields = [
            f'"id": {i + 1}',
            f'"image_id": {draw(st.integers(1, 3))}',
            f'"category_id": {draw(st.integers(1, 2))}',
            f'"bbox": [{box}]',
            f'"keypoints": [{kp}]',
        ]
        if draw(st.booleans()):
            fields.append(f'"num_keypoints": {_num(draw(st.one_of(st.integers(0, K), number)))}')
        if draw(st.booleans()):
            fields.append(f'"iscrowd": {draw(st.sampled_from(["0", "1", "true", "false"]))}')
        if draw(st.booleans()):
            fields.append(f'"area": {_num(draw(st.one_of(number, st.just(-5.0))))}')
        if draw(st.integers(0, 3)) == 0:
            fields.append('"segmentation": [[1, 2, 3, 4, 5, 6]]')
        order = draw(st.permutations(range(len(fields))))
        anns.append("{" + ", ".join(fields[i] for i in order) + "}")
    images = ", ".join(f'{{"id": {i}, "width": 100, "height": 100}}' for i in (1, 2, 3))
    cats = '[{"id": 1, "name": "person", "keypoints": ["a", "b", "c"], "skeleton": [[1, 2]]}, {"id": 2}]'
    lists = [f'"images": [{images}]', f'"categories": {cats}', f'"annotations": [{", ".join(anns)}]']
    return "{" + ", ".join(lists[i] for i in draw(st.permutations(range(3)))) + "}"


# generated annotations may lack an area (warned by both readers alike); compared here: the two readers
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gt_text())
def test_scanned_ground_truth_equals_the_general_reader(tmp_path, monkeypatch, text):
    fast, slow = (_load_gt(text, tmp_path, monkeypatch, s) for s in (True, False))
    assert_same_read(fast, slow, GT_FIELDS)
    if not isinstance(fast[0], str):
        assert_same_tables(fast[0], slow[0])


def test_the_gt_scanner_reads_them():
    """Not two general reads compared: the scanner reads the keypoints (not the categories' names) and
    num_keypoints (NaN where missing), and declines an annotation without keypoints or with another count."""
    from deteval.io.scan.gt import parse_gt_columns

    cats_first = {"categories": GT["categories"], "images": GT["images"], "annotations": GT["annotations"]}
    more = {"id": 2, "image_id": 2, "category_id": 1, "bbox": [1, 2, 3, 4], "keypoints": [1, 2, 2] * K}
    cols = parse_gt_columns(
        json.dumps({**cats_first, "annotations": [*GT["annotations"], more]}).encode(), keypoints=True
    )
    assert cols is not None
    an = cols["annotations"]
    assert an["keypoints"].tolist() == [[20, 20, 2, 30, 40, 1, 0, 0, 0], [1, 2, 2] * K]
    assert an["num_keypoints"][0] == 2 and np.isnan(an["num_keypoints"][1])
    for bad in ({k: v for k, v in more.items() if k != "keypoints"}, {**more, "keypoints": [1, 2, 2]}):
        doc = {**cats_first, "annotations": [*GT["annotations"], bad]}
        assert parse_gt_columns(json.dumps(doc).encode(), keypoints=True) is None

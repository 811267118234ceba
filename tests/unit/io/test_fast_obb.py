"""The results scanner's oriented-box mode (``iou_type="obb"``) against the general reader.

Scanned or read by the general reader, the same file gives the same :class:`Detections` bit for bit (or, where
the scanner declines, the general reader's own result or error); in pieces on threads too.
"""

from __future__ import annotations

import json
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.scanned_either_way import assert_same_read, assert_same_tables, read_either_way, stats_either_way

from deteval.io.coco import load_coco_gt, load_coco_results, scan_results

FIELDS = ("image", "category", "score", "area", "obb", "boxes", "nan_scores")
GT = {
    "images": [{"id": i, "width": 100, "height": 100} for i in (1, 2, 3)],
    "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
    "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "obb": [50.0, 50.0, 40.0, 20.0, 0.3]}],
}


def _load(text: str, tmp_path, monkeypatch, scanner: bool, piece_bytes: int | None = None):
    read = partial(load_coco_results, gt=load_coco_gt(GT, iou_type="obb"), iou_type="obb")
    return read_either_way(text, read, tmp_path, monkeypatch, scanner, piece_bytes)


def assert_same(fast, slow) -> None:
    assert_same_read(fast, slow, FIELDS)


# numbers as JSON writes them and as other writers do: integers, exponents, long mantissas, -0
number = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from(["-0", "-0.0", "1e2", "1.5E-3", "0.30000000000000004", "123456789012345678901234567890e-25"]),
)


def _num(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)


@st.composite
def results_text(draw):
    recs = []
    for _ in range(draw(st.integers(0, 12))):
        obb = ", ".join(_num(draw(number)) for _ in range(5))
        fields = [f'"image_id": {draw(st.integers(1, 3))}', f'"category_id": {draw(st.integers(1, 2))}',
                  f'"obb": [{obb}]', f'"score": {_num(draw(number))}']  # fmt: skip
        if draw(st.integers(0, 5)) == 0:
            fields.append('"extra": {"a": [1, "x", null]}')
        order = draw(st.permutations(range(len(fields))))
        recs.append("{" + ", ".join(fields[i] for i in order) + "}")
    sep = draw(st.sampled_from([",", ",\n", " , "]))
    return "[" + sep.join(recs) + "]"


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(results_text(), st.sampled_from([None, 1]))
def test_scanned_equals_the_general_reader(tmp_path, monkeypatch, text, piece_bytes):
    fast = _load(text, tmp_path, monkeypatch, True, piece_bytes)
    assert_same(fast, _load(text, tmp_path, monkeypatch, False))


def test_the_scanner_reads_them():
    """Not a comparison of two general reads: the scanner takes a plain obb file, and declines a bbox."""
    rec = {"image_id": 1, "category_id": 2, "obb": [1.5, 2, 3e1, 4, -0.25], "score": 0.5}
    cols = scan_results(json.dumps([rec, rec]).encode(), "obb")
    assert cols is not None and cols["bbox"].shape == (2, 5)
    assert cols["bbox"][1].tolist() == [1.5, 2.0, 30.0, 4.0, -0.25]
    assert scan_results(json.dumps([rec, {**rec, "bbox": [1, 2, 3, 4]}]).encode(), "obb") is None
    assert scan_results(json.dumps([{**rec, "obb": [1, 2, 3, 4]}]).encode(), "obb") is None
    assert scan_results(json.dumps([{k: v for k, v in rec.items() if k != "obb"}]).encode(), "obb") is None
    # in box evaluation an "obb" key is one more key, skipped
    assert scan_results(json.dumps([{**rec, "bbox": [1, 2, 3, 4]}]).encode(), "bbox") is not None


@pytest.mark.parametrize(
    "change",
    [{"bbox": [1, 2, 3, 4]}, {"obb": [1, 2, 3, 4]}, {"obb": [1, 2, 3, 4, 5, 6]}, {"obb": None}, {"score": "x"},
     {"segmentation": {"size": [4, 4], "counts": "04"}}, {"obb": [1, 2, 3, 4, 1e400]}, {"image_id": 9}],
)  # fmt: skip
def test_what_the_scanner_declines_reads_the_general_way(tmp_path, monkeypatch, change):
    good = {"image_id": 1, "category_id": 1, "obb": [50.0, 50.0, 40.0, 20.0, 0.3], "score": 0.5}
    text = json.dumps([good, {**good, **change}])
    assert_same(_load(text, tmp_path, monkeypatch, True), _load(text, tmp_path, monkeypatch, False))


def test_evaluate_from_files_is_the_same_either_way(tmp_path, monkeypatch):
    dets = [{"image_id": 1 + i % 3, "category_id": 1 + i % 2, "obb": [50.0 + i, 50.0, 40.0, 20.0 + i, 0.1 * i],
             "score": 0.9 - 0.01 * i} for i in range(40)]  # fmt: skip
    stats = stats_either_way(dets, GT, tmp_path, monkeypatch, iou_type="obb")
    assert stats[0] == stats[1] and stats[0]["AP50"] > 0


# ---------------------------------------------------------------------------------------------
# ground truth


def _load_gt(text: str, tmp_path, monkeypatch, scanner: bool):
    return read_either_way(text, partial(load_coco_gt, iou_type="obb"), tmp_path, monkeypatch, scanner)


GT_FIELDS = ("image", "category", "boxes", "area", "crowd", "ignore", "ann_id", "obb")


@st.composite
def gt_text(draw):
    anns = []
    for i in range(draw(st.integers(0, 10))):
        obb = ", ".join(_num(draw(number)) for _ in range(5))
        fields = [f'"id": {i + 1}', f'"image_id": {draw(st.integers(1, 3))}',
                  f'"category_id": {draw(st.integers(1, 2))}', f'"obb": [{obb}]']  # fmt: skip
        if draw(st.booleans()):
            fields.append(f'"iscrowd": {draw(st.sampled_from(["0", "1", "true", "false"]))}')
        if draw(st.integers(0, 2)) == 0:
            fields.append(f'"area": {_num(draw(st.one_of(number, st.just(-5.0))))}')
        if draw(st.integers(0, 3)) == 0:
            fields.append(f'"bbox": [{", ".join(_num(draw(number)) for _ in range(4))}]')
        if draw(st.integers(0, 5)) == 0:
            fields.append('"segmentation": [[1, 2, 3, 4, 5, 6]]')
        order = draw(st.permutations(range(len(fields))))
        anns.append("{" + ", ".join(fields[i] for i in order) + "}")
    images = ", ".join(f'{{"id": {i}, "width": 100, "height": 100}}' for i in (1, 2, 3))
    cats = '[{"id": 1, "name": "a"}, {"id": 2}]'
    return f'{{"images": [{images}], "categories": {cats}, "annotations": [{", ".join(anns)}]}}'


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gt_text())
def test_scanned_ground_truth_equals_the_general_reader(tmp_path, monkeypatch, text):
    fast, slow = (_load_gt(text, tmp_path, monkeypatch, s) for s in (True, False))
    assert_same_read(fast, slow, GT_FIELDS)
    if not isinstance(fast[0], str):
        assert_same_tables(fast[0], slow[0])


def test_the_gt_scanner_reads_them():
    from deteval.io.scan.gt import parse_gt_columns

    gt = {**GT, "annotations": [*GT["annotations"], {"id": 2, "image_id": 2, "category_id": 1, "area": 7,
                                                        "bbox": [1, 2, 3, 4], "obb": [1, 2, 3, 4, 0.5]}]}  # fmt: skip
    cols = parse_gt_columns(json.dumps(gt).encode(), obb=True)
    assert cols is not None
    an = cols["annotations"]
    assert an["obb"].tolist() == [[50.0, 50.0, 40.0, 20.0, 0.3], [1.0, 2.0, 3.0, 4.0, 0.5]]
    assert an["has_bbox"].tolist() == [False, True] and an["has_area"].tolist() == [False, True]
    missing = {**GT, "annotations": [{k: v for k, v in GT["annotations"][0].items() if k != "obb"}]}
    assert parse_gt_columns(json.dumps(missing).encode(), obb=True) is None

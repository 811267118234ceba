"""A results file scanned in pieces on threads (cut at commas between records) reads as one scan.

The scanner proves a cut: the piece before it must end with a whole record. Every comma of
these documents is tried as a cut, those inside strings, bracketed lists and nested objects
included; the columns must be those of one scan, row for row and bit for bit.
"""

from __future__ import annotations

import json
import mmap

import numpy as np
import pytest
from conftest import DATA_DIR

from deteval.io import json_source
from deteval.io.scan import pieces, results
from deteval.io.scan import result_records as rr
from deteval.io.scan.lexer import MAX_DEPTH
from deteval.tuning import TUNING

DATA = DATA_DIR

_BOX_RECORDS = [
    {"image_id": 1, "category_id": 2, "bbox": [1.5, 2, 3.25, 4], "score": 0.9},
    {"image_id": 1, "category_id": 3, "bbox": [0.1, "LONG", 3, 4], "score": "LONG"},
    {"image_id": 7, "note": "a}, {b", "category_id": 2, "bbox": [0, 0, 1, 1], "score": 0.5},
    {"image_id": 8, "extra": [{"x": 1}, {"y": [1, 2]}], "category_id": 1, "bbox": [5, 6, 7, 8], "score": 1},
    {"image_id": 9, "category_id": 4, "bbox": [9, 9, 9, 9], "score": 1e-7, "segmentation": [[1, 2, 3, 4]]},
    {"image_id": 2, "category_id": 2, "bbox": [1, 1, 1, 1], "score": 2.5e-300},
]
_RLE_RECORDS = [
    {"image_id": 1, "category_id": 1, "segmentation": {"size": [3, 4], "counts": "2214"}, "score": 0.5},
    {"image_id": 2, "category_id": 1, "segmentation": {"size": [2, 2], "counts": "13"}, "score": 0.25},
    {"image_id": 2, "category_id": 3, "bbox": [0, 0, 2, 2], "segmentation": {"size": [2, 2], "counts": "04"},
     "score": 0.125},
]  # fmt: skip


def _scan_in_pieces(raw, buf, mode, bounds, width=4):
    """The rows of a scan of these pieces, on every thread."""
    return pieces.PieceScan(raw, buf, mode, width, bounds, results.num_threads() - 1).rows()


def _text(records, indent=None) -> bytes:
    # a 25-digit mantissa: Python converts its float (a span), whose slot must follow the row
    return json.dumps(records, indent=indent).replace('"LONG"', "2.000000000000000000000000001").encode()


def _whole(raw, mode, width=4):
    buf = np.frombuffer(raw, np.uint8)
    return _scan_in_pieces(raw, buf, mode, [(0, len(raw))], width)


def _same(a, b) -> None:
    assert (a is None) == (b is None)
    if a is None:
        return
    has_box = (a[4] & (1 << rr.K_BBOX)) != 0  # a record without a box leaves its row unwritten
    for i, (x, y) in enumerate(zip(a, b)):
        assert x.dtype == y.dtype and x.shape == y.shape
        if i == 2:  # keypoint rows: the box's 4 numbers, then the keypoints, always written
            assert np.array_equal(x[:, 4:].view(np.int64), y[:, 4:].view(np.int64))
            x, y = x[has_box, :4], y[has_box, :4]
        assert np.array_equal(x.view(np.int64) if x.dtype == np.float64 else x,
                              y.view(np.int64) if y.dtype == np.float64 else y)  # fmt: skip


def _every_cut(raw: bytes, mode: int, width: int = 4) -> int:
    """Scan with a cut at each comma, then at pairs of commas; returns how many cuts scanned as pieces."""
    buf = np.frombuffer(raw, np.uint8)
    whole = _whole(raw, mode, width)
    commas = [i for i, c in enumerate(raw) if c == ord(",")]
    proven = 0
    for c in commas:
        bounds = [(0, c), (c + 1, len(raw))]
        proven += all(_piece_scans(buf, mode, bounds, width))
        _same(_scan_in_pieces(raw, buf, mode, bounds, width), whole)
    for a, b in zip(commas[::3], commas[1::3]):
        _same(_scan_in_pieces(raw, buf, mode, [(0, a), (a + 1, b), (b + 1, len(raw))], width), whole)
    return proven


def _piece_scans(buf, mode: int, bounds, width: int = 4) -> list[bool]:
    """Whether each piece scans on its own (the first with the list's ``[``, the last with its ``]``)."""
    oks = []
    for k, (lo, hi) in enumerate(bounds):
        cap = (hi - lo) // rr.min_record_bytes(width) + 1
        columns = (
            np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty((cap, width)), np.empty(cap),
            np.empty(cap, np.int64), np.empty((cap if mode == rr.M_READ else 0, 7), np.int64),
            np.empty(((width + 1) * cap, 4), np.int64), np.empty(MAX_DEPTH, np.uint8),
        )  # fmt: skip
        oks.append(bool(rr.scan_result_records(buf[lo:hi], k == 0, k == len(bounds) - 1, mode, *columns)[0]))
    return oks


@pytest.mark.parametrize("indent", [None, 1])
def test_every_comma_as_a_cut_reads_as_one_scan(indent):
    raw = _text(_BOX_RECORDS, indent)
    assert len(_whole(raw, rr.M_SKIP)[6]) == 2  # the spans
    # the cuts between records scan as pieces; the others fail there and fall back to one scan
    assert _every_cut(raw, rr.M_SKIP) == len(_BOX_RECORDS) - 1


def test_every_comma_as_a_cut_with_masks_read():
    raw = _text(_RLE_RECORDS)
    assert _whole(raw, rr.M_READ) is not None
    assert _every_cut(raw, rr.M_READ) == len(_RLE_RECORDS) - 1


def test_every_comma_as_a_cut_with_keypoints_read():
    """Rows of 4 + 3K numbers, a box in some records only, long mantissas (spans) in both parts of a row."""
    kp = [1, 2, 2, "LONG", 4.5, 1, 0, 0, 0]
    recs = [
        {"image_id": 1, "category_id": 1, "keypoints": kp, "score": 0.9, "bbox": [1, 2, 3, "LONG"]},
        {"image_id": 2, "note": "a}, {b", "category_id": 1, "keypoints": kp[::-1], "score": "LONG"},
        {"image_id": 3, "category_id": 2, "bbox": [0, 0, 1, 1], "keypoints": [0.5] * 9, "score": 1e-7},
        {"image_id": 4, "extra": [{"x": 1}, {"keypoints": [1]}], "category_id": 1, "keypoints": kp, "score": 1},
    ]
    raw = _text(recs)
    whole = _whole(raw, rr.M_KEYPOINTS, 13)
    # five numbers Python converts (spans); the row of record 1: no box, then its keypoints (a span's slot left 0)
    assert whole is not None and len(whole[6]) == 5 and whole[2][1].tolist() == [0] * 4 + [0, 0, 0, 1, 4.5, 0, 2, 2, 1]
    assert _every_cut(raw, rr.M_KEYPOINTS, 13) == len(recs) - 1


def test_a_file_the_whole_scan_declines_is_declined_in_pieces():
    for bad in (b'[{"image_id": 1}, {"image_id": 2}]', b'[{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], '
                b'"score": 1}, {"image_id": 2, "category_id": 1, "bbox": [1, 2, 3, 4], "score": NaN}]'):  # fmt: skip
        assert _whole(bad, rr.M_SKIP) is None
        _every_cut(bad, rr.M_SKIP)


@pytest.mark.parametrize(
    "name, masks",
    [
        ("coco_fake100/instances_val2014_fakebbox100_results.json", "skip"),
        ("coco_fake100/instances_val2014_fakesegm100_results.json", "read"),
    ],
)
def test_data_files_in_pieces_and_mapped(name, masks, monkeypatch, tmp_path):
    raw = (DATA / name).read_bytes()
    one = results.parse_results_columns(raw, masks=masks)
    assert one is not None
    monkeypatch.setattr(TUNING, "piece_bytes", 1)
    monkeypatch.setattr(results, "num_threads", lambda: 3)
    assert len(pieces.cut_pieces(raw, 3)) == 3 * TUNING.pieces_per_thread
    monkeypatch.setattr(TUNING, "map_bytes", 1)
    mapped = json_source.read_bytes(DATA / name, "results")
    assert isinstance(mapped, mmap.mmap)
    for source in (raw, mapped):
        cols = results.parse_results_columns(source, masks=masks)
        for key in ("image_id", "category_id", "bbox", "score"):
            assert np.array_equal(cols[key], one[key]) and cols[key].dtype == one[key].dtype
        if masks == "read":
            for f in ("counts", "offsets", "height", "width", "area"):
                assert np.array_equal(getattr(cols["masks"], f), getattr(one["masks"], f))


@pytest.mark.parametrize("text_of", [
    lambda t: t.replace('"score"', '"sc\\u006fre"', 1),  # an escaped key: the scanner declines, json reads it
    lambda t: t.replace('"score": ', '"score": NaN, "s": ', 1),  # a NaN score: the general path's error
])  # fmt: skip
def test_a_mapped_file_the_scanner_declines_reads_the_general_way(text_of, monkeypatch, tmp_path):
    from deteval.errors import InputError
    from deteval.io import coco

    monkeypatch.setattr(TUNING, "fast_path_bytes", 1)
    folder = DATA / "coco_fake100"
    path = tmp_path / "results.json"
    path.write_text(text_of((folder / "instances_val2014_fakebbox100_results.json").read_text()))
    gt = coco.load_coco_gt(folder / "instances_val2014_100.json")

    def load():
        try:
            return coco.load_coco_results(path, gt)
        except InputError as exc:
            return str(exc)

    plain = load()
    monkeypatch.setattr(TUNING, "map_bytes", 1)
    assert isinstance(json_source.read_bytes(path, "results"), mmap.mmap)
    mapped = load()
    if isinstance(plain, str):
        assert mapped == plain and "score" in plain
    else:
        assert np.array_equal(mapped.boxes, plain.boxes) and np.array_equal(mapped.score, plain.score)
        assert len(plain.score) > 0


def test_a_mapped_file_whose_scanned_pages_are_released_still_reads_its_python_numbers(monkeypatch, tmp_path):
    """Pieces of a mapped file are dropped from memory once scanned; the numbers Python converts are read
    again after that, from the page cache: the same columns as bytes give."""
    records = [dict(r, image_id=i) for i in range(3000) for r in _BOX_RECORDS[:2]]  # several pages a piece
    path = tmp_path / "results.json"
    path.write_bytes(_text(records))
    one = results.parse_results_columns(path.read_bytes(), masks="skip")
    monkeypatch.setattr(TUNING, "piece_bytes", 1 << 14)
    monkeypatch.setattr(results, "num_threads", lambda: 2)
    monkeypatch.setattr(TUNING, "map_bytes", 1)
    released, release = [], pieces.release_pages
    monkeypatch.setattr(pieces, "release_pages", lambda raw, lo, hi: released.append(lo) or release(raw, lo, hi))
    mapped = json_source.read_bytes(path, "results")
    assert isinstance(mapped, mmap.mmap)
    cols = results.parse_results_columns(mapped, masks="skip")
    assert len(released) == 8  # every piece
    for key in ("image_id", "category_id", "bbox", "score"):
        assert np.array_equal(cols[key], one[key]) and cols[key].dtype == one[key].dtype
    assert cols["score"][1] == 2.000000000000000000000000001

"""Mask results read by the byte scanner (``parse_results_columns(raw, masks=...)``, the loaders'
fast path for large files) against the general loader (``json.loads`` and ``masks_from_segmentations``).

Whatever the text, reading a results file with the fast path on (``TUNING.fast_path_bytes = 0``) gives
what the general path gives: the same containers field for field (masks included), or the same
error message, or the same warnings.
"""

from __future__ import annotations

import dataclasses
import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycocotools import mask as mask_utils
from support.examples import examples
from support.strategies import JSON_BYTES, mutate_bytes

from deteval import InputError
from deteval.geometry.masks import mask_iou_blocks
from deteval.io import coco as coco_io
from deteval.io.scan.results import parse_results_columns
from deteval.rle import CompressedMasks, Masks
from deteval.tuning import TUNING

SIZES = {1: (4, 5), 2: (7, 3), 3: (1, 1), 4: (12, 9)}  # image id -> (height, width)


def _gt():
    data = {
        "images": [{"id": i, "height": h, "width": w} for i, (h, w) in SIZES.items()],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 6, "bbox": [0, 0, 3, 2],
             "segmentation": [[0, 0, 3, 0, 3, 2, 0, 2]]},
        ],
    }  # fmt: skip
    return coco_io.load_coco_gt(data, iou_type="segm")


GT = _gt()


def _same_masks(a: Masks | CompressedMasks, b: Masks | CompressedMasks) -> None:
    for f in dataclasses.fields(Masks):  # the runs (decoded from the text where kept so), and the rest
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), f.name


def _same(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8)), f.name
        elif isinstance(x, (Masks, CompressedMasks)):
            _same_masks(x, y)
        elif f.name not in ("images", "categories"):
            assert x == y, f.name


def _same_overlaps(fast: Masks | CompressedMasks, general: Masks) -> None:
    """Every (result, ground truth) mask IoU, from the text the fast path keeps and from the runs: same bits."""
    nd, ng = len(general), len(GT.masks)
    blocks = (np.arange(ng), np.array([0, ng]), np.arange(nd), np.array([0, nd]), np.array([0, nd * ng]))
    want = mask_iou_blocks(*blocks, GT.masks, GT.crowd, general)
    got = mask_iou_blocks(*blocks, GT.masks, GT.crowd, fast)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))


def _outcome(path: Path, fast: bool, iou_type: str, monkeypatch):
    """("ok", Detections, warnings) or ("error", message, warnings), and whether the fast path read it."""
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0 if fast else 1 << 60)
    taken = []
    orig = coco_io.results_from_scan

    def spy(*a, **k):
        out = orig(*a, **k)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(coco_io, "results_from_scan", spy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = ("ok", coco_io.load_coco_results(path, GT, iou_type=iou_type))
        except InputError as e:
            out = ("error", str(e))
    monkeypatch.setattr(coco_io, "results_from_scan", orig)
    return (*out, [str(w.message) for w in caught]), bool(taken and taken[0])


def check_file(raw: bytes, tmp_path: Path, monkeypatch, iou_type: str = "segm", must_take: bool = False) -> bool:
    """Fast and general readings of ``raw`` agree; returns whether the fast path read it."""
    path = tmp_path / "dets.json"
    path.write_bytes(raw)
    general, _ = _outcome(path, False, iou_type, monkeypatch)
    fast, taken = _outcome(path, True, iou_type, monkeypatch)
    assert fast[0] == general[0], (fast[:2], general[:2], raw[:300])
    assert fast[2] == general[2]
    if fast[0] == "ok":
        _same(fast[1], general[1])
        if iou_type == "segm":
            _same_overlaps(fast[1].masks, general[1].masks)
    else:
        assert fast[1] == general[1]
    if must_take:
        assert taken, raw[:300]
    return taken


# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------
def _encode(mask: np.ndarray) -> dict:
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}


def _mask(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    kind = rng.integers(0, 4)
    if kind == 0:
        return rng.random((h, w)) < rng.random()
    if kind == 1:
        return np.zeros((h, w), bool)
    if kind == 2:
        return np.ones((h, w), bool)
    m = np.zeros((h, w), bool)
    y0, x0 = rng.integers(0, h), rng.integers(0, w)
    m[y0 : rng.integers(y0, h + 1), x0 : rng.integers(x0, w + 1)] = True
    return m


def _record(image_id=1, category_id=1, score=0.5, bbox=None, seg=None, rng=None) -> dict:
    rec = {"image_id": image_id, "category_id": category_id, "score": score}
    if bbox is not None:
        rec["bbox"] = bbox
    if seg is None:
        h, w = SIZES[image_id]
        seg = _encode(_mask(rng or np.random.default_rng(image_id), h, w))
    rec["segmentation"] = seg
    return rec


def _dump(records: list) -> bytes:
    return json.dumps(records).encode()


LONG_ONES = "".join("0" if i % 2 == 0 else "1" for i in range(2000))  # runs of 0 and 1 pixel; no size fits


def test_plain_files_are_read(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    recs = [_record(i, 1 + i % 2, 0.1 * i, bbox=[1, 2, 3, 4.5], rng=rng) for i in (1, 2, 3, 4, 4, 1)]
    assert check_file(_dump(recs), tmp_path, monkeypatch, must_take=True)
    assert check_file(_dump(recs), tmp_path, monkeypatch, iou_type="bbox", must_take=True)
    for r in recs:  # the segm branch: the mask's area, the mask's extent
        del r["bbox"]
    assert check_file(_dump(recs), tmp_path, monkeypatch, must_take=True)
    recs[2]["bbox"] = [0.5, 0.5, 2, 2]  # a box given in that branch is taken as it is
    assert check_file(_dump(recs), tmp_path, monkeypatch, must_take=True)
    assert check_file(b"[]", tmp_path, monkeypatch, must_take=True)


def test_backslash_escapes(tmp_path, monkeypatch):
    """pycocotools' strings hold '\\' (44 + 48); JSON writes it '\\\\'."""
    rng = np.random.default_rng(1)
    recs, n = [], 0
    while n < 5:
        rec = _record(4, rng=rng)
        n += "\\" in rec["segmentation"]["counts"]
        recs.append(rec)
    cols = parse_results_columns(_dump(recs), masks="read")
    assert cols is not None
    check_file(_dump(recs), tmp_path, monkeypatch, must_take=True)
    text = _dump(recs).replace(b"\\\\", b"\\u005c")  # the same text, other escape: the general path's
    assert parse_results_columns(text, masks="read") is None
    check_file(text, tmp_path, monkeypatch)


def test_masks_read_from_the_mapped_file_and_a_rewrite_is_caught(tmp_path, monkeypatch):
    """Results' mask strings stay in the file's mapped bytes: a file replaced or deleted after the load
    leaves them as they were; one rewritten in place raises a clear error before any string is read."""
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0)
    monkeypatch.setattr(TUNING, "map_bytes", 0)
    rng = np.random.default_rng(2)
    recs = [_record(i, 1 + i % 2, 0.1 * i, rng=rng) for i in (1, 2, 3, 4, 4, 1, 2)]
    path = tmp_path / "dets.json"
    path.write_bytes(_dump(recs))
    want = coco_io.load_coco_results(path, GT, iou_type="segm", strict=True).masks.counts
    for change in ("replace", "delete", "rewrite"):
        path.write_bytes(_dump(recs))
        masks = coco_io.load_coco_results(path, GT, iou_type="segm", strict=True).masks
        assert isinstance(masks, CompressedMasks) and masks.backing is not None
        if change == "replace":
            (tmp_path / "new.json").write_bytes(b"[]")
            (tmp_path / "new.json").replace(path)
        elif change == "delete":
            path.unlink()
        else:
            path.write_bytes(b"[]")  # shorter: the map's pages past its end would fault
            with pytest.raises(InputError, match=r"dets\.json: changed since it was loaded"):
                masks.extents()
            with pytest.raises(InputError, match="load it again"):
                masks.take([0, 1]).compact()
            with pytest.raises(InputError, match="load it again"):
                _same_overlaps(masks, masks)
            continue
        assert np.array_equal(masks.counts, want)
        runs = Masks(masks.counts, masks.offsets, masks.height, masks.width, masks.area)
        _same_overlaps(masks, runs)


BAD_SEGMENTATIONS = [
    {"size": [4, 5], "counts": [0, 2, 2, 2, 14]},  # uncompressed
    [[0, 0, 3, 0, 3, 2, 0, 2]],  # polygon
    {"size": [4, 5], "counts": "0220<", "extra": 1},
    {"counts": "0220<", "size": [4, 5], "size2": [4, 5]},
    {"size": [4, 5]},
    {"counts": "0220<"},
    {"size": [4, 5], "counts": "0220<", "counts": "0220<"},  # noqa: F601 - json.dumps writes it once
    {"size": [4, 5], "counts": "0220"},  # runs short
    {"size": [4, 5], "counts": "0220<1"},  # runs long
    {"size": [5, 4], "counts": "0220<"},  # fits h*w, not the image
    {"size": [4, 5], "counts": "0220<" + "0" * 3},
    {"size": [4, 5], "counts": "02201"},
    {"size": [4, 5], "counts": "0220l"},  # the last number never ended
    {"size": [4, 5], "counts": "02\u00e920<"},
    {"size": [4, 5], "counts": "02 20<"},
    {"size": [4, 5], "counts": "02p20<"},
    {"size": [4, 5], "counts": "0/20<"},
    {"size": [4, 5], "counts": '0"20<'},
    {"size": [4, 5], "counts": "0\n20<"},
    {"size": [4, 5], "counts": "\\"},
    {"size": [4, 5], "counts": "0220O"},  # negative run
    {"size": [4, 5], "counts": "00_"},  # negative first run
    {"size": [4, 5], "counts": "0" + "o" * 12 + "0"},  # a 13-char number
    {"size": [4, 5], "counts": "0" + "o" * 11 + "00"},
    {"size": [4, 5], "counts": "0ooooooo0"},  # a run beyond 2**32 - 1
    {"size": [4, 5], "counts": 5},
    {"size": [4, 5], "counts": None},
    {"size": [4.0, 5], "counts": "0220<"},
    {"size": [-4, 5], "counts": "0220<"},
    {"size": [-0, 5], "counts": ""},
    {"size": [4, 5, 1], "counts": "0220<"},
    {"size": [4], "counts": "0220<"},
    {"size": "4x5", "counts": "0220<"},
    {"size": [True, 5], "counts": "0220<"},
    {"size": [0, 0], "counts": ""},
    {"size": [0, 5], "counts": "0"},
    {"size": [1 << 31, 1], "counts": "0"},
    {"size": [10**19, 1], "counts": "0"},
    {"size": [4, 5], "counts": ""},
    "abc",
    None,
    5,
    {},
]


@pytest.mark.parametrize("seg", BAD_SEGMENTATIONS, ids=range(len(BAD_SEGMENTATIONS)))
@pytest.mark.parametrize("where", [0, 1])
@pytest.mark.parametrize("with_bbox", [True, False])
def test_unusual_segmentations(seg, where, with_bbox, tmp_path, monkeypatch):
    recs = [_record(1, bbox=[1, 1, 2, 2] if with_bbox else None) for _ in range(2)]
    recs[where]["segmentation"] = seg
    for iou_type in ("segm", "bbox"):
        check_file(_dump(recs), tmp_path, monkeypatch, iou_type=iou_type)


def test_unusual_segmentation_raw_forms(tmp_path, monkeypatch):
    good = '{"image_id":1,"category_id":1,"score":0.5,"segmentation":%s}'
    forms = [
        '{"size":[4,5],"counts":"0220<"}',
        ' { "counts" : "0220<" , "size" : [ 4 , 5 ] } ',
        '{"size":[4,5],"counts":"0220<","size":[4,5]}',
        '{"size":[4,5],"counts":"0220<","counts":"0220<"}',
        '{"size":[4,5],"counts":"0220<",}',
        '{"size":[4,5],"counts":"0220<"',
        '{"size":[4,5] "counts":"0220<"}',
        '{"size":[04,5],"counts":"0220<"}',
        '{"size":[4e0,5],"counts":"0220<"}',
        '{"size":[-0,5],"counts":"0220<"}',
        '{"si\\u007ae":[4,5],"counts":"0220<"}',
        '{"size":[4,5],"counts":"0220\\u003c"}',
        '{"size":[4,5],"counts":"0220<\\/"}',
        '{"size":[4,5],"counts":"0220<\\"}',
        '{"size":[4,5],"counts":"0220<\\\\"}',
        '{"size":[4,5],"counts":null}',
        '{"size":null,"counts":"0220<"}',
        '{"size":[4,5],"counts":"0220<"}}',
    ]
    for form in forms:
        raw = ("[" + good % form + "," + good % '{"size":[4,5],"counts":"0220<"}' + "]").encode()
        for iou_type in ("segm", "bbox"):
            check_file(raw, tmp_path, monkeypatch, iou_type=iou_type)
    assert check_file(("[" + good % forms[1] + "]").encode(), tmp_path, monkeypatch, must_take=True)


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r[1].update(bbox=[1, 1, -2, 2]),  # negative box size
        lambda r: r[0].update(bbox=[]),  # [] reads as absent
        lambda r: r[1].update(bbox=[]),
        lambda r: r[1].update(bbox=[1, 2, 3]),
        lambda r: r[1].pop("bbox"),  # the bbox branch needs every box
        lambda r: r[0].pop("bbox"),  # the segm branch takes the others' boxes as given
        lambda r: r[1].pop("segmentation"),  # the bbox branch makes box polygons of these
        lambda r: r[0].pop("segmentation"),
        lambda r: r[1].update(category_id=9),  # a warning
        lambda r: r[1].update(image_id=9),
        lambda r: r[1].pop("score"),
        lambda r: r[1].update(keypoints=[1, 2, 2]),
        lambda r: r[1].update(iscrowd=1),
        lambda r: r[0].pop("score"),
        lambda r: r[0].update(iscrowd=1) or r[0].pop("score"),
        lambda r: r[1].update(bbox=[1, 1, 1e400, 2]),
        lambda r: r[1].update(score=float("nan")),
        lambda r: r[1].update(image_id=10**20),
    ],
)
def test_record_level_rules(change, tmp_path, monkeypatch):
    recs = [_record(1, bbox=[1, 1, 2, 2]), _record(2, bbox=[0, 0, 1, 1]), _record(4, bbox=[2, 2, 2, 2])]
    change(recs)
    raw = json.dumps(recs).replace("Infinity", "1e400").encode()
    for iou_type in ("segm", "bbox"):
        check_file(raw, tmp_path, monkeypatch, iou_type=iou_type)


# ---------------------------------------------------------------------------------------------
# hypothesis
# ---------------------------------------------------------------------------------------------
WS = st.sampled_from(["", "", " ", "\n", "\t ", " \r\n"])


@st.composite
def mask_documents(draw) -> bytes:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    first_box = draw(st.booleans())
    recs = []
    for i in range(draw(st.integers(0, 5))):
        image_id = draw(st.sampled_from(sorted(SIZES)))
        h, w = SIZES[image_id]
        if draw(st.integers(0, 9)) == 0:
            h, w = draw(st.integers(0, 6)), draw(st.integers(0, 6))  # an RLE of its own size
        seg = _encode(_mask(rng, h, w)) if h and w else {"size": [h, w], "counts": ""}
        if draw(st.integers(0, 14)) == 0:
            seg = draw(st.sampled_from(BAD_SEGMENTATIONS))
        box = None
        if i == 0:
            has_box = first_box
        else:  # mostly all or none, as detectors write them
            has_box = draw(st.integers(0, 5)) > 0 if first_box else draw(st.integers(0, 5)) == 0
        if has_box:
            box = [draw(st.sampled_from([0, 1, 2.5, 0.1, 3])) for _ in range(4)]
        rec = {"image_id": image_id, "category_id": draw(st.sampled_from([1, 1, 2, 3])), "score": 0.5}
        if box is not None:
            rec["bbox"] = box
        rec["segmentation"] = seg
        if draw(st.integers(0, 9)) == 0:
            rec["id"] = i
        items = draw(st.permutations(list(rec.items())))
        recs.append(
            "{" + ",".join(f"{draw(WS)}{json.dumps(k)}{draw(WS)}:{draw(WS)}{json.dumps(v)}" for k, v in items) + "}"
        )
    return ("[" + draw(WS) + ",".join(recs) + draw(WS) + "]").encode()


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(mask_documents(), st.sampled_from(["segm", "bbox"]))
def test_hypothesis_mask_documents(tmp_path, monkeypatch, raw, iou_type):
    check_file(raw, tmp_path, monkeypatch, iou_type=iou_type)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(mask_documents(), st.data())
def test_hypothesis_mask_mutations(tmp_path, monkeypatch, raw, data):
    """One byte deleted, inserted or replaced, or the text cut: the general path's answer."""
    raw = mutate_bytes(raw, data, JSON_BYTES + list(b"o0<Oop/"))  # and RLE characters
    check_file(raw, tmp_path, monkeypatch, iou_type=data.draw(st.sampled_from(["segm", "bbox"])))


def test_random_masks_many(tmp_path, monkeypatch):
    """Many masks of every image size, all taken by the fast path."""
    rng = np.random.default_rng(7)
    r = random.Random(7)
    recs = [_record(i, r.choice([1, 2]), r.random(), rng=rng) for i in r.choices(sorted(SIZES), k=400)]
    assert check_file(_dump(recs), tmp_path, monkeypatch, must_take=True)


# ---------------------------------------------------------------------------------------------
# benchmark files
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_benchmark_file(iou_type, monkeypatch, bench_preset):
    gt_path, dt_path = bench_preset("small-segm") / "gt.json", bench_preset("small-segm") / "dets.json"
    gt = coco_io.load_coco_gt(gt_path, iou_type=iou_type)
    monkeypatch.setattr(TUNING, "fast_path_bytes", 1 << 60)
    general = coco_io.load_coco_results(dt_path, gt, iou_type=iou_type)
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0)
    cols = coco_io.scan_results(dt_path.read_bytes(), iou_type)
    assert coco_io.results_from_scan(cols, str(dt_path), gt, iou_type) is not None
    _same(coco_io.load_coco_results(dt_path, gt, iou_type=iou_type), general)

"""Mask ground truth read by the byte scanner (``parse_gt_columns(raw, segm=True)``, the loader's
fast path for large files) against the general loader (``json.loads`` and ``masks_from_segmentations``).

Whatever the text, reading a ground truth file for mask evaluation with the fast path on
(``TUNING.fast_path_bytes = 0``) gives what the general path gives: the same containers field for field
(masks, boxes and areas included), or the same error message, or the same warnings.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import COCO_PAIRS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycocotools import mask as mask_utils
from support.examples import examples
from support.strategies import JSON_BYTES, mutate_bytes

from deteval import InputError
from deteval.io import coco as coco_io
from deteval.io.scan.gt import parse_gt_columns
from deteval.rle import Masks
from deteval.tuning import TUNING

SIZES = {1: (4, 5), 2: (7, 3), 3: (1, 1), 4: (12, 9)}  # image id -> (height, width)


def _same(a, b) -> None:
    """Two containers equal field for field, arrays byte for byte (dtypes included)."""
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b) if a.dtype.kind in "OU" else np.array_equal(a.view(np.uint8), b.view(np.uint8))
    elif dataclasses.is_dataclass(a):
        assert type(a) is type(b)
        for f in dataclasses.fields(a):
            try:
                _same(getattr(a, f.name), getattr(b, f.name))
            except AssertionError as e:
                raise AssertionError(f"{f.name}: {e}") from None
    elif isinstance(a, dict):
        assert sorted(a) == sorted(b)
        for k in a:
            _same(a[k], b[k])
    else:
        assert a == b


def _outcome(path: Path, fast: bool, monkeypatch):
    """(("ok", GroundTruth) or ("error", message), warnings), and whether the fast path read it."""
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0 if fast else 1 << 60)
    taken = []
    orig = coco_io.gt_from_scan

    def spy(*a):
        out = orig(*a)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(coco_io, "gt_from_scan", spy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = ("ok", coco_io.load_coco_gt(path, iou_type="segm"))
        except InputError as e:
            out = ("error", str(e))
    monkeypatch.setattr(coco_io, "gt_from_scan", orig)
    return (*out, [str(w.message) for w in caught]), bool(taken and taken[0])


def check_file(raw: bytes, tmp_path: Path, monkeypatch, must_take: bool = False) -> bool:
    """Fast and general readings of ``raw`` agree; returns whether the fast path read it."""
    path = tmp_path / "gt.json"
    path.write_bytes(raw)
    general, _ = _outcome(path, False, monkeypatch)
    fast, taken = _outcome(path, True, monkeypatch)
    assert fast[0] == general[0], (fast[:2], general[:2], raw[:300])
    assert fast[2] == general[2]
    if fast[0] == "ok":
        _same(fast[1], general[1])
    else:
        assert fast[1] == general[1]
    if must_take:
        assert taken, raw[:300]
    return taken


# ---------------------------------------------------------------------------------------------
# documents
# ---------------------------------------------------------------------------------------------
def _runs(mask: np.ndarray) -> list[int]:
    """Uncompressed RLE counts of a mask (column-major runs starting with 0s)."""
    runs, current, n = [], False, 0
    for v in mask.reshape(-1, order="F").tolist():
        if v != current:
            runs.append(n)
            current, n = v, 0
        n += 1
    return [*runs, n]


def _compressed(mask: np.ndarray) -> dict:
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}


def _mask(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    m = np.zeros((h, w), bool)
    if rng.integers(0, 3) == 0:
        return rng.random((h, w)) < rng.random()
    y0, x0 = rng.integers(0, h), rng.integers(0, w)
    m[y0 : rng.integers(y0, h + 1), x0 : rng.integers(x0, w + 1)] = True
    return m


def _polygon(rng: np.random.Generator, h: int, w: int) -> list:
    parts = []
    for _ in range(int(rng.integers(1, 4))):
        k = int(rng.integers(3, 8))
        xy = rng.uniform(-1, 1, (k, 2)) * [w, h] * 0.7 + [w / 2, h / 2]
        kind = rng.integers(0, 3)
        if kind == 0:
            xy = np.round(xy, 2)
        elif kind == 1:
            xy = np.round(xy)
        parts.append([int(v) if kind == 1 and rng.integers(0, 2) else float(v) for v in xy.reshape(-1)])
    return parts


def _segmentation(rng: np.random.Generator, image_id: int):
    h, w = SIZES[image_id]
    kind = rng.integers(0, 4)
    if kind <= 1:
        return _polygon(rng, h, w)
    m = _mask(rng, h, w)
    if kind == 2:
        return {"size": [h, w], "counts": _runs(m)}
    return _compressed(m)


def _ann(i: int, rng: np.random.Generator, image_id: int = 1, **kw) -> dict:
    ann = {"id": i, "image_id": image_id, "category_id": 1 + i % 2, "iscrowd": 0, "area": 3.5, "bbox": [0, 1, 2, 2.5]}
    ann["segmentation"] = _segmentation(rng, image_id)
    ann.update(kw)
    return ann


def _doc(anns: list, images: list | None = None) -> dict:
    return {
        "images": images if images is not None else [{"id": i, "height": h, "width": w} for i, (h, w) in SIZES.items()],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": anns,
    }


def _dump(doc: dict) -> bytes:
    return json.dumps(doc).encode()


def test_runs_helper():
    rng = np.random.default_rng(3)
    for _ in range(50):
        m = _mask(rng, 4, 5)
        seg = {"size": [4, 5], "counts": _runs(m)}
        assert np.array_equal(mask_utils.decode(mask_utils.frPyObjects(seg, 4, 5)), m)


def test_plain_files_are_read(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    anns = [_ann(i + 1, rng, image_id=1 + i % 4) for i in range(40)]
    assert check_file(_dump(_doc(anns)), tmp_path, monkeypatch, must_take=True)
    for a in anns[::3]:  # no box: the mask's extent; no area either: the mask's
        del a["bbox"]
    for a in anns[::2]:
        del a["area"]
    anns[1]["iscrowd"] = 1
    assert check_file(_dump(_doc(anns)), tmp_path, monkeypatch, must_take=True)
    assert check_file(_dump(_doc([])), tmp_path, monkeypatch, must_take=True)
    # only one kind of segmentation
    for kind in range(4):
        one = [_ann(i + 1, rng, image_id=1 + i % 4) for i in range(12)]
        for a in one:
            a["segmentation"] = _segmentation(np.random.default_rng([kind, a["id"]]), a["image_id"])
        assert check_file(_dump(_doc(one)), tmp_path, monkeypatch, must_take=True)


@pytest.mark.parametrize("name", sorted({p.gt_path.name: n for n, p in COCO_PAIRS.items()}.values()))
def test_data_files(name, tmp_path, monkeypatch):
    """The ground truth under tests/data: those with masks (and image sizes) go the fast way."""
    taken = check_file(COCO_PAIRS[name].gt_path.read_bytes(), tmp_path, monkeypatch)
    assert taken == (name in ("coco_fake100", "polygons3"))  # toy7 has polygons, no image sizes


@pytest.mark.slow
def test_benchmark_preset(bench_preset, tmp_path, monkeypatch):
    raw = (bench_preset("small-segm") / "gt.json").read_bytes()
    assert check_file(raw, tmp_path, monkeypatch, must_take=True)


# ---------------------------------------------------------------------------------------------
# unusual segmentations and records: the same containers or the same error
# ---------------------------------------------------------------------------------------------
UNUSUAL_SEGMENTATIONS = [
    [],
    [[]],
    [[0, 0, 3, 0]],
    [[0, 0, 3, 0, 3]],
    [[0, 0, 3, 0, 3, 2, 0]],
    [[0, 0, 3, 0, 3, 2], []],
    [0, 0, 3, 0, 3, 2],
    [[[0, 0], [3, 0], [3, 2]]],
    [[0, 0, 3, 0, 3, "2"]],
    [[0, 0, 3, 0, 3, True]],
    [[0, 0, 3, 0, 3, None]],
    [[0, 0, 3, 0, 3, 2e6]],
    [[0, 0, 3, 0, 3, -1e6]],
    [[0, 0, 3, 0, 3, 10**20]],
    [[0, 0, 3, 0, 3, 123456789012345678]],
    [[-0.0, 0, 1e-320, 0, 3.0000000000000004, 2.5, 0.1, 1.7976931348623157e-300]],
    [[0, 0, 3, 0, 3, 2], {"size": [4, 5], "counts": [20]}],
    [[-5, -5, 30, -5, 30, 40, -5, 40]],  # beyond the image
    [[1, 1, 1, 1, 1, 1]],  # no area
    {"size": [4, 5], "counts": [20]},
    {"size": [4, 5], "counts": [0, 20]},
    {"size": [4, 5], "counts": [3, 4, 5, 8]},
    {"size": [4, 5], "counts": []},
    {"size": [0, 0], "counts": []},
    {"size": [4, 5], "counts": [19]},
    {"size": [4, 5], "counts": [21]},
    {"size": [4, 5], "counts": [-1, 21]},
    {"size": [4, 5], "counts": [20.0]},
    {"size": [4, 5], "counts": [True, 19]},
    {"size": [4, 5], "counts": [2**32, 0]},
    {"size": [4, 5], "counts": [2**32 - 1]},
    {"size": [4, 5], "counts": [10**20]},
    {"size": [4, 5], "counts": [[20]]},
    {"size": [5, 4], "counts": [20]},  # fits h*w, not the image
    {"size": [4, 5], "counts": [20], "extra": 1},
    {"counts": [20]},
    {"size": [4, 5]},
    {"size": [4.0, 5], "counts": [20]},
    {"size": [-4, 5], "counts": [20]},
    {"size": [4, 5, 1], "counts": [20]},
    {"size": None, "counts": [20]},
    {"size": [4, 5], "counts": None},
    {"size": [4, 5], "counts": "0220<"},
    {"size": [4, 5], "counts": "04"},
    {"size": [4, 5], "counts": "0220"},
    {"size": [4, 5], "counts": "0220<1"},
    {"size": [4, 5], "counts": "0220O"},
    {"size": [4, 5], "counts": "0220l"},
    {"size": [4, 5], "counts": "02\u00e920<"},
    {"size": [4, 5], "counts": "\\"},
    {"size": [5, 4], "counts": "04"},
    {"size": [4, 5], "counts": ""},
    "abc",
    None,
    5,
    True,
    {},
]
TAKEN = {12, 15, 17, 18, 19, 20, 21, 42}  # the ones the fast path reads (the others: errors or declined)


@pytest.mark.parametrize("index", range(len(UNUSUAL_SEGMENTATIONS)))
@pytest.mark.parametrize("where", [0, 1])
@pytest.mark.parametrize("box", ["given", "none", "none and no area"])
def test_unusual_segmentations(index, where, box, tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    anns = [_ann(1, rng), _ann(2, rng, image_id=2)]
    anns[where]["segmentation"] = UNUSUAL_SEGMENTATIONS[index]
    anns[where]["image_id"] = 1
    if box != "given":
        del anns[where]["bbox"]
    if box == "none and no area":
        del anns[where]["area"]
    assert check_file(_dump(_doc(anns)), tmp_path, monkeypatch) == (index in TAKEN)


def test_unusual_raw_forms(tmp_path, monkeypatch):
    """Texts ``json.dumps`` does not write: spacing, escapes, numbers Python converts, duplicates."""
    head = '{"images":[{"id":1,"height":4,"width":5}],"categories":[{"id":1}],"annotations":[%s]}'
    ann = '{"id":%d,"image_id":1,"category_id":1,"segmentation":%s}'
    forms = [
        "[[0,0,3,0,3,2]]",
        " [ [ 0 , 0 ,\n3 , 0 , 3 , 2 ] , [1,1,2,1,2,2] ] ",
        "[[0,0,3,0,3,2e0]]",
        "[[0,0,3,0,3,2E+0,0.5,-0]]",
        "[[0,0,3,0,3,12345678901234567890.5]]",
        "[[0,0,3,0,3,1e400]]",
        "[[0,0,3,0,3,-1e400]]",
        "[[0,0,3,0,3,NaN]]",
        "[[0,0,3,0,3,Infinity]]",
        "[[0,0,3,0,3,02]]",
        "[[0,0,3,0,3,2.]]",
        "[[0,0,3,0,3,.2]]",
        "[[0,0,3,0,3,2],]",
        "[[0,0,3,0,3,2,]]",
        "[[0,0,3,0,3 2]]",
        "[[0,0,3,0,3,2]",
        "[[0,0,3,0,3,2]]]",
        '{"size":[4,5],"counts":[20]}',
        ' { "counts" : [ 0 , 20 ] , "size" : [ 4 , 5 ] } ',
        '{"size":[4,5],"counts":[-0,20]}',
        '{"size":[4,5],"counts":[00,20]}',
        '{"size":[4,5],"counts":[20e0]}',
        '{"size":[4,5],"counts":[20],"size":[4,5]}',
        '{"size":[4,5],"counts":[20],"counts":[20]}',
        '{"size":[4,5],"counts":[20],}',
        '{"size":[4,5],"counts":[20,]}',
        '{"size":[4,5] "counts":[20]}',
        '{"si\\u007ae":[4,5],"counts":[20]}',
        '{"size":[4,5],"counts":"0220\\u003c"}',
        '{"size":[4,5],"counts":"04\\/"}',
        '{"size":[4,5],"counts":"04"}}',
    ]
    for form in forms:
        for second in ("[[0,0,3,0,3,2]]", form):
            raw = (head % (ann % (1, form) + "," + ann % (2, second))).encode()
            check_file(raw, tmp_path, monkeypatch)
    assert check_file((head % (ann % (1, forms[1]))).encode(), tmp_path, monkeypatch, must_take=True)
    assert check_file((head % (ann % (1, forms[18]))).encode(), tmp_path, monkeypatch, must_take=True)
    key = '{"id":1,"image_id":1,"category_id":1,"segm\\u0065ntation":[[0,0,3,0,3,2]]}'
    check_file((head % key).encode(), tmp_path, monkeypatch)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["annotations"][1].pop("segmentation"),
        lambda d: d["annotations"][1].update(bbox=None),
        lambda d: d["annotations"][1].update(area=None),
        lambda d: d["annotations"][1].update(bbox=[1, 2, 3]),
        lambda d: d["annotations"][1].update(bbox=[1, 1, -2, 2]),
        lambda d: d["annotations"][1].update(bbox=[True, 1, 2, 2]),
        lambda d: d["annotations"][1].update(iscrowd=True),
        lambda d: d["annotations"][1].update(iscrowd=2),
        lambda d: d["annotations"][1].update(keypoints=[1, 2, 2]),
        lambda d: d["annotations"][1].update(image_id=9),  # a warning
        lambda d: d["annotations"][1].update(category_id=9),
        lambda d: d["annotations"][1].update(id=1),  # duplicate id
        lambda d: d["annotations"][1].update(id="x"),
        lambda d: d["images"][0].pop("height"),  # a polygon needs its image's size
        lambda d: d["images"][0].update(height=0),
        lambda d: d["images"][0].update(height=4.5),
        lambda d: d["images"][0].update(height=4.0),
        lambda d: d["images"][0].update(width=-5),
        lambda d: d["images"][0].update(width=1e300),
        lambda d: d["images"].append({"id": 1, "height": 9, "width": 9}),  # the first record's size
        lambda d: d["images"].insert(0, {"id": 1, "height": 9, "width": 9}),
        lambda d: d["images"][0].update(height=50000, width=50000),  # pycocotools' own rasteriser
    ],
)
def test_record_level_rules(change, tmp_path, monkeypatch):
    rng = np.random.default_rng(9)
    doc = _doc([_ann(1, rng, segmentation=[[0, 0, 3, 0, 3, 2]]), _ann(2, rng), _ann(3, rng, image_id=4)])
    change(doc)
    check_file(_dump(doc), tmp_path, monkeypatch)
    del doc["annotations"][1]["bbox"]
    check_file(_dump(doc), tmp_path, monkeypatch)


# ---------------------------------------------------------------------------------------------
# hypothesis
# ---------------------------------------------------------------------------------------------
WS = st.sampled_from(["", "", " ", "\n", "\t ", " \r\n"])


@st.composite
def gt_documents(draw) -> bytes:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    anns = []
    for i in range(draw(st.integers(0, 5))):
        image_id = draw(st.sampled_from(sorted(SIZES)))
        ann = {"id": i + 1, "image_id": image_id, "category_id": draw(st.sampled_from([1, 1, 2, 2, 1, 2, 1, 3]))}
        if draw(st.integers(0, 3)):
            ann["bbox"] = [draw(st.sampled_from([0, 1, 2.5, 0.1, 3])) for _ in range(4)]
        if draw(st.integers(0, 3)):
            ann["area"] = draw(st.sampled_from([0, 1, 2.5, 7]))
        if draw(st.booleans()):
            ann["iscrowd"] = draw(st.sampled_from([0, 1, True, False]))
        ann["segmentation"] = _segmentation(rng, image_id)
        if draw(st.integers(0, 14)) == 0:
            ann["segmentation"] = draw(st.sampled_from(UNUSUAL_SEGMENTATIONS))
        items = draw(st.permutations(list(ann.items())))
        anns.append(
            "{" + ",".join(f"{draw(WS)}{json.dumps(k)}{draw(WS)}:{draw(WS)}{json.dumps(v)}" for k, v in items) + "}"
        )
    doc = _doc([])
    return (
        json.dumps({"images": doc["images"], "categories": doc["categories"]})[:-1]
        + ',"annotations":['
        + draw(WS)
        + ",".join(anns)
        + draw(WS)
        + "]}"
    ).encode()


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(gt_documents())
def test_hypothesis_gt_documents(tmp_path, monkeypatch, raw):
    check_file(raw, tmp_path, monkeypatch)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(gt_documents(), st.data())
def test_hypothesis_gt_mutations(tmp_path, monkeypatch, raw, data):
    """One byte deleted, inserted or replaced, or the text cut: the general path's answer."""
    check_file(mutate_bytes(raw, data, JSON_BYTES + list(b"o0<O/5")), tmp_path, monkeypatch)


# annotations without iscrowd warn (tests/unit/io); compared here: the scanner's columns
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
def test_scanner_output_form():
    """What ``parse_gt_columns(raw, segm=True)`` returns for the mask pieces."""
    doc = _doc(
        [
            {"id": 1, "image_id": 1, "category_id": 1, "segmentation": [[0, 0, 3, 0, 3, 2], [1, 1, 2, 1, 2, 2.5]]},
            {"id": 2, "image_id": 2, "category_id": 1, "bbox": [1, 1, 1, 1], "area": 2,
             "segmentation": {"counts": [5, 16], "size": [7, 3]}},
        ]
    )  # fmt: skip
    cols = parse_gt_columns(_dump(doc), segm=True)
    ann = cols["annotations"]
    assert ann["has_bbox"].tolist() == [False, True] and ann["has_area"].tolist() == [False, True]
    assert ann["bbox"][0].tolist() == [0, 0, 0, 0] and ann["area"].tolist() == [0, 2]
    seg = ann["segmentation"]
    assert seg["parts"].tolist() == [6, 6] and seg["runs"].tolist() == [5, 16]
    assert seg["coords"].tolist() == [0, 0, 3, 0, 3, 2, 1, 1, 2, 1, 2, 2.5]
    assert seg["seg"][:, 4].tolist() == [2, 2]
    assert parse_gt_columns(_dump(doc)) is None  # box evaluation needs every box
    doc["annotations"][0]["bbox"] = [0, 0, 1, 1]
    assert "segmentation" not in parse_gt_columns(_dump(doc))["annotations"]
    masks = coco_io.gt_from_scan(_dump(doc), "x", "segm").masks
    assert isinstance(masks, Masks) and masks.height.tolist() == [4, 7]

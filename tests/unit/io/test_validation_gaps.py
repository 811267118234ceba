"""Input that used to fail with a raw Python error, or pass silently: each now a clear error or warning."""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import numpy as np
import pytest

import deteval
from deteval import DetevalWarning, InputError
from deteval.analysis.report import per_class_csv, per_class_markdown, per_class_table
from deteval.tuning import TUNING


def _gt(images=None, categories=None) -> dict:
    return {
        "images": images or [{"id": 1, "height": 100, "width": 100}, {"id": 2, "height": 100, "width": 100}],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}] if categories is None else categories,
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "area": 400, "iscrowd": 0},
            {"id": 2, "image_id": 2, "category_id": 2, "bbox": [0, 0, 50, 40], "area": 2000, "iscrowd": 0},
            {"id": 3, "image_id": 2, "category_id": 1, "bbox": [50, 50, 30, 30], "area": 900, "iscrowd": 0},
        ],
    }


_DETS = [
    {"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9},
    {"image_id": 2, "category_id": 2, "bbox": [0, 0, 40, 40], "score": 0.8},
    {"image_id": 2, "category_id": 1, "bbox": [52, 50, 30, 30], "score": 0.7},
    {"image_id": 1, "category_id": 2, "bbox": [60, 60, 10, 10], "score": 0.6},
]


def _write(tmp_path, name, obj) -> str:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


def _pycocotools_stats(gt_path: str, dt_path: str) -> np.ndarray:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(gt_path)
        ev = COCOeval(coco, coco.loadRes(dt_path), "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev.stats


def _deteval_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught if issubclass(w.category, DetevalWarning)]


# ---- 1. image records repeating an id


@pytest.mark.parametrize("scanner", [False, True], ids=["general", "scanner"])
def test_repeated_image_id_warns_once_and_scores_as_pycocotools(tmp_path, monkeypatch, scanner):
    pytest.importorskip("pycocotools")
    images = [{"id": 1, "height": 100, "width": 100}, {"id": 2, "height": 100, "width": 100},
              {"id": 1, "height": 100, "width": 100}]  # fmt: skip
    gt_path, dt_path = _write(tmp_path, "gt.json", _gt(images=images)), _write(tmp_path, "dt.json", _DETS)
    scanned = []
    if scanner:
        from deteval.io import coco as coco_io

        monkeypatch.setattr(TUNING, "fast_path_bytes", 0)  # every file through the byte scanner
        real = coco_io.gt_from_scan
        monkeypatch.setattr(coco_io, "gt_from_scan", lambda *a, **k: scanned.append(real(*a, **k)) or scanned[-1])
    result, msgs = _deteval_warnings(lambda: deteval.evaluate(dt_path, gt_path))
    assert [g is not None for g in scanned] == ([True] if scanner else [])  # the scanner read it, not declined
    assert msgs == [
        f"{gt_path}: 1 image records repeat an id listed before (images[2] repeats images[0], id=1); "
        "each id is scored as one image, as in pycocotools"
    ]
    expected = _pycocotools_stats(gt_path, dt_path)
    assert np.array_equal(np.array(list(result.stats.values())), expected)


@pytest.mark.parametrize("scanner", [False, True], ids=["general", "scanner"])
def test_repeated_image_id_takes_the_last_records_size_for_masks_as_pycocotools(tmp_path, monkeypatch, scanner):
    """pycocotools keeps an image id's last record (an id -> record dict): polygons are rasterised at its size."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    images = [{"id": 1, "height": 12, "width": 12}, {"id": 1, "height": 60, "width": 60}]
    poly = [[5, 5, 45, 5, 45, 45, 5, 45]]  # cut by a 12-pixel image, whole in a 60-pixel one
    gt = {
        "images": images,
        "categories": [{"id": 1, "name": "cat"}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": poly, "area": 1600, "iscrowd": 0,
                         "bbox": [5, 5, 40, 40]}],
    }  # fmt: skip
    from pycocotools import mask as mask_utils

    pixels = np.zeros((60, 60), np.uint8, order="F")
    pixels[5:45, 5:25] = 1  # half the ground truth's square, at the last record's size
    rle = mask_utils.encode(pixels)
    dets = [{"image_id": 1, "category_id": 1, "segmentation": {"size": rle["size"], "counts": rle["counts"].decode()},
             "score": 0.9}]  # fmt: skip
    gt_path, dt_path = _write(tmp_path, "gt.json", gt), _write(tmp_path, "dt.json", dets)
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0 if scanner else 1 << 62)
    result, _ = _deteval_warnings(lambda: deteval.evaluate(dt_path, gt_path, iou_type="segm"))
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(gt_path)
        ev = COCOeval(coco, coco.loadRes(dt_path), "segm")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    assert np.array_equal(np.array(list(result.stats.values())), ev.stats)
    assert np.array_equal(result.precision, ev.eval["precision"])


def test_repeated_image_id_counts_every_repeat():
    images = [{"id": i % 2, "height": 10, "width": 10} for i in range(5)]  # ids 0 1 0 1 0
    _, msgs = _deteval_warnings(lambda: deteval.load_coco_gt({**_gt(images=images), "annotations": []}))
    assert len(msgs) == 1 and msgs[0].startswith("<ground truth>: 3 image records repeat")
    assert "(images[2] repeats images[0], id=0)" in msgs[0]


# ---- 2. area ranges


def test_inverted_area_range_is_an_error_naming_its_label(tmp_path):
    with pytest.raises(InputError) as err:
        deteval.evaluate(_DETS, _gt(), area_ranges={"all": (0, 1e10), "odd": (100, 10)}, compat=False)
    assert (err.value.source, err.value.record) == ("area_ranges", "odd")
    assert err.value.rule == "area range (lo, hi) must have lo <= hi, got (100, 10)"


def test_inverted_area_range_in_a_preset_names_the_preset_and_label():
    from deteval.protocols.coco_params import make_params

    with pytest.raises(InputError) as err:
        make_params(preset={"area_ranges": {"all": [0, 1e10], "odd": [100, 10]}}, compat=False)
    assert (err.value.source, err.value.record) == ("preset", "area_ranges['odd']")


def test_point_area_range_is_valid():
    result = deteval.evaluate(_DETS, _gt(), area_ranges={"all": (400, 400)}, max_dets=[1, 10, 100], compat=False)
    assert result.stats  # only the 400-area annotation is evaluated; no error


# ---- 3. no categories, compute() before update()


def test_no_categories_scores_every_stat_minus_one_as_pycocotools(tmp_path):
    pytest.importorskip("pycocotools")
    gt_path, dt_path = _write(tmp_path, "gt.json", _gt(categories=[])), _write(tmp_path, "dt.json", _DETS)
    result, msgs = _deteval_warnings(lambda: deteval.evaluate(dt_path, gt_path))
    assert np.array_equal(np.array(list(result.stats.values())), _pycocotools_stats(gt_path, dt_path))
    assert all(v == -1 for v in result.stats.values()) and result.per_class == []
    assert len(msgs) == 2  # the annotations and the results naming unlisted categories


def test_compute_before_update_is_a_valid_empty_result():
    result = deteval.Evaluator().compute()  # no categories given, nothing updated: was a numpy reshape error
    assert all(v == -1 for v in result.stats.values()) and result.per_class == []


# ---- 4. deeply nested JSON


@pytest.mark.parametrize("role", ["results", "gt"])
def test_deep_nesting_is_an_error_naming_the_file(tmp_path, role):
    deep = _write(tmp_path, "deep.json", "[" * 100_000)
    gt, dt = (_gt(), deep) if role == "results" else (deep, _DETS)
    with pytest.raises(InputError) as err:
        deteval.evaluate(dt, gt)
    assert (err.value.source, err.value.record) == (deep, None)
    assert err.value.rule == "JSON nested deeper than 1024 levels"


def test_deep_nesting_without_orjson(tmp_path, monkeypatch):
    from deteval.io import json_source

    monkeypatch.setattr(json_source, "_orjson", None)  # the stdlib parser's RecursionError
    with pytest.raises(InputError, match="JSON nested deeper than 1024 levels"):
        json_source.parse_json(b"[" * 100_000, "x.json")


# ---- 5. VOC text with normalised coordinates


def _voc_files(tmp_path, gt_box: str, dt_box: str):
    (tmp_path / "gt").mkdir()
    (tmp_path / "dt").mkdir()
    (tmp_path / "gt" / "im1.txt").write_text(f"cat {gt_box}\n")
    (tmp_path / "dt" / "im1.txt").write_text(f"cat 0.9 {dt_box}\n")
    return str(tmp_path / "dt"), str(tmp_path / "gt")


def test_voc_normalised_coordinates_warn_under_plus_one(tmp_path):
    dt, gt = _voc_files(tmp_path, "0.1 0.1 0.3 0.3", "0.5 0.5 0.7 0.7")
    _, msgs = _deteval_warnings(lambda: deteval.evaluate(dt, gt, protocol="voc07"))
    assert msgs == [
        f"{gt}, {dt}: every box coordinate lies in [0, 1] (normalised coordinates?) but VOC's +1 pixel rule is on, "
        "which adds 1 to every width and height; pass plus_one=False (--no-plus-one) for normalised or continuous "
        "coordinates"
    ]
    _, msgs = _deteval_warnings(lambda: deteval.evaluate(dt, gt, protocol="voc07", plus_one=False))
    assert msgs == []


def test_voc_pixel_coordinates_do_not_warn(tmp_path):
    dt, gt = _voc_files(tmp_path, "0.1 0.1 0.3 0.3", "5 5 70 70")  # one box in pixels: not normalised
    _, msgs = _deteval_warnings(lambda: deteval.evaluate(dt, gt, protocol="voc07"))
    assert msgs == []


# ---- 6. control characters in class names


@pytest.fixture(scope="module")
def odd_names():
    gt = _gt(categories=[{"id": 1, "name": "a\nb"}, {"id": 2, "name": "c|d\te\x01"}])
    return deteval.evaluate(_DETS, gt)


def test_text_table_escapes_control_characters(odd_names):
    lines = per_class_table(odd_names).splitlines()
    assert len(lines) == 4  # header, rule, two rows: no name broke a row
    assert lines[2].split()[1] == "a\\nb" and lines[3].split()[1] == "c|d\\te\\x01"


def test_markdown_escapes_control_characters_and_pipes(odd_names):
    lines = per_class_markdown(odd_names).splitlines()
    assert len(lines) == 4
    assert "| a\\nb |" in lines[2] and "| c\\|d\\te\\x01 |" in lines[3]


def test_csv_keeps_names_raw(odd_names):
    import csv

    rows = list(csv.reader(io.StringIO(per_class_csv(odd_names))))
    assert [r[1] for r in rows[1:]] == ["a\nb", "c|d\te\x01"]


def test_voc_summary_escapes_control_characters(tmp_path):
    dt, gt = _voc_files(tmp_path, "10 10 30 30", "10 10 30 30")
    (tmp_path / "gt" / "im1.txt").write_text("a\x01b 10 10 30 30\n")
    (tmp_path / "dt" / "im1.txt").write_text("a\x01b 0.9 10 10 30 30\n")
    result = deteval.evaluate(dt, gt, protocol="voc07")
    assert any(line.startswith("a\\x01b ") for line in result.summary_lines)

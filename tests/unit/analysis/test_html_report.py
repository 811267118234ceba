"""The HTML report (deteval.analysis.html_report): well-formed, self-contained, its tables equal to the result,
the worst images by per-image F1 from rows built here (the per-image and match tables' keys)."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from conftest import DATA_DIR
from support.html_check import check_page, tables

import deteval
from deteval.analysis.html_report import (
    MATCH_KEYS,
    PER_IMAGE_KEYS,
    html_report,
    image_f1,
    worst_images,
    write_report,
)
from deteval.analysis.svg import Chart, nice_ticks
from deteval.cli import sample_pair


@pytest.fixture(scope="module")
def sample():
    return deteval.evaluate(*sample_pair())


@pytest.fixture(scope="module")
def analyses(sample):
    from deteval.analysis.calibration import calibration
    from deteval.analysis.tide import tide_errors

    dt, gt = sample_pair()
    return tide_errors(str(dt), str(gt)), calibration(sample)


# ---------------------------------------------------------------- rows built by hand

# (image_id, num_gt, num_dt, tp, fp, fn) and each image's F1 = 2tp / (2tp + fp + fn), worked out here
PER_IMAGE = [
    (10, 2, 2, 2, 0, 0),  # 1.0
    (11, 3, 4, 1, 3, 2),  # 2 / 7
    (12, 0, 0, 0, 0, 0),  # nothing to find, nothing wrong: no F1
    (13, 2, 1, 0, 1, 2),  # 0, 3 errors
    ("x<14>", 1, 3, 0, 3, 1),  # 0, 4 errors: first among the zeros
    (15, 4, 4, 2, 2, 2),  # 4 / 8
    (16, 0, 2, 0, 2, 0),  # 0, 2 errors
    (17, 3, 2, 1, 1, 2),  # 2 / 5
]
EXPECTED_ORDER = ["x<14>", 13, 16, 11, 17, 15, 10]  # F1 ascending; more errors first among equal F1


def per_image_rows():
    return [dict(zip(PER_IMAGE_KEYS, r)) for r in PER_IMAGE]


def match(thr, det, image, cat, score, gt, iou, ignored=False):
    return dict(zip(MATCH_KEYS, (thr, det, image, cat, score, gt, iou, ignored)))


def match_rows():
    rows = []
    for thr in (0.5, 0.75):
        rows += [
            match(thr, 7, "x<14>", 1, 0.30, None, None),  # FP
            match(thr, 2, "x<14>", 1, 0.95, None, None),  # FP, highest score: listed first
            match(thr, 5, "x<14>", 2, 0.60, None, None, True),  # ignored (outside the area range, say)
            match(thr, None, "x<14>", 1, None, 41, None),  # a ground truth no detection took: FN
            match(thr, None, "x<14>", 1, None, 42, None, True),  # a crowd region nobody took
            match(thr, 0, 11, 1, 0.9, 7 if thr == 0.5 else None, 0.61 if thr == 0.5 else None),
            match(thr, 1, 10, 1, 0.8, 3, 0.9),  # the best image: not among the worst two
        ]
    return rows


def test_image_f1_and_worst_order():
    rows = per_image_rows()
    f1 = [image_f1(r) for r in rows]
    assert f1 == [1.0, 2 / 7, None, 0.0, 0.0, 0.5, 0.0, 0.4]
    worst = worst_images(rows, n=100)
    assert [r["image_id"] for r in worst] == EXPECTED_ORDER
    assert [r["F1"] for r in worst] == [0.0, 0.0, 0.0, 2 / 7, 0.4, 0.5, 1.0]
    assert [r["image_id"] for r in worst_images(rows, n=2)] == EXPECTED_ORDER[:2]


def test_worst_section_lists_the_match_rows_of_the_worst_images(sample):
    page = html_report(sample, per_image=per_image_rows(), matches=match_rows(), worst=2)
    check_page(page)
    t = tables(page)
    assert [cells[0][1] for cells in t["worst-images"]["rows"]] == ["x<14>", "13"]
    assert t["worst-images"]["heads"] == [*PER_IMAGE_KEYS, "F1"]
    # image x<14> at IoU .50 only: detections by score, then the ground truth no detection took
    rows = t["matches-0"]["rows"]
    heads = t["matches-0"]["heads"]
    assert heads == ["outcome", "category", "det_index", "score", "gt_id", "iou", "ignored"]
    names = {r["category_id"]: r["name"] for r in sample.per_class}
    got = [(r[0][1], r[1][1], r[2][0], r[4][0]) for r in rows]
    assert got == [
        ("FP", names[1], "2", ""),
        ("ignored", names[2], "5", ""),
        ("FP", names[1], "7", ""),
        ("FN", names[1], "", "41"),
        ("missed, ignored", names[1], "", "42"),
    ]
    # the score's full value is what the page sorts on
    assert [r[3][0] for r in rows] == ["0.95", "0.6", "0.3", "", ""]
    assert "matches-1" not in t  # image 13 has no rows: said in words
    assert "No match rows for this image" in page
    assert "x&lt;14&gt;" in page and "x<14>" not in page  # the id escaped
    assert "at IoU 0.50" in page


def test_worst_section_at_the_lowest_threshold_without_50():
    rows = [dict(r, iou_thr=0.6) for r in match_rows() if r["iou_thr"] == 0.75]
    from deteval.analysis.html_report import _threshold_shown

    assert _threshold_shown(rows) == 0.6
    assert _threshold_shown(match_rows()) == 0.5


def test_worst_section_without_rows_says_so(sample):
    page = html_report(sample)
    check_page(page)
    assert "No per-image results were given" in page
    assert "worst-images" not in tables(page)
    page = html_report(sample, per_image=per_image_rows())
    check_page(page)
    assert "No match rows were given" in page
    assert len(tables(page)["worst-images"]["rows"]) == len(EXPECTED_ORDER)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"per_image": [{"image_id": 1, "num_gt": 0}]}, "per-image row 0 has no 'num_dt', 'tp', 'fp', 'fn'"),
        ({"per_image": [(1, 2, 3, 4, 5, 6)]}, "per-image row 0 is a tuple"),
        ({"per_image": per_image_rows(), "matches": [{"iou_thr": 0.5}]}, "match row 0 has no 'det_index'"),
    ],
)
def test_rows_without_the_keys_are_refused(sample, bad, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        html_report(sample, **bad)


# ---------------------------------------------------------------- the page


def test_sample_page_is_self_contained_and_well_formed(sample, analyses, tmp_path):
    tide, cal = analyses
    path = write_report(sample, tmp_path / "r", tide=tide, calibration=cal, per_image=per_image_rows(),
                        matches=match_rows())  # fmt: skip
    assert path == tmp_path / "r" / "report.html"
    page = path.read_text(encoding="utf-8")
    checked = check_page(page)
    assert not re.search(r"https?:|//[a-z]", page, re.I)  # no address at all (the SVG has no xmlns)
    assert checked.counts["script"] == 1 and checked.counts.get("img", 0) == 0
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # PR curves, F1 vs score, TIDE, reliability: four charts, each drawn
    assert checked.counts["svg"] == 4
    for section in ("summary", "classes", "curves", "tide", "calibration", "worst"):
        assert f'<section id="{section}">' in page and f'href="#{section}"' in page


def test_sections_only_when_asked(sample):
    page = html_report(sample)
    assert '<section id="tide">' not in page and '<section id="calibration">' not in page
    assert check_page(page).counts["svg"] == 2


def test_per_class_table_holds_the_result(sample):
    page = html_report(sample)
    t = tables(page)["per-class"]
    from deteval.analysis.report import with_operating_points

    rows = with_operating_points(sample).per_class
    assert t["heads"] == list(rows[0])
    assert len(t["rows"]) == len(rows)
    for cells, row, cls in zip(t["rows"], rows, t["row_class"]):
        for (value, text), col in zip(cells, t["heads"]):
            v = row[col]
            if v is None or (isinstance(v, float) and (v == -1 or math.isnan(v))):
                assert value == "" and text == "\u2013"
            elif isinstance(v, float):
                assert float(value) == v  # the full value, for sorting
                assert text == f"{v:.3f}"
            else:
                assert value == str(v)
        assert (cls == "empty") == (not row["num_gt"] and not row["num_det"])
    assert "show the 4 categories with neither ground truth nor detections" in page


def test_stats_table(sample):
    t = tables(html_report(sample))["stats"]
    assert [(c[0][1], float(c[1][0])) for c in t["rows"]] == list(sample.stats.items())


def test_hostile_names_stay_text(sample):
    rows = [dict(r) for r in sample.per_class]
    rows[0]["name"] = "</script><script>alert(1)</script>"
    rows[1]["name"] = '"><img src=x onerror=alert(1)>'
    odd = dataclasses.replace(sample, per_class=rows)
    page = html_report(odd, sources=[("predictions", "<b>&amp;.json")])
    checked = check_page(page)
    assert checked.counts["script"] == 1 and "img" not in checked.counts
    cells = [r[1][1] for r in tables(page)["per-class"]["rows"][:2]]
    assert cells == [rows[0]["name"], rows[1]["name"]]  # shown as written
    assert "&lt;b&gt;&amp;amp;.json" in page


def test_voc_result_draws_curves_from_outcomes():
    from conftest import COCO_PAIRS

    pair = COCO_PAIRS["voc100"]
    res = deteval.evaluate(pair.load_preds(), pair.load_gt(), protocol="voc07")
    page = html_report(res)
    checked = check_page(page)
    assert checked.counts["svg"] == 2  # PR (read from the outcomes) and F1 vs score
    assert "read at 101 recall points from the ranked detections" in page
    # the legend's AP is the protocol's own: VOC07's 11-point AP of the class with the most ground truth
    top = max(res.per_class, key=lambda r: r["npos"])
    assert f"{top['name']} AP={top['AP']:.3f}" in page


def test_result_without_curves():
    d = DATA_DIR / "pedestrian"
    res = deteval.evaluate(d / "citypersons_results.json", d / "citypersons_gt.json", protocol="citypersons")
    page = html_report(res)
    check_page(page)
    assert "neither COCO's arrays nor per-detection outcomes: no curves" in page
    assert "4 rows" in page and "categories;" not in page


def test_iou_and_area_not_evaluated(sample):
    with pytest.raises(ValueError, match="area"):
        html_report(sample, area="tiny")
    with pytest.raises(ValueError):
        html_report(sample, iou_thr=0.33)


# ---------------------------------------------------------------- the SVG charts


def test_nice_ticks():
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 24.5) == [0, 5, 10, 15, 20]
    assert nice_ticks(-0.3, 1) == [0, 0.5, 1.0]
    assert nice_ticks(-0.25, 0.75) == [-0.2, 0, 0.2, 0.4, 0.6]
    assert nice_ticks(1, 1) == [1]


def test_chart_breaks_lines_at_nan_and_clips():
    c = Chart("t", "x", "y", width=200, height=200)
    c.line([0, 0.5, np.nan, 0.7, 2.0], [0, 0.5, 0.5, 0.5, 5.0], "#000")
    svg = c.svg()
    lines = re.findall(r'<polyline points="([^"]*)"', svg)
    assert len(lines) == 2
    x0, y0, x1, y1 = c.box
    for pts in lines:
        for p in pts.split():
            x, y = map(float, p.split(","))
            assert x0 <= x <= x1 and y0 <= y <= y1  # 2.0 and 5.0 drawn at the axes' edge
    check_page(f"<!DOCTYPE html><html><head><title>t</title></head><body>{svg}</body></html>")

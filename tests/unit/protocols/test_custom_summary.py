"""Custom area ranges and IoU thresholds in the stats, the summary and the per-class rows.

pycocotools' 12 stats stay as they are; what they do not read comes as ``extra_stats``
(``AP_<label>``, ``AR_<label>``, ``AP@<t>``), printed after pycocotools' lines.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from support.oracle import load_json, run_pycocotools

import deteval
from deteval.cli import main
from deteval.protocols.coco_params import make_params
from deteval.protocols.coco_summary import _extra_specs

SAMPLE = Path(deteval.__file__).parent / "sample_data"
DT, GT = SAMPLE / "instances_val2014_fakebbox100_results.json", SAMPLE / "instances_val2014_100.json"
STAT_NAMES = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
CUSTOM = {
    "iou_thrs": [0.5, 0.6, 0.75],
    "area_ranges": {"all": (0, 1e10), "tiny": (0, 256), "small": (0, 1024)},
}


def _mean_valid(values: np.ndarray) -> float:
    """pycocotools' ``_summarize``: the mean of the entries > -1, -1 if there are none."""
    valid = values[values > -1]
    return -1.0 if len(valid) == 0 else float(np.mean(valid))


def _expected_extras(res, k=slice(None)) -> dict[str, float]:
    """The extras of ``CUSTOM`` read straight from the accumulated arrays (``k``: one category)."""
    labels, m = list(res.area_labels), len(res.max_dets) - 1
    tiny, all_ = labels.index("tiny"), labels.index("all")
    t06 = list(res.iou_thrs).index(0.6)
    return {
        "AP_tiny": _mean_valid(res.precision[:, :, k, tiny, m]),
        "AR_tiny": _mean_valid(res.recall[:, k, tiny, m]),
        "AP@0.6": _mean_valid(res.precision[t06, :, k, all_, m]),
    }


@pytest.fixture(scope="module")
def sample():
    return load_json(str(DT)), load_json(str(GT))


def test_defaults_unchanged(sample):
    res = deteval.evaluate(*sample)
    assert list(res.stats) == STAT_NAMES
    assert list(res.stats.values()) == [float(s) for s in run_pycocotools(*sample).stats]
    assert res.extra_stats == {} and "extra_stats" not in res.to_dict()
    assert len(res.summary_lines) == 12
    assert list(res.per_class[0]) == ["category_id", "name", "AP", "AP50", "AP75", "APs", "APm", "APl", "AR",
                                      "num_gt", "num_det"]  # fmt: skip


@pytest.mark.parametrize("compat", [True, False])
def test_custom_range_and_threshold_are_extra_stats(sample, compat):
    res = deteval.evaluate(*sample, compat=compat, **CUSTOM)
    assert list(res.stats) == STAT_NAMES
    if compat:  # pycocotools' stats, untouched
        assert list(res.stats.values()) == [float(s) for s in run_pycocotools(*sample, **CUSTOM).stats]
    assert res.extra_stats == _expected_extras(res)
    assert list(res.extra_stats) == ["AP_tiny", "AR_tiny", "AP@0.6"]
    assert res.to_dict()["extra_stats"] == res.extra_stats


def test_summary_lines_follow_pycocotools_lines(sample):
    res = deteval.evaluate(*sample, **CUSTOM)
    lines = res.summary().splitlines()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        run_pycocotools(*sample, **CUSTOM).summarize()
    assert lines[:12] == printed.getvalue().splitlines() and len(lines) == 15
    e = res.extra_stats
    assert lines[12:] == [
        f" Average Precision  (AP) @[ IoU=0.50:0.75 | area=  tiny | maxDets=100 ] = {e['AP_tiny']:0.3f}",
        f" Average Recall     (AR) @[ IoU=0.50:0.75 | area=  tiny | maxDets=100 ] = {e['AR_tiny']:0.3f}",
        f" Average Precision  (AP) @[ IoU=0.60      | area=   all | maxDets=100 ] = {e['AP@0.6']:0.3f}",
    ]


def test_per_class_rows_carry_the_extra_columns(sample):
    res = deteval.evaluate(*sample, **CUSTOM)
    assert list(res.per_class[0])[-5:] == ["AP_tiny", "AR_tiny", "AP@0.6", "num_gt", "num_det"]
    for k, row in enumerate(res.per_class):
        assert {name: row[name] for name in res.extra_stats} == _expected_extras(res, k)


def test_default_grid_written_as_decimals_adds_nothing(sample):
    res = deteval.evaluate(*sample, iou_thrs=[round(0.5 + 0.05 * i, 2) for i in range(10)])
    assert res.extra_stats == {} and len(res.summary_lines) == 12


def test_thresholds_named_shortest():
    params = make_params(iou_thrs=[0.3, 0.5, 1 / 3, 0.75, 1.0])
    assert [s[0] for s in _extra_specs(params)] == ["AP@0.3", "AP@0.3333333333", "AP@1"]


def test_keypoints_extras_after_its_ten_stats():
    assert _extra_specs(make_params("keypoints")) == []
    params = make_params("keypoints", area_ranges={"all": (0, 1e10), "small": (0, 1024), "large": (9216, 1e10)})
    assert _extra_specs(params) == [("AP_small", True, None, "small", 20), ("AR_small", False, None, "small", 20)]


def test_cli_json_and_summary(tmp_path, capsys):
    out_json = tmp_path / "out.json"
    argv = ["--area-range", "tiny:0:256", "--area-range", "all:0:1e10", "--iou-thrs", "0.5,0.6",
            "--per-class", "--json", str(out_json), str(DT), str(GT)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    report = json.loads(out_json.read_text(encoding="utf-8"))
    res = deteval.evaluate(str(DT), str(GT), iou_thrs=[0.5, 0.6], area_ranges={"tiny": (0, 256), "all": (0, 1e10)})
    assert list(report["stats"]) == STAT_NAMES and report["stats"] == res.stats
    assert report["extra_stats"] == res.extra_stats and list(res.extra_stats) == ["AP_tiny", "AR_tiny", "AP@0.6"]
    assert [{n: row[n] for n in res.extra_stats} for row in report["per_class"]] == [
        {n: row[n] for n in res.extra_stats} for row in res.per_class
    ]
    assert "area=  tiny" in out and "IoU=0.60 " in out and "AP@0.6" in out

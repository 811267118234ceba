"""COCO bbox parity on real data: deteval must be bit-identical to pycocotools 2.0.11.

For every COCO-format pair under tests/data, `deteval.evaluate` (from paths and from loaded
objects, with use_cats True and False, and with non-default parameters) and the CLI's
`--arrays` output are compared exactly with pycocotools' COCOeval arrays and stats.
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
from conftest import COCO_PAIRS, TESTS_DIR
from support.oracle import assert_same, compare_arrays, run_pycocotools

import deteval

_ORACLE_CACHE: dict = {}
REPO_ROOT = TESTS_DIR.parent


def _oracle(pair, **kwargs):
    """pycocotools on a pair, cached (COCOeval objects are only read by the tests)."""
    key = (pair.name, json.dumps(kwargs, sort_keys=True, default=list))
    if key not in _ORACLE_CACHE:
        _ORACLE_CACHE[key] = run_pycocotools(pair.load_preds(), pair.load_gt(), **kwargs)
    return _ORACLE_CACHE[key]


def _recorded_bbox_stats(path):
    """The full-precision bbox stats that pycocotools 2.0.11 printed into a summary file."""
    text = path.read_text(encoding="utf-8")
    sections = re.split(r"^type=", text, flags=re.MULTILINE)
    for sec in sections[1:]:
        if sec.startswith("bbox"):
            m = re.search(r"stats\(full precision\)=\[([^\]]*)\]", sec)
            return [float(x) for x in m.group(1).split(",")]
    # single-type files without a "type=" header
    m = re.search(r"stats\(full precision\)=\[([^\]]*)\]", text)
    return [float(x) for x in m.group(1).split(",")]


# --------------------------------------------------------------------------------------
# the oracle itself


@pytest.mark.parametrize("name", [n for n, p in COCO_PAIRS.items() if p.summary_path is not None])
def test_oracle_reproduces_recorded_summary(name):
    """Our pycocotools wrapper gives the stats pycocotools 2.0.11 recorded for these files."""
    pair = COCO_PAIRS[name]
    ev = _oracle(pair)
    assert [float(s) for s in ev.stats] == _recorded_bbox_stats(pair.summary_path)


# --------------------------------------------------------------------------------------
# deteval.evaluate vs pycocotools


@pytest.mark.parametrize("use_cats", [True, False], ids=["cats", "nocats"])
def test_evaluate_loaded_matches_pycocotools(coco_pair, use_cats):
    res = deteval.evaluate(
        coco_pair.load_preds(),
        coco_pair.load_gt(),
        protocol="coco",
        iou_type="bbox",
        compat=True,
        use_cats=use_cats,
    )
    assert_same(res, _oracle(coco_pair, use_cats=use_cats))


def test_per_class_values_are_pycocotools_means(coco_pair):
    """Per-class AP/AR: pycocotools' own ``np.mean`` over the category's valid entries, bit for bit."""
    res = deteval.evaluate(coco_pair.load_preds(), coco_pair.load_gt())
    e = _oracle(coco_pair, use_cats=True).eval
    t50, t75 = 0, 5  # .50 and .75 in .50:.05:.95

    def mean(s):
        return float(np.mean(s[s > -1])) if (s > -1).any() else -1.0

    for k, row in enumerate(res.per_class):
        p, r = e["precision"][:, :, k], e["recall"][:, k]
        assert row["AP"] == mean(p[:, :, 0, 2])
        assert row["AP50"] == mean(p[t50, :, 0, 2]) and row["AP75"] == mean(p[t75, :, 0, 2])
        assert [row["APs"], row["APm"], row["APl"]] == [mean(p[:, :, a, 2]) for a in (1, 2, 3)]
        assert row["AR"] == mean(r[:, 0, 2])


@pytest.mark.parametrize("use_cats", [True, False], ids=["cats", "nocats"])
def test_evaluate_paths_matches_pycocotools(coco_pair, use_cats, tmp_path):
    preds_path = coco_pair.preds_list_path(tmp_path)
    res = deteval.evaluate(
        preds_path,
        coco_pair.gt_path,
        protocol="coco",
        iou_type="bbox",
        use_cats=use_cats,
    )
    assert_same(res, _oracle(coco_pair, use_cats=use_cats))
    # str paths too
    res = deteval.evaluate(
        str(preds_path),
        str(coco_pair.gt_path),
        protocol="coco",
        iou_type="bbox",
        use_cats=use_cats,
    )
    assert_same(res, _oracle(coco_pair, use_cats=use_cats))


PARAM_SETS = {
    "maxdets_1_10_1000": {"max_dets": [1, 10, 1000]},
    "maxdets_2_5_20": {"max_dets": [2, 5, 20]},
    "iou_rounded_linspace": {"iou_thrs": [round(0.5 + 0.05 * i, 2) for i in range(10)]},
    "iou_3": {"iou_thrs": [0.3, 0.5, 0.7]},
    "areas_custom": {
        "area_ranges": {
            "all": (0, 1e10),
            "small": (0, 400),
            "medium": (400, 2500),
            "large": (2500, 1e10),
        }
    },
    "all_custom_nocats": {
        "iou_thrs": [0.5, 0.75, 0.9],
        "area_ranges": {"large": (96**2, 1e10), "all": (0, 1e10), "small": (0, 32**2)},
        "max_dets": [1, 10, 100, 300],
        "use_cats": False,
    },
}


@pytest.mark.parametrize("params", list(PARAM_SETS), ids=list(PARAM_SETS))
@pytest.mark.parametrize("name", ["coco_fake100", "voc100_difficult_as_crowd", "tm4", "toy7"])
def test_evaluate_custom_params_matches_pycocotools(name, params):
    pair = COCO_PAIRS[name]
    kwargs = PARAM_SETS[params]
    res = deteval.evaluate(
        pair.load_preds(),
        pair.load_gt(),
        protocol="coco",
        iou_type="bbox",
        compat=True,
        **kwargs,
    )
    assert_same(res, _oracle(pair, **kwargs))


def test_inputs_not_modified(coco_pair):
    gt = coco_pair.load_gt()
    preds = coco_pair.load_preds()
    gt_before = copy.deepcopy(gt)
    preds_before = copy.deepcopy(preds)
    for use_cats in (True, False):
        deteval.evaluate(preds, gt, protocol="coco", iou_type="bbox", compat=True, use_cats=use_cats)
        assert gt == gt_before, "deteval.evaluate modified the GT dict"
        assert preds == preds_before, "deteval.evaluate modified the results list"
    # also with the key order and the types of every value unchanged
    assert json.dumps(gt) == json.dumps(gt_before)
    assert json.dumps(preds) == json.dumps(preds_before)


# --------------------------------------------------------------------------------------
# CLI


def _check_npz(npz_path, ev):
    p = ev.params
    with np.load(npz_path, allow_pickle=False) as z:
        problems = []
        for key in ("precision", "recall", "scores"):
            problems += compare_arrays(key, z[key], ev.eval[key])
        problems += compare_arrays("iou_thrs", z["iou_thrs"], np.asarray(p.iouThrs))
        problems += compare_arrays("rec_thrs", z["rec_thrs"], np.asarray(p.recThrs))
        problems += compare_arrays("max_dets", z["max_dets"], np.asarray(p.maxDets))
        if list(z["cat_ids"]) != [int(c) for c in p.catIds]:
            problems.append(f"cat_ids {list(z['cat_ids'])} != {list(p.catIds)}")
        if [str(a) for a in z["area_labels"]] != list(p.areaRngLbl):
            problems.append(f"area_labels {list(z['area_labels'])} != {list(p.areaRngLbl)}")
    assert not problems, "CLI --arrays != pycocotools:\n  " + "\n  ".join(problems)


def test_cli_arrays_match_pycocotools(coco_pair, tmp_path, capsys):
    npz = tmp_path / "out.npz"
    out_json = tmp_path / "out.json"
    preds_path = coco_pair.preds_list_path(tmp_path)
    argv = [
        "--protocol", "coco", "--iou-type", "bbox",
        "--arrays", str(npz), "--json", str(out_json),
        str(preds_path), str(coco_pair.gt_path),
    ]  # fmt: skip
    from deteval.cli import main

    rc = main(argv)
    capsys.readouterr()
    assert rc == 0
    ev = _oracle(coco_pair)
    _check_npz(npz, ev)
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert isinstance(report, dict)
    # the JSON report carries the 12 stats with their exact values (JSON round-trips floats)
    stats = report.get("stats")
    assert stats is not None, f"no 'stats' in the JSON report (keys: {list(report)})"
    values = list(stats.values()) if isinstance(stats, dict) else list(stats)
    assert values == [float(s) for s in ev.stats]


def test_cli_module_subprocess(tmp_path):
    """`python -m deteval` end to end on the smallest pair."""
    pair = COCO_PAIRS["tm4"]
    npz = tmp_path / "tm4.npz"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO_ROOT), env.get("PYTHONPATH", "")] if p)
    cmd = [sys.executable, "-m", "deteval", "--protocol", "coco", "--iou-type", "bbox"]
    cmd += ["--arrays", str(npz), str(pair.dt_path), str(pair.gt_path)]
    proc = subprocess.run(
        cmd,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    _check_npz(npz, _oracle(pair))

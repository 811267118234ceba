"""pycocotools as the reference oracle for the COCO parity tests.

`run_pycocotools` runs pycocotools' COCOeval (evaluate, accumulate, summarize) on in-memory
copies of the inputs, silently, and returns the COCOeval object. `assert_same` compares a
deteval result with it exactly: the precision / recall / scores arrays bit for bit (shapes
included) and the 12 summary stats with `==`.

Only give it inputs pycocotools accepts: GT annotations with `iscrowd` and `area`, a non-empty
results list, and at least 3 max_dets.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

__all__ = ["assert_same", "load_json", "run_pycocotools"]


def load_json(obj):
    """A path (str or Path) is read as JSON; anything else is deep-copied."""
    if isinstance(obj, (str, Path)):
        with open(obj, encoding="utf-8") as f:
            return json.load(f)
    return copy.deepcopy(obj)


def run_pycocotools(
    preds,
    gt,
    iou_type="bbox",
    iou_thrs=None,
    area_ranges=None,
    max_dets=None,
    use_cats=True,
):
    """Run pycocotools' COCOeval on `preds` (results list or path) against `gt` (dict or path).

    The inputs are deep-copied first (`COCO.loadRes` writes `area`, `id`, `iscrowd` and
    `segmentation` into the result dicts). Parameters left at None keep pycocotools' defaults;
    `area_ranges` is an ordered dict label -> (lo, hi). Nothing is printed. Returns the
    COCOeval after evaluate(), accumulate() and summarize().
    """
    gt_data = load_json(gt)
    dt_data = load_json(preds)
    if isinstance(dt_data, dict):
        raise TypeError("results must be a list of dicts (pycocotools' loadRes rejects a dict)")
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt_data
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(dt_data)
        coco_eval = COCOeval(coco_gt, coco_dt, iouType=iou_type)
        p = coco_eval.params
        if iou_thrs is not None:
            p.iouThrs = np.array([float(t) for t in iou_thrs], dtype=np.float64)
        if area_ranges is not None:
            p.areaRng = [[lo, hi] for lo, hi in area_ranges.values()]
            p.areaRngLbl = list(area_ranges.keys())
        if max_dets is not None:
            p.maxDets = [int(m) for m in max_dets]
        p.useCats = 1 if use_cats else 0
        coco_eval.evaluate()
        coco_eval.accumulate()
        coco_eval.summarize()
    return coco_eval


def _first_diff(a: np.ndarray, b: np.ndarray) -> str:
    a = np.asarray(a)
    b = np.asarray(b)
    # NaN never equals NaN: count it as a difference too (neither side should have NaN).
    neq = ~(a == b)
    idx = np.argwhere(neq)
    if idx.size == 0:
        return "no differing element"
    first = tuple(int(i) for i in idx[0])
    with np.errstate(invalid="ignore"):
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    max_diff = float(np.nanmax(diff)) if np.any(~np.isnan(diff)) else float("nan")
    return (
        f"{len(idx)} of {a.size} elements differ; max |diff| = {max_diff!r}; "
        f"first differing index {first}: deteval={a[first]!r} pycocotools={b[first]!r}; "
        f"differing indices (first 10): {[tuple(int(i) for i in r) for r in idx[:10]]}"
    )


def _index_legend(coco_eval) -> str:
    p = coco_eval.params
    cats = list(p.catIds) if p.useCats else [-1]
    return (
        "axes: precision/scores [T,R,K,A,M], recall [T,K,A,M]; "
        f"T=iouThrs {list(map(float, p.iouThrs))}, K=catIds {cats}, "
        f"A={list(p.areaRngLbl)}, M=maxDets {list(p.maxDets)}"
    )


def compare_arrays(name: str, got, want) -> list[str]:
    """Exact comparison of one array; returns a list of problems (empty when identical)."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return [f"{name}: shape {got.shape} != pycocotools {want.shape}"]
    # NaN where pycocotools has NaN (the scores of NaN-scored results) is the same value
    if not np.array_equal(got, want, equal_nan=got.dtype.kind == "f" and want.dtype.kind == "f"):
        return [f"{name}: {_first_diff(got, want)}"]
    return []


def assert_same(res, coco_eval) -> None:
    """Assert deteval's result `res` is bit-identical to pycocotools' `coco_eval`."""
    problems: list[str] = []
    for name in ("precision", "recall", "scores"):
        problems += compare_arrays(name, getattr(res, name), coco_eval.eval[name])
    got_stats = list(res.stats.values())
    want_stats = [float(s) for s in coco_eval.stats]
    if got_stats != want_stats:
        if len(got_stats) != len(want_stats):
            problems.append(f"stats: {len(got_stats)} values != pycocotools {len(want_stats)}")
        else:
            keys = list(res.stats.keys())
            bad = [
                f"{i} {keys[i]}: deteval={g!r} pycocotools={w!r} (diff {g - w!r})"
                for i, (g, w) in enumerate(zip(got_stats, want_stats))
                if g != w
            ]
            problems.append("stats differ: " + "; ".join(bad))
    if problems:
        raise AssertionError("deteval != pycocotools\n  " + "\n  ".join(problems) + "\n  " + _index_legend(coco_eval))

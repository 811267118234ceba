"""The rows of ``result.matches`` and ``result.per_image`` as pycocotools' own ``evalImgs`` gives them.

pycocotools numbers results 1..N in the file's order (``loadRes``), so a ``dtIds`` entry minus one is the
detection's row in the results file. The overlap of a match is read from ``COCOeval.ious`` (detections in
score order, ground truth in ``_gts`` order) at the ground truth whose id ``dtMatches`` holds; ids that
repeat must all hold the same overlap there (pycocotools loads every record of an id as its last one).
"""

from __future__ import annotations

import math

import numpy as np

KEYS = ("iou_thr", "det_index", "image_id", "category_id", "score", "gt_id", "iou", "ignored")
IMAGE_KEYS = ("image_id", "num_gt", "num_dt", "tp", "fp", "fn")


def _all_index(p) -> int:
    labels = list(p.areaRngLbl)
    return labels.index("all") if "all" in labels else 0


def _area_all_records(ev) -> list:
    """``evalImgs`` at area ``all`` (else the first range), None dropped, in pycocotools' order."""
    p = ev.params
    a, n_area, n_img = _all_index(p), len(p.areaRng), len(p.imgIds)
    cats = p.catIds if p.useCats else [-1]
    out = []
    for k in range(len(cats)):
        for i in range(n_img):
            rec = ev.evalImgs[(k * n_area + a) * n_img + i]
            if rec is not None:
                out.append(rec)
    return out


def _none_if_nan(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def _py(v):
    """A numpy scalar (pycocotools' ``np.unique``'d ``imgIds``/``catIds``) as the Python value it holds."""
    return v.item() if isinstance(v, np.generic) else v


def _overlap(ev, rec, d: int, gid) -> float | None:
    """The overlap pycocotools compared for detection ``d`` of ``rec`` and ground-truth id ``gid``."""
    block = ev.ious[rec["image_id"], rec["category_id"]]
    # pooled categories: computeIoU's concatenation over every category (accumulate() has set catIds to [-1])
    gts = (
        ev._gts[rec["image_id"], rec["category_id"]]
        if ev.params.useCats
        else [g for c in sorted(ev.cocoGt.getCatIds()) for g in ev._gts[rec["image_id"], c]]
    )
    values = {float(block[d, j]) for j, g in enumerate(gts) if g["id"] == gid}
    values = {None if math.isnan(v) else v for v in values}
    assert len(values) == 1, f"ground-truth id {gid} holds overlaps {values}"
    return values.pop()


def expected_matches(ev) -> list[dict]:
    """Every row of ``result.matches`` from a pycocotools ``COCOeval`` after ``evaluate()``.

    With categories pooled (``useCats=0``, where ``evalImgs`` says -1), a row's category is its
    detection's (the results' record) or its ground truth's (``cocoGt.anns``, the record pycocotools loaded).
    """
    p = ev.params
    records = _area_all_records(ev)
    dts, gts = ev.cocoDt.anns, ev.cocoGt.anns
    rows = []
    for t, thr in enumerate(np.asarray(p.iouThrs).tolist()):
        for rec in records:
            for d, did in enumerate(rec["dtIds"]):
                gid = rec["dtMatches"][t, d]
                gid = None if gid == 0 else _as_id(gid, rec["gtIds"])
                rows.append({
                    "iou_thr": thr,
                    "det_index": int(did) - 1,
                    "image_id": _py(rec["image_id"]),
                    "category_id": _py(rec["category_id"]) if p.useCats else dts[did]["category_id"],
                    "score": _none_if_nan(float(rec["dtScores"][d])),
                    "gt_id": gid,
                    "iou": None if gid is None else _overlap(ev, rec, d, gid),
                    "ignored": bool(rec["dtIgnore"][t, d]),
                })  # fmt: skip
            for m, gid in enumerate(rec["gtIds"]):
                if rec["gtMatches"][t, m] == 0:
                    rows.append({
                        "iou_thr": thr,
                        "det_index": None,
                        "image_id": _py(rec["image_id"]),
                        "category_id": _py(rec["category_id"]) if p.useCats else gts[gid]["category_id"],
                        "score": None,
                        "gt_id": gid,
                        "iou": None,
                        "ignored": bool(rec["gtIgnore"][m]),
                    })  # fmt: skip
    return rows


def _as_id(value, gt_ids: list):
    """A ``dtMatches`` entry (a float) as the ground truth's id, in the id's own type."""
    for g in gt_ids:
        if g == value:
            return g
    raise AssertionError(f"dtMatches holds {value}, not an id of {gt_ids}")


def expected_per_image(ev) -> list[dict]:
    """Every row of ``result.per_image`` from a pycocotools ``COCOeval`` after ``evaluate()``: at IoU .50
    (the first threshold when .50 is not among them), area all, the largest max dets."""
    p = ev.params
    thrs = np.asarray(p.iouThrs, np.float64)
    hit = [i for i, v in enumerate(thrs.tolist()) if abs(v - 0.5) <= 1e-9]
    t = hit[0] if hit else 0
    counts = {i: {"num_gt": 0, "num_dt": 0, "tp": 0, "fp": 0} for i in p.imgIds}
    for rec in _area_all_records(ev):
        c = counts[rec["image_id"]]
        c["num_gt"] += int((np.asarray(rec["gtIgnore"]) == 0).sum())
        c["num_dt"] += len(rec["dtIds"])
        dtm, dti = rec["dtMatches"][t], rec["dtIgnore"][t]
        c["tp"] += int(((dtm != 0) & ~dti).sum())
        c["fp"] += int(((dtm == 0) & ~dti).sum())
    return [{"image_id": _py(i), **c, "fn": c["num_gt"] - c["tp"]} for i, c in ((i, counts[i]) for i in p.imgIds)]


def assert_rows_equal(got: list[dict], expected: list[dict], keys: tuple[str, ...]) -> None:
    """Row by row, key by key, ``==`` (types of ids included: 1 and "1" differ); NaN reads as None."""
    assert len(got) == len(expected), f"{len(got)} rows, pycocotools {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        assert tuple(g) == keys, f"row {i} keys {tuple(g)}"
        for k in keys:
            gv, ev = _none_if_nan(g[k]), _none_if_nan(e[k])
            same = gv == ev and type(gv) is type(ev) if not isinstance(ev, float) else gv == ev
            assert same, f"row {i} {k}: {gv!r}, pycocotools {ev!r}\n got {g}\n expected {e}"


def expected_lvis_matches(ev) -> list[dict]:
    """:func:`expected_matches` from an lvis-api ``LVISEval`` after ``run()``, whose ``eval_imgs`` use
    snake-case keys. lvis-api numbers results after its cut per image (which reorders them), so each
    result carries its file row as ``_row`` (an extra key lvis-api keeps on the record)."""
    p = ev.params
    labels = list(p.area_rng_lbl)
    a, n_area, n_img = labels.index("all"), len(p.area_rng), len(p.img_ids)
    records = [ev.eval_imgs[(k * n_area + a) * n_img + i] for k in range(len(p.cat_ids)) for i in range(n_img)]
    records = [r for r in records if r is not None]
    dts = ev.lvis_dt.anns
    rows = []
    for t, thr in enumerate(np.asarray(p.iou_thrs).tolist()):
        for rec in records:
            block = ev.ious[rec["image_id"], rec["category_id"]]
            gts = ev._gts[rec["image_id"], rec["category_id"]]
            for d, did in enumerate(rec["dt_ids"]):
                gid = rec["dt_matches"][t, d]
                gid = None if gid == 0 else _as_id(gid, rec["gt_ids"])
                iou = None
                if gid is not None:
                    values = {float(block[d, j]) for j, g in enumerate(gts) if g["id"] == gid}
                    assert len(values) == 1, values
                    iou = values.pop()
                rows.append({
                    "iou_thr": thr,
                    "det_index": dts[did]["_row"],
                    "image_id": _py(rec["image_id"]),
                    "category_id": _py(rec["category_id"]),
                    "score": float(rec["dt_scores"][d]),
                    "gt_id": gid,
                    "iou": iou,
                    "ignored": bool(rec["dt_ignore"][t, d]),
                })  # fmt: skip
            for m, gid in enumerate(rec["gt_ids"]):
                if rec["gt_matches"][t, m] == 0:
                    rows.append({
                        "iou_thr": thr, "det_index": None, "image_id": _py(rec["image_id"]),
                        "category_id": _py(rec["category_id"]), "score": None, "gt_id": gid, "iou": None,
                        "ignored": bool(rec["gt_ignore"][m]),
                    })  # fmt: skip
    return rows

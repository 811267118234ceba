"""The TIDE breakdown computed over the columnar containers (see the package docstring)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.analysis.tide import _kernels as K
from deteval.analysis.tide.result import ERROR_TYPES, SPECIAL_TYPES, TideResult
from deteval.types import Detections, GroundTruth

# tidecv sums with Python's builtin sum(): left to right up to 3.11, Neumaier-compensated from 3.12
_COMPENSATED = sys.version_info >= (3, 12)

# the attribute of an image table holding each image's place in the file's ``images`` list, when a
# loader keeps it (int64 (I,), a permutation): tidecv walks images in that order, and it breaks score ties
FILE_RANK = "file_rank"

# TIDE.COCO_THRESHOLDS, the thresholds of tidecv's evaluate_range
COCO_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def _validate(dets: Any, gt: Any, iou_thr: float, bg_thr: float, max_dets: int) -> None:
    if not isinstance(gt, GroundTruth):
        raise ValueError(f"gt must be a deteval GroundTruth or a COCO ground-truth source, got {type(gt).__name__}")
    if not isinstance(dets, Detections):
        raise ValueError(f"dets must be deteval Detections or COCO results, got {type(dets).__name__}")
    for what, c in (("gt", gt), ("dets", dets)):
        if c.box_format not in ("xywh", "xyxy"):
            raise ValueError(f"{what}: unknown box_format {c.box_format!r}")
        if c.boxes.shape != (len(c), 4):
            raise ValueError(f"{what}: boxes must have shape ({len(c)}, 4), got {c.boxes.shape}")
        if not np.isfinite(c.boxes).all():
            raise ValueError(f"{what}: row {int(np.argmin(np.isfinite(c.boxes).all(axis=1)))} has a non-finite box")
        for name, arr, n in (("image", c.image, len(gt.images)), ("category", c.category, len(gt.categories))):
            bad = (arr < 0) | (arr >= n)
            if bad.any():
                i = int(np.argmax(bad))
                raise ValueError(f"{what}: row {i} has {name} index {int(arr[i])}, outside the ground truth's {n}")
    if len(dets.score) != len(dets) or not np.isfinite(dets.score).all():
        raise ValueError("dets: every detection needs a finite score")
    for name, v in (("iou_thr", iou_thr), ("bg_thr", bg_thr)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not np.isfinite(v):
            raise ValueError(f"{name} must be a number, got {v!r}")
    if not 0 < iou_thr <= 1:
        raise ValueError(f"iou_thr (tidecv's pos_threshold) must be in (0, 1], got {iou_thr!r}")
    if not 0 <= bg_thr <= iou_thr:
        raise ValueError(f"bg_thr must be in [0, iou_thr], got {bg_thr!r}")
    if isinstance(max_dets, bool) or not isinstance(max_dets, (int, np.integer)) or max_dets < 1:
        raise ValueError(f"max_dets must be a positive integer, got {max_dets!r}")


def _xywh(c) -> np.ndarray:
    b = np.ascontiguousarray(c.boxes, np.float64)
    if c.box_format == "xyxy":
        b = np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)
    if ((b[:, 2] < 0) | (b[:, 3] < 0)).any():
        raise ValueError("a box has a negative width or height")
    return b


def _image_rank(gt: GroundTruth, image_order: Sequence | np.ndarray | None) -> np.ndarray:
    """Rank of each dense image index in the walk order (tidecv: the GT file's ``images`` list).

    ``image_order`` (the user's ids in walk order) comes first; else the image table's own
    ``file_rank`` when the loader kept one (each id's place in the file's list, first occurrence);
    else ascending id, the table's order.
    """
    n = len(gt.images)
    if image_order is None:
        kept = getattr(gt.images, FILE_RANK, None)
        if kept is None:
            return np.arange(n, dtype=np.int64)
        rank = np.asarray(kept, dtype=np.int64)
        if rank.shape != (n,) or not np.array_equal(np.sort(rank), np.arange(n)):
            raise ValueError(f"gt.images.{FILE_RANK} must be a permutation of 0..{n - 1}")
        return rank
    ids = np.asarray(list(image_order) if not isinstance(image_order, np.ndarray) else image_order)
    if ids.dtype.kind not in "iuU":
        raise ValueError(f"image_order must hold image ids (integers or strings), got dtype {ids.dtype}")
    # uint64 as it is: ids past 2**63 would wrap in int64 (lookup compares int64 and uint64 as integers)
    wide = ids.dtype.kind == "u" and ids.dtype.itemsize == 8
    idx, found = gt.images.lookup(ids.astype(np.int64) if ids.dtype.kind in "iu" and not wide else ids)
    if not found.all():
        raise ValueError(f"image_order: {ids[int(np.argmin(found))]!r} is not an image of the ground truth")
    first = np.zeros(n, bool)
    keep = np.zeros(len(idx), bool)
    for i, v in enumerate(idx.tolist()):  # first occurrence wins, as tidecv's add_image does
        if not first[v]:
            first[v] = keep[i] = True
    if not first.all():
        missing = gt.images.id_of(int(np.argmin(first)))
        raise ValueError(f"image_order does not list image {missing!r} of the ground truth")
    rank = np.empty(n, np.int64)
    rank[idx[keep]] = np.arange(n)
    return rank


def _csr(keys: np.ndarray, n: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=n))]).astype(np.int64)


def _first_order(seq: np.ndarray) -> np.ndarray:
    """Distinct values of ``seq`` in order of first appearance."""
    if len(seq) == 0:
        return seq.astype(np.int64)
    vals, first = np.unique(seq, return_index=True)
    return vals[np.argsort(first, kind="stable")].astype(np.int64)


class _Ranked:
    """The kept detections of one pass, with everything the AP variants need."""

    def __init__(self, dets, gt, boxes_d, boxes_g, rank, pos, bg, max_dets, segm=False):
        n_img = len(gt.images)
        # detections: images in walk order, descending score, ties in input order, cut to max_dets
        order = np.lexsort((np.arange(len(dets)), -dets.score, rank[dets.image]))
        img_sorted = rank[dets.image[order]]
        start = _csr(img_sorted, n_img)
        within = np.arange(len(order)) - start[img_sorted]
        self.rows = order[within < max_dets]  # input row of each kept detection; position = tidecv's order
        d_img = rank[dets.image[self.rows]]
        self.cls = dets.category[self.rows].astype(np.int64)
        self.score = dets.score[self.rows].astype(np.float64)
        # ground truth: non-crowd ones match; crowd ones are tidecv's ignore regions
        crowd = gt.crowd.astype(bool)
        g_rank = rank[gt.image]
        self.g_rows = np.flatnonzero(~crowd)[np.argsort(g_rank[~crowd], kind="stable")]
        c_rows = np.flatnonzero(crowd)[np.argsort(g_rank[crowd], kind="stable")]
        self.g_cls = gt.category[self.g_rows].astype(np.int64)
        self.g_img = g_rank[self.g_rows]
        c_cls = gt.category[c_rows].astype(np.int64)
        cat_ids = gt.categories.ids
        wild = (cat_ids == -1) if cat_ids.dtype.kind == "i" else np.zeros(len(cat_ids), bool)
        d_off, g_off, c_off = _csr(d_img, n_img), _csr(self.g_img, n_img), _csr(g_rank[c_rows], n_img)
        overlaps = _mask_overlaps(dets, gt, self.rows, d_off, self.g_rows, g_off, c_rows, c_off) if segm else None
        self.state, self.err, self.target, self.gt_used = K.image_pass(
            d_off, np.ascontiguousarray(boxes_d[self.rows]), self.cls,
            g_off, np.ascontiguousarray(boxes_g[self.g_rows]), self.g_cls,
            c_off, np.ascontiguousarray(boxes_g[c_rows]), c_cls, wild[c_cls],
            float(pos), float(bg), overlaps,
        )  # fmt: skip
        self.d_img = d_img
        self.n_cls = len(gt.categories)
        self.npos = np.bincount(self.g_cls, minlength=self.n_cls).astype(np.int64)
        pushed = self.state != K.IGNORED
        # tidecv's class order (dict insertion): per image its ground truth's classes, then its pushed detections'
        seq_img = np.concatenate([self.g_img, d_img[pushed]])
        seq_kind = np.concatenate([np.zeros(len(self.g_img), np.int8), np.ones(int(pushed.sum()), np.int8)])
        seq_cls = np.concatenate([self.g_cls, self.cls[pushed]])
        self.base_classes = _first_order(seq_cls[np.lexsort((seq_kind, seq_img))])

    def base_aps(self) -> np.ndarray:
        """AP per class as tidecv's run computes it: points in push order (image, then score)."""
        keep = np.flatnonzero(self.state != K.IGNORED)
        order = keep[np.lexsort((keep, -self.score[keep]))]
        return self._aps(self.cls[order], self.state[order] == K.TP, self.npos)

    def _aps(self, cls_sorted, tp_sorted, npos) -> np.ndarray:
        by_cls = np.argsort(cls_sorted, kind="stable")
        return K.class_aps(_csr(cls_sorted, self.n_cls), tp_sorted[by_cls], npos, _COMPENSATED)


def _mask_overlaps(dets, gt, d_rows, d_off, g_rows, g_off, c_rows, c_off) -> tuple[np.ndarray, ...]:
    """tidecv's mask mode: per image (walk order), the mask IoU of its kept detections with its ground truth, and
    their overlap with its ignore regions (pycocotools' crowd IoU: intersection over the detection's area)."""
    from deteval.geometry.masks import mask_iou_blocks

    if gt.masks is None or dets.masks is None:
        raise ValueError("TIDE with iou_type='segm' needs masks: load both with iou_type='segm'")
    nd = np.diff(d_off)
    blocks = []
    for rows, off, crowd in ((g_rows, g_off, False), (c_rows, c_off, True)):
        pair_off = np.concatenate([[0], np.cumsum(nd * np.diff(off))]).astype(np.int64)
        flags = np.full(len(gt), crowd, np.bool_)
        iou = mask_iou_blocks(
            np.ascontiguousarray(rows, np.int64), off, np.ascontiguousarray(d_rows, np.int64), d_off, pair_off,
            gt.masks, flags, dets.masks,
        )  # fmt: skip
        blocks += [np.ascontiguousarray(iou, np.float64), pair_off[:-1].copy()]
    return tuple(blocks)


def _mean(aps: np.ndarray, classes: np.ndarray) -> float:
    """``ClassedAPDataObject.get_mAP``: builtin sum over classes in insertion order (0 when none)."""
    vals = [float(v) for v in aps[classes]]
    return sum(vals) / len(vals) if vals else 0.0


def tide_errors_impl(
    dets, gt, *, iou_thr, bg_thr, max_dets, image_order, ap_thresholds, name, iou_type="bbox"
) -> TideResult:
    _validate(dets, gt, iou_thr, bg_thr, max_dets)
    if iou_type not in ("bbox", "segm"):
        raise ValueError(f"TIDE supports iou_type 'bbox' and 'segm' (tidecv's box and mask modes), got {iou_type!r}")
    segm = iou_type == "segm"
    boxes_d, boxes_g = _xywh(dets), _xywh(gt)
    rank = _image_rank(gt, image_order)
    r = _Ranked(dets, gt, boxes_d, boxes_g, rank, iou_thr, bg_thr, max_dets, segm)
    n_cls, kept = r.n_cls, len(r.rows)
    g = np.arange(kept)
    is_tp = r.state == K.TP
    is_err = ~is_tp  # false positives and ignored detections: every one has an error
    is_fp = r.state == K.FP

    base_aps = r.base_aps()
    base_present = np.zeros(n_cls, bool)
    base_present[r.base_classes] = True
    ap = _mean(base_aps, r.base_classes)

    # BestGTMatch: a Loc or Cls error aimed at an unmatched ground truth makes it "usable"; of the errors
    # aimed at one ground truth, the first in tidecv's order (the highest score) is the one a fix keeps
    fixable = is_err & ((r.err == K.LOC) | (r.err == K.CLS))
    if len(r.g_rows):
        fixable &= ~r.gt_used[np.maximum(r.target, 0)]
    tgt = r.target[fixable]
    best = np.zeros(kept, bool)
    if len(tgt):
        _, first = np.unique(tgt, return_index=True)
        best[np.flatnonzero(fixable)[first]] = True
        best &= r.score > -1  # tidecv's running best starts at -1 (it raises KeyError when no score beats it)
    usable = np.zeros(len(r.g_rows), bool)
    usable[tgt] = True
    missed = ~r.gt_used & ~usable
    fn_per_cls = np.bincount(r.g_cls[~r.gt_used], minlength=n_cls)
    miss_per_cls = np.bincount(r.g_cls[missed], minlength=n_cls)

    counts = {t: int((is_err & (r.err == i)).sum()) for i, t in enumerate(ERROR_TYPES[:-1])}
    counts["Miss"] = int(missed.sum())

    # fix_errors(): error points first (tidecv's error order = push order), then the original true
    # positives class by class; each class's list is then stably sorted by -score
    has_tp = np.zeros(n_cls, bool)
    has_tp[r.cls[is_tp]] = True
    group = is_tp.astype(np.int8)  # 0: error points, 1: true positives

    def variant(keep, cls, tp, score, npos):
        order = np.lexsort((g[keep], group[keep], -score[keep]))
        idx = np.flatnonzero(keep)[order]
        aps = r._aps(cls[idx], tp[idx], npos)
        err_first = _first_order(cls[np.flatnonzero(keep & ~is_tp)])
        rest = r.base_classes[~np.isin(r.base_classes, err_first)]
        rest = np.concatenate([rest[has_tp[rest]], rest[~has_tp[rest]]])
        classes = np.concatenate([err_first, rest]).astype(np.int64)
        present = np.bincount(cls[idx], minlength=n_cls) > 0
        present |= npos > 0
        return _mean(aps, classes[present[classes]]), aps

    fixed_ap, fixed_cls_ap = {}, {}
    target_cls = np.where(r.target >= 0, r.g_cls[np.maximum(r.target, 0)], -1) if len(r.g_rows) else r.cls
    for i, t in enumerate(ERROR_TYPES):
        keep, cls, tp, npos = is_tp | is_fp, r.cls, is_tp, r.npos
        if t == "Miss":
            npos = r.npos - miss_per_cls
        else:
            mine = is_err & (r.err == i)
            keep = (keep & ~mine) | (mine & best)
            tp = is_tp | (mine & best)
            if t == "Cls":
                cls = np.where(mine & best, target_cls, r.cls)
        fixed_ap[t], fixed_cls_ap[t] = variant(keep, cls, tp, r.score, npos)
    keep = is_tp | is_fp
    fixed_ap["FalsePos"], fixed_cls_ap["FalsePos"] = variant(keep, r.cls, is_tp, is_tp.astype(np.float64), r.npos)
    fixed_ap["FalseNeg"], fixed_cls_ap["FalseNeg"] = variant(keep, r.cls, is_tp, r.score, r.npos - fn_per_cls)
    dap = {t: float(max(fixed_ap[t] - ap, 0)) for t in ERROR_TYPES}
    special = {t: fixed_ap[t] - ap for t in SPECIAL_TYPES}

    # per detection (input rows) and per ground truth: outcome codes
    det_error = np.full(len(dets), -3, np.int8)  # -3: cut by max_dets
    det_error[r.rows] = np.where(is_tp, -1, r.err)
    det_ignored = np.zeros(len(dets), bool)
    det_ignored[r.rows] = r.state == K.IGNORED
    gt_status = np.full(len(gt), -2, np.int8)  # -2: crowd (an ignore region)
    gt_status[r.g_rows] = np.where(r.gt_used, -1, np.where(usable, 6, K.MISS))  # 6: unmatched, fixable elsewhere

    per_class = {}
    cat = gt.categories
    by_cls = np.zeros((len(ERROR_TYPES), n_cls), np.int64)
    np.add.at(by_cls, (r.err[is_err].astype(np.int64), r.cls[is_err]), 1)
    by_cls[K.MISS] = miss_per_cls
    for c in np.flatnonzero(base_present | (r.npos > 0)).tolist():
        pc_counts = {t: int(by_cls[i, c]) for i, t in enumerate(ERROR_TYPES)}
        per_class[cat.id_of(c)] = {
            "name": cat.name_of(c),
            "num_gt": int(r.npos[c]),
            "AP": float(base_aps[c]),
            "counts": pc_counts,
            "fixed_AP": {t: float(fixed_cls_ap[t][c]) for t in (*ERROR_TYPES, *SPECIAL_TYPES)},
        }

    ap_by_thr = None
    if ap_thresholds is not None:
        ap_by_thr = {}
        for t in ap_thresholds:
            if isinstance(t, bool) or not isinstance(t, (int, float, np.floating)) or not 0 < t <= 1:
                raise ValueError(f"ap_thresholds must be IoUs in (0, 1], got {t!r}")
            rt = _Ranked(dets, gt, boxes_d, boxes_g, rank, float(t), bg_thr, max_dets, segm)
            ap_by_thr[float(t)] = _mean(rt.base_aps(), rt.base_classes)

    return TideResult(
        name=name,
        ap=ap,
        counts=counts,
        dap=dap,
        special_dap=special,
        fixed_ap=fixed_ap,
        per_class=per_class,
        ap_by_threshold=ap_by_thr,
        pos_thr=float(iou_thr),
        bg_thr=float(bg_thr),
        max_dets=int(max_dets),
        det_error=det_error,
        det_ignored=det_ignored,
        gt_status=gt_status,
        mode="mask" if segm else "bbox",
    )

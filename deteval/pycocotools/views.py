"""pycocotools' per-image objects, built from an evaluation only when read: ``ious``, ``evalImgs``,
and ``accumulate`` over ``evalImgs`` for params that no longer agree with the evaluated ones.

These are Python loops, at pycocotools' own speed: ``evaluate()`` / ``accumulate()`` never build them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.pycocotools.engine import Evaluated

__all__ = ["accumulate_records", "eval_imgs", "ious"]


def _blocks(ev: Evaluated):
    """Each group's (image index, category index or -1, gt rows, dt rows in score order, D x G overlaps)."""
    g = ev.groups
    pair = g.pair_offsets()
    for i in range(len(g)):
        gt_rows = g.gt_rows[g.gt_offsets[i] : g.gt_offsets[i + 1]]
        dt_rows = g.dt_rows[g.dt_offsets[i] : g.dt_offsets[i + 1]]
        block = ev.ious[pair[i] : pair[i + 1]].reshape(len(dt_rows), len(gt_rows))
        yield int(g.image[i]), int(g.category[i]), gt_rows, dt_rows, block


def _cat_ids(p: Any) -> list:
    return list(p.catIds) if p.useCats else [-1]


def ious(ev: Evaluated, p: Any) -> dict:
    """``COCOeval.ious``: (image id, category id) -> the D x G overlaps, ``[]`` where pycocotools has none."""
    present = {}
    if not ev.no_overlaps:
        for img, cat, gt_rows, dt_rows, block in _blocks(ev):
            if len(gt_rows) and len(dt_rows):
                present[img, cat] = block.copy()
    cats = _cat_ids(p)
    return {
        (img_id, cat_id): present.get((i, k if p.useCats else -1), [])
        for i, img_id in enumerate(p.imgIds)
        for k, cat_id in enumerate(cats)
    }


def _match(block, gt_ids, crowd, ig, dt_ids, thrs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The greedy matching of one image, category and area range (gt in ignore-last order)."""
    n_thr, n_gt, n_dt = len(thrs), len(gt_ids), len(dt_ids)
    gtm, dtm, dt_ig = np.zeros((n_thr, n_gt)), np.zeros((n_thr, n_dt)), np.zeros((n_thr, n_dt))
    if block is None:
        return gtm, dtm, dt_ig
    for t, thr in enumerate(thrs):
        for d in range(n_dt):
            best, m = min(thr, 1 - 1e-10), -1
            for g in range(n_gt):
                if gtm[t, g] > 0 and not crowd[g]:  # taken: pycocotools reads a match by a positive id
                    continue
                if m > -1 and ig[m] == 0 and ig[g] == 1:
                    break
                if block[d, g] < best:
                    continue
                best, m = block[d, g], g
            if m > -1:
                dt_ig[t, d] = ig[m]
                dtm[t, d] = gt_ids[m]
                gtm[t, m] = dt_ids[d]
    return gtm, dtm, dt_ig


def eval_imgs(ev: Evaluated, p: Any, dt_ids: np.ndarray) -> list:
    """``COCOeval.evalImgs``: one record (or None) per category, area range and image, in that order."""
    gt, dets = ev.gt, ev.dets
    thrs = [float(t) for t in np.asarray(p.iouThrs)]
    max_det = p.maxDets[-1]
    n_img, n_area = len(p.imgIds), len(p.areaRng)
    cats = _cat_ids(p)
    out: list = [None] * (len(cats) * n_area * n_img)
    gt_area, gt_ids, gt_crowd, gt_ignore = gt.area, gt.ann_id, gt.crowd, ev.gt_ignore
    for img, cat, gt_rows, dt_rows, block in _blocks(ev):
        k = cat if p.useCats else 0
        has_overlaps = not ev.no_overlaps and len(gt_rows) and len(dt_rows)
        d_ids = dt_ids[dt_rows].tolist()
        d_scores = dets.score[dt_rows]
        d_scores = np.where(d_scores == -np.inf, np.nan, d_scores).tolist() if dets.nan_scores else d_scores.tolist()
        d_area = dets.area[dt_rows]
        for a, rng in enumerate(p.areaRng):
            ig = (gt_ignore[gt_rows] | (gt_area[gt_rows] < rng[0]) | (gt_area[gt_rows] > rng[1])).astype(np.int64)
            order = np.argsort(ig, kind="mergesort")
            rows = gt_rows[order]
            g_ids = gt_ids[rows].tolist()
            gtm, dtm, dt_ig = _match(block[:, order] if has_overlaps else None, g_ids, gt_crowd[rows].tolist(),
                                     ig[order].tolist(), d_ids, thrs)  # fmt: skip
            outside = ((d_area < rng[0]) | (d_area > rng[1])).reshape(1, len(dt_rows))
            out[(k * n_area + a) * n_img + img] = {
                "image_id": p.imgIds[img],
                "category_id": cats[k],
                "aRng": rng,
                "maxDet": max_det,
                "dtIds": d_ids,
                "gtIds": g_ids,
                "dtMatches": dtm,
                "gtMatches": gtm,
                "dtScores": d_scores,
                "gtIgnore": np.array(ig[order].tolist()),
                "dtIgnore": np.logical_or(dt_ig, np.logical_and(dtm == 0, np.repeat(outside, len(thrs), 0))),
            }
    return out


def accumulate_records(eval_imgs: list, p: Any, pe: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """pycocotools' accumulation over ``evalImgs`` for params ``p`` evaluated with ``pe``, index quirks included:
    the positions of ``p``'s categories, areas and images that ``pe`` also has index ``pe``'s record list."""
    n_thr, n_rec = len(p.iouThrs), len(p.recThrs)
    n_cat = len(p.catIds) if p.useCats else 1
    n_area, n_md = len(p.areaRng), len(p.maxDets)
    precision = -np.ones((n_thr, n_rec, n_cat, n_area, n_md))
    recall = -np.ones((n_thr, n_cat, n_area, n_md))
    scores = -np.ones((n_thr, n_rec, n_cat, n_area, n_md))
    set_k = set(pe.catIds if pe.useCats else [-1])
    set_a = {tuple(a) for a in pe.areaRng}
    set_m, set_i = set(pe.maxDets), set(pe.imgIds)
    k_list = [n for n, k in enumerate(p.catIds) if k in set_k]
    m_list = [m for m in p.maxDets if m in set_m]
    a_list = [n for n, a in enumerate(p.areaRng) if tuple(a) in set_a]
    i_list = [n for n, i in enumerate(p.imgIds) if i in set_i]
    n_img0, n_area0 = len(pe.imgIds), len(pe.areaRng)
    rec_thrs = p.recThrs
    for k, k0 in enumerate(k_list):
        for a, a0 in enumerate(a_list):
            base = k0 * n_area0 * n_img0 + a0 * n_img0
            records = [r for r in (eval_imgs[base + i] for i in i_list) if r is not None]
            if not records:
                continue
            for m, max_det in enumerate(m_list):
                dt_scores = np.concatenate([r["dtScores"][0:max_det] for r in records])
                order = np.argsort(-dt_scores, kind="mergesort")
                sorted_scores = dt_scores[order]
                dtm = np.concatenate([r["dtMatches"][:, 0:max_det] for r in records], axis=1)[:, order]
                dt_ig = np.concatenate([r["dtIgnore"][:, 0:max_det] for r in records], axis=1)[:, order]
                npig = np.count_nonzero(np.concatenate([r["gtIgnore"] for r in records]) == 0)
                if npig == 0:
                    continue
                tp_sum = np.cumsum(np.logical_and(dtm, ~dt_ig), axis=1).astype(float)
                fp_sum = np.cumsum(np.logical_and(np.logical_not(dtm), ~dt_ig), axis=1).astype(float)
                for t, (tp, fp) in enumerate(zip(tp_sum, fp_sum)):
                    nd = len(tp)
                    rc = tp / npig
                    pr = (tp / (fp + tp + np.spacing(1))).tolist()
                    recall[t, k, a, m] = rc[-1] if nd else 0
                    for i in range(nd - 1, 0, -1):  # the precision envelope, right to left
                        if pr[i] > pr[i - 1]:
                            pr[i - 1] = pr[i]
                    q, ss = np.zeros(n_rec), np.zeros(n_rec)
                    for r, at in enumerate(np.searchsorted(rc, rec_thrs, side="left")):
                        if at >= nd:  # pycocotools stops at the first recall never reached
                            break
                        q[r], ss[r] = pr[at], sorted_scores[at]
                    precision[t, :, k, a, m] = q
                    scores[t, :, k, a, m] = ss
    return precision, recall, scores

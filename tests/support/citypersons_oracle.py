"""An independent CityPersons MR^-2 oracle: the rules of the dataset authors' ``eval_MR_multisetup.py``
(cvgroup-njust/CityPersons, evaluation/eval_script/), written plainly over Python dicts and lists, with the
accumulation in the reference's own numpy expressions (its mergesorts, cumsums, ``searchsorted(...) - 1``,
``np.mean(np.log(...))``). It shares no code with deteval.

Takes the parsed ground truth (a dict) and results (a list); returns the four setups' MRs in order.
"""

from __future__ import annotations

import numpy as np

HT = [[50, 1e5**2], [50, 75], [50, 1e5**2], [20, 1e5**2]]
VIS = [[0.65, 1e5**2], [0.65, 1e5**2], [0.2, 0.65], [0.2, 1e5**2]]
FPPI = np.array([0.0100, 0.0178, 0.0316, 0.0562, 0.1000, 0.1778, 0.3162, 0.5623, 1.0000])


def _overlap(d, g, crowd):
    dx2, dy2, gx2, gy2 = d[0] + d[2], d[1] + d[3], g[0] + g[2], g[1] + g[3]
    w = min(dx2, gx2) - max(d[0], g[0])
    if w <= 0:
        return 0.0
    h = min(dy2, gy2) - max(d[1], g[1])
    if h <= 0:
        return 0.0
    t = w * h
    darea, garea = d[2] * d[3], g[2] * g[3]
    return float(t) / (darea if crowd else darea + garea - t)


def _image(gts, dts, hrng, vrng, max_det=1000, exp=1.25, thr=0.5):
    """(scores, matched gt id or 0, ignored) per kept detection, and the unignored gt count."""
    ig = []
    for g in gts:
        out = g["height"] < hrng[0] or g["height"] > hrng[1] or g["vis_ratio"] < vrng[0] or g["vis_ratio"] > vrng[1]
        ig.append(1 if out else (1 if g.get("ignore", 0) else 0))
    gorder = sorted(range(len(gts)), key=lambda i: ig[i])  # Python's sort is stable
    gts, ig = [gts[i] for i in gorder], [ig[i] for i in gorder]
    dorder = sorted(range(len(dts)), key=lambda i: -dts[i]["score"])[:max_det]
    dts = [dts[i] for i in dorder]
    dts = [d for d in dts if d["bbox"][3] >= hrng[0] / exp and d["bbox"][3] < hrng[1] * exp]
    taken = [False] * len(gts)
    rows = []
    for d in dts:
        best, bg, bm = min(thr, 1 - 1e-10), -1, 0
        for j, g in enumerate(gts):
            if taken[j]:
                continue
            if bm != 0 and ig[j]:
                break
            o = _overlap(d["bbox"], g["bbox"], ig[j])
            if o < best:
                continue
            best, bg, bm = o, j, (-1 if ig[j] else 1)
        if bg < 0:
            rows.append((d["score"], 0, 0))
        else:
            rows.append((d["score"], gts[bg]["id"], ig[bg]))
            if bm == 1:
                taken[bg] = True
    return rows, sum(1 for v in ig if v == 0)


def citypersons_mr(gt: dict, results: list) -> list[float]:
    img_ids = sorted({im["id"] for im in gt["images"]})
    known = set(img_ids)
    out = []
    for s in range(4):
        per_gt = {i: [] for i in img_ids}
        per_dt = {i: [] for i in img_ids}
        for a in gt["annotations"]:
            if a["category_id"] == 1 and a["image_id"] in known:
                per_gt[a["image_id"]].append(a)
        for r in results:
            if r["category_id"] == 1:
                per_dt[r["image_id"]].append(r)
        scores, dtm, dtig, npig = [], [], [], 0
        for i in img_ids:
            rows, n = _image(per_gt[i], per_dt[i], HT[s], VIS[s])
            npig += n
            for sc, m, ign in rows:
                scores.append(sc)
                dtm.append(m)
                dtig.append(ign)
        if npig == 0 or not any(c["id"] == 1 for c in gt["categories"]):
            out.append(-1.0)
            continue
        inds = np.argsort(-np.array(scores, dtype=np.float64), kind="mergesort")
        dtm_a = np.array(dtm, dtype=np.float64)[inds]
        dtig_a = np.array(dtig, dtype=np.float64)[inds]
        tps = np.logical_and(dtm_a, np.logical_not(dtig_a))[dtig_a == 0]
        fps = np.logical_and(np.logical_not(dtm_a), np.logical_not(dtig_a))[dtig_a == 0]
        tp = np.cumsum(tps).astype(np.float64)
        fp = np.cumsum(fps).astype(np.float64)
        fppi = fp / len(img_ids)
        recall = (tp / npig).tolist()
        q = [0.0] * len(FPPI)
        if recall:
            for ri, pi in enumerate(np.searchsorted(fppi, FPPI, side="right") - 1):
                q[ri] = recall[pi]
        mrs = 1 - np.array(q)
        with np.errstate(divide="ignore"):
            out.append(float(np.exp(np.mean(np.log(mrs)))))
    return out

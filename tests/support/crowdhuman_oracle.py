"""An independent CrowdHuman oracle: the rules of CrowdDet's ``lib/evaluate`` (``compute_APMR.py`` with
``APMRToolkits``, ``compute_JI.py`` with ``JIToolkits``), written plainly over Python lists, with its float
expressions kept (``inter / (union + 1e-6)``, Python's left-to-right AP sum, ``np.exp(np.log(..).mean())``,
``np.sum(ratios) / img_num``). The JI's maximum-weight matching here is successive shortest augmenting paths
(Bellman-Ford), not deteval's Hungarian kernel. It shares no code with deteval.

Takes ground-truth and prediction records (ODGT dicts); returns (AP, MR, JI, the JI per score threshold).
"""

from __future__ import annotations

import numpy as np

CLASSES = ["background", "person"]
EPS = 1e-6


def _xyxy(b):
    return [b[0], b[1], b[0] + b[2], b[1] + b[3]]


def _clip(b, h, w):
    return [min(max(b[0], 0), w - 1), min(max(b[1], 0), h - 1), max(min(b[2], w), 0), max(min(b[3], h), 0)]


def _inter(d, g):
    return max(0, min(d[2], g[2]) - max(d[0], g[0])) * max(0, min(d[3], g[3]) - max(d[1], g[1]))


def _iou(d, g):
    i = _inter(d, g)
    return i / ((d[2] - d[0]) * (d[3] - d[1]) + (g[2] - g[0]) * (g[3] - g[1]) - i + EPS)


def _ioa(d, g, clamp=False):
    area = max(d[2] - d[0], 0) * max(d[3] - d[1], 0) if clamp else (d[2] - d[0]) * (d[3] - d[1])
    return _inter(d, g) / (area + EPS)


def _tag(rb):
    tag = CLASSES.index(rb["tag"]) if rb["tag"] in CLASSES else -1
    if "extra" in rb and "ignore" in rb["extra"] and rb["extra"]["ignore"] != 0:
        tag = -1
    return tag


def _max_weight_matching(w):
    """Successive shortest paths on the bipartite graph (weights ``w[i][j]``, 0 = no edge), stopping when no
    augmenting path gains weight: a maximum-weight matching as (row -> column or -1, column -> row or -1)."""
    n, m = len(w), len(w[0]) if w else 0
    mate_r, mate_c = [-1] * n, [-1] * m
    while True:
        # Bellman-Ford from a source to every free row; distances are negative gains
        dist_r = [0.0 if mate_r[i] < 0 else np.inf for i in range(n)]
        dist_c, prev_c = [np.inf] * m, [-1] * m
        for _ in range(n + m + 1):
            changed = False
            for i in range(n):
                if dist_r[i] == np.inf:
                    continue
                for j in range(m):
                    if w[i][j] > 0 and mate_r[i] != j and dist_r[i] - w[i][j] < dist_c[j]:
                        dist_c[j], prev_c[j], changed = dist_r[i] - w[i][j], i, True
            for j in range(m):
                if mate_c[j] >= 0 and dist_c[j] + w[mate_c[j]][j] < dist_r[mate_c[j]]:
                    dist_r[mate_c[j]], changed = dist_c[j] + w[mate_c[j]][j], True
            if not changed:
                break
        best = min(((dist_c[j], j) for j in range(m) if mate_c[j] < 0), default=(np.inf, -1))
        if best[0] >= 0:
            return mate_r, mate_c
        j = best[1]
        while j >= 0:
            i = prev_c[j]
            nxt = mate_r[i]
            mate_r[i], mate_c[j] = j, i
            j = nxt


def crowdhuman_stats(gts: list, dts: list) -> tuple[float, float, float, list[float]]:
    dt_of = {r["ID"]: r["dtboxes"] for r in dts}
    images = {}
    for r in gts:
        images[r["ID"]] = r
    n_images, npos, scorelist, ratios = len(images), 0, [], [[] for _ in range(10)]
    for ID, r in images.items():
        h, w = r["height"], r["width"]
        gt = [(_clip(_xyxy(b["fbox"]), h, w), _tag(b)) for b in r["gtboxes"]]
        npos += sum(1 for _, t in gt if t != -1)
        dt = [(_clip(_xyxy(b["box"]), h, w), b["score"]) for b in dt_of.get(ID, [])]
        # AP / MR: compare_caltech
        gs = sorted(gt, key=lambda x: x[1], reverse=True)
        taken = [False] * len(gs)
        for d, s in sorted(dt, key=lambda x: x[1], reverse=True):
            pos, best = -1, 0.5
            for j, (g, t) in enumerate(gs):
                if taken[j]:
                    continue
                if t > 0:
                    if _iou(d, g) > best:
                        best, pos = _iou(d, g), j
                elif pos >= 0:
                    break
                elif _ioa(d, g) > 0.5:
                    best, pos = _ioa(d, g), j
            if pos < 0:
                scorelist.append((s, 0))
            elif gs[pos][1] > 0:
                taken[pos] = True
                scorelist.append((s, 1))
        # JI
        pos_gt = [g for g, t in gt if t != -1]
        ign = [g for g, t in gt if t == -1]
        for i in range(10):
            kept = [d for d, s in dt if s > 1e-1 * i]
            wts = [[_iou(d, g) if _iou(d, g) > 0.5 else 0.0 for g in pos_gt] for d in kept]
            mate_r, mate_c = _max_weight_matching(wts) if kept and pos_gt else ([-1] * len(kept), [-1] * len(pos_gt))
            k = sum(1 for v in mate_r if v >= 0)
            um_d = [a for a, v in enumerate(mate_r) if v < 0]
            um_g = [b for b, v in enumerate(mate_c) if v < 0]
            nid = sum(1 for a in um_d if ign and max(_ioa(kept[a], g, True) for g in ign) > 0.5)
            nig = sum(1 for b in um_g if ign and max(_ioa(pos_gt[b], g, True) for g in ign) > 0.5)
            m, n = len(pos_gt) - nig, len(kept) - nid
            ratios[i].append((k / (m + n - k + EPS), m, n))
    scorelist.sort(key=lambda x: x[0], reverse=True)
    tp = fp = 0.0
    rec, prec, fppi, miss = [], [], [], []
    for _, o in scorelist:
        if o == 1:
            tp += 1.0
        else:
            fp += 1.0
        fn = npos - tp
        rec.append(tp / (tp + fn))
        prec.append(tp / (tp + fp))
        fppi.append(fp / n_images)
        miss.append(1.0 - tp / (tp + fn))
    ap = 0
    for i in range(1, len(rec)):
        ap += (rec[i] - rec[i - 1]) * ((prec[i - 1] + prec[i]) / 2)
    score = []
    for p in [0.0100, 0.0178, 0.03160, 0.0562, 0.1000, 0.1778, 0.3162, 0.5623, 1.000]:
        idx = next((i for i, f in enumerate(fppi) if f >= p), len(fppi) - 1)
        if idx >= 0:
            score.append(miss[idx])
    with np.errstate(divide="ignore"):
        mr = float(np.exp(np.log(np.array(score)).mean())) if score else 1.0
    ji = []
    for rows in ratios:
        img_num = sum(1 for _, m, n in rows if m != 0 or n != 0)
        ji.append(float(np.sum([r for r, _, _ in rows]) / img_num))
    return float(ap), mr, max(ji), ji


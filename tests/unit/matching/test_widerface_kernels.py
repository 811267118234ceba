"""The WIDER FACE kernels against the script's per-image steps written literally in numpy (``image_eval``'s
loop on the tests' twin of its ``bbox_overlaps``, ``img_pr_info``'s thresholds), image by image."""

from __future__ import annotations

import numpy as np
import pytest
from support.widerface_bbox_twin import bbox_overlaps

from deteval.matching.widerface import best_faces, subset_progress, threshold_counts
from deteval.protocols.widerface import THRESHOLDS


def _image_eval(pred, gt, keep, thr):
    p, g = pred[:, :4].copy(), gt.copy()
    p[:, 2] += p[:, 0]
    p[:, 3] += p[:, 1]
    g[:, 2] += g[:, 0]
    g[:, 3] += g[:, 1]
    ov = bbox_overlaps(p, g)
    recall, found, proposal = np.zeros(len(g)), np.zeros(len(p)), np.ones(len(p))
    for h in range(len(p)):
        if ov[h].max() >= thr:
            f = ov[h].argmax()
            if not keep[f]:
                recall[f], proposal[h] = -1, -1
            elif recall[f] == 0:
                recall[f] = 1
        found[h] = (recall == 1).sum()
    return found, proposal


def _img_pr_info(score, proposal, found):
    out = np.zeros((1000, 2))
    for t in range(1000):
        idx = np.where(score >= 1 - (t + 1) / 1000)[0]
        if len(idx):
            r = idx[-1]
            out[t] = (proposal[: r + 1] == 1).sum(), found[r]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_kernels_equal_the_literal_steps(seed):
    rng = np.random.default_rng(seed)
    gts, preds, keeps = [], [], []
    for _ in range(8):
        n = int(rng.integers(1, 9))
        g = np.hstack([rng.integers(0, 60, (n, 2)), rng.integers(0, 20, (n, 2))]).astype(np.float64)
        m = int(rng.integers(1, 25))
        src = g[rng.integers(0, n, m)] + rng.integers(-3, 4, (m, 4))
        p = np.hstack([src, rng.choice([0.0, 0.25, 0.5, 0.999, 1.0, rng.random()], (m, 1))])
        gts.append(g)
        preds.append(p)
        keeps.append(rng.random(n) < 0.6)
    g_off = np.concatenate([[0], np.cumsum([len(g) for g in gts])])
    p_off = np.concatenate([[0], np.cumsum([len(p) for p in preds])])
    rows, boxes, keep = np.concatenate(preds), np.concatenate(gts), np.concatenate(keeps)
    best, iou = best_faces(rows, p_off, boxes, g_off)
    found, proposal = subset_progress(best, iou, p_off, g_off, keep, 0.5)
    counts = threshold_counts(rows[:, 4], p_off, np.arange(len(gts)), THRESHOLDS, found[None], proposal[None])
    want = np.zeros((1000, 2))
    for i in range(len(gts)):
        f, pr = _image_eval(preds[i], gts[i], keeps[i], 0.5)
        d = slice(p_off[i], p_off[i + 1])
        assert np.array_equal(found[d], f) and np.array_equal(np.where(proposal[d] == 1, 1, -1), pr)
        want += _img_pr_info(preds[i][:, 4], pr, f)
    assert np.array_equal(counts[0], want)

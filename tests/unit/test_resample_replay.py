"""deteval.accumulation.resample's replicates against COCO's accumulation of the materialised draws, on adversarial
data.

The parity tests (tests/parity/test_bootstrap.py) hold replicates to pycocotools on real data; these
generate what real data rarely has in one place: scores with few distinct values (long runs of ties
mixing true and false positives across many images), images drawn many times (runs with more than 16
true-positive copies: the sorted path), images with several rows in one run, max-dets cuts inside runs,
and draws whose true positives are all left out. The reference is :func:`deteval.accumulation.accumulate.accumulate`
(itself held to pycocotools by tests/parity) on the materialised rows: draw ``j`` is image ``j``.
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval.accumulation.accumulate import accumulate
from deteval.accumulation.integrators import COCO_REC_THRS
from deteval.accumulation.resample import as_pycocotools, build_index, replicate_arrays

N_AREA, N_THR = 2, 3


def _dataset(rng: np.random.Generator, n_images: int, n_cat: int, n_scores: int):
    """Rows of a matching (category, image, rank, score, state) and its ground truth, consistent:
    per (image, category, column) no more true positives than counted ground truth."""
    rows = []
    gt_image, gt_category, gt_counted = [], [], []
    for i in range(n_images):
        for k in range(n_cat):
            n_gt = int(rng.integers(0, 4))
            counted = rng.random((n_gt, N_AREA)) < 0.7
            gt_image += [i] * n_gt
            gt_category += [k] * n_gt
            gt_counted += list(counted)
            n_det = int(rng.integers(0, 6))
            score = rng.integers(0, n_scores, n_det) / n_scores
            score = np.sort(score)[::-1]
            state = rng.integers(0, 3, (n_det, N_AREA, N_THR)).astype(np.int8)
            for a in range(N_AREA):
                for t in range(N_THR):
                    tp = np.flatnonzero(state[:, a, t] == 1)
                    state[tp[int(counted[:, a].sum()) :], a, t] = 0  # extra true positives: false
            rows += [(k, i, r, score[r], state[r]) for r in range(n_det)]
    cat = np.array([r[0] for r in rows], np.int64)
    img = np.array([r[1] for r in rows], np.int64)
    rank = np.array([r[2] for r in rows], np.int64)
    score = np.array([r[3] for r in rows], np.float64)
    state = np.array([r[4] for r in rows], np.int8).reshape(len(rows), N_AREA, N_THR)
    gt = (np.array(gt_image, np.int64), np.array(gt_category, np.int64), np.array(gt_counted, bool).reshape(-1, N_AREA))
    return cat, img, rank, score, state, gt


def _materialised(draw, cat, img, rank, score, state, gt, n_cat, max_dets):
    """COCO's precision and recall of the dataset the draws make: draw j is image j, rows copied."""
    gt_image, gt_category, gt_counted = gt
    by_image = [np.flatnonzero(img == i) for i in range(int(img.max()) + 1 if len(img) else 0)]
    take = [by_image[i] if i < len(by_image) else np.zeros(0, np.int64) for i in draw]
    sel = np.concatenate(take) if take else np.zeros(0, np.int64)
    new_img = np.repeat(np.arange(len(draw)), [len(t) for t in take])
    npig = np.zeros((n_cat, N_AREA), np.int64)
    for i in draw:
        g = gt_image == i
        for a in range(N_AREA):
            np.add.at(npig[:, a], gt_category[g & gt_counted[:, a]], 1)
    p, r, _ = accumulate(cat[sel], new_img, rank[sel], score[sel], state[sel], npig, max_dets, COCO_REC_THRS)
    return p, r


@pytest.mark.parametrize("seed", range(12))
def test_replicates_equal_accumulating_the_materialised_draws(seed):
    rng = np.random.default_rng(seed)
    n_images, n_cat = int(rng.integers(3, 25)), int(rng.integers(1, 4))
    cat, img, rank, score, state, gt = _dataset(rng, n_images, n_cat, n_scores=int(rng.choice([2, 3, 50])))
    max_dets = np.array([1, 3, 100])
    index = build_index(cat, img, rank, score, state, *gt, n_cat, n_images, max_dets, COCO_REC_THRS)
    draws = [rng.integers(0, n_images, n_images) for _ in range(4)]
    # a few images drawn 8 times each among others: runs with many true-positive copies, others between them
    many = np.concatenate([np.repeat(rng.integers(0, n_images, 4), 8), rng.integers(0, n_images, n_images)])
    draws.append(rng.permutation(many))
    draws.append(np.arange(n_images))  # the evaluation itself
    for draw in draws:
        want_p, want_r = _materialised(draw, cat, img, rank, score, state, gt, n_cat, max_dets)
        got_p, got_r = as_pycocotools(*replicate_arrays(index, draw))
        np.testing.assert_array_equal(got_r, want_r)
        np.testing.assert_array_equal(got_p, want_p)


def test_precision_is_written_only_where_asked_and_recall_everywhere():
    rng = np.random.default_rng(99)
    cat, img, rank, score, state, gt = _dataset(rng, 12, 2, n_scores=3)
    max_dets = np.array([1, 3, 100])
    index = build_index(cat, img, rank, score, state, *gt, 2, 12, max_dets, COCO_REC_THRS)
    draw = rng.integers(0, 12, 12)
    full_p, full_r = replicate_arrays(index, draw)
    need = np.zeros((N_AREA, 3), bool)
    need[:, 2] = True
    part_p, part_r = replicate_arrays(index, draw, need)
    np.testing.assert_array_equal(part_r, full_r)
    np.testing.assert_array_equal(part_p[:, 2], full_p[:, 2])

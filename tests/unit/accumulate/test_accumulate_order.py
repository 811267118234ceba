"""accumulate() gives the same arrays whatever the order of its rows (one match's order, or shards')."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import COCO_PAIRS

import deteval.protocols.coco as coco
from deteval.accumulation.accumulate import accumulate
from deteval.io.coco import load_coco_pair


@pytest.mark.parametrize("name", sorted(COCO_PAIRS))
def test_rows_in_match_order_and_shuffled_give_the_same_arrays(name, tmp_path):
    pair = COCO_PAIRS[name]
    dets, gt = load_coco_pair(pair.preds_list_path(tmp_path), pair.gt_path)
    params = coco.make_params("bbox")
    m = coco.match(dets, gt, params)
    args = (np.array(params.max_dets), params.rec_thrs)
    # in match's order the kernel reads each category's rows as one block; shuffled, it cannot
    in_order = accumulate(m.det_category, m.det_image, m.det_rank, m.det_score, m.state, m.npig, *args)
    rows = np.random.default_rng(0).permutation(len(m.state))
    shuffled = accumulate(
        m.det_category[rows], m.det_image[rows], m.det_rank[rows], m.det_score[rows], m.state[rows], m.npig, *args
    )
    for a, b in zip(in_order, shuffled):
        assert np.array_equal(a, b)

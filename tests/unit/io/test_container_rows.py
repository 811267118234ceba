"""Row selections of the containers (``take_rows``, ``images_between``) carry their masks and keypoints along."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.types import images_between, take_rows


def _gt_and_dets():
    gt = {
        "images": [{"id": i, "height": 4, "width": 5} for i in (1, 2, 3)],
        "categories": [{"id": 1}],
        "annotations": [
            {"id": k + 1, "image_id": 1 + k % 3, "category_id": 1, "bbox": [0, 0, 1 + k, 1],
             "segmentation": [[0, 0, 1 + k, 0, 1 + k, 1, 0, 1]], "keypoints": [k, 1, 2, 3, 0, 0]}
            for k in range(4)
        ],
    }  # fmt: skip
    dets = [
        {"image_id": 1 + k % 3, "category_id": 1, "score": 0.1 * k, "keypoints": [k, 2, 1, 0, 0, 0],
         "segmentation": {"size": [4, 5], "counts": [k, 20 - k]}}
        for k in range(5)
    ]  # fmt: skip
    return dets, gt


# annotations without iscrowd warn (tests/unit/io); compared here: the rows taken
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
def test_take_rows_keeps_each_rows_geometry():
    dets, gt_data = _gt_and_dets()
    for iou_type in ("segm", "keypoints"):
        gt = load_coco_gt(gt_data, iou_type=iou_type)
        dt = load_coco_results(dets, gt, iou_type=iou_type)
        for rows in ([2, 0], np.array([True, False, True, True])):
            part = take_rows(gt, rows)
            idx = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows)
            assert np.array_equal(part.ann_id, gt.ann_id[idx])
            if iou_type == "segm":
                a, b = part.masks, gt.masks
                for i, r in enumerate(idx.tolist()):  # each kept row's runs, in the order asked
                    assert np.array_equal(
                        a.counts[a.offsets[i] : a.offsets[i + 1]], b.counts[b.offsets[r] : b.offsets[r + 1]]
                    )
                assert part.keypoints is None
            else:
                assert np.array_equal(part.keypoints, gt.keypoints[idx])
                assert np.array_equal(part.num_keypoints, gt.num_keypoints[idx])
                assert part.masks is None
        dt_part, gt_part = images_between(dt, gt, 1, 3)
        keep = (dt.image >= 1) & (dt.image < 3)
        assert np.array_equal(dt_part.score, dt.score[keep])
        if iou_type == "segm":
            assert np.array_equal(dt_part.mask_area, dt.mask_area[keep])
            assert np.array_equal(dt_part.masks.area, dt.masks.area[keep])
            assert len(gt_part.masks) == len(gt_part)
        else:
            assert np.array_equal(dt_part.keypoints, dt.keypoints[keep])

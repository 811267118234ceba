"""Generated COCO-style oriented-box datasets (``obb`` = ``[cx, cy, w, h, angle]``) and the near-threshold check
the obb tests share: where an IoU lies within 1e-9 of a threshold, two exact methods may disagree."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from deteval.geometry.obb import obb_iou_matrix

THRESHOLDS = np.linspace(0.5, 0.95, 10)

# coordinates on a coarse grid and right angles as often as anything: exact IoUs such as 0.5 and 0.75
coord = st.one_of(st.integers(0, 40).map(float), st.floats(0, 40, allow_nan=False))
# no size in (0, 0.5): hotcoco matches anything to a ground truth whose sides are both below about 1e-14
# (test_coco_obb's test_degenerate_ground_truth)
_sizes = st.one_of(st.integers(0, 30).map(float), st.floats(0.5, 30))
# negative sizes give negative areas: outside every area range, in both tools (the Evaluator refuses them)
_signed_sizes = st.one_of(st.integers(-30, 30).map(float), st.floats(0.5, 30), st.floats(-30, -0.5))
_angles = st.one_of(st.sampled_from([0.0, math.pi / 2, math.pi / 4, -math.pi, 3 * math.pi / 2]), st.floats(-7, 7))


def obb_values(negative_sizes: bool = False) -> st.SearchStrategy:
    size = _signed_sizes if negative_sizes else _sizes
    return st.tuples(coord, coord, size, size, _angles).map(list)


@st.composite
def obb_datasets(draw, negative_sizes: bool = False, max_gt: int = 10, max_preds: int = 14):
    """``(preds, gt)``: 1-3 images, two categories, crowd regions, stated areas on range boundaries, detections
    near a ground truth (shifted by a grid step) or anywhere."""
    values = obb_values(negative_sizes)
    n_images = draw(st.integers(1, 3))
    anns = []
    for i in range(draw(st.integers(0, max_gt))):
        ann = {"id": i + 1, "image_id": draw(st.integers(1, n_images)), "category_id": draw(st.integers(1, 2)),
               "obb": draw(values), "iscrowd": int(draw(st.integers(0, 5)) == 0)}  # fmt: skip
        if draw(st.integers(0, 3)) == 0:
            ann["area"] = draw(st.sampled_from([0.0, 500.0, 1024.0, 2000.0, 9216.0, 20000.0]))
        anns.append(ann)
    preds = []
    for _ in range(draw(st.integers(0, max_preds))):
        if anns and draw(st.booleans()):
            src = draw(st.sampled_from(anns))
            box = [v + draw(st.sampled_from([0.0, 0.5, -1.0, 2.0])) for v in src["obb"]]
            box[2], box[3] = abs(box[2]), abs(box[3])
            img, cat = src["image_id"], src["category_id"]
        else:
            box, img, cat = draw(values), draw(st.integers(1, n_images)), draw(st.integers(1, 2))
        preds.append({"image_id": img, "category_id": cat, "obb": box, "score": draw(st.floats(0, 1))})
    gt = {"images": [{"id": i, "width": 50, "height": 50} for i in range(1, n_images + 1)],
          "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], "annotations": anns}  # fmt: skip
    return preds, gt


def near_threshold(preds: list, gt: dict) -> bool:
    """Whether some detection's IoU with a ground truth of its image and category is within 1e-9 of a threshold."""
    for p in preds:
        g = [a for a in gt["annotations"] if (a["image_id"], a["category_id"]) == (p["image_id"], p["category_id"])]
        if g:
            ious = obb_iou_matrix([p["obb"]], [a["obb"] for a in g], [bool(a["iscrowd"]) for a in g])
            if (np.abs(ious.reshape(-1, 1) - THRESHOLDS) <= 1e-9).any():
                return True
    return False

"""Cheap hypothesis datasets for the analyses checked against hotcoco (calibration) and vernier (optimal LRP).

Small (1-4 images, 1-3 categories, at most 6 ground truth and 9 detections per image) so that a
hundred examples run in seconds, but aimed at what those analyses read: detection boxes cut from a
ground-truth box at exact IoUs (1, 3/4, 1/2, 1/3 ...), crowd regions, tied scores (a small set, or
two decimals, so scores fall exactly on bin edges and on LRP's score grid), scores outside [0, 1],
duplicates, images and categories without ground truth or without detections.

What is *not* drawn, and why (the analyses' references disagree with pycocotools there, see
deteval/analysis/lrp.py): annotation id 0 (pycocotools' "matched to id 0 reads as unmatched"), the
``ignore`` flag (vernier treats an ignored ground truth as a crowd region), string ids (vernier
refuses them). More than 100 detections in an image is a crafted case (tests/parity/test_lrp.py).
"""

from __future__ import annotations

from hypothesis import strategies as st

SCORE_SETS = ((0.5,), (0.1, 0.5, 0.9), (0.0, 1.0), (0.25, 0.5, 0.75))


@st.composite
def _box(draw) -> list[float]:
    return [draw(st.integers(0, 60)), draw(st.integers(0, 60)), draw(st.integers(1, 40)), draw(st.integers(1, 40))]


def _derived(draw, box: list[float]) -> list[float]:
    x, y, w, h = box
    kind = draw(st.sampled_from(["same", "half_w", "three_q", "double", "shift", "free", "jitter"]))
    if kind == "same":
        return [x, y, w, h]
    if kind == "half_w":  # IoU 1/2
        return [x, y, w / 2, h]
    if kind == "three_q":  # IoU 3/4
        return [x, y, w, h * 0.75]
    if kind == "double":  # IoU 1/2
        return [x, y, 2 * w, h]
    if kind == "shift":  # IoU 1/3
        return [x + w / 2, y, w, h]
    if kind == "jitter":
        return [x + draw(st.floats(-3, 3)), y + draw(st.floats(-3, 3)), w * draw(st.floats(0.7, 1.3)), h]
    return draw(_box())


def _score(draw, mode: str, tied: tuple[float, ...]) -> float:
    if mode == "tied":
        return draw(st.sampled_from(tied))
    if mode == "cents":
        return draw(st.integers(0, 100)) / 100
    if mode == "wide":
        return draw(st.floats(-0.5, 1.5))
    return draw(st.floats(0, 1))


@st.composite
def stats_cases(draw, segm: bool = False) -> tuple[dict, list[dict]]:
    """``(gt, results)``: a COCO ground-truth dict and a results list (never empty)."""
    n_img = draw(st.integers(1, 4))
    n_cat = draw(st.integers(1, 3))
    cat_ids = draw(st.lists(st.integers(1, 90), min_size=n_cat, max_size=n_cat, unique=True))
    mode = draw(st.sampled_from(["tied", "cents", "wide", "free"]))
    tied = draw(st.sampled_from(SCORE_SETS))
    crowd_p = draw(st.sampled_from([0.0, 0.2, 0.4]))
    images, anns, dets = [], [], []
    for i in range(1, n_img + 1):
        images.append({"id": i, "width": 128, "height": 128, "file_name": f"{i}.jpg"})
        boxes = []
        for _ in range(draw(st.integers(0, 6))):
            box = draw(_box())
            crowd = int(draw(st.floats(0, 1)) < crowd_p)
            c = draw(st.sampled_from(cat_ids))
            anns.append({"id": len(anns) + 1, "image_id": i, "category_id": c, "bbox": box,
                         "area": float(box[2] * box[3]), "iscrowd": crowd})  # fmt: skip
            boxes.append((box, c))
        for _ in range(draw(st.integers(0, 9))):
            if boxes and draw(st.booleans()):
                box, c = draw(st.sampled_from(boxes))
                box = _derived(draw, box)
                if draw(st.integers(0, 4)) == 0:
                    c = draw(st.sampled_from(cat_ids))
            else:
                box, c = draw(_box()), draw(st.sampled_from(cat_ids))
            dets.append({"image_id": i, "category_id": c, "bbox": [float(v) for v in box],
                         "score": _score(draw, mode, tied)})  # fmt: skip
    if not dets:
        dets.append({"image_id": 1, "category_id": cat_ids[0], "bbox": [0.0, 0.0, 10.0, 10.0], "score": 0.5})
    cats = [{"id": c, "name": f"cat{c}"} for c in cat_ids]
    gt = {"images": images, "annotations": anns, "categories": cats}
    if segm:
        gt, dets = _as_masks(gt, dets)
    return gt, dets


def _as_masks(gt: dict, dets: list[dict]) -> tuple[dict, list[dict]]:
    """The boxes as rectangle polygons (ground truth) and RLE masks (results, with their box)."""
    from pycocotools import mask as mask_utils

    def poly(b):
        x, y, w, h = b
        return [[x, y, x + w, y, x + w, y + h, x, y + h]]

    for a in gt["annotations"]:
        a["segmentation"] = poly(a["bbox"])
    out = []
    for d in dets:
        rle = mask_utils.merge(mask_utils.frPyObjects(poly(d["bbox"]), 128, 128))
        rle["counts"] = rle["counts"].decode("ascii")
        out.append({**d, "segmentation": rle, "bbox": [float(v) for v in mask_utils.toBbox(rle)]})
    return gt, out

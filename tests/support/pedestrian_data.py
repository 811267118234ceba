"""Generated CityPersons-style inputs built for the reference's quirks (see tests/parity/test_citypersons.py)."""

from __future__ import annotations

import numpy as np

# heights and visibilities on, and a hair either side of, every setup bound
HEIGHTS = [20, 50, 75, 19.999999, 20.000001, 49.99999, 50.00001, 74.99999, 75.00001, 120, 300]
VIS = [0.2, 0.65, 0.19999, 0.20001, 0.64999, 0.65001, 1.0, 0.9, 0.4]
# detection heights at the filter bounds: 50/1.25, 20/1.25, 75*1.25
DT_HEIGHTS = [16.0, 40.0, 93.75, 15.99, 40.01, 93.74, 93.76]


def citypersons_case(seed: int, n_images: int = 12, scale: int = 8) -> tuple[dict, list]:
    """(ground truth dict, results list): sparse unsorted ids, GT id 0, ``height`` differing from the box,
    ``iscrowd`` without ``ignore``, ignore regions, empty images, tied scores, near-duplicate boxes."""
    rng = np.random.default_rng(seed)
    img_ids = [int(v) for v in rng.choice(10_000, n_images, replace=False)]
    images = [{"id": i, "height": 1024, "width": 2048} for i in img_ids]
    anns, results = [], []
    ann_ids = [int(v) for v in rng.permutation(50_000)[: n_images * scale * 2]]
    ann_ids[int(rng.integers(len(ann_ids)))] = 0  # a ground truth with id 0
    k = 0
    for im in img_ids:
        if rng.random() < 0.15:
            continue  # no ground truth here
        for _ in range(int(rng.integers(0, scale))):
            h = float(rng.choice(HEIGHTS)) if rng.random() < 0.6 else float(rng.uniform(10, 400))
            h = int(h) if rng.random() < 0.3 else h
            x, y = float(rng.integers(0, 400)), float(rng.integers(0, 200))
            bh = h if rng.random() < 0.7 else h * float(rng.uniform(0.5, 1.5))  # height is not bbox[3]
            a = {"id": ann_ids[k], "image_id": im, "category_id": int(rng.choice([1, 1, 1, 1, 2, 0])),
                 "bbox": [x, y, round(bh * 0.41, 2), bh], "height": h,
                 "vis_ratio": float(rng.choice(VIS)) if rng.random() < 0.6 else float(rng.uniform(0, 1))}
            r = rng.random()
            if r < 0.15:
                a["ignore"] = 1
            elif r < 0.5:
                a["ignore"] = 0
            if rng.random() < 0.2:
                a["iscrowd"] = 1  # not read
            anns.append(a)
            k += 1
    rng.shuffle(anns)
    # detections: jittered copies of GT boxes (IoU near 0.5 too), random boxes, tied scores
    for im in img_ids:
        mine = [a for a in anns if a["image_id"] == im]
        n = int(rng.integers(0, scale * 2)) if rng.random() > 0.1 else 0
        for _ in range(n):
            if mine and rng.random() < 0.7:
                g = mine[int(rng.integers(len(mine)))]["bbox"]
                j = rng.normal(0, 0.15, 4) * [g[2], g[3], g[2], g[3]]
                box = [g[0] + j[0], g[1] + j[1], max(g[2] + j[2], 1.0), max(g[3] + j[3], 1.0)]
                if rng.random() < 0.2:  # half-overlapping copy: IoU exactly 1/3 or IoA 0.5
                    box = [g[0] + g[2] / 2, g[1], g[2], g[3]]
                if rng.random() < 0.1:
                    box = list(g)
            else:
                w = float(rng.uniform(5, 100))
                box = [float(rng.uniform(0, 500)), float(rng.uniform(0, 300)), w, w / 0.41]
            if rng.random() < 0.15:
                box[3] = float(rng.choice(DT_HEIGHTS))
            score = float(rng.choice([0.5, 0.9, 0.25])) if rng.random() < 0.3 else float(rng.random())
            results.append({"image_id": im, "category_id": int(rng.choice([1, 1, 1, 2])), "bbox": box,
                            "score": score})
    return {"images": images, "categories": [{"id": c, "name": str(c)} for c in (0, 1, 2)],
            "annotations": anns}, results

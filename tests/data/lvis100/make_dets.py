"""Make the detections of tests/data/lvis100 (seeded: rerunning writes the same files).

    python tests/data/lvis100/make_dets.py      # writes dets_bbox.json.gz, dets_segm.json.gz here

For lvis-api's 100-image ground truth (lvis_val_100.json.gz), whose results file is not published:
each annotation found with probability 0.85 by a jittered box (and mask), plus false positives of
categories the image lists as negative (evaluated), as not exhaustively annotated (ignored when
unmatched) and of other categories (dropped by the federated rule); scores on a 0.001 grid, so ties
are common. Six images get more than 300 results, with a block of equal scores across the 300th
place (lvis-api keeps those first in the file), and the four categories with the most results equal
scores across their 3rd and 20th places (Fixed AP's caps in the tests). Masks are RLE from the
jittered GT polygons.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pycocotools.mask as mask_utils

HERE = Path(__file__).resolve().parent


def main() -> None:
    gt = json.loads(gzip.decompress((HERE / "lvis_val_100.json.gz").read_bytes()))
    rng = np.random.default_rng(17)
    imgs = {im["id"]: im for im in gt["images"]}
    cat_ids = [c["id"] for c in gt["categories"]]
    by_img: dict[int, list] = {i: [] for i in imgs}
    for a in gt["annotations"]:
        by_img[a["image_id"]].append(a)
    crowded = set(rng.choice(sorted(imgs), 6, replace=False).tolist())
    bbox, segm = [], []

    def emit(img, cat, box, poly, score):
        x, y, w, h = (float(round(v, 2)) for v in box)
        bbox.append({"image_id": img["id"], "category_id": cat, "bbox": [x, y, w, h], "score": score})
        if poly is None:
            poly = [[x, y, x + w, y, x + w, y + h, x, y + h]]
        rles = mask_utils.frPyObjects(poly, img["height"], img["width"])
        rle = mask_utils.merge(rles)
        rle["counts"] = rle["counts"].decode("ascii")
        segm.append({"image_id": img["id"], "category_id": cat, "segmentation": rle, "score": score})

    def score() -> float:
        return float(np.round(rng.uniform(0.05, 1.0), 3))

    for img_id in sorted(imgs):
        img = imgs[img_id]
        W, H = img["width"], img["height"]
        for a in by_img[img_id]:
            if rng.random() < 0.85:
                x, y, w, h = a["bbox"]
                dx, dy = rng.normal(0, 0.05 * max(w, 1)), rng.normal(0, 0.05 * max(h, 1))
                s = rng.uniform(0.85, 1.15)
                poly = [[float(v + (dx if i % 2 == 0 else dy)) for i, v in enumerate(p)] for p in a["segmentation"]]
                emit(img, a["category_id"], (x + dx, y + dy, w * s, h * s), poly, score())
        neg, nel = img["neg_category_ids"], img["not_exhaustive_category_ids"]
        pools = [neg, nel, cat_ids]
        n_fp = int(rng.integers(1, 8)) if img_id not in crowded else int(rng.integers(330, 420))
        for _ in range(n_fp):
            pool = pools[int(rng.integers(0, 3))] or cat_ids
            cat = int(pool[int(rng.integers(0, len(pool)))])
            w, h = rng.uniform(2, W / 3), rng.uniform(2, H / 3)
            x, y = rng.uniform(0, W - w), rng.uniform(0, H - h)
            emit(img, cat, (x, y, w, h), None, score())
        if img_id in crowded:  # 12 equal scores around the 300th place
            mine = [d for d in bbox if d["image_id"] == img_id]
            tie = sorted((d["score"] for d in mine), reverse=True)[294]
            for k, d in enumerate(mine):
                if abs(d["score"] - tie) < 0.02 and k % 2 == 0:
                    d["score"] = tie
            for d, e in zip(bbox, segm):
                e["score"] = d["score"]
    # per-category ties at the caps tests/data/lvis100/fixed_ap_expected.json uses (3rd and 20th place)
    by_cat: dict[int, list[int]] = {}
    for k, d in enumerate(bbox):
        by_cat.setdefault(d["category_id"], []).append(k)
    for cat in sorted(by_cat, key=lambda c: (-len(by_cat[c]), c))[:4]:
        rows = sorted(by_cat[cat], key=lambda k: -bbox[k]["score"])
        for place in (2, 19):
            tie = bbox[rows[place]]["score"]
            for k in rng.choice(rows[place + 1 :], 3, replace=False).tolist() + [rows[place - 1]]:
                bbox[k]["score"] = segm[k]["score"] = tie
    order = rng.permutation(len(bbox))  # file order is not score order
    for name, dets in (("dets_bbox", bbox), ("dets_segm", segm)):
        text = json.dumps([dets[i] for i in order], separators=(",", ":"))
        (HERE / f"{name}.json.gz").write_bytes(gzip.compress(text.encode(), 9, mtime=0))


if __name__ == "__main__":
    main()

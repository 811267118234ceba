"""Seeded generator of COCO-format ground truth and detection results for benchmarks.

The data imitate a detector on COCO val2017: the 80 real category ids and names, about
7.3 ground-truth boxes per image with a heavy tail, ~1% crowd regions (uncompressed RLE),
mask-like ``area`` (smaller than the box), polygons in ``segmentation``, 640-pixel images, and
detections made of jittered true positives, duplicates, class confusions and background false
positives, with scores rounded to 3 decimals (so ties occur), at most 100 per image, written
grouped by image in score order as detectors write them.

    python benchmarks/make_data.py --preset coco [--out DIR] [--seed 0]

writes ``DIR/gt.json`` and ``DIR/dets.json`` (default ``benchmarks/data/<preset>/``).
Everything is vectorised with numpy; only the final list-of-dicts for the JSON writer is
built in Python.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is expected, json is the slow fallback
    orjson = None
    import json

HERE = Path(__file__).resolve().parent

# (id, name, supercategory) of the 80 COCO 2017 detection categories.
COCO_CATEGORIES = [
    (1, "person", "person"), (2, "bicycle", "vehicle"), (3, "car", "vehicle"),
    (4, "motorcycle", "vehicle"), (5, "airplane", "vehicle"), (6, "bus", "vehicle"),
    (7, "train", "vehicle"), (8, "truck", "vehicle"), (9, "boat", "vehicle"),
    (10, "traffic light", "outdoor"), (11, "fire hydrant", "outdoor"),
    (13, "stop sign", "outdoor"), (14, "parking meter", "outdoor"), (15, "bench", "outdoor"),
    (16, "bird", "animal"), (17, "cat", "animal"), (18, "dog", "animal"),
    (19, "horse", "animal"), (20, "sheep", "animal"), (21, "cow", "animal"),
    (22, "elephant", "animal"), (23, "bear", "animal"), (24, "zebra", "animal"),
    (25, "giraffe", "animal"), (27, "backpack", "accessory"), (28, "umbrella", "accessory"),
    (31, "handbag", "accessory"), (32, "tie", "accessory"), (33, "suitcase", "accessory"),
    (34, "frisbee", "sports"), (35, "skis", "sports"), (36, "snowboard", "sports"),
    (37, "sports ball", "sports"), (38, "kite", "sports"), (39, "baseball bat", "sports"),
    (40, "baseball glove", "sports"), (41, "skateboard", "sports"), (42, "surfboard", "sports"),
    (43, "tennis racket", "sports"), (44, "bottle", "kitchen"), (46, "wine glass", "kitchen"),
    (47, "cup", "kitchen"), (48, "fork", "kitchen"), (49, "knife", "kitchen"),
    (50, "spoon", "kitchen"), (51, "bowl", "kitchen"), (52, "banana", "food"),
    (53, "apple", "food"), (54, "sandwich", "food"), (55, "orange", "food"),
    (56, "broccoli", "food"), (57, "carrot", "food"), (58, "hot dog", "food"),
    (59, "pizza", "food"), (60, "donut", "food"), (61, "cake", "food"),
    (62, "chair", "furniture"), (63, "couch", "furniture"), (64, "potted plant", "furniture"),
    (65, "bed", "furniture"), (67, "dining table", "furniture"), (70, "toilet", "furniture"),
    (72, "tv", "electronic"), (73, "laptop", "electronic"), (74, "mouse", "electronic"),
    (75, "remote", "electronic"), (76, "keyboard", "electronic"),
    (77, "cell phone", "electronic"), (78, "microwave", "appliance"),
    (79, "oven", "appliance"), (80, "toaster", "appliance"), (81, "sink", "appliance"),
    (82, "refrigerator", "appliance"), (84, "book", "indoor"), (85, "clock", "indoor"),
    (86, "vase", "indoor"), (87, "scissors", "indoor"), (88, "teddy bear", "indoor"),
    (89, "hair drier", "indoor"), (90, "toothbrush", "indoor"),
]
assert len(COCO_CATEGORIES) == 80


@dataclass(frozen=True)
class Preset:
    n_images: int
    n_categories: int  # 80 means the real COCO ids; otherwise ids 1..n
    gt_per_image: float  # mean of a negative binomial (heavy tail like COCO)
    dense: bool  # True: top-100 per image (score floor 0.001); False: a score threshold
    dets_slope: float = 0.0  # sparse: detections per image = slope * n_gt + Poisson(base)
    dets_base: float = 0.0
    score_floor: float = 0.001
    polygons: bool = True  # Objects365 is box-only, COCO has masks


PRESETS = {
    "small": Preset(500, 80, 7.3, dense=True),
    "coco": Preset(5000, 80, 7.3, dense=True),
    "coco-sparse": Preset(5000, 80, 7.3, dense=False, dets_slope=1.8, dets_base=13.0,
                          score_floor=0.05),
    "o365": Preset(80000, 365, 13.0, dense=False, dets_slope=0.8, dets_base=4.5,
                   score_floor=0.05, polygons=False),
}

MAX_DETS = 100


def _categories(n: int, rng: np.random.Generator):
    """Category table and per-category frequency weights (long-tailed, person-heavy)."""
    if n == 80:
        cats = [{"supercategory": s, "id": i, "name": nm} for i, nm, s in COCO_CATEGORIES]
        w = rng.lognormal(0.0, 1.0, n)
        w[0] = w[1:].sum() * 0.43  # person is ~30% of COCO instances
    else:
        cats = [{"supercategory": "object", "id": i + 1, "name": f"object_{i + 1}"}
                for i in range(n)]
        w = rng.lognormal(0.0, 1.6, n)
    ids = np.array([c["id"] for c in cats], dtype=np.int64)
    return cats, ids, w / w.sum()


def _sizes(rng, n):
    """Image (width, height) around 640x480, either orientation."""
    short = rng.choice([480, 427, 426, 424, 428, 360, 512, 640, 478, 500], n,
                       p=[.46, .16, .05, .05, .04, .05, .04, .08, .03, .04])
    land = rng.random(n) < 0.72
    w = np.where(land, 640, short)
    h = np.where(land, short, 640)
    return w.astype(np.float64), h.astype(np.float64)


def _boxes_in(rng, n, iw, ih, log_med, log_sd):
    """Random boxes [x, y, w, h] inside images of size (iw, ih); sqrt(area) log-normal."""
    side = np.exp(rng.normal(log_med, log_sd, n))
    aspect = np.exp(rng.normal(0.0, 0.55, n))
    bw = np.clip(side * np.sqrt(aspect), 1.0, iw)
    bh = np.clip(side / np.sqrt(aspect), 1.0, ih)
    x = rng.random(n) * (iw - bw)
    y = rng.random(n) * (ih - bh)
    return x, y, bw, bh


def _clip_round(x, y, w, h, iw, ih):
    """Clip boxes to the image and round to 2 decimals, keeping w, h >= 0.01."""
    x1 = np.clip(x, 0, iw)
    y1 = np.clip(y, 0, ih)
    x2 = np.clip(x + w, 0, iw)
    y2 = np.clip(y + h, 0, ih)
    x1 = np.round(np.minimum(x1, iw - 0.01), 2)
    y1 = np.round(np.minimum(y1, ih - 0.01), 2)
    w = np.maximum(np.round(x2 - x1, 2), 0.01)
    h = np.maximum(np.round(y2 - y1, 2), 0.01)
    return np.stack([x1, y1, w, h], axis=1)


def _polygons(rng, box, npts):
    """One star-shaped polygon of npts[i] points inside each box, as lists of 2-dp floats."""
    n, k = len(box), 16
    ang = np.sort(rng.random((n, k)), axis=1) * 2 * np.pi
    rad = rng.uniform(0.55, 1.0, (n, k))
    cx = box[:, 0:1] + box[:, 2:3] / 2
    cy = box[:, 1:2] + box[:, 3:4] / 2
    px = np.round(cx + np.cos(ang) * rad * box[:, 2:3] / 2, 2)
    py = np.round(cy + np.sin(ang) * rad * box[:, 3:4] / 2, 2)
    xy = np.empty((n, 2 * k))
    xy[:, 0::2] = px
    xy[:, 1::2] = py
    rows = xy.tolist()
    return [[r[: 2 * m]] for r, m in zip(rows, npts.tolist())]


def _crowd_rle(box_int, iw, ih):
    """Uncompressed column-major RLE of the integer box region (what COCO crowd GT carry)."""
    out = []
    for (x0, y0, bw, bh), w, h in zip(box_int.tolist(), iw.tolist(), ih.tolist()):
        w, h = int(w), int(h)
        counts = [x0 * h + y0]
        for _ in range(bw - 1):
            counts += [bh, h - bh]
        counts.append(bh)
        counts.append(w * h - sum(counts))
        out.append(counts)
    return out


def _sample_cats(rng, n, weights):
    return rng.choice(len(weights), n, p=weights)


def generate(preset: Preset, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_img = preset.n_images
    cats, cat_ids, cat_w = _categories(preset.n_categories, rng)
    n_cat = len(cats)

    # ---------------- images ----------------
    img_ids = np.sort(rng.choice(np.arange(1, 600_000), n_img, replace=False))
    img_ids = rng.permutation(img_ids)  # COCO's images list is not in id order
    iw, ih = _sizes(rng, n_img)

    # ---------------- ground truth ----------------
    nb_n = 1.3
    ngt = rng.negative_binomial(nb_n, nb_n / (nb_n + preset.gt_per_image), n_img)
    ngt = np.minimum(ngt, 90)
    g_img = np.repeat(np.arange(n_img), ngt)
    n_gt = len(g_img)
    # objects in one image share a few categories: draw a per-image "scene" of 1-4 classes
    g_cat = _sample_cats(rng, n_gt, cat_w)
    scene = _sample_cats(rng, n_img * 3, cat_w).reshape(n_img, 3)
    use_scene = rng.random(n_gt) < 0.55
    g_cat = np.where(use_scene, scene[g_img, rng.integers(0, 3, n_gt)], g_cat)
    crowd = rng.random(n_gt) < 0.01
    gx, gy, gw, gh = _boxes_in(rng, n_gt, iw[g_img], ih[g_img], np.log(50.0), 1.05)
    # crowd regions are big
    cx, cy, cw, ch = _boxes_in(rng, n_gt, iw[g_img], ih[g_img], np.log(180.0), 0.5)
    gx, gy = np.where(crowd, np.floor(cx), gx), np.where(crowd, np.floor(cy), gy)
    gw, gh = np.where(crowd, np.floor(cw), gw), np.where(crowd, np.floor(ch), gh)
    gbox = _clip_round(gx, gy, gw, gh, iw[g_img], ih[g_img])
    garea = np.round(gbox[:, 2] * gbox[:, 3] * rng.uniform(0.4, 0.9, n_gt), 2)
    garea = np.where(crowd, gbox[:, 2] * gbox[:, 3], garea)  # crowd RLE area = its pixels

    # ---------------- detections ----------------
    # Every row: (image, category, box, score). Sources below are concatenated, then each
    # image keeps its top-scoring `target` detections (at most 100).
    ok = ~crowd
    side = np.sqrt(gbox[:, 2] * gbox[:, 3])
    p_det = np.clip(0.62 + 0.12 * np.log(side / 16 + 1e-9), 0.3, 0.98)
    det_gt = np.flatnonzero(ok & (rng.random(n_gt) < p_det))
    # duplicates (NMS leftovers), more for big objects; and class confusions
    n_dup = rng.poisson(np.clip(side[det_gt] / 120, 0.1, 2.5))
    dup_gt = np.repeat(det_gt, n_dup)
    conf_gt = det_gt[rng.random(len(det_gt)) < 0.18]
    src_gt = np.concatenate([det_gt, dup_gt, conf_gt])
    kind = np.repeat([0, 1, 2], [len(det_gt), len(dup_gt), len(conf_gt)])
    m = len(src_gt)
    # localisation quality: sigma of the jitter relative to box size
    sig = np.where(kind == 0, rng.gamma(2.0, 0.028, m), rng.gamma(2.0, 0.08, m))
    sig = sig * np.where(side[src_gt] < 32, 1.6, 1.0)
    bw, bh = gbox[src_gt, 2], gbox[src_gt, 3]
    dw = bw * np.exp(rng.normal(0, sig))
    dh = bh * np.exp(rng.normal(0, sig))
    dx = gbox[src_gt, 0] + bw / 2 + rng.normal(0, sig) * bw - dw / 2
    dy = gbox[src_gt, 1] + bh / 2 + rng.normal(0, sig) * bh - dh / 2
    t_img = g_img[src_gt]
    t_cat = g_cat[src_gt].copy()
    wrong = kind == 2
    t_cat[wrong] = (t_cat[wrong] + rng.integers(1, n_cat, wrong.sum())) % n_cat
    quality = np.exp(-6.0 * sig)  # 1 for a perfect box
    base = rng.beta(4.0, 1.6, m) * (0.35 + 0.65 * quality)
    t_score = np.where(kind == 0, base,
                       np.where(kind == 1, base * rng.uniform(0.05, 0.6, m),
                                rng.beta(1.5, 5.0, m)))
    t_box = _clip_round(dx, dy, dw, dh, iw[t_img], ih[t_img])

    # how many detections each image gets
    if preset.dense:
        target = np.where(rng.random(n_img) < 0.93, MAX_DETS, rng.integers(15, MAX_DETS, n_img))
    else:
        target = np.round(preset.dets_slope * ngt + rng.poisson(preset.dets_base, n_img))
    target = np.clip(target, 0, MAX_DETS).astype(np.int64)

    # background false positives fill each image up to its target
    per_img_true = np.bincount(t_img, minlength=n_img)
    n_bg = np.maximum(target - per_img_true, 0) + rng.poisson(2, n_img) * (target > 0)
    b_img = np.repeat(np.arange(n_img), n_bg)
    nb = len(b_img)
    bx, by, bww, bhh = _boxes_in(rng, nb, iw[b_img], ih[b_img], np.log(60.0), 1.0)
    b_box = _clip_round(bx, by, bww, bhh, iw[b_img], ih[b_img])
    b_cat = _sample_cats(rng, nb, cat_w)
    near_scene = rng.random(nb) < 0.5
    b_cat = np.where(near_scene, scene[b_img, rng.integers(0, 3, nb)], b_cat)
    if preset.dense:
        b_score = rng.exponential(0.035, nb) * np.where(rng.random(nb) < 0.08, 8.0, 1.0)
    else:
        b_score = preset.score_floor + rng.exponential(0.09, nb)

    d_img = np.concatenate([t_img, b_img])
    d_cat = np.concatenate([t_cat, b_cat])
    d_box = np.concatenate([t_box, b_box])
    d_score = np.round(np.clip(np.concatenate([t_score, b_score]), preset.score_floor, 1.0), 3)
    d_score = np.maximum(d_score, preset.score_floor)

    # grouped by image (in the GT's image order), score-descending inside an image
    order = np.lexsort((-d_score, d_img))
    d_img, d_cat, d_box, d_score = d_img[order], d_cat[order], d_box[order], d_score[order]
    starts = np.searchsorted(d_img, np.arange(n_img))
    rank = np.arange(len(d_img)) - starts[d_img]
    keep = rank < target[d_img]
    d_img, d_cat, d_box, d_score = d_img[keep], d_cat[keep], d_box[keep], d_score[keep]

    # ---------------- JSON documents ----------------
    images = [
        {"license": 1, "file_name": f"{i:012d}.jpg", "height": int(h), "width": int(w), "id": i}
        for i, w, h in zip(img_ids.tolist(), iw.tolist(), ih.tolist())
    ]
    # annotations appear in no particular order in COCO's file
    ann_order = rng.permutation(n_gt)
    a_img = img_ids[g_img[ann_order]].tolist()
    a_cat = cat_ids[g_cat[ann_order]].tolist()
    a_box = gbox[ann_order].tolist()
    a_area = garea[ann_order].tolist()
    a_crowd = crowd[ann_order].astype(int).tolist()
    if preset.polygons:
        npts = rng.integers(8, 17, n_gt)
        segs = _polygons(rng, gbox[ann_order], npts[ann_order])
        ci = np.flatnonzero(crowd[ann_order])
        ci_img = g_img[ann_order][ci]
        rles = _crowd_rle(gbox[ann_order][ci].astype(np.int64), iw[ci_img], ih[ci_img])
        for j, counts, w, h in zip(ci.tolist(), rles, iw[ci_img].tolist(), ih[ci_img].tolist()):
            segs[j] = {"counts": counts, "size": [int(h), int(w)]}
    else:
        segs = None
    annotations = []
    for k in range(n_gt):
        ann = {
            "segmentation": segs[k] if segs is not None else None,
            "area": a_area[k], "iscrowd": a_crowd[k], "image_id": a_img[k],
            "bbox": a_box[k], "category_id": a_cat[k], "id": k + 1,
        }
        if segs is None:
            del ann["segmentation"]
        annotations.append(ann)
    gt = {
        "info": {"description": "deteval synthetic benchmark data", "version": "1.0",
                 "year": 2024, "contributor": "deteval", "date_created": "2024-01-01"},
        "licenses": [{"url": "", "id": 1, "name": "synthetic"}],
        "images": images, "annotations": annotations, "categories": cats,
    }
    r_img = img_ids[d_img].tolist()
    r_cat = cat_ids[d_cat].tolist()
    r_box = d_box.tolist()
    r_score = d_score.tolist()
    dets = [
        {"image_id": i, "category_id": c, "bbox": b, "score": s}
        for i, c, b, s in zip(r_img, r_cat, r_box, r_score)
    ]
    return gt, dets


def _dump(obj, path: Path):
    if orjson is not None:
        path.write_bytes(orjson.dumps(obj))
    else:
        path.write_text(json.dumps(obj, separators=(",", ":")))


def make(preset_name: str, out: Path, seed: int = 0, quiet: bool = False) -> Path:
    t0 = time.perf_counter()
    gt, dets = generate(PRESETS[preset_name], seed)
    out.mkdir(parents=True, exist_ok=True)
    _dump(gt, out / "gt.json")
    _dump(dets, out / "dets.json")
    if not quiet:
        n_img = len(gt["images"])
        n_crowd = sum(a["iscrowd"] for a in gt["annotations"])
        print(f"{preset_name}: {n_img} images, {len(gt['annotations'])} GT "
              f"({len(gt['annotations']) / n_img:.2f}/image, {n_crowd} crowd), "
              f"{len(dets)} detections ({len(dets) / n_img:.1f}/image) -> {out} "
              f"in {time.perf_counter() - t0:.1f} s")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="coco")
    ap.add_argument("--out", type=Path, help="output dir (default benchmarks/data/<preset>)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    make(a.preset, a.out or HERE / "data" / a.preset, a.seed)


if __name__ == "__main__":
    main()

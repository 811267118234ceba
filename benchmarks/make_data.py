"""Seeded generator of COCO-format ground truth and detection results for benchmarks.

The data imitate a detector on COCO val2017: the 80 real category ids and names, about
7.3 ground-truth boxes per image with a heavy tail, ~1% crowd regions (uncompressed RLE),
mask-like ``area`` (smaller than the box), polygons in ``segmentation``, 640-pixel images, and
detections made of jittered true positives, duplicates, class confusions and background false
positives, with scores rounded to 3 decimals (so ties occur), at most 100 per image, written
grouped by image in score order as detectors write them.

The ``*-segm`` presets have the same ground truth and boxes as their bbox twins (``small``,
``coco``) and give every detection a mask as well, as Mask R-CNN's results files do: the box
plus a ``segmentation`` in compressed RLE (``counts`` a str, what ``pycocotools.mask.encode``
writes) at the image's size. The ``*-kp`` presets are COCO person keypoints: 17 keypoints per
person, people without any labelled, and a top-down pose estimator's results (keypoints and a
score, no box).

    python benchmarks/make_data.py --preset coco [--out DIR] [--seed 0]

writes ``DIR/gt.json`` and ``DIR/dets.json`` (default ``benchmarks/data/<preset>/``).
Everything is vectorised with numpy (masks are rasterised and RLE-encoded in chunks of image
columns); only the final list-of-dicts for the JSON writer is built in Python.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import make_lvis
import numpy as np
from make_shapes import boxes_in, clip_round, crowd_rle, mask_rles, polygons, sizes, star

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
    masks: bool = False  # detections carry a compressed-RLE `segmentation` (instance segmentation)

    @property
    def iou_type(self) -> str:
        return "segm" if self.masks else "bbox"


PRESETS = {
    "small": Preset(500, 80, 7.3, dense=True),
    "coco": Preset(5000, 80, 7.3, dense=True),
    "coco-sparse": Preset(5000, 80, 7.3, dense=False, dets_slope=1.8, dets_base=13.0,
                          score_floor=0.05),
    "o365": Preset(80000, 365, 13.0, dense=False, dets_slope=0.8, dets_base=4.5,
                   score_floor=0.05, polygons=False),
    # the same ground truth and boxes as small / coco, the detections with masks
    "small-segm": Preset(500, 80, 7.3, dense=True, masks=True),
    "coco-segm": Preset(5000, 80, 7.3, dense=True, masks=True),
    # coco-segm's ground truth with coco-sparse's detections: the pair splits mask memory and time between them
    "coco-segm-sparse": Preset(5000, 80, 7.3, dense=False, dets_slope=1.8, dets_base=13.0, score_floor=0.05,
                               masks=True),
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
    iw, ih = sizes(rng, n_img)

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
    gx, gy, gw, gh = boxes_in(rng, n_gt, iw[g_img], ih[g_img], np.log(50.0), 1.05)
    # crowd regions are big
    cx, cy, cw, ch = boxes_in(rng, n_gt, iw[g_img], ih[g_img], np.log(180.0), 0.5)
    gx, gy = np.where(crowd, np.floor(cx), gx), np.where(crowd, np.floor(cy), gy)
    gw, gh = np.where(crowd, np.floor(cw), gw), np.where(crowd, np.floor(ch), gh)
    gbox = clip_round(gx, gy, gw, gh, iw[g_img], ih[g_img])
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
    t_box = clip_round(dx, dy, dw, dh, iw[t_img], ih[t_img])

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
    bx, by, bww, bhh = boxes_in(rng, nb, iw[b_img], ih[b_img], np.log(60.0), 1.0)
    b_box = clip_round(bx, by, bww, bhh, iw[b_img], ih[b_img])
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
    d_src = np.concatenate([src_gt, np.full(nb, -1)])  # the GT a detection comes from, -1: none
    d_sig = np.concatenate([sig, np.zeros(nb)])
    d_score = np.round(np.clip(np.concatenate([t_score, b_score]), preset.score_floor, 1.0), 3)
    d_score = np.maximum(d_score, preset.score_floor)

    # grouped by image (in the GT's image order), score-descending inside an image
    order = np.lexsort((-d_score, d_img))
    d_img, d_cat, d_box, d_score = d_img[order], d_cat[order], d_box[order], d_score[order]
    starts = np.searchsorted(d_img, np.arange(n_img))
    rank = np.arange(len(d_img)) - starts[d_img]
    keep = rank < target[d_img]
    d_img, d_cat, d_box, d_score = d_img[keep], d_cat[keep], d_box[keep], d_score[keep]
    d_src, d_sig = d_src[order][keep], d_sig[order][keep]

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
        segs, qx, qy = polygons(rng, gbox[ann_order], npts[ann_order], points=True)
        ci = np.flatnonzero(crowd[ann_order])
        ci_img = g_img[ann_order][ci]
        rles = crowd_rle(gbox[ann_order][ci].astype(np.int64), iw[ci_img], ih[ci_img])
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
    if preset.masks:
        # after every draw above, from its own stream: GT and boxes stay those of the bbox preset
        inv = np.argsort(ann_order)
        rles = _detection_masks(np.random.default_rng([seed, 1]), d_box, d_src, d_sig,
                                gbox, qx[inv], qy[inv], npts, iw[d_img], ih[d_img])
        for det, counts, h, w in zip(dets, rles, ih[d_img].astype(int).tolist(),
                                     iw[d_img].astype(int).tolist()):
            det["segmentation"] = {"size": [h, w], "counts": counts}
    return gt, dets


MASK_FOLLOWS_BOX = 0.4  # how much of the box's error a detection's mask repeats (a mask head corrects some)
MASK_NOISE = (0.2, 0.015)  # vertex noise, relative to the box: a * box jitter sigma + b


def _detection_masks(rng, d_box, d_src, d_sig, gbox, gx, gy, gnpts, iw, ih):
    """A mask per detection, as compressed RLE strings at the image's size.

    A detection made from a GT object gets that object's polygon carried from the GT box into
    its own box, each vertex moved by noise that grows with the box's localisation error (so
    mask IoU < box IoU, as for Mask R-CNN); a background detection gets a star-shaped polygon
    inside its box.
    """
    n = len(d_box)
    px, py = np.full((n, 16), np.nan), np.full((n, 16), np.nan)
    tp = np.flatnonzero(d_src >= 0)
    g = d_src[tp]
    box = gbox[g] + MASK_FOLLOWS_BOX * (d_box[tp] - gbox[g])
    u = (gx[g] - gbox[g, 0:1]) / np.maximum(gbox[g, 2:3], 1e-9)
    v = (gy[g] - gbox[g, 1:2]) / np.maximum(gbox[g, 3:4], 1e-9)
    noise = (MASK_NOISE[0] * d_sig[tp] + MASK_NOISE[1])[:, None]
    unused = np.arange(16) >= gnpts[g][:, None]
    tx = box[:, 0:1] + (u + rng.normal(0, 1, u.shape) * noise) * box[:, 2:3]
    ty = box[:, 1:2] + (v + rng.normal(0, 1, v.shape) * noise) * box[:, 3:4]
    tx[unused] = ty[unused] = np.nan
    px[tp], py[tp] = tx, ty
    bg = np.flatnonzero(d_src < 0)
    px[bg], py[bg] = star(rng, d_box[bg], rng.integers(8, 17, len(bg)))
    return mask_rles(px, py, ih, iw)


# ---------------------------------------------------------------------------------------------
# Person keypoints: COCO person_keypoints ground truth and a top-down pose estimator's results
# ---------------------------------------------------------------------------------------------
KP_NAMES = ["nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder",
            "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
            "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle"]
KP_SKELETON = [[16, 14], [14, 12], [17, 15], [15, 13], [12, 13], [6, 12], [7, 13], [6, 7],
               [6, 8], [7, 9], [8, 10], [9, 11], [2, 3], [1, 2], [1, 3], [2, 4], [3, 5], [4, 6],
               [5, 7]]
# COCO's per-keypoint OKS sigmas (how precisely people agree on each keypoint): the noise scale
KP_SIGMAS = np.array([.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07, 1.07, .87,
                      .87, .89, .89]) / 10
# a person facing the camera, (x, y) as fractions of the box (their left on the image's right)
KP_POSE = np.array([[.50, .08], [.54, .06], [.46, .06], [.59, .08], [.41, .08], [.70, .22],
                    [.30, .22], [.80, .38], [.20, .38], [.84, .52], [.16, .52], [.62, .52],
                    [.38, .52], [.62, .74], [.38, .74], [.62, .95], [.38, .95]])
KP_LABEL_P = np.array([.85, .8, .8, .55, .55, .9, .9, .8, .8, .75, .75, .85, .85, .75, .75, .7, .7])


@dataclass(frozen=True)
class KeypointPreset:
    n_images: int
    persons_per_image: float = 4.0  # mean (heavy tail); every image has at least one person
    fp_per_image: float = 1.5  # mean low-scoring poses per image, besides 0.5 per person (drawn last)
    iou_type = "keypoints"


PRESETS.update({
    "small-kp": KeypointPreset(500),
    "person-kp": KeypointPreset(5000),
    # person-kp's ground truth and poses with 15 more false positives per image: the pair splits keypoint memory
    # and time between ground truth and detections
    "person-kp-dense": KeypointPreset(5000, fp_per_image=16.5),
})
PRESETS.update(make_lvis.PRESETS)  # "lvis" (LVIS v1 val scale), "medium-lvis" (a quarter), "small-lvis"


def _poses(rng, box):
    """The 17 true joint positions (n, 17) x and y of a person in each box, varied and tilted."""
    n = len(box)
    u = KP_POSE[None, :, 0] + rng.normal(0, 0.04, (n, 17))
    v = KP_POSE[None, :, 1] + rng.normal(0, 0.03, (n, 17))
    arms = slice(7, 11)
    u[:, arms] += rng.normal(0, 0.1, (n, 4))
    v[:, arms] += rng.normal(0, 0.08, (n, 4))
    back = rng.random(n) < 0.3  # seen from behind: their left on the image's left
    u[back] = 1 - u[back]
    x = box[:, 0:1] + u * box[:, 2:3]
    y = box[:, 1:2] + v * box[:, 3:4]
    cx, cy = box[:, 0:1] + box[:, 2:3] / 2, box[:, 1:2] + box[:, 3:4] / 2
    t = rng.normal(0, 0.12, (n, 1))
    return (cx + (x - cx) * np.cos(t) - (y - cy) * np.sin(t),
            cy + (x - cx) * np.sin(t) + (y - cy) * np.cos(t))


def generate_keypoints(preset: KeypointPreset, seed: int = 0):
    """COCO person keypoints GT (17 keypoints, ~40% of people without any) and the results of
    a top-down pose estimator: one pose per detected person, duplicates, false positives."""
    rng = np.random.default_rng(seed)
    n_img = preset.n_images
    img_ids = rng.permutation(np.sort(rng.choice(np.arange(1, 600_000), n_img, replace=False)))
    iw, ih = sizes(rng, n_img)

    # ---------------- ground truth ----------------
    nb_n, extra = 0.8, preset.persons_per_image - 1
    npers = 1 + np.minimum(rng.negative_binomial(nb_n, nb_n / (nb_n + extra), n_img), 39)
    g_img = np.repeat(np.arange(n_img), npers)
    n = len(g_img)
    crowd = rng.random(n) < 0.012
    side = np.exp(rng.normal(np.log(75.0), 0.95, n))
    tall = np.exp(rng.normal(np.log(2.1), 0.35, n))  # h / w of a person
    w_, h_ = iw[g_img], ih[g_img]
    bw = np.clip(side / np.sqrt(tall), 2.0, w_)
    bh = np.clip(side * np.sqrt(tall), 2.0, h_)
    bx, by = rng.random(n) * (w_ - bw), rng.random(n) * (h_ - bh)
    cx, cy, cw, ch = boxes_in(rng, n, w_, h_, np.log(200.0), 0.4)
    bx, by = np.where(crowd, np.floor(cx), bx), np.where(crowd, np.floor(cy), by)
    bw, bh = np.where(crowd, np.floor(cw), bw), np.where(crowd, np.floor(ch), bh)
    gbox = clip_round(bx, by, bw, bh, w_, h_)
    garea = np.round(gbox[:, 2] * gbox[:, 3] * rng.uniform(0.45, 0.7, n), 2)
    garea = np.where(crowd, gbox[:, 2] * gbox[:, 3], garea)
    tx, ty = _poses(rng, gbox)
    # labelled keypoints: COCO annotators skipped most small people (num_keypoints 0)
    p_ann = np.where(garea < 32 ** 2, 0.2, np.where(garea < 96 ** 2, 0.75, 0.95))
    annotated = ~crowd & (rng.random(n) < p_ann)
    truncated = rng.random(n) < 0.15  # legs out of the picture
    inside = (tx >= 0) & (tx < w_[:, None]) & (ty >= 0) & (ty < h_[:, None])
    lab = annotated[:, None] & inside & (rng.random((n, 17)) < KP_LABEL_P)
    lab[truncated, 13:] = False
    vis = np.where(rng.random((n, 17)) < 0.2, 1, 2)
    kp = np.zeros((n, 17, 3), np.int64)
    kp[..., 0] = np.where(lab, np.round(tx), 0)
    kp[..., 1] = np.where(lab, np.round(ty), 0)
    kp[..., 2] = np.where(lab, vis, 0)
    num_kp = lab.sum(axis=1)

    # ---------------- detections ----------------
    s = np.sqrt(garea)
    p_det = np.clip(0.62 + 0.12 * np.log(s / 16 + 1e-9), 0.3, 0.97)
    det_gt = np.flatnonzero(~crowd & (rng.random(n) < p_det))
    dup_gt = det_gt[rng.random(len(det_gt)) < 0.1]
    src = np.concatenate([det_gt, dup_gt])
    dup = np.repeat([False, True], [len(det_gt), len(dup_gt)])
    m = len(src)
    # pose error in OKS units: a keypoint's expected -log(similarity) is err**2
    err = np.where(dup, rng.gamma(2.0, 0.5, m), rng.gamma(2.0, 0.12, m))
    err = err * np.where(s[src] < 32, 1.5, 1.0)
    tau = (err * s[src])[:, None] * 2 * KP_SIGMAS[None, :]
    dx = rng.normal(0, 1, (m, 17)) * tau
    dy = rng.normal(0, 1, (m, 17)) * tau
    wild = rng.random((m, 17)) < 0.03  # a limb on the wrong person, left/right swaps ...
    dx = np.where(wild, rng.normal(0, 0.35, (m, 17)) * s[src][:, None], dx)
    dy = np.where(wild, rng.normal(0, 0.35, (m, 17)) * s[src][:, None], dy)
    t_img = g_img[src]
    t_x, t_y = tx[src] + dx, ty[src] + dy
    t_conf = rng.beta(5.0, 2.0, (m, 17)) * np.exp(-0.3 * err)[:, None]
    t_score = rng.beta(6.0, 1.5, m) * (0.5 + 0.5 * np.exp(-err))
    t_score = np.where(dup, t_score * rng.uniform(0.2, 0.7, m), t_score)

    n_fp = rng.poisson(preset.fp_per_image + 0.5 * npers)  # low-scoring poses on background and crowd boxes
    f_img = np.repeat(np.arange(n_img), n_fp)
    nf = len(f_img)
    f_side = np.exp(rng.normal(np.log(50.0), 0.9, nf))
    f_tall = np.exp(rng.normal(np.log(2.0), 0.4, nf))
    fw = np.clip(f_side / np.sqrt(f_tall), 2.0, iw[f_img])
    fh = np.clip(f_side * np.sqrt(f_tall), 2.0, ih[f_img])
    f_box = np.stack([rng.random(nf) * (iw[f_img] - fw), rng.random(nf) * (ih[f_img] - fh),
                      fw, fh], axis=1)
    f_x, f_y = _poses(rng, f_box)
    f_conf = rng.beta(2.0, 4.0, (nf, 17))
    f_score = rng.beta(1.5, 6.0, nf)

    d_img = np.concatenate([t_img, f_img])
    d_x = np.round(np.clip(np.concatenate([t_x, f_x]), 0, iw[d_img, None] - 1), 2)
    d_y = np.round(np.clip(np.concatenate([t_y, f_y]), 0, ih[d_img, None] - 1), 2)
    d_conf = np.round(np.concatenate([t_conf, f_conf]), 3)
    d_score = np.clip(np.round(np.concatenate([t_score, f_score]), 3), 0.001, 1.0)
    order = np.lexsort((-d_score, d_img))

    # ---------------- JSON documents ----------------
    images = [
        {"license": 1, "file_name": f"{i:012d}.jpg", "height": int(h), "width": int(w), "id": i}
        for i, w, h in zip(img_ids.tolist(), iw.tolist(), ih.tolist())
    ]
    ann_order = rng.permutation(n)
    npts = rng.integers(8, 17, n)
    segs = polygons(rng, gbox[ann_order], npts[ann_order])
    ci = np.flatnonzero(crowd[ann_order])
    ci_img = g_img[ann_order][ci]
    rles = crowd_rle(gbox[ann_order][ci].astype(np.int64), iw[ci_img], ih[ci_img])
    for j, counts, w, h in zip(ci.tolist(), rles, iw[ci_img].tolist(), ih[ci_img].tolist()):
        segs[j] = {"counts": counts, "size": [int(h), int(w)]}
    a_kp = kp[ann_order].reshape(n, 51).tolist()
    a_num = num_kp[ann_order].tolist()
    a_area = garea[ann_order].tolist()
    a_crowd = crowd[ann_order].astype(int).tolist()
    a_img = img_ids[g_img[ann_order]].tolist()
    a_box = gbox[ann_order].tolist()
    annotations = [
        {"segmentation": segs[k], "num_keypoints": a_num[k], "area": a_area[k],
         "iscrowd": a_crowd[k], "keypoints": a_kp[k], "image_id": a_img[k], "bbox": a_box[k],
         "category_id": 1, "id": k + 1}
        for k in range(n)
    ]
    gt = {
        "info": {"description": "deteval synthetic benchmark data (person keypoints)",
                 "version": "1.0", "year": 2024, "contributor": "deteval",
                 "date_created": "2024-01-01"},
        "licenses": [{"url": "", "id": 1, "name": "synthetic"}],
        "images": images, "annotations": annotations,
        "categories": [{"supercategory": "person", "id": 1, "name": "person",
                        "keypoints": KP_NAMES, "skeleton": KP_SKELETON}],
    }
    d_kp = np.stack([d_x[order], d_y[order], d_conf[order]], axis=2).reshape(-1, 51).tolist()
    dets = [
        {"image_id": i, "category_id": 1, "keypoints": k, "score": sc}
        for i, k, sc in zip(img_ids[d_img[order]].tolist(), d_kp, d_score[order].tolist())
    ]
    return gt, dets


def _dump(obj, path: Path):
    if orjson is not None:
        path.write_bytes(orjson.dumps(obj))
    else:
        path.write_text(json.dumps(obj, separators=(",", ":")))


def make(preset_name: str, out: Path, seed: int = 0, quiet: bool = False) -> Path:
    t0 = time.perf_counter()
    preset = PRESETS[preset_name]
    gen = generate_keypoints if isinstance(preset, KeypointPreset) else generate
    if isinstance(preset, make_lvis.LvisPreset):
        gen = make_lvis.generate_lvis
    gt, dets = gen(preset, seed)
    out.mkdir(parents=True, exist_ok=True)
    _dump(gt, out / "gt.json")
    _dump(dets, out / "dets.json")
    if not quiet:
        n_img = len(gt["images"])
        n_crowd = sum(a.get("iscrowd", 0) for a in gt["annotations"])
        print(f"{preset_name}: {n_img} images, {len(gt['annotations'])} GT "
              f"({len(gt['annotations']) / n_img:.2f}/image, {n_crowd} crowd), "
              f"{len(dets)} detections ({len(dets) / n_img:.1f}/image) -> {out} "
              f"in {time.perf_counter() - t0:.1f} s")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", choices=sorted([*PRESETS, "dota", "dota-obb", "openimages"]), default="coco")
    ap.add_argument("--out", type=Path, help="output dir (default benchmarks/data/<preset>)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--images", type=int, default=100_000, help="openimages: number of images (default 100,000)")
    a = ap.parse_args(argv)
    if a.preset == "openimages":  # Open Images CSVs and hierarchy: make_openimages.py
        from make_openimages import make_openimages

        make_openimages(a.out or HERE / "data" / "openimages", a.seed, n_images=a.images)
        return
    if a.preset == "dota":  # DOTA's folders of text files, not COCO JSON: make_dota.py
        from make_dota import make_dota

        make_dota(a.out or HERE / "data" / "dota", a.seed)
        return
    if a.preset == "dota-obb":  # COCO JSON with oriented boxes (hotcoco's "obb")
        from make_dota import make_dota_obb

        make_dota_obb(a.out or HERE / "data" / "dota-obb", a.seed)
        return
    make(a.preset, a.out or HERE / "data" / a.preset, a.seed)


if __name__ == "__main__":
    main()

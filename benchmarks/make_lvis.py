"""LVIS-shaped synthetic data for benchmarks/make_data.py's ``lvis`` presets (``--preset lvis``, ``small-lvis``).

At LVIS v1 val scale (``lvis``): 19,809 images, 1,203 categories with LVIS v1's rare/common/frequent
counts (337/461/405), about 244k ground-truth boxes (12.3 per image, mostly of frequent categories),
per-image ``neg_category_ids`` (about 6) and ``not_exhaustive_category_ids`` (about 1, among the
image's own categories), and 300 detections per image (5.9M): each object found by a few jittered
boxes, the rest spread over the image's categories, its negatives and any category, as a detector's
top 300 across 1,203 classes are. Scores on a 1e-4 grid, so ties occur. Boxes only (``bbox``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LvisPreset:
    n_images: int
    n_rare: int = 337
    n_common: int = 461
    n_frequent: int = 405
    gt_per_image: float = 12.3
    dets_per_image: int = 300
    neg_per_image: float = 6.0
    not_exhaustive_per_image: float = 1.0
    iou_type = "bbox"


PRESETS = {"lvis": LvisPreset(19809), "medium-lvis": LvisPreset(5000), "small-lvis": LvisPreset(1000)}


def generate_lvis(preset: LvisPreset, seed: int = 0) -> tuple[dict, list]:
    """``(gt, dets)``: an LVIS ground-truth dict and a results list."""
    rng = np.random.default_rng(seed)
    n_img = preset.n_images
    freq = np.array(["r"] * preset.n_rare + ["c"] * preset.n_common + ["f"] * preset.n_frequent)
    freq = freq[rng.permutation(len(freq))]
    n_cat = len(freq)
    cat_ids = np.arange(1, n_cat + 1)
    # annotation share by frequency: LVIS v1's frequent categories hold ~90% of the instances
    weight = np.where(freq == "f", 60.0, np.where(freq == "c", 6.0, 0.6)) * rng.lognormal(0, 0.8, n_cat)
    weight /= weight.sum()
    iw = rng.choice([640, 480, 500, 427, 612], n_img)
    ih = rng.choice([480, 640, 375, 427, 500], n_img)

    nb = 1.2
    ngt = np.minimum(rng.negative_binomial(nb, nb / (nb + preset.gt_per_image), n_img), 294)
    g_img = np.repeat(np.arange(n_img), ngt)
    n_gt = len(g_img)
    # an image's objects come from a few categories: 1-5 per image, weighted by frequency
    scene = rng.choice(n_cat, (n_img, 5), p=weight)
    g_cat = scene[g_img, rng.integers(0, 1 + np.minimum(4, ngt[g_img] // 3))]
    side = np.exp(rng.normal(np.log(60), 0.9, n_gt))
    aspect = np.exp(rng.normal(0, 0.5, n_gt))
    gw = np.minimum(side * aspect, iw[g_img] - 1).round(2)
    gh = np.minimum(side / aspect, ih[g_img] - 1).round(2)
    gx = (rng.random(n_gt) * (iw[g_img] - gw)).round(2)
    gy = (rng.random(n_gt) * (ih[g_img] - gh)).round(2)

    images, pos_of = [], [[] for _ in range(n_img)]
    for i, c in zip(g_img.tolist(), g_cat.tolist()):
        pos_of[i].append(c)
    n_neg = rng.poisson(preset.neg_per_image, n_img)
    n_nel = rng.poisson(preset.not_exhaustive_per_image, n_img)
    img_ids = rng.permutation(np.sort(rng.choice(np.arange(1, 600_000), n_img, replace=False)))
    for i in range(n_img):
        pos = sorted(set(pos_of[i]))
        neg = sorted(set(rng.choice(n_cat, n_neg[i], p=weight).tolist()) - set(pos))
        nel = sorted(rng.choice(pos, min(n_nel[i], len(pos)), replace=False).tolist()) if pos else []
        images.append({
            "id": int(img_ids[i]), "width": int(iw[i]), "height": int(ih[i]),
            "neg_category_ids": [int(cat_ids[c]) for c in neg],
            "not_exhaustive_category_ids": [int(cat_ids[c]) for c in nel],
        })  # fmt: skip
    anns = [
        {"id": k + 1, "image_id": int(img_ids[i]), "category_id": int(cat_ids[c]),
         "bbox": [x, y, w, h], "area": round(w * h, 2)}
        for k, (i, c, x, y, w, h) in enumerate(zip(g_img.tolist(), g_cat.tolist(), gx.tolist(), gy.tolist(),
                                                   gw.tolist(), gh.tolist()))
    ]  # fmt: skip
    categories = [
        {"id": int(cat_ids[c]), "name": f"cat{cat_ids[c]}", "frequency": str(freq[c]), "synset": f"s{c}.n.01"}
        for c in range(n_cat)
    ]

    # ---- detections: 300 per image
    per = preset.dets_per_image
    d_img = np.repeat(np.arange(n_img), per)
    n_dt = len(d_img)
    # up to 3 jittered detections per object, the rest background
    hits = np.minimum(ngt * 3, per)
    first_gt = np.concatenate([[0], np.cumsum(ngt)[:-1]])
    slot = np.tile(np.arange(per), n_img)
    is_hit = slot < hits[d_img]
    src = first_gt[d_img] + np.where(is_hit, slot // 3, 0)
    src = np.minimum(src, max(n_gt - 1, 0))
    jit = rng.normal(0, 0.1, (n_dt, 4))
    bw = np.where(is_hit, gw[src] * np.exp(jit[:, 2]), np.exp(rng.normal(np.log(50), 1.0, n_dt)))
    bh = np.where(is_hit, gh[src] * np.exp(jit[:, 3]), np.exp(rng.normal(np.log(50), 1.0, n_dt)))
    bx = np.where(is_hit, gx[src] + jit[:, 0] * gw[src], rng.random(n_dt) * iw[d_img])
    by = np.where(is_hit, gy[src] + jit[:, 1] * gh[src], rng.random(n_dt) * ih[d_img])
    bw = np.minimum(bw, iw[d_img]).round(2)
    bh = np.minimum(bh, ih[d_img]).round(2)
    bx, by = np.clip(bx, 0, iw[d_img] - bw).round(2), np.clip(by, 0, ih[d_img] - bh).round(2)
    # background categories: the image's scene, a negative-like frequent category, or any at all
    pick = rng.random(n_dt)
    anywhere = np.where(pick < 0.8, rng.choice(n_cat, n_dt, p=weight), rng.integers(0, n_cat, n_dt))
    bg_cat = np.where(pick < 0.4, scene[d_img, rng.integers(0, 5, n_dt)], anywhere)
    wrong = rng.random(n_dt) < 0.15
    d_cat = np.where(is_hit & ~wrong, g_cat[src], bg_cat)
    score = np.where(is_hit, rng.beta(4, 2, n_dt), rng.beta(1, 6, n_dt))
    score = np.maximum(score, 1e-4).round(4)
    dets = [
        {"image_id": int(img_ids[i]), "category_id": int(cat_ids[c]), "bbox": [x, y, w, h], "score": s}
        for i, c, x, y, w, h, s in zip(d_img.tolist(), d_cat.tolist(), bx.tolist(), by.tolist(), bw.tolist(),
                                       bh.tolist(), score.tolist())
    ]  # fmt: skip
    gt = {"info": {"description": "synthetic LVIS-shaped data (benchmarks/make_lvis.py)"}, "images": images,
          "annotations": anns, "categories": categories, "licenses": []}  # fmt: skip
    return gt, dets

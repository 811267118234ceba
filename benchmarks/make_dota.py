"""Synthetic DOTA task 1 data: ``make_data.py --preset dota`` writes it.

2,000 image patches (1024 x 1024), DOTA-v1.0's 15 classes, about 30 oriented objects per patch
(``labelTxt``: integer corners, 8 % difficult, a few darts and clockwise ones) and 300,000 detections
(``Task1_<class>.txt``): 60 % near a ground truth (corners jittered), the rest anywhere, distinct scores in (0, 1).

    python benchmarks/make_data.py --preset dota [--out DIR] [--seed 0]

writes ``DIR/labelTxt/`` and ``DIR/Task1/`` (default ``benchmarks/data/dota/``).

    python benchmarks/make_data.py --preset dota-obb [--out DIR] [--seed 0]

writes the same scale as COCO JSON with oriented boxes (``"obb"``: hotcoco's format; ``bench.py --preset
dota-obb`` times deteval's ``--iou-type obb`` against hotcoco's ``obb``), default ``benchmarks/data/dota-obb/``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

CLASSES = ("plane", "baseball-diamond", "bridge", "ground-track-field", "small-vehicle", "large-vehicle", "ship",
           "tennis-court", "basketball-court", "storage-tank", "soccer-ball-field", "roundabout", "harbor",
           "swimming-pool", "helicopter")  # fmt: skip
N_IMAGES, N_DETS, PATCH = 2000, 300_000, 1024


def _rects(rng: np.random.Generator, n: int) -> np.ndarray:
    c = rng.uniform(0, PATCH, (n, 2))
    wh = np.exp(rng.normal(np.log(30), 0.6, (n, 2))).clip(4, 400)
    a = rng.uniform(-np.pi, np.pi, n)
    off = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]])
    ca, sa = np.cos(a)[:, None], np.sin(a)[:, None]
    ox, oy = off[None, :, 0] * wh[:, :1], off[None, :, 1] * wh[:, 1:]
    q = np.stack([c[:, :1] + ca * ox - sa * oy, c[:, 1:] + sa * ox + ca * oy], 2)
    dart = rng.random(n) < 0.03  # one vertex pulled inside
    q[dart, 1] = c[dart] + (c[dart] - q[dart, 1]) * 0.3
    cw = rng.random(n) < 0.2
    q[cw] = q[cw, ::-1]
    return q.reshape(n, 8)


def make_dota(out: Path, seed: int = 0, quiet: bool = False) -> Path:
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    n_gt = rng.negative_binomial(2, 2 / 32, N_IMAGES)
    img = np.repeat(np.arange(N_IMAGES), n_gt)
    cls = rng.choice(len(CLASSES), len(img), p=np.linspace(2, 1, len(CLASSES)) / np.linspace(2, 1, len(CLASSES)).sum())
    quads = np.round(_rects(rng, len(img)))
    difficult = rng.random(len(img)) < 0.08
    (out / "labelTxt").mkdir(parents=True, exist_ok=True)
    (out / "Task1").mkdir(parents=True, exist_ok=True)
    bounds = np.concatenate([[0], np.cumsum(n_gt)])
    for i in range(N_IMAGES):
        rows = [" ".join(f"{v:g}" for v in quads[j]) + f" {CLASSES[cls[j]]} {int(difficult[j])}\n"
                for j in range(bounds[i], bounds[i + 1])]  # fmt: skip
        (out / "labelTxt" / f"P{i:05d}.txt").write_text("imagesource:GoogleEarth\ngsd:0.146\n" + "".join(rows))
    near = rng.random(N_DETS) < 0.6
    src = rng.integers(0, len(img), N_DETS)
    dq = np.where(near[:, None], quads[src] + rng.normal(0, 1, (N_DETS, 1)) * 3 * rng.normal(0, 1, (N_DETS, 8)),
                  _rects(rng, N_DETS))  # fmt: skip
    d_img = np.where(near, img[src], rng.integers(0, N_IMAGES, N_DETS))
    d_cls = np.where(near & (rng.random(N_DETS) < 0.85), cls[src], rng.integers(0, len(CLASSES), N_DETS))
    # distinct scores (9 decimals): the devkit's sort is unstable, so ties would make its mAP differ by chance
    score = (rng.permutation(N_DETS) + 1) / (N_DETS + 1)
    for k, name in enumerate(CLASSES):
        sel = np.flatnonzero(d_cls == k)
        lines = [f"P{d_img[j]:05d} {score[j]:.9f} " + " ".join(f"{v:.1f}" for v in dq[j]) + "\n" for j in sel]
        (out / "Task1" / f"Task1_{name}.txt").write_text("".join(lines))
    if not quiet:
        print(f"dota: {N_IMAGES} patches, {len(img)} GT ({difficult.sum()} difficult), {N_DETS} detections -> {out} "
              f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip
    return out


def _obbs(rng: np.random.Generator, n: int) -> np.ndarray:
    """Oriented boxes (n, 5) cx cy w h angle, drawn as _rects draws its rectangles."""
    c = rng.uniform(0, PATCH, (n, 2))
    wh = np.exp(rng.normal(np.log(30), 0.6, (n, 2))).clip(4, 400)
    return np.concatenate([c, wh, rng.uniform(-np.pi, np.pi, (n, 1))], 1)


def make_dota_obb(out: Path, seed: int = 0, quiet: bool = False) -> Path:
    """The same scale as DOTA's preset as COCO JSON for ``iou_type="obb"`` (hotcoco's format): ``gt.json`` and
    ``dets.json``, every record an ``"obb": [cx, cy, w, h, angle]`` (2 decimals; angle in radians, 4), no
    ``bbox``, no ``area`` (w*h); 60 % of the detections near a ground truth, distinct scores."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    n_gt = rng.negative_binomial(2, 2 / 32, N_IMAGES)
    img = np.repeat(np.arange(N_IMAGES), n_gt)
    p = np.linspace(2, 1, len(CLASSES))
    cls = rng.choice(len(CLASSES), len(img), p=p / p.sum())
    boxes = _obbs(rng, len(img))
    near = rng.random(N_DETS) < 0.6
    src = rng.integers(0, len(img), N_DETS)
    jitter = np.concatenate([rng.normal(0, 3, (N_DETS, 2)), np.exp(rng.normal(0, 0.15, (N_DETS, 2))),
                             rng.normal(0, 0.15, (N_DETS, 1))], 1)  # fmt: skip
    moved = boxes[src] + jitter * [1, 1, 0, 0, 1]
    moved[:, 2:4] = boxes[src, 2:4] * jitter[:, 2:4]
    dets = np.where(near[:, None], moved, _obbs(rng, N_DETS))
    d_img = np.where(near, img[src], rng.integers(0, N_IMAGES, N_DETS))
    d_cls = np.where(near & (rng.random(N_DETS) < 0.85), cls[src], rng.integers(0, len(CLASSES), N_DETS))
    score = (rng.permutation(N_DETS) + 1) / (N_DETS + 1)

    def obb(b: np.ndarray) -> list:
        return [round(float(b[0]), 2), round(float(b[1]), 2), round(float(b[2]), 2), round(float(b[3]), 2),
                round(float(b[4]), 4)]  # fmt: skip

    gt = {
        "images": [{"id": i + 1, "file_name": f"P{i:05d}.png", "width": PATCH, "height": PATCH}
                   for i in range(N_IMAGES)],
        "categories": [{"id": k + 1, "name": name} for k, name in enumerate(CLASSES)],
        "annotations": [{"id": j + 1, "image_id": int(img[j]) + 1, "category_id": int(cls[j]) + 1, "iscrowd": 0,
                         "obb": obb(boxes[j])} for j in range(len(img))],  # fmt: skip
    }
    results = [{"image_id": int(d_img[j]) + 1, "category_id": int(d_cls[j]) + 1, "obb": obb(dets[j]),
                "score": round(float(score[j]), 9)} for j in range(N_DETS)]  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "gt.json").write_text(json.dumps(gt))
    (out / "dets.json").write_text(json.dumps(results))
    if not quiet:
        print(f"dota-obb: {N_IMAGES} patches, {len(img)} GT, {N_DETS} oriented detections -> {out} "
              f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip
    return out

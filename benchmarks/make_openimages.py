"""Synthetic Open Images challenge data: ``make_data.py --preset openimages`` writes it.

100,000 images (``--images``), 500 classes in a 3-level hierarchy (20 top, 80 middle, 400 leaves; one
leaf in 20 under a second middle class), 1 + Poisson(6) boxes per image (10 % group-of; every class boxed
somewhere), verified labels (a positive row per boxed class, 3 negative ones, at random) and 100
detections per image: 60 % near a box (jittered, its class 80 % of the time), the rest anywhere,
distinct scores in (0, 1).

    python benchmarks/make_data.py --preset openimages [--out DIR] [--seed 0] [--images N]

writes ``DIR/boxes.csv``, ``labels.csv``, ``dets.csv``, ``hierarchy.json`` and ``classes.csv``
(default ``benchmarks/data/openimages/``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

N_TOP, N_MID, N_LEAF, DETS_PER_IMAGE = 20, 80, 400, 100


def _hierarchy(rng: np.random.Generator) -> tuple[dict, list[str]]:
    top = [f"/m/t{i:02d}" for i in range(N_TOP)]
    mid = [f"/m/m{i:03d}" for i in range(N_MID)]
    leaf = [f"/m/l{i:03d}" for i in range(N_LEAF)]
    leaves_of = {m: [] for m in mid}
    for i, name in enumerate(leaf):
        leaves_of[mid[i * N_MID // N_LEAF]].append(name)
        if rng.random() < 0.05:  # a second parent
            leaves_of[mid[rng.integers(N_MID)]].append(name)
    tree = {"LabelName": "/m/0bl9f", "Subcategory": [
        {"LabelName": t, "Subcategory": [
            {"LabelName": m, "Subcategory": [{"LabelName": x} for x in leaves_of[m]]}
            for m in mid[i * N_MID // N_TOP:(i + 1) * N_MID // N_TOP]]}
        for i, t in enumerate(top)]}  # fmt: skip
    return tree, [*top, *mid, *leaf]


def _fmt(a: np.ndarray, digits: int) -> np.ndarray:
    return np.char.mod(f"%.{digits}f", a)


def _write(path: Path, header: str, columns: list[np.ndarray]) -> None:
    with open(path, "w") as f:
        f.write(header + "\n")
        step = 1_000_000
        for lo in range(0, len(columns[0]), step):
            parts = [np.asarray(c[lo : lo + step]).astype(str) for c in columns]
            rows = parts[0]
            for p in parts[1:]:
                rows = np.char.add(np.char.add(rows, ","), p)
            f.write("\n".join(rows.tolist()) + "\n")


def make_openimages(out: Path, seed: int = 0, quiet: bool = False, n_images: int = 100_000) -> Path:
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    tree, classes = _hierarchy(rng)
    classes_arr = np.array(classes)
    out.mkdir(parents=True, exist_ok=True)
    (out / "hierarchy.json").write_text(json.dumps(tree))
    (out / "classes.csv").write_text("".join(f"{c},class {c[3:]}\n" for c in classes))
    images = np.array([f"{v:016x}" for v in rng.integers(0, 1 << 62, n_images)])
    n_box = 1 + rng.poisson(6, n_images)  # every image boxed: hotcoco refuses detections on other images
    b_img = np.repeat(np.arange(n_images), n_box)
    nb = len(b_img)
    leaf0 = N_TOP + N_MID
    b_cls = np.where(rng.random(nb) < 0.9, rng.integers(leaf0, len(classes), nb), rng.integers(N_TOP, leaf0, nb))
    b_cls[: len(classes)] = np.arange(len(classes))[:nb]  # every class boxed somewhere (hotcoco's classes)
    c = rng.random((nb, 2)) * 0.8 + 0.1
    wh = np.exp(rng.normal(np.log(0.15), 0.6, (nb, 2))).clip(0.01, 0.8)
    x1, y1 = np.clip(c - wh / 2, 0, 1).T
    x2, y2 = np.clip(c + wh / 2, 0, 1).T
    group = (rng.random(nb) < 0.1).astype(np.int64)
    zeros = np.zeros(nb, np.int64)
    _write(out / "boxes.csv", "ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,"
           "IsGroupOf,IsDepiction,IsInside",
           [images[b_img], np.full(nb, "xclick"), classes_arr[b_cls], zeros + 1, _fmt(x1, 6), _fmt(x2, 6),
            _fmt(y1, 6), _fmt(y2, 6), zeros, zeros, group, zeros, zeros])  # fmt: skip
    pos = np.unique(b_img * len(classes) + b_cls)
    neg = np.repeat(np.arange(n_images), 3) * len(classes) + rng.integers(0, len(classes), 3 * n_images)
    neg = np.setdiff1d(neg, pos)
    l_key = np.concatenate([pos, neg])
    conf = np.concatenate([np.ones(len(pos), np.int64), np.zeros(len(neg), np.int64)])
    _write(out / "labels.csv", "ImageID,Source,LabelName,Confidence",
           [images[l_key // len(classes)], np.full(len(l_key), "verification"), classes_arr[l_key % len(classes)],
            conf])  # fmt: skip
    nd = DETS_PER_IMAGE * n_images
    d_img = np.repeat(np.arange(n_images), DETS_PER_IMAGE)
    first = np.concatenate([[0], np.cumsum(n_box)])[d_img]
    has = n_box[d_img] > 0
    near = has & (rng.random(nd) < 0.6)
    src = first + (rng.random(nd) * np.maximum(n_box[d_img], 1)).astype(np.int64)
    src = np.where(near, src, 0)
    jit = rng.normal(0, 0.1, (nd, 4)) * np.stack([x2 - x1, x2 - x1, y2 - y1, y2 - y1], 1)[src]
    rc = rng.random((nd, 2)) * 0.8 + 0.1
    rwh = np.exp(rng.normal(np.log(0.15), 0.6, (nd, 2))).clip(0.01, 0.8)
    box = np.where(near[:, None], np.stack([x1, x2, y1, y2], 1)[src] + jit,
                   np.stack([rc[:, 0] - rwh[:, 0] / 2, rc[:, 0] + rwh[:, 0] / 2,
                             rc[:, 1] - rwh[:, 1] / 2, rc[:, 1] + rwh[:, 1] / 2], 1)).clip(0, 1)  # fmt: skip
    d_cls = np.where(near & (rng.random(nd) < 0.8), b_cls[src], rng.integers(N_TOP, len(classes), nd))
    score = (rng.permutation(nd) + 1) / (nd + 1)
    _write(out / "dets.csv", "ImageID,LabelName,Score,XMin,XMax,YMin,YMax",
           [images[d_img], classes_arr[d_cls], _fmt(score, 9), *(_fmt(box[:, k], 6) for k in range(4))])  # fmt: skip
    if not quiet:
        print(f"openimages: {n_images} images, {len(classes)} classes, {nb} boxes ({group.sum()} group-of), "
              f"{len(l_key)} label rows, {nd} detections -> {out} in {time.perf_counter() - t0:.1f} s")  # fmt: skip
    return out

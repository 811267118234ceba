"""Generated YOLO label and prediction folders (the cases the yolo parity tests need): classes with gaps, empty
label files, missing and empty prediction files, predicted classes without labels, border and tiny boxes,
over 300 predictions on an image, non-square sizes; confidences distinct (also in float32)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_rows(folder: Path, stem: str, rows: list[tuple]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(" ".join(_fmt(v) for v in row) + "\n" for row in rows)
    (folder / f"{stem}.txt").write_text(text)


def _fmt(v) -> str:
    return str(int(v)) if isinstance(v, (int, np.integer)) else repr(float(v))


def generate(root: Path, seed: int, n_images: int = 40, with_sizes: bool = True) -> tuple[Path, Path, Path | None]:
    """Folders of every case the issue lists (module docstring of deteval.io.yolo for the formats)."""
    rng = np.random.default_rng(seed)
    labels, preds = root / "labels", root / "preds"
    labels.mkdir(parents=True)
    preds.mkdir(parents=True)
    n_cls = int(rng.integers(1, 81))
    classes = np.sort(rng.choice(80, size=n_cls, replace=False))  # up to 80 classes with gaps
    confs = iter(rng.permutation(np.arange(1, 999_999))[:100_000] / 1e6)  # distinct in float32 too
    sizes = {}
    for i in range(n_images):
        stem = f"img{i:04d}"
        sizes[stem] = [int(rng.integers(8, 2000)), int(rng.integers(8, 2000))]  # non-square
        kind = rng.random()
        if kind < 0.1:
            write_rows(labels, stem, [])  # an image without objects
            lab = []
        else:
            lab = []
            for _ in range(int(rng.integers(1, 12))):
                c = int(rng.choice(classes))
                w, h = rng.uniform(1e-4, 0.6, 2) if rng.random() > 0.1 else rng.uniform(1e-5, 1e-3, 2)  # tiny
                cx, cy = rng.uniform(w / 2, 1 - w / 2), rng.uniform(h / 2, 1 - h / 2)
                if rng.random() < 0.15:  # on the border
                    cx = w / 2
                lab.append((c, cx, cy, w, h))
            write_rows(labels, stem, lab)
        r = rng.random() if i != n_images // 2 else 1.0
        if r < 0.1:
            continue  # a missing prediction file
        if r < 0.15:
            write_rows(preds, stem, [])  # an empty one
            continue
        pr = []
        for c, cx, cy, w, h in lab:
            for _ in range(int(rng.integers(0, 4))):
                jit = rng.normal(0, 0.1, 4) * np.array([w, h, w, h])
                pc = c if rng.random() > 0.1 else int(rng.integers(0, 90))  # a class without labels, sometimes
                box = np.clip([cx + jit[0], cy + jit[1], abs(w + jit[2]), abs(h + jit[3])], 0, 1)
                pr.append((pc, *box, next(confs)))
        n_bg = int(rng.integers(0, 400)) if rng.random() < 0.1 else int(rng.integers(0, 6))
        if i == n_images // 2:
            n_bg = 320  # over 300 predictions on one image (ultralytics' NMS keeps 300: files need not)
        for _ in range(n_bg):
            w, h = rng.uniform(1e-3, 0.5, 2)
            pr.append((int(rng.choice(classes)), rng.uniform(0, 1), rng.uniform(0, 1), w, h, next(confs)))
        rng.shuffle(pr)  # files need not be sorted by confidence
        write_rows(preds, stem, pr)
    if not with_sizes:
        return preds, labels, None
    path = root / "sizes.json"
    path.write_text(json.dumps(sizes))
    return preds, labels, path

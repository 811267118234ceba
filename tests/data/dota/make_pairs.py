"""Pairs of quadrilaterals and DOTA_devkit's polyiou.iou_poly on them (run in /tmp/scratch-rotated/dk)."""

import numpy as np
import polyiou

rng = np.random.default_rng(2026)
rows = []


def add(p, q):
    rows.append(
        list(p)
        + list(q)
        + [polyiou.iou_poly(polyiou.VectorDouble(list(map(float, p))), polyiou.VectorDouble(list(map(float, q))))]
    )


for _ in range(150):  # DOTA-like integer quadrilaterals, overlapping, any shape (some non-convex or bow-ties)
    c = rng.integers(0, 4000, 2)
    p = c + rng.integers(-40, 41, 8).reshape(4, 2)
    q = p + rng.integers(-15, 16, 8).reshape(4, 2)
    add(p.ravel(), q.ravel())
for _ in range(150):  # float rotated rectangles against perturbed copies
    c = rng.uniform(0, 2000, 2)
    w, h = rng.uniform(3, 100, 2)
    a = rng.uniform(-np.pi, np.pi)
    off = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) / 2
    R = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    p = c + off @ R.T
    q = p + rng.normal(0, 0.15 * min(w, h), (4, 2))
    if rng.random() < 0.5:
        q = q[::-1]
    add(p.ravel(), q.ravel())
np.savetxt(
    "polyiou_pairs.csv",
    np.array(rows),
    delimiter=",",
    fmt="%.17g",
    header="p x1,y1,...,y4 (8), q x1,...,y4 (8), polyiou.iou_poly(p, q)",
)

"""Writes the DOTA fixture (gt/ in labelTxt form, dets/ as Task1_<class>.txt): hand-set classes, random shapes.

Run from this folder: python make_fixture.py. Everything is generated (seeded); no dataset's labels are used.
"""

import numpy as np

rng = np.random.default_rng(19)
CLASSES = ["plane", "ship", "storage-tank", "small-vehicle", "harbor", "bridge"]
# "bridge" has only difficult objects (no positives); "helicopter" is detected but named by no ground truth
IMAGES = [f"P{k:04d}" for k in (3, 17, 42, 108, 256, 999, 1024, 1500, 2077, 2805)]


def rect(cx, cy, w, h, a):
    off = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) / 2
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    return np.array([cx, cy]) + off @ rot.T


def shape(k):
    c = rng.uniform(50, 950, 2)
    q = rect(c[0], c[1], rng.uniform(8, 90), rng.uniform(8, 90), rng.uniform(-np.pi, np.pi))
    if k % 7 == 3:  # a dart: one vertex pulled inside
        m = q.mean(0)
        q[1] = m + (m - q[1]) * 0.3
    if k % 5 == 1:
        q = q[::-1]  # clockwise
    return q


gts = {im: [] for im in IMAGES}
dets = {c: [] for c in CLASSES + ["helicopter"]}
k = 0
for im in IMAGES:
    for _ in range(rng.integers(4, 14)):
        k += 1
        cls = CLASSES[rng.integers(0, 5)] if k % 11 else "bridge"
        q = np.round(shape(k))  # labelTxt holds integer pixels
        difficult = int(cls == "bridge" or rng.random() < 0.15)
        gts[im].append((q, cls, difficult))
        for _ in range(rng.integers(0, 4)):  # detections near it: good, poor, or off
            jitter = rng.normal(0, rng.choice([0.5, 3.0, 12.0]), (4, 2))
            dets[cls].append((im, rng.uniform(0.05, 1.0), q + jitter))
    for _ in range(rng.integers(2, 7)):  # false positives anywhere, any class
        dets[(CLASSES + ["helicopter"])[rng.integers(0, 7)]].append((im, rng.uniform(0.05, 1.0), shape(k)))

for im, rows in gts.items():
    with open(f"gt/{im}.txt", "w") as f:
        f.write("imagesource:GoogleEarth\ngsd:0.146343590398\n")
        for q, cls, difficult in rows:
            tail = f" {difficult}" if difficult or rng.random() < 0.7 else ""  # difficult 0 written or left out
            f.write(" ".join(f"{v:g}" for v in q.ravel()) + f" {cls}{tail}\n")
for cls, rows in dets.items():
    with open(f"dets/Task1_{cls}.txt", "w") as f:
        for im, score, q in rows:
            f.write(f"{im} {score:.6f} " + " ".join(f"{v:.1f}" for v in q.ravel()) + "\n")

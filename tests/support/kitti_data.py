"""Generated KITTI label_2 folders built for the 2D evaluation's quirks.

Boxes lie on an integer grid so that IoUs and DontCare overlaps land exactly on 0.5 and 0.7; heights are
often exactly 25 or 40 px; occlusion and truncation sit on and beside the difficulty bounds; types mix
cases and neighbours (Van, Person_sitting, ``dontcare`` that is no DontCare); detections are copies, cuts
to IoU 0.7 / 0.5, duplicates and strays, scored on a coarse grid (ties) or at random.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

GT_TYPES = [
    "Car",
    "Car",
    "car",
    "Pedestrian",
    "pedestrian",
    "Cyclist",
    "CYCLIST",
    "Van",
    "Person_sitting",
    "Truck",
    "Tram",
    "Misc",
    "DontCare",
    "dontcare",
]
DT_TYPES = ["Car", "Pedestrian", "Cyclist", "car", "Van", "Person_sitting"]
HEIGHTS = [25, 40, 24, 26, 39, 41, 50, 80, 120, 15]
TRUNC = [0.0, 0.15, 0.16, 0.3, 0.31, 0.5, 0.51, 0.9]


def _line(name, trunc, occ, alpha, box, score=None) -> str:
    fields = [
        name,
        f"{trunc:g}",
        str(occ),
        f"{alpha:g}",
        *(f"{v:g}" for v in box),
        "1.5",
        "1.6",
        "3.9",
        "1.0",
        "1.5",
        "20.0",
        "0.1",
    ]
    if score is not None:
        fields.append(f"{score:g}")
    return " ".join(fields)


def _odd(line: str) -> str:
    """A line as the reference reads it, written as the scanner does not: a leading ``+``, a leading zero in
    ``occluded``, trailing whitespace."""
    f = line.split(" ")
    f[2] = "0" + f[2]
    f[4] = "+" + f[4] if not f[4].startswith("-") else f[4]
    return " ".join(f) + " \t"


def kitti_case(root: Path, seed: int, n_images: int = 40) -> tuple[Path, Path]:
    """Write ``root/label_2`` and ``root/results`` for ``seed``; return ``(results, labels)``.

    ``seed % 5``: 0 every results file empty (a set without detections); 1 no Cyclist ground truth; 2
    detections without alpha (-10: no AOS); 3 scores on a 0.25 grid (heavy ties); 4 random scores, a few
    NaN or infinite. ``seed % 4 == 1``: some files with CRLF line ends, and label lines as the reference
    reads them but the scanner does not (a leading ``+``, ``occluded`` with a leading zero, trailing
    whitespace)."""
    rng = np.random.default_rng(seed)
    style = seed % 5
    labels, results = root / "label_2", root / "results"
    labels.mkdir(parents=True)
    results.mkdir(parents=True)
    ids = np.sort(rng.choice(np.arange(3 * n_images), n_images, replace=False))  # numbering gaps
    for idx in ids.tolist():
        gt_lines, dt_lines = [], []
        for _ in range(int(rng.integers(0, 9))):
            name = GT_TYPES[int(rng.integers(len(GT_TYPES)))]
            if style == 1 and name.lower() == "cyclist":
                name = "Pedestrian"
            x, y = int(rng.integers(0, 60)) * 10, int(rng.integers(0, 20)) * 10
            w, h = int(rng.choice([10, 20, 30, 40, 60])), int(rng.choice(HEIGHTS))
            box = [x, y, x + w, y + h]
            gt_lines.append(
                _line(
                    name,
                    TRUNC[int(rng.integers(len(TRUNC)))],
                    int(rng.integers(0, 4)),
                    round(float(rng.uniform(-3, 3)), 2),
                    box,
                )
            )
            for _ in range(int(rng.integers(0, 4))):
                kind = int(rng.integers(8))
                if kind == 0:
                    d = list(box)  # copy
                elif kind == 1:
                    d = [x, y, x + w * 7 // 10, y + h] if w % 10 == 0 else list(box)  # IoU 0.7 (cut width)
                elif kind == 2:
                    d = [x, y, x + w // 2, y + h]  # IoU 0.5 (and 0.5 / 0.7 intersection over area with a region)
                elif kind == 3:
                    d = [x + 1, y, x + w + 1, y + h]  # near
                elif kind == 4:
                    d = [x + int(rng.integers(-5, 6)), y + int(rng.integers(-5, 6)), x + w, y + h]
                elif kind == 5:
                    d = [x, y, x + w, y + h * 7 // 10]  # shorter: height may fall under a minimum
                else:  # shifted: a half (0.5) or 0.7 of its area inside the box (a DontCare region's threshold)
                    s = w // 2 if kind == 6 else w * 3 // 10
                    d = [x + s, y, x + w + s, y + h]
                dname = name if rng.random() < 0.5 else DT_TYPES[int(rng.integers(len(DT_TYPES)))]
                if dname.lower() == "dontcare":
                    dname = "Car"
                score = 0.25 * int(rng.integers(1, 5)) if style == 3 else round(float(rng.random()), 3)
                if style == 4 and rng.random() < 0.05:
                    score = float(rng.choice([np.nan, np.inf, -np.inf]))  # the reference reads them as float()
                alpha = -10 if style == 2 else round(float(rng.uniform(-3, 3)), 2)
                line = _line(dname, -1, -1, alpha, d, score)
                dt_lines.append(line)
                if rng.random() < 0.15:
                    dt_lines.append(line)  # duplicate
        for _ in range(int(rng.integers(0, 3))):  # strays
            x, y = int(rng.integers(0, 60)) * 10, int(rng.integers(0, 20)) * 10
            score = 0.25 * int(rng.integers(1, 5)) if style == 3 else round(float(rng.random()), 3)
            dname = DT_TYPES[int(rng.integers(len(DT_TYPES)))]
            dt_lines.append(_line(dname, -1, -1, -10 if style == 2 else 0.5, [x, y, x + 20, y + 50], score))
        rng.shuffle(dt_lines)
        if style == 0:
            dt_lines = []
        end = "\n"
        if seed % 4 == 1 and rng.random() < 0.3:  # what the reference reads and deteval's scanner leaves to it
            end = "\r\n"
            gt_lines = [_odd(s) for s in gt_lines]
        (labels / f"{idx:06d}.txt").write_bytes("".join(s + end for s in gt_lines).encode())
        (results / f"{idx:06d}.txt").write_bytes("".join(s + end for s in dt_lines).encode())
    return results, labels

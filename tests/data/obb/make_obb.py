"""Writes gt.json and dets.json: a small seeded COCO-style oriented-box dataset (hotcoco's ``obb`` records).

Run from the repository root: ``python tests/data/obb/make_obb.py``. The output is stored; the test reruns this
and checks it still writes the same files.
"""

from __future__ import annotations

import json
import math
import pathlib
import random

HERE = pathlib.Path(__file__).parent


def make(seed: int = 19) -> tuple[dict, list]:
    rnd = random.Random(seed)
    images = [{"id": i, "width": 200, "height": 200, "file_name": f"{i}.png"} for i in range(1, 13)]
    categories = [{"id": c, "name": name} for c, name in ((1, "plane"), (2, "ship"), (3, "vehicle"))]
    anns, dets = [], []
    for img in images:
        for _ in range(rnd.randint(0, 6)):
            w, h = rnd.choice((rnd.uniform(4, 30), rnd.uniform(30, 160))), rnd.uniform(4, 90)
            box = [rnd.uniform(0, 200), rnd.uniform(0, 200), w, h, rnd.uniform(-math.pi, math.pi)]
            box = [round(v, 3) for v in box]
            ann = {"id": len(anns) + 1, "image_id": img["id"], "category_id": rnd.randint(1, 3), "obb": box}
            ann["iscrowd"] = int(rnd.random() < 0.08)
            if rnd.random() < 0.3:  # a given area (for area ranges), not w*h
                ann["area"] = round(w * h * rnd.uniform(0.5, 1.5), 2)
            anns.append(ann)
            for _ in range(rnd.randint(0, 2)):  # detections near this one, jittered
                cx, cy, bw, bh, a = box
                j = rnd.uniform(0, 0.3)
                det = [cx + rnd.gauss(0, j * bw / 3), cy + rnd.gauss(0, j * bh / 3), bw * (1 + rnd.gauss(0, j / 2)),
                       bh * (1 + rnd.gauss(0, j / 2)), a + rnd.gauss(0, j)]  # fmt: skip
                cat = ann["category_id"] if rnd.random() < 0.85 else rnd.randint(1, 3)
                dets.append({"image_id": img["id"], "category_id": cat, "obb": [round(v, 4) for v in det],
                             "score": round(rnd.random(), 3)})  # fmt: skip
        for _ in range(rnd.randint(0, 3)):  # unmatched detections
            box = [rnd.uniform(0, 200), rnd.uniform(0, 200), rnd.uniform(3, 80), rnd.uniform(3, 80), rnd.uniform(-4, 4)]
            dets.append({"image_id": img["id"], "category_id": rnd.randint(1, 3), "obb": [round(v, 4) for v in box],
                         "score": round(rnd.random(), 3)})  # fmt: skip
    return {"images": images, "categories": categories, "annotations": anns}, dets


def texts(seed: int = 19) -> tuple[str, str]:
    gt, dets = make(seed)
    return json.dumps(gt, indent=0) + "\n", json.dumps(dets, indent=0) + "\n"


if __name__ == "__main__":
    gt_text, dets_text = texts()
    (HERE / "gt.json").write_text(gt_text)
    (HERE / "dets.json").write_text(dets_text)

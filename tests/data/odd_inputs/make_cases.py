"""Writes the odd-but-accepted input catalog (``python tests/data/odd_inputs/make_cases.py``).

Each case is ``<case>.gt.json`` and ``<case>.dt.json`` built from one small clean pair by a change
that pycocotools 2.0.11 scores without raising; ``cases.json`` lists each case's iou type, the
warnings deteval gives and the record its strict mode names. See README.md.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAN, INF = math.nan, math.inf


def _poly(b: list) -> list:
    x, y, w, h = b
    return [[x, y, x + w, y, x + w, y + h, x, y + h]]


def base() -> tuple[dict, list]:
    """4 images, 2 categories, 14 annotations (one crowd), 23 results: every stat is defined."""
    rng = random.Random(16)
    images = [{"id": i, "height": 120, "width": 160, "file_name": f"{i}.jpg"} for i in (1, 2, 3, 4)]
    cats = [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]
    anns, dets = [], []
    for k in range(14):
        img, cat = 1 + k % 4, 1 + (k // 4) % 2
        w, h = rng.choice([8, 20, 40, 90]), rng.choice([10, 30, 60])
        b = [rng.randint(0, 60), rng.randint(0, 50), w, h]
        anns.append({"id": 100 + k, "image_id": img, "category_id": cat, "bbox": b, "area": w * h,
                     "iscrowd": int(k == 13), "segmentation": _poly(b)})  # fmt: skip
        for _ in range(1 + k % 2 + (k == 3)):
            d = [b[0] + rng.randint(-3, 3), b[1] + rng.randint(-3, 3), w + rng.randint(-4, 4), h + rng.randint(-4, 4)]
            dets.append({"image_id": img, "category_id": cat, "bbox": d, "score": round(rng.uniform(0.05, 1), 3)})
    dets.append({"image_id": 2, "category_id": 2, "bbox": [100, 80, 30, 20], "score": 0.42})  # a false positive
    for d in dets:
        d["segmentation"] = _poly(d["bbox"])
    return {"images": images, "annotations": anns, "categories": cats}, dets


def _boxes_only(dets: list) -> list:
    return [{k: copy.deepcopy(v) for k, v in d.items() if k != "segmentation"} for d in dets]


def cases() -> dict:
    out = {}
    gt, dt = base()

    def case(name, gt, dt, iou_type="bbox", warnings=(), strict=None, oracle=None):
        out[name] = {"gt": gt, "dt": dt, "iou_type": iou_type, "warnings": list(warnings), "strict": strict}
        if oracle:
            out[name]["oracle"] = oracle

    d = _boxes_only(dt)
    d[0]["bbox"] = [d[0]["bbox"][0] + d[0]["bbox"][2], d[0]["bbox"][1], -d[0]["bbox"][2], d[0]["bbox"][3]]  # x2 < x1
    d[3]["bbox"][3] = -5
    d[5]["bbox"] = [60, 60, -20, -30]  # both negative: a positive area
    case("negative_size_results", gt, d, warnings=["3 results have a bbox of negative width or height"],
         strict=["dt", "results[0]"])  # fmt: skip

    g = copy.deepcopy(gt)
    g["annotations"][2]["bbox"][2] = -g["annotations"][2]["bbox"][2]
    case("negative_size_gt", g, _boxes_only(dt), warnings=["1 annotations have a bbox of negative width or height"],
         strict=["gt", "annotations[2] (id=102)"])  # fmt: skip

    g = copy.deepcopy(gt)
    g["annotations"][1]["id"] = 105  # image 2, cat 1 takes ann 105's place (image 2, cat 2)
    g["annotations"][8]["id"] = 100  # image 1, cat 1 -> ann 100 (image 1, cat 1) twice, later in file order
    g["annotations"][11]["id"] = 104  # image 4 -> ann 104 (image 1): read before image 4's own
    case("repeated_annotation_ids", g, _boxes_only(dt),
         warnings=["3 annotations repeat an id listed before"], strict=["gt", "annotations[5]"])  # fmt: skip
    case("repeated_annotation_ids_segm", g, dt, iou_type="segm",
         warnings=["3 annotations repeat an id listed before"], strict=["gt", "annotations[5]"])  # fmt: skip

    g = copy.deepcopy(gt)
    g["images"].append(dict(g["images"][1]))
    case("repeated_image_ids", g, _boxes_only(dt), warnings=["1 image records repeat an id listed before"],
         strict=["gt", "images[4]"])  # fmt: skip

    d = _boxes_only(dt)
    d[0]["bbox"][0] = NAN  # a NaN edge gives way: overlaps as if x were the other box's
    d[2]["bbox"][2] = NAN  # NaN width: a NaN overlap, which wins pycocotools' comparisons
    d[4]["bbox"] = [-INF, 10, INF, 20]
    d[6]["bbox"][3] = INF
    case("non_finite_results", gt, d, warnings=["4 results have a bbox with a NaN or infinite number"],
         strict=["dt", "results[0]"])  # fmt: skip

    g = copy.deepcopy(gt)
    g["annotations"][0]["bbox"][1] = NAN
    g["annotations"][5]["bbox"][2] = INF
    g["annotations"][6]["area"] = NAN  # in every area range
    odd = ["2 annotations have a bbox with a NaN or infinite number", "1 annotations have a NaN or infinite area"]
    case("non_finite_gt", g, _boxes_only(dt), warnings=odd, strict=["gt", "annotations[0] (id=100)"])

    g = copy.deepcopy(gt)
    g["images"][0].update(height=0, width=0)
    g["images"][2]["height"] = 0
    case("zero_size_images_segm", g, dt, iou_type="segm",
         warnings=["7 annotations are polygons on an image of height 0",
                   "7 results are polygons on an image of height 0"],
         strict=["gt", "annotations[0] (id=100)"])  # fmt: skip
    case("zero_size_images_bbox", g, _boxes_only(dt))  # sizes are not read for boxes

    g = copy.deepcopy(gt)
    for a in g["annotations"]:
        if a["image_id"] == 4:
            del a["iscrowd"]
    # pycocotools raises KeyError here: compared with its numbers for iscrowd 0, which deteval reads
    case("missing_iscrowd", g, _boxes_only(dt), warnings=["3 annotations have no 'iscrowd'"],
         strict=["gt", "annotations[3] (id=103)"], oracle="iscrowd_0")  # fmt: skip

    g = copy.deepcopy(gt)
    for a in g["annotations"][:3]:
        a["segmentation"] = []
    case("empty_segmentation_bbox", g, _boxes_only(dt))  # not read for boxes (pycocotools raises for masks)

    d = _boxes_only(dt)
    for i, r in enumerate(d):
        r.update(id=1000 - i, area=1.0, iscrowd=1, ignore=1, category_name="?", extra={"any": [1, 2]})
    case("extra_keys_results", gt, d)  # loadRes overwrites id, area and iscrowd; nothing reads the others

    d = _boxes_only(dt)
    d[1]["segmentation"] = copy.deepcopy(
        dt[1]["segmentation"]
    )  # the first without: loadRes' bbox branch, boxes as masks
    case("box_only_results_segm", gt, d, iou_type="segm",
         warnings=["22 results have no 'segmentation' in mask evaluation"], strict=["dt", "results[0]"])  # fmt: skip

    d = _boxes_only(dt)
    for i in (1, 4, 9):
        d[i]["score"] = NAN  # ranked after every other score, in input order; NaN in eval['scores']
    d[6]["score"] = INF
    d[12]["score"] = INF  # a tie at +inf, across images
    d[15]["score"] = 0.0  # a score of 0 ranks before NaN ones (-inf beside NaN is refused: test_odd_inputs)
    case("non_finite_scores", gt, d,
         warnings=["2 results have an infinite score", "3 results have a NaN score"],
         strict=["dt", "results[6]"])  # fmt: skip

    d = _boxes_only(dt)
    d[3]["score"] = -INF
    d[8]["score"] = -INF
    d[10]["score"] = INF
    case("infinite_scores", gt, d, warnings=["3 results have an infinite score"], strict=["dt", "results[3]"])

    g = copy.deepcopy(gt)
    for im in g["images"]:
        im.update(neg_category_ids=[2], not_exhaustive_category_ids=[])
    g["categories"][1]["frequency"] = "r"
    case("lvis_fields", g, _boxes_only(dt),
         warnings=["LVIS's 'neg_category_ids', 'not_exhaustive_category_ids', 'frequency'"],
         strict=["gt", "images[0] (id=1)"])  # fmt: skip
    return out


def main() -> None:
    manifest = {}
    for name, c in cases().items():
        for part in ("gt", "dt"):
            with open(HERE / f"{name}.{part}.json", "w", encoding="utf-8") as f:
                json.dump(c[part], f)  # NaN and Infinity as json.dump writes them (pycocotools' json.load reads them)
        manifest[name] = {k: c[k] for k in ("iou_type", "warnings", "strict", "oracle") if k in c}
    with open(HERE / "cases.json", "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

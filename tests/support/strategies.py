"""Hypothesis strategies for adversarial COCO bbox datasets.

`coco_cases()` draws a `CocoCase`: a GT dict, a results list and evaluation parameters, all
of which pycocotools 2.0.11 accepts (GT annotations always carry `iscrowd` and `area`, the
results list is never empty, max_dets has at least 3 entries). The datasets are small
(at most 6 images, 4 categories) but aim at every place where an evaluator can drift from
pycocotools:

- tied scores (drawn from a tiny set, or rounded) with the results list shuffled;
- crowd GT, `ignore` flags (0/1, with and without crowd), GT annotation ids 0 and negative;
- GT `area` exactly 32**2 / 96**2 (and unrelated to the box), detection boxes with
  w*h exactly 1024 / 9216;
- detections built from a GT box with integer coordinates so that the IoU is exactly
  0.5, 0.75, 1/3, 1, ... (halves, 3/4 pieces, boxes twice as large), zero-area boxes;
- images without GT, images without detections, categories without GT or detections;
- sometimes more than 100 detections in an image;
- sometimes custom max_dets (without 100), iou_thrs (with thresholds like 0.9 or 0.0) and
  area ranges; sometimes string image ids; sometimes use_cats=False.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from hypothesis import strategies as st

__all__ = ["CocoCase", "coco_cases"]

TIED_SCORE_SETS = ((0.1, 0.5, 0.9), (0.5,), (0.3, 0.7), (0.25, 0.5, 0.75, 1.0), (0, 1))

MAX_DETS_CHOICES = (
    [1, 10, 100],
    [1, 10, 1000],
    [2, 5, 20],
    [1, 3, 5],
    [1, 10, 100, 300],
    [5, 50, 100],
    [100, 1, 10],  # unsorted: pycocotools sorts maxDets
    [10, 1, 100, 5],
)

IOU_THRS_CHOICES = (
    [0.5],
    [0.5, 0.75],
    [0.3, 0.5, 0.7],
    # rounded linspace: contains an exact 0.9, unlike pycocotools' default thresholds
    [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95],
    [0.0, 0.5, 1.0],
    [0.1, 0.25, 1.0 / 3.0, 0.5],
    [0.75, 0.9],
    [0.75, 0.5, 0.9],  # unsorted: pycocotools keeps the given order
)

AREA_RANGES_CHOICES = (
    {
        "all": (0, 1e10),
        "small": (0, 32**2),
        "medium": (32**2, 96**2),
        "large": (96**2, 1e10),
    },
    {"all": (0, 1e10), "small": (0, 400), "medium": (400, 2500), "large": (2500, 1e10)},
    {
        "all": (0.0, 1e5**2),
        "small": (0.0, 1024.0),
        "medium": (1024.0, 9216.0),
        "large": (9216.0, 1e10),
        "huge": (20000.0, 1e10),
    },
    {"large": (96**2, 1e10), "all": (0, 1e10), "small": (0, 32**2)},
    {"all": (0, 1e10)},
    {"tiny": (0, 100), "all": (0, 1e10), "medium": (1024, 1024)},
)


@dataclasses.dataclass
class CocoCase:
    gt: dict
    preds: list
    iou_thrs: list | None = None
    area_ranges: dict | None = None
    max_dets: list | None = None
    use_cats: bool = True

    def kwargs(self) -> dict[str, Any]:
        return {
            "iou_thrs": self.iou_thrs,
            "area_ranges": self.area_ranges,
            "max_dets": self.max_dets,
            "use_cats": self.use_cats,
        }

    def to_json(self) -> str:
        """The whole case as JSON, to paste into a bug report."""
        d = dataclasses.asdict(self)
        if d["area_ranges"] is not None:
            d["area_ranges"] = {k: list(v) for k, v in d["area_ranges"].items()}
        return json.dumps(d, separators=(",", ":"))

    def __repr__(self) -> str:  # shown by hypothesis for the falsifying example
        return f"CocoCase.from_json({self.to_json()!r})"

    @classmethod
    def from_json(cls, s: str) -> CocoCase:
        d = json.loads(s)
        if d.get("area_ranges") is not None:
            d["area_ranges"] = {k: tuple(v) for k, v in d["area_ranges"].items()}
        return cls(**d)


# --------------------------------------------------------------------------------------
# numbers


def _coord(draw, mode: str, lo: float, hi: float):
    """A coordinate in [lo, hi]: an int, a 2-decimal float, or an arbitrary float."""
    if mode == "int":
        return draw(st.integers(int(lo), int(hi)))
    if mode == "dec":
        return round(draw(st.integers(int(lo * 100), int(hi * 100))) / 100, 2)
    return draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))


def _size(draw, mode: str):
    """A box side: special values (0, 32, 96, ...) or a random size."""
    special = draw(st.booleans())
    if special:
        return draw(st.sampled_from([0, 1, 4, 8, 10, 16, 20, 32, 40, 48, 64, 96, 100, 128, 192]))
    return _coord(draw, mode, 0, 150)


def _score(draw, score_mode: str, tied_set):
    if score_mode == "tied":
        return draw(st.sampled_from(tied_set))
    if score_mode == "rounded":
        return draw(st.integers(0, 10)) / 10
    if score_mode == "wide":  # pycocotools does not care about the range
        return draw(st.floats(-10.0, 10.0, allow_nan=False))
    return draw(st.floats(0.0, 1.0, allow_nan=False))


# --------------------------------------------------------------------------------------
# boxes


@st.composite
def _gt_box(draw, mode: str):
    x = _coord(draw, mode, 0, 200)
    y = _coord(draw, mode, 0, 200)
    return [x, y, _size(draw, mode), _size(draw, mode)]


def _derived_box(draw, gt_box, mode: str):
    """A detection box related to a GT box, often at an exact IoU."""
    x, y, w, h = gt_box
    kind = draw(
        st.sampled_from(
            [
                "same",  # IoU 1
                "half_w",  # IoU .5 exactly (integer w, h)
                "half_h",
                "quarter3",  # 3/4 of the box: IoU .75 when h divisible by 4
                "double",  # twice the box, containing it: IoU .5
                "four3",  # 4/3 of the box, containing it: IoU .75
                "shift",  # shifted by an integer amount
                "shift_half",  # shifted by half a side: IoU 1/3
                "zero_w",
                "zero_h",
                "jitter",
                "area1024",
                "area9216",
            ]
        )
    )
    if kind == "same":
        return [x, y, w, h]
    if kind == "half_w":
        return [x, y, w / 2, h]
    if kind == "half_h":
        return [x, y + h / 2, w, h / 2]
    if kind == "quarter3":
        return [x, y, w, h * 3 / 4]
    if kind == "double":
        return [x - w / 2, y, w * 2, h]
    if kind == "four3":
        return [x, y, w, h * 4 / 3]
    if kind == "shift":
        dx = draw(st.integers(-10, 10))
        dy = draw(st.integers(-10, 10))
        return [x + dx, y + dy, w, h]
    if kind == "shift_half":
        return [x + w / 2, y, w, h]
    if kind == "zero_w":
        return [x, y, 0, h]
    if kind == "zero_h":
        return [x, y, w, 0]
    if kind == "jitter":
        j = [_coord(draw, "float", -3, 3) for _ in range(4)]
        return [x + j[0], y + j[1], max(0.0, w + j[2]), max(0.0, h + j[3])]
    if kind == "area1024":
        bw, bh = draw(st.sampled_from([(32, 32), (16, 64), (64, 16), (8, 128)]))
        return [x, y, bw, bh]
    bw, bh = draw(st.sampled_from([(96, 96), (48, 192), (192, 48), (72, 128)]))
    return [x, y, bw, bh]


def _odd_box(draw, box: list) -> list:
    x, y, w, h = box
    kind = draw(st.sampled_from(["neg_w", "neg_h", "neg_both", "nan", "inf"]))
    if kind == "neg_w":
        return [x + w, y, -w, h]
    if kind == "neg_h":
        return [x, y + h, w, -h]
    if kind == "neg_both":
        return [x + w, y + h, -w, -h]
    out = list(box)
    out[draw(st.integers(0, 3))] = math.nan if kind == "nan" else draw(st.sampled_from([math.inf, -math.inf]))
    return out


def _free_box(draw, mode: str):
    return draw(_gt_box(mode))


# --------------------------------------------------------------------------------------
# datasets


@st.composite
def coco_cases(draw, many_dets: bool | None = None, odd_boxes: bool = False) -> CocoCase:
    """Draw an adversarial COCO bbox case.

    `many_dets`: True forces an image with more than 100 detections, False forbids it,
    None lets hypothesis decide (rarely). `odd_boxes`: sometimes give boxes negative sizes,
    NaN or infinite coordinates (scored by pycocotools; by deteval with a warning).
    """
    mode = draw(st.sampled_from(["int", "int", "dec", "float"]))
    n_images = draw(st.integers(1, 6))
    string_ids = draw(st.integers(0, 9)) == 0
    if string_ids:
        image_ids = draw(
            st.lists(
                st.text("ab0123_", min_size=1, max_size=4),
                min_size=n_images,
                max_size=n_images,
                unique=True,
            )
        )
    else:
        image_ids = draw(st.lists(st.integers(-3, 2000), min_size=n_images, max_size=n_images, unique=True))
    images = [
        {
            "id": i,
            "height": draw(st.integers(1, 640)),
            "width": draw(st.integers(1, 640)),
        }
        for i in image_ids
    ]

    n_cats = draw(st.integers(1, 4))
    cat_ids = draw(st.lists(st.integers(-2, 90), min_size=n_cats, max_size=n_cats, unique=True))
    categories = [{"id": c, "name": f"cat{c}", "supercategory": "thing"} for c in cat_ids]
    # categories actually used by GT; the others have no GT (their detections stay -1)
    n_gt_cats = draw(st.integers(1, n_cats))
    gt_cats = list(draw(st.permutations(cat_ids)))[:n_gt_cats]

    # ---- ground truth
    id_mode = draw(st.sampled_from(["positive", "with_zero", "with_negative"]))
    crowd_p = draw(st.sampled_from([0, 0.15, 0.5]))
    ignore_p = draw(st.sampled_from([0, 0.2, 0.5]))
    bool_crowd = draw(st.integers(0, 9)) == 0
    area_mode = draw(st.sampled_from(["box", "mixed"]))
    annotations = []
    for img in images:
        n_gt = draw(st.integers(0, 6))
        for _ in range(n_gt):
            box = draw(_gt_box(mode))
            if area_mode == "box":
                area = box[2] * box[3]
            else:
                area = draw(
                    st.one_of(
                        st.just(box[2] * box[3]),
                        st.sampled_from(
                            [
                                32**2,
                                96**2,
                                1024.0,
                                9216.0,
                                0,
                                1023.9999999999999,
                                9216.000000000002,
                            ]
                        ),
                        st.floats(0, 20000, allow_nan=False),
                    )
                )
            crowd = 1 if draw(st.floats(0, 1)) < crowd_p else 0
            ann = {
                "image_id": img["id"],
                "category_id": draw(st.sampled_from(gt_cats)),
                "bbox": box,
                "area": area,
                "iscrowd": crowd,
            }
            if bool_crowd:  # JSON true/false: pycocotools accepts it
                ann["iscrowd"] = bool(crowd)
            if ignore_p and draw(st.floats(0, 1)) < ignore_p:
                ann["ignore"] = draw(st.sampled_from([0, 1]))
            annotations.append(ann)
    n_gt = len(annotations)
    # unique ids, drawn as a shuffled range (cheap and shrinkable)
    if id_mode == "positive":
        offset = draw(st.sampled_from([1, 1, 1000, 10**6]))
        pool = range(offset, offset + 2 * n_gt + 2)
    elif id_mode == "with_zero":
        pool = range(0, 2 * n_gt + 2)
    else:
        pool = range(-n_gt - 5, n_gt + 6)
    ids = list(draw(st.permutations(list(pool))))[:n_gt]
    if id_mode == "with_zero" and n_gt and 0 not in ids:
        ids[draw(st.integers(0, n_gt - 1))] = 0
    for ann, i in zip(annotations, ids):
        ann["id"] = i
    annotations = draw(st.permutations(annotations))

    gt = {
        "info": {"description": "hypothesis"},
        "images": images,
        "annotations": list(annotations),
        "categories": categories,
    }

    # ---- detections
    score_mode = draw(st.sampled_from(["tied", "tied", "rounded", "free", "wide"]))
    tied_set = draw(st.sampled_from(TIED_SCORE_SETS))
    by_image = {}
    for ann in annotations:
        by_image.setdefault(ann["image_id"], []).append(ann)

    preds = []
    # images that get no detections at all
    dt_images = [img["id"] for img in images if draw(st.integers(0, 4)) > 0] or [images[0]["id"]]
    for img_id in dt_images:
        n_dt = draw(st.integers(0, 8))
        gts_here = by_image.get(img_id, [])
        for _ in range(n_dt):
            if gts_here and draw(st.integers(0, 3)) > 0:
                g = draw(st.sampled_from(gts_here))
                box = _derived_box(draw, g["bbox"], mode)
                # mostly the GT's category; sometimes another one (possibly without GT)
                cat = g["category_id"] if draw(st.integers(0, 4)) > 0 else draw(st.sampled_from(cat_ids))
            else:
                box = _free_box(draw, mode)
                cat = draw(st.sampled_from(cat_ids))
            preds.append(
                {
                    "image_id": img_id,
                    "category_id": cat,
                    "bbox": box,
                    "score": _score(draw, score_mode, tied_set),
                }
            )

    if many_dets is None:
        many_dets = draw(st.integers(0, 14)) == 0
    if many_dets:
        img_id = draw(st.sampled_from([img["id"] for img in images]))
        gts_here = by_image.get(img_id, [])
        n_many = draw(st.integers(101, 150))
        cats_here = [g["category_id"] for g in gts_here] or cat_ids
        one_cat = draw(st.sampled_from(cats_here))
        for k in range(n_many):
            if gts_here and k % 3 == 0:
                g = gts_here[k % len(gts_here)]
                box = _derived_box(draw, g["bbox"], mode)
            else:
                box = _free_box(draw, mode)
            cat = one_cat if k % 4 else draw(st.sampled_from(cat_ids))
            preds.append(
                {
                    "image_id": img_id,
                    "category_id": cat,
                    "bbox": box,
                    "score": _score(draw, score_mode, tied_set),
                }
            )

    if not preds:  # pycocotools crashes on an empty results list
        g = annotations[0] if annotations else None
        preds.append(
            {
                "image_id": g["image_id"] if g else images[0]["id"],
                "category_id": g["category_id"] if g else cat_ids[0],
                "bbox": list(g["bbox"]) if g else [0, 0, 10, 10],
                "score": 0.5,
            }
        )
    preds = list(draw(st.permutations(preds)))
    # boxes pycocotools scores that deteval scores with a warning: negative sizes (clipped x2 < x1),
    # NaN and infinite coordinates, in results and (rarely) in the ground truth
    if odd_boxes and draw(st.integers(0, 5)) == 0:
        for rec in preds + [a for a in annotations if draw(st.integers(0, 5)) == 0]:
            if draw(st.integers(0, 2)) == 0:
                rec["bbox"] = _odd_box(draw, rec["bbox"])
    # fields that loadRes overwrites (id, area, iscrowd) or ignores for bbox (segmentation)
    if draw(st.integers(0, 5)) == 0:
        for k, p in enumerate(preds):
            extra = draw(st.sampled_from(["none", "id", "area", "iscrowd", "segmentation", "all"]))
            if extra in ("id", "all"):
                p["id"] = draw(st.sampled_from([0, -1, 1, k, 7]))
            if extra in ("area", "all"):
                p["area"] = draw(st.sampled_from([0, 1024, 50000.5]))
            if extra in ("iscrowd", "all"):
                p["iscrowd"] = draw(st.sampled_from([0, 1]))
            if extra in ("segmentation", "all"):
                p["segmentation"] = [[0, 0, 0, 5, 5, 5, 5, 0]]

    # ---- parameters
    # None (pycocotools' defaults) about 60% of the time each
    max_dets = draw(st.sampled_from([None] * 9 + list(MAX_DETS_CHOICES)))
    iou_thrs = draw(st.sampled_from([None] * 10 + list(IOU_THRS_CHOICES)))
    area_ranges = draw(st.sampled_from([None] * 9 + list(AREA_RANGES_CHOICES)))
    use_cats = draw(st.integers(0, 4)) > 0
    return CocoCase(
        gt=gt,
        preds=preds,
        iou_thrs=None if iou_thrs is None else list(iou_thrs),
        area_ranges=None if area_ranges is None else dict(area_ranges),
        max_dets=None if max_dets is None else list(max_dets),
        use_cats=use_cats,
    )


# --------------------------------------------------------------------------------------------
# byte-level damage to JSON text, for the parsers' "same answer as the general path" tests

JSON_BYTES = list(b'{}[],:"\\-+.eE019 x\x00\xff\x7fnNtf') + [0xC3]


def mutate_bytes(raw: bytes, data, alphabet: list[int] = JSON_BYTES) -> bytes:
    """One byte deleted, inserted or replaced, or the text cut, each drawn from ``data`` (``st.data()``)."""
    pos = data.draw(st.integers(0, len(raw)))
    op = data.draw(st.sampled_from(["delete", "insert", "replace", "truncate"]))
    byte = data.draw(st.sampled_from(alphabet))
    if op == "delete":
        return raw[:pos] + raw[pos + 1 :]
    if op == "insert":
        return raw[:pos] + bytes([byte]) + raw[pos:]
    if op == "replace":
        return raw[:pos] + bytes([byte]) + raw[pos + 1 :]
    return raw[:pos]

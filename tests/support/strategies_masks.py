"""Hypothesis strategies for adversarial COCO `segm` and `keypoints` datasets.

`segm_cases()` and `keypoint_cases()` draw a `CocoCase` (from `strategies`; keypoint cases are a
`KeypointCase`, which adds `kpt_sigmas`) that pycocotools 2.0.11 accepts, on small images
(at most 64x64) so that a few hundred examples run in seconds.

segm, ground truth:
- polygons of one to three parts: convex, concave (stars), degenerate (collinear, repeated
  points, zero area), partly or wholly outside the image, with coordinates that are integers,
  halves, tenths (the `(int)(x*5+.5)` rounding of `rleFrPoly` flips at x = 0.1 + 0.2n) or any
  float;
- uncompressed RLE (`counts` a list; mostly crowd regions, iscrowd=1), sometimes with
  zero-length runs inside (`frPyObjects` keeps them as they are) or starting with a 0-run of
  length 0 (mask's first pixel set);
- compressed RLE (`pycocotools.mask.encode`, counts as a str as JSON has it);
- masks that are empty, full, touch pixel 0 or the last row/column, noise, thin lines;
- the GT `area` field is mostly the mask area, sometimes a range boundary or unrelated;
- images of different sizes (1x1 up to 64x64).

segm, results (one layout per list, since pycocotools' `loadRes` reads the first result):
- "rle": compressed RLE, no bbox (segm branch: area = mask area, bbox = toBbox);
- "rle_bbox": compressed RLE with a bbox (bbox branch: area = box w*h);
- "rle_mixed": the first without bbox, later ones sometimes with (segm branch for all);
- "poly_bbox": polygons, compressed or uncompressed RLE or no segmentation at all (the box's
  polygon), all with a bbox (bbox branch);
- masks derived from a GT (same, shifted, grown, shrunk, cut, merged) or free;
- sometimes an RLE whose size differs from the image (pycocotools' IoU is then -1).

keypoints:
- 17 COCO keypoints (default sigmas) or a custom skeleton of 1, 3 or 5 keypoints with
  `kpt_sigmas`;
- GT visibility flags 0/1/2, GT without any visible keypoint (OKS against the doubled box),
  `num_keypoints` mostly consistent, sometimes 0 with visible points or > 0 without, crowd GT,
  GT areas on the medium/large boundaries, 0 or tiny;
- detections: copies (OKS 1), jittered, far outside the doubled box, free, with an extent of
  exactly 32x32 or 96x96 (area on the range boundary); with or without a bbox field (bbox
  branch: area = w*h; keypoints branch: area = keypoint extent);
- tied scores with shuffled input.

`run_pycocotools_sigmas` is the oracle for custom keypoint sigmas.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import warnings
from typing import Any

import numpy as np
from hypothesis import strategies as st
from pycocotools import mask as mask_utils
from pycocotools.cocoeval import Params

from support.oracle import run_pycocotools
from support.strategies import IOU_THRS_CHOICES, TIED_SCORE_SETS, CocoCase

__all__ = [
    "COCO_SIGMAS",
    "KeypointCase",
    "keypoint_cases",
    "pycocotools_sigmas",
    "rle_runs",
    "run_pycocotools_sigmas",
    "segm_cases",
]

COCO_SIGMAS = [0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89]
COCO_SIGMAS = [s / 10.0 for s in COCO_SIGMAS]  # as pycocotools builds them: np.array([...]) / 10.0

MASK_MAX_DETS_CHOICES = ([1, 10, 100], [1, 2, 3], [1, 3, 5], [2, 5, 20], [1, 10, 100, 300])

# areas of masks on images of at most 64x64 pixels are at most 4096
MASK_AREA_RANGES_CHOICES = (
    {"all": (0, 1e10), "small": (0, 64), "medium": (64, 256), "large": (256, 1e10)},
    {"all": (0, 1e10), "small": (0, 16), "medium": (16, 1024), "large": (1024, 1e10)},
    {"all": (0, 1e10), "small": (0, 0), "medium": (1, 100), "large": (100, 4096)},
    {"large": (256, 1e10), "all": (0, 1e10), "small": (0, 8)},
    {"all": (0, 1e10)},
)

KPT_MAX_DETS_CHOICES = ([20], [1, 5, 20], [2, 20, 100], [5], [1, 2, 3], [1, 10, 100])

KPT_AREA_RANGES_CHOICES = (
    {"all": (0, 1e10), "medium": (32**2, 96**2), "large": (96**2, 1e10)},
    {"all": (0, 1e10), "small": (0, 32**2), "medium": (32**2, 96**2), "large": (96**2, 1e10)},
    {"all": (0, 1e10), "medium": (100, 1024), "large": (1024, 1e10)},
    {"large": (96**2, 1e10), "all": (0, 1e10)},
)

CUSTOM_SIGMA_CHOICES = (0.025, 0.05, 0.079, 0.1, 0.107, 0.5, 1.0)


@dataclasses.dataclass(repr=False)
class KeypointCase(CocoCase):
    """A `CocoCase` with keypoint sigmas (None: pycocotools' 17 COCO sigmas)."""

    kpt_sigmas: list | None = None

    def kwargs(self) -> dict[str, Any]:
        return {**super().kwargs(), "kpt_sigmas": self.kpt_sigmas}

    def __repr__(self) -> str:
        return f"KeypointCase.from_json({self.to_json()!r})"


@contextlib.contextmanager
def pycocotools_sigmas(sigmas):
    """Make pycocotools' `Params.setKpParams` use `sigmas` (None: leave its 17 COCO sigmas)."""
    if sigmas is None:
        yield
        return
    original = Params.setKpParams

    def patched(self):
        original(self)
        self.kpt_oks_sigmas = np.array(sigmas, dtype=np.float64)

    Params.setKpParams = patched
    try:
        yield
    finally:
        Params.setKpParams = original


def run_pycocotools_sigmas(preds, gt, kpt_sigmas=None, **kwargs):
    """`oracle.run_pycocotools` with custom keypoint sigmas (iou_type "keypoints")."""
    with pycocotools_sigmas(kpt_sigmas):
        return run_pycocotools(preds, gt, iou_type="keypoints", **kwargs)


# --------------------------------------------------------------------------------------
# masks


def rle_runs(mask: np.ndarray) -> list[int]:
    """Uncompressed COCO RLE counts of a 2-D 0/1 mask (column-major, starting with a 0-run)."""
    flat = np.asarray(mask, dtype=np.uint8).flatten(order="F")
    if flat.size == 0:
        return [0]
    change = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate([[0], change, [flat.size]])
    runs = np.diff(bounds).tolist()
    if flat[0] == 1:
        runs = [0, *runs]
    return [int(r) for r in runs]


def _encode(mask: np.ndarray) -> dict:
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}


def _rle_of(seg, h: int, w: int) -> dict:
    """The compressed RLE (bytes counts) pycocotools' annToRLE makes of a segmentation."""
    if isinstance(seg, list):
        return mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    if isinstance(seg["counts"], list):
        return mask_utils.frPyObjects(seg, seg["size"][0], seg["size"][1])
    return {"size": seg["size"], "counts": seg["counts"].encode("ascii")}


def _decode(seg, h: int, w: int) -> np.ndarray:
    with warnings.catch_warnings():  # pycocotools' decode trips numpy 2's copy-keyword deprecation
        warnings.simplefilter("ignore", DeprecationWarning)
        return mask_utils.decode(_rle_of(seg, h, w)).astype(bool)


def _rect(draw, h: int, w: int) -> tuple[int, int, int, int]:
    """A rectangle [y0, y1) x [x0, x1) inside the image, often touching its borders."""
    y0 = draw(st.sampled_from([0, 0, h - 1, None]))
    x0 = draw(st.sampled_from([0, 0, w - 1, None]))
    y0 = draw(st.integers(0, h - 1)) if y0 is None else y0
    x0 = draw(st.integers(0, w - 1)) if x0 is None else x0
    y1 = draw(st.sampled_from([h, None]))
    x1 = draw(st.sampled_from([w, None]))
    y1 = draw(st.integers(y0, h)) if y1 is None else y1
    x1 = draw(st.integers(x0, w)) if x1 is None else x1
    return y0, y1, x0, x1


def _free_mask(draw, h: int, w: int) -> np.ndarray:
    kind = draw(st.sampled_from(["rect", "rect", "rects", "full", "empty", "noise", "line", "pixel0", "last"]))
    m = np.zeros((h, w), dtype=bool)
    if kind == "rect":
        y0, y1, x0, x1 = _rect(draw, h, w)
        m[y0:y1, x0:x1] = True
    elif kind == "rects":
        for _ in range(draw(st.integers(2, 3))):
            y0, y1, x0, x1 = _rect(draw, h, w)
            m[y0:y1, x0:x1] = True
    elif kind == "full":
        m[:] = True
    elif kind == "noise":
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        m = rng.random((h, w)) < draw(st.sampled_from([0.1, 0.5, 0.9]))
    elif kind == "line":
        if draw(st.booleans()):
            m[draw(st.integers(0, h - 1)), :] = True  # a row: one pixel per column, many runs
        else:
            m[:, draw(st.integers(0, w - 1))] = True
    elif kind == "pixel0":
        m[0, 0] = True
    elif kind == "last":
        m[-1, -1] = True
    return m


def _derived_mask(draw, base: np.ndarray) -> np.ndarray:
    """A mask related to `base` (same size)."""
    h, w = base.shape
    kind = draw(st.sampled_from(["same", "same", "shift", "grow", "shrink", "cut", "merge", "invert"]))
    if kind == "same":
        return base.copy()
    if kind == "shift":
        dy, dx = draw(st.integers(-3, 3)), draw(st.integers(-3, 3))
        out = np.zeros_like(base)
        ys, xs = np.nonzero(base)
        ys, xs = ys + dy, xs + dx
        ok = (ys >= 0) & (ys < h) & (xs >= 0) & (xs < w)
        out[ys[ok], xs[ok]] = True
        return out
    if kind in ("grow", "shrink"):
        out = base.copy()
        for _ in range(draw(st.integers(1, 2))):
            p = np.pad(out, 1, constant_values=kind == "shrink")
            nb = [p[1:-1, 1:-1], p[:-2, 1:-1], p[2:, 1:-1], p[1:-1, :-2], p[1:-1, 2:]]
            out = np.logical_or.reduce(nb) if kind == "grow" else np.logical_and.reduce(nb)
        return out
    if kind == "cut":
        y0, y1, x0, x1 = _rect(draw, h, w)
        out = base.copy()
        out[y0:y1, x0:x1] = False
        return out
    if kind == "merge":
        return base | _free_mask(draw, h, w)
    return ~base


def _coord(draw, mode: str, lo: float, hi: float) -> float:
    if mode == "int":
        return draw(st.integers(int(np.floor(lo)), int(np.ceil(hi))))
    if mode == "half":
        return draw(st.integers(int(2 * lo), int(2 * hi))) / 2
    if mode == "tenth":  # (int)(x*5+.5) is exactly on a rounding boundary at x = 0.1 + 0.2n
        return draw(st.integers(int(10 * lo), int(10 * hi))) / 10
    return draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))


def _polygon_part(draw, h: int, w: int, mode: str) -> list:
    kind = draw(st.sampled_from(["random", "random", "box", "star", "collinear", "repeated", "outside", "tiny"]))
    margin = 4.0
    if kind == "box":
        x0, x1 = sorted(_coord(draw, mode, -margin, w + margin) for _ in range(2))
        y0, y1 = sorted(_coord(draw, mode, -margin, h + margin) for _ in range(2))
        return [x0, y0, x1, y0, x1, y1, x0, y1]
    if kind == "star":  # concave
        cx, cy = _coord(draw, mode, 0, w), _coord(draw, mode, 0, h)
        r_out = draw(st.floats(1.0, max(1.5, max(h, w) / 1.5)))
        r_in = r_out * draw(st.floats(0.2, 0.6))
        n = draw(st.integers(3, 6))
        pts = []
        for i in range(2 * n):
            r = r_out if i % 2 == 0 else r_in
            a = np.pi * i / n
            pts += [round(cx + r * np.cos(a), 1), round(cy + r * np.sin(a), 1)]
        return [float(v) for v in pts]
    if kind == "collinear":
        x0, y0 = _coord(draw, mode, 0, w), _coord(draw, mode, 0, h)
        dx, dy = draw(st.sampled_from([(1, 0), (0, 1), (1, 1), (2, 1)]))
        steps = sorted(draw(st.lists(st.integers(0, 10), min_size=3, max_size=5)))
        return [v for s in steps for v in (x0 + dx * s, y0 + dy * s)]
    if kind == "repeated":
        x, y = _coord(draw, mode, 0, w), _coord(draw, mode, 0, h)
        other = [_coord(draw, mode, 0, w), _coord(draw, mode, 0, h)]
        return [x, y, x, y, *other]
    if kind == "tiny":
        x, y = _coord(draw, "tenth", 0, w), _coord(draw, "tenth", 0, h)
        d = draw(st.sampled_from([0.1, 0.2, 0.3, 0.5]))
        return [x, y, x + d, y, x + d, y + d]
    lo_x, hi_x, lo_y, hi_y = (-margin, w + margin, -margin, h + margin)
    if kind == "outside":
        lo_x, hi_x = -3 * w - 5, -1.0  # wholly left of the image
    n = draw(st.integers(3, 8))
    return [v for _ in range(n) for v in (_coord(draw, mode, lo_x, hi_x), _coord(draw, mode, lo_y, hi_y))]


def _polygons(draw, h: int, w: int) -> list:
    mode = draw(st.sampled_from(["int", "half", "tenth", "float"]))
    return [_polygon_part(draw, h, w, mode) for _ in range(draw(st.integers(1, 3)))]


def _runs(draw, mask: np.ndarray, zero_runs: bool) -> list[int]:
    """The mask's runs; with `zero_runs`, sometimes with zero-length runs inside (same pixels)."""
    runs = rle_runs(mask)
    if zero_runs and draw(st.booleans()):
        # split a run r into (k, 0, r - k); "first" puts the zero runs right after the first run,
        # where two masks with the same first run (a detection and its GT) both have them
        for _ in range(draw(st.integers(1, 2))):
            where = draw(st.sampled_from(["first", "first", "first", "random"]))
            j = 0 if where == "first" else draw(st.integers(0, len(runs) - 1))
            k = runs[j] if where == "first" else draw(st.integers(0, runs[j]))
            runs = runs[:j] + [k, 0, runs[j] - k] + runs[j + 1 :]
    return runs


def _uncompressed(draw, mask: np.ndarray, zero_runs: bool) -> dict:
    h, w = mask.shape
    return {"size": [h, w], "counts": _runs(draw, mask, zero_runs)}


def _compressed(draw, mask: np.ndarray, zero_runs: bool) -> dict:
    """Compressed RLE (counts a str); with `zero_runs`, the string may hold zero-length runs."""
    if not zero_runs:
        return _encode(mask)
    h, w = mask.shape
    rle = mask_utils.frPyObjects({"size": [h, w], "counts": _runs(draw, mask, True)}, h, w)
    return {"size": [h, w], "counts": rle["counts"].decode("ascii")}


def _sizes(draw) -> tuple[int, int]:
    pick = st.one_of(st.sampled_from([1, 2, 3, 5, 8, 16, 31, 32, 33, 48, 64]), st.integers(1, 64))
    return draw(pick), draw(pick)


# --------------------------------------------------------------------------------------
# segm datasets


@st.composite
def segm_cases(draw, zero_runs: bool = True) -> CocoCase:
    """Draw an adversarial COCO segm case.

    `zero_runs`: RLE (uncompressed lists, and compressed strings made from them by
    `frPyObjects`) may contain zero-length runs inside, in GT and results.
    """
    n_images = draw(st.integers(1, 4))
    image_ids = draw(st.lists(st.integers(0, 50), min_size=n_images, max_size=n_images, unique=True))
    images = []
    for i in image_ids:
        h, w = _sizes(draw)
        images.append({"id": i, "height": h, "width": w})
    n_cats = draw(st.integers(1, 3))
    cat_ids = draw(st.lists(st.integers(1, 9), min_size=n_cats, max_size=n_cats, unique=True))
    categories = [{"id": c, "name": f"cat{c}"} for c in cat_ids]

    crowd_p = draw(st.sampled_from([0, 0.2, 0.5]))
    area_mode = draw(st.sampled_from(["mask", "mask", "mixed"]))
    annotations = []
    masks: dict[int, list] = {}  # image id -> [(category, mask)]
    for img in images:
        h, w = img["height"], img["width"]
        for _ in range(draw(st.integers(0, 5))):
            crowd = 1 if draw(st.floats(0, 1)) < crowd_p else 0
            kind = draw(
                st.sampled_from(["poly", "poly", "rle", "urle"] if not crowd else ["urle", "urle", "poly", "rle"])
            )
            if kind == "poly":
                seg = _polygons(draw, h, w)
                mask = _decode(seg, h, w)
            else:
                mask = _free_mask(draw, h, w)
                seg = _compressed(draw, mask, zero_runs) if kind == "rle" else _uncompressed(draw, mask, zero_runs)
            rle = _rle_of(seg, h, w)
            area = float(mask_utils.area(rle))
            if area_mode == "mixed" and draw(st.integers(0, 2)) == 0:
                area = draw(st.sampled_from([0, 16, 64, 256, 1024, 4096, 63.99999999999999, 256.00000000000006]))
            cat = draw(st.sampled_from(cat_ids))
            ann = {
                "image_id": img["id"],
                "category_id": cat,
                "segmentation": seg,
                "area": area,
                "bbox": [float(v) for v in mask_utils.toBbox(rle)],
                "iscrowd": crowd,
            }
            annotations.append(ann)
            masks.setdefault(img["id"], []).append((cat, mask, seg))
    ids = list(draw(st.permutations(range(1, 2 * len(annotations) + 2))))[: len(annotations)]
    for ann, i in zip(annotations, ids):
        ann["id"] = i
    gt = {"images": images, "annotations": list(draw(st.permutations(annotations))), "categories": categories}

    # ---- results
    layout = draw(st.sampled_from(["rle", "rle", "rle_bbox", "rle_mixed", "poly_bbox"]))
    tied = draw(st.sampled_from(TIED_SCORE_SETS))
    score_mode = draw(st.sampled_from(["tied", "tied", "free"]))
    wrong_size_p = draw(st.sampled_from([0, 0, 0.1]))
    preds = []
    for img in images:
        h, w = img["height"], img["width"]
        here = masks.get(img["id"], [])
        for _ in range(draw(st.integers(0, 6))):
            gt_seg = None
            if here and draw(st.integers(0, 3)) > 0:
                cat, base, gt_seg = draw(st.sampled_from(here))
                mask = _derived_mask(draw, base)
                if draw(st.integers(0, 5)) == 0:
                    cat = draw(st.sampled_from(cat_ids))
            else:
                cat, mask = draw(st.sampled_from(cat_ids)), _free_mask(draw, h, w)
            if draw(st.floats(0, 1)) < wrong_size_p:
                hh, ww = draw(st.sampled_from([(h + 1, w), (h, w + 1), (w, h), (max(1, h - 1), w)]))
                big = np.zeros((max(h, hh), max(w, ww)), bool)
                big[:h, :w] = mask
                mask = big[:hh, :ww]
                gt_seg = None
            score = draw(st.sampled_from(tied)) if score_mode == "tied" else draw(st.floats(0, 1))
            pred = {"image_id": img["id"], "category_id": cat, "score": score}
            seg = _compressed(draw, mask, zero_runs)
            copyable = gt_seg is not None and (
                layout == "poly_bbox" or (isinstance(gt_seg, dict) and isinstance(gt_seg["counts"], str))
            )
            if copyable and draw(st.integers(0, 4)) == 0:
                # the GT's own segmentation, zero-length runs and all (the segm branch of loadRes
                # only takes compressed RLE: pycocotools' area() rejects the other forms)
                seg = copy.deepcopy(gt_seg)
            elif layout == "poly_bbox":
                form = draw(st.sampled_from(["poly", "poly", "poly_extent", "rle", "urle", "none"]))
                if form == "poly":
                    seg = _polygons(draw, h, w)
                elif form == "poly_extent":  # the mask's extent as a polygon, maybe moved by half a pixel
                    x, y, bw, bh = (float(v) for v in mask_utils.toBbox(_rle_of(seg, h, w)))
                    # zero-length runs can give toBbox a 2**32-wide extent: rleFrPoly would walk
                    # (and allocate) billions of points, then overflow and crash
                    x, y, bw, bh = (min(v, 2.0 * max(h, w)) for v in (x, y, bw, bh))
                    d = draw(st.sampled_from([0.0, 0.5, -0.5, 0.1]))
                    x, y = x + d, y + d
                    seg = [[x, y, x + bw, y, x + bw, y + bh, x, y + bh]]
                elif form == "urle":
                    seg = _uncompressed(draw, mask, zero_runs)
                elif form == "none":
                    seg = None
            if seg is not None:
                pred["segmentation"] = seg
            pred_bbox = [float(v) for v in mask_utils.toBbox(_rle_of(seg, h, w))] if seg is not None else None
            if layout in ("rle_bbox", "poly_bbox") or (layout == "rle_mixed" and draw(st.booleans())):
                box_kind = draw(st.sampled_from(["mask", "free", "exact"]))
                if box_kind == "free" or pred_bbox is None:
                    x, y = _coord(draw, "half", 0, w), _coord(draw, "half", 0, h)
                    pred_bbox = [x, y, _coord(draw, "half", 0, w), _coord(draw, "half", 0, h)]
                elif box_kind == "exact":  # w*h on a range boundary
                    pred_bbox = [0.0, 0.0, *draw(st.sampled_from([(8, 8), (16, 16), (4, 16), (32, 32), (1, 64)]))]
                pred["bbox"] = pred_bbox
            preds.append(pred)
    if not preds:  # pycocotools cannot load an empty results list
        img = images[0]
        preds.append(
            {
                "image_id": img["id"],
                "category_id": cat_ids[0],
                "segmentation": _encode(np.ones((img["height"], img["width"]), bool)),
                "score": 0.5,
            }
        )
        if layout in ("rle_bbox", "poly_bbox"):
            preds[0]["bbox"] = [0.0, 0.0, float(img["width"]), float(img["height"])]
    preds = list(draw(st.permutations(preds)))
    if layout == "rle_mixed":
        preds[0].pop("bbox", None)  # the first result decides: segm branch for all
    if layout in ("rle_bbox", "poly_bbox"):
        for p in preds:
            p.setdefault("bbox", [0.0, 0.0, 1.0, 1.0])

    iou_thrs = draw(st.sampled_from([None] * 6 + list(IOU_THRS_CHOICES)))
    max_dets = draw(st.sampled_from([None] * 4 + list(MASK_MAX_DETS_CHOICES)))
    area_ranges = draw(st.sampled_from([None] * 3 + list(MASK_AREA_RANGES_CHOICES)))
    return CocoCase(
        gt=gt,
        preds=preds,
        iou_thrs=None if iou_thrs is None else list(iou_thrs),
        area_ranges=None if area_ranges is None else dict(area_ranges),
        max_dets=None if max_dets is None else list(max_dets),
        use_cats=draw(st.integers(0, 4)) > 0,
    )


# --------------------------------------------------------------------------------------
# keypoint datasets


class _Numbers:
    """Bulk coordinates from a seeded numpy generator (hypothesis draws the structure and the seed).

    Drawing every one of 17 keypoints' numbers through hypothesis would make generation the
    slowest part of the test; the seed keeps each example reproducible.
    """

    def __init__(self, seed: int, mode: str):
        self.rng = np.random.default_rng(seed)
        self.mode = mode

    def num(self, lo: float, hi: float, n: int | None = None):
        v = self.rng.uniform(lo, hi, n)
        if self.mode == "int":
            v = np.round(v)
        elif self.mode == "dec":
            v = np.round(v * 10) / 10
        return v.tolist() if n is not None else (int(v) if self.mode == "int" else float(v))

    def pick(self, choices, n: int) -> list:
        return [choices[i] for i in self.rng.integers(0, len(choices), n)]


def _gt_keypoints(nums: _Numbers, k: int, box: list, vis_mode: str) -> list:
    x, y, bw, bh = box
    if vis_mode == "none":
        vs = [0] * k
    elif vis_mode == "all":
        vs = nums.pick([1, 2], k)
    else:
        vs = nums.pick([0, 1, 2, 2], k)
    xs, ys = nums.num(x, x + bw, k), nums.num(y, y + bh, k)
    zero = nums.pick([False, True], k)  # unlabelled points written as (0, 0, 0), as COCO does
    out = []
    for j in range(k):
        px, py = (0, 0) if vs[j] == 0 and zero[j] else (xs[j], ys[j])
        out += [px, py, vs[j]]
    return out


def _dt_keypoints(draw, nums: _Numbers, k: int, gt_ann: dict | None) -> list:
    kind = draw(st.sampled_from(["copy", "jitter", "jitter", "far", "free", "extent32", "extent96", "point"]))
    if gt_ann is None and kind in ("copy", "jitter"):
        kind = "free"
    conf = nums.rng.random(k).tolist()  # the detection's third value: pycocotools never reads it
    if kind in ("copy", "jitter"):
        g = gt_ann["keypoints"]
        scale = draw(st.sampled_from([0.5, 2, 5, 20]))
        dx = nums.num(-scale, scale, k) if kind == "jitter" else [0] * k
        dy = nums.num(-scale, scale, k) if kind == "jitter" else [0] * k
        return [v for j in range(k) for v in (g[3 * j] + dx[j], g[3 * j + 1] + dy[j], conf[j])]
    if kind == "far":  # far outside the GT's doubled box (or anywhere if there is no GT)
        bx, by = (gt_ann["bbox"][0], gt_ann["bbox"][1]) if gt_ann else (0, 0)
        sign = draw(st.sampled_from([-1, 1]))
        xs, ys = nums.num(300, 2000, k), nums.num(-50, 50, k)
        return [v for j in range(k) for v in (bx + sign * xs[j], by + ys[j], conf[j])]
    if kind in ("extent32", "extent96"):  # integer extent 32x32 / 96x96: area exactly 1024 / 9216
        side = 32 if kind == "extent32" else 96
        x0, y0 = draw(st.integers(0, 100)), draw(st.integers(0, 100))
        if k == 1:  # a single keypoint has no extent
            return [x0, y0, 1]
        pts = [(x0, y0), (x0 + side, y0 + side)]
        pts += [(x0 + int(a), y0 + int(b)) for a, b in nums.rng.integers(0, side + 1, (k - 2, 2))]
        return [v for j, (px, py) in enumerate(pts) for v in (px, py, conf[j])]
    if kind == "point":  # all keypoints on one spot: zero area
        px, py = nums.num(0, 200), nums.num(0, 200)
        return [v for _ in range(k) for v in (px, py, 1)]
    xs, ys = nums.num(0, 250, k), nums.num(0, 250, k)
    return [v for j in range(k) for v in (xs[j], ys[j], nums.pick([0, 1, 2], 1)[0])]


@st.composite
def keypoint_cases(draw) -> KeypointCase:
    """Draw an adversarial COCO keypoints case (use_cats is always True: pycocotools needs it)."""
    skeleton = draw(st.sampled_from(["coco", "coco", "coco_explicit", "custom"]))
    if skeleton == "custom":
        k = draw(st.sampled_from([1, 3, 5, 5]))
        sigmas = [draw(st.sampled_from(CUSTOM_SIGMA_CHOICES)) for _ in range(k)]
    else:
        k = 17
        sigmas = list(COCO_SIGMAS) if skeleton == "coco_explicit" else None
    nums = _Numbers(draw(st.integers(0, 2**32 - 1)), draw(st.sampled_from(["int", "int", "dec", "float"])))

    n_images = draw(st.integers(1, 4))
    image_ids = draw(st.lists(st.integers(0, 50), min_size=n_images, max_size=n_images, unique=True))
    images = [{"id": i, "height": 240, "width": 320} for i in image_ids]
    n_cats = draw(st.integers(1, 2))
    cat_ids = draw(st.lists(st.integers(1, 5), min_size=n_cats, max_size=n_cats, unique=True))
    categories = [{"id": c, "name": f"cat{c}"} for c in cat_ids]

    crowd_p = draw(st.sampled_from([0, 0.15]))
    annotations = []
    for img in images:
        for _ in range(draw(st.integers(0, 5))):
            box = [*nums.num(0, 150, 2), *nums.num(0, 120, 2)]
            if draw(st.integers(0, 5)) == 0:
                box[2:] = draw(st.sampled_from([[32, 32], [96, 96], [0, 10], [1, 1]]))
            vis_mode = draw(st.sampled_from(["mixed", "mixed", "all", "none"]))
            kpts = _gt_keypoints(nums, k, box, vis_mode)
            num = sum(1 for j in range(k) if kpts[3 * j + 2] > 0)
            if draw(st.integers(0, 7)) == 0:  # inconsistent with the flags
                num = draw(st.sampled_from([0, 1, k]))
            area = draw(st.sampled_from(["box", "box", "part", "1024", "9216", "zero", "tiny", "1023", "9216+"]))
            area_value = {
                "box": box[2] * box[3],
                "part": box[2] * box[3] * 0.6,
                "1024": 1024,
                "9216": 9216.0,
                "zero": 0,
                "tiny": 1e-3,
                "1023": 1023.9999999999999,
                "9216+": 9216.000000000002,
            }[area]
            annotations.append(
                {
                    "image_id": img["id"],
                    "category_id": draw(st.sampled_from(cat_ids)),
                    "bbox": box,
                    "area": area_value,
                    "iscrowd": 1 if draw(st.floats(0, 1)) < crowd_p else 0,
                    "keypoints": kpts,
                    "num_keypoints": num,
                }
            )
    ids = list(draw(st.permutations(range(1, 2 * len(annotations) + 2))))[: len(annotations)]
    for ann, i in zip(annotations, ids):
        ann["id"] = i
    gt = {"images": images, "annotations": list(draw(st.permutations(annotations))), "categories": categories}

    bbox_mode = draw(st.sampled_from(["none", "none", "all", "first_none"]))
    tied = draw(st.sampled_from(TIED_SCORE_SETS))
    score_mode = draw(st.sampled_from(["tied", "tied", "free"]))
    by_image: dict = {}
    for ann in annotations:
        by_image.setdefault(ann["image_id"], []).append(ann)
    preds = []
    for img in images:
        here = by_image.get(img["id"], [])
        for _ in range(draw(st.integers(0, 7))):
            g = draw(st.sampled_from(here)) if here and draw(st.integers(0, 3)) > 0 else None
            cat = g["category_id"] if g is not None and draw(st.integers(0, 5)) > 0 else draw(st.sampled_from(cat_ids))
            kpts = _dt_keypoints(draw, nums, k, g)
            score = draw(st.sampled_from(tied)) if score_mode == "tied" else draw(st.floats(0, 1))
            pred = {"image_id": img["id"], "category_id": cat, "keypoints": kpts, "score": score}
            if bbox_mode == "all" or (bbox_mode == "first_none" and draw(st.booleans())):
                size = draw(st.sampled_from([[32, 32], [96, 96], None]))
                pred["bbox"] = [*nums.num(0, 150, 2), *(size or nums.num(0, 120, 2))]
            preds.append(pred)
    if not preds:
        preds.append(
            {"image_id": images[0]["id"], "category_id": cat_ids[0], "keypoints": [10, 10, 1] * k, "score": 0.5}
        )
        if bbox_mode == "all":
            preds[0]["bbox"] = [0, 0, 10, 10]
    preds = list(draw(st.permutations(preds)))
    if bbox_mode == "first_none":
        preds[0].pop("bbox", None)  # the keypoints branch for all: bboxes are replaced by the extents
    if bbox_mode == "all":
        for p in preds:
            p.setdefault("bbox", [0, 0, 10, 10])

    iou_thrs = draw(st.sampled_from([None] * 6 + list(IOU_THRS_CHOICES)))
    max_dets = draw(st.sampled_from([None] * 4 + list(KPT_MAX_DETS_CHOICES)))
    area_ranges = draw(st.sampled_from([None] * 3 + list(KPT_AREA_RANGES_CHOICES)))
    return KeypointCase(
        gt=gt,
        preds=preds,
        iou_thrs=None if iou_thrs is None else list(iou_thrs),
        area_ranges=None if area_ranges is None else dict(area_ranges),
        max_dets=None if max_dets is None else list(max_dets),
        use_cats=True,
        kpt_sigmas=sigmas,
    )

"""``pycocotools.cocoeval.COCOeval``: pycocotools' evaluation object, computed by deteval.

``evaluate()`` normalises ``params`` as pycocotools does (``np.unique`` of ``imgIds`` and, with
categories, of ``catIds``; ``maxDets`` sorted) and matches on deteval's kernels; ``accumulate()``
reads ``recThrs`` then, as pycocotools does; ``summarize()`` prints pycocotools' lines from
``eval`` and the params of the moment, its quirks included (it reads ``maxDets[2]``). The per-image
objects ``evalImgs`` and ``ious`` are built only when read (see :mod:`deteval.pycocotools.views`).
"""

from __future__ import annotations

import copy
import datetime
import time
from typing import Any

import numpy as np

from deteval.pycocotools import engine, views
from deteval.pycocotools.coco import gc_paused
from deteval.pycocotools.params import Params

__all__ = ["COCOeval", "Params"]

_UNSET = object()
_STEPS = ("_prepare", "computeIoU", "computeOks", "evaluateImg")
_NO_STEPS = "deteval's COCOeval evaluates all images at once on its kernels, not image by image"


class COCOeval:
    """Evaluate detections (``cocoDt``) against ground truth (``cocoGt``): ``evaluate()``, ``accumulate()``,
    ``summarize()``, as pycocotools 2.0.11."""

    def __init__(self, cocoGt: Any = None, cocoDt: Any = None, iouType: str = "segm") -> None:  # noqa: N803
        if not iouType:
            print("iouType not specified. use default iouType segm")
        self.cocoGt = cocoGt
        self.cocoDt = cocoDt
        self.eval: dict = {}
        self.params = Params(iouType=iouType)
        self._paramsEval: Any = {}
        self.stats: Any = []
        self._evaluated: engine.Evaluated | None = None
        self._eval_imgs: Any = _UNSET  # built on first read
        self._ious: Any = _UNSET
        if cocoGt is not None:
            self.params.imgIds = sorted(cocoGt.getImgIds())
            self.params.catIds = sorted(cocoGt.getCatIds())

    # ------------------------------------------------------------------------------------------
    # the per-image objects, built when read
    @property
    def evalImgs(self) -> Any:  # noqa: N802 - pycocotools' name
        """One record (dict, or None where the image has neither gt nor detection) per category, area
        range and image: ``dtIds``, ``gtIds``, ``dtMatches``, ``gtMatches``, ``dtScores``, ``gtIgnore``,
        ``dtIgnore`` and the keys they are for. Built from the last ``evaluate()`` on first read."""
        if self._eval_imgs is _UNSET:
            if self._evaluated is None:
                from collections import defaultdict

                self._eval_imgs = defaultdict(list)  # pycocotools' value before evaluate()
            else:
                self._eval_imgs = views.eval_imgs(self._evaluated, self._paramsEval, self._dt_ids())
        return self._eval_imgs

    @evalImgs.setter
    def evalImgs(self, value: Any) -> None:  # noqa: N802
        self._eval_imgs = value

    @property
    def ious(self) -> dict:
        """(image id, category id) -> overlaps of its detections (score order) and ground truth, or ``[]``."""
        if self._ious is _UNSET:
            self._ious = {} if self._evaluated is None else views.ious(self._evaluated, self._paramsEval)
        return self._ious

    @ious.setter
    def ious(self, value: Any) -> None:
        self._ious = value

    def _dt_ids(self) -> np.ndarray:
        """The annotation id of each detection row (deteval's loader skips results of unknown categories)."""
        ev = self._evaluated
        records = self.cocoDt.dataset["annotations"]
        full, _ = engine.containers(self.cocoGt, self.cocoDt, self._paramsEval.iouType)
        if len(full) != len(records):
            known = set(self.cocoGt.getCatIds())
            records = [r for r in records if r["category_id"] in known]
        ids = np.array([r["id"] for r in records])
        return ids if ev.dt_kept is None else ids[ev.dt_kept]

    # ------------------------------------------------------------------------------------------
    # pycocotools' per-image steps: deteval has no per-image steps to run or to override
    def _prepare(self) -> None:
        raise NotImplementedError(_NO_STEPS)

    def computeIoU(self, imgId: Any, catId: Any) -> Any:  # noqa: N802, N803
        raise NotImplementedError(_NO_STEPS + " (read .ious after evaluate())")

    def computeOks(self, imgId: Any, catId: Any) -> Any:  # noqa: N802, N803
        raise NotImplementedError(_NO_STEPS + " (read .ious after evaluate())")

    def evaluateImg(self, imgId: Any, catId: Any, aRng: Any, maxDet: Any) -> Any:  # noqa: N802, N803
        raise NotImplementedError(_NO_STEPS + " (read .evalImgs after evaluate())")

    def evaluate(self) -> None:
        """Match detections to ground truth on every image and category of ``params`` (printing as pycocotools)."""
        overridden = [name for name in _STEPS if getattr(type(self), name) is not getattr(COCOeval, name)]
        if overridden:  # a subclass's own overlaps or matching would be silently ignored: say so instead
            raise NotImplementedError(
                f"{type(self).__name__} overrides {', '.join(overridden)}: deteval's COCOeval matches on its own "
                "kernels and never calls them; evaluate such a subclass with pycocotools' COCOeval"
            )
        tic = time.time()
        print("Running per image evaluation...")
        p = self.params
        if p.useSegm is not None:
            p.iouType = "segm" if p.useSegm == 1 else "bbox"
            print(f"useSegm (deprecated) is not None. Running {p.iouType} evaluation")
        print(f"Evaluate annotation type *{p.iouType}*")
        p.imgIds = list(_unique(p.imgIds))
        if p.useCats:
            p.catIds = list(_unique(p.catIds))
        p.maxDets = sorted(p.maxDets)
        self.params = p
        if p.iouType not in ("segm", "bbox", "keypoints"):
            raise UnboundLocalError("cannot access local variable 'computeIoU' where it is not associated with a value")
        with gc_paused():  # the datasets' millions of records would be walked by every collection
            self._evaluated = engine.evaluate(self.cocoGt, self.cocoDt, p)
        self._eval_imgs = _UNSET
        self._ious = _UNSET
        self.eval = {}
        self._paramsEval = _params_copy(self.params)
        print(f"DONE (t={time.time() - tic:0.2f}s).")

    def accumulate(self, p: Any = None) -> None:
        """precision ``[T,R,K,A,M]``, recall ``[T,K,A,M]`` and scores into ``eval`` (``p``: default ``params``)."""
        print("Accumulating evaluation results...")
        tic = time.time()
        if self._evaluated is None or not _n_records(self._paramsEval):  # pycocotools: "if not self.evalImgs"
            print("Please run evaluate() first")
        if p is None:
            p = self.params
        p.catIds = p.catIds if p.useCats == 1 else [-1]
        pe = self._paramsEval
        pe_cats = pe.catIds if pe.useCats else [-1]  # before any evaluate(): AttributeError, as pycocotools
        if _same_layout(p, pe, pe_cats):
            with gc_paused():
                precision, recall, scores = engine.accumulate(self._evaluated, p.recThrs, p.maxDets)
        else:  # params changed since evaluate(): pycocotools' own walk over evalImgs, its index rules included
            precision, recall, scores = views.accumulate_records(self.evalImgs, p, pe)
        n_cat = len(p.catIds) if p.useCats else 1
        self.eval = {
            "params": p,
            "counts": [len(p.iouThrs), len(p.recThrs), n_cat, len(p.areaRng), len(p.maxDets)],
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            "precision": precision,
            "recall": recall,
            "scores": scores,
        }
        print(f"DONE (t={time.time() - tic:0.2f}s).")

    def summarize(self) -> None:
        """Print pycocotools' 12 lines (10 for keypoints) and set ``stats``; read the params of the moment."""

        def one(ap: int = 1, iouThr: float | None = None, areaRng: str = "all", maxDets: int = 100) -> float:  # noqa: N803
            p = self.params
            title = "Average Precision" if ap == 1 else "Average Recall"
            kind = "(AP)" if ap == 1 else "(AR)"
            iou = f"{p.iouThrs[0]:0.2f}:{p.iouThrs[-1]:0.2f}" if iouThr is None else f"{iouThr:0.2f}"
            aind = [i for i, label in enumerate(p.areaRngLbl) if label == areaRng]
            mind = [i for i, m in enumerate(p.maxDets) if m == maxDets]
            s = self.eval["precision"] if ap == 1 else self.eval["recall"]
            if iouThr is not None:
                s = s[np.where(iouThr == p.iouThrs)[0]]
            s = s[:, :, :, aind, mind] if ap == 1 else s[:, :, aind, mind]
            valid = s[s > -1]
            mean = -1 if len(valid) == 0 else np.mean(valid)
            print(f" {title:<18} {kind} @[ IoU={iou:<9} | area={areaRng:>6s} | maxDets={maxDets:>3d} ] = {mean:0.3f}")
            return mean

        def dets() -> np.ndarray:
            md = self.params.maxDets
            stats = np.zeros((12,))
            stats[0] = one(1)
            stats[1] = one(1, iouThr=0.5, maxDets=md[2])
            stats[2] = one(1, iouThr=0.75, maxDets=md[2])
            for i, area in enumerate(("small", "medium", "large")):
                stats[3 + i] = one(1, areaRng=area, maxDets=md[2])
            for i in range(3):
                stats[6 + i] = one(0, maxDets=md[i])
            for i, area in enumerate(("small", "medium", "large")):
                stats[9 + i] = one(0, areaRng=area, maxDets=md[2])
            return stats

        def keypoints() -> np.ndarray:
            stats = np.zeros((10,))
            for base, ap in ((0, 1), (5, 0)):
                stats[base] = one(ap, maxDets=20)
                stats[base + 1] = one(ap, maxDets=20, iouThr=0.5)
                stats[base + 2] = one(ap, maxDets=20, iouThr=0.75)
                stats[base + 3] = one(ap, maxDets=20, areaRng="medium")
                stats[base + 4] = one(ap, maxDets=20, areaRng="large")
            return stats

        if not self.eval:
            raise Exception("Please run accumulate() first")  # pycocotools raises a bare Exception
        iou_type = self.params.iouType
        if iou_type in ("segm", "bbox"):
            self.stats = dets()
        elif iou_type == "keypoints":
            self.stats = keypoints()
        else:
            raise UnboundLocalError("cannot access local variable 'summarize' where it is not associated with a value")

    def __str__(self) -> str:
        self.summarize()  # pycocotools returns None here: str() of it raises TypeError, as there
        return None  # type: ignore[return-value]


def _params_copy(p: Any) -> Any:
    """``copy.deepcopy(p)``, with the id lists copied as lists: their items (numpy scalars from ``np.unique``)
    are immutable, and deep-copying 5,000 of them one by one was a tenth of ``evaluate()``."""
    out = copy.copy(p)
    for name, value in vars(p).items():
        fast = name in ("imgIds", "catIds") and type(value) is list
        setattr(out, name, list(value) if fast else copy.deepcopy(value))
    return out


def _n_records(p: Any) -> int:
    """How many ``evalImgs`` records an evaluation with params ``p`` has (None ones included)."""
    return len(p.catIds if p.useCats else [-1]) * len(p.areaRng) * len(p.imgIds)


def _unique(values: Any) -> np.ndarray:
    """``np.unique(values)``, by a sort for integers and strings: numpy 2's ``np.unique`` is hashed, and its first
    call imports ``numpy.ma`` (a second or more in a process holding a large dataset)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuUSb":  # floats (NaN), objects: numpy's own rules
        return np.unique(values)
    arr = np.sort(arr.ravel())
    return arr[np.concatenate([[True], arr[1:] != arr[:-1]])] if len(arr) else arr


def _same_layout(p: Any, pe: Any, pe_cats: list) -> bool:
    """Whether ``p`` indexes the evaluated records as ``pe`` laid them out (then deteval accumulates them)."""
    try:
        return (
            bool(p.useCats) == bool(pe.useCats)
            and list(p.catIds) == list(pe_cats)
            and list(p.imgIds) == list(pe.imgIds)
            and [tuple(a) for a in p.areaRng] == [tuple(a) for a in pe.areaRng]
            and list(p.maxDets) == list(pe.maxDets)
            and len(p.iouThrs) == len(pe.iouThrs)
        )
    except TypeError:
        return False

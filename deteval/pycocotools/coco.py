"""``pycocotools.coco.COCO``: a COCO dataset in memory, its indexes and its queries, as pycocotools 2.0.11 has them.

The dicts are the user's (``.dataset``, ``.anns``, ... hold the very records read or given), and
``loadRes`` writes into result records what pycocotools writes (``area``, ``id``, ``iscrowd``, a box
polygon or a box). What deteval adds is one cache: the columnar containers ``COCOeval`` evaluates,
read from ``.dataset`` once per object and iou type (``createIndex()`` empties it), or from the
file itself when the object was read from one and not re-indexed since.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import itertools
import json
import time
from collections import defaultdict
from typing import Any

import numpy as np

from deteval.pycocotools import mask as maskUtils  # noqa: N812 - pycocotools' name

# pycocotools' own module, for the two methods deteval does not redo (drawing, downloading)
from deteval.pycocotools._reference import coco_module as _reference

__all__ = ["COCO"]


@contextlib.contextmanager
def gc_paused(settle: bool = False):
    """The cyclic garbage collector paused, and with ``settle`` one collection of the young generations after.

    Records hold no cycles, but every collection walks every live object: while pycocotools' loaders
    build millions of records its collections run again and again over the growing heap (most of
    ``loadRes``' time), and they go on in whatever runs next (importing numba in ``evaluate()``: seconds).
    Built with the collector paused, then settled by one collection of generations 0 and 1 (the new
    records move to the oldest generation, which is walked again only once the heap grows by a quarter),
    they cost one walk of themselves. A full collection would walk the caller's whole heap too: in a
    process holding 3M objects (a training loop's), 1.4 s per ``COCO()`` plus ``loadRes`` instead of 0.01 s.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
            if settle:
                gc.collect(1)


def _is_array_like(obj: Any) -> bool:
    return hasattr(obj, "__iter__") and hasattr(obj, "__len__")


class COCO:
    """A COCO annotation file (or results) with pycocotools' indexes: ``anns``, ``imgs``, ``cats``,
    ``imgToAnns`` and ``catToImgs``."""

    def __init__(self, annotation_file: Any = None) -> None:
        self.dataset, self.anns, self.cats, self.imgs = {}, {}, {}, {}
        self.imgToAnns, self.catToImgs = defaultdict(list), defaultdict(list)
        self._deteval_file = None  # the file .dataset was read from, while it is what .dataset indexes
        self._deteval_cache: dict = {}
        self._deteval_loadres = None  # loadRes' branch and which records it gave a box
        if annotation_file is not None:
            print("loading annotations into memory...")
            tic = time.time()
            with open(annotation_file) as f, gc_paused():
                dataset = json.load(f)
            assert type(dataset) is dict, f"annotation file format {type(dataset)} not supported"
            print(f"Done (t={time.time() - tic:0.2f}s)")
            self.dataset = dataset
            self.createIndex()
            self._deteval_file = annotation_file

    def createIndex(self) -> None:  # noqa: N802 - pycocotools' name
        """Build the id -> record indexes from ``.dataset`` (a repeated id: the last record wins)."""
        with gc_paused(settle=True):
            self._create_index()

    def _create_index(self) -> None:
        print("creating index...")
        anns, cats, imgs = {}, {}, {}
        img_to_anns, cat_to_imgs = defaultdict(list), defaultdict(list)
        data = self.dataset
        if "annotations" in data:
            for ann in data["annotations"]:
                img_to_anns[ann["image_id"]].append(ann)
                anns[ann["id"]] = ann
        if "images" in data:
            for img in data["images"]:
                imgs[img["id"]] = img
        if "categories" in data:
            for cat in data["categories"]:
                cats[cat["id"]] = cat
        if "annotations" in data and "categories" in data:
            for ann in data["annotations"]:
                cat_to_imgs[ann["category_id"]].append(ann["image_id"])
        print("index created!")
        self.anns, self.imgToAnns, self.catToImgs, self.imgs, self.cats = anns, img_to_anns, cat_to_imgs, imgs, cats
        # .dataset may have changed: what deteval read of it is stale
        self._deteval_file = None
        self._deteval_cache = {}
        self._deteval_loadres = None

    def info(self) -> None:
        """Print the ``info`` section, one ``key: value`` line each."""
        for key, value in self.dataset["info"].items():
            print(f"{key}: {value}")

    def getAnnIds(self, imgIds: Any = [], catIds: Any = [], areaRng: Any = [], iscrowd: Any = None) -> list:  # noqa: B006, N802, N803
        """Ids of the annotations on ``imgIds``, of ``catIds``, with ``areaRng[0] < area < areaRng[1]``
        and ``iscrowd``; an empty filter (or None for ``iscrowd``) is no filter."""
        imgIds = imgIds if _is_array_like(imgIds) else [imgIds]
        catIds = catIds if _is_array_like(catIds) else [catIds]
        if len(imgIds) == len(catIds) == len(areaRng) == 0:
            anns = self.dataset["annotations"]
        else:
            if len(imgIds) != 0:
                lists = [self.imgToAnns[i] for i in imgIds if i in self.imgToAnns]
                anns = list(itertools.chain.from_iterable(lists))
            else:
                anns = self.dataset["annotations"]
            if len(catIds) != 0:
                anns = [ann for ann in anns if ann["category_id"] in catIds]
            if len(areaRng) != 0:
                anns = [ann for ann in anns if areaRng[0] < ann["area"] < areaRng[1]]
        if iscrowd is not None:
            return [ann["id"] for ann in anns if ann["iscrowd"] == iscrowd]
        return [ann["id"] for ann in anns]

    def getCatIds(self, catNms: Any = [], supNms: Any = [], catIds: Any = []) -> list:  # noqa: B006, N802, N803
        """Ids of the categories named in ``catNms``, of the supercategories ``supNms``, among ``catIds``."""
        catNms = catNms if _is_array_like(catNms) else [catNms]
        supNms = supNms if _is_array_like(supNms) else [supNms]
        catIds = catIds if _is_array_like(catIds) else [catIds]
        cats = self.dataset["categories"]
        if len(catNms) != 0:
            cats = [cat for cat in cats if cat["name"] in catNms]
        if len(supNms) != 0:
            cats = [cat for cat in cats if cat["supercategory"] in supNms]
        if len(catIds) != 0:
            cats = [cat for cat in cats if cat["id"] in catIds]
        return [cat["id"] for cat in cats]

    def getImgIds(self, imgIds: Any = [], catIds: Any = []) -> list:  # noqa: B006, N802, N803
        """Ids among ``imgIds`` (all images when empty) holding an annotation of every one of ``catIds``."""
        imgIds = imgIds if _is_array_like(imgIds) else [imgIds]
        catIds = catIds if _is_array_like(catIds) else [catIds]
        if len(imgIds) == len(catIds) == 0:
            return list(self.imgs.keys())
        ids = set(imgIds)
        for i, cat_id in enumerate(catIds):
            if i == 0 and len(ids) == 0:
                ids = set(self.catToImgs[cat_id])
            else:
                ids &= set(self.catToImgs[cat_id])
        return list(ids)

    @staticmethod
    def _load(table: dict, ids: Any) -> list | None:
        if _is_array_like(ids):
            return [table[i] for i in ids]
        if type(ids) is int:
            return [table[ids]]
        return None  # pycocotools returns nothing for other types (an np.int64, say)

    def loadAnns(self, ids: Any = []) -> list | None:  # noqa: B006, N802
        """The annotation records of ``ids`` (a list, or one int)."""
        return self._load(self.anns, ids)

    def loadCats(self, ids: Any = []) -> list | None:  # noqa: B006, N802
        """The category records of ``ids`` (a list, or one int)."""
        return self._load(self.cats, ids)

    def loadImgs(self, ids: Any = []) -> list | None:  # noqa: B006, N802
        """The image records of ``ids`` (a list, or one int)."""
        return self._load(self.imgs, ids)

    def showAnns(self, anns: list, draw_bbox: bool = False) -> Any:  # noqa: N802
        """Draw ``anns`` on the current matplotlib axes: pycocotools' own ``showAnns``, run on this object."""
        return _reference.COCO.showAnns(self, anns, draw_bbox)

    def download(self, tarDir: Any = None, imgIds: Any = []) -> Any:  # noqa: B006, N802, N803
        """Download the images: pycocotools' own ``download``, run on this object."""
        return _reference.COCO.download(self, tarDir, imgIds)

    def loadRes(self, resFile: Any) -> COCO:  # noqa: N802, N803
        """Results (a JSON path, a list of records, or an ``Nx7`` array) as a COCO object on this one's images.

        As pycocotools, the branch is chosen by the first record (``bbox``, else ``segmentation``, else
        ``keypoints``, else ``caption``) and the records are completed in place: ``id`` (1-based position),
        ``area``, ``iscrowd`` 0, and a box polygon (box branch) or the mask's box (mask branch).
        """
        with gc_paused(settle=True):
            return self._load_res(resFile)

    def _load_res(self, resFile: Any) -> COCO:  # noqa: N803
        res = COCO()
        res.dataset["info"] = copy.deepcopy(self.dataset.get("info", {}))
        res.dataset["images"] = list(self.dataset["images"])
        print("Loading and preparing results...")
        tic = time.time()
        path = None
        if type(resFile) is str:
            path = resFile
            with open(resFile) as f:
                anns = json.load(f)
        elif type(resFile) is np.ndarray:
            anns = self.loadNumpyAnnotations(resFile)
        else:
            anns = resFile
        assert type(anns) is list, "results in not an array of objects"
        img_ids = {ann["image_id"] for ann in anns}
        assert img_ids == (img_ids & set(self.getImgIds())), "Results do not correspond to current coco set"
        added_box = None
        first = anns[0]  # an empty list raises IndexError, as in pycocotools
        if "caption" in first:
            keep = {img["id"] for img in res.dataset["images"]} & img_ids
            res.dataset["images"] = [img for img in res.dataset["images"] if img["id"] in keep]
            for i, ann in enumerate(anns):
                ann["id"] = i + 1
            branch = "caption"
        elif "bbox" in first and not first["bbox"] == []:
            res.dataset["categories"] = copy.deepcopy(self.dataset["categories"])
            for i, ann in enumerate(anns):
                bb = ann["bbox"]
                x1, x2, y1, y2 = bb[0], bb[0] + bb[2], bb[1], bb[1] + bb[3]
                if "segmentation" not in ann:
                    ann["segmentation"] = [[x1, y1, x1, y2, x2, y2, x2, y1]]
                ann["area"] = bb[2] * bb[3]
                ann["id"] = i + 1
                ann["iscrowd"] = 0
            branch = "bbox"
        elif "segmentation" in first:
            res.dataset["categories"] = copy.deepcopy(self.dataset["categories"])
            added_box = []
            for i, ann in enumerate(anns):
                ann["area"] = maskUtils.area(ann["segmentation"])
                added_box.append("bbox" not in ann)
                if added_box[-1]:
                    ann["bbox"] = maskUtils.toBbox(ann["segmentation"])
                ann["id"] = i + 1
                ann["iscrowd"] = 0
            branch = "segm"
        elif "keypoints" in first:
            res.dataset["categories"] = copy.deepcopy(self.dataset["categories"])
            for i, ann in enumerate(anns):
                s = ann["keypoints"]
                x, y = s[0::3], s[1::3]
                x0, x1, y0, y1 = np.min(x), np.max(x), np.min(y), np.max(y)
                ann["area"] = (x1 - x0) * (y1 - y0)
                ann["id"] = i + 1
                ann["bbox"] = [x0, y0, x1 - x0, y1 - y0]
            branch = "keypoints"
        else:
            branch = None  # pycocotools leaves such records as they are
        print(f"DONE (t={time.time() - tic:0.2f}s)")
        res.dataset["annotations"] = anns
        res.createIndex()
        res._deteval_file = path  # the file as read: deteval re-reads it (the records now carry loadRes' keys)
        res._deteval_loadres = (branch, added_box)
        return res

    def loadNumpyAnnotations(self, data: np.ndarray) -> list[dict]:  # noqa: N802
        """Rows ``[image_id, x, y, w, h, score, category_id]`` of an ``Nx7`` array as result records."""
        print("Converting ndarray to lists...")
        assert type(data) is np.ndarray
        print(data.shape)
        assert data.shape[1] == 7
        n = data.shape[0]
        anns = []
        for i in range(n):
            if i % 1000000 == 0:
                print(f"{i}/{n}")
            row = data[i]
            anns.append({
                "image_id": int(row[0]), "bbox": [row[1], row[2], row[3], row[4]], "score": row[5],
                "category_id": int(row[6]),
            })  # fmt: skip
        return anns

    def annToRLE(self, ann: dict) -> dict:  # noqa: N802
        """``ann``'s segmentation (polygons, uncompressed or compressed RLE) as compressed RLE at its image's size."""
        img = self.imgs[ann["image_id"]]
        h, w = img["height"], img["width"]
        segm = ann["segmentation"]
        if type(segm) is list:
            return maskUtils.merge(maskUtils.frPyObjects(segm, h, w))
        if type(segm["counts"]) is list:
            return maskUtils.frPyObjects(segm, h, w)
        return segm

    def annToMask(self, ann: dict) -> np.ndarray:  # noqa: N802
        """``ann``'s segmentation as a binary ``(h, w)`` uint8 mask."""
        return maskUtils.decode(self.annToRLE(ann))

"""An in-test oracle that reads VOC files and scores one class with py-faster-rcnn's ``voc_eval.py``
arithmetic, expression for expression (written from its rules, no code of it copied), for the parity
tests on the input it scores though deteval would rather not (tests/parity/test_voc_odd_inputs.py).

What it keeps of voc_eval.py, because that is where odd input changes the numbers:

- ground truth read as ``parse_rec`` reads it: ``int(...)`` of each ``<bndbox>`` corner and of
  ``<difficult>``, then ``astype(bool)`` (so any non-zero integer is difficult);
- a comp4 file split on single spaces, ``float`` of every field, no check of boxes or scores;
- the ranking ``np.argsort(-confidence)`` (``kind`` is the caller's: ``"stable"`` for deteval's
  ``ties="item"``), and per detection, over the class's ground truth in its image, the vector
  expressions ``iw = np.maximum(ixmax - ixmin + 1., 0.)``, ``uni = (bb w+1)(bb h+1) + (gt w+1)(gt h+1)
  - inters``, ``overlaps = inters / uni`` (inf and NaN as numpy gives them), ``ovmax = np.max``,
  ``jmax = np.argmax``, ``ovmax > ovthresh``;
- ``prec = tp / np.maximum(tp + fp, eps)``; the 11-point and the all-point AP of ``voc_ap``.

A detection on an image outside the image set is voc_eval.py's ``KeyError``: :class:`KeyError` here too.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np


def parse_rec(path: Path) -> list[dict]:
    """The objects of one annotation file: name, difficult (an int), bbox (4 ints)."""
    objects = []
    for obj in ET.parse(path).findall("object"):
        box = obj.find("bndbox")
        objects.append(
            {
                "name": obj.find("name").text,
                "difficult": int(obj.find("difficult").text),
                "bbox": [int(box.find(k).text) for k in ("xmin", "ymin", "xmax", "ymax")],
            }
        )
    return objects


def voc_ap(rec: np.ndarray, prec: np.ndarray, use_07_metric: bool) -> float:
    if use_07_metric:
        ap = 0.0
        for t in np.arange(0.0, 1.1, 0.1):
            p = 0 if np.sum(rec >= t) == 0 else np.max(prec[rec >= t])
            ap = ap + p / 11.0
        return ap
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    for i in range(mpre.size - 1, 0, -1):
        mpre[i - 1] = np.maximum(mpre[i - 1], mpre[i])
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])


def voc_eval(
    detfile: Path, annodir: Path, imagenames: list[str], classname: str, ovthresh: float = 0.5,
    use_07_metric: bool = False, kind: str = "stable",
) -> float:  # fmt: skip
    """AP of ``classname``: its comp4 file ``detfile``, the ``<image>.xml`` files of ``annodir``."""
    recs = {name: parse_rec(annodir / f"{name}.xml") for name in imagenames}
    class_recs = {}
    npos = 0
    for name in imagenames:
        R = [obj for obj in recs[name] if obj["name"] == classname]
        bbox = np.array([x["bbox"] for x in R])
        difficult = np.array([x["difficult"] for x in R]).astype(bool)
        npos = npos + sum(~difficult)
        class_recs[name] = {"bbox": bbox, "difficult": difficult, "det": [False] * len(R)}

    lines = detfile.read_text().splitlines(keepends=True)
    splitlines = [x.strip().split(" ") for x in lines]
    image_ids = [x[0] for x in splitlines]
    confidence = np.array([float(x[1]) for x in splitlines])
    BB = np.array([[float(z) for z in x[2:]] for x in splitlines])

    sorted_ind = np.argsort(-confidence, kind=kind)
    BB = BB[sorted_ind, :]
    image_ids = [image_ids[x] for x in sorted_ind]

    nd = len(image_ids)
    tp = np.zeros(nd)
    fp = np.zeros(nd)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for d in range(nd):
            R = class_recs[image_ids[d]]  # KeyError: an image outside the set
            bb = BB[d, :].astype(float)
            ovmax = -np.inf
            BBGT = R["bbox"].astype(float)
            if BBGT.size > 0:
                ixmin = np.maximum(BBGT[:, 0], bb[0])
                iymin = np.maximum(BBGT[:, 1], bb[1])
                ixmax = np.minimum(BBGT[:, 2], bb[2])
                iymax = np.minimum(BBGT[:, 3], bb[3])
                iw = np.maximum(ixmax - ixmin + 1.0, 0.0)
                ih = np.maximum(iymax - iymin + 1.0, 0.0)
                inters = iw * ih
                uni = (
                    (bb[2] - bb[0] + 1.0) * (bb[3] - bb[1] + 1.0)
                    + (BBGT[:, 2] - BBGT[:, 0] + 1.0) * (BBGT[:, 3] - BBGT[:, 1] + 1.0)
                    - inters
                )
                overlaps = inters / uni
                ovmax = np.max(overlaps)
                jmax = np.argmax(overlaps)
            if ovmax > ovthresh:
                if not R["difficult"][jmax]:
                    if not R["det"][jmax]:
                        tp[d] = 1.0
                        R["det"][jmax] = 1
                    else:
                        fp[d] = 1.0
            else:
                fp[d] = 1.0

        fp = np.cumsum(fp)
        tp = np.cumsum(tp)
        rec = tp / float(npos)  # NaN or inf without positives, as in voc_eval.py
        prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
        return float(voc_ap(rec, prec, use_07_metric))

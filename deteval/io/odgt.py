"""ODGT files (CrowdHuman): one JSON object per line.

Ground truth: ``{"ID", "width", "height", "gtboxes": [{"tag", "fbox", "vbox", "hbox", "extra": {"ignore"}}]}``;
predictions: ``{"ID", "dtboxes": [{"box": [x, y, w, h], "score"}]}`` (a box's ``tag`` is not read, as the
reference does not read it). Boxes become (x1, y1, x2, y2) as the reference computes them, ``x + w``.

A ground-truth box's tag is the reference's: 1 for ``"person"``, 0 for ``"background"`` (counted as a
positive in AP/MR but only ever matched as an ignore region, as the reference's class list does), -1 for
any other tag or a nonzero ``extra.ignore``; with ``box="hbox"`` (the reference's head mode) 1 for either
listed class and -1 for any other or a nonzero ``extra.ignore`` or ``head_attr.ignore``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.types import Detections, GroundTruth, IdTable

PERSON_CLASSES = ("background", "person")


@dataclass(frozen=True, eq=False)
class CrowdGroundTruth(GroundTruth):
    """A :class:`GroundTruth` (boxes x1y1x2y2) with the reference's tag per box (1, 0 or -1)."""

    tag: np.ndarray | None = None  # int8 (N,)


def _records(source: Any, what: str) -> tuple[list, str]:
    if isinstance(source, (str, os.PathLike)):
        name = str(source)
        try:
            with open(source, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as exc:
            raise InputError(name, None, f"cannot read: {exc.strerror}") from None
        out = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(name, f"line {i + 1}", f"not JSON: {exc.msg}") from None
        return out, name
    if isinstance(source, list):
        return source, f"<{what}>"
    raise InputError(what, None, f"expected an ODGT path or a list of records, got {type(source).__name__}")


def _box(rb: Any, key: str, name: str, where: str) -> list:
    b = rb.get(key) if isinstance(rb, dict) else None
    if not isinstance(b, list) or len(b) != 4 or not all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x) for x in b
    ):
        raise InputError(name, where, f"{key} must be a list of 4 finite numbers, got {b!r}")
    return b


def _xyxy(rows: list) -> np.ndarray:
    boxes = np.array(rows, dtype=np.float64).reshape(-1, 4)
    boxes[:, 2:4] += boxes[:, :2]  # the reference's x + w, y + h
    return boxes


def load_odgt_gt(source: Any, box: str = "fbox") -> CrowdGroundTruth:
    """CrowdHuman ground truth: every record an image (a repeated ID: the last record, as the reference's dict)."""
    records, name = _records(source, "gt")
    by_id: dict[str, tuple[int, dict]] = {}
    first: dict[str, int] = {}  # the reference's dict keeps an ID's first place: its ties order
    for i, r in enumerate(records):
        if not isinstance(r, dict) or not isinstance(r.get("ID"), str):
            raise InputError(name, f"line {i + 1}", "a record needs a string ID")
        first.setdefault(r["ID"], i)
        for key in ("width", "height"):
            v = r.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise InputError(name, f"line {i + 1} (ID={r['ID']!r})", f"{key} must be a number, got {v!r}")
        if not isinstance(r.get("gtboxes", []), list):
            raise InputError(name, f"line {i + 1} (ID={r['ID']!r})", "gtboxes must be a list")
        by_id[r["ID"]] = (i, r)
    ids = sorted(by_id)
    table = IdTable(np.array(ids, dtype=str) if ids else np.array([], dtype=str),
                    height=np.array([by_id[k][1]["height"] for k in ids], np.float64),
                    width=np.array([by_id[k][1]["width"] for k in ids], np.float64),
                    file_rank=np.argsort(np.argsort([first[k] for k in ids], kind="stable")).astype(np.int64))
    image, rows, tags = [], [], []
    for idx, k in enumerate(ids):
        line, r = by_id[k]
        for j, rb in enumerate(r.get("gtboxes", [])):
            where = f"line {line + 1} (ID={k!r}) gtboxes[{j}]"
            rows.append(_box(rb, box, name, where))
            if box == "hbox":  # the reference's head tag: any listed class is a person; head_attr.ignore too
                tag = 1 if rb.get("tag") in PERSON_CLASSES else -1
                head = rb.get("head_attr")
                if isinstance(head, dict) and "ignore" in head and head["ignore"] != 0:
                    tag = -1
            else:
                tag = PERSON_CLASSES.index(rb["tag"]) if rb.get("tag") in PERSON_CLASSES else -1
            extra = rb.get("extra")
            if isinstance(extra, dict) and "ignore" in extra and extra["ignore"] != 0:
                tag = -1
            tags.append(tag)
            image.append(idx)
    n = len(rows)
    tag = np.array(tags, np.int8)
    return CrowdGroundTruth(
        image=np.array(image, np.int32), category=np.zeros(n, np.int32), boxes=_xyxy(rows), area=np.zeros(n),
        crowd=np.zeros(n, bool), ignore=tag == -1, difficult=np.zeros(n, bool), ann_id=np.arange(n, dtype=np.int64),
        images=table, categories=IdTable(np.array([1], np.int64), names=["person"]), box_format="xyxy",
        source=name, tag=tag,
    )


def load_odgt_dets(source: Any, gt: CrowdGroundTruth, box: str = "box") -> Detections:
    """CrowdHuman predictions against ``gt``: an ID the ground truth lacks is an error (the reference's
    KeyError); a repeated ID keeps its last record; an image without a record has no detections."""
    records, name = _records(source, "preds")
    by_id: dict[str, tuple[int, dict]] = {}
    for i, r in enumerate(records):
        if not isinstance(r, dict) or not isinstance(r.get("ID"), str):
            raise InputError(name, f"line {i + 1}", "a record needs a string ID")
        if not isinstance(r.get("dtboxes"), list):
            raise InputError(name, f"line {i + 1} (ID={r['ID']!r})", "dtboxes must be a list")
        by_id[r["ID"]] = (i, r)
    image, rows, score = [], [], []
    for k in by_id:
        found = gt.images.lookup(np.array([k]))
        line, r = by_id[k]
        if not found[1][0]:
            raise InputError(name, f"line {line + 1}", f"ID {k!r} is not an image of the ground truth ({gt.source})")
        idx = int(found[0][0])
        for j, rb in enumerate(r["dtboxes"]):
            where = f"line {line + 1} (ID={k!r}) dtboxes[{j}]"
            rows.append(_box(rb, box, name, where))
            s = rb.get("score")
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not np.isfinite(s):
                raise InputError(name, where, f"score must be a finite number, got {s!r}")
            score.append(s)
            image.append(idx)
    n = len(rows)
    return Detections(image=np.array(image, np.int32), category=np.zeros(n, np.int32), boxes=_xyxy(rows),
                      score=np.array(score, np.float64), area=np.zeros(n), box_format="xyxy", source=name)

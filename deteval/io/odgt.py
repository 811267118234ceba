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
from deteval.io.json_source import parse_json, read_bytes
from deteval.types import Detections, GroundTruth, IdTable

PERSON_CLASSES = ("background", "person")


@dataclass(frozen=True, eq=False)
class CrowdGroundTruth(GroundTruth):
    """A :class:`GroundTruth` (boxes x1y1x2y2) with the reference's tag per box (1, 0 or -1)."""

    tag: np.ndarray | None = None  # int8 (N,)


def _records(source: Any, what: str) -> tuple[list, str]:
    if isinstance(source, (str, os.PathLike)):
        name = str(source)
        raw = read_bytes(source, what)  # the one bounded reader (errors name the file)
        raw = raw if isinstance(raw, bytes) else raw[:]
        lines = [line for line in raw.splitlines() if line.strip()]
        try:  # one parse of all lines as a list (orjson where installed)
            return parse_json(b"[" + b",".join(lines) + b"]", name), name
        except InputError:
            pass
        for i, line in enumerate(raw.splitlines()):  # name the bad line
            if line.strip():
                try:
                    json.loads(line)
                except ValueError as exc:
                    raise InputError(name, f"line {i + 1}", f"not JSON: {getattr(exc, 'msg', exc)}") from None
        raise InputError(name, None, "malformed JSON lines")
    if isinstance(source, list):
        return source, f"<{what}>"
    raise InputError(what, None, f"expected an ODGT path or a list of records, got {type(source).__name__}")


def _numbers(values: list, width: int | None, key: str, name: str, where: Any) -> np.ndarray:
    """float64 (n, width) or (n,) of finite numbers; the first bad value named (``where(i)``) otherwise."""
    try:
        arr = np.array(values)
        ok = arr.dtype.kind in "iuf" and arr.shape == ((len(values), width) if width else (len(values),))
        ok = ok and bool(np.isfinite(arr).all())
    except (ValueError, TypeError):
        ok = False
    if ok:
        return arr.astype(np.float64).reshape((len(values), width) if width else (len(values),))
    for i, v in enumerate(values):
        items = v if width and isinstance(v, list) and len(v) == width else ([v] if not width else None)
        if items is None or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x) for x in items
        ):
            shape = f"a list of {width} finite numbers" if width else "a finite number"
            raise InputError(name, where(i), f"{key} must be {shape}, got {v!r}")
    raise InputError(name, None, f"{key} values are not numeric")


def _xyxy(boxes: np.ndarray) -> np.ndarray:
    boxes = boxes.reshape(-1, 4).copy()
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
    image, rows, tags, places = [], [], [], []
    for idx, k in enumerate(ids):
        line, r = by_id[k]
        for j, rb in enumerate(r.get("gtboxes", [])):
            if not isinstance(rb, dict):
                raise InputError(name, f"line {line + 1} (ID={k!r}) gtboxes[{j}]", "expected an object")
            rows.append(rb.get(box))
            places.append((line, k, j))
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
    where = lambda i: "line {} (ID={!r}) gtboxes[{}]".format(places[i][0] + 1, *places[i][1:])  # noqa: E731
    boxes = _numbers(rows, 4, box, name, where)
    n = len(rows)
    tag = np.array(tags, np.int8)
    return CrowdGroundTruth(
        image=np.array(image, np.int32), category=np.zeros(n, np.int32), boxes=_xyxy(boxes), area=np.zeros(n),
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
    keys = list(by_id)
    idx, found = gt.images.lookup(np.array(keys, dtype=str) if keys else np.array([], dtype=str))
    if not found.all():
        k = keys[int(np.argmin(found))]
        raise InputError(name, f"line {by_id[k][0] + 1}", f"ID {k!r} is not an image of the ground truth ({gt.source})")
    image, rows, score, places = [], [], [], []
    for i, k in enumerate(keys):
        line, r = by_id[k]
        dtb = r["dtboxes"]
        for j, rb in enumerate(dtb):
            if not isinstance(rb, dict):
                raise InputError(name, f"line {line + 1} (ID={k!r}) dtboxes[{j}]", "expected an object")
            rows.append(rb.get(box))
            score.append(rb.get("score"))
        places.extend((line, k, j) for j in range(len(dtb)))
        image.extend([int(idx[i])] * len(dtb))
    where = lambda i: "line {} (ID={!r}) dtboxes[{}]".format(places[i][0] + 1, *places[i][1:])  # noqa: E731
    boxes = _numbers(rows, 4, box, name, where)
    scores = _numbers(score, None, "score", name, where)
    n = len(rows)
    return Detections(image=np.array(image, np.int32), category=np.zeros(n, np.int32), boxes=_xyxy(boxes),
                      score=scores, area=np.zeros(n), box_format="xyxy", source=name)

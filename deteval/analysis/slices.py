"""Every stat per slice of the images, from the one matching pass.

A slice is a named list of image ids; its stats are those of evaluating its images alone (pycocotools
with ``params.imgIds`` set to them): matching is per image, so the slice's images keep their matches
and only accumulation is redone, over them, in id order, by the protocol's replay (:mod:`deteval.accumulation.resample`;
for the protocols that break score ties by row, the VOC family and Open Images, the rows keep their order,
:mod:`deteval.accumulation.resample_voc`). Slices come from a
mapping ``{name: [image ids]}`` (``--slices FILE.json``) or from a field of the ground truth's image
records (``--slice-by KEY``: one slice per value, named by it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deteval.analysis.intervals import replay_of_result, stats_of_draws
from deteval.errors import InputError
from deteval.io.json_source import read_json
from deteval.result import EvalResult
from deteval.types import IdTable

__all__ = ["read_slices", "slice_stats", "slices_by_field"]


def slice_stats(result: EvalResult, slices: Mapping[str, Sequence[Any]]) -> dict[str, dict[str, float]]:
    """``{slice name: {stat: value}}`` (``stats`` then ``extra_stats``) of a result of :func:`deteval.evaluate`
    (of a protocol that provides replay), each equal to evaluating the slice's images alone. A repeated id
    counts once."""
    if not isinstance(slices, Mapping):
        raise InputError("slices", None, "slices must map a name to a list of image ids")
    replay = replay_of_result(result)
    ids = replay.image_ids
    draws = []
    for name, members in slices.items():
        if isinstance(members, (str, bytes)) or not isinstance(members, Sequence | np.ndarray):
            raise InputError("slices", str(name), "a slice is a list of image ids")
        values = _id_array(list(members))
        if values.size == 0:
            draws.append(np.zeros(0, np.int64))
            continue
        if values.dtype.kind != ids.dtype.kind and not (values.dtype.kind in "iu" and ids.dtype.kind in "iu"):
            raise InputError("slices", str(name), f"image ids must be of the ground truth's type ({ids.dtype})")
        if ids.dtype.kind in "iu":  # int64 or uint64 (ids past 2**63) on either side, compared as integers
            index, found = IdTable(ids).lookup(values)
        else:
            index, found = _lookup(ids, values)
        if not found.all():
            missing = values[~found][0].tolist()
            raise InputError("slices", str(name), f"image id {missing!r} is not in the ground truth")
        draws.append(np.unique(index).astype(np.int64))  # id order, as pycocotools sorts imgIds
    names = [str(n) for n in slices]
    stat_names = [*result.stats, *(getattr(result, "extra_stats", {}) or {})]
    rows = stats_of_draws(result, draws, by_draw=False)  # a slice's rows keep their order
    return {name: dict(zip(stat_names, map(float, row))) for name, row in zip(names, rows)}


def _id_array(members: list) -> np.ndarray:
    """Image ids as an array: Python ints as int64, or as uint64 where one is 2**63 or more (numpy's own
    guess for such a list is float64)."""
    if members and all(type(v) is int for v in members):
        for dtype in (np.int64, np.uint64):
            try:
                return np.array(members, dtype=dtype)
            except OverflowError:
                pass
    return np.asarray(members)


def _lookup(ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pos = np.minimum(np.searchsorted(ids, values), max(len(ids) - 1, 0))
    found = (ids[pos] == values) if len(ids) else np.zeros(len(values), bool)
    return pos, found


def read_slices(path: str | Path) -> dict[str, list]:
    """``--slices FILE.json``: a JSON object mapping each slice's name to a list of image ids."""
    data, _ = read_json(path, "slices")
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise InputError(str(path), None, 'slices are a JSON object {"name": [image ids], ...}')
    return data


def slices_by_field(gt: str | Path | Mapping[str, Any], key: str, raw: Any = None) -> dict[str, list]:
    """``--slice-by KEY``: one slice per value of ``key`` in the ground truth's image records (a COCO JSON
    file or its loaded dict), named by the value, in order of first appearance; images without the
    field are left out of every slice. ``raw``: the file's bytes as the loader read them (then the file
    is not read again), from :func:`deteval.io.json_source.keep_reads`."""
    if isinstance(gt, (str, Path)):
        gt, _ = read_json(gt, "ground truth", raw)
    images = gt.get("images") if isinstance(gt, Mapping) else None
    if not isinstance(images, list):
        raise InputError("--slice-by", None, "slicing by a field needs COCO ground truth with an images list")
    out: dict[str, list] = {}
    for i, im in enumerate(images):
        if not isinstance(im, Mapping) or "id" not in im:
            raise InputError("--slice-by", f"images[{i}]", "an image record needs an id")
        if key in im:
            value = im[key]
            name = value if isinstance(value, str) else json.dumps(value)
            out.setdefault(name, []).append(im["id"])
    if not out:
        raise InputError("--slice-by", key, "no image record has this field")
    return out

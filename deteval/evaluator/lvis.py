"""The streaming evaluator's LVIS inputs: categories with frequencies, and each target's federated lists.

``Evaluator(protocol="lvis", categories=...)`` takes the categories as an LVIS file lists them (records
with ``id`` and ``frequency``, ``name`` optional) or as ids / an id -> name mapping with
``frequencies=`` (id -> ``"r"``, ``"c"`` or ``"f"``). A target dict may carry ``neg_category_ids``
and ``not_exhaustive_category_ids`` (lists, arrays or tensors of category ids; missing: empty), which
:func:`federated_of_batch` turns into the :class:`~deteval.io.lvis.Federated` lists of the batch's
images. They act in :meth:`~deteval.evaluator.Evaluator.update` (which results are evaluated, which
unmatched ones are ignored), so the state keeps their effect, never the lists themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval.errors import InputError
from deteval.evaluator.inputs import category_table, to_numpy_all
from deteval.io.lvis import FREQUENCIES, Federated
from deteval.types import IdTable

__all__ = ["LIST_KEYS", "federated_of_batch", "lvis_categories"]

LIST_KEYS = ("neg_category_ids", "not_exhaustive_category_ids")


def _int_id(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def lvis_categories(categories: Sequence | Mapping | None, frequencies: Mapping | None) -> tuple[IdTable, np.ndarray]:
    """The category table (integer ids, ascending) and each category's frequency (int8, index into
    ``FREQUENCIES``) from ``categories`` (LVIS category records, or ids / id -> name with ``frequencies``).

    Raises
    ------
    InputError
        No categories, a record without an integer ``id``, a category without a frequency of r/c/f, a
        frequency given twice (in a record and in ``frequencies``) or for an unknown id, string ids.
    """
    records = categories is not None and not isinstance(categories, Mapping) and len(categories) > 0
    records = records and all(isinstance(c, Mapping) for c in categories)
    given: dict = {}
    if records:
        ids, names = [], []
        for i, c in enumerate(categories):
            rid = c.get("id")
            if not _int_id(rid):
                rule = f"an LVIS category needs an integer 'id', got {rid!r}"
                raise InputError("categories", f"categories[{i}]", rule)
            ids.append(int(rid))
            names.append(str(c.get("name", rid)))
            if c.get("frequency") is not None:
                given[int(rid)] = (c["frequency"], f"categories[{i}] (id={rid})")
        table = category_table(dict(zip(ids, names)))
        if len(table) != len(ids):
            raise InputError("categories", None, "categories lists an id twice")
    elif categories is None and frequencies:
        table = category_table(sorted(frequencies))
    elif categories is None:
        rule = "the lvis protocol needs the categories with their frequencies: give categories= as LVIS category " \
               "records (id, frequency) or frequencies= (id -> 'r', 'c' or 'f')"  # fmt: skip
        raise InputError("categories", None, rule)
    else:
        table = category_table(categories)
    if table.ids.dtype.kind != "i":
        raise InputError("categories", None, "the lvis protocol's category ids are integers")
    for k, f in (frequencies or {}).items():
        if not _int_id(k):
            raise InputError("frequencies", repr(k), "frequencies maps integer category ids to 'r', 'c' or 'f'")
        if int(k) in given:
            raise InputError("frequencies", repr(k), "this category's frequency is also in its categories record")
        given[int(k)] = (f, f"frequencies[{k!r}]")
    freq = np.zeros(len(table), np.int8)
    for k, cid in enumerate(table.ids.tolist()):
        f, rec = given.pop(cid, (None, f"category {cid}"))
        if f not in FREQUENCIES:
            got = "none" if f is None else repr(f)
            rule = f"an LVIS category needs a frequency of 'r', 'c' or 'f' (rare, common, frequent), got {got}"
            raise InputError("frequencies" if rec.startswith("frequencies") else "categories", rec, rule)
        freq[k] = FREQUENCIES.index(f)
    if given:
        cid = next(iter(given))
        raise InputError("frequencies", repr(cid), f"category {cid} is not one of the categories")
    return table, freq


def _id_list(v: Any, where: tuple[str, str], key: str) -> np.ndarray:
    """One image's list of category ids as int64: integers (or whole-number floats, as labels read)."""
    if v is None:
        return np.zeros(0, np.int64)
    if isinstance(v, (str, bytes, Mapping)):
        raise InputError(where[0], where[1], f"{key} must be a list of category ids, got {type(v).__name__}")
    try:
        arr = np.asarray(v)
    except (ValueError, TypeError) as exc:
        raise InputError(where[0], where[1], f"{key} is not a list of category ids ({exc})") from None
    if arr.size == 0:
        return np.zeros(0, np.int64)
    if arr.ndim != 1:
        raise InputError(where[0], where[1], f"{key} must be a flat list of category ids, got shape {arr.shape}")
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        whole = np.isfinite(arr) & (arr == np.round(arr)) & (np.abs(arr) < 2.0**63)
        if whole.all():
            return arr.astype(np.int64)
        j = int(np.argmax(~whole))
        raise InputError(where[0], where[1], f"{key}[{j}] = {arr[j].item()!r} is not an integer category id")
    j = next((j for j, x in enumerate(arr.tolist()) if not _int_id(x)), 0)
    raise InputError(where[0], where[1], f"{key}[{j}] = {arr.tolist()[j]!r} is not an integer category id")


def federated_of_batch(target: list, image_ids: list, table: IdTable, frequency: np.ndarray, call: int) -> Federated:
    """The batch's per-image ``neg_category_ids`` and ``not_exhaustive_category_ids`` as CSR over its images
    (in batch order), category indices into ``table``.

    Raises
    ------
    InputError
        A list that is not of integer ids, or names an id outside the categories (naming the update,
        the image and the list).
    """
    raw = to_numpy_all([t.get(key) for t in target for key in LIST_KEYS])
    parts: dict[str, list] = {key: [] for key in LIST_KEYS}
    for i in range(len(target)):
        rec = f"update {call}, target[{i}]" + ("" if image_ids[i] is None else f" (image_id={image_ids[i]!r})")
        for j, key in enumerate(LIST_KEYS):
            ids = _id_list(raw[i * len(LIST_KEYS) + j], ("target", rec), key)
            idx, found = table.lookup(ids)
            if not found.all():
                bad = ids[int(np.argmin(found))].item()
                rule = f"{key} names {bad!r}, which is not one of the categories given to the Evaluator"
                raise InputError("target", rec, rule)
            parts[key].append(idx.astype(np.int32))
    csr = []
    for key in LIST_KEYS:
        lens = np.array([len(p) for p in parts[key]], np.int64)
        cats = np.concatenate(parts[key]) if parts[key] else np.zeros(0, np.int32)
        csr += [np.concatenate([[0], np.cumsum(lens)]).astype(np.int64), cats.astype(np.int32)]
    return Federated(csr[0], csr[1], csr[2], csr[3], frequency)

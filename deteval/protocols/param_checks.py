"""The checks of parameter values the protocols share, with one wording of their errors.

Each check takes the parameter's name (the :class:`InputError`'s source, which
:func:`deteval.protocols.presets.resolve` re-labels with a user's preset file when the value came from
there) and returns the value converted, or raises ``InputError(key, None, "<what> must be <rule>, got
<value>")``; ``what`` is the parameter's name unless a plainer one reads better ("IoU thresholds").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

from deteval.errors import InputError

__all__ = [
    "area_ranges", "choice", "count", "cut", "flag", "grid", "number_in", "positive_counts", "sigmas",
    "unit_thresholds",
]  # fmt: skip


def fail(key: str, rule: str, record: str | None = None) -> NoReturn:
    """Raise the error of parameter ``key`` breaking ``rule``."""
    raise InputError(key, record, rule)


def grid(spec: Any) -> np.ndarray:
    """A preset's ``{ linspace = [start, stop, num] }`` (``np.linspace``, as pycocotools and lvis-api build
    their grids) or a list of numbers, as a flat float64 array (unchecked)."""
    if isinstance(spec, Mapping):
        start, stop, num = spec["linspace"]
        return np.linspace(start, stop, int(num), endpoint=True)
    return np.asarray(spec, dtype=np.float64).reshape(-1)


def unit_thresholds(key: str, spec: Any, what: str = "IoU thresholds", ascending: bool = False) -> np.ndarray:
    """A non-empty grid (:func:`grid`) of numbers in [0, 1], ``ascending`` if asked."""
    try:
        thrs = grid(spec)
    except (TypeError, ValueError, KeyError):
        fail(key, f"{what} must be numbers, got {spec!r}")
    order = " ascending" if ascending else ""
    if len(thrs) == 0 or not np.all((thrs >= 0) & (thrs <= 1)) or (ascending and np.any(np.diff(thrs) < 0)):
        fail(key, f"{what} must be a non-empty{order} list in [0, 1], got {thrs.tolist()}")
    return thrs


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def positive_counts(key: str, values: Any, what: str = "max dets") -> list[int]:
    """One positive integer or a non-empty list of them (a max-dets list)."""
    values = list(values) if isinstance(values, (list, tuple, np.ndarray)) else [values]
    if len(values) == 0 or any(not _is_int(v) or v < 1 for v in values):
        fail(key, f"{what} must be positive integers, got {values}")
    return [int(v) for v in values]


def count(key: str, value: Any, what: str | None = None) -> int:
    """One positive integer."""
    if not _is_int(value) or value < 1:
        fail(key, f"{what or key} must be a positive integer, got {value!r}")
    return int(value)


def cut(key: str, value: Any, what: str | None = None) -> int:
    """A cut: an integer, -1 (any negative) for none."""
    if not _is_int(value):
        fail(key, f"{what or key} must be an integer (-1: no cut), got {value!r}")
    return int(value)


def area_ranges(key: str, spec: Any, need: str | None = None) -> tuple[tuple[str, ...], np.ndarray]:
    """Area ranges: a non-empty mapping of labels to inclusive ``(lo, hi)`` bounds with ``lo <= hi`` (an
    inverted range holds no area: surely a typo), ``need`` among its labels; ``(labels, float64 (A, 2))``."""
    if not isinstance(spec, Mapping):
        fail(key, f"area ranges must map labels to (lo, hi) pairs, got {spec!r}")
    try:
        ranges = np.array([[float(lo), float(hi)] for lo, hi in spec.values()], dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError):
        fail(key, f"area ranges must map labels to (lo, hi) pairs, got {spec}")
    if len(ranges) == 0:
        fail(key, "at least one area range is needed")
    if need is not None and need not in spec:
        fail(key, f"area ranges must include {need!r}, got {spec!r}")
    for label, (lo, hi) in zip(spec, ranges.tolist()):
        if not lo <= hi:  # NaN bounds fail too: no area compares with them
            fail(key, f"area range (lo, hi) must have lo <= hi, got ({lo:g}, {hi:g})", str(label))
    return tuple(str(k) for k in spec), ranges


def sigmas(key: str, values: Any, default: np.ndarray, what: str = "keypoint sigmas") -> np.ndarray:
    """Positive finite numbers, at least one (``default`` when ``values`` is None)."""
    try:
        out = default if values is None else np.asarray(values, dtype=np.float64).reshape(-1)
        ok = len(out) > 0 and bool(np.all(np.isfinite(out) & (out > 0)))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        fail(key, f"{what} must be positive numbers, got {values!r}")
    return out


def number_in(key: str, value: Any, lo: float, hi: float, what: str | None = None) -> float:
    """A number in ``[lo, hi]`` (not a bool)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        fail(key, f"{what or key} must be a number, got {value!r}")
    if isinstance(value, bool) or not lo <= f <= hi:
        fail(key, f"{what or key} must lie in [{lo:g}, {hi:g}], got {value!r}")
    return f


def choice(key: str, value: Any, choices: tuple[str, ...], what: str | None = None) -> Any:
    """One of ``choices``."""
    if value not in choices:
        fail(key, f"{what or key} must be one of {choices}, got {value!r}")
    return value


def flag(key: str, value: Any, what: str | None = None) -> bool:
    """True or false (a bool, not a truthy value)."""
    if not isinstance(value, bool):
        fail(key, f"{what or key} must be true or false, got {value!r}")
    return value

"""Reading JSON from a path or taking an already-loaded object, with clear errors."""

from __future__ import annotations

import mmap
import os
from contextlib import suppress
from itertools import chain
from typing import Any

from deteval.errors import InputError
from deteval.tuning import TUNING

_UNLOADED = object()
# orjson parses 3-5x faster than the standard library (optional; None without it); imported on the first parse,
# not with deteval (2 ms of a start whose files the byte scanner may read)
_orjson: Any = _UNLOADED


def _fast_parser() -> Any:
    global _orjson
    if _orjson is _UNLOADED:
        try:
            import orjson
        except ImportError:  # pragma: no cover - exercised only without orjson
            orjson = None
        _orjson = orjson
    return _orjson


MAX_JSON_DEPTH = 512  # a bound both parsers' limits lie above; see _too_deep


def read_bytes(source: str | os.PathLike, what: str, populate: bool = True) -> bytes | mmap.mmap:
    """The bytes of a file, with clear errors naming it.

    A regular file of ``TUNING.map_bytes`` (1 MB) or more comes as a read-only :class:`MappedFile` (sliced,
    it gives ``bytes``), not a copy: the byte scanners read it in place. Its pages are mapped at once
    unless ``populate`` is false (a scan in pieces maps each piece's as it starts it, and drops them
    when done, but for results' masks, read from there later: :func:`deteval.io.scan.pieces.load_pages`).
    """
    name = str(source)
    try:
        with open(source, "rb") as f:
            if os.fstat(f.fileno()).st_size >= TUNING.map_bytes:
                with suppress(OSError, ValueError):  # not a regular file, say: read as usual
                    return MappedFile.of(f.fileno(), name, populate)
            return f.read()
    except FileNotFoundError:
        raise InputError(name, None, f"{what} file not found") from None
    except IsADirectoryError:
        raise InputError(name, None, f"{what} must be a JSON file, got a directory") from None
    except OSError as exc:
        raise InputError(name, None, f"cannot read {what} file: {exc.strerror}") from None


class MappedFile(mmap.mmap):
    """A file's bytes as a read-only memory map that knows its file: results' masks are read from it
    after the load (:class:`deteval.rle.CompressedMasks`), and :meth:`check` tells whether the file was
    rewritten meanwhile (the map would then show the new bytes, or fault past a shorter file's end)."""

    @classmethod
    def of(cls, fileno: int, name: str, populate: bool) -> MappedFile:
        if os.name != "posix":
            mapped = cls(fileno, 0, access=mmap.ACCESS_READ)
        else:  # pages mapped at once (MAP_POPULATE, Linux), not one fault at a time while scanning
            flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if populate else 0)
            mapped = cls(fileno, 0, flags=flags, prot=mmap.PROT_READ)
        mapped.name, mapped.stamp = name, _stamp(os.fstat(fileno))
        return mapped

    def check(self) -> None:
        """Raise :class:`InputError` if the file mapped was changed in place since it was mapped. A file
        replaced (renamed over) or deleted leaves the mapped one as it was: no error."""
        try:
            now = os.stat(self.name)
        except OSError:
            return
        if (now.st_dev, now.st_ino) == self.stamp[:2] and _stamp(now) != self.stamp:
            rule = "changed since it was loaded (its masks are read from the file as they are evaluated): load it again"
            raise InputError(self.name, None, rule)


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def parse_json(raw: bytes | mmap.mmap, name: str) -> Any:
    """Parse JSON bytes; a malformed document raises naming ``name``, the line and the column."""
    if isinstance(raw, mmap.mmap):
        raw = raw[:]  # the parsers take bytes
    orjson = _fast_parser()
    if orjson is not None:
        try:
            return orjson.loads(raw)
        except ValueError as exc:
            if "depth limit" in str(exc):  # orjson stops at 1024 levels; the stdlib would recurse, then fail
                raise _too_deep(name) from None
            # NaN/Infinity literals (json.dump writes them) or a real error: the stdlib decides
    import json

    try:
        return json.loads(raw)
    except RecursionError:  # the stdlib's parser recurses once per level: ~1000 levels end it
        raise _too_deep(name) from None
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for bytes that are not text
        line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        at = f" at line {line}, column {col}" if line is not None else ""
        msg = getattr(exc, "msg", None) or str(exc)
        raise InputError(name, None, f"malformed JSON{at}: {msg}") from None


def _too_deep(name: str) -> InputError:
    """Both parsers give up at about 1000 levels (orjson at 1024, the stdlib at Python's recursion
    limit), far above any COCO or VOC file (6 levels at most), so the rule names a safe bound."""
    return InputError(name, None, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def is_path(source: Any) -> bool:
    return isinstance(source, (str, os.PathLike))


def read_json(source: Any, what: str, raw: bytes | mmap.mmap | None = None) -> tuple[Any, str]:
    """Return ``(data, name)`` for a path or an already-loaded JSON object.

    ``name`` is the path, or ``what`` (for example ``"gt"``) for in-memory data;
    every later error message starts with it. ``raw`` is the file's bytes when
    the caller has read them already.
    """
    if not is_path(source):
        return source, f"<{what}>"
    return parse_json(read_bytes(source, what) if raw is None else raw, str(source)), str(source)


# What JSON parsing gives, and what needs no conversion
_SCALARS = frozenset({int, float, str, bool, type(None), bytes})
_CONTAINERS = frozenset({list, tuple, dict})


def python_value(value: Any) -> Any:
    """``value`` with numpy and torch scalars and arrays anywhere in it as Python values.

    Records built in memory hold them (an ``np.int64`` id, an ndarray box, a 0-d tensor score): anything
    with a ``tolist()`` (numpy scalars and arrays, torch tensors; duck-typed, torch is never imported) is
    read through it, so a valid number is never refused for its type. Lists, tuples and dicts are
    rebuilt only where something in them is converted.
    """
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list or kind is tuple:
        if set(map(type, value)) <= _SCALARS:
            return value
        return kind(python_value(v) for v in value)
    if kind is dict:
        if set(map(type, value.values())) <= _SCALARS:
            return value
        return {k: python_value(v) for k, v in value.items()}
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        try:
            return python_value(tolist())
        except TypeError:  # a tolist() that is not numpy's
            return value
    return value


def python_values(values: list, deep: bool = True) -> list:
    """``values`` as :func:`python_value` reads each; the list itself when all are plain already.

    The check walks the values level by level at C speed (no Python call per number): a parsed file's
    columns pass it untouched. ``deep=False`` looks at the values themselves only (an ndarray box, an
    ``np.int64`` id), leaving numpy scalars inside lists to the caller's ``np.array``, which reads them
    exactly: a cheaper check for columns of numbers.
    """
    level: Any = values
    while True:
        kinds = set(map(type, level))
        if kinds <= _SCALARS:
            return values
        if not kinds <= _SCALARS | _CONTAINERS:
            return [python_value(v) for v in values]
        if not deep:
            return values
        level = list(chain.from_iterable(v.values() if type(v) is dict else v for v in level if type(v) in _CONTAINERS))

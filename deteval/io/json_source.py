"""Reading JSON from a path or taking an already-loaded object, with clear errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from deteval.errors import InputError

try:  # orjson parses 3-5x faster than the standard library; optional
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None


def read_bytes(source: str | os.PathLike, what: str) -> bytes:
    """The bytes of a file, with clear errors naming it."""
    name = str(source)
    try:
        return Path(source).read_bytes()
    except FileNotFoundError:
        raise InputError(name, None, f"{what} file not found") from None
    except IsADirectoryError:
        raise InputError(name, None, f"{what} must be a JSON file, got a directory") from None
    except OSError as exc:
        raise InputError(name, None, f"cannot read {what} file: {exc.strerror}") from None


def parse_json(raw: bytes, name: str) -> Any:
    """Parse JSON bytes; a malformed document raises naming ``name``, the line and the column."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except ValueError:
            pass  # NaN/Infinity literals (json.dump writes them) or a real error: the stdlib decides
    import json

    try:
        return json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for bytes that are not text
        line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        at = f" at line {line}, column {col}" if line is not None else ""
        msg = getattr(exc, "msg", None) or str(exc)
        raise InputError(name, None, f"malformed JSON{at}: {msg}") from None


def is_path(source: Any) -> bool:
    return isinstance(source, (str, os.PathLike))


def read_json(source: Any, what: str, raw: bytes | None = None) -> tuple[Any, str]:
    """Return ``(data, name)`` for a path or an already-loaded JSON object.

    ``name`` is the path, or ``what`` (for example ``"gt"``) for in-memory data;
    every later error message starts with it. ``raw`` is the file's bytes when
    the caller has read them already.
    """
    if not is_path(source):
        return source, f"<{what}>"
    return parse_json(read_bytes(source, what) if raw is None else raw, str(source)), str(source)

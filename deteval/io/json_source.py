"""Reading JSON from a path or taking an already-loaded object, with clear errors: the one reader of
every JSON-like input (main and side files, stdin, ``.gz``, a byte order mark), every read bounded."""

from __future__ import annotations

import io
import mmap
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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


MAX_JSON_DEPTH = 1024  # orjson's own bound; the standard library's parser is held to it too (_check_depth)
GZIP_MAGIC = b"\x1f\x8b"  # no JSON or text file starts with these bytes: a .gz file is read through gzip
UTF8_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


class _Limits:
    """Bounds of every read: ``max_input_bytes`` caps what is read into memory from a stream (a pipe,
    stdin, a device) or decompressed from a ``.gz`` file; a regular file's size is known before it is
    read (large ones are mapped, not copied). :func:`max_input_bytes` changes it for a block."""

    max_input_bytes = 2 << 30  # 2 GiB


LIMITS = _Limits()


@contextmanager
def max_input_bytes(limit: int | None) -> Iterator[None]:
    """In this block, streams and decompressed files may give up to ``limit`` bytes (None: unchanged)."""
    old = LIMITS.max_input_bytes
    if limit is not None:
        LIMITS.max_input_bytes = int(limit)
    try:
        yield
    finally:
        LIMITS.max_input_bytes = old


_KEPT: dict[str, Any] | None = None  # see keep_reads


@contextmanager
def keep_reads() -> Iterator[dict[str, Any]]:
    """In this block, every file :func:`read_bytes` reads is kept in the dict yielded (name -> its bytes, or
    its map): a second look at an input (``--slice-by`` reads the ground truth's image records) parses the
    very bytes the loader read, never the file again (a pipe has none to give twice)."""
    global _KEPT
    if _KEPT is not None:  # within another such block: its dict
        yield _KEPT
        return
    _KEPT = {}
    try:
        yield _KEPT
    finally:
        _KEPT = None


def read_bytes(
    source: str | os.PathLike, what: str, populate: bool = True, json_text: bool | None = True
) -> bytes | mmap.mmap:
    """The bytes of a file, with clear errors naming it; every read bounded.

    A regular file of ``TUNING.map_bytes`` (1 MB) or more comes as a read-only :class:`MappedFile` (sliced,
    it gives ``bytes``), not a copy: the byte scanners read it in place. Its pages are mapped at once
    unless ``populate`` is false (a scan in pieces maps each piece's as it starts it, and drops them
    when done, but for results' masks, read from there later: :func:`deteval.io.scan.pieces.load_pages`).
    A stream (stdin, a pipe, a device) is read in chunks up to ``LIMITS.max_input_bytes``; a gzip file
    (``.json.gz``, known by its first bytes) is decompressed, bounded the same way. A stream that is not
    text (control bytes: ``/dev/zero``, random bytes) is refused at its first chunk, and with ``json_text``
    one whose first byte cannot start a JSON document; ``json_text=None``: any bytes.
    """
    raw = _read_bytes(source, what, populate, json_text)
    if _KEPT is not None:
        _KEPT.setdefault(str(source), raw)
    return raw


def _read_bytes(source: str | os.PathLike, what: str, populate: bool, json_text: bool | None) -> bytes | mmap.mmap:
    name = str(source)
    try:
        with open(source, "rb") as f:
            st = os.fstat(f.fileno())
            regular = stat.S_ISREG(st.st_mode)
            if regular and os.pread(f.fileno(), 2, 0) == GZIP_MAGIC:
                return _gunzip(f, name, what)
            if regular and st.st_size >= TUNING.map_bytes:
                with suppress(OSError, ValueError):  # a file system that cannot map: read as usual
                    return MappedFile.of(f.fileno(), name, populate)
            # a small file, or a stream (whose first bytes may be gzip's too)
            # (a regular file's known size is allowed on top of the limit: it is what the user gave)
            return _read_stream(f, name, what, None if regular else json_text, st.st_size if regular else 0)
    except FileNotFoundError:
        raise InputError(name, None, f"{what} file not found") from None
    except IsADirectoryError:
        raise InputError(name, None, f"{what} must be a file, got a directory") from None
    except OSError as exc:
        raise InputError(name, None, f"cannot read {what} file: {exc.strerror or exc}") from None


def _too_large(name: str, what: str) -> InputError:
    limit = LIMITS.max_input_bytes
    return InputError(
        name, None, f"{what} gives more than {limit:,} bytes (the limit for a stream or a decompressed file; "
        "raise it with --max-input-bytes)"
    )


def _read_stream(f: Any, name: str, what: str, json_text: bool | None, known: int = 0) -> bytes:
    limit, parts, total = LIMITS.max_input_bytes + known, [], 0
    while True:
        chunk = f.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(parts)
        if not parts and chunk[:2] == GZIP_MAGIC:  # a gzip stream (zcat's input, say)
            return _gunzip(io.BufferedReader(_Prefixed(chunk, f)), name, what)
        if json_text is not None:
            _check_text(chunk, name, what, total, json_text and not parts)
        parts.append(chunk)
        total += len(chunk)
        if total > limit:
            raise _too_large(name, what)


class _Prefixed(io.RawIOBase):
    """A stream's first chunk, already read, then the rest of it."""

    def __init__(self, head: bytes, rest: Any) -> None:
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        data = self.head[: len(buf)] if self.head else self.rest.read(len(buf))
        self.head = self.head[len(data) :] if self.head else b""
        buf[: len(data)] = data
        return len(data)


_JSON_START = frozenset(b' \t\r\n{["-0123456789tfnNI')


_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # bytes JSON text never holds, in strings or out


def _check_text(chunk: bytes, name: str, what: str, offset: int, json_start: bool) -> None:
    """A stream that is not text (``/dev/zero``, ``/dev/urandom``) refused at its first chunk, not after the
    size limit; with ``json_start`` (the first chunk of JSON) one that cannot start a JSON document."""
    body = chunk[3:] if json_start and chunk.startswith(UTF8_BOM) else chunk
    if json_start and body and body[0] not in _JSON_START:
        raise InputError(name, None, f"{what} is not JSON (it starts with byte 0x{body[0]:02x})")
    bad = _CONTROL.search(chunk)
    if bad is not None:
        at = offset + bad.start()
        raise InputError(name, None, f"not {what} text: control byte 0x{chunk[bad.start()]:02x} at byte {at}")


def _gunzip(f: Any, name: str, what: str) -> bytes:
    import gzip
    import zlib

    limit, parts, total = LIMITS.max_input_bytes, [], 0
    try:
        with gzip.GzipFile(fileobj=f, mode="rb") as z:
            while True:
                chunk = z.read(min(_CHUNK, limit + 1 - total))
                if not chunk:
                    return b"".join(parts)
                parts.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise _too_large(name, what)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise InputError(name, None, f"{what} is not a whole gzip file: {exc}") from None


def read_text(source: str | os.PathLike, what: str) -> str:
    """A text file (class names, image lists, CSV) as :func:`read_bytes` reads it (bounded, ``.gz``), decoded
    as UTF-8 with an optional byte order mark; :class:`InputError` naming the file for bytes that are not."""
    raw = read_bytes(source, what, json_text=False)
    try:
        return bytes(raw[:]).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(str(source), None, f"{what} is not UTF-8 text (byte {exc.start})") from None


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


def parse_json(raw: bytes | mmap.mmap, name: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON bytes; a malformed document raises naming ``name``, the line and the column.

    Either parser gives the same document or the same refusal: a UTF-8 byte order mark is skipped,
    and nesting deeper than ``max_depth`` (:data:`MAX_JSON_DEPTH`, orjson's bound; a deeper one is the
    standard library's to parse) is refused by both.
    """
    if isinstance(raw, mmap.mmap):
        raw = raw[:]  # the parsers take bytes
    if raw[:3] == UTF8_BOM:
        raw = raw[3:]
    orjson = _fast_parser()
    if orjson is not None and not _long_digit_run(raw):
        try:
            return orjson.loads(raw)
        except ValueError as exc:
            if "depth limit" in str(exc) and max_depth <= MAX_JSON_DEPTH:  # orjson stops past 1024 levels
                raise _too_deep(name, max_depth) from None
            # NaN/Infinity literals (json.dump writes them), integers beyond 64 bits, or a real error:
            # the stdlib decides
    import json

    try:
        with _recursion_room(max_depth + 64):  # its parser recurses once per level
            data = json.loads(raw)
    except RecursionError:
        raise _too_deep(name, max_depth) from None
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for bytes that are not text
        line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        at = f" at line {line}, column {col}" if line is not None else ""
        msg = getattr(exc, "msg", None) or str(exc)
        raise InputError(name, None, f"malformed JSON{at}: {msg}") from None
    check_depth(data, name, max_depth)
    return data


_DIGITS = bytes(49 if 48 <= i <= 57 else 48 for i in range(256))  # digits -> "1", anything else -> "0"


def _long_digit_run(raw: bytes) -> bool:
    """Whether ``raw`` holds 19 digits in a row: an integer orjson would read as a float (past 64 bits, or
    below -2**63), where the standard library reads the integer written (as pycocotools does)."""
    return raw.translate(_DIGITS).find(b"1" * 19) >= 0


@contextmanager
def _recursion_room(levels: int) -> Iterator[None]:
    """Python's recursion limit raised, for this block, so that ``levels`` more calls fit."""
    import sys

    old = sys.getrecursionlimit()
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    sys.setrecursionlimit(max(old, depth + levels + 50))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def check_depth(data: Any, name: str, limit: int = MAX_JSON_DEPTH, kind: str = "JSON") -> None:
    """:class:`InputError` when ``data`` nests lists and dicts deeper than ``limit`` (a top-level ``[]`` is one
    level, as orjson counts). Level by level, no recursion: the deepest document is checked like any."""
    level, depth = [data], 0
    while True:
        level = [v for v in level if type(v) in (list, dict)]
        if not level:
            return
        depth += 1
        if depth > limit:
            raise _too_deep(name, limit, kind)
        level = list(chain.from_iterable(v.values() if type(v) is dict else v for v in level))


def _too_deep(name: str, limit: int = MAX_JSON_DEPTH, kind: str = "JSON") -> InputError:
    """Far above any COCO, VOC or hierarchy file (a few levels; Open Images' hierarchy about 6)."""
    return InputError(name, None, f"{kind} nested deeper than {limit} levels")


def is_path(source: Any) -> bool:
    return isinstance(source, (str, os.PathLike))


def read_json(
    source: Any, what: str, raw: bytes | mmap.mmap | None = None, max_depth: int = MAX_JSON_DEPTH
) -> tuple[Any, str]:
    """Return ``(data, name)`` for a path or an already-loaded JSON object.

    ``name`` is the path, or ``what`` (for example ``"gt"``) for in-memory data;
    every later error message starts with it. ``raw`` is the file's bytes when
    the caller has read them already.
    """
    if not is_path(source):
        return source, f"<{what}>"
    return parse_json(read_bytes(source, what) if raw is None else raw, str(source), max_depth), str(source)


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

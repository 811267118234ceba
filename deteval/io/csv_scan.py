"""Comma-separated files to columns: a numba byte scanner for large CSVs (Open Images: tens of millions of rows).

One pass finds every field's span; numbers are converted by the JSON scanner's exact converter
(:mod:`deteval.io.scan.numbers`: bit for bit Python's ``float(text)``), with Python's own ``float`` on the
few tokens it declines (``+1``, ``.5``, ``1e400`` ...); text columns become codes into their sorted
distinct values, without a Python string per row.

The dialect: a header line naming the columns; ``,`` between fields; ``\\n`` or ``\\r\\n`` line ends;
blank lines skipped; a field may be quoted (``"a,b"``), but a doubled quote inside one is refused (the
Open Images files have none). Errors name the file, the line and the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from deteval.errors import InputError
from deteval.io.scan.lexer import number_token
from deteval.io.scan.numbers import to_float
from deteval.jit import njit

_PROBLEMS = (
    "",
    "a quoted field has no closing quote",
    "a doubled quote inside a quoted field is not supported",
    "text follows a closing quote",
    "wrong number of fields",
)


@njit(cache=True, nogil=True)
def _count_lines(buf):  # pragma: no cover - numba
    n = 1
    for i in range(len(buf)):
        if buf[i] == 10:
            n += 1
    return n


@njit(cache=True, nogil=True)
def _split(buf, pos, ncol, starts, ends, lines):  # pragma: no cover - numba
    """Field spans of every data row from ``pos``: (rows, 0, 0, 0), or (rows, line, problem, fields) on an error."""
    n = len(buf)
    row = 0
    line = 2
    while pos < n:
        if buf[pos] == 10:
            pos += 1
            line += 1
            continue
        if buf[pos] == 13 and pos + 1 < n and buf[pos + 1] == 10:
            pos += 2
            line += 1
            continue
        col = 0
        while True:
            if pos < n and buf[pos] == 34:
                pos += 1
                s = pos
                while pos < n and buf[pos] != 34:
                    pos += 1
                if pos >= n:
                    return row, line, 1, col
                e = pos
                pos += 1
                if pos < n and buf[pos] == 34:
                    return row, line, 2, col
                if pos < n and buf[pos] != 44 and buf[pos] != 10 and buf[pos] != 13:
                    return row, line, 3, col
            else:
                s = pos
                while pos < n and buf[pos] != 44 and buf[pos] != 10 and buf[pos] != 13:
                    pos += 1
                e = pos
            if col < ncol:
                starts[row, col] = s
                ends[row, col] = e
            col += 1
            if pos < n and buf[pos] == 44:
                pos += 1
                continue
            if pos < n and buf[pos] == 13:
                pos += 1
            if pos < n and buf[pos] == 10:
                pos += 1
            break
        if col != ncol:
            return row, line, 4, col
        lines[row] = line
        row += 1
        line += 1
    return row, 0, 0, 0


@njit(cache=True, nogil=True)
def _floats(buf, starts, ends, col, out, declined):  # pragma: no cover - numba
    """Column ``col`` as float64 into ``out``; the rows left to Python go to ``declined``; returns their count."""
    m = 0
    for i in range(len(out)):
        s = starts[i, col]
        e = ends[i, col]
        end, neg, is_float, mant, e10, too_long = number_token(buf, s, e)
        if end == e and e > s and not too_long:
            v, ok = to_float(neg, is_float, mant, e10)
            if ok:
                out[i] = v
                continue
        declined[m] = i
        m += 1
    return m


_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, nogil=True)
def _same(buf, s1, e1, s2, e2):  # pragma: no cover - numba
    if e1 - s1 != e2 - s2:
        return False
    for j in range(e1 - s1):
        if buf[s1 + j] != buf[s2 + j]:
            return False
    return True


@njit(cache=True, nogil=True)
def _dedup(buf, starts, ends, col, codes, firsts):  # pragma: no cover - numba
    """Codes of column ``col``'s texts in order of first appearance (open addressing on FNV-1a hashes);
    ``firsts[c]`` is the first row of code ``c``. Returns the number of distinct texts."""
    n = len(codes)
    hashes = np.empty(n, np.uint64)
    size = 1024
    table = np.full(size, -1, np.int64)
    m = 0
    for i in range(n):
        s, e = starts[i, col], ends[i, col]
        h = _FNV_OFFSET
        for j in range(s, e):
            h = (h ^ np.uint64(buf[j])) * _FNV_PRIME
        mask = np.uint64(size - 1)
        slot = np.int64(h & mask)
        while True:
            k = table[slot]
            if k < 0:
                table[slot] = m
                firsts[m] = i
                hashes[m] = h
                codes[i] = m
                m += 1
                break
            r = firsts[k]
            if hashes[k] == h and _same(buf, starts[r, col], ends[r, col], s, e):
                codes[i] = k
                break
            slot = (slot + 1) & (size - 1)
        if 2 * m > size:  # grow: re-insert every distinct text by its hash
            size *= 4
            table = np.full(size, -1, np.int64)
            mask = np.uint64(size - 1)
            for k in range(m):
                slot = np.int64(hashes[k] & mask)
                while table[slot] >= 0:
                    slot = (slot + 1) & (size - 1)
                table[slot] = k
    return m


@dataclass(frozen=True)
class CsvTable:
    """A scanned CSV: the bytes, every row's field spans and line number, and the header's column names."""

    path: str
    buf: np.ndarray  # uint8
    columns: tuple[str, ...]
    starts: np.ndarray  # int64 (rows, columns)
    ends: np.ndarray
    lines: np.ndarray  # int64 (rows,): the file's line number of each row (the header is line 1)

    def __len__(self) -> int:
        return len(self.lines)

    def index(self, name: str) -> int:
        try:
            return self.columns.index(name)
        except ValueError:
            raise InputError(
                self.path, "line 1", f"no column {name!r}; the header has {', '.join(self.columns)}"
            ) from None

    def text(self, row: int, col: int) -> str:
        return bytes(self.buf[self.starts[row, col] : self.ends[row, col]]).decode("utf-8", "replace")

    def floats(self, name: str, finite: bool = True) -> np.ndarray:
        """Column ``name`` as float64, each value ``float(text)``; an :class:`InputError` names the first bad line."""
        col = self.index(name)
        out = np.empty(len(self), np.float64)
        declined = np.empty(len(self), np.int64)
        m = _floats(self.buf, self.starts, self.ends, col, out, declined)
        for i in declined[:m]:
            text = self.text(i, col)
            try:
                out[i] = float(text)
            except ValueError:
                raise InputError(self.path, f"line {self.lines[i]}", f"{name} must be a number, got {text!r}") from None
        if finite and not np.isfinite(out).all():
            i = int(np.flatnonzero(~np.isfinite(out))[0])
            rule = f"{name} must be a finite number, got {self.text(i, col)!r}"
            raise InputError(self.path, f"line {self.lines[i]}", rule)
        return out

    def codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Column ``name`` as ``(codes, values)``: int64 codes into its sorted distinct texts (str array)."""
        col = self.index(name)
        n = len(self)
        widths = self.ends[:, col] - self.starts[:, col]
        if n and widths.min() == 0:
            i = int(np.argmin(widths))
            raise InputError(self.path, f"line {self.lines[i]}", f"{name} is empty")
        codes = np.empty(n, np.int64)
        firsts = np.empty(n, np.int64)
        m = _dedup(self.buf, self.starts, self.ends, col, codes, firsts)
        try:
            texts = [bytes(self.buf[self.starts[i, col] : self.ends[i, col]]).decode("utf-8") for i in firsts[:m]]
        except UnicodeDecodeError:
            raise InputError(self.path, None, f"{name} holds text that is not UTF-8") from None
        values = np.array(texts, dtype=str) if m else np.zeros(0, str)
        order = np.argsort(values, kind="stable")
        rank = np.empty(m, np.int64)
        rank[order] = np.arange(m)
        return rank[codes], values[order]


def read_csv(path: str | Path, required: Sequence[str]) -> CsvTable:
    """Scan ``path``: its header must name every column of ``required`` (others are kept, unread)."""
    name = str(path)
    try:
        buf = np.fromfile(path, dtype=np.uint8)
    except OSError as exc:
        raise InputError(name, None, f"cannot read the file: {exc.strerror or exc}") from None
    start = 3 if buf[:3].tobytes() == b"\xef\xbb\xbf" else 0  # a UTF-8 byte order mark
    nl = np.flatnonzero(buf[start:] == 10)
    head_end = start + int(nl[0]) if len(nl) else len(buf)
    header = bytes(buf[start:head_end]).decode("utf-8", "replace").rstrip("\r")
    columns = tuple(c.strip().strip('"') for c in header.split(","))
    if not header.strip():
        raise InputError(name, "line 1", f"the file needs a header line naming its columns ({', '.join(required)})")
    missing = [c for c in required if c not in columns]
    if missing:
        rule = f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; the header has {header!r}"
        raise InputError(name, "line 1", rule)
    rows = _count_lines(buf)
    starts = np.empty((rows, len(columns)), np.int64)
    ends = np.empty((rows, len(columns)), np.int64)
    lines = np.empty(rows, np.int64)
    got, line, problem, fields = _split(buf, min(head_end + 1, len(buf)), len(columns), starts, ends, lines)
    if problem:
        rule = _PROBLEMS[problem]
        if problem == 4:
            rule += f": {fields}, the header has {len(columns)}"
        raise InputError(name, f"line {line}", rule)
    return CsvTable(name, buf, columns, starts[:got], ends[:got], lines[:got])

"""Comma-separated files to columns: a numba byte scanner for large CSVs (Open Images: tens of millions of rows).

One pass over the bytes converts the number columns asked for, by the JSON scanner's exact converter
(:mod:`deteval.io.scan.numbers`: bit for bit Python's ``float(text)``; the few tokens it declines, such as
``+1``, ``.5`` or ``1e400``, are converted by Python's own ``float`` afterwards), and keeps the spans of the
text columns asked for, which become codes into their sorted distinct values through a hash table
(no Python string per row). Other columns are skipped.

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
from deteval.io.json_source import read_bytes
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
SKIP, NUMBER, TEXT = 0, 1, 2


@njit(cache=True, nogil=True)
def _count_lines(buf):  # pragma: no cover - numba
    n = 1
    for i in range(len(buf)):
        if buf[i] == 10:
            n += 1
    return n


@njit(cache=True, nogil=True)
def _scan(buf, pos, kinds, slots, numbers, declined, spans, lines, starts):  # pragma: no cover - numba
    """Every data row from ``pos``: number columns into ``numbers`` (``declined`` 1 where Python must convert),
    text columns' spans into ``spans``. Returns (rows, 0, 0, 0), or (rows, line, problem, fields) on an error."""
    n = len(buf)
    ncol = len(kinds)
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
        starts[row] = pos
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
                k = kinds[col]
                if k == 1:
                    end, neg, is_float, mant, e10, too_long = number_token(buf, s, e)
                    ok = False
                    if end == e and e > s and not too_long:
                        v, ok = to_float(neg, is_float, mant, e10)
                        numbers[row, slots[col]] = v
                    if not ok:
                        declined[row, slots[col]] = 1
                elif k == 2:
                    spans[row, slots[col], 0] = s
                    spans[row, slots[col], 1] = e
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
def _dedup(buf, spans, slot, codes, firsts):  # pragma: no cover - numba
    """Codes of text column ``slot`` in order of first appearance (open addressing on FNV-1a hashes);
    ``firsts[c]`` is the first row of code ``c``. Returns the number of distinct texts."""
    n = len(codes)
    hashes = np.empty(n, np.uint64)
    size = 1024
    table = np.full(size, -1, np.int64)
    m = 0
    for i in range(n):
        s, e = spans[i, slot, 0], spans[i, slot, 1]
        if i > 0 and _same(buf, spans[i - 1, slot, 0], spans[i - 1, slot, 1], s, e):
            codes[i] = codes[i - 1]  # runs of one text (an image's rows) skip the hash
            continue
        h = _FNV_OFFSET
        for j in range(s, e):
            h = (h ^ np.uint64(buf[j])) * _FNV_PRIME
        at = np.int64(h & np.uint64(size - 1))
        while True:
            k = table[at]
            if k < 0:
                table[at] = m
                firsts[m] = i
                hashes[m] = h
                codes[i] = m
                m += 1
                break
            r = firsts[k]
            if hashes[k] == h and _same(buf, spans[r, slot, 0], spans[r, slot, 1], s, e):
                codes[i] = k
                break
            at = (at + 1) & (size - 1)
        if 2 * m > size:  # grow: re-insert every distinct text by its hash
            size *= 4
            table = np.full(size, -1, np.int64)
            for k in range(m):
                at = np.int64(hashes[k] & np.uint64(size - 1))
                while table[at] >= 0:
                    at = (at + 1) & (size - 1)
                table[at] = k
    return m


@dataclass(frozen=True)
class CsvTable:
    """A scanned CSV: the number and text columns asked for, and each row's line number (the header is line 1)."""

    path: str
    buf: np.ndarray  # uint8
    columns: tuple[str, ...]
    slot: dict[str, tuple[int, int]]  # column -> (kind, slot)
    numbers: np.ndarray  # float64 (rows, number columns)
    declined: np.ndarray  # uint8 (rows, number columns): 1 where Python converts
    spans: np.ndarray  # int64 (rows, text columns, 2)
    lines: np.ndarray  # int64 (rows,)
    starts: np.ndarray  # int64 (rows,): each row's first byte

    def __len__(self) -> int:
        return len(self.lines)

    def floats(self, name: str, finite: bool = True) -> np.ndarray:
        """Number column ``name`` (float64), each value ``float(text)``; an :class:`InputError` names the bad line."""
        kind, j = self.slot[name]
        assert kind == NUMBER, name
        out = self.numbers[:, j]
        col = self.columns.index(name)
        for i in np.flatnonzero(self.declined[:, j]):
            s, e = _field(self.buf, int(self.starts[i]), col)
            text = bytes(self.buf[s:e]).decode("utf-8", "replace")
            try:
                out[i] = float(text)
            except ValueError:
                raise InputError(self.path, f"line {self.lines[i]}", f"{name} must be a number, got {text!r}") from None
        if finite and not np.isfinite(out).all():
            i = int(np.flatnonzero(~np.isfinite(out))[0])
            s, e = _field(self.buf, int(self.starts[i]), col)
            rule = f"{name} must be a finite number, got {bytes(self.buf[s:e]).decode('utf-8', 'replace')!r}"
            raise InputError(self.path, f"line {self.lines[i]}", rule)
        return np.ascontiguousarray(out)

    def codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Text column ``name`` as ``(codes, values)``: int64 codes into its sorted distinct texts (str array)."""
        kind, j = self.slot[name]
        assert kind == TEXT, name
        n = len(self)
        widths = self.spans[:, j, 1] - self.spans[:, j, 0]
        if n and widths.min() == 0:
            i = int(np.argmin(widths))
            raise InputError(self.path, f"line {self.lines[i]}", f"{name} is empty")
        codes = np.empty(n, np.int64)
        firsts = np.empty(n, np.int64)
        m = _dedup(self.buf, self.spans, j, codes, firsts)
        try:
            texts = [bytes(self.buf[self.spans[i, j, 0] : self.spans[i, j, 1]]).decode("utf-8") for i in firsts[:m]]
        except UnicodeDecodeError:
            raise InputError(self.path, None, f"{name} holds text that is not UTF-8") from None
        values = np.array(texts, dtype=str) if m else np.zeros(0, str)
        order = np.argsort(values, kind="stable")
        rank = np.empty(m, np.int64)
        rank[order] = np.arange(m)
        return rank[codes], values[order]


def _field(buf: np.ndarray, start: int, col: int) -> tuple[int, int]:
    """The span of field ``col`` of the row starting at ``start`` (for messages and Python's conversions)."""
    chunk = 4096
    while True:
        text = bytes(buf[start : start + chunk])
        end = text.find(b"\n")
        if end >= 0 or start + chunk >= len(buf):
            break
        chunk *= 4
    text = text if end < 0 else text[:end]
    at = 0
    for _ in range(col + 1):
        if at < len(text) and text[at] == 34:
            close = text.find(b'"', at + 1)
            span, at = (at + 1, close), close + 2
        else:
            nxt = text.find(b",", at)
            nxt = len(text) if nxt < 0 else nxt
            span, at = (at, nxt - 1 if nxt == len(text) and text.endswith(b"\r") else nxt), nxt + 1
    return start + span[0], start + span[1]


def read_csv(
    path: str | Path, numbers: Sequence[str] = (), texts: Sequence[str] = (), other_side: tuple[str, str] | None = None
) -> CsvTable:
    """Scan ``path``: its header must name every column of ``numbers`` and ``texts`` (others are skipped).

    ``other_side`` = (column, what): a header that lacks a column but names ``column`` is the other input's file
    (ground truth where detections go, or the reverse): the error asks whether PREDS and GT were swapped."""
    name = str(path)
    raw = read_bytes(path, "CSV", json_text=False)  # bounded, .gz read through
    buf = np.frombuffer(raw, dtype=np.uint8) if len(raw) else np.zeros(0, np.uint8)
    start = 3 if buf[:3].tobytes() == b"\xef\xbb\xbf" else 0  # a UTF-8 byte order mark
    head_end, chunk = -1, 1 << 16
    while head_end < 0 and chunk < 2 * len(buf) + (1 << 16):
        head_end = bytes(buf[start : start + chunk]).find(b"\n")
        chunk *= 4
    head_end = len(buf) if head_end < 0 else start + head_end
    header = bytes(buf[start:head_end]).decode("utf-8", "replace").rstrip("\r")
    columns = tuple(c.strip().strip('"') for c in header.split(","))
    required = [*numbers, *texts]
    if not header.strip():
        raise InputError(name, "line 1", f"the file needs a header line naming its columns ({', '.join(required)})")
    missing = [c for c in required if c not in columns]
    if missing:
        rule = f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; the header has {header!r}"
        if other_side is not None and other_side[0] in columns:
            rule += f"; it holds {other_side[1]}: did you swap PREDS and GT? The order is PREDS GT"
        raise InputError(name, "line 1", rule)
    kinds = np.zeros(len(columns), np.int64)
    slots = np.zeros(len(columns), np.int64)
    slot: dict[str, tuple[int, int]] = {}
    for kind, names in ((NUMBER, numbers), (TEXT, texts)):
        for j, c in enumerate(names):
            i = columns.index(c)
            kinds[i], slots[i] = kind, j
            slot[c] = (kind, j)
    rows = _count_lines(buf)
    values = np.empty((rows, len(numbers)), np.float64)
    declined = np.zeros((rows, len(numbers)), np.uint8)
    spans = np.empty((rows, len(texts), 2), np.int64)
    lines = np.empty(rows, np.int64)
    starts = np.empty(rows, np.int64)
    got, line, problem, fields = _scan(
        buf, min(head_end + 1, len(buf)), kinds, slots, values, declined, spans, lines, starts
    )
    if problem:
        rule = _PROBLEMS[problem]
        if problem == 4:
            rule += f": {fields}, the header has {len(columns)}"
        raise InputError(name, f"line {line}", rule)
    return CsvTable(name, buf, columns, slot, values[:got], declined[:got], spans[:got], lines[:got], starts[:got])

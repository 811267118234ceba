"""A numba scanner for plain KITTI label files: every file of a folder read in one pass over its bytes.

A plain line is an ASCII name (letters, digits, ``_``, ``-``), then 14 or 15 JSON-grammar numbers, each
after one space, ``occluded`` (the 3rd field) an integer; every line of a file has as many fields as its
first, and a file's last line may lack its newline. Numbers are converted bit for bit as Python's ``float``
(:mod:`deteval.io.scan.numbers`). Anything else (another separator, ``\\r``, a blank line, a ``+`` or a
leading zero, a number the exact converter leaves to Python, non-ASCII text) declines the folder, which
:func:`deteval.io.kitti.read_label_file` then reads with the reference's rules line by line.
"""

from __future__ import annotations

import os

import numpy as np

from deteval.io.scan.lexer import KERNEL, number_token
from deteval.io.scan.numbers import to_float
from deteval.jit import njit

__all__ = ["MAX_NAMES", "NAME_BYTES", "scan_plain"]

NAME_BYTES = 32  # a longer name declines the folder
MAX_NAMES = 64  # distinct types; more decline the folder
READ_SIZE = 1 << 16  # bytes per os.read: a label file is a few hundred


@njit(**KERNEL)
def _scan(buf, file_start, values, occluded, name_of, table, table_len, counts, kinds):  # pragma: no cover - numba
    # returns the rows read, or -1 to decline; names: a row's index into the distinct names (table)
    row = 0
    distinct = 0
    for f in range(len(file_start) - 1):
        pos, end = file_start[f], file_start[f + 1]
        want = 0
        while pos < end:
            s = pos
            while pos < end:
                c = buf[pos]
                if not (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 95 or c == 45):
                    break
                pos += 1
            size = pos - s
            if size == 0 or size > table.shape[1]:
                return -1
            found = -1
            for t in range(distinct):  # a handful of types: a scan beats a hash
                if table_len[t] == size:
                    i = 0
                    while i < size and table[t, i] == buf[s + i]:
                        i += 1
                    if i == size:
                        found = t
                        break
            if found < 0:
                if distinct == table.shape[0]:
                    return -1
                for i in range(size):
                    table[distinct, i] = buf[s + i]
                table_len[distinct] = size
                found = distinct
                distinct += 1
            name_of[row] = found
            k = 1
            while pos < end and buf[pos] == 32:
                pos += 1
                stop, neg, is_float, mant, e10, long_ = number_token(buf, pos, end)
                if stop < 0 or long_ or k > 15:
                    return -1
                if k == 2:
                    if is_float or mant > 1_000_000_000:
                        return -1
                    occluded[row] = -mant if neg else mant
                else:
                    v, ok = to_float(neg, is_float, mant, e10)
                    if not ok:
                        return -1
                    values[row, k - 1 if k == 1 else k - 2] = v
                k += 1
                pos = stop
            if pos < end and buf[pos] != 10:
                return -1
            pos += 1
            if want == 0:
                if k != 15 and k != 16:
                    return -1
                want = k
                kinds[f] = k
            elif k != want:
                return -1
            counts[f] += 1
            row += 1
    table_len[-1] = distinct
    return row


def _read_all(paths: list[str]) -> list[bytes] | None:
    """Each file's bytes, or None if one cannot be read (the line reader then names it). ``os.open`` and
    ``os.read`` to the empty read: half the time of ``open(path, "rb").read()`` on thousands of small files,
    whose buffered file object costs more than the bytes."""
    chunks = []
    read = os.read
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            parts = []
            while part := read(fd, READ_SIZE):
                parts.append(part)
        except OSError:
            return None
        finally:
            os.close(fd)
        chunks.append(parts[0] if len(parts) == 1 else b"".join(parts))
    return chunks


def scan_plain(
    paths: list[str],
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """``(distinct names, each line's name index, values, occluded, lines per file, fields per file)`` of plain
    files, or None (declined).

    ``values`` per line: truncated, alpha, bbox, dimensions, location, rotation_y, score (0 when unscored)."""
    chunks = _read_all(paths)
    if chunks is None:
        return None
    raw = b"".join(chunks)
    buf = np.frombuffer(raw, np.uint8)
    file_start = np.zeros(len(paths) + 1, np.int64)
    np.cumsum([len(c) for c in chunks], out=file_start[1:])
    rows = raw.count(b"\n") + len(paths)
    values = np.zeros((rows, 14), np.float64)
    occluded = np.zeros(rows, np.int64)
    name_of = np.zeros(rows, np.int64)
    table = np.zeros((MAX_NAMES, NAME_BYTES), np.uint8)
    table_len = np.zeros(MAX_NAMES + 1, np.int64)  # the last slot: how many
    counts = np.zeros(len(paths), np.int64)
    kinds = np.zeros(len(paths), np.int64)
    n = _scan(buf, file_start, values, occluded, name_of, table, table_len, counts, kinds)
    if n < 0:
        return None
    names = [bytes(table[t, : table_len[t]]).decode("ascii") for t in range(int(table_len[-1]))]
    return names, name_of[:n], values[:n], occluded[:n], counts, kinds

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
import queue
import threading

import numpy as np

from deteval.io.scan.lexer import KERNEL, number_token
from deteval.io.scan.numbers import to_float
from deteval.jit import njit

__all__ = ["MAX_NAMES", "NAME_BYTES", "scan_plain"]

NAME_BYTES = 32  # a longer name declines the folder
MAX_NAMES = 64  # distinct types; more decline the folder
READ_SIZE = 1 << 16  # bytes per os.read: a label file is a few hundred
FILES_PER_RUN = 200  # at least, per run of files scanned while the next is read
RUNS = 16  # at most, per folder: the scan left after the last read is short


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
                elif k <= 7 or k == 15:  # the 3D fields (dimensions, location, rotation) stay 0: unused in 2D
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


Scanned = tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _scan_bytes(chunks: list[bytes]) -> Scanned | None:
    """:func:`scan_plain` of some files' bytes (the kernel releases the GIL)."""
    raw = b"".join(chunks)
    buf = np.frombuffer(raw, np.uint8)
    file_start = np.zeros(len(chunks) + 1, np.int64)
    np.cumsum([len(c) for c in chunks], out=file_start[1:])
    rows = raw.count(b"\n") + len(chunks)
    values = np.zeros((rows, 14), np.float64)
    occluded = np.zeros(rows, np.int64)
    name_of = np.zeros(rows, np.int64)
    table = np.zeros((MAX_NAMES, NAME_BYTES), np.uint8)
    table_len = np.zeros(MAX_NAMES + 1, np.int64)  # the last slot: how many
    counts = np.zeros(len(chunks), np.int64)
    kinds = np.zeros(len(chunks), np.int64)
    n = _scan(buf, file_start, values, occluded, name_of, table, table_len, counts, kinds)
    if n < 0:
        return None
    names = [bytes(table[t, : table_len[t]]).decode("ascii") for t in range(int(table_len[-1]))]
    return names, name_of[:n], values[:n], occluded[:n], counts, kinds


def _scan_runs(runs: list[list[str]]) -> list[Scanned | None] | None:
    """Each run of files scanned, or None if a file cannot be read. This thread reads the runs in turn
    (Python, holding the GIL) while a pool thread scans those read (no GIL); then both scan what is left."""
    from deteval.jit import pool_submit

    read: queue.SimpleQueue = queue.SimpleQueue()
    parts: list[Scanned | None] = [None] * len(runs)
    left = len(runs)
    errors: list[BaseException] = []
    lock = threading.Lock()
    all_done = threading.Event()

    def scan_read() -> None:  # until the end mark, which it puts back for the other thread
        nonlocal left
        while (item := read.get()) is not None:
            k, chunks = item
            try:
                parts[k] = _scan_bytes(chunks)
            except BaseException as exc:  # noqa: BLE001 - raised in the calling thread
                errors.append(exc)
            finally:
                with lock:
                    left -= 1
                    if left == 0:
                        all_done.set()
        read.put(None)

    pool_submit(scan_read)
    unreadable = False
    for k, run in enumerate(runs):
        chunks = None if unreadable else _read_all(run)
        if chunks is None:  # nothing to scan: the run counts as done
            unreadable = True
            chunks = []
        read.put((k, chunks))
    read.put(None)
    scan_read()
    all_done.wait()
    if errors:
        raise errors[0]
    return None if unreadable else parts


def scan_plain(paths: list[str]) -> Scanned | None:
    """``(distinct names, each line's name index, values, occluded, lines per file, fields per file)`` of plain
    files, or None (declined).

    ``values`` per line: truncated, alpha, bbox, then 0 for the 3D fields (dimensions, location, rotation_y:
    checked as numbers, not converted, as 2D evaluation never reads them), score (0 when unscored).

    With more than one thread, runs of files are scanned on a pool thread while this one reads the next."""
    from deteval.jit import num_threads

    n_runs = min(RUNS, len(paths) // FILES_PER_RUN) if num_threads() > 1 else 1
    if n_runs <= 1:
        chunks = _read_all(paths)
        return None if chunks is None else _scan_bytes(chunks)
    bounds = np.linspace(0, len(paths), n_runs + 1).astype(np.int64).tolist()
    parts = _scan_runs([paths[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])])
    if parts is None or any(p is None for p in parts):
        return None
    names: dict[str, int] = {}
    index = []
    for part_names, name_of, *_ in parts:
        # each run's names in its own first-seen order: mapped to the folder's
        remap = np.array([names.setdefault(name, len(names)) for name in part_names], np.int64)
        index.append(remap[name_of])
    return (
        list(names),
        np.concatenate(index),
        *(np.concatenate([p[k] for p in parts]) for k in range(2, 6)),
    )

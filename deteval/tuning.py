"""Size thresholds that choose between equivalent code paths: one object, read at call time.

Each threshold picks how a result is computed (a kernel or numpy, one thread or
several, a scan in pieces or whole), never what it is: every value gives the
same numbers. Tests lower them to drive the large-input paths on small inputs::

    from deteval.tuning import TUNING
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Tuning:
    """The thresholds; :data:`TUNING` is the one instance every module reads."""

    # io: files from this size on are parsed straight into arrays by the byte scanner
    fast_path_bytes: int = 8 << 20
    # io: with the scanner's kernels in the cache already, files from fast_path_bytes // this on are scanned
    warm_scan_divisor: int = 32
    # io: files from this size on are memory-mapped, not copied (40 MB: 25 ms copied, 4 mapped)
    map_bytes: int = 1 << 20
    # io: a results file is scanned in pieces, on threads, from twice this size (1 MB: the ground truth's scan
    # on one thread, a 4-14 MB results file's pieces share the others; 3-10 ms off small and person-kp's load)
    piece_bytes: int = 1 << 20
    # io: pieces per thread (threads busy with the ground truth's scan take the last ones)
    pieces_per_thread: int = 4
    # io: polygons rasterised per thread, at least
    polygons_per_thread: int = 2000
    # matching: fewer rows are sorted by numpy, so a small evaluation compiles no sort kernel
    kernel_sort_rows: int = 50_000
    # matching: shorter slices are merge-sorted (quicker than 8 histogram passes)
    radix_min: int = 256
    # matching: (image, category) pairs per row up to which one counting sort groups the rows
    one_pass_bins_per_row: int = 4
    # matching: detections per thread from which the walk over groups is shared among threads
    csr_rows_per_part: int = 100_000
    # accumulate: from this many rows each category is ranked by the radix sort (worth its compile)
    radix_rows: int = 100_000


TUNING = Tuning()

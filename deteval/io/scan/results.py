"""COCO results bytes straight into columns: the scanner's entry for results files."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from deteval.io.json_source import MappedFile
from deteval.io.scan.pieces import PieceScan, cut_pieces
from deteval.io.scan.result_records import K_BBOX, M_DECLINE, M_KEYPOINTS, M_OBB, M_READ, M_SKIP
from deteval.io.scan.rle_text import compressed_masks_of
from deteval.jit import num_threads
from deteval.numeric import tail_columns

_MASK_MODES = {"decline": M_DECLINE, "skip": M_SKIP, "read": M_READ, "obb": M_OBB, "keypoints": M_KEYPOINTS}


def parse_results_columns(raw: bytes, masks: str = "decline") -> dict | None:
    """Columns of a COCO results file's bytes, or ``None`` when the general loader must read it.

    Returns ``{"image_id": int64 (N,), "category_id": int64 (N,), "bbox": float64 (N, 4),
    "score": float64 (N,), "has_bbox": True, "n": N}``: exactly what ``json.loads`` and
    ``np.array(..., float64)`` give for every record (ids as Python ints, numbers as
    ``float(token)``; ``-0`` is the integer 0, ``-0.0`` the float -0.0), in file order.

    ``masks`` says what a ``segmentation`` or ``keypoints`` key does: ``"decline"`` (None),
    ``"skip"`` (validated as JSON, not read: for box evaluation, where pycocotools reads no
    mask of results that have boxes), or ``"read"``: every record must then have a
    ``segmentation`` that is compressed RLE, ``{"size": [h, w], "counts": "..."}``, and may
    lack ``bbox``; the result adds ``"masks"``, a :class:`deteval.rle.CompressedMasks` whose
    runs are what ``masks_from_segmentations`` reads, and ``"has_bbox"`` becomes a bool array (rows
    without a box have zeros there). Keypoints decline in this mode.

    ``None`` for anything else: a top level that is not a list of objects, a record
    without one of the four keys or with a duplicate of one, ids that are not integer
    tokens of at most 18 digits, a bbox that is not 4 numbers, a ``segmentation`` or
    ``keypoints`` key (as ``masks`` says), a key with escapes, NaN/Infinity, an infinite
    value, malformed JSON or UTF-8, nesting deeper than 200 in extra values; for masks
    read, RLE that is not plain (other keys, uncompressed counts, polygons, escapes other
    than ``\\\\``, chars outside ``'0'``-``'o'``, a negative or 19+ digit size) or that the
    general path rejects (runs that are negative, beyond 2**32 - 1 or not summing to h*w).
    ``"obb"``: oriented-box results (hotcoco's ``obb``): every record's ``obb`` (5 numbers) is read into
    ``"bbox"`` (N, 5); a ``bbox``, ``segmentation`` or ``keypoints`` key declines. ``"keypoints"``: every
    record's ``keypoints`` (3K numbers, K from the first one in the file) is read into ``"keypoints"`` (N, 3K),
    the ``bbox`` may be missing (``"has_bbox"`` a bool array, zeros where it is); a ``segmentation`` declines.

    ``raw`` may be a read-only memory map. From twice ``TUNING.piece_bytes`` on, it is scanned in pieces on threads
    (see :func:`cut_pieces`), with the same result.
    """
    return start_results_scan(raw, masks)()


def start_results_scan(raw: bytes, masks: str = "decline") -> Callable[[], dict | None]:
    """:func:`parse_results_columns` begun: pool threads start on the file's pieces now, all but one
    (a caller may load the ground truth meanwhile); the function returned takes the pieces left in
    the calling thread, then gives the columns."""
    mode = _MASK_MODES[masks]
    width = 5 if mode == M_OBB else 4
    if mode == M_KEYPOINTS:
        count = first_keypoints_count(raw)
        if count <= 0 or count % 3:
            return lambda: None
        width += count
    buf = np.frombuffer(raw, dtype=np.uint8)
    threads = num_threads()
    scan = PieceScan(raw, buf, mode, width, cut_pieces(raw, threads), threads - 1)
    return partial(_columns, raw, mode, scan)


def first_keypoints_count(raw: bytes, numbers: bool = False) -> int:
    """How many items the first ``"keypoints": [...]`` in ``raw`` holds (commas counted, so a guess: the scan
    checks every record against it), or -1. ``numbers``: the first such list that starts with a number (a
    ground truth's categories name their keypoints under the same key)."""
    at = raw.find(b'"keypoints"')
    while at >= 0:
        head = bytes(raw[at + 11 : at + 11 + 65536]).lstrip()
        if not head.startswith(b":"):
            return -1
        head = head[1:].lstrip()
        end = head.find(b"]")
        if not head.startswith(b"[") or end < 0:
            return -1
        inner = head[1:end].strip()
        if not numbers or (inner and inner[:1] in b"-0123456789"):
            return inner.count(b",") + 1 if inner else 0
        at = raw.find(b'"keypoints"', at + 11)
    return -1


def _columns(raw: bytes, mode: int, scan: PieceScan) -> dict | None:
    scanned = scan.rows()
    if scanned is None:
        return None
    image_id, category_id, bbox, score, present, rle, spans = scanned
    nrec = len(score)
    has_bbox: bool | np.ndarray = True
    if mode == M_READ or mode == M_KEYPOINTS:
        has_bbox = (present & (1 << K_BBOX)) != 0
        bbox[~has_bbox, :4] = 0.0
    if len(spans):
        targets = (bbox.reshape(-1), score)
        for kind, slot, start, end in spans.tolist():
            v = float(raw[start:end])
            if not math.isfinite(v):
                return None  # 1e400: the general path reports it
            targets[kind][slot] = v
    out = {
        "image_id": image_id,
        "category_id": category_id,
        "bbox": bbox,
        "score": score,
        "has_bbox": has_bbox,
        "n": nrec,
    }
    if mode == M_KEYPOINTS:  # the row: the box, then the keypoints
        out["bbox"] = bbox[:, :4].copy()  # a copy even where the slice is contiguous (one row): the rows move next
        out["keypoints"] = tail_columns(bbox, 4)  # the scanner's rows are this loader's own
    if mode == M_READ:
        masks_read = compressed_masks_of(scan.buf, rle, raw if isinstance(raw, MappedFile) else None)
        if masks_read is None:
            return None
        out["masks"] = masks_read
    return out

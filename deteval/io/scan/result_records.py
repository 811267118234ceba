"""The results scanner's kernel: a list of COCO result records into columns.

Records are ``{"image_id", "category_id", "bbox", "score", ...}`` objects; other
keys are validated and skipped, and ``segmentation``/``keypoints`` follow the
mask mode (decline, skip, or read compressed RLE).
"""

from __future__ import annotations

import numpy as np

from deteval.io.scan.lexer import (
    INLINE,
    KERNEL,
    byte_at,
    next_item,
    number_token,
    same_bytes,
    skip_value,
    skip_ws,
    string_end,
    word_at,
)
from deteval.io.scan.numbers import to_float
from deteval.io.scan.rle_text import rle_object
from deteval.jit import njit

# keys of a results record (the four read ones are bits 0-3 of a record's `seen`)
K_IMAGE, K_CATEGORY, K_BBOX, K_SCORE, K_OTHER, K_SEGM, K_KEYPOINTS, K_OBB = 0, 1, 2, 3, 4, 5, 6, 7
# what the results scanner does with masks and keypoints: decline the file, skip them (validated), read the masks;
# M_OBB: oriented boxes (hotcoco's "obb"), read where the box goes, 5 numbers; a bbox, mask or keypoints declines;
# M_KEYPOINTS: keypoints read after the box (a row is the optional bbox's 4 numbers, then 3K), a mask declines
M_DECLINE, M_SKIP, M_READ, M_OBB, M_KEYPOINTS = 0, 1, 2, 3, 4
_IMAGE_ID = np.frombuffer(b"image_id", np.uint8).copy()
_CATEGORY_ID = np.frombuffer(b"category_id", np.uint8).copy()
_BBOX = np.frombuffer(b"bbox", np.uint8).copy()
_SCORE = np.frombuffer(b"score", np.uint8).copy()
_SEGMENTATION = np.frombuffer(b"segmentation", np.uint8).copy()
_KEYPOINTS = np.frombuffer(b"keypoints", np.uint8).copy()
_OBB = np.frombuffer(b"obb", np.uint8).copy()


@njit(**INLINE)
def _result_key(buf, start, length):
    if length == 8 and same_bytes(buf, start, _IMAGE_ID):
        return K_IMAGE
    if length == 11 and same_bytes(buf, start, _CATEGORY_ID):
        return K_CATEGORY
    if length == 4 and same_bytes(buf, start, _BBOX):
        return K_BBOX
    if length == 5 and same_bytes(buf, start, _SCORE):
        return K_SCORE
    if length == 12 and same_bytes(buf, start, _SEGMENTATION):
        return K_SEGM
    if length == 9 and same_bytes(buf, start, _KEYPOINTS):
        return K_KEYPOINTS
    if length == 3 and same_bytes(buf, start, _OBB):
        return K_OBB
    return K_OTHER


@njit(**INLINE)
def _known_key(buf, start, n):
    """The common keys without escapes, spelled out: (key, position after the quote) or (-1, -1)."""
    c = byte_at(buf, start, n)
    if c == 105 and word_at(buf, start, n, _IMAGE_ID):
        return K_IMAGE, start + 9
    if c == 99 and word_at(buf, start, n, _CATEGORY_ID):
        return K_CATEGORY, start + 12
    if c == 98 and word_at(buf, start, n, _BBOX):
        return K_BBOX, start + 5
    if c == 115 and word_at(buf, start, n, _SCORE):
        return K_SCORE, start + 6
    return -1, -1


@njit(**KERNEL)
def scan_result_records(buf, head, tail, mode, image_id, category_id, bbox, score, present, rle, spans, stack):
    """Fill the columns from a results list: (ok, records, spans).

    ``buf`` is the whole list when ``head`` and ``tail``; else a piece of it cut at commas
    between records: without ``head`` it starts at a record (white space first), without
    ``tail`` it ends right after one (white space last), not at the list's ``[`` or ``]``.

    ``present[i]``: the keys record i has (bit ``1 << _K_...``). ``mode`` says what a
    ``segmentation`` or ``keypoints`` key does: declines the file (``M_DECLINE``), is skipped
    (``M_SKIP``), or (``M_READ``) a segmentation is read as compressed RLE into ``rle[i]`` =
    (h, w, first char of counts, closing quote, runs, their sum or -1, the odd ones' sum: see ``rle_counts``)
    and keypoints decline. A bbox is
    required except in ``M_READ``, where the segmentation is. In ``M_OBB`` an ``obb`` (5 numbers) is read
    into ``bbox`` (N, 5) in its stead, and a ``bbox`` key declines (the general reader refuses such a result).
    In ``M_KEYPOINTS`` a row of ``bbox`` (N, 4 + 3K) is the record's bbox, if it has one, then its
    ``keypoints``, which must be 3K numbers (K from the row width); a ``segmentation`` declines.
    """
    n = buf.size
    cap = image_id.size
    box_flat = bbox.reshape(-1)
    width = bbox.shape[1]
    required = 15
    if mode == M_READ:
        required = (1 << K_IMAGE) | (1 << K_CATEGORY) | (1 << K_SCORE) | (1 << K_SEGM)
    elif mode == M_KEYPOINTS:
        required = (1 << K_IMAGE) | (1 << K_CATEGORY) | (1 << K_SCORE) | (1 << K_KEYPOINTS)
    nrec = 0
    nspan = 0
    pos = skip_ws(buf, 0, n)
    if head:
        if byte_at(buf, pos, n) != 91:
            return False, 0, 0
        pos = skip_ws(buf, pos + 1, n)
        if byte_at(buf, pos, n) == 93:
            pos = skip_ws(buf, pos + 1, n)
            return pos == n and tail, 0, 0
    while True:
        if byte_at(buf, pos, n) != 123 or nrec >= cap:
            return False, nrec, nspan
        pos = skip_ws(buf, pos + 1, n)
        seen = 0
        while True:
            if byte_at(buf, pos, n) != 34:
                return False, nrec, nspan
            kstart = pos + 1
            key, pos = _known_key(buf, kstart, n)
            if pos < 0:
                pos, escaped = string_end(buf, kstart - 1, n)
                if pos < 0 or escaped:
                    return False, nrec, nspan
                key = _result_key(buf, kstart, pos - 1 - kstart)
            if mode == M_OBB:  # the oriented box takes the box's place; a bbox declines, below
                key = K_BBOX if key == K_OBB else (K_SEGM if key == K_BBOX else key)
            elif key == K_OBB:
                key = K_OTHER
            pos = skip_ws(buf, pos, n)
            if byte_at(buf, pos, n) != 58:
                return False, nrec, nspan
            pos = skip_ws(buf, pos + 1, n)
            if key <= K_SCORE or (key == K_KEYPOINTS and mode == M_KEYPOINTS):
                bit = 1 << key
                if seen & bit:
                    return False, nrec, nspan
                seen |= bit
                count = 1
                listed = key == K_BBOX or key == K_KEYPOINTS
                off = 4 if key == K_KEYPOINTS else 0  # where in the row this list goes
                if listed:
                    if byte_at(buf, pos, n) != 91:
                        return False, nrec, nspan
                    pos = skip_ws(buf, pos + 1, n)
                    count = width - 4 if key == K_KEYPOINTS else (4 if mode == M_KEYPOINTS else width)
                for j in range(count):
                    if j > 0:
                        if byte_at(buf, pos, n) != 44:
                            return False, nrec, nspan
                        pos = skip_ws(buf, pos + 1, n)
                    start = pos
                    pos, neg, is_float, mant, e10, too_long = number_token(buf, pos, n)
                    if pos < 0:
                        return False, nrec, nspan
                    if key == K_IMAGE or key == K_CATEGORY:
                        if is_float or too_long:
                            return False, nrec, nspan
                        if key == K_IMAGE:
                            image_id[nrec] = -mant if neg else mant
                        else:
                            category_id[nrec] = -mant if neg else mant
                        continue
                    if too_long and not is_float:
                        return False, nrec, nspan  # a 19+ digit integer: the general path decides what it is
                    v = 0.0
                    ok = False
                    if not too_long:
                        v, ok = to_float(neg, is_float, mant, e10)
                    if not ok:  # Python converts it
                        if nspan >= spans.shape[0]:
                            return False, nrec, nspan
                        spans[nspan, 0] = 0 if listed else 1
                        spans[nspan, 1] = width * nrec + off + j if listed else nrec
                        spans[nspan, 2] = start
                        spans[nspan, 3] = pos
                        nspan += 1
                    if listed:
                        box_flat[width * nrec + off + j] = v
                        pos = skip_ws(buf, pos, n)
                    else:
                        score[nrec] = v
                if listed:
                    if byte_at(buf, pos, n) != 93:
                        return False, nrec, nspan
                    pos += 1
            elif key == K_SEGM and mode == M_READ:
                bit = 1 << K_SEGM
                if seen & bit:
                    return False, nrec, nspan
                seen |= bit
                pos, h, w, a, b, runs, total, ones = rle_object(buf, pos, n)
                if pos < 0:
                    return False, nrec, nspan
                rle[nrec, 0] = h
                rle[nrec, 1] = w
                rle[nrec, 2] = a
                rle[nrec, 3] = b
                rle[nrec, 4] = runs
                rle[nrec, 5] = total
                rle[nrec, 6] = ones
            elif key != K_OTHER and mode != M_SKIP:
                return False, nrec, nspan
            else:
                pos = skip_value(buf, pos, n, stack)
                if pos < 0:
                    return False, nrec, nspan
            pos, more = next_item(buf, pos, n, 125)
            if more < 0:
                return False, nrec, nspan
            if more == 0:
                break
        if seen & required != required:
            return False, nrec, nspan
        present[nrec] = seen
        nrec += 1
        if not tail and skip_ws(buf, pos, n) == n:  # a piece ends after a record, where a comma was cut
            return True, nrec, nspan
        pos, more = next_item(buf, pos, n, 93)
        if more < 0:
            return False, nrec, nspan
        if more == 0:
            return tail and skip_ws(buf, pos, n) == n, nrec, nspan


MIN_RECORD_BYTES = 58  # {"image_id":1,"category_id":1,"bbox":[1,1,1,1],"score":1} and a comma


def min_record_bytes(width: int) -> int:
    """The fewest bytes a record and its comma take whose row is ``width`` numbers wide: a box's 4, an oriented
    box's 5, or (keypoints) 4 + 3K: ``{"image_id":1,"category_id":1,"keypoints":[1,...],"score":1},``."""
    return MIN_RECORD_BYTES if width <= 5 else 55 + 2 * (width - 4)

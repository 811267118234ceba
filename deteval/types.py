"""Columnar containers shared by every layer.

Rows are annotations (``GroundTruth``) or detections (``Detections``), stored as
struct-of-arrays. Images and categories are dense int32 indices into an
``IdTable`` that maps back to the user's ids (ints or strings).

Boxes are kept in the convention of their source format (``box_format``):
converting ``xywh`` to ``xyxy`` and back is not exact in floating point, and
bit-identical parity with a reference tool needs the reference's own
arithmetic on the user's own numbers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the mask module loads numba: only where masks are read
    from deteval.rle import CompressedMasks, Masks



def xywh_area(boxes: np.ndarray) -> np.ndarray:
    """``w * h`` of ``(N, 4)`` xywh boxes; inf where it overflows and NaN for inf * 0, silently, as Python's
    float product."""
    with np.errstate(over="ignore", invalid="ignore"):
        return boxes[:, 2] * boxes[:, 3]


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``, without numpy 2's hashed ``np.unique`` (~40x slower on 1M ints) and, for integers
    in a range at most 4 times their count (ids numbered from 1, in any order), without a sort either: each
    value marks its place in a bool array (~10 ms per 1M, where the sort takes ~50)."""
    values = np.asarray(values)
    if values.ndim == 1 and values.dtype.kind in "iu" and len(values) > 1:
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 4 * len(values):
            wide = np.uint64 if values.dtype.kind == "u" else np.int64  # no wrap-around in the offsets
            mark = np.zeros(hi - lo + 1, np.bool_)
            mark[values.astype(wide) - wide(lo)] = True
            return (np.flatnonzero(mark).astype(wide) + wide(lo)).astype(values.dtype, copy=False)
    s = np.sort(values)
    return s[np.concatenate([[True], s[1:] != s[:-1]])] if len(s) else s


def has_duplicates(values: np.ndarray) -> bool:
    """Whether any value repeats."""
    return len(sorted_unique(values)) != len(values)


def ranks_of(first: np.ndarray) -> np.ndarray:
    """The rank of each of ``first``'s distinct values: 0 for the smallest (file positions -> file order)."""
    return np.argsort(np.argsort(np.asarray(first), kind="stable"), kind="stable").astype(np.int64)


def last_occurrence(values: np.ndarray) -> np.ndarray:
    """For each distinct value, ascending, the index of its last occurrence in ``values``.

    pycocotools indexes records by id in a dict, so a repeated image id keeps its last record's fields.
    """
    values = np.asarray(values)
    return len(values) - 1 - np.unique(values[::-1], return_index=True)[1]


@dataclass(frozen=True, eq=False)
class IdTable:
    """Sorted, unique user ids (int64, uint64 where one is 2**63 or more, or str) with optional per-id attributes.

    Dense index ``i`` refers to ``ids[i]``. The order is ascending, the order
    pycocotools gives ``imgIds``/``catIds`` (``np.unique``).
    """

    ids: np.ndarray
    names: list[str] | None = None
    height: np.ndarray | None = None  # per-id image height, when known
    width: np.ndarray | None = None
    # per-id place in the file's own list (first occurrence), when loaded from one: the image order
    # that tools walking the file (tidecv) break score ties by
    file_rank: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Dense indices of ``values`` and a mask of which were found."""
        values = np.asarray(values)
        if len(self.ids) == 0 or len(values) == 0:
            return np.zeros(len(values), np.int32), np.zeros(len(values), bool)
        if {values.dtype.kind, self.ids.dtype.kind} == {"i", "u"}:
            # int64 beside uint64 (ids past 2**63 in one column only): compared as the integers they are
            fits = values >= 0 if self.ids.dtype.kind == "u" else values < 2**63
            pos, found = self.lookup(np.where(fits, values, 0).astype(self.ids.dtype))
            found &= fits
            pos[~found] = 0
            return pos, found
        if values.dtype.kind != self.ids.dtype.kind:
            return np.zeros(len(values), np.int32), np.zeros(len(values), bool)
        if self.ids.dtype.kind == "i" and values.dtype.kind == "i":
            lo, hi = int(self.ids[0]), int(self.ids[-1])
            # a dense id -> index table is linear; searchsorted on unsorted queries is not (8x on 1M rows)
            if hi - lo < 4 * (len(self.ids) + len(values)) + 1024:
                table = np.full(hi - lo + 1, -1, np.int32)
                table[self.ids - lo] = np.arange(len(self.ids), dtype=np.int32)
                # a value outside [lo, hi] (its offset clipped, or wrapped by int64 overflow) or in a gap of the
                # table (-1: ids[-1], the largest id, is no such value) reads an index whose id differs
                pos = table.take(values.astype(np.int64, copy=False) - lo, mode="clip")
                found = self.ids[pos] == values
                if not found.all():
                    pos[~found] = 0
                return pos, found
        pos = np.searchsorted(self.ids, values)
        pos = np.minimum(pos, len(self.ids) - 1)
        found = self.ids[pos] == values
        return pos.astype(np.int32), found

    def file_order(self) -> np.ndarray:
        """Dense indices in the file's own order (ascending id order when there was no file), int64."""
        if self.file_rank is None:
            return np.arange(len(self.ids), dtype=np.int64)
        return np.argsort(self.file_rank, kind="stable").astype(np.int64)

    def slice(self, lo: int, hi: int) -> IdTable:
        """The ids ``lo <= index < hi``, with their attributes."""
        cut = lambda a: None if a is None else a[lo:hi]  # noqa: E731
        rank = None if self.file_rank is None else ranks_of(self.file_rank[lo:hi])
        return IdTable(
            self.ids[lo:hi], None if self.names is None else self.names[lo:hi], cut(self.height), cut(self.width), rank
        )

    def id_of(self, index: int) -> int | str:
        v = self.ids[index]
        return v.item() if hasattr(v, "item") else v

    def name_of(self, index: int) -> str:
        if self.names is not None:
            return self.names[index]
        return str(self.id_of(index))


@dataclass(frozen=True, eq=False)
class GroundTruth:
    """Ground-truth annotations, one row each, in file order."""

    image: np.ndarray  # int32 (N,), index into images
    category: np.ndarray  # int32 (N,), index into categories
    boxes: np.ndarray  # float64 (N, 4) in box_format
    area: np.ndarray  # float64 (N,), the area used for area ranges
    crowd: np.ndarray  # bool (N,)
    ignore: np.ndarray  # bool (N,), the user's own ignore flag
    difficult: np.ndarray  # bool (N,)
    ann_id: np.ndarray  # int64 (N,), the user's annotation id
    images: IdTable
    categories: IdTable
    box_format: str = "xywh"
    source: str = "<ground truth>"
    # geometry besides boxes, read when an evaluation needs it (None: not loaded)
    masks: Masks | None = None  # iou_type "segm": one run-length mask per row
    keypoints: np.ndarray | None = None  # iou_type "keypoints": float64 (N, 3K), (x, y, visibility) each
    num_keypoints: np.ndarray | None = None  # float64 (N,), labelled keypoints (given, or counted)
    # iou_type "obb": float64 (N, 5), oriented boxes (cx, cy, w, h, angle in radians), or (N, 8) quadrilaterals
    # (the Evaluator's box_format "poly")
    obb: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.image)


@dataclass(frozen=True, eq=False)
class Detections:
    """Detections, one row each, in input order (the order ties are broken by)."""

    image: np.ndarray  # int32 (N,), index into the ground truth's images
    category: np.ndarray  # int32 (N,), index into the ground truth's categories
    boxes: np.ndarray  # float64 (N, 4) in box_format
    score: np.ndarray  # float64 (N,)
    area: np.ndarray  # float64 (N,), the area used for area ranges
    box_format: str = "xywh"
    source: str = "<detections>"
    # geometry besides boxes, read when an evaluation needs it (None: not loaded)
    masks: Masks | CompressedMasks | None = None  # iou_type "segm": one run-length mask per row (results the
    # byte scanner reads: their compressed text)
    mask_area: np.ndarray | None = None  # float64 (N,), pixels of each mask (``area`` may be the box's)
    keypoints: np.ndarray | None = None  # float64 (N, 3K)
    obb: np.ndarray | None = None  # float64 (N, 5), oriented boxes (cx, cy, w, h, angle in radians), or (N, 8)
    # the -inf scores were NaN in the input (no input score was -inf): they rank last, and results show NaN
    nan_scores: bool = False
    # int64 (N,): each row's 0-based place in the input's list where rows were skipped (results of categories
    # the ground truth lacks); None: row i is the input's i-th
    file_row: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.image)


def _take(rows_of, rows: np.ndarray):
    """A copy of a row container keeping ``rows``: every per-row array, and the masks."""
    n = len(rows_of)
    changes = {}
    for f in dataclasses.fields(rows_of):
        value = getattr(rows_of, f.name)
        if isinstance(value, np.ndarray) and len(value) == n:
            changes[f.name] = value[rows]
    if rows_of.masks is not None:
        changes["masks"] = rows_of.masks.take(rows)
    return dataclasses.replace(rows_of, **changes)


def _images_between(rows_of, images: IdTable, lo: int, hi: int):
    keep = np.flatnonzero((rows_of.image >= lo) & (rows_of.image < hi))
    part = _take(rows_of, keep)
    return dataclasses.replace(part, image=(part.image - lo).astype(np.int32)), images.slice(lo, hi)


def take_rows(container, rows: np.ndarray):
    """``container`` (GroundTruth or Detections) with only ``rows`` (indices or a mask), tables unchanged."""
    rows = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows, np.int64)
    return _take(container, rows)


def images_between(dets: Detections, gt: GroundTruth, lo: int, hi: int) -> tuple[Detections, GroundTruth]:
    """The rows of images ``lo <= index < hi`` (a shard), re-indexed against an image table of those alone."""
    gt_part, images = _images_between(gt, gt.images, lo, hi)
    dets_part, _ = _images_between(dets, gt.images, lo, hi)
    return dets_part, dataclasses.replace(gt_part, images=images)

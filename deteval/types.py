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

from dataclasses import dataclass, field

import numpy as np

BOX_FORMATS = ("xywh", "xyxy")


@dataclass(frozen=True)
class IdTable:
    """Sorted, unique user ids (int64 or str) with optional per-id attributes.

    Dense index ``i`` refers to ``ids[i]``. The order is ascending, the order
    pycocotools gives ``imgIds``/``catIds`` (``np.unique``).
    """

    ids: np.ndarray
    names: list[str] | None = None
    height: np.ndarray | None = None  # per-id image height, when known
    width: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Dense indices of ``values`` and a mask of which were found."""
        values = np.asarray(values)
        if len(self.ids) == 0 or len(values) == 0:
            return np.zeros(len(values), np.int32), np.zeros(len(values), bool)
        if values.dtype.kind != self.ids.dtype.kind:
            return np.zeros(len(values), np.int32), np.zeros(len(values), bool)
        pos = np.searchsorted(self.ids, values)
        pos = np.minimum(pos, len(self.ids) - 1)
        found = self.ids[pos] == values
        return pos.astype(np.int32), found

    def id_of(self, index: int) -> int | str:
        v = self.ids[index]
        return v.item() if hasattr(v, "item") else v

    def name_of(self, index: int) -> str:
        if self.names is not None:
            return self.names[index]
        return str(self.id_of(index))


@dataclass(frozen=True)
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
    extra: dict = field(default_factory=dict)  # masks, keypoints ... per later stages

    def __len__(self) -> int:
        return len(self.image)


@dataclass(frozen=True)
class Detections:
    """Detections, one row each, in input order (the order ties are broken by)."""

    image: np.ndarray  # int32 (N,), index into the ground truth's images
    category: np.ndarray  # int32 (N,), index into the ground truth's categories
    boxes: np.ndarray  # float64 (N, 4) in box_format
    score: np.ndarray  # float64 (N,)
    area: np.ndarray  # float64 (N,), the area used for area ranges
    box_format: str = "xywh"
    source: str = "<detections>"
    extra: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.image)

"""``pycocotools.mask``: run-length mask utilities, the compiled functions of pycocotools itself.

pycocotools is a dependency of deteval: these are its ``_mask`` functions (taken when this module is
imported, before :func:`deteval.init_as_pycocotools` points ``pycocotools`` here), with its wrappers'
rule that a ``list`` is many masks and anything else is one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.pycocotools._reference import mask_ext as _mask

__all__ = ["area", "decode", "encode", "frPyObjects", "iou", "merge", "toBbox"]

iou = _mask.iou
merge = _mask.merge
frPyObjects = _mask.frPyObjects  # noqa: N816 - pycocotools' name


def _many(rle_objs: Any) -> bool:
    return type(rle_objs) is list  # pycocotools tests the exact type: a list subclass is one mask


def encode(bimask: np.ndarray) -> Any:
    """Binary mask(s) ``(h, w)`` or ``(h, w, n)``, Fortran order, to compressed RLE (a dict, or a list of them)."""
    if len(bimask.shape) == 3:
        return _mask.encode(bimask)
    if len(bimask.shape) == 2:
        h, w = bimask.shape
        return _mask.encode(bimask.reshape((h, w, 1), order="F"))[0]
    return None  # pycocotools returns nothing for other ranks


def decode(rleObjs: Any) -> np.ndarray:  # noqa: N803 - pycocotools' name
    """RLE to binary mask: ``(h, w, n)`` for a list, ``(h, w)`` for one."""
    return _mask.decode(rleObjs) if _many(rleObjs) else _mask.decode([rleObjs])[:, :, 0]


def area(rleObjs: Any) -> Any:  # noqa: N803
    """Pixels of each mask (uint32 array for a list, one uint32 for one)."""
    return _mask.area(rleObjs) if _many(rleObjs) else _mask.area([rleObjs])[0]


def toBbox(rleObjs: Any) -> np.ndarray:  # noqa: N802, N803
    """Each mask's extent as xywh (``(n, 4)`` for a list, ``(4,)`` for one)."""
    return _mask.toBbox(rleObjs) if _many(rleObjs) else _mask.toBbox([rleObjs])[0]

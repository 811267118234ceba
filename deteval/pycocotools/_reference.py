"""The real pycocotools modules, imported before :func:`deteval.init_as_pycocotools` points the name
``pycocotools`` at this package (it imports this package first).

:mod:`deteval.pycocotools.mask` is pycocotools' compiled ``_mask`` (``mask_ext``); ``coco_module``
lends :class:`deteval.pycocotools.COCO` its drawing and download methods.
"""

from __future__ import annotations

import pycocotools._mask as mask_ext
import pycocotools.coco as coco_module

__all__ = ["coco_module", "mask_ext"]

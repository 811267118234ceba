"""pycocotools 2.0.11's API on deteval: ``COCO``, ``COCOeval``, ``Params`` and ``mask``.

>>> from deteval.pycocotools import COCO, COCOeval  # doctest: +SKIP

or, for code that imports pycocotools itself (detectron2, mmdet, torchmetrics), before it does:

>>> import deteval; deteval.init_as_pycocotools()  # doctest: +SKIP

The objects are pycocotools'; the evaluation runs on deteval's kernels. See README, "Drop-in for pycocotools".
"""

from __future__ import annotations

from deteval.pycocotools import mask
from deteval.pycocotools._reference import mask_ext
from deteval.pycocotools.coco import COCO
from deteval.pycocotools.cocoeval import COCOeval
from deteval.pycocotools.params import Params

__all__ = ["COCO", "COCOeval", "Params", "init_as_pycocotools", "mask"]
__author__ = "tylin"  # pycocotools' own module attribute


def init_as_pycocotools() -> None:
    """Make ``import pycocotools`` (and ``.coco``, ``.cocoeval``, ``.mask``) give deteval's; idempotent.

    Call it before importing the code that imports pycocotools: names that code bound already stay
    pycocotools'. ``pycocotools._mask`` stays pycocotools' compiled module (deteval's masks use it).
    """
    import sys

    from deteval.pycocotools import coco, cocoeval

    package = sys.modules[__name__]
    sys.modules["pycocotools"] = package
    sys.modules["pycocotools.coco"] = coco
    sys.modules["pycocotools.cocoeval"] = cocoeval
    sys.modules["pycocotools.mask"] = mask
    sys.modules["pycocotools._mask"] = mask_ext
    package._mask = mask_ext  # "from pycocotools import _mask"

"""pycocotools' ``Params``: the mutable evaluation settings ``COCOeval.evaluate()`` reads.

The defaults are pycocotools 2.0.11's, built the same way (``np.linspace`` grids, not ``np.arange``,
so the thresholds are the same floats).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Params"]

# COCO's 17 person keypoints: pycocotools' sigmas, divided by 10 as it divides them
_KPT_SIGMAS = [0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89]


def _grid(lo: float, hi: float, step: float) -> np.ndarray:
    return np.linspace(lo, hi, int(np.round((hi - lo) / step)) + 1, endpoint=True)


class Params:
    """Evaluation parameters (pycocotools' ``Params``): set them between ``COCOeval()`` and ``evaluate()``."""

    def setDetParams(self) -> None:  # noqa: N802 - pycocotools' name
        self.imgIds = []
        self.catIds = []
        self.iouThrs = _grid(0.5, 0.95, 0.05)
        self.recThrs = _grid(0.0, 1.00, 0.01)
        self.maxDets = [1, 10, 100]
        self.areaRng = [[0**2, 1e5**2], [0**2, 32**2], [32**2, 96**2], [96**2, 1e5**2]]
        self.areaRngLbl = ["all", "small", "medium", "large"]
        self.useCats = 1

    def setKpParams(self) -> None:  # noqa: N802 - pycocotools' name
        self.imgIds = []
        self.catIds = []
        self.iouThrs = _grid(0.5, 0.95, 0.05)
        self.recThrs = _grid(0.0, 1.00, 0.01)
        self.maxDets = [20]
        self.areaRng = [[0**2, 1e5**2], [32**2, 96**2], [96**2, 1e5**2]]
        self.areaRngLbl = ["all", "medium", "large"]
        self.useCats = 1
        self.kpt_oks_sigmas = np.array(_KPT_SIGMAS) / 10.0

    def __init__(self, iouType: str = "segm") -> None:  # noqa: N803 - pycocotools' name
        if iouType in ("segm", "bbox"):
            self.setDetParams()
        elif iouType == "keypoints":
            self.setKpParams()
        else:
            raise Exception("iouType not supported")  # pycocotools raises a bare Exception
        self.iouType = iouType
        self.useSegm = None  # deprecated in pycocotools: 1 -> segm, 0 -> bbox at evaluate()

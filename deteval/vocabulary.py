"""The named choices shared across layers, in one place (light: the CLI reads them without numba).

Kernels and protocols take these names; the command line offers them as choices.
"""

from __future__ import annotations

# AP integrators (deteval.integrators): how a precision/recall curve becomes one number
INTEGRATORS = ("coco101", "voc11", "all_points", "non_interpolated")
# how equal scores are ranked: each detection in row order, or a tie block as one step (scikit-learn)
TIE_POLICIES = ("item", "group")
# the 11 recall points of VOC07: np.arange(0., 1.1, 0.1) (voc_eval.py) or MATLAB's 0:0.1:1
VOC11_GRIDS = ("numpy", "matlab")
# VOC's IoU test: IoU > threshold (voc_eval.py, detectron2) or IoU >= threshold (MATLAB devkit)
IOU_TESTS = ("gt", "ge")
# box layouts of files: corners, or corner and size
FILE_BOX_FORMATS = ("xyxy", "xywh")

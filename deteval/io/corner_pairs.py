"""Results boxes written as corners ``[x1, y1, x2, y2]`` where COCO reads ``[x, y, w, h]``.

pycocotools scores such a file without a word (its AP collapses: read as a width, x2 makes every box
reach from x1 to x1 + x2). Two signs together name the mistake, and real results show neither at
this scale:

- corners always have x2 >= x1 and y2 >= y1, so read as ``[x, y, w, h]`` *every* box has w >= x and
  h >= y; real boxes away from the image's top-left corner do not (a box of width 50 at x = 300);
- read as ``[x, y, w, h]``, a corner box ends at x1 + x2, past the image's width W once its centre
  lies right of W / 2: about half the boxes of a file reach past their image, where a detector's
  boxes, clipped or not, end at most a little past it.

The check needs the images' sizes (the ground truth's ``width`` and ``height``); it looks at boxes of
images with both, and at files of at least :data:`MIN_BOXES` such boxes.
"""

from __future__ import annotations

import numpy as np

from deteval.errors import InputError, warn
from deteval.types import Detections, GroundTruth

MIN_BOXES = 5  # fewer boxes say too little
OUTSIDE_SHARE = 0.25  # the share of boxes that must reach past their image
MARGIN = 0.05  # how far past (a share of the image's side, plus one pixel) counts as past


def check_corner_pairs(dets: Detections, gt: GroundTruth, strict: bool) -> None:
    """One :class:`~deteval.errors.DetevalWarning` (``strict``: an :class:`~deteval.errors.InputError`) when
    ``dets``' ``[x, y, w, h]`` boxes look like ``[x1, y1, x2, y2]`` corner pairs (module docstring)."""
    if dets.box_format != "xywh" or len(dets) < MIN_BOXES or gt.images.width is None or gt.images.height is None:
        return
    width = np.asarray(gt.images.width, np.float64)[dets.image]
    height = np.asarray(gt.images.height, np.float64)[dets.image]
    sized = (width > 0) & (height > 0)
    n = int(sized.sum())
    if n < MIN_BOXES:
        return
    x, y, w, h = (dets.boxes[sized, k] for k in range(4))
    width, height = width[sized], height[sized]
    if not bool(((w >= x) & (h >= y)).all()):
        return
    past = (x + w > width * (1 + MARGIN) + 1) | (y + h > height * (1 + MARGIN) + 1)
    n_past = int(past.sum())
    if n_past < OUTSIDE_SHARE * n:
        return
    first = int(np.flatnonzero(sized)[np.flatnonzero(past)[0]])
    box = ", ".join(f"{v:g}" for v in dets.boxes[first])
    rule = (
        f"every box has w >= x and h >= y and {n_past} of {n} reach past their image as [x, y, w, h] "
        f"(first: bbox [{box}] on an image of {width[past][0]:g} x {height[past][0]:g}): the boxes look like "
        "corners [x1, y1, x2, y2]; COCO results take [x, y, w, h]: write [x1, y1, x2 - x1, y2 - y1]"
    )
    if strict:
        raise InputError(dets.source, None, rule)
    warn(f"{dets.source}: {rule} (--strict makes this an error)")

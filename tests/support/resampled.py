"""Bootstrap replicates as datasets the reference tools can evaluate (issue 20's resampling rule)."""

from __future__ import annotations

import numpy as np


def file_draws(n_images: int, n: int, seed: int) -> list[np.ndarray]:
    """The documented draws, written out independently of ``deteval.analysis.intervals.draws_of``: replicate ``b``
    is ``rng.integers(0, n_images, n_images)``, the ``b``-th call on ``np.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n_images, n_images) for _ in range(n)]


def materialise(gt: dict, dets: list, idx) -> tuple[dict, list]:
    """The resampled COCO-style dataset: GT image ``gt["images"][idx[j]]`` (file order) becomes image
    ``j + 1``, with copies of its annotations (ids renumbered 1..m) and detections, draw after draw."""
    anns_of: dict = {}
    for ann in gt["annotations"]:
        anns_of.setdefault(ann["image_id"], []).append(ann)
    dets_of: dict = {}
    for det in dets:
        dets_of.setdefault(det["image_id"], []).append(det)
    images, anns, out = [], [], []
    for j, i in enumerate(np.asarray(idx).tolist()):
        old = gt["images"][i]["id"]
        images.append({**gt["images"][i], "id": j + 1})
        for ann in anns_of.get(old, []):
            anns.append({**ann, "image_id": j + 1, "id": len(anns) + 1})
        out += [{**d, "image_id": j + 1} for d in dets_of.get(old, [])]
    return {**gt, "images": images, "annotations": anns}, out

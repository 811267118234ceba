"""The streaming capability's data: what a protocol's streaming evaluation reads from a batch
(:class:`StreamSpec`), one shard's matches (:class:`StreamPart`) and every shard's rows merged
(:class:`StreamRows`). The Evaluator (:mod:`deteval.evaluator`) and Dask move these; each protocol's
``stream_*`` methods (:class:`~deteval.protocols.base.Protocol`) make and read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["STREAMING", "StreamPart", "StreamRows", "StreamSpec"]

STREAMING = "streaming evaluation (Evaluator, Dask)"  # the capability's name in its error


@dataclass(frozen=True)
class StreamSpec:
    """What a protocol's streaming evaluation reads from a batch of per-image dicts (deteval.evaluator.inputs).

    ``formats`` maps each iou type streamed to its batch box formats (the first the default), each to the
    container's: ``"xywh"`` (converted: COCO's IoU reads xywh), ``"xyxy"`` (as given), ``"obb"`` (as given,
    into the oriented boxes) or ``"quad"`` (quadrilaterals as given). The iou type says what else a batch
    carries: ``"segm"`` masks, ``"keypoints"`` keypoints.
    """

    formats: Mapping[str, Mapping[str, str]]
    federated: bool = False  # categories carry frequencies; targets the federated lists (LVIS)
    whole_vocabulary: bool = False  # a batch's category table is every category, not the labels it shows
    image_keys: tuple[str, ...] = ()  # numbers a target carries for its image (kept per image in the state)
    target_flags: tuple[str, ...] = ("iscrowd", "ignore")  # boolean per-box keys of a target (0/1)
    target_values: tuple[str, ...] = ()  # numbers a target carries per box (finite; passed to stream_match)

    @property
    def iou_types(self) -> tuple[str, ...]:
        return tuple(self.formats)


@dataclass(frozen=True)
class StreamPart:
    """One shard's matches as streaming keeps them; image and category indices into the shard's own tables.

    ``det_rank`` orders a detection among its image's rows as the protocol ranks ties (COCO: rank by score
    within image and category; VOC: its row in the image's prediction dict). ``npig`` holds the protocol's
    count columns per category (COCO: positives per area range), summed over shards.
    """

    det_image: np.ndarray  # int32 (N,)
    det_category: np.ndarray  # int32 (N,)
    det_rank: np.ndarray  # int32 (N,)
    det_score: np.ndarray  # float64 (N,)
    det_state: np.ndarray  # int8 (N, A, T): FP 0, TP 1, ignored 2
    npig: np.ndarray  # int64 (K, C)
    ndet: np.ndarray  # int64 (K,): detections per category (before any cut)
    image_values: np.ndarray | None = None  # float64 (I, F): per image, what StreamSpec.image_keys read


@dataclass(frozen=True)
class StreamRows:
    """Every shard's rows merged, indices dense: images ascending by id, categories those evaluated."""

    det_image: np.ndarray  # int32 (N,), index into image_ids
    det_category: np.ndarray  # int32 (N,)
    det_rank: np.ndarray  # int32 (N,)
    det_score: np.ndarray  # float64 (N,)
    det_state: np.ndarray  # int8 (N, A, T)
    npig: np.ndarray  # int64 (K, C), summed per category
    ndet: np.ndarray  # int64 (K,)
    image_ids: np.ndarray  # (I,), ascending
    image_values: np.ndarray | None  # float64 (I, F), per image_ids

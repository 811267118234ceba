"""Sharded evaluation on Dask: match partitions of images on workers, reduce once.

Two entry points, both giving the arrays of :func:`deteval.evaluate`, bit for bit:

- :func:`evaluate` takes what ``evaluate()`` takes (paths, JSON objects, containers), loads
  it once here, cuts the images (in id order) into ``npartitions`` parts and matches each
  part on a worker.
- :func:`evaluate_shards` takes a list of ``(preds, gt)`` pairs, each a pair of files (or objects) over its
  own images (paths, say, one per shard of a dataset too large for one machine): each shard
  is loaded *and* matched on a worker, and only its matches travel.

Any protocol with streaming evaluation (:meth:`deteval.protocols.base.Protocol.streaming`) but a
federated one (LVIS) runs here: its ``stream_match`` matches each part and its ``stream_result``
reduces the merged states; others are refused with one error naming the protocol. VOC-family
protocols rank score ties (by their ``ties``) over the rows image by image (ascending ids), each image's
rows in file order: the result of ``evaluate()`` when the detections are listed so (see
:class:`deteval.evaluator.Evaluator`).

Each worker returns an :class:`~deteval.evaluator.state.EvaluatorState` (about 64 bytes per kept
detection with COCO's defaults); one task merges them and ranks and reduces. A
``distributed.Client`` in use (or given as ``client``) runs the tasks; without one, Dask's
local scheduler does. Dask is an optional extra (``pip install "deteval[dask]"``) and is
imported only when these functions are called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval import protocols
from deteval.errors import InputError
from deteval.evaluator.state import (
    EvaluatorState,
    merge_states,
    protocol_of,
    result_from_state,
    state_config,
    state_from_matches,
)
from deteval.result import EvalResult
from deteval.types import Detections, GroundTruth, IdTable, images_between

__all__ = ["evaluate", "evaluate_shards"]


def _params(protocol: str, iou_type: str | None, compat: bool, options: dict) -> Any:
    """The protocol's parameters, as :func:`deteval.evaluate` builds them; an error where it has no streaming."""
    proto = protocols.get(protocol)
    if proto.streaming().federated:  # the frequencies would have to travel with the states
        raise InputError("protocol", None, f"deteval.dask does not evaluate federated protocols such as {protocol!r}")
    return proto.params(iou_type, compat=compat, **options)


def _subset(dets: Detections, gt: GroundTruth, lo: int, hi: int) -> tuple[Detections, GroundTruth]:
    """The rows of images ``lo <= index < hi``, with an image table of those images only."""
    return images_between(dets, gt, lo, hi)


def _match_part(part: tuple[Detections, GroundTruth], params: Any, config: tuple) -> EvaluatorState:
    dets, gt = part
    # a loaded ground truth carries what a batch's extra would (the protocol reads it from the container)
    matched = protocols.get(protocol_of(config)).stream_match(dets, gt, params, {})
    return state_from_matches(matched, gt.images.ids, gt.categories.ids, config, "given")


def _load_match_shard(shard: tuple[Any, Any], params: Any, config: tuple) -> tuple[EvaluatorState, dict]:
    preds, gt = shard
    dets, gt_loaded = protocols.get(protocol_of(config)).load(preds, gt, params)
    cats = gt_loaded.categories
    names = {cats.id_of(i): cats.name_of(i) for i in range(len(cats))}
    return _match_part((dets, gt_loaded), params, config), names


def _reduce(states: list[EvaluatorState], params: Any, categories: IdTable | None) -> EvalResult:
    return result_from_state(merge_states(states), params, categories)


def _reduce_shards(results: list[tuple[EvaluatorState, dict]], params: Any, table: IdTable | None) -> EvalResult:
    if table is None:  # the union of the shards' categories, with their names
        names: dict = {}
        for _, n in results:
            names.update(n)
        ids = np.unique(_ids_array(list(names)))
        table = IdTable(ids, names=[names[i] for i in ids.tolist()])
    return _reduce([s for s, _ in results], params, table)


def _ids_array(values: list) -> np.ndarray:
    if values and all(isinstance(v, str) for v in values):
        return np.array(values, dtype=str)
    return np.array(values, dtype=np.int64)


def _client(client: Any) -> Any:
    """The distributed client to use: ``client``, else the one in use; None for Dask's local scheduler."""
    if client is False:
        return None
    if client is not None:
        return client
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        return get_client()
    except ValueError:  # no client in use
        return None


def evaluate(
    preds: Any,
    gt: Any,
    protocol: str = "coco",
    iou_type: str | None = None,
    compat: bool = True,
    *,
    npartitions: int | None = None,
    client: Any = None,
    **options: Any,
) -> EvalResult:
    """:func:`deteval.evaluate`, with matching spread over Dask workers.

    Parameters
    ----------
    preds, gt, protocol, iou_type, compat, **options
        As for :func:`deteval.evaluate` (a protocol with streaming evaluation, not a federated one).
    npartitions : int, optional
        Parts of the image list (in id order, about equal in images). Default: the number
        of workers of the client in use, or 2 per CPU of this machine without one.
    client : distributed.Client or False, optional
        Default: the client in use (``distributed.get_client()``), else Dask's local
        scheduler; ``False`` forces the local scheduler.
    """
    import dask  # noqa: F401 - fail early, with ImportError naming the extra, when Dask is missing

    params = _params(protocol, iou_type, compat, options)
    if params.iou_type != "bbox":
        rule = f"cuts loaded data into parts for 'bbox' only; for {params.iou_type!r}, give shards to evaluate_shards()"
        raise InputError("iou_type", None, rule)
    dets, gt_loaded = protocols.get(protocol).load(preds, gt, params)
    n_img = len(gt_loaded.images)
    if npartitions is None:
        c = _client(client)
        npartitions = len(c.scheduler_info().get("workers", {})) if c is not None else 0
        if npartitions <= 0:
            import os

            npartitions = 2 * (os.cpu_count() or 1)
    if int(npartitions) < 1:
        raise InputError("npartitions", None, f"npartitions must be at least 1, got {npartitions}")
    bounds = np.linspace(0, n_img, min(int(npartitions), max(n_img, 1)) + 1).round().astype(np.int64)
    parts = [_subset(dets, gt_loaded, int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
    config = state_config(params, None, protocol)
    categories = gt_loaded.categories
    return _run_parts(parts, params, config, categories, client)


def _run_parts(parts, params, config, categories, client) -> EvalResult:
    import dask

    client = _client(client)
    if client is not None:
        futures = client.scatter(parts)
        states = [client.submit(_match_part, f, params, config, pure=False) for f in futures]
        return client.submit(_reduce, states, params, categories, pure=False).result()
    states = [dask.delayed(_match_part)(p, params, config) for p in parts]
    return dask.compute(dask.delayed(_reduce)(states, params, categories))[0]


def evaluate_shards(
    shards: Sequence[tuple[Any, Any]],
    protocol: str = "coco",
    iou_type: str | None = None,
    compat: bool = True,
    *,
    client: Any = None,
    categories: Sequence | Mapping | None = None,
    **options: Any,
) -> EvalResult:
    """Evaluate a dataset given as shards, each loaded and matched on a worker.

    Parameters
    ----------
    shards : sequence of (preds, gt)
        One pair per shard, as :func:`deteval.evaluate` takes them for ``protocol`` (any ``iou_type``
        it has, e.g. coco's bbox, segm, keypoints); paths keep the
        data off this process. Every image must belong to one shard only (an image id in
        two shards is an error). The categories evaluated are the union of the shards'
        ground-truth ``categories`` lists (the same list in every shard, usually).
    categories : sequence of ids, or mapping id -> name, optional
        Evaluate these categories instead of the union.
    client, protocol, iou_type, compat, **options
        As for :func:`evaluate`.
    """
    import dask

    from deteval.evaluator.inputs import category_table

    params = _params(protocol, iou_type, compat, options)
    shards = [tuple(s) for s in shards]
    if not shards or any(len(s) != 2 for s in shards):
        raise InputError("shards", None, "expected a non-empty list of (preds, gt) pairs")
    config = state_config(params, None, protocol)
    table = category_table(categories)
    c = _client(client)
    if c is not None:
        results = [c.submit(_load_match_shard, s, params, config, pure=False) for s in shards]
        return c.submit(_reduce_shards, results, params, table, pure=False).result()
    results = [dask.delayed(_load_match_shard)(s, params, config) for s in shards]
    return dask.compute(dask.delayed(_reduce_shards)(results, params, table))[0]

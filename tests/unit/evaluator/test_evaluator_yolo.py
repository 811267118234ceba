"""The yolo protocol's Evaluator: batches of boxes and class indices, in any order and merged, equal to
``deteval.evaluate()`` on the same YOLO folders (``==`` on every stat and per-class value)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from support.yolo_folders import generate

import deteval
from deteval import Evaluator
from deteval.errors import InputError
from deteval.io.yolo import read_yolo, yolo_containers


def _items(preds: Path, labels: Path, sizes: Path | None) -> list:
    ys = read_yolo(preds, labels, sizes)
    _, gt = yolo_containers(ys)
    ids = gt.categories.ids
    pr, boxes = ys.preds, ys.corners(ys.preds)  # every prediction, of classes without labels too
    out = []
    for i in range(len(gt.images)):
        g, d = np.flatnonzero(gt.image == i), np.flatnonzero(pr.image == i)
        pred = {"boxes": boxes[d], "scores": pr.conf[d], "labels": pr.cls[d]}
        out.append((pred, {"boxes": gt.boxes[g], "labels": ids[gt.category[g]], "image_id": i}))
    return out


def _rows(result) -> tuple:
    return result.stats, [(r["category_id"], r["P"], r["R"], r["AP50"], r["AP50-95"]) for r in result.per_class]


@pytest.mark.parametrize("seed", range(3))
def test_batches_equal_evaluate(tmp_path: Path, seed: int) -> None:
    preds, labels, sizes = generate(tmp_path, seed, n_images=30)
    want = _rows(deteval.evaluate(str(preds), str(labels), protocol="yolo", image_sizes=sizes))
    items = _items(preds, labels, sizes)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(items))
    a, b = Evaluator(protocol="yolo", box_format="xyxy"), Evaluator(protocol="yolo", box_format="xyxy")
    for k, i in enumerate(order):
        (a if k % 2 else b).update([items[i][0]], [items[i][1]])
    a.merge(pickle.loads(pickle.dumps(b)))
    assert _rows(a.compute()) == want


def test_evaluator_takes_no_options() -> None:
    with pytest.raises(InputError, match="no options"):
        Evaluator(protocol="yolo", iou_thrs=[0.5])


@pytest.mark.parametrize("npartitions", [1, 4])
def test_dask_parts_equal_evaluate(tmp_path: Path, npartitions: int) -> None:
    pytest.importorskip("dask", reason="the dask extra is not installed (pip install 'deteval[dask]')")
    import deteval.evaluator.dask as ddask

    preds, labels, sizes = generate(tmp_path, 4, n_images=20)
    want = _rows(deteval.evaluate(str(preds), str(labels), protocol="yolo", image_sizes=sizes))
    got = ddask.evaluate(str(preds), str(labels), protocol="yolo", image_sizes=sizes, npartitions=npartitions,
                         client=False)  # fmt: skip
    assert _rows(got) == want

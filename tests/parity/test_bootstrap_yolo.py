"""Bootstrap, slices and compare for the yolo protocol: every replicate and slice equals ``deteval.evaluate()``
on the materialised dataset (``==``, every stat). Image ``idx[j]`` becomes image ``j`` with copies of its labels
and predictions, rows draw after draw (the yolo protocol ranks equal confidences by row); a slice is its
images alone, rows in their original order. The folders have tied confidences on purpose."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from support.resampled import file_draws
from support.yolo_folders import generate

import deteval
from deteval.analysis.intervals import stats_of_draws
from deteval.analysis.slices import slice_stats
from deteval.io.yolo import read_yolo, yolo_containers
from deteval.types import IdTable, take_rows


def _materialised(dets, gt, idx) -> list[float]:
    d_rows = np.concatenate([np.flatnonzero(dets.image == i) for i in idx] + [np.zeros(0, np.int64)])
    g_rows = np.concatenate([np.flatnonzero(gt.image == i) for i in idx] + [np.zeros(0, np.int64)])
    d_img = np.concatenate([np.full(np.sum(dets.image == i), j) for j, i in enumerate(idx)] + [np.zeros(0)])
    g_img = np.concatenate([np.full(np.sum(gt.image == i), j) for j, i in enumerate(idx)] + [np.zeros(0)])
    images = IdTable(np.arange(len(idx), dtype=np.int64))
    g = dataclasses.replace(take_rows(gt, g_rows), image=g_img.astype(np.int32), images=images)
    d = dataclasses.replace(take_rows(dets, d_rows), image=d_img.astype(np.int32))
    return list(deteval.evaluate(d, g, protocol="yolo").stats.values())


@pytest.mark.parametrize("seed", range(3))
def test_replicates_and_slices(tmp_path: Path, seed: int) -> None:
    preds, labels, sizes = generate(tmp_path, seed, n_images=25)
    dets, gt = yolo_containers(read_yolo(preds, labels, sizes))
    # tied confidences: rounded to 2 digits
    dets = dataclasses.replace(dets, score=np.round(dets.score, 2))
    result = deteval.evaluate(dets, gt, protocol="yolo")
    draws = [*file_draws(len(gt.images), 4, seed), np.array([3, 3, 0]), np.array([], np.int64)]
    for row, d in zip(stats_of_draws(result, [np.asarray(d, np.int64) for d in draws]), draws):
        assert row.tolist() == _materialised(dets, gt, list(d))
    ids = result.replay.image_ids
    slices = {f"s{i}": [ids[j] for j in d] for i, d in enumerate(draws[:-1])}
    got = slice_stats(result, slices)
    for i, d in enumerate(draws[:-1]):
        assert list(got[f"s{i}"].values()) == _materialised(dets, gt, sorted(set(d.tolist())))


def test_bootstrap_of_folders(tmp_path: Path) -> None:
    preds, labels, sizes = generate(tmp_path, 5, n_images=10)
    r = deteval.bootstrap(str(preds), str(labels), protocol="yolo", n=20, image_sizes=sizes)
    assert "mAP50-95" in r.format_table()


def test_compare_two_prediction_folders(tmp_path: Path) -> None:
    p1, labels, sizes = generate(tmp_path / "a", 6, n_images=12)
    p2 = tmp_path / "b"
    p2.mkdir()
    for f in p1.glob("*.txt"):  # model B: model A's boxes, its confidences squared
        rows = [line.split() for line in f.read_text().splitlines()]
        (p2 / f.name).write_text("".join(" ".join([*r[:5], repr(float(r[5]) ** 2)]) + "\n" for r in rows))
    r = deteval.compare(str(p1), str(p2), str(labels), protocol="yolo", n=30, image_sizes=str(sizes))
    for folder, stats in ((p1, r.a), (p2, r.b)):
        assert stats == deteval.evaluate(str(folder), str(labels), protocol="yolo", image_sizes=str(sizes)).stats

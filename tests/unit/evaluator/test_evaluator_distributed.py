"""Evaluator.sync() over torch.distributed: 2 CPU processes on gloo give the numbers of one process.

Each rank updates with its half of the images (explicit ids in a random split; then the
halves swapped between the ranks; then automatic ids in DistributedSampler order with torch
tensors as inputs), calls ``sync()`` and computes. Every rank must hold exactly the arrays of
``deteval.evaluate`` on the whole pair. Needs the ``torch`` extra (CPU wheel is enough).
"""

from __future__ import annotations

import os
import socket

import numpy as np
import pytest
from test_evaluator import ARRAYS, assert_identical, categories_of, feed, load_pair, per_image

import deteval
from deteval.evaluator import Evaluator

torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install 'deteval[torch]')")
dist = pytest.importorskip("torch.distributed", reason="this torch build has no torch.distributed")
if not dist.is_available():  # pragma: no cover - builds without distributed support
    pytest.skip("torch.distributed is not available in this torch build", allow_module_level=True)

PAIRS = ("coco_fake100",)
WORLD = 2
VARIANTS = ("split", "swapped", "auto", "resync")
pytestmark = pytest.mark.usefixtures("hang_limit")  # a hung cluster fails the run (conftest)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_tensors(items):
    out = []
    for p, t in items:
        out.append(tuple({k: torch.as_tensor(np.asarray(v)) for k, v in d.items()} for d in (p, t)))
    return out


def _worker(rank: int, world: int, port: int, out_dir: str) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        arrays = {}
        for name in PAIRS:
            gt, dets = load_pair(name)
            cats = categories_of(gt)
            items = per_image(gt, dets)
            perm = np.random.default_rng(0).permutation(len(items))  # the same split on every rank
            rng = np.random.default_rng(100 + rank)  # batch sizes differ between ranks
            results = {}

            ev = feed(Evaluator(box_format="xywh", categories=cats), [items[i] for i in perm[rank::world]], rng)
            results["split"] = ev.sync().compute()

            other = world - 1 - rank
            ev = feed(Evaluator(box_format="xywh", categories=cats), [items[i] for i in perm[other::world]], rng)
            results["swapped"] = ev.sync().compute()

            # no image_id: ids n * world + rank from torch.distributed, the DistributedSampler order
            auto = _as_tensors(per_image(gt, dets, with_ids=False))
            ev = feed(Evaluator(box_format="xywh", categories=cats), auto[rank::world], rng)
            results["auto"] = ev.sync().compute()

            # sync twice, and update between syncs: nothing counted twice
            mine = [items[i] for i in perm[rank::world]]
            ev = feed(Evaluator(box_format="xywh", categories=cats), mine[: len(mine) // 2], rng)
            ev.sync()
            ev.sync()
            feed(ev, mine[len(mine) // 2 :], rng)
            results["resync"] = ev.sync().compute()

            for variant, res in results.items():
                for a in ARRAYS:
                    arrays[f"{name}/{variant}/{a}"] = res.arrays[a]
                arrays[f"{name}/{variant}/stats"] = np.array(list(res.stats.values()))
        np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **arrays)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_gloo_processes_equal_one_process(tmp_path):
    refs = {}
    for name in PAIRS:  # also fills numba's cache before the workers start
        gt, dets = load_pair(name)
        refs[name] = deteval.evaluate(dets, gt)
        assert_identical(
            feed(Evaluator(box_format="xywh", categories=categories_of(gt)), per_image(gt, dets)), refs[name]
        )
    torch.multiprocessing.spawn(_worker, args=(WORLD, _free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    for rank in range(WORLD):
        got = np.load(tmp_path / f"rank{rank}.npz")
        for name in PAIRS:
            ref = refs[name]
            for variant in VARIANTS:
                for a in ARRAYS:
                    assert np.array_equal(got[f"{name}/{variant}/{a}"], ref.arrays[a]), (rank, name, variant, a)
                assert np.array_equal(got[f"{name}/{variant}/stats"], np.array(list(ref.stats.values())))


def test_sync_without_a_process_group_is_a_no_op():
    assert not dist.is_initialized()
    gt, dets = load_pair("toy7")
    ev = feed(Evaluator(box_format="xywh", categories=categories_of(gt)), per_image(gt, dets))
    assert_identical(ev.sync().compute(), deteval.evaluate(dets, gt))

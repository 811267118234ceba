"""Evaluator(protocol="lvis") fed torch tensors (federated lists included), in one process and synced over
two gloo processes: the numbers of deteval.evaluate."""

from __future__ import annotations

import gzip
import os
import socket

import numpy as np
import pytest
from support.lvis_oracle import DATA, lvis100_categories, lvis100_images

import deteval

torch = pytest.importorskip("torch", reason="the torch extra is not installed")


def _reference(tmp_path):
    gt, dets = tmp_path / "gt.json", tmp_path / "dets.json"
    gt.write_bytes(gzip.decompress((DATA / "lvis_val_100.json.gz").read_bytes()))
    dets.write_bytes(gzip.decompress((DATA / "dets_bbox.json.gz").read_bytes()))
    return deteval.evaluate(dets, gt, protocol="lvis")


def test_torch_tensors_equal_evaluate(tmp_path):
    ref = _reference(tmp_path)
    items = list(lvis100_images("bbox", to=torch.as_tensor))
    assert isinstance(items[0][1]["neg_category_ids"], torch.Tensor)
    # labels as float tensors (a model's output) and lists as int32: read as the same ids
    for p, t in items:
        p["labels"] = p["labels"].float()
        t["not_exhaustive_category_ids"] = t["not_exhaustive_category_ids"].to(torch.int32)
    ev = deteval.Evaluator(protocol="lvis", box_format="xywh", categories=lvis100_categories())
    for i in range(0, len(items), 16):
        ev.update([p for p, _ in items[i : i + 16]], [t for _, t in items[i : i + 16]])
    res = ev.compute()
    assert res.stats == ref.stats
    assert np.array_equal(res.precision, ref.precision) and np.array_equal(res.recall, ref.recall)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, out_dir: str) -> None:
    import torch.distributed as dist

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        items = list(lvis100_images("bbox", to=torch.as_tensor))[rank::world]  # each rank its images and lists
        ev = deteval.Evaluator(protocol="lvis", box_format="xywh", categories=lvis100_categories())
        for i in range(0, len(items), 5 + rank):
            ev.update([p for p, _ in items[i : i + 5 + rank]], [t for _, t in items[i : i + 5 + rank]])
        res = ev.sync().compute()
        stats = np.array(list(res.stats.values()))
        np.savez(os.path.join(out_dir, f"rank{rank}.npz"), stats=stats, precision=res.precision, recall=res.recall)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_gloo_processes_equal_evaluate(tmp_path):
    dist = pytest.importorskip("torch.distributed", reason="this torch build has no torch.distributed")
    if not dist.is_available():  # pragma: no cover - builds without distributed support
        pytest.skip("torch.distributed is not available in this torch build")
    ref = _reference(tmp_path)
    torch.multiprocessing.spawn(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    for rank in range(2):
        got = np.load(tmp_path / f"rank{rank}.npz")
        assert np.array_equal(got["stats"], np.array(list(ref.stats.values()))), rank
        assert np.array_equal(got["precision"], ref.precision) and np.array_equal(got["recall"], ref.recall), rank

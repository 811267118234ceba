"""Evaluator(protocol="lvis") fed torch tensors (federated lists included): the numbers of deteval.evaluate."""

from __future__ import annotations

import numpy as np
import pytest
from lvis_oracle import DATA, lvis100_categories, lvis100_images

import deteval

torch = pytest.importorskip("torch", reason="the torch extra is not installed")


def test_torch_tensors_equal_evaluate(tmp_path):
    import gzip

    gt = tmp_path / "gt.json"
    dets = tmp_path / "dets.json"
    gt.write_bytes(gzip.decompress((DATA / "lvis_val_100.json.gz").read_bytes()))
    dets.write_bytes(gzip.decompress((DATA / "dets_bbox.json.gz").read_bytes()))
    ref = deteval.evaluate(dets, gt, protocol="lvis")
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

"""Tensors without data (the 'meta' device) are refused by Evaluator.update, naming the device."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from deteval import Evaluator, InputError  # noqa: E402


def test_tensors_on_the_meta_device_are_refused():
    ev = Evaluator(box_format="xywh")
    meta = {"boxes": torch.zeros((1, 4), device="meta"), "scores": torch.zeros(1, device="meta"),
            "labels": torch.zeros(1, dtype=torch.int64, device="meta")}  # fmt: skip
    with pytest.raises(InputError, match="meta"):
        ev.update([meta], [{"boxes": torch.zeros((1, 4)), "labels": torch.ones(1, dtype=torch.int64)}])

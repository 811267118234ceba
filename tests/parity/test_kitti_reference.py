"""``--protocol kitti`` against OpenPCDet's ``kitti_object_eval_python`` run inside the test (vendored in
tests/references/kitti_object_eval_python, shims in tests/support/kitti_reference.py), on generated folders
built for its quirks (tests/support/kitti_data.py): ``==`` on every stat, the 41-slot precision and recall
envelopes and, where the detections carry alpha, AOS."""

from __future__ import annotations

import numpy as np
import pytest
from support.kitti_data import kitti_case
from support.kitti_reference import CLASSES, DIFFICULTIES, reference_arrays

import deteval


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))


def _check(tmp_path, seed: int, n_images: int) -> None:
    results, labels = kitti_case(tmp_path / "data", seed, n_images)
    ref = reference_arrays(tmp_path / "ref", results, labels)
    res = deteval.evaluate(str(results), str(labels), protocol="kitti")
    want = {
        f"{c}/{d}/{k}": float(ref[k][i, j])
        for i, c in enumerate(CLASSES)
        for j, d in enumerate(DIFFICULTIES)
        for k in ("R40", "R11")
    }
    assert list(res.stats) == list(want)
    assert res.stats == want or all(_same(res.stats[k], want[k]) for k in want)
    assert _same(res.precision, ref["precision"])
    assert _same(res.recall, ref["recall"])
    assert bool(res.aos) == ref["aos"]
    if ref["aos"]:
        assert _same(res.orientation, ref["orientation"])
        for i, c in enumerate(CLASSES):
            for j, d in enumerate(DIFFICULTIES):
                assert _same(res.aos[f"{c}/{d}/R40"], ref["aos_R40"][i, j])
                assert _same(res.aos[f"{c}/{d}/R11"], ref["aos_R11"][i, j])


@pytest.mark.parametrize("seed", range(5))
def test_generated_equals_reference(tmp_path, seed):
    _check(tmp_path, seed, n_images=30)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5, 45))
def test_generated_equals_reference_more(tmp_path, seed):
    _check(tmp_path, seed, n_images=[5, 40, 150][seed % 3])

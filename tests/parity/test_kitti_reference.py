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


def _write(folder, files: dict[int, list[str]]) -> None:
    folder.mkdir(parents=True)
    for i, lines in files.items():
        (folder / f"{i:06d}.txt").write_text("".join(line + "\n" for line in lines))


def _obj(name: str, box: list[int], score: float | None = None, occ: int = 0, trunc: float = 0.0) -> str:
    tail = "" if score is None else f" {score}"
    return f"{name} {trunc} {occ} 0.5 {' '.join(map(str, box))} 1.5 1.6 3.9 1.0 1.5 20.0 0.1{tail}"


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the reference's 0 / 0
def test_hand_cases_equal_reference(tmp_path):
    """Cases the generated data meets rarely: a threshold at which nothing is counted (tp + fp = 0: NaN
    precision, and NaN R11, as the reference has it), IoU and DontCare overlap exactly at the thresholds, heights
    exactly 25 and 40, and bounds of occlusion and truncation."""
    gt = {
        # the Van takes the Car's only candidate in the counting pass (largest IoU), the other detection
        # lies in a DontCare region: no TP and no FP at the one threshold
        0: [_obj("Van", [0, 0, 100, 100]), _obj("Car", [10, 0, 110, 100]), _obj("DontCare", [-10, 0, 90, 100])],
        1: [_obj("Pedestrian", [0, 0, 20, 40]), _obj("Pedestrian", [100, 0, 120, 25], occ=1, trunc=0.3)],
        2: [_obj("Cyclist", [0, 0, 20, 50], occ=2, trunc=0.5), _obj("DontCare", [200, 0, 220, 50])],
    }
    dt = {
        0: [_obj("Car", [5, 0, 105, 100], 0.6), _obj("Car", [-10, 0, 90, 100], 0.9)],
        1: [_obj("Pedestrian", [0, 0, 10, 40], 0.8), _obj("Pedestrian", [100, 0, 120, 25], 0.7)],
        2: [_obj("Cyclist", [0, 0, 10, 50], 0.5), _obj("Cyclist", [210, 0, 230, 50], 0.4),
            _obj("Cyclist", [0, 0, 20, 50], 0.3)],
    }  # fmt: skip
    _write(tmp_path / "label_2", gt)
    _write(tmp_path / "results", dt)
    ref = reference_arrays(tmp_path / "ref", tmp_path / "results", tmp_path / "label_2")
    res = deteval.evaluate(str(tmp_path / "results"), str(tmp_path / "label_2"), protocol="kitti")
    # the case is what it claims: slot 0 is NaN, which R11 reads (R40 leaves slot 0 out)
    assert np.isnan(ref["R11"][0, 0]) and np.isnan(res.stats["Car/easy/R11"]) and ref["R40"][0, 0] == 0
    for i, c in enumerate(CLASSES):
        for j, d in enumerate(DIFFICULTIES):
            for k in ("R40", "R11"):
                assert _same(res.stats[f"{c}/{d}/{k}"], ref[k][i, j]), (c, d, k)
    assert _same(res.precision, ref["precision"]) and _same(res.recall, ref["recall"])

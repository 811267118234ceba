"""Evaluator states are checked before any arithmetic: on merge, sync and unpickling (damaged, foreign or
other-version states are one InputError naming the field); masks of different sizes are warned about."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from deteval import DetevalWarning, Evaluator, InputError
from deteval.evaluator.state import check_state


def _evaluator(**kw) -> Evaluator:
    ev = Evaluator(box_format="xywh", **kw)
    preds = [
        {
            "boxes": np.array([[0, 0, 10, 10], [5, 5, 10, 10]], float),
            "scores": np.array([0.9, 0.4]),
            "labels": np.array([1, 2]),
            "image_id": 7,
        }
    ]
    target = [{"boxes": np.array([[0, 0, 10, 10]], float), "labels": np.array([1]), "image_id": 7}]
    ev.update(preds, target)
    return ev  # fmt: skip


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda s: {"det_state": s.det_state[:, :, :3]}, "det_state"),  # same config, another shape: concatenate failed
        (lambda s: {"det_image": s.det_image + 5}, "det_image"),  # out of range: IndexError at compute()
        (lambda s: {"det_image": s.det_image[:1]}, "det_image"),  # rows disagree
        (lambda s: {"det_score": s.det_score.astype(object)}, "det_score"),
        (lambda s: {"det_state": s.det_state + 5}, "det_state"),
        (lambda s: {"cat_ndet": s.cat_ndet[:0]}, "cat_ndet"),
    ],
)
def test_merge_of_a_damaged_state_names_the_field(change, field):
    ev, other = _evaluator(), _evaluator()
    state = other.state()
    bad = dataclasses.replace(state, **change(state))
    with pytest.raises(InputError, match=field):
        ev.merge(bad)
    assert ev.compute().stats == _evaluator().compute().stats  # unchanged by the refused merge


def test_merge_refuses_another_outcome_shape_with_one_line():
    ev = _evaluator()
    other = _evaluator(iou_thrs=[0.5])
    with pytest.raises(InputError) as err:
        ev.merge(other)
    assert "\n" not in str(err.value)


def test_unpickling_checks_the_state_and_the_version():
    ev = _evaluator()
    again = pickle.loads(pickle.dumps(ev))
    assert again.compute().stats == ev.compute().stats
    d = ev.__getstate__()
    for damage, words in [
        ({"_pickle_version": 99}, "format 99"),
        ({"_chunks": [dataclasses.replace(ev.state(), det_image=ev.state().det_image + 9)]}, "det_image"),
        ({"_chunks": "nope"}, "not an Evaluator"),
    ]:
        fresh = Evaluator.__new__(Evaluator)
        with pytest.raises(InputError, match=words):
            fresh.__setstate__({**d, **damage})


def test_sync_checks_the_state():
    ev = _evaluator()
    with pytest.raises(InputError, match="det_image"):
        ev.adopt_state(dataclasses.replace(ev.state(), det_image=ev.state().det_image - 1))
    with pytest.raises(InputError, match="EvaluatorState"):
        check_state("x")


def test_masks_of_different_sizes_are_warned_about_once_per_update():
    ev = Evaluator(iou_type="segm", box_format="xywh")
    small, large = np.zeros((1, 20, 20), bool), np.zeros((1, 30, 30), bool)
    small[0, 2:10, 2:10] = large[0, 2:10, 2:10] = True
    preds = [{"masks": small, "scores": np.array([0.9]), "labels": np.array([1])}] * 3
    target = [{"masks": large, "labels": np.array([1])}] * 3
    with pytest.warns(DetevalWarning, match=r"3 images have masks of different sizes; first: preds\[0\]") as rec:
        ev.update(preds, target)
    assert len([w for w in rec if issubclass(w.category, DetevalWarning)]) == 1

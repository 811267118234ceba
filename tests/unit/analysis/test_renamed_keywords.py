"""The old keywords ``iou=`` and ``pos_thr=`` still work for one release: a DeprecationWarning, the same output."""

from __future__ import annotations

import inspect
import json
import warnings

import pytest

import deteval
from deteval.analysis.curves import pr_curves
from deteval.analysis.operating_points import score_curves
from deteval.analysis.report import with_operating_points
from deteval.analysis.tide import tide_errors
from deteval.cli import sample_pair
from deteval.result import jsonable


@pytest.fixture(scope="module")
def result():
    return deteval.evaluate(*sample_pair())


def _same(a, b) -> bool:
    """Equal to the last bit: floats are written at repr precision (NaN as null)."""
    return json.dumps(jsonable(a)) == json.dumps(jsonable(b))


def _old_and_new(fn, *args, old, new, value, **kwargs):
    """``fn`` called with the new keyword (no warning) and with the old one (a DeprecationWarning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got_new = fn(*args, **{new: value}, **kwargs)
    with pytest.warns(DeprecationWarning, match=f"{old}= is now {new}="):
        got_old = fn(*args, **{old: value}, **kwargs)
    return got_new, got_old


def test_report_iou(result):
    new, old = _old_and_new(with_operating_points, result, old="iou", new="iou_thr", value=0.75)
    assert _same(new.per_class, old.per_class)


def test_curves_iou(result):
    new, old = _old_and_new(pr_curves, result, old="iou", new="iou_thr", value=0.75, area="large")
    assert new["iou"] == 0.75 and _same(new, old)


def test_operating_points_iou(result):
    new, old = _old_and_new(score_curves, result, old="iou", new="iou_thr", value=0.75, beta=2.0)
    assert new.iou == 0.75 and _same(new.to_dict(), old.to_dict())


def test_tide_pos_thr():
    preds, gt = sample_pair()
    new, old = _old_and_new(tide_errors, preds, gt, old="pos_thr", new="iou_thr", value=0.75)
    assert new.pos_thr == 0.75 and _same(new.to_dict(), old.to_dict())


def test_both_keywords_is_an_error(result):
    with pytest.raises(TypeError, match="both iou= and iou_thr="):
        score_curves(result, iou=0.5, iou_thr=0.5)


def test_signatures_show_the_new_names():
    assert "iou_thr" in inspect.signature(score_curves).parameters
    assert "iou" not in inspect.signature(score_curves).parameters
    assert "iou_thr" in inspect.signature(tide_errors).parameters

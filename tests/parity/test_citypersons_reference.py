"""CityPersons MR^-2 (``--protocol citypersons``) against the dataset authors' own ``eval_MR_multisetup.py``
and ``coco.py``, run from a local checkout of cvgroup-njust/CityPersons named by DETEVAL_CITYPERSONS_REF (the
repository carries no license, so neither the scripts nor its val_gt.json are in deteval's tree; shims in
tests/support/citypersons_reference.py). Without the variable these tests skip and
tests/parity/test_citypersons.py's independent oracle is the check."""

from __future__ import annotations

import copy

import pytest
from support import citypersons_reference as ref
from support.pedestrian_data import citypersons_case, citypersons_detections, citypersons_edges

import deteval

pytestmark = [
    pytest.mark.skipif(ref.checkout() is None, reason=f"set {ref.ENV} to a CityPersons checkout"),
    pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning"),  # the reference's log(0) at MR 0
]


@pytest.fixture(autouse=True)
def _reference_imports():
    pytest.importorskip("matplotlib")  # coco.py and eval_MR_multisetup.py import it (and scipy.io)
    pytest.importorskip("scipy")


def _both(tmp_path, gt, res):
    mine = list(deteval.evaluate(copy.deepcopy(res), copy.deepcopy(gt), protocol="citypersons").stats.values())
    return mine, ref.mr(tmp_path, copy.deepcopy(gt), copy.deepcopy(res))


@pytest.mark.filterwarnings("ignore::deteval.DetevalWarning")
@pytest.mark.parametrize("seed", range(30))
def test_generated_equals_eval_mr_multisetup(tmp_path, seed):
    gt, res = citypersons_case(seed, n_images=[3, 12, 25][seed % 3], scale=[4, 8, 16][seed % 3])
    if not res:
        pytest.skip("no results: the reference's loadRes reads anns[0]")
    mine, theirs = _both(tmp_path, gt, res)
    assert mine == theirs


@pytest.mark.parametrize("case", citypersons_edges(), ids=lambda c: c[0])
def test_edges_equal_eval_mr_multisetup(tmp_path, case):
    _, gt, res = case
    mine, theirs = _both(tmp_path, gt, res)
    assert mine == theirs


@pytest.mark.parametrize("seed", range(2))
def test_real_val_gt_with_generated_detections(tmp_path, seed):
    import json

    path = ref.checkout() / "evaluation" / "val_gt.json"
    gt = json.loads(path.read_text())
    res = citypersons_detections(gt, seed)
    mine = list(deteval.evaluate(copy.deepcopy(res), str(path), protocol="citypersons").stats.values())
    assert mine == ref.mr(tmp_path, str(path), res)
    assert all(0 < v < 1 for v in mine)

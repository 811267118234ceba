"""citypersons and crowdhuman sharded over Dask (its local scheduler) equal evaluate()."""

from __future__ import annotations

import pytest
from support.pedestrian_data import citypersons_case, crowdhuman_case

import deteval
from deteval import protocols


@pytest.mark.filterwarnings("ignore::deteval.DetevalWarning")
@pytest.mark.parametrize("seed", range(2))
def test_dask_pedestrian_equals_evaluate(seed):
    pytest.importorskip("dask", reason="the dask extra is not installed (pip install 'deteval[dask]')")
    import deteval.evaluator.dask as ddask

    gt, res = citypersons_case(seed, n_images=12, scale=8)  # a GT id 0 among them: loaded ids are kept
    gts, dts = crowdhuman_case(seed, n_images=12, scale=8)
    gts = sorted(gts, key=lambda g: g["ID"])  # shards are merged by image id; evaluate() follows the file
    for name, preds, truth in (("citypersons", res, gt), ("crowdhuman", dts, gts)):
        p = protocols.get(name)
        dets, loaded = p.load(preds, truth, p.params(None))
        ref = deteval.evaluate(preds, truth, protocol=name)
        for n in (1, 3):
            out = ddask.evaluate(dets, loaded, protocol=name, npartitions=n, client=False)
            assert out.stats == ref.stats and out.per_class == ref.per_class

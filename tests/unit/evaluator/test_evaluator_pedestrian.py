"""The citypersons and crowdhuman protocols in the streaming Evaluator: batches in any order and size, and
merged evaluators, give evaluate()'s numbers (stats, per-setup / per-threshold rows, bootstrap draws)."""

from __future__ import annotations

import numpy as np
import pytest
from support.pedestrian_data import (
    citypersons_batches,
    citypersons_case,
    crowdhuman_batches,
    crowdhuman_case,
    crowdhuman_edges,
)

import deteval
from deteval import Evaluator, protocols
from deteval.errors import InputError


def _stream(protocol: str, batches: list, seed: int, **kw) -> deteval.EvalResult:
    rng = np.random.default_rng(seed)
    batches = [batches[i] for i in rng.permutation(len(batches))]
    size = int(rng.integers(1, 5))
    evs = [Evaluator(protocol, **kw), Evaluator(protocol, **kw)]
    for k in range(0, len(batches), size):
        part = batches[k : k + size]
        evs[(k // size) % 2].update([p for p, _ in part], [t for _, t in part])
    return evs[0].merge(evs[1]).compute()


def _same(streamed, batch, n_images: int, seed: int) -> None:
    assert streamed.stats == batch.stats
    assert streamed.per_class == batch.per_class
    draw = np.random.default_rng(seed).integers(0, n_images, n_images)
    fn = lambda r: protocols.get(r.protocol).replay(r).replicate_fn()(draw)  # noqa: E731
    assert fn(streamed) == fn(batch)


@pytest.mark.filterwarnings("ignore::deteval.DetevalWarning")
@pytest.mark.parametrize("seed", range(12))
def test_citypersons_streams_equal_evaluate(seed):
    gt, res = citypersons_case(seed, n_images=[3, 12, 25][seed % 3], scale=[4, 8, 16][seed % 3])
    for a in gt["annotations"]:
        a["id"] += 1  # targets carry no annotation ids: no id 0 (whose match the reference counts as an FP)
    batch = deteval.evaluate(res, gt, protocol="citypersons")
    _same(_stream("citypersons", citypersons_batches(gt, res), seed), batch, len(gt["images"]), seed)


def test_citypersons_takes_no_options():
    for kw in ({"max_dets": [3]}, {"box": "hbox"}):
        with pytest.raises(InputError, match="protocol 'citypersons' takes no options"):
            Evaluator("citypersons", **kw)


def test_citypersons_needs_heights_and_visibilities():
    gt, res = citypersons_case(1, n_images=3, scale=4)
    preds, target = citypersons_batches(gt, res)[0]
    del target["vis_ratio"]
    with pytest.raises(InputError, match="missing key 'vis_ratio'"):
        Evaluator("citypersons").update([preds], [target])
    target["vis_ratio"] = np.full(len(target["boxes"]) + 1, 0.9)
    with pytest.raises(InputError, match="vis_ratio has"):
        Evaluator("citypersons").update([preds], [target])
    target["vis_ratio"] = np.full(len(target["boxes"]), np.nan)
    if len(target["boxes"]):
        with pytest.raises(InputError, match=r"vis_ratio\[0\] is not finite"):
            Evaluator("citypersons").update([preds], [target])


@pytest.mark.parametrize("seed", range(12))
def test_crowdhuman_streams_equal_evaluate(seed):
    gts, dts = crowdhuman_case(seed, n_images=[3, 10, 20][seed % 3], scale=[4, 10, 16][seed % 3],
                               complete=seed % 2 == 0)
    gts = sorted(gts, key=lambda g: g["ID"])  # the stream orders images by id; evaluate() by the file's lines
    batch = deteval.evaluate(dts, gts, protocol="crowdhuman")
    _same(_stream("crowdhuman", crowdhuman_batches(gts, dts), seed), batch, len(gts), seed)


def test_crowdhuman_edges_and_xyxy_stream_equal_evaluate():
    gts, dts = crowdhuman_edges()
    gts = sorted(gts, key=lambda g: g["ID"])
    batch = deteval.evaluate(dts, gts, protocol="crowdhuman")
    _same(_stream("crowdhuman", crowdhuman_batches(gts, dts), 1), batch, len(gts), 1)
    xyxy = _stream("crowdhuman", crowdhuman_batches(gts, dts, "xyxy"), 2, box_format="xyxy")
    assert xyxy.stats == batch.stats


def test_crowdhuman_tags_and_flags():
    gts, dts = crowdhuman_edges()
    preds, target = crowdhuman_batches(gts, dts)[2]
    ev = Evaluator("crowdhuman")
    target["tag"] = np.full(len(target["boxes"]), 2.0)
    with pytest.raises(InputError, match="a tag must be 1"):
        ev.update([preds], [target])
    # an ignore flag makes a box an ignore region, as extra.ignore does
    target["tag"] = np.ones(len(target["boxes"]))
    target["ignore"] = np.ones(len(target["boxes"]), np.int64)
    ev.update([preds], [target])
    assert ev.compute().stats["AP"] == -1.0  # no positives
    with pytest.raises(InputError, match="missing key 'width'"):
        Evaluator("crowdhuman").update([preds], [{k: v for k, v in target.items() if k != "width"}])
    with pytest.raises(InputError, match="not an option of protocol 'crowdhuman'"):
        Evaluator("crowdhuman", box="hbox")

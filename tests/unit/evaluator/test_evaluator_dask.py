"""deteval.evaluator.dask on a LocalCluster of 2 worker processes: identical arrays to deteval.evaluate().

Needs the ``dask`` extra (``dask[distributed]``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import COCO_PAIRS
from test_evaluator import assert_identical, categories_of, feed, load_pair, per_image

import deteval
from deteval.evaluator import Evaluator

pytest.importorskip("dask", reason="the dask extra is not installed (pip install 'deteval[dask]')")
distributed = pytest.importorskip("distributed", reason="the dask extra is not installed (pip install 'deteval[dask]')")

import deteval.evaluator.dask as ddask  # noqa: E402 - after the skips

PAIRS = ("coco_fake100", "voc100_difficult_as_crowd", "toy7")
pytestmark = pytest.mark.usefixtures("hang_limit")  # a hung cluster fails the run (conftest)


@pytest.fixture(scope="module")
def client():
    for name in PAIRS:  # fills numba's on-disk cache, so that the workers load kernels instead of compiling
        gt, dets = load_pair(name)
        deteval.evaluate(dets, gt)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.mark.parametrize("npartitions", [1, 3, 7])
@pytest.mark.parametrize("name", PAIRS)
def test_dask_evaluate_equals_evaluate(client, name, npartitions):
    pair = COCO_PAIRS[name]
    ref = deteval.evaluate(pair.load_preds(), pair.load_gt())
    res = ddask.evaluate(pair.load_preds(), pair.load_gt(), npartitions=npartitions, client=client)
    assert_identical(res, ref)


def test_dask_evaluate_options_and_paths(client, tmp_path):
    pair = COCO_PAIRS["coco_fake100"]
    preds_path = pair.preds_list_path(tmp_path)
    for options in ({"use_cats": False}, {"iou_thrs": [0.5, 0.75], "max_dets": [1, 10, 50], "compat": False}):
        ref = deteval.evaluate(str(preds_path), str(pair.gt_path), **options)
        res = ddask.evaluate(str(preds_path), str(pair.gt_path), npartitions=4, **options)  # the client in use
        assert_identical(res, ref)


def _write_shards(pair, n: int, tmp_path) -> list[tuple[str, str]]:
    """The pair cut into n COCO pairs on disk, by image; every shard keeps the categories list."""
    gt, preds = pair.load_gt(), pair.load_preds()
    images = sorted(gt["images"], key=lambda im: im["id"])
    rng = np.random.default_rng(n)
    shard_of = {im["id"]: int(rng.integers(n)) for im in images}
    shards = []
    for s in range(n):
        sub = dict(gt)
        sub["images"] = [im for im in gt["images"] if shard_of[im["id"]] == s]
        sub["annotations"] = [a for a in gt["annotations"] if shard_of.get(a["image_id"]) == s]
        gt_path, dt_path = tmp_path / f"gt{s}.json", tmp_path / f"dt{s}.json"
        gt_path.write_text(json.dumps(sub))
        dt_path.write_text(json.dumps([p for p in preds if shard_of[p["image_id"]] == s]))
        shards.append((str(dt_path), str(gt_path)))
    return shards


@pytest.mark.parametrize("name", PAIRS)
def test_dask_shards_loaded_on_workers_equal_evaluate(client, name, tmp_path):
    pair = COCO_PAIRS[name]
    ref = deteval.evaluate(pair.load_preds(), pair.load_gt())
    shards = _write_shards(pair, 3, tmp_path)
    assert_identical(ddask.evaluate_shards(shards, client=client), ref)
    gt, _ = load_pair(name)
    assert_identical(ddask.evaluate_shards(shards, client=client, categories=categories_of(gt)), ref)


@pytest.mark.parametrize(
    "name, iou_type", [("coco_fake100", "segm"), ("polygons3", "segm"), ("keypoints1", "keypoints")]
)
# box results scored as masks warn; compared here: shards against one process
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
def test_dask_shards_of_other_iou_types_equal_evaluate(client, name, iou_type, tmp_path):
    pair = COCO_PAIRS[name]
    ref = deteval.evaluate(pair.load_preds(), pair.load_gt(), iou_type=iou_type)
    shards = _write_shards(pair, 2, tmp_path)
    assert_identical(ddask.evaluate_shards(shards, iou_type=iou_type, client=client), ref)
    with pytest.raises(deteval.InputError, match="evaluate_shards"):
        ddask.evaluate(pair.load_preds(), pair.load_gt(), iou_type=iou_type, client=client)


def test_dask_shards_with_an_image_twice_is_an_error(client, tmp_path):
    pair = COCO_PAIRS["toy7"]
    shards = _write_shards(pair, 2, tmp_path)
    with pytest.raises(deteval.InputError, match="given 2 times"):
        ddask.evaluate_shards([shards[0], shards[0], shards[1]], client=client)


def test_evaluator_states_built_on_workers_merge_to_evaluate(client):
    """Evaluator states travel between processes: built on workers, merged here."""
    gt, dets = load_pair("voc100")
    items = per_image(gt, dets)
    cats = categories_of(gt)

    def build(part):
        return feed(Evaluator(box_format="xywh", categories=cats), part, max_batch=8).state()

    states = client.gather(client.map(build, [items[0::3], items[1::3], items[2::3]], pure=False))
    merged = Evaluator(box_format="xywh", categories=cats).merge(*states)
    assert_identical(merged, deteval.evaluate(dets, gt))


def test_dask_without_a_distributed_client_uses_the_local_scheduler():
    pair = COCO_PAIRS["toy7"]
    ref = deteval.evaluate(pair.load_preds(), pair.load_gt())
    import dask

    with dask.config.set(scheduler="threads"):
        res = ddask.evaluate(pair.load_preds(), pair.load_gt(), npartitions=3, client=False)
    assert_identical(res, ref)


def test_dask_takes_a_protocols_only_iou_type_by_default(client):
    """crowdpose has keypoints only: named or not, the same evaluation (as deteval.evaluate)."""
    from conftest import DATA_DIR

    folder = DATA_DIR / "crowdpose"
    preds, gt = str(folder / "example_crowdpose_preds.json"), str(folder / "example_crowdpose_val.json")
    ref = deteval.evaluate(preds, gt, protocol="crowdpose")
    assert ref.iou_type == "keypoints"
    assert_identical(ddask.evaluate_shards([(preds, gt)], protocol="crowdpose", client=client), ref)
    with pytest.raises(deteval.InputError, match="for 'keypoints', give shards to evaluate_shards"):
        ddask.evaluate(preds, gt, protocol="crowdpose", client=client)

"""deteval's pycocotools shim (``deteval.pycocotools``) against pycocotools 2.0.11, driven the same way.

Every comparison runs one driver on both (see ``tests/support/shim_twins.py``): printed lines, exceptions,
``eval`` arrays bit for bit, ``stats`` with ``==``, the normalised params and, where read,
``evalImgs`` records and ``ious``. On every COCO pair under tests/data (bbox, segm, keypoints),
with params mutated between ``evaluate()`` calls, and on the COCO API's queries.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from conftest import COCO_PAIRS, DATA_DIR
from support.shim_twins import compare_drivers

from deteval.pycocotools import COCO, COCOeval, Params, cocoeval

KPT_GT, KPT_DT = DATA_DIR / "keypoints1" / "gt_dataset.json", DATA_DIR / "keypoints1" / "dt_dataset.json"
FAKE_GT = DATA_DIR / "coco_fake100" / "instances_val2014_100.json"
FAKE_BBOX = DATA_DIR / "coco_fake100" / "instances_val2014_fakebbox100_results.json"
SEGM_PAIRS = {
    "coco_fake100": (DATA_DIR / "coco_fake100" / "instances_val2014_fakesegm100_results.json", FAKE_GT),
    "polygons3": (DATA_DIR / "polygons3" / "dt_dataset.json", DATA_DIR / "polygons3" / "gt_dataset.json"),
}
_JSON: dict = {}


def _load(path):
    if path not in _JSON:
        with open(path, encoding="utf-8") as f:
            _JSON[path] = json.load(f)
    data = copy.deepcopy(_JSON[path])
    return data["annotations"] if isinstance(data, dict) and "images" not in data else data


def _results(path) -> list:
    data = _load(path)
    return data["annotations"] if isinstance(data, dict) else data


def _full_run(gt_path, dt, iou_type, setup=None):
    """A driver: COCO(gt file), loadRes(dt: list or path), COCOeval, ``setup(params)``, the three steps."""

    def drive(coco, cocoeval, log):
        gt = coco(str(gt_path))
        res = gt.loadRes(dt() if callable(dt) else dt)
        ev = cocoeval(gt, res, iou_type)
        if setup is not None:
            setup(ev.params)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        return ev

    return drive


@pytest.mark.parametrize("name", list(COCO_PAIRS))
def test_bbox_pairs(name):
    pair = COCO_PAIRS[name]
    compare_drivers(_full_run(pair.gt_path, lambda: _results(pair.dt_path), "bbox"), records=True)


@pytest.mark.parametrize("name", [n for n, p in COCO_PAIRS.items() if isinstance(_load(p.dt_path), list)])
def test_bbox_pairs_results_from_path(name):
    """loadRes(path): the shim re-reads the file with deteval's loader."""
    pair = COCO_PAIRS[name]
    compare_drivers(_full_run(pair.gt_path, str(pair.dt_path), "bbox"))


@pytest.mark.parametrize("use_cats", [1, 0])
@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_segm_pairs(name, use_cats):
    dt, gt = SEGM_PAIRS[name]
    compare_drivers(_full_run(gt, lambda: _results(dt), "segm", lambda p: setattr(p, "useCats", use_cats)), True)


@pytest.mark.parametrize("name", list(SEGM_PAIRS))
def test_segm_pairs_evaluated_as_bbox(name):
    """Mask results without a box: loadRes gives them the mask's extent, and their area is the mask's."""
    dt, gt = SEGM_PAIRS[name]
    compare_drivers(_full_run(gt, lambda: _results(dt), "bbox"), records=True)


def test_keypoints_pair():
    compare_drivers(_full_run(KPT_GT, lambda: _results(KPT_DT), "keypoints"), records=True)


def test_default_iou_type_is_segm_and_empty_iou_type_says_so():
    def drive(coco, cocoeval, log):
        gt = coco(str(FAKE_GT))
        ev = cocoeval(gt, gt.loadRes(_results(SEGM_PAIRS["coco_fake100"][0])))
        cocoeval(gt, None, "")  # prints pycocotools' notice, then fails on Params("")
        return ev

    compare_drivers(drive)


# --------------------------------------------------------------------------------------
# params mutated between evaluate() calls: one COCOeval, every step compared


def _steps(iou_type: str, gt_path, dt_path, mutations):
    def drive(coco, cocoeval, log):
        gt = coco(str(gt_path))
        ev = cocoeval(gt, gt.loadRes(_results(dt_path)), iou_type)
        for mutate in mutations:
            mutate(ev.params)
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
            log(ev.stats.copy())
            for k in ("precision", "recall", "scores"):
                log(ev.eval[k].copy())
            log(ev.evalImgs)
            log([ev.params.imgIds, ev.params.catIds, ev.params.maxDets])
        return ev

    return drive


def _set(**values):
    return lambda p: [setattr(p, k, v) for k, v in values.items()]


BBOX_MUTATIONS = [
    lambda p: None,
    _set(imgIds=[139, 632, 724, 139, 42, 776]),  # unsorted, repeated, 42 not in the ground truth
    lambda p: setattr(p, "imgIds", p.imgIds[:3]),
    _set(imgIds=[]),
    lambda p: setattr(p, "imgIds", sorted(set(a["image_id"] for a in _load(FAKE_GT)["annotations"]))),
    _set(catIds=[]),  # no records: accumulate() says "Please run evaluate() first", as pycocotools
    _set(catIds=[1, 18], areaRng=[], areaRngLbl=[]),
    _set(
        areaRng=[[0, 1e10], [0, 32**2], [32**2, 96**2], [96**2, 1e10]], areaRngLbl=["all", "small", "medium", "large"]
    ),
    lambda p: setattr(p, "imgIds", sorted(set(a["image_id"] for a in _load(FAKE_GT)["annotations"]))),
    _set(catIds=[18, 1, 1, 62, 999]),  # unsorted, repeated, 999 unknown
    _set(maxDets=[1, 10, 300]),
    _set(maxDets=[300, 1, 10]),  # sorted by evaluate()
    _set(useCats=0),
    _set(catIds=[62, 1, 18]),  # pooled: catIds not sorted, their order is the rows' order
    _set(useCats=1, iouThrs=np.array([0.3, 0.5, 0.75, 0.9])),
    _set(
        iouThrs=np.array([0.5, 0.75]),
        areaRng=[[0, 1e10], [0, 1000], [1000, 5000], [5000, 1e10], [100, 100]],
        areaRngLbl=["all", "small", "medium", "large", "point"],
    ),
    _set(recThrs=np.linspace(0, 1, 11)),
    _set(maxDets=[1, 2, 3, 4], iouThrs=np.linspace(0.5, 0.95, 10)),
]


@pytest.mark.slow
def test_params_mutated_between_evaluations_bbox():
    compare_drivers(_steps("bbox", FAKE_GT, FAKE_BBOX, BBOX_MUTATIONS), records=True)


def test_params_mutated_between_evaluations_segm():
    muts = [
        lambda p: None,
        _set(imgIds=[139, 632, 724]),
        _set(catIds=[1, 18]),
        _set(useCats=0),
        _set(maxDets=[1, 10, 300]),
    ]
    dt, gt = SEGM_PAIRS["coco_fake100"]
    compare_drivers(_steps("segm", gt, dt, muts), records=True)


def test_params_mutated_between_evaluations_keypoints():
    muts = [
        lambda p: None,
        _set(kpt_oks_sigmas=np.full(17, 0.05)),
        _set(kpt_oks_sigmas=np.linspace(0.02, 0.2, 17), iouThrs=np.array([0.1, 0.5, 0.95])),
        _set(maxDets=[1, 20]),
        lambda p: setattr(p, "imgIds", p.imgIds[:2]),
        _set(useCats=0),  # pycocotools computes no OKS then: nothing matches
    ]
    compare_drivers(_steps("keypoints", KPT_GT, KPT_DT, muts), records=True)


# --------------------------------------------------------------------------------------
# accumulate() and summarize() with params changed after evaluate(), and the errors pycocotools raises


def _after_evaluate(change, iou_type="bbox", summarize=True):
    def drive(coco, cocoeval, log):
        gt = coco(str(FAKE_GT))
        ev = cocoeval(gt, gt.loadRes(_results(FAKE_BBOX)), iou_type)
        ev.evaluate()
        change(ev)
        ev.accumulate()
        log(ev.eval["precision"].copy())
        if summarize:
            ev.summarize()
        return ev

    return drive


def _accumulate_with(**values):
    def change(ev):
        p = copy.deepcopy(ev.params)
        for k, v in values.items():
            setattr(p, k, v)
        ev.accumulate(p)

    return change


@pytest.mark.parametrize(
    "change",
    [
        _set(recThrs=np.linspace(0, 1, 11)),  # read by accumulate: honoured
        _set(recThrs=np.array([0.0, 0.5, 1.0, 1.5])),
        _set(maxDets=[1, 10, 50, 100]),  # 50 was not evaluated: left -1
        _set(maxDets=[100, 10, 1]),
        _set(areaRng=[[0, 1e10], [96**2, 1e5**2]], areaRngLbl=["all", "large"]),
        _set(catIds=[1, 18, 999]),  # pycocotools indexes the evaluated records by these positions
        _set(imgIds=[139, 632]),
        _set(useCats=0),
        _set(iouThrs=np.array([0.5])),  # fewer thresholds than evaluated: IndexError, as pycocotools
    ],
)
def test_params_changed_after_evaluate(change):
    compare_drivers(_after_evaluate(lambda ev: change(ev.params)), records=True)


@pytest.mark.parametrize("values", [{"recThrs": np.linspace(0, 1, 21)}, {"maxDets": [5, 100]}, {"useCats": 0}])
def test_accumulate_with_given_params(values):
    compare_drivers(_after_evaluate(_accumulate_with(**values), summarize=False))


@pytest.mark.parametrize("max_dets", [[100], [1, 10], [10, 10, 100], [1, 10, 100, 1000]])
def test_summarize_reads_max_dets_2(max_dets):
    """pycocotools' summary reads maxDets[0..2] and the AP at 100: IndexError or -1 as it happens there."""
    compare_drivers(_full_run(FAKE_GT, lambda: _results(FAKE_BBOX), "bbox", _set(maxDets=max_dets)))


def test_keypoint_summary_reads_max_dets_20():
    compare_drivers(_full_run(KPT_GT, lambda: _results(KPT_DT), "keypoints", _set(maxDets=[10, 30])))


def test_summary_with_iou_thresholds_missing_0_5_and_unknown_area_labels():
    setup = _set(iouThrs=np.array([0.55, 0.8]), areaRngLbl=["all", "tiny", "mid", "big"])
    compare_drivers(_full_run(FAKE_GT, lambda: _results(FAKE_BBOX), "bbox", setup))


def test_use_segm_flag():
    compare_drivers(_full_run(FAKE_GT, lambda: _results(FAKE_BBOX), "segm", _set(useSegm=0)))


@pytest.mark.parametrize("step", ["accumulate", "summarize", "evalImgs", "ious"])
def test_steps_out_of_order(step):
    def drive(coco, cocoeval, log):
        gt = coco(str(FAKE_GT))
        ev = cocoeval(gt, gt.loadRes(_results(FAKE_BBOX)), "bbox")
        if step in ("evalImgs", "ious"):
            log(len(getattr(ev, step)))
            return ev
        if step == "summarize":
            ev.evaluate()
        getattr(ev, step)()
        return ev

    compare_drivers(drive)


def test_params_objects():
    for iou_type in ("bbox", "segm", "keypoints"):
        ours = vars(Params(iou_type))
        theirs = vars(__import__("pycocotools.cocoeval", fromlist=["Params"]).Params(iou_type))
        assert ours.keys() == theirs.keys()
        for k in ours:
            assert np.array_equal(ours[k], theirs[k]) and type(ours[k]) is type(theirs[k]), k
    with pytest.raises(Exception, match="iouType not supported"):
        Params("boxes")


# --------------------------------------------------------------------------------------
# the COCO object


def test_coco_queries():
    def drive(coco, cocoeval, log):
        gt = coco(str(FAKE_GT))
        for kw in [{}, {"imgIds": 139}, {"imgIds": [139, 632, 5]}, {"catIds": [1, 18]}, {"catIds": 1},
                   {"areaRng": [0, 1000]}, {"imgIds": [139], "iscrowd": 0}, {"iscrowd": 1},
                   {"imgIds": [139, 632], "catIds": [1], "areaRng": [100, 1e10]}]:  # fmt: skip
            log(gt.getAnnIds(**kw))
        for kw in [{}, {"catNms": ["person", "dog"]}, {"supNms": "animal"}, {"catIds": [1, 3, 999]}, {"catNms": "cat"}]:
            log(gt.getCatIds(**kw))
        for kw in [{}, {"imgIds": [139, 632]}, {"catIds": [1]}, {"catIds": [1, 18]}, {"imgIds": [139], "catIds": 1}]:
            log(sorted(gt.getImgIds(**kw)))
        ann_ids = gt.getAnnIds(imgIds=[139])
        log(gt.loadAnns(ann_ids))
        log(gt.loadAnns(ann_ids[0]))
        log(gt.loadAnns(np.int64(ann_ids[0])))  # neither list nor int: None
        log(gt.loadCats([1, 18]))
        log(gt.loadImgs(139))
        log([sorted(gt.catToImgs[1]), [a["id"] for a in gt.imgToAnns[139]], len(gt.anns), len(gt.imgs), len(gt.cats)])
        gt.info()
        for ann in gt.loadAnns(ann_ids[:4]) + gt.loadAnns(gt.getAnnIds(iscrowd=1))[:2]:
            log(gt.annToRLE(ann))
            log(gt.annToMask(ann))
        res = gt.loadRes(_results(FAKE_BBOX)[:50])
        log(res.dataset["annotations"][:5])
        log([res.getAnnIds(imgIds=[139]), sorted(res.getImgIds()), res.dataset["images"] == gt.dataset["images"]])
        return None

    compare_drivers(drive)


def test_coco_empty_and_dataset_given():
    def drive(coco, cocoeval, log):
        gt = coco()
        log([gt.dataset, gt.anns, gt.imgs, gt.cats])
        gt.dataset = _load(FAKE_GT)
        gt.createIndex()
        ev = cocoeval(gt, gt.loadRes(_results(FAKE_BBOX)), "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        return ev

    compare_drivers(drive, records=True)


def test_load_numpy_results():
    rows = np.array([[r["image_id"], *r["bbox"], r["score"], r["category_id"]] for r in _results(FAKE_BBOX)])
    compare_drivers(_full_run(FAKE_GT, lambda: rows.copy(), "bbox"), records=True)


@pytest.mark.parametrize("bad", ["empty", "unknown image", "dict", "no 7 columns"])
def test_load_res_errors(bad):
    def drive(coco, cocoeval, log):
        gt = coco(str(FAKE_GT))
        if bad == "empty":
            gt.loadRes([])
        elif bad == "unknown image":
            gt.loadRes([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1.0}])
        elif bad == "dict":
            gt.loadRes({"annotations": []})
        else:
            gt.loadRes(np.zeros((3, 6)))

    compare_drivers(drive)


def test_results_not_from_load_res_keep_their_area():
    """A results COCO object built by hand: pycocotools reads each record's own ``area``."""

    def drive(coco, cocoeval, log):
        gt = coco(str(FAKE_GT))
        dets = _results(FAKE_BBOX)
        for i, d in enumerate(dets):
            d.update(id=i + 1, iscrowd=0, area=(i * 37) % 20000)
        res = coco()
        res.dataset = {"images": gt.dataset["images"], "categories": gt.dataset["categories"], "annotations": dets}
        res.createIndex()
        ev = cocoeval(gt, res, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        return ev

    compare_drivers(drive, records=True)


def test_containers_are_read_once_and_again_after_create_index():
    gt = COCO(str(FAKE_GT))
    res = gt.loadRes(_results(FAKE_BBOX))
    ev = COCOeval(gt, res, "bbox")
    ev.evaluate()
    first = ev._evaluated.gt
    ev.evaluate()
    assert gt._deteval_cache[("gt", "bbox")].ann_id is not None and len(gt._deteval_cache) == 1
    gt.dataset["annotations"] = gt.dataset["annotations"][:10]
    gt.createIndex()  # the user changed the dataset: read again
    assert gt._deteval_cache == {} and gt._deteval_file is None
    ev.evaluate()
    assert len(ev._evaluated.gt) <= 10 < len(first)


def test_evaluate_builds_no_per_image_records():
    """evaluate(), accumulate() and summarize() leave evalImgs and ious unbuilt until they are read."""
    gt = COCO(str(FAKE_GT))
    ev = COCOeval(gt, gt.loadRes(_results(FAKE_BBOX)), "bbox")
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    assert ev._eval_imgs is cocoeval._UNSET and ev._ious is cocoeval._UNSET
    assert len(ev.evalImgs) == 80 * 4 * len(gt.getImgIds()) and len(ev.ious) == 80 * len(gt.getImgIds())


def test_subclass_overriding_a_per_image_step_is_refused():
    class RotatedIoU(COCOeval):
        def computeIoU(self, imgId, catId):  # noqa: N802, N803
            return []

    gt = COCO(str(FAKE_GT))
    ev = RotatedIoU(gt, gt.loadRes(_results(FAKE_BBOX)), "bbox")
    with pytest.raises(NotImplementedError, match="RotatedIoU overrides computeIoU"):
        ev.evaluate()

"""COCO bbox parity on generated adversarial datasets: deteval == pycocotools, bit for bit.

The datasets come from `strategies.coco_cases` (tied scores with shuffled input, crowd and
`ignore`d GT, GT ids 0 and negative, areas on the small/medium/large boundaries, IoU exactly
at a threshold, zero-area boxes, empty images and categories, >100 detections per image,
custom max_dets / iou_thrs / area ranges, string image ids, use_cats=False). The number of
examples comes from the hypothesis profile (conftest.py: "ci" runs 300).

On failure hypothesis prints the shrunk case as `CocoCase.from_json('...')`; add it to
`EXAMPLES` below to keep it as a regression case (the explicit examples run on every run,
whatever the profile).
"""

from __future__ import annotations

import copy

from hypothesis import example, given
from support.oracle import assert_same, run_pycocotools
from support.strategies import CocoCase, coco_cases
from support.warned import oddities_warned

import deteval


def _check(case: CocoCase) -> None:
    gt_before = copy.deepcopy(case.gt)
    preds_before = copy.deepcopy(case.preds)
    expected = run_pycocotools(case.preds, case.gt, **case.kwargs())
    with oddities_warned():  # generated boxes may be inverted or not finite: scored as pycocotools scores them
        res = deteval.evaluate(case.preds, case.gt, protocol="coco", iou_type="bbox", compat=True, **case.kwargs())
    assert case.gt == gt_before and case.preds == preds_before, "inputs were modified"
    assert_same(res, expected)


def _gt(anns, n_images=2, cats=(1, 2), image_ids=None):
    image_ids = list(image_ids or range(1, n_images + 1))
    return {
        "images": [{"id": i, "height": 200, "width": 200} for i in image_ids],
        "annotations": [
            {"image_id": a[0], "category_id": a[1], "bbox": a[2], "area": a[3], "iscrowd": a[4], "id": a[5], **a[6]}
            for a in anns
        ],
        "categories": [{"id": c, "name": f"c{c}"} for c in cats],
    }


def _dt(dets):
    return [{"image_id": d[0], "category_id": d[1], "bbox": d[2], "score": d[3]} for d in dets]


# Hand-made cases for pycocotools' quirks (docs/compat.md), run every time (the oracle gives the numbers).
EXAMPLES = [
    # a matched GT with id 0 counts as a false positive; a negative id counts as matched
    CocoCase(
        _gt([(1, 1, [0, 0, 10, 10], 100, 0, 0, {}), (2, 1, [0, 0, 10, 10], 100, 0, -5, {})]),
        _dt([(1, 1, [0, 0, 10, 10], 0.9), (2, 1, [0, 0, 10, 10], 0.8)]),
    ),
    # `ignore` is overwritten by iscrowd; crowd GT matched many times (IoU = inter / dt area)
    CocoCase(
        _gt(
            [
                (1, 1, [0, 0, 10, 10], 100, 0, 1, {"ignore": 1}),
                (1, 1, [20, 20, 40, 40], 1600, 1, 2, {"ignore": 0}),
                (2, 2, [0, 0, 10, 10], 100, 1, 3, {}),
            ]
        ),
        _dt([(1, 1, [0, 0, 10, 10], 0.5), (1, 1, [20, 20, 10, 10], 0.5), (1, 1, [30, 30, 5, 5], 0.5)])
        + _dt([(2, 2, [0, 0, 5, 5], 0.7), (2, 2, [0, 0, 10, 5], 0.7)]),
    ),
    # IoU exactly .5 and .75, areas exactly 32**2 and 96**2, tied scores across images
    CocoCase(
        _gt(
            [
                (1, 1, [0, 0, 32, 32], 1024, 0, 1, {}),
                (1, 1, [100, 100, 96, 96], 9216, 0, 2, {}),
                (2, 1, [0, 0, 40, 40], 32**2, 0, 3, {}),
            ]
        ),
        _dt(
            [
                (2, 1, [0, 0, 40, 30], 0.5),
                (1, 1, [0, 0, 32, 16], 0.5),
                (1, 1, [100, 100, 96, 72], 0.5),
                (1, 1, [0, 0, 32, 32], 0.5),
            ]
        ),
    ),
    # max_dets without 100 (stats[0] is -1), a threshold .9 absent from linspace, no-GT category
    CocoCase(
        _gt([(1, 1, [0, 0, 10, 10], 100, 0, 1, {}), (2, 1, [5, 5, 20, 20], 400, 0, 2, {})], cats=(1, 2, 3)),
        _dt([(1, 1, [0, 0, 10, 9], 0.3), (2, 1, [5, 5, 20, 18], 0.3), (1, 3, [0, 0, 10, 10], 0.9)]),
        iou_thrs=[0.5, 0.75, 0.9],
        max_dets=[1, 10, 1000],
    ),
    # string image ids (sorted as strings), use_cats=False, an image without detections
    CocoCase(
        _gt(
            [("b", 1, [0, 0, 10, 10], 100, 0, 1, {}), ("a10", 2, [0, 0, 10, 10], 100, 0, 2, {})],
            image_ids=["b", "a10", "a2"],
        ),
        _dt([("b", 2, [0, 0, 10, 10], 0.5), ("a10", 1, [0, 0, 10, 5], 0.5), ("a10", 2, [0, 0, 10, 10], 0.5)]),
        use_cats=False,
    ),
]


def _with_examples(test):
    for case in reversed(EXAMPLES):
        test = example(case)(test)
    return test


@_with_examples
@given(coco_cases(odd_boxes=True))
def test_coco_bbox_parity_generated(case):
    _check(case)

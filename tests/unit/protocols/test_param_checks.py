"""The protocols check their shared kinds of parameter with one toolkit: the same wrong value gets the same
error, naming the parameter, whichever protocol is asked."""

from __future__ import annotations

import pytest

from deteval import protocols
from deteval.errors import InputError

WRONG = [
    ("iou_thrs", [0.5, 1.5], "IoU thresholds must be a non-empty list in [0, 1], got [0.5, 1.5]"),
    ("iou_thrs", ["a"], "IoU thresholds must be numbers, got ['a']"),
    ("rec_thrs", [0.5, 0.2], "recall thresholds must be a non-empty ascending list in [0, 1], got [0.5, 0.2]"),
    ("area_ranges", {"all": [10, 1]}, "area range (lo, hi) must have lo <= hi, got (10, 1)"),
    ("area_ranges", 3, "area ranges must map labels to (lo, hi) pairs, got 3"),
]


@pytest.mark.parametrize("key, value, rule", WRONG, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(WRONG)])
@pytest.mark.parametrize("protocol", ["coco", "lvis"])
def test_one_wording_across_protocols(protocol, key, value, rule):
    with pytest.raises(InputError) as e:
        protocols.get(protocol).params("bbox", preset={key: value})
    assert e.value.rule == rule
    assert e.value.source == "preset"  # a preset's value: named by the preset (presets.blamed_on)


def test_lvis_needs_the_all_range():
    with pytest.raises(InputError, match="area ranges must include 'all'"):
        protocols.get("lvis").params("bbox", preset={"area_ranges": {"small": [0, 1024]}})


@pytest.mark.parametrize(
    "options, rule",
    [
        ({"iou_thr": 2}, "iou_thr must lie in [0, 1], got 2"),
        ({"max_dets": 0}, "max_dets must be a positive integer, got 0"),
        ({"expand": "yes"}, "expand must be true or false, got 'yes'"),
    ],
)
def test_openimages_checks(options, rule):
    with pytest.raises(InputError) as e:
        protocols.get("openimages").params("bbox", preset=options)
    assert e.value.rule == rule

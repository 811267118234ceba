"""Boundary IoU's erosion depth (deteval.geometry.boundary.dilations) and the ratio each protocol hands it."""

from __future__ import annotations

import numpy as np
import pytest

from deteval import protocols
from deteval.geometry.boundary import dilations


def test_depth_is_the_rounded_share_of_the_diagonal():
    h, w = np.array([3, 100, 480, 1]), np.array([4, 100, 640, 1])
    assert dilations(h, w, 0.02).tolist() == [1, 3, 16, 1]  # 0.1 -> 1 at least; 2.83 -> 3; 16.0; 0.03 -> 1
    assert dilations(np.array([30]), np.array([40]), 0.05).tolist() == [2]  # 2.5: half to even, as round()


@pytest.mark.parametrize("ratio", [None, float("nan"), 0.0, -0.1, 1.5, "0.02"])
def test_a_ratio_outside_0_1_is_refused_before_any_kernel(ratio):
    with pytest.raises(ValueError, match="dilation ratio"):
        dilations(np.array([10]), np.array([10]), ratio)


@pytest.mark.parametrize("protocol", ["coco", "lvis"])
@pytest.mark.parametrize("options", [{}, {"fixed_ap": True}, {"dilation_ratio": 0.05}])
def test_each_protocol_keeps_its_ratio(protocol, options):
    if protocol == "coco" and "fixed_ap" in options:
        pytest.skip("fixed AP is lvis's")
    params = protocols.get(protocol).params("boundary", **options)
    assert params.dilation_ratio == options.get("dilation_ratio", 0.02)
    assert not getattr(params, "keep_matches", False)

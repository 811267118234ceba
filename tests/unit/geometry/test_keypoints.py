"""OKS pieces that the parity suites cannot isolate."""

from __future__ import annotations

import numpy as np

from deteval.geometry.keypoints import UNDERFLOW


def test_numpy_exp_underflows_to_zero_below_the_skip_threshold():
    """oks_blocks leaves terms below UNDERFLOW out of np.exp and counts them as 0: that holds for this numpy."""
    rng = np.random.default_rng(0)
    below = np.concatenate([
        [np.nextafter(UNDERFLOW, -np.inf), UNDERFLOW * 2, -1e300, -np.finfo(np.float64).max, -np.inf],
        UNDERFLOW - rng.exponential(100.0, 4096),
    ])  # fmt: skip
    with np.errstate(under="ignore"):
        assert not np.exp(below).any()

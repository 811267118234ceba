"""--calibration --plot writes the reliability diagram (pass c: matplotlib installed)."""

from __future__ import annotations

import pytest
from conftest import COCO_PAIRS

from deteval.cli import main

pytest.importorskip("matplotlib")


@pytest.mark.slow
def test_reliability_png(tmp_path):
    pair = COCO_PAIRS["coco_fake100"]
    out = tmp_path / "plots"
    assert main([str(pair.dt_path), str(pair.gt_path), "--calibration", "--plot", str(out), "--quiet"]) == 0
    png = (out / "reliability.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    # without --calibration, no reliability diagram
    out2 = tmp_path / "plots2"
    assert main([str(pair.dt_path), str(pair.gt_path), "--plot", str(out2), "--quiet"]) == 0
    assert not (out2 / "reliability.png").exists()

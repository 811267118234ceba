"""--plot for the pedestrian protocols: miss_rate_fppi.png, the miss rate against FPPI on log axes."""

from __future__ import annotations

from pathlib import Path

import pytest

from deteval.cli import main

DATA = Path(__file__).resolve().parent.parent / "data" / "pedestrian"


@pytest.mark.parametrize(
    "protocol, preds, gt",
    [
        ("citypersons", "citypersons_results.json", "citypersons_gt.json"),
        ("crowdhuman", "crowdhuman_preds.odgt", "crowdhuman_gt.odgt"),
    ],
)
def test_plot_writes_the_miss_rate_figure(tmp_path, capsys, protocol, preds, gt):
    pytest.importorskip("matplotlib")
    out = tmp_path / "plots"
    argv = ["--protocol", protocol, "--quiet", "--plot", str(out), str(DATA / preds), str(DATA / gt)]
    assert main(argv) == 0, capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["miss_rate_fppi.png"]
    assert (out / "miss_rate_fppi.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

"""``deteval --protocol widerface --plot DIR``: the subsets' precision-recall curves (matplotlib)."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("scipy")

from support.widerface_data import write_dataset  # noqa: E402

from deteval.cli import main  # noqa: E402


def test_plot_writes_the_subsets_curves(tmp_path):
    pred_dir, gt_dir = write_dataset(tmp_path, 2, "probabilities")
    out = tmp_path / "plots"
    assert main(["--protocol", "widerface", "--quiet", "--plot", str(out), str(pred_dir), str(gt_dir)]) == 0
    assert (out / "pr_curves.png").stat().st_size > 0

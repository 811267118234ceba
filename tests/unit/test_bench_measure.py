"""benchmarks/bench.py's measurements: a child's own peak memory, and --profile's stage clock."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import bench  # noqa: E402

SAMPLE = REPO / "deteval" / "sample_data"
GT = SAMPLE / "instances_val2014_100.json"
DT = SAMPLE / "instances_val2014_fakebbox100_results.json"
linux_only = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")


@linux_only
def test_peak_is_the_childs_own_not_the_parents_at_fork(tmp_path):
    """A parent holding 300 MB: ru_maxrss of a small child says >= 300 MB, the launcher's VmHWM does not."""
    ballast = bytearray(300 << 20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched: resident
    rc, _, wait4_mb, tail = bench.run_child([sys.executable, "-c", "pass"], dict(os.environ), 60)
    assert rc == 0, tail
    assert wait4_mb >= 300  # the floor the bench used to report
    tool = {"cli": ["-m", "json.tool", "{GT}"]}
    rc, _, own_mb, tail = bench.run_cli(tool, str(GT), str(DT), "bbox", dict(os.environ), 60)
    assert rc == 0, tail
    assert 0 < own_mb < 100
    del ballast


@linux_only
def test_child_script_reports_its_peak(tmp_path):
    """The timed child writes its own VmHWM; one that allocates 200 MB reports at least that."""
    tool = {"stages": {"import": "import numpy", "work": "a = numpy.ones(200 << 17)"}, "stats": "[float(a.sum())]"}
    out = tmp_path / "out.json"
    code = bench.child_script(tool)
    subprocess.run([sys.executable, "-c", code, str(GT), str(DT), str(out), "bbox"], check=True)
    res = json.loads(out.read_text())
    assert res["peak_kb"] >= 200 << 10
    assert res["stats"] == [float(200 << 17)]


def test_profile_split_hits_every_stage(tmp_path):
    """--profile's child on the bundled sample: every wrapped stage function was called (a renamed one would read 0)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    out = tmp_path / "out.json"
    code = bench.child_script(bench.TOOLS["deteval"], "coco")
    subprocess.run([sys.executable, "-c", code, str(GT), str(DT), str(out), "bbox"], check=True, env=env, cwd=REPO)
    res = json.loads(out.read_text())
    prof = res["profile"]
    assert list(prof) == ["import_", *bench_stages()]
    for stage in ("import_", "read", "parse", "kernel import", "group", "IoU", "match", "accumulate", "summarise"):
        assert prof[stage] > 0, stage
    # the stages partition the run: their sum is the total the child timed (the clock's own set-up left out)
    assert sum(prof.values()) == pytest.approx(res["times"]["total"], rel=0.05, abs=0.02)
    assert len(res["stats"]) == 12


def bench_stages():
    import profile_deteval

    return profile_deteval.STAGES

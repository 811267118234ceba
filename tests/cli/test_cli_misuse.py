"""The command line misused: interrupted, piped into ``head``, pointed at bad output paths.

Each case checks the exit status, a one-line message naming the flag or path, no traceback,
and that no output file was created or changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.cli import main, run, sample_pair

ROOT = Path(deteval.__file__).resolve().parents[1]


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: content and modification time (directories too, as empty)."""
    return {
        str(p.relative_to(folder)): ((p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else (b"", 0))
        for p in sorted(folder.rglob("*"))
    }


def _one_line_error(err: str, *parts: str) -> None:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for part in parts:
        assert part in lines[0], (part, lines[0])


@pytest.fixture
def pair(tmp_path):
    """The sample's files, copied where the outputs go (so an output can be pointed at them)."""
    preds, gt = (Path(shutil.copy(p, tmp_path)) for p in sample_pair())
    return preds, gt


@pytest.fixture
def no_evaluation(monkeypatch):
    """The paths must be refused before anything is loaded."""

    def refuse(*args, **kwargs):
        raise AssertionError("evaluated despite a bad output path")

    monkeypatch.setattr(run, "evaluate", refuse)


# ---------------------------------------------------------------- 1. exit codes


def test_ctrl_c_exits_130_with_one_line(tmp_path, pair, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "evaluate", interrupted)
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), "--json", str(tmp_path / "out.json")]) == 130
    _one_line_error(capsys.readouterr().err, "deteval: interrupted")
    assert _snapshot(tmp_path) == before


def test_ctrl_c_while_writing_leaves_no_file(tmp_path, monkeypatch, capsys):
    import deteval.analysis.curves

    def interrupted(*args, **kwargs):  # --json's temporary is written by then
        raise KeyboardInterrupt

    monkeypatch.setattr(deteval.analysis.curves, "write_pr_curves", interrupted)
    (tmp_path / "old.json").write_text("{}\n")
    before = _snapshot(tmp_path)
    argv = ["--sample", "--quiet", "--json", str(tmp_path / "old.json"), "--curves", str(tmp_path / "c.json")]
    assert main(argv) == 130
    _one_line_error(capsys.readouterr().err, "deteval: interrupted")
    assert _snapshot(tmp_path) == before


def test_closed_stdout_pipe_exits_quietly(tmp_path):
    """stdout a pipe whose reader is gone before anything is written: 141 (128 + SIGPIPE, as a shell reports
    it), no traceback. (Behind ``| head -1`` the reader may still be there when the few kB are written, so
    that case is timing: below.)"""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "deteval", "--sample", "--per-class"],
            stdout=write_end, stderr=subprocess.PIPE, cwd=tmp_path, env=env, text=True, timeout=600,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_head_of_the_output(tmp_path):
    """``deteval ... | head -1``: the first line, and no traceback whether head has gone by the time the rest is
    written (141) or not yet (0)."""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    cmd = f"{sys.executable} -m deteval --sample --per-class | head -1"
    done = subprocess.run(
        ["bash", "-c", f"{cmd}; echo rc=${{PIPESTATUS[0]}} >&2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.stdout.startswith(" Average Precision")
    assert len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
    assert "rc=141" in done.stderr or "rc=0" in done.stderr, done.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- 2. output paths, checked before loading


FILE_FLAGS = ["--json", "--csv", "--markdown", "--curves", "--arrays"]


@pytest.mark.parametrize("flag", [*FILE_FLAGS, "--plot"])
def test_missing_parent_directory_is_an_error(flag, tmp_path, pair, no_evaluation, capsys):
    target = tmp_path / "missing" / "out"
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), flag, str(target)]) == 2
    _one_line_error(capsys.readouterr().err, flag, str(target), f"{target.parent} does not exist")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("flag", FILE_FLAGS)
def test_existing_directory_is_no_file(flag, tmp_path, pair, no_evaluation, capsys):
    (tmp_path / "d").mkdir()
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), flag, str(tmp_path / "d")]) == 2
    _one_line_error(capsys.readouterr().err, flag, f"{tmp_path / 'd'} is a directory")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("flag", FILE_FLAGS)
def test_device_is_refused(flag, tmp_path, pair, no_evaluation, capsys):
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), flag, os.devnull]) == 2
    _one_line_error(capsys.readouterr().err, flag, f"{os.devnull} is not a regular file")
    assert _snapshot(tmp_path) == before


def test_plot_path_that_is_a_file_is_refused(tmp_path, pair, no_evaluation, capsys):
    (tmp_path / "plots").write_text("x")
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), "--plot", str(tmp_path / "plots")]) == 2
    _one_line_error(capsys.readouterr().err, "--plot", f"{tmp_path / 'plots'} exists and is not a directory")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("flag", [*FILE_FLAGS, "--plot"])
def test_unwritable_parent_is_refused(flag, tmp_path, pair, no_evaluation, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    # chmod does not stop root (the CI's user): os.access is told the truth a user would get
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != locked and real_access(p, mode))
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), flag, str(locked / "out")]) == 2
    _one_line_error(capsys.readouterr().err, flag, f"{locked} is not writable")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("which", ["PREDS", "GT"])
@pytest.mark.parametrize("flag", FILE_FLAGS)
def test_output_that_is_an_input_is_refused(flag, which, tmp_path, pair, no_evaluation, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = pair[which == "GT"]
    before = _snapshot(tmp_path)
    # spelled differently from the positional: the resolved paths are compared
    assert main([*map(str, pair), flag, f"./{target.name}"]) == 2
    _one_line_error(capsys.readouterr().err, flag, f"is also {which}")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "extra, input_flag",
    [
        (["--config", "{path}"], "--config"),
        (["--protocol", "voc07", "--names", "{path}"], "--names"),
        (["--protocol", "voc07", "--image-set", "{path}"], "--image-set"),
    ],
)
def test_output_that_is_a_config_or_voc_file_is_refused(extra, input_flag, tmp_path, pair, no_evaluation, capsys):
    path = tmp_path / "input.txt"
    path.write_text("x\n")
    before = _snapshot(tmp_path)
    argv = [*map(str, pair), *(a.format(path=path) for a in extra), "--csv", str(path)]
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, "--csv", str(path), f"is also {input_flag}")
    assert _snapshot(tmp_path) == before


def test_two_outputs_at_one_path_are_refused(tmp_path, pair, no_evaluation, capsys):
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), "--json", str(tmp_path / "o"), "--csv", str(tmp_path / "o")]) == 2
    _one_line_error(capsys.readouterr().err, "--csv", "is also --json")
    assert _snapshot(tmp_path) == before


# ---------------------------------------------------------------- 3. all or nothing


def test_failed_run_changes_no_output_file(tmp_path, capsys):
    # --arrays is written before --curves fails (an area not evaluated): the old file must survive
    (tmp_path / "a.npz").write_text("old\n")
    before = _snapshot(tmp_path)
    argv = ["--sample", "--quiet", "--arrays", str(tmp_path / "a.npz"), "--curves", str(tmp_path / "c.json")]
    argv += ["--at-area", "huge"]
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, "--curves", "area 'huge'")
    assert _snapshot(tmp_path) == before  # no temporaries left either


def test_write_error_names_the_path(tmp_path, monkeypatch, capsys):
    from deteval.result import EvalResult

    def full(self, path, compressed=True):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(EvalResult, "save_arrays", full)
    before = _snapshot(tmp_path)
    argv = ["--sample", "--quiet", "--json", str(tmp_path / "o.json"), "--arrays", str(tmp_path / "a.npz")]
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, f"--arrays: cannot write {tmp_path / 'a.npz'}: No space left on device")
    assert _snapshot(tmp_path) == before


# ---------------------------------------------------------------- 4. - is stdout


@pytest.mark.parametrize("flag", ["--json", "--csv", "--markdown"])
def test_dash_writes_to_stdout_and_the_summary_to_stderr(flag, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--sample", flag, "-"]) == 0
    out, err = capsys.readouterr()
    assert "Average Precision" not in out and "Average Precision" in err
    if flag == "--json":
        assert json.loads(out)["protocol"] == "coco"
    else:
        assert out.splitlines()[0].startswith("category_id" if flag == "--csv" else "|")
    assert list(tmp_path.iterdir()) == []  # no file named "-"


def test_two_dashes_are_refused(tmp_path, no_evaluation, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--sample", "--json", "-", "--csv", "-"]) == 2
    _one_line_error(capsys.readouterr().err, "--json, --csv", "only one output can go to stdout")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- 5. --arrays


@pytest.mark.parametrize("uncompressed", [False, True])
def test_arrays_go_to_exactly_the_path_given(uncompressed, tmp_path, capsys):
    path = tmp_path / "raw.arrays"
    assert main(["--sample", "--quiet", "--arrays", str(path), *(["--arrays-uncompressed"] * uncompressed)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["raw.arrays"]
    with zipfile.ZipFile(path) as z:
        kinds = {info.compress_type for info in z.infolist()}
    assert kinds == {zipfile.ZIP_STORED if uncompressed else zipfile.ZIP_DEFLATED}
    with np.load(path) as arrays:
        assert arrays["precision"].ndim == 5


# ---------------------------------------------------------------- 6. --sample with files


def test_sample_takes_no_files(tmp_path, capsys):
    before = _snapshot(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["--sample", *sample_pair()])
    assert exit_.value.code == 2
    _one_line_error(capsys.readouterr().err, "--sample takes no PREDS GT")
    assert _snapshot(tmp_path) == before

"""Misuse, faults and hostile inputs, by family: outputs pointed at inputs, special files, nesting, odd
text, signals, a full disk.

Each case checks the exit status, one line on stderr naming the file or flag (no traceback), that the
inputs are unchanged and that no output or temporary was left behind.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA_DIR

import deteval
from deteval.cli import main, run, sample_pair

ROOT = Path(deteval.__file__).resolve().parents[1]  # what a subprocess puts on its path to import this deteval
DATA = DATA_DIR  # beside the tests, not beside the package (an installed copy has none)


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` (symlinks as their target's name): content and modification time."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(folder))] = (os.readlink(p).encode(), 0)
        elif p.is_file():
            out[str(p.relative_to(folder))] = (p.read_bytes(), p.stat().st_mtime_ns)
        else:
            out[str(p.relative_to(folder))] = (b"", 0)
    return out


def _one_line(err: str, *parts: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def _no_temporaries(folder: Path) -> None:
    assert not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


@pytest.fixture
def pair(tmp_path):
    preds, gt = (Path(shutil.copy(p, tmp_path)) for p in sample_pair())
    return preds, gt


@pytest.fixture
def no_evaluation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("evaluated despite a bad output path")

    monkeypatch.setattr(run, "evaluate", refuse)


def _cli(args: list[str], cwd: Path, limit_as: int | None = None, fsize: int | None = None, **kw):
    """``python -m deteval ARGS`` in a process of its own, under an address-space or file-size limit."""

    def limits() -> None:
        if limit_as is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    env = {**os.environ, "PYTHONPATH": str(ROOT), "DETEVAL_COMPILE_HELPERS": "0"}
    return subprocess.run(
        [sys.executable, "-m", "deteval", *args], cwd=cwd, env=env, capture_output=True, text=True,
        preexec_fn=limits, timeout=300, **kw,
    )  # fmt: skip


# ---------------------------------------------------------------- 1. no output onto an input


def _voc(tmp_path: Path) -> tuple[Path, Path, Path]:
    src = DATA / "voc100_native"
    dets = Path(shutil.copytree(src / "dets_txt", tmp_path / "dets"))
    gt = Path(shutil.copytree(src / "gt_xml", tmp_path / "Annotations"))
    names = Path(shutil.copy(src / "voc.names", tmp_path / "voc.names"))
    return dets, gt, names


OUTPUT_ONTO_INPUT = {
    # name: (argv builder over tmp_path and the pair, flag, words of the message)
    "slices as --json": (
        lambda t, p: [*p, "--slices", str(t / "sl.json"), "--json", str(t / "sl.json")], "--json", "--slices"),
    "slices as --csv": (
        lambda t, p: [*p, "--slices", str(t / "sl.json"), "--csv", f"{t}/./sl.json"], "--csv", "--slices"),
    "dota classes file": (
        lambda t, p: ["--protocol", "dota", "--classes", str(t / "cls.txt"), "--json", str(t / "cls.txt"), *p],
        "--json", "--classes"),
    "hard link of GT": (lambda t, p: [*p, "--json", str(t / "hard.json")], "--json", "GT"),
    "symlink to GT": (lambda t, p: [*p, "--markdown", str(t / "link.json")], "--markdown", "GT"),
    "--plot DIR inside the VOC detections": (
        lambda t, p: ["--protocol", "voc07", str(t / "dets"), str(t / "Annotations"), "--plot", str(t / "dets" / "p")],
        "--plot", "PREDS"),
    "--json into the VOC detections": (
        lambda t, p: ["--protocol", "voc07", str(t / "dets"), str(t / "Annotations"), "--json",
                      str(t / "dets" / "comp4_det_test_car.txt")], "--json", "PREDS"),
    "--csv onto a VOC annotation": (
        lambda t, p: ["--protocol", "voc07", str(t / "dets"), str(t / "Annotations"), "--csv",
                      str(t / "Annotations" / "2007_000027.xml")], "--csv", "GT"),
    "--json onto VOC --names": (
        lambda t, p: ["--protocol", "voc07", "--names", str(t / "voc.names"), str(t / "dets"), str(t / "Annotations"),
                      "--json", str(t / "voc.names")], "--json", "--names"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(OUTPUT_ONTO_INPUT))
def test_no_output_onto_or_into_an_input(case, tmp_path, pair, no_evaluation, capsys):
    build, flag, what = OUTPUT_ONTO_INPUT[case]
    (tmp_path / "sl.json").write_text('{"a": [1]}')
    (tmp_path / "cls.txt").write_text("plane\n")
    os.link(pair[1], tmp_path / "hard.json")
    os.symlink(pair[1], tmp_path / "link.json")
    _voc(tmp_path)
    before = _snapshot(tmp_path)
    assert main(build(tmp_path, list(map(str, pair)))) == 2
    _one_line(capsys.readouterr().err, flag, what, "refusing")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("flag", ["--arrays", "--curves", "--plot"])
def test_dash_is_stdout_or_refused(flag, tmp_path, pair, no_evaluation, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), flag, "-"]) == 2
    _one_line(capsys.readouterr().err, flag, "stdout")
    assert _snapshot(tmp_path) == before


def test_compare_refuses_to_overwrite_the_ground_truth(tmp_path, pair, capsys):
    preds, gt = map(str, pair)
    before = _snapshot(tmp_path)
    assert main(["compare", "--json", gt, preds, preds, gt, "--bootstrap", "5"]) == 2
    _one_line(capsys.readouterr().err, "--json", "GT", "refusing")
    assert _snapshot(tmp_path) == before


def test_compare_missing_folder_names_the_flag(tmp_path, pair, capsys):
    preds, gt = map(str, pair)
    before = _snapshot(tmp_path)
    assert main(["compare", "--json", str(tmp_path / "nodir" / "c.json"), preds, preds, gt, "--bootstrap", "5"]) == 2
    _one_line(capsys.readouterr().err, "--json", "nodir", "does not exist")
    assert _snapshot(tmp_path) == before


@pytest.mark.slow  # processes of their own
def test_compare_on_a_full_disk_keeps_the_old_file(tmp_path, pair):
    """``ulimit -f``: the write fails (EFBIG); the old file stays whole, no temporary is left."""
    preds, gt = map(str, pair)
    (tmp_path / "c.json").write_text('{"old": true}\n')
    argv = ["compare", "--quiet", "--json", "c.json", preds, preds, gt, "--bootstrap", "5"]
    assert _cli(argv[:3] + ["-"] + argv[4:], tmp_path).returncode == 0  # numba's cache written first
    before = _snapshot(tmp_path)
    proc = _cli(argv, tmp_path, fsize=2048)
    assert proc.returncode == 2, proc.stderr
    _one_line(proc.stderr, "--json", "c.json")
    assert _snapshot(tmp_path) == before
    _no_temporaries(tmp_path)


# ---------------------------------------------------------------- 2. special files, bounded reads

SPECIAL = {
    "PREDS": lambda p: ["/dev/zero", p[1]],
    "GT": lambda p: [p[0], "/dev/zero"],
    "--slices": lambda p: [*p, "--slices", "/dev/zero"],
    "--config": lambda p: [*p, "--config", "/dev/zero"],
    "random GT": lambda p: [p[0], "/dev/urandom"],
}


@pytest.mark.slow  # processes of their own
@pytest.mark.parametrize("case", list(SPECIAL))
def test_special_files_are_refused_within_memory(case, tmp_path, pair):
    """Under a 3 GiB address-space limit, before a 2 GiB read could fit: refused at the first chunk."""
    proc = _cli([*SPECIAL[case](list(map(str, pair))), "--quiet"], tmp_path, limit_as=3 << 30)
    assert proc.returncode == 2, proc.stderr
    _one_line(proc.stderr, "/dev/")


@pytest.mark.slow  # processes of their own
def test_voc_names_from_a_device_is_refused(tmp_path):
    dets, gt, _ = _voc(tmp_path)
    proc = _cli(["--protocol", "voc07", "--names", "/dev/zero", str(dets), str(gt)], tmp_path, limit_as=3 << 30)
    assert proc.returncode == 2, proc.stderr
    _one_line(proc.stderr, "/dev/zero", "control byte 0x00")


@pytest.mark.slow  # processes of their own
def test_a_stream_over_the_limit_is_refused_naming_the_flag(tmp_path, pair):
    proc = _cli(["--max-input-bytes", "1000", "/dev/stdin", str(pair[1])], tmp_path, input=" " * 5000)
    assert proc.returncode == 2, proc.stderr
    _one_line(proc.stderr, "/dev/stdin", "1,000 bytes", "--max-input-bytes")


@pytest.mark.parametrize("which", ["PREDS", "GT"])
def test_a_symlink_loop_is_one_line(which, tmp_path, pair, capsys):
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    argv = [str(tmp_path / "a"), str(pair[1])] if which == "PREDS" else [str(pair[0]), str(tmp_path / "a")]
    assert main([*argv, "--json", str(tmp_path / "o.json")]) == 2
    _one_line(capsys.readouterr().err, str(tmp_path / "a"), "symbolic links")
    assert not (tmp_path / "o.json").exists()


@pytest.mark.slow  # processes of their own
def test_gz_and_stdin_read_as_the_plain_file(tmp_path, pair, capsys):
    preds, gt = pair
    gz = tmp_path / "gt.json.gz"
    gz.write_bytes(gzip.compress(gt.read_bytes()))
    assert main([str(preds), str(gt), "--json", str(tmp_path / "a.json"), "--quiet"]) == 0
    assert main([str(preds), str(gz), "--json", str(tmp_path / "b.json"), "--quiet"]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    proc = _cli([str(preds), "/dev/stdin", "--json", "-", "--quiet"], tmp_path, input=None, stdin=open(gz, "rb"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stats"] == json.loads((tmp_path / "a.json").read_text())["stats"]


@pytest.mark.slow  # processes of their own
def test_slice_by_reads_the_loaded_bytes(tmp_path, pair):
    """--slice-by parses the bytes the loader read: a byte order mark, and stdin, which gives them once."""
    preds, gt = pair
    data = json.loads(gt.read_text())
    for i, im in enumerate(data["images"]):
        im["split"] = "ab"[i % 2]
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(data).encode())
    a = _cli([str(preds), str(bom), "--slice-by", "split", "--json", "-", "--quiet"], tmp_path)
    assert a.returncode == 0, a.stderr
    b = _cli([str(preds), "/dev/stdin", "--slice-by", "split", "--json", "-", "--quiet"], tmp_path, stdin=open(bom))
    assert b.returncode == 0, b.stderr
    assert json.loads(a.stdout)["slices"] == json.loads(b.stdout)["slices"]
    assert len(json.loads(a.stdout)["slices"]) == 2


# ---------------------------------------------------------------- 3. nesting


def _deep_json(levels: int) -> str:
    return '{"a": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


NESTED = {
    "--slices": ("sl.json", _deep_json(5000), lambda p, f: [*p, "--slices", f]),
    "--config": ("c.toml", "iou_thrs = " + "[" * 5000 + "]" * 5000, lambda p, f: [*p, "--config", f]),
    "--hierarchy": (
        "h.json", '{"LabelName": "r", "Subcategory": ' + "[" * 5000 + "]" * 5000 + "}",
        lambda p, f: ["--protocol", "openimages", *p, "--hierarchy", f]),
}  # fmt: skip


@pytest.mark.parametrize("flag", list(NESTED))
def test_deep_side_files_are_one_line(flag, tmp_path, pair, capsys):
    name, text, build = NESTED[flag]
    (tmp_path / name).write_text(text)
    assert main(build(list(map(str, pair)), str(tmp_path / name))) == 2
    _one_line(capsys.readouterr().err, name, "nested deeper than")


def test_a_600_class_deep_hierarchy_loads():
    from deteval.io.openimages import load_hierarchy

    node: dict = {"LabelName": "c600"}
    for i in range(599, -1, -1):
        node = {"LabelName": f"c{i}", "Subcategory": [node]}
    hier = load_hierarchy(node)
    assert len(hier.names) == 600


def test_a_600_class_deep_hierarchy_file_loads(tmp_path):
    from deteval.io.openimages import load_hierarchy

    text = "".join(f'{{"LabelName": "c{i}", "Subcategory": [' for i in range(600)) + '{"LabelName": "x"}' + "]}" * 600
    (tmp_path / "h.json").write_text(text)
    assert len(load_hierarchy(tmp_path / "h.json").names) == 600


@pytest.mark.parametrize("orjson", [True, False])
def test_the_nesting_limit_is_exact_in_both_parsers(orjson, monkeypatch):
    from deteval.errors import InputError
    from deteval.io import json_source

    if not orjson:
        monkeypatch.setattr(json_source, "_orjson", None)
    limit = json_source.MAX_JSON_DEPTH
    assert json_source.parse_json(b"[" * limit + b"]" * limit, "x") is not None
    assert json_source.parse_json(b'{"a":' * (limit - 1) + b"[NaN]" + b"}" * (limit - 1), "x") is not None
    for deep in (b"[" * (limit + 1) + b"]" * (limit + 1), b'{"a":' * limit + b"[NaN]" + b"}" * limit):
        with pytest.raises(InputError, match=f"nested deeper than {limit} levels"):
            json_source.parse_json(deep, "x")


# ---------------------------------------------------------------- 4. odd text in names


def test_file_names_with_control_characters_are_escaped(tmp_path, capsys):
    name = tmp_path / "a\nb\x1b[31mred.json"
    assert main([str(name), str(name)]) == 2
    line = _one_line(capsys.readouterr().err, "not found")
    assert "\x1b" not in line and "\\x1b" in line and "\\n" in line


def _with_names(pair, tmp_path: Path, cat_name: str, file_name: str) -> tuple[str, str]:
    data = json.loads(pair[1].read_text())
    data["categories"][0]["name"] = cat_name
    for im in data["images"]:
        im["file_name"] = file_name
    out = tmp_path / "odd_gt.json"
    out.write_text(json.dumps(data))  # json.dumps escapes the lone surrogate: valid JSON
    return str(pair[0]), str(out)


def test_a_lone_surrogate_in_a_category_name_is_written_escaped(tmp_path, pair, capsys):
    preds, gt = _with_names(pair, tmp_path, "bad\ud800name", "x.jpg")
    assert main([preds, gt, "--csv", str(tmp_path / "o.csv"), "--per-class", "--quiet"]) == 0
    assert "bad\\ud800name" in (tmp_path / "o.csv").read_text(encoding="utf-8")


@pytest.mark.slow  # processes of their own
def test_a_lone_surrogate_in_a_slice_name_prints(tmp_path, pair):
    preds, gt = _with_names(pair, tmp_path, "person", "bad\ud800.jpg")
    proc = _cli([preds, gt, "--slice-by", "file_name", "--json", "o.json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and (tmp_path / "o.json").exists()


def test_csv_cells_that_a_spreadsheet_would_run_are_quoted(tmp_path, pair):
    preds, gt = _with_names(pair, tmp_path, '=HYPERLINK("http://x","y")', "x.jpg")
    assert main([preds, gt, "--csv", str(tmp_path / "o.csv"), "--quiet"]) == 0
    text = (tmp_path / "o.csv").read_text()
    assert "\n=HYPERLINK" not in text and ",=HYPERLINK" not in text and "'=HYPERLINK" in text


# ---------------------------------------------------------------- 5. signals


@pytest.mark.parametrize("sig, status", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_and_sighup_leave_no_temporaries(sig, status, tmp_path, pair, monkeypatch, capsys):
    import deteval.analysis.curves

    def killed(*args, **kwargs):  # --json's temporary is written by then
        os.kill(os.getpid(), getattr(signal, sig))

    monkeypatch.setattr(deteval.analysis.curves, "write_pr_curves", killed)
    # the disposition this test process was started with (nohup, a CI runner: ignored) is not the run's to keep here
    previous = signal.signal(getattr(signal, sig), signal.SIG_DFL)
    (tmp_path / "old.json").write_text("{}\n")
    before = _snapshot(tmp_path)
    argv = [*map(str, pair), "--json", str(tmp_path / "old.json"), "--curves", str(tmp_path / "c.json"), "--quiet"]
    try:
        assert main(argv) == status
        _one_line(capsys.readouterr().err, "deteval: terminated")
        assert _snapshot(tmp_path) == before
        _no_temporaries(tmp_path)
        assert signal.getsignal(getattr(signal, sig)) is signal.SIG_DFL  # given back
    finally:
        signal.signal(getattr(signal, sig), previous)


@pytest.mark.slow  # processes of their own
def _sigint_as_a_terminal_gives_it() -> None:
    """A child's SIGINT at its default, as a terminal starts a program: a runner that starts the tests in the
    background (``cmd &`` in a script) has them ignore it, and Python then keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_the_imports_is_one_line():
    """The command line's process takes Ctrl-C quietly from deteval's first import on."""
    code = "import sys, signal; sys.argv = ['deteval']; import deteval; print(signal.getsignal(signal.SIGINT).__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)},
                         preexec_fn=_sigint_as_a_terminal_gives_it).stdout  # fmt: skip
    assert out.strip() == "_interrupted_while_loading"
    code = "import signal, deteval; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)},
                         preexec_fn=_sigint_as_a_terminal_gives_it).stdout  # fmt: skip
    assert out.strip() == "True"  # a program importing deteval keeps Python's handler


# ---------------------------------------------------------------- 6. resource requests


@pytest.mark.parametrize(
    "argv, flag",
    [(["--calibration", "--cal-bins", "1000000000"], "--cal-bins"), (["--bootstrap", "100000000"], "--bootstrap")],
)
def test_resource_requests_are_bounded_before_loading(argv, flag, pair, no_evaluation, capsys):
    assert main([*map(str, pair), *argv]) == 2
    _one_line(capsys.readouterr().err, flag, "at most" if flag == "--bootstrap" else "between 1 and")


def test_the_bootstrap_in_chunks_gives_the_same_replicates(pair, monkeypatch):
    from deteval.analysis import intervals

    result = deteval.evaluate(str(pair[0]), str(pair[1]))
    whole = intervals.bootstrap_result(result, n=7, seed=3)
    monkeypatch.setattr(intervals, "_DRAW_INDICES", 250)  # two or three replicates at a time (100 images)
    seen = []
    chunked = intervals.bootstrap_result(result, n=7, seed=3, progress=lambda done, n: seen.append((done, n)))
    assert (chunked.replicates == whole.replicates).all() and chunked.intervals == whole.intervals
    assert seen[-1] == (7, 7) and len(seen) > 1


# ---------------------------------------------------------------- 7. messages name flags, plain values


@pytest.mark.parametrize(
    "argv, start",
    [
        (["--max-dets", "0"], "deteval: error: --max-dets: "),
        (["--iou-type", "foo"], "deteval: error: --iou-type: "),
        (["--area-range", "all:5:1"], "deteval: error: --area-range: "),
        (["--slice-by", "nosuch"], "deteval: error: --slice-by: nosuch: "),
        (["--at-iou", "0.33", "--curves", "{tmp}/c.json"], "deteval: error: --curves: "),
    ],
)
def test_messages_name_the_flag_once_with_plain_numbers(argv, start, tmp_path, pair, capsys):
    try:
        status = main([*map(str, pair), *(a.format(tmp=tmp_path) for a in argv), "--quiet"])
    except SystemExit as exc:  # refused by the parser itself (--iou-type's choices)
        status = exc.code
    assert status == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(start) and "np." not in line and line.count("--slice-by") <= 1, line


@pytest.mark.slow  # processes of their own
def test_crowdpose_ground_truth_from_stdin(tmp_path):
    """crowdpose reads each image's crowdIndex from the bytes the loader read: stdin gives them once."""
    gt, preds = DATA / "crowdpose" / "example_crowdpose_val.json", DATA / "crowdpose" / "example_crowdpose_preds.json"
    args = ["--protocol", "crowdpose", "--iou-type", "keypoints", "--strict", "--json", "-", "--quiet", str(preds)]
    a = _cli([*args, str(gt)], tmp_path)
    b = _cli([*args, "/dev/stdin"], tmp_path, stdin=open(gt))
    assert a.returncode == b.returncode == 0, (a.stderr, b.stderr)
    assert json.loads(a.stdout)["stats"] == json.loads(b.stdout)["stats"]


def test_an_ignored_sighup_stays_ignored(pair, monkeypatch, capsys, tmp_path):
    """``nohup deteval ...``: SIGHUP was ignored before the run and is during it."""
    seen = []
    monkeypatch.setattr(run, "evaluate", lambda *a, **k: seen.append(signal.getsignal(signal.SIGHUP)) or 1 / 0)
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with pytest.raises(ZeroDivisionError):
            main([*map(str, pair), "--quiet"])
        assert seen == [signal.SIG_IGN] and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)


@pytest.mark.slow  # processes of their own
@pytest.mark.parametrize("sig, status, words", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")])
@pytest.mark.parametrize("delay", [0.3, 2.5])
def test_a_signal_at_any_point_is_one_line_and_leaves_nothing(sig, status, words, delay, tmp_path, pair):
    """While the modules load (0.3 s) or while a long run goes on (2.5 s: a bootstrap of 5000 replicates)."""
    import time

    env = {**os.environ, "PYTHONPATH": str(ROOT), "DETEVAL_COMPILE_HELPERS": "0"}
    argv = [*map(str, pair), "--bootstrap", "5000", "--json", "out.json", "--csv", "out.csv", "--quiet"]
    proc = subprocess.Popen([sys.executable, "-m", "deteval", *argv], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_sigint_as_a_terminal_gives_it)  # fmt: skip
    time.sleep(delay)
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == status, err
    _one_line(err, f"deteval: {words}")
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "out.csv").exists()
    _no_temporaries(tmp_path)

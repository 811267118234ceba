"""``--protocol kitti``: the label_2 reader's rules and refusals, the command line (JSON, --per-class,
--bootstrap), and the replay (bootstrap, slices) equal to evaluating the materialised dataset."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from support.kitti_data import kitti_case

import deteval
from deteval import protocols
from deteval.cli import main
from deteval.errors import DetevalWarning, InputError

DIFFS = ("easy", "moderate", "hard")
LINE = "Car 0.00 0 -1.57 100.00 100.00 200.00 180.00 1.5 1.6 3.9 1.0 1.5 20.0 0.1"
KEYS = [
    f"{c}/{d}/{k}"
    for c in ("Car", "Pedestrian", "Cyclist")
    for d in ("easy", "moderate", "hard")
    for k in ("R40", "R11")
]


def _folders(tmp_path, gt: dict[int, str], dt: dict[int, str]):
    labels, results = tmp_path / "label_2", tmp_path / "results"
    labels.mkdir()
    results.mkdir()
    for i, text in gt.items():
        (labels / f"{i:06d}.txt").write_text(text)
    for i, text in dt.items():
        (results / f"{i:06d}.txt").write_text(text)
    return str(results), str(labels)


def _refused(tmp_path, gt, dt, *parts: str) -> str:
    res, lab = _folders(tmp_path, gt, dt)
    with pytest.raises(InputError) as exc:
        deteval.evaluate(res, lab, protocol="kitti")
    text = str(exc.value)
    for p in parts:
        assert p in text, text
    return text


def test_stats_keys_and_a_perfect_car(tmp_path):
    res, lab = _folders(tmp_path, {0: LINE + "\n", 3: ""}, {0: LINE + " 0.9\n", 3: ""})
    r = deteval.evaluate(res, lab, protocol="kitti")
    assert list(r.stats) == KEYS
    # one counted car found at one threshold: slot 0 only, so R11 = 100 / 11 and R40 = 0 (slot 0 left out)
    assert r.stats["Car/easy/R11"] == 1 / 11 * 100 and r.stats["Car/easy/R40"] == 0.0
    assert r.stats["Pedestrian/easy/R40"] == 0.0  # no ground truth: 0
    assert r.aos  # alpha given (-1.57, not -10)
    assert r.precision.shape == (3, 3, 41) and r.precision[0, 0, 0] == 1.0


@pytest.mark.parametrize(
    ("gt", "dt", "parts"),
    [
        (
            {0: LINE.replace(" 0 ", "  0 ", 1) + "\n"},
            {0: ""},
            ["000000.txt", "line 1", "field 3 is empty", "single spaces"],
        ),
        ({0: LINE + "\n\n"}, {0: ""}, ["line 2", "has 1 fields"]),
        ({0: LINE.replace(" 0 -1.57", " 0.0 -1.57") + "\n"}, {0: ""}, ["line 1", "occluded", "'0.0'"]),
        ({0: LINE.replace("200.00", "2OO") + "\n"}, {0: ""}, ["line 1", "field 7", "'2OO'"]),
        ({0: LINE + "\n"}, {0: LINE + " 0.5\n" + LINE + "\n"}, ["results", "line 2", "needs 16"]),
        ({0: LINE + "\n", 1: LINE + "\n"}, {0: ""}, ["000001.txt", "missing"]),
        ({0: LINE + "\n"}, {0: "", 7: ""}, ["000007.txt", "no label file"]),
    ],
)
def test_refusals_name_file_line_and_rule(tmp_path, gt, dt, parts):
    _refused(tmp_path, gt, dt, *parts)


def test_results_without_score_are_scored_zero_with_a_warning(tmp_path):
    res, lab = _folders(tmp_path, {0: LINE + "\n"}, {0: LINE + "\n"})
    with pytest.warns(DetevalWarning, match="without a score column"):
        r = deteval.evaluate(res, lab, protocol="kitti")
    assert r.stats["Car/easy/R11"] == 1 / 11 * 100  # score 0 still passes threshold 0
    with pytest.raises(InputError, match="16th"):
        deteval.evaluate(res, lab, protocol="kitti", strict=True)


@pytest.mark.parametrize("seed", [2, 4])
def test_scanner_equals_the_line_reader(tmp_path, monkeypatch, seed):
    from deteval.io import kitti_scan
    from deteval.io.kitti import read_label_dir

    res, lab = kitti_case(tmp_path / "d", seed=seed, n_images=20)
    for folder, scored in ((lab, False), (res, True)):
        fast = read_label_dir(folder, None, "x", False, scored)
        monkeypatch.setattr(kitti_scan, "scan_plain", lambda paths: None)
        slow = read_label_dir(folder, None, "x", False, scored)
        monkeypatch.undo()
        for name in (
            "image_ids",
            "start",
            "names",
            "cls",
            "dontcare",
            "truncated",
            "occluded",
            "alpha",
            "bbox",
            "score",
        ):
            a, b = getattr(fast, name), getattr(slow, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        assert fast.bbox.flags.c_contiguous


def _plain_folder(folder, n_files: int, seed: int) -> list[str]:
    """Plain files (the scanner's), each naming types in its own order; some empty; the paths."""
    rng = np.random.default_rng(seed)
    folder.mkdir()
    types = ["Car", "Van", "Pedestrian", "DontCare", "Cyclist", "Person_sitting", "Tram"]
    paths = []
    for i in range(n_files):
        lines = [
            f"{types[int(t)]} {rng.integers(0, 3) / 4} {rng.integers(0, 4)} {rng.integers(-300, 300) / 100} "
            f"{x}.5 {x + 1}.25 {x + 40} {x + 60}.75 1.5 1.6 3.9 1.0 1.5 20.0 0.1 {rng.integers(1, 999) / 1000}\n"
            for t, x in zip(rng.permutation(len(types))[: rng.integers(0, 5)], rng.integers(0, 900, 5))
        ]
        path = folder / f"{i:06d}.txt"
        path.write_text("".join(lines))
        paths.append(str(path))
    return paths


def test_scanner_in_runs_equals_one_scan(tmp_path, monkeypatch):
    """Runs of files scanned on a thread while the next is read: the same names, rows and counts as one
    scan of all (each run's names mapped to the folder's); a run that declines, or a file that cannot be
    read, declines the folder."""
    from deteval.io import kitti_scan
    from deteval.jit import using_threads

    paths = _plain_folder(tmp_path / "results", 61, seed=3)
    whole = kitti_scan.scan_plain(paths)
    assert whole is not None and len(whole[0]) == 7
    monkeypatch.setattr(kitti_scan, "FILES_PER_RUN", 3)
    with using_threads(2):
        runs = kitti_scan.scan_plain(paths)
        assert runs is not None
        assert [runs[0][k] for k in runs[1]] == [whole[0][k] for k in whole[1]]
        for a, b in zip(runs[2:], whole[2:]):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        with open(paths[40], "a") as f:
            f.write("Car 0 0 0 1 2 3 4 1.5 1.6 3.9 1.0 1.5 20.0 0.1 +0.5\n")  # a "+": the line reader's
        assert kitti_scan.scan_plain(paths) is None
        (tmp_path / "results" / "000050.txt").unlink()
        (tmp_path / "results" / "000050.txt").mkdir()  # opens, but cannot be read
        assert kitti_scan.scan_plain(paths[:30] + paths[45:]) is None


def test_other_txt_files_are_warned_and_not_read(tmp_path):
    res, lab = _folders(tmp_path, {0: LINE + "\n"}, {0: LINE + " 0.5\n"})
    (tmp_path / "label_2" / "notes.txt").write_text("anything")
    with pytest.warns(DetevalWarning, match="not named like 000000.txt"):
        deteval.evaluate(res, lab, protocol="kitti")


def test_min_overlap_preset_is_checked():
    proto = protocols.get("kitti")
    assert proto.params().min_overlap == (0.7, 0.5, 0.5)
    assert proto.params(min_overlap={"Car": 0.5, "Pedestrian": 0.5, "Cyclist": 0.5}).min_overlap == (0.5,) * 3
    assert proto.params(min_overlap={"Car": 0.5}).min_overlap == (0.5, 0.5, 0.5)  # over the preset's
    with pytest.raises(InputError, match="min_overlap"):
        proto.params(min_overlap={"Truck": 0.5})
    with pytest.raises(InputError, match="min_overlap"):
        proto.params(min_overlap={"Car": 1.5, "Pedestrian": 0.5, "Cyclist": 0.5})


def test_cli_min_overlap(tmp_path, capsys):
    res, lab = kitti_case(tmp_path / "d", seed=4, n_images=12)
    out = tmp_path / "o.json"
    assert main(["--protocol", "kitti", "--min-overlap", "Car:0.5", "--json", str(out), str(res), str(lab)]) == 0
    want = deteval.evaluate(str(res), str(lab), protocol="kitti", min_overlap={"Car": 0.5}).stats
    assert json.loads(out.read_text())["stats"] == want
    with pytest.raises(SystemExit) as exit_:
        main(["--protocol", "kitti", "--min-overlap", "Car=0.5", str(res), str(lab)])
    assert exit_.value.code == 2
    assert "--min-overlap" in capsys.readouterr().err


def test_cli_json_per_class_and_refusal(tmp_path, capsys):
    res, lab = kitti_case(tmp_path / "d", seed=4, n_images=12)
    out = tmp_path / "o.json"
    assert main(["--protocol", "kitti", "--per-class", "--json", str(out), str(res), str(lab)]) == 0
    printed = capsys.readouterr().out
    assert "Car AP_R40@0.70, 0.70, 0.70:" in printed and "moderate" in printed
    doc = json.loads(out.read_text())
    stats = doc["stats"]
    assert doc["aos"].keys() == stats.keys()
    assert len(doc["curves"]["Car/moderate"]["precision"]) == 41
    assert stats == deteval.evaluate(str(res), str(lab), protocol="kitti").stats
    assert list(stats) == KEYS
    shutil.copy(next(res.iterdir()), res / "999999.txt")
    assert main(["--protocol", "kitti", "--json", str(tmp_path / "p.json"), str(res), str(lab)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "999999.txt" in err and "Traceback" not in err
    assert not (tmp_path / "p.json").exists()


def _materialised(tmp_path, res, lab, draw) -> dict[str, float]:
    """The stats of a folder pair holding the drawn images, renumbered in draw order."""
    ids = sorted(int(p.stem) for p in lab.iterdir())
    root = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
    (root / "l").mkdir(parents=True)
    (root / "r").mkdir()
    for k, i in enumerate(draw):
        shutil.copy(lab / f"{ids[i]:06d}.txt", root / "l" / f"{k:06d}.txt")
        shutil.copy(res / f"{ids[i]:06d}.txt", root / "r" / f"{k:06d}.txt")
    return deteval.evaluate(str(root / "r"), str(root / "l"), protocol="kitti").stats


@pytest.mark.parametrize("seed", [3, 4])
def test_replay_equals_the_materialised_dataset(tmp_path, seed):
    res, lab = kitti_case(tmp_path / "d", seed=seed, n_images=15)
    result = deteval.evaluate(str(res), str(lab), protocol="kitti")
    replay = protocols.get("kitti").replay(result)
    rng = np.random.default_rng(seed)
    fn = replay.replicate_fn()
    assert fn(np.arange(15)) == list(result.stats.values())
    for _ in range(3):
        draw = rng.integers(0, 15, 15)
        assert fn(draw) == list(_materialised(tmp_path, res, lab, draw).values())
    heavy = int(np.argmax(np.diff(result.replay.gt_start)))  # one image drawn every time: more TPs than
    draw = np.full(15, heavy)  # the dataset's ground truth rows
    assert fn(draw) == list(_materialised(tmp_path, res, lab, draw).values())
    part = np.sort(rng.choice(15, 7, replace=False))
    assert replay.replicate_fn(by_draw=False)(part) == list(_materialised(tmp_path, res, lab, part).values())


def test_cli_bootstrap_runs(tmp_path):
    res, lab = kitti_case(tmp_path / "d", seed=4, n_images=10)
    out = tmp_path / "b.json"
    assert (
        main(
            [
                "--protocol",
                "kitti",
                "--bootstrap",
                "5",
                "--seed",
                "1",
                "--json",
                str(out),
                "--quiet",
                str(res),
                str(lab),
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert "bootstrap" in doc


def _nan(values: list) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


@pytest.mark.parametrize("seed", [1, 2])  # 1: detections with alpha (AOS), 2: without
def test_cli_curves_are_the_result_arrays(tmp_path, seed):
    res, lab = kitti_case(tmp_path / "d", seed=seed, n_images=40)
    out = tmp_path / "c.json"
    assert main(["--protocol", "kitti", "--quiet", "--curves", str(out), str(res), str(lab)]) == 0
    doc = json.loads(out.read_text())
    r = deteval.evaluate(str(res), str(lab), protocol="kitti")
    assert bool(r.aos) == (seed == 1) and (r.precision[..., 1:] > 0).any()  # curves past slot 0 to compare
    assert doc["protocol"] == "kitti" and doc["recall"] == [i / 40 for i in range(41)]
    assert list(doc["curves"]) == [f"{c}/{d}" for c in ("Car", "Pedestrian", "Cyclist") for d in DIFFS]
    for c, name in enumerate(("Car", "Pedestrian", "Cyclist")):
        for d, diff in enumerate(DIFFS):
            curve = doc["curves"][f"{name}/{diff}"]
            assert curve["AP"] == r.stats[f"{name}/{diff}/R40"] and curve["AP_R11"] == r.stats[f"{name}/{diff}/R11"]
            assert np.array_equal(_nan(curve["precision"]), r.precision[c, d], equal_nan=True)
            assert np.array_equal(_nan(curve["recall_envelope"]), r.recall[c, d], equal_nan=True)
            ts = r.thresholds[c, d]
            assert curve["thresholds"] == ts[~np.isnan(ts)].tolist() and curve["npos"] == r.npos[c, d]
            if r.aos:
                assert curve["AOS"] == r.aos[f"{name}/{diff}/R40"] and curve["AOS_R11"] == r.aos[f"{name}/{diff}/R11"]
                assert np.array_equal(_nan(curve["orientation"]), r.orientation[c, d], equal_nan=True)
            else:
                assert "AOS" not in curve and "orientation" not in curve


def test_cli_plot_writes_a_figure_per_class(tmp_path):
    pytest.importorskip("matplotlib")
    res, lab = kitti_case(tmp_path / "d", seed=1, n_images=40)
    out = tmp_path / "plots"
    assert main(["--protocol", "kitti", "--quiet", "--plot", str(out), str(res), str(lab)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [f"pr_curves_{c}.png" for c in ("Car", "Cyclist", "Pedestrian")]
    assert all(p.stat().st_size > 0 for p in out.iterdir())

"""The command line: its parser built from the protocols' option declarations, --config presets, flag forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA_DIR

import deteval
from deteval import protocols
from deteval.cli import build_parser, main, sample_pair
from deteval.result import jsonable

VOC = DATA_DIR / "voc100_native"

# the equivalent of tests' CONFIG below, as keyword options of deteval.evaluate
CONFIG = """\
iou_thrs = [0.5, 0.75]
max_dets = [1, 10, 300]

[area_ranges]
all = [0, 1e10]
small = [0, 2048]
medium = [2048, 9216]
large = [9216, 1e10]
"""
OPTIONS = {
    "iou_thrs": [0.5, 0.75],
    "max_dets": [1, 10, 300],
    "area_ranges": {"all": (0, 1e10), "small": (0, 2048), "medium": (2048, 9216), "large": (9216, 1e10)},
}


def _usage_error(argv: list[str], capsys) -> str:
    """The one line a usage error prints (it exits with status 2, as argparse's do)."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.strip()


def _stats(argv: list[str], tmp_path: Path, capsys) -> dict:
    """The JSON stats of a successful run of ``argv``."""
    out = tmp_path / "out.json"
    assert main([*argv, "--quiet", "--json", str(out)]) == 0, capsys.readouterr().err
    return json.loads(out.read_text())["stats"]


def _expected(result) -> dict:
    return json.loads(json.dumps(jsonable(result.stats)))  # through JSON, as the CLI writes them


# ---------------------------------------------------------------- the parser


def test_help_shows_every_protocol_group_and_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    titles = [line for line in text.splitlines() if line.endswith(" options:")]
    for name in protocols.available():
        assert any(name in t.split() or f"{name}," in t for t in titles), (name, titles)
        for option in protocols.get(name).options:
            assert option.flag in text
            for alias in option.aliases:
                assert alias in text


def test_shared_flags_are_registered_once():
    # --iou-thrs is declared by coco and the VOC protocols; argparse would refuse a second registration
    parser = build_parser()
    flags = [s for a in parser._actions for s in a.option_strings]
    assert len(flags) == len(set(flags))
    assert "--iou-thrs" in flags and "--iou" in flags


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"deteval {deteval.__version__}\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sample", "--image-set", "val.txt"], "--image-set: belongs to protocol voc07, voc10, not coco"),
        (["--sample", "--iou", "0.5"], "--iou: belongs to protocol voc07, voc10, not coco"),
        (["--protocol", "voc07", "--sample", "--no-cats"], "--no-cats: belongs to protocol coco, not voc07"),
    ],
)
def test_a_flag_of_another_protocol_is_an_error_naming_it(argv, message, capsys):
    assert _usage_error(argv, capsys) == f"deteval: error: {message}"


@pytest.mark.parametrize(
    "argv, start",
    [
        (["--sample", "--max-dets", "1", "x", "3"], "deteval: error: --max-dets: "),
        (["--sample", "--area-range", "small"], "deteval: error: --area-range: expected LABEL:LO:HI"),
        (["--protocol", "voc10", "--sample", "--iou-test", "gx"], "deteval: error: --iou-test: choose from gt, ge"),
        (["--sample", "--no-such-flag"], "deteval: error: --no-such-flag: unknown flag"),
        ([], "deteval: error: command line: PREDS and GT are required"),
    ],
)
def test_usage_errors_are_one_line_naming_the_flag(argv, start, capsys):
    assert _usage_error(argv, capsys).startswith(start)


# ---------------------------------------------------------------- list flags: spaces or commas, before or after files


def test_max_dets_spaces_after_the_files_or_commas(tmp_path, capsys):
    preds, gt = sample_pair()
    expected = _expected(deteval.evaluate(preds, gt, max_dets=[1, 10, 300]))
    assert expected != _expected(deteval.evaluate(preds, gt))
    assert _stats([preds, gt, "--max-dets", "1", "10", "300"], tmp_path, capsys) == expected
    assert _stats(["--max-dets", "1,10,300", preds, gt], tmp_path, capsys) == expected
    assert _stats([preds, gt, "--max-dets", "1,10", "--max-dets", "300"], tmp_path, capsys) == expected
    # spaces before the files: the files the list took are given back
    assert _stats(["--max-dets", "1", "10", "300", preds, gt], tmp_path, capsys) == expected
    assert _stats([preds, "--max-dets", "1", "10", "300", gt], tmp_path, capsys) == expected


def _voc_argv(*flags: str, first: bool = False) -> list[str]:
    files = [str(VOC / "dets_txt"), str(VOC / "gt_xml")]
    names = ["--names", str(VOC / "voc.names")]
    return ["--protocol", "voc10", *names, *(flags if first else ()), *files, *(() if first else flags)]


def test_iou_is_an_alias_of_iou_thrs_on_voc(tmp_path, capsys):
    stats = _stats(_voc_argv("--iou-thrs", "0.5", "0.75"), tmp_path, capsys)
    assert set(stats) >= {"mAP", "mAP50", "mAP75"}
    assert _stats(_voc_argv("--iou", "0.5,0.75"), tmp_path, capsys) == stats
    assert _stats(_voc_argv("--iou", "0.5", "--iou", "0.75"), tmp_path, capsys) == stats
    # VOC scripts put --iou T before the files
    assert _stats(_voc_argv("--iou", "0.5,0.75", first=True), tmp_path, capsys) == stats
    one = _stats(_voc_argv("--iou", "0.75"), tmp_path, capsys)
    assert one["mAP"] == stats["mAP75"]


def test_integrator_lists_before_or_after_the_files(tmp_path, capsys):
    # README: deteval --protocol voc10 --integrator all_points,voc11,coco101,non_interpolated dets/ gt/
    stats = _stats(_voc_argv("--integrator", "all_points,voc11", first=True), tmp_path, capsys)
    assert "mAP:voc11" in stats
    assert _stats(_voc_argv("--integrator", "all_points", "voc11"), tmp_path, capsys) == stats


def test_voc_iou_ranges(tmp_path, capsys):
    stats = _stats(_voc_argv("--iou", "0.5:0.95"), tmp_path, capsys)
    assert {f"mAP{t}" for t in range(50, 100, 5)} <= set(stats)


# ---------------------------------------------------------------- --config


def test_config_gives_the_stats_of_the_same_options(tmp_path, capsys):
    cfg = tmp_path / "preset.toml"
    cfg.write_text(CONFIG)
    expected = _expected(deteval.evaluate(*sample_pair(), **OPTIONS))
    assert expected != _expected(deteval.evaluate(*sample_pair()))  # the preset is not the default
    assert _stats(["--sample", "--config", str(cfg)], tmp_path, capsys) == expected
    flags = ["--iou-thrs", "0.5,0.75", "--max-dets", "1,10,300"]
    flags += [f"--area-range={k}:{lo:g}:{hi:g}" for k, (lo, hi) in OPTIONS["area_ranges"].items()]
    assert _stats(["--sample", *flags], tmp_path, capsys) == expected


def test_flags_override_the_config(tmp_path, capsys):
    cfg = tmp_path / "preset.toml"
    cfg.write_text(CONFIG)
    expected = _expected(deteval.evaluate(*sample_pair(), **(OPTIONS | {"max_dets": [1, 10, 50]})))
    assert _stats(["--sample", "--config", str(cfg), "--max-dets", "1,10,50"], tmp_path, capsys) == expected


def test_config_with_an_unknown_key_names_the_file_and_the_key(tmp_path, capsys):
    cfg = tmp_path / "bad_key.toml"
    cfg.write_text("iou_thresholds = [0.5]\n")
    assert main(["--sample", "--quiet", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deteval: error: ") and err.count("\n") == 1
    assert str(cfg) in err and "iou_thresholds" in err


@pytest.mark.parametrize("text", ["iou_thrs = [0.5,\n", "max_dets = \n", "[area_ranges\n"])
def test_config_that_is_not_toml_names_the_file(text, tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    assert main(["--sample", "--quiet", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"deteval: error: {cfg}: ") and "TOML" in err


def test_config_that_cannot_be_read(tmp_path, capsys):
    missing = tmp_path / "missing.toml"
    assert main(["--sample", "--quiet", "--config", str(missing)]) == 2
    assert f"deteval: error: {missing}: config file not found" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, key",
    [("max_dets = [1, 10]\n", "max_dets"), ("max_dets = [1, 10, 0]\n", "max_dets"), ("iou_thrs = [2.0]\n", "iou_thrs")],
)
def test_config_with_a_bad_value_names_the_file_and_the_key(text, key, tmp_path, capsys):
    cfg = tmp_path / "bad_value.toml"
    cfg.write_text(text)
    assert main(["--sample", "--quiet", "--config", str(cfg)]) == 2
    assert capsys.readouterr().err.startswith(f"deteval: error: {cfg}: {key}: ")
    # a flag that overrides the bad value is the one that counts
    flag = {"max_dets": ["--max-dets", "1,10,100"], "iou_thrs": ["--iou-thrs", "0.5"]}[key]
    assert main(["--sample", "--quiet", "--config", str(cfg), *flag]) == 0

"""``--matches`` and ``--per-image``: the formats their extensions name, equal to ``result.matches`` /
``result.per_image``, under the output rule (checked before loading, all or nothing), errors on one line."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pytest

import deteval
from deteval.cli import main, run, sample_pair


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def _one_line_error(err: str, *parts: str) -> None:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for part in parts:
        assert part in lines[0], (part, lines[0])


@pytest.fixture(scope="module")
def expected():
    res = deteval.evaluate(*sample_pair(), matches=True)
    return res.matches, res.per_image


@pytest.fixture
def pair(tmp_path):
    return tuple(Path(shutil.copy(p, tmp_path)) for p in sample_pair())


@pytest.fixture
def no_evaluation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("evaluated despite a bad output path")

    monkeypatch.setattr(run, "evaluate", refuse)


def _csv_rows(path: Path, like: list[dict]) -> list[dict]:
    """The CSV read back, each cell parsed as the type the API's row holds there (empty: None)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = []
    for row, ref in zip(rows, like):
        parsed = {}
        for k, cell in row.items():
            v = ref[k]
            if cell == "":
                parsed[k] = None
            elif isinstance(v, bool):
                parsed[k] = {"true": True, "false": False}[cell]
            elif v is None:
                parsed[k] = cell  # a cell where the API has None must have been empty
            else:
                parsed[k] = type(v)(cell)
        out.append(parsed)
    assert len(rows) == len(like)
    return out


def test_json_and_csv_equal_the_api_rows(tmp_path, expected, capsys):
    matches, per_image = expected
    out = {name: tmp_path / name for name in ("m.json", "m.csv", "p.json", "p.CSV")}
    argv = ["--sample", "--quiet", "--matches", str(out["m.json"]), "--per-image", str(out["p.json"])]
    assert main(argv) == 0
    assert json.loads(out["m.json"].read_text(encoding="utf-8")) == matches
    assert json.loads(out["p.json"].read_text(encoding="utf-8")) == per_image
    assert main(["--sample", "--quiet", "--matches", str(out["m.csv"]), "--per-image", str(out["p.CSV"])]) == 0
    header = out["m.csv"].read_text(encoding="utf-8").splitlines()[0]
    assert header == "iou_thr,det_index,image_id,category_id,score,gt_id,iou,ignored"
    assert _csv_rows(out["m.csv"], matches) == matches  # floats at repr precision: equal
    assert _csv_rows(out["p.CSV"], per_image) == per_image
    assert any(r["gt_id"] is None for r in matches) and any(r["det_index"] is None for r in matches)
    assert len(per_image) == 100 and sum(r["num_gt"] for r in per_image) > 0


def test_one_table_alone(tmp_path, expected):
    assert main(["--sample", "--quiet", "--per-image", str(tmp_path / "p.json")]) == 0
    assert json.loads((tmp_path / "p.json").read_text(encoding="utf-8")) == expected[1]
    assert list(tmp_path.iterdir()) == [tmp_path / "p.json"]


@pytest.mark.parametrize("flag", ["--matches", "--per-image"])
@pytest.mark.parametrize("name", ["out.txt", "out", "out.json.gz"])
def test_unknown_extension_is_refused_before_loading(flag, name, tmp_path, pair, no_evaluation, capsys):
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), flag, str(tmp_path / name)]) == 2
    _one_line_error(capsys.readouterr().err, flag, ".json or .csv", name)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("flag", ["--matches", "--per-image"])
def test_stdout_is_refused(flag, pair, no_evaluation, capsys):
    assert main([*map(str, pair), flag, "-"]) == 2
    _one_line_error(capsys.readouterr().err, flag, "stdout")


@pytest.mark.parametrize("flag", ["--matches", "--per-image"])
def test_output_rule(flag, tmp_path, pair, no_evaluation, capsys, monkeypatch):
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), flag, str(tmp_path / "missing" / "m.json")]) == 2
    _one_line_error(capsys.readouterr().err, flag, "does not exist")
    gt_as_json = tmp_path / "gt.json"
    os.link(pair[1], gt_as_json)  # the ground truth under another name: the same file
    before = _snapshot(tmp_path)
    assert main([*map(str, pair), flag, str(gt_as_json)]) == 2
    _one_line_error(capsys.readouterr().err, flag, "is also GT")
    assert main([*map(str, pair), "--json", str(tmp_path / "o.json"), flag, str(tmp_path / "o.json")]) == 2
    _one_line_error(capsys.readouterr().err, "is also")
    assert _snapshot(tmp_path) == before


def test_failed_run_leaves_no_table(tmp_path, capsys):
    """--matches is staged with the others: when --curves fails, neither file appears, the old one stays."""
    (tmp_path / "m.csv").write_text("old\n")
    before = _snapshot(tmp_path)
    argv = ["--sample", "--quiet", "--matches", str(tmp_path / "m.csv"), "--per-image", str(tmp_path / "p.json")]
    assert main([*argv, "--curves", str(tmp_path / "c.json"), "--at-area", "huge"]) == 2
    _one_line_error(capsys.readouterr().err, "--curves")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("flag", ["--matches", "--per-image"])
def test_protocol_without_tables_is_one_line(flag, tmp_path, capsys, data_dir):
    voc = data_dir / "voc100"
    argv = ["--protocol", "voc07", str(voc), str(voc), flag, str(tmp_path / "m.json")]
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, flag, "does not support per-detection matches")
    assert list(tmp_path.iterdir()) == []


def test_csv_text_ids_cannot_start_a_formula(tmp_path):
    gt = {
        "images": [{"id": "=1+1", "height": 10, "width": 10}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": "=1+1", "category_id": 1, "bbox": [0, 0, 5, 5], "area": 25, "iscrowd": 0}
        ],
    }
    preds = [{"image_id": "=1+1", "category_id": 1, "bbox": [0, 0, 5, 5], "score": 0.5}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(preds))
    argv = ["--quiet", str(tmp_path / "dt.json"), str(tmp_path / "gt.json"), "--per-image", str(tmp_path / "p.csv")]
    assert main(argv) == 0
    rows = list(csv.reader(io.StringIO((tmp_path / "p.csv").read_text(encoding="utf-8"))))
    assert rows == [["image_id", "num_gt", "num_dt", "tp", "fp", "fn"], ["'=1+1", "1", "1", "1", "0", "0"]]


def test_texts_equal_the_csv_and_json_modules(expected):
    """The writers format each distinct value once: their text equals json.dumps and csv.writer's row by row."""
    from deteval.analysis.report import rows_csv, rows_json

    res = deteval.evaluate(*sample_pair(), matches=True)
    for table in (res.match_table, res.image_table):
        records = table.records()
        assert rows_json(table) == "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]\n"
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(table.KEYS)
        writer.writerows([[_cell(v) for v in r.values()] for r in records])
        assert rows_csv(table) == buf.getvalue()


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):  # before the numbers: True == 1
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else v

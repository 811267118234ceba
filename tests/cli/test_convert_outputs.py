"""``deteval convert`` follows the command line's output rule: no output is or lies inside an input, outputs
appear whole or not at all, and nothing is left behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import DATA_DIR

from deteval.cli import main

EXAMPLE = DATA_DIR / "yolo_example"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "ex")
    return tmp_path / "ex"


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _last_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("deteval: error: "), err
    return err[0]


def test_yolo_to_coco_writes_both_files(example, tmp_path):
    argv = ["convert", "--from", "yolo", "--to", "coco", "--image-sizes", str(example / "sizes.json"),
            "--preds", str(example / "preds"), "--out-preds", str(tmp_path / "res.json"),
            str(example / "labels"), str(tmp_path / "gt.json")]  # fmt: skip
    assert main(argv) == 0
    gt, res = json.loads((tmp_path / "gt.json").read_text()), json.loads((tmp_path / "res.json").read_text())
    assert gt["images"] and gt["annotations"] and isinstance(res, list) and res
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("dest", ["labels/gt.json", "sizes.json", "preds/gt.json"])
def test_an_output_onto_or_into_an_input_is_refused(example, capsys, dest):
    before = _tree(example)
    argv = ["convert", "--from", "yolo", "--to", "coco", "--image-sizes", str(example / "sizes.json"),
            "--preds", str(example / "preds"), "--out-preds", str(example / "out.json"),
            str(example / "labels"), str(example / dest)]  # fmt: skip
    assert main(argv) == 2
    err = _last_error(capsys)
    assert "refusing to" in err and "DEST" in err, err
    assert _tree(example) == before  # nothing written, nothing left


def test_coco_to_yolo_folder_and_side_files_appear_together(example, tmp_path, capsys):
    argv = ["convert", "--from", "yolo", "--to", "coco", "--image-sizes", str(example / "sizes.json"),
            str(example / "labels"), str(tmp_path / "gt.json")]  # fmt: skip
    assert main(argv) == 0
    out = tmp_path / "out"
    assert main(["convert", "--from", "coco", "--to", "yolo", str(tmp_path / "gt.json"), str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (example / "labels").iterdir())
    assert (tmp_path / "out.names.txt").exists() and (tmp_path / "out.sizes.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # a missing parent is refused before anything is written
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["convert", "--from", "coco", "--to", "yolo", str(tmp_path / "gt.json"), str(tmp_path / "a/b")]) == 2
    assert "does not exist" in _last_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_failed_conversion_leaves_the_old_output(example, tmp_path, capsys):
    target = tmp_path / "gt.json"
    target.write_text("old\n")
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["convert", "--from", "coco", "--to", "yolo", str(tmp_path / "bad.json"), str(tmp_path / "out")]) == 2
    _last_error(capsys)
    assert target.read_text() == "old\n" and not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]

"""The examples of README.md and docs/*.md run: every ``deteval ...`` line of their bash blocks goes
through the CLI, and their Python blocks are executed (the ones that need nothing beyond deteval, numpy,
the standard library and the example files) or at least compiled (the illustrative ones: they need a
model, a data loader, torch, pycocotools' import or a Dask cluster). Blocks of other languages (json,
toml, text) are not run.

The example file names are stood in for by the bundled data through ``INPUTS``; a new example that
names a file the table cannot provide fails here until the table provides it.
"""

from __future__ import annotations

import ast
import builtins
import gzip
import os
import re
import shlex
import sys
from pathlib import Path

import pytest
from conftest import DATA_DIR

from deteval.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# the documents whose examples run: README first, then every page of docs/
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
SAMPLE = ROOT / "deteval" / "sample_data"
VOC = DATA_DIR / "voc100_native"

PRESET = """\
iou_thrs = [0.5, 0.75]
max_dets = [1, 10, 300]
"""

# an example's file name -> the data standing in for it (None: written by the test, PRESET)
INPUTS: dict[str, Path | None] = {
    "results.json": SAMPLE / "instances_val2014_fakebbox100_results.json",
    "preds.json": SAMPLE / "instances_val2014_fakebbox100_results.json",
    "instances_val2017.json": SAMPLE / "instances_val2014_100.json",
    "gt.json": SAMPLE / "instances_val2014_100.json",
    "my_preset.toml": None,
    "voc.names": VOC / "voc.names",
    "dets_txt/": VOC / "dets_txt",
    "comp4_det_files/": VOC / "reference" / "comp4_det_files",
    "dets/": VOC / "reference" / "comp4_det_files",
    "Annotations/": VOC / "gt_xml",
    "gt/": VOC / "gt_xml",
    # LVIS: lvis-api's 100-image ground truth and the generated results (gzipped: written out plain)
    "lvis_v1_val.json": DATA_DIR / "lvis100" / "lvis_val_100.json.gz",
    "lvis_results.json": DATA_DIR / "lvis100" / "dets_bbox.json.gz",
    "lvis_segm_results.json": DATA_DIR / "lvis100" / "dets_segm.json.gz",
    "Task1_results/": DATA_DIR / "dota" / "dets",
    "labelTxt/": DATA_DIR / "dota" / "gt",
    "oid_dets.csv": DATA_DIR / "openimages" / "expansion_dets.csv",
    "oid_boxes.csv": DATA_DIR / "openimages" / "expansion_boxes.csv",
    "oid_labels.csv": DATA_DIR / "openimages" / "expansion_labels.csv",
    "oid_hierarchy.json": DATA_DIR / "openimages" / "expansion_hierarchy.json",
    "oid_classes.csv": DATA_DIR / "openimages" / "expansion_classes.csv",
    "preds/": DATA_DIR / "yolo_example" / "preds",
    "labels/": DATA_DIR / "yolo_example" / "labels",
    "sizes.json": DATA_DIR / "yolo_example" / "sizes.json",
    "val_gt.json": DATA_DIR / "pedestrian" / "citypersons_gt.json",
    "citypersons_results.json": DATA_DIR / "pedestrian" / "citypersons_results.json",
    "annotation_val.odgt": DATA_DIR / "pedestrian" / "crowdhuman_gt.odgt",
    "preds.odgt": DATA_DIR / "pedestrian" / "crowdhuman_preds.odgt",
    "wider_pred/": DATA_DIR / "widerface_example" / "pred",
    "wider_gt/": DATA_DIR / "widerface_example" / "gt",
}
# flags whose value an example writes (any name will do)
OUTPUT_FLAGS = {
    "--json", "--arrays", "--csv", "--markdown", "--curves", "--plot", "--report", "--matches", "--per-image",
}  # fmt: skip
# names a Python block may use without defining them: the example's inputs, bound by the test
PYTHON_NAMES = {"preds": "results.json", "gt": "instances_val2017.json"}
# what a runnable Python block may import besides deteval: its dependency numpy and the standard library
RUNNABLE_IMPORTS = {"deteval", "numpy", *sys.stdlib_module_names}

_PATH_LIKE = re.compile(r"(/|\.[A-Za-z]\w*)$")


def _blocks(language: str, documents: list[Path] = DOCUMENTS) -> list[str]:
    """The fenced blocks of ``language`` in ``documents``, in document order."""
    pattern = rf"^```{language}\n(.*?)^```"
    return [block for doc in documents for block in re.findall(pattern, doc.read_text(encoding="utf-8"), re.M | re.S)]


def _named_blocks(language: str) -> list[tuple[str, str]]:
    """(``"FILE python block N"``, code) for every block of ``language``: the test ids."""
    named = []
    for doc in DOCUMENTS:
        for i, block in enumerate(_blocks(language, [doc])):
            named.append((f"{doc.relative_to(ROOT)} {language} block {i}", block))
    return named


def _commands(documents: list[Path] = DOCUMENTS) -> list[str]:
    lines = (line.strip() for block in _blocks("bash", documents) for line in block.splitlines())
    return [line for line in lines if line.startswith("deteval ")]


def _prepare(directory: Path) -> None:
    """The example files in ``directory``: links to the data standing in for them, and the preset."""
    for name, source in INPUTS.items():
        target = directory / name.rstrip("/")
        if source is None:
            target.write_text(PRESET, encoding="utf-8")
        elif source.suffix == ".gz":
            target.write_bytes(gzip.decompress(source.read_bytes()))
        else:
            os.symlink(source, target, target_is_directory=source.is_dir())


def _unprovided(argv: list[str]) -> list[str]:
    """The path-like arguments of ``argv`` that are neither an input of ``INPUTS`` nor an output."""
    missing = []
    for i, token in enumerate(argv):
        if token.startswith("-") or not _PATH_LIKE.search(token):
            continue
        if token not in INPUTS and (i == 0 or argv[i - 1] not in OUTPUT_FLAGS):
            missing.append(token)
    return missing


def test_readme_has_examples():
    assert len(_commands([README])) >= 7
    assert len(_blocks("python", [README])) >= 2


def test_docs_have_examples():
    """The docs pages are read too: the test would otherwise pass on a glob that found nothing."""
    pages = {doc.name for doc in DOCUMENTS[1:]}
    assert {"protocols.md", "cli.md", "python-api.md", "statistics.md"} <= pages
    assert len(_commands(DOCUMENTS[1:])) >= 10
    assert sum(_runnable(code) for code in _blocks("python", DOCUMENTS[1:])) >= 3


@pytest.mark.parametrize("command", sorted(set(_commands())))
def test_readme_command_runs(command, tmp_path, monkeypatch, capsys):
    argv = shlex.split(command)[1:]
    missing = _unprovided(argv)
    assert not missing, f"a documented example names files the test's INPUTS table does not provide: {missing}"
    _prepare(tmp_path)
    monkeypatch.chdir(tmp_path)
    status = main(argv)
    assert status == 0, capsys.readouterr().err


def _free_names(tree: ast.Module) -> set[str]:
    """The names a block reads without binding them (coarse: any binding anywhere counts)."""
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return read - bound - set(dir(builtins))


def _imports_runnable(tree: ast.Module) -> bool:
    modules = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    modules += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    return all(module.split(".")[0] in RUNNABLE_IMPORTS for module in modules)


def _runnable(code: str) -> bool:
    tree = ast.parse(code)
    return _imports_runnable(tree) and _free_names(tree) <= set(PYTHON_NAMES)


@pytest.mark.parametrize("name, code", _named_blocks("python"), ids=[name for name, _ in _named_blocks("python")])
def test_readme_python_block(name, code, tmp_path, monkeypatch):
    """Every block compiles; one that needs nothing but deteval, numpy, the standard library and the
    example files also runs."""
    compiled = compile(code, name, "exec")
    if not _runnable(code):
        return  # illustrative: needs a model, a data loader, torch, pycocotools or a Dask cluster; compiled only
    _prepare(tmp_path)
    monkeypatch.chdir(tmp_path)
    exec(compiled, {"__name__": "readme_example", **PYTHON_NAMES})


def test_the_python_example_runs():
    """README's first Python block (evaluate, its options, a preset, VOC) is one the test executes."""
    assert _runnable(_blocks("python", [README])[0])

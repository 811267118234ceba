"""Per-class exports (CSV, Markdown), PR curves read from COCO's arrays, plots, and their CLI flags."""

from __future__ import annotations

import csv
import io
import json
import sys

import numpy as np
import pytest

import deteval
from deteval.cli import _sample_pair, main
from deteval.curves import curve_indices, pr_curves
from deteval.report import per_class_csv, per_class_markdown, per_class_table


@pytest.fixture(scope="module")
def sample():
    return deteval.evaluate(*_sample_pair())


def _missing(v):
    return v is None or (isinstance(v, float) and v == -1)


# ---------------------------------------------------------------- CSV / Markdown


def test_csv_parses_back_to_the_same_values(sample):
    rows = list(csv.reader(io.StringIO(per_class_csv(sample))))
    columns = list(sample.per_class[0])
    assert rows[0] == columns
    assert len(rows) == 1 + len(sample.per_class)
    n_missing = 0
    for cells, row in zip(rows[1:], sample.per_class):
        for col, cell in zip(columns, cells):
            v = row[col]
            if _missing(v):
                assert cell == ""
                n_missing += 1
            elif isinstance(v, float):
                assert float(cell) == v  # exact: written with repr
            elif isinstance(v, int):
                assert int(cell) == v
            else:
                assert cell == str(v)
    assert n_missing > 0  # the sample has categories without ground truth in some area range


def test_csv_quotes_awkward_names(sample):
    import dataclasses

    rows = [dict(sample.per_class[0], name='a, "b"')]
    odd = dataclasses.replace(sample, per_class=rows)
    parsed = list(csv.reader(io.StringIO(per_class_csv(odd))))
    assert parsed[1][1] == 'a, "b"'


def test_markdown_has_header_and_one_row_per_class(sample):
    lines = per_class_markdown(sample).strip().splitlines()
    columns = list(sample.per_class[0])
    assert lines[0] == "| " + " | ".join(columns) + " |"
    assert set(lines[1].replace("|", "").replace("-", "").replace(":", "")) == set()
    assert lines[1].count("|") == len(columns) + 1
    body = lines[2:]
    assert len(body) == len(sample.per_class)
    for line, row in zip(body, sample.per_class):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == len(columns)
        assert cells[columns.index("name")] == row["name"]
        ap = row["AP"]
        assert cells[columns.index("AP")] == ("\u2013" if _missing(ap) else f"{ap:.3f}")
    assert any("\u2013" in line for line in body)


def test_sort_by_orders_rows_descending_missing_last(sample):
    for render in (per_class_csv,):
        rows = list(csv.DictReader(io.StringIO(render(sample, sort_by="APl"))))
        vals = [float(r["APl"]) if r["APl"] else None for r in rows]
        present = [v for v in vals if v is not None]
        assert present == sorted(present, reverse=True)
        assert vals[: len(present)] == present  # missing ones last
    names = [r["name"] for r in csv.DictReader(io.StringIO(per_class_csv(sample, sort_by="name")))]
    assert names == sorted(names)
    table = per_class_table(sample, sort_by="AP").splitlines()
    best = max(sample.per_class, key=lambda r: r["AP"])
    assert best["name"] in table[2]
    with pytest.raises(ValueError, match="unknown column"):
        per_class_csv(sample, sort_by="nope")


# ---------------------------------------------------------------- PR curves


@pytest.mark.parametrize(("iou", "area", "max_dets"), [(0.5, "all", None), (0.75, "small", 10), (0.9, "large", 1)])
def test_pr_curves_are_the_stored_arrays(sample, iou, area, max_dets):
    curves = pr_curves(sample, iou=iou, area=area, max_dets=max_dets)
    t, a, m = curve_indices(sample, iou, area, max_dets)
    assert (curves["indices"]["t"], curves["indices"]["a"], curves["indices"]["m"]) == (t, a, m)
    assert sample.arrays["iou_thrs"][t] == pytest.approx(iou)
    assert sample.arrays["area_labels"][a] == area
    assert sample.arrays["max_dets"][m] == (100 if max_dets is None else max_dets)
    assert np.array_equal(curves["recall"], sample.arrays["rec_thrs"])
    assert [c["category_id"] for c in curves["classes"]] == sample.arrays["cat_ids"].tolist()
    for k, c in enumerate(curves["classes"]):
        assert np.array_equal(c["precision"], sample.precision[t, :, k, a, m])
        assert np.array_equal(c["scores"], sample.scores[t, :, k, a, m])
        p = sample.precision[t, :, k, a, m]
        assert c["has_gt"] == bool((p > -1).any())
        assert c["AP"] == (np.mean(p[p > -1]) if c["has_gt"] else -1.0)
    # masked mean over classes, recall point by recall point
    prec = sample.precision[t, :, :, a, m]
    assert (prec == -1).any(), "the slice must hold classes without GT, or the masking is not tested"
    for r in range(prec.shape[0]):
        col = prec[r]
        ok = col > -1
        expect = np.mean(col[ok]) if ok.any() else -1.0
        assert curves["mean"]["precision"][r] == pytest.approx(expect, rel=1e-15, abs=0)
        assert curves["mean"]["num_classes"][r] == ok.sum()


def test_pr_curves_agree_with_the_stats(sample):
    curves = pr_curves(sample, iou=0.5)
    assert curves["mean"]["AP"] == pytest.approx(sample.stats["AP50"], rel=1e-12)
    by_id = {row["category_id"]: row for row in sample.per_class}
    for c in curves["classes"]:
        ap50 = by_id[c["category_id"]]["AP50"]
        assert c["AP"] == pytest.approx(ap50, rel=1e-12)
        assert c["name"] == by_id[c["category_id"]]["name"]
    assert pr_curves(sample, iou=0.75)["mean"]["AP"] == pytest.approx(sample.stats["AP75"], rel=1e-12)


def test_pr_curves_reject_what_was_not_evaluated(sample):
    with pytest.raises(ValueError, match="IoU"):
        pr_curves(sample, iou=0.42)
    with pytest.raises(ValueError, match="area"):
        pr_curves(sample, area="huge")
    with pytest.raises(ValueError, match="max_dets"):
        pr_curves(sample, max_dets=7)


def test_pr_curves_pooled_categories():
    result = deteval.evaluate(*_sample_pair(), use_cats=False)
    curves = pr_curves(result)
    assert len(curves["classes"]) == 1
    assert np.array_equal(curves["mean"]["precision"], result.precision[0, :, 0, 0, -1])


# ---------------------------------------------------------------- CLI


def test_cli_writes_exports(tmp_path, sample, capsys):
    paths = {k: tmp_path / f"out.{k}" for k in ("csv", "md", "json")}
    argv = ["--sample", "--csv", str(paths["csv"]), "--markdown", str(paths["md"]), "--curves", str(paths["json"])]
    assert main([*argv, "--per-class", "--sort-by", "AP"]) == 0
    assert paths["csv"].read_bytes().decode() == per_class_csv(sample, sort_by="AP")  # CRLF kept, as csv writes
    assert paths["md"].read_text() == per_class_markdown(sample, sort_by="AP")
    data = json.loads(paths["json"].read_text())
    curves = pr_curves(sample, iou=0.5)
    assert data["iou"] == 0.5 and data["area"] == "all" and data["max_dets"] == 100
    assert data["recall"] == curves["recall"].tolist()
    assert data["mean"]["precision"] == curves["mean"]["precision"].tolist()
    for got, want in zip(data["classes"], curves["classes"]):
        assert got["precision"] == want["precision"].tolist()  # exact through JSON
        assert got["scores"] == want["scores"].tolist()
    out = capsys.readouterr().out
    table = out.split("\n\n", 1)[1].splitlines()
    best = max(sample.per_class, key=lambda r: r["AP"])
    assert best["name"] in table[2]


def test_cli_bad_sort_column_is_a_usage_error(tmp_path, capsys):
    assert main(["--sample", "--quiet", "--sort-by", "nope", "--csv", str(tmp_path / "x.csv")]) == 2
    assert "nope" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


# ---------------------------------------------------------------- plots


def test_plots_written(tmp_path, sample):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (optional extra 'plot')")
    from deteval.plots import plot_pr_curves

    paths = plot_pr_curves(sample, tmp_path / "plots", iou=0.5)
    assert [p.name for p in paths] == ["pr_curves.png", "per_class_ap.png"]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 10_000


def test_cli_plot(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (optional extra 'plot')")
    assert main(["--sample", "--quiet", "--plot", str(tmp_path)]) == 0
    assert (tmp_path / "pr_curves.png").stat().st_size > 10_000
    assert (tmp_path / "per_class_ap.png").stat().st_size > 10_000


def test_plots_without_matplotlib_say_so(tmp_path, sample, monkeypatch, capsys):
    # a None entry in sys.modules makes the import fail, as if matplotlib were not installed
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    from deteval.plots import plot_pr_curves

    with pytest.raises(ImportError, match=r"deteval\[plot\]"):
        plot_pr_curves(sample, tmp_path)
    assert main(["--sample", "--quiet", "--plot", str(tmp_path)]) == 2
    assert "matplotlib" in capsys.readouterr().err

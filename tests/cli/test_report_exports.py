"""Per-class exports (CSV, Markdown), PR curves read from COCO's arrays, plots, and their CLI flags."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys

import numpy as np
import pytest

import deteval
from deteval.analysis.curves import curve_indices, pr_curves
from deteval.analysis.operating_points import best_operating_points, operating_points_at
from deteval.analysis.report import (
    operating_point_columns,
    per_class_csv,
    per_class_markdown,
    per_class_table,
    with_operating_points,
)
from deteval.cli import main, sample_pair


@pytest.fixture(scope="module")
def sample():
    return deteval.evaluate(*sample_pair())


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
    curves = pr_curves(sample, iou_thr=iou, area=area, max_dets=max_dets)
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
    curves = pr_curves(sample, iou_thr=0.5)
    assert curves["mean"]["AP"] == pytest.approx(sample.stats["AP50"], rel=1e-12)
    by_id = {row["category_id"]: row for row in sample.per_class}
    for c in curves["classes"]:
        ap50 = by_id[c["category_id"]]["AP50"]
        assert c["AP"] == pytest.approx(ap50, rel=1e-12)
        assert c["name"] == by_id[c["category_id"]]["name"]
    assert pr_curves(sample, iou_thr=0.75)["mean"]["AP"] == pytest.approx(sample.stats["AP75"], rel=1e-12)


def test_pr_curves_reject_what_was_not_evaluated(sample):
    with pytest.raises(ValueError, match="IoU"):
        pr_curves(sample, iou_thr=0.42)
    with pytest.raises(ValueError, match="area"):
        pr_curves(sample, area="huge")
    with pytest.raises(ValueError, match="max_dets"):
        pr_curves(sample, max_dets=7)


def test_pr_curves_pooled_categories():
    result = deteval.evaluate(*sample_pair(), use_cats=False)
    curves = pr_curves(result)
    assert len(curves["classes"]) == 1
    assert np.array_equal(curves["mean"]["precision"], result.precision[0, :, 0, 0, -1])


# ---------------------------------------------------------------- CLI


def test_cli_writes_exports(tmp_path, sample, capsys):
    paths = {k: tmp_path / f"out.{k}" for k in ("csv", "md", "json")}
    argv = ["--sample", "--csv", str(paths["csv"]), "--markdown", str(paths["md"]), "--curves", str(paths["json"])]
    assert main([*argv, "--per-class", "--sort-by", "AP"]) == 0
    # the CLI's per-class outputs carry the best-F1 columns
    full = with_operating_points(sample)
    assert paths["csv"].read_bytes().decode() == per_class_csv(full, sort_by="AP")  # CRLF kept, as csv writes
    assert paths["md"].read_text() == per_class_markdown(full, sort_by="AP")
    data = json.loads(paths["json"].read_text())
    curves = pr_curves(sample, iou_thr=0.5)
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
    from deteval.analysis.plots import plot_pr_curves

    paths = plot_pr_curves(sample, tmp_path / "plots", iou_thr=0.5)
    assert [p.name for p in paths] == ["pr_curves.png", "per_class_ap.png"]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 10_000


@pytest.mark.slow
def test_cli_plot(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (optional extra 'plot')")
    assert main(["--sample", "--quiet", "--plot", str(tmp_path)]) == 0
    assert (tmp_path / "pr_curves.png").stat().st_size > 10_000
    assert (tmp_path / "per_class_ap.png").stat().st_size > 10_000


def test_plots_without_matplotlib_say_so(tmp_path, sample, monkeypatch, capsys):
    # a None entry in sys.modules makes the import fail, as if matplotlib were not installed
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    from deteval.analysis.plots import plot_pr_curves

    with pytest.raises(ImportError, match=r"deteval\[plot\]"):
        plot_pr_curves(sample, tmp_path)
    assert main(["--sample", "--quiet", "--plot", str(tmp_path)]) == 2
    assert "matplotlib" in capsys.readouterr().err


# ---------------------------------------------------------------- operating points in the per-class outputs


def test_with_operating_points_adds_columns_and_keeps_the_rest(sample):
    full = with_operating_points(sample)
    names = operating_point_columns(1.0)
    assert names == ["F1", "F1_P", "F1_R", "F1_TP", "F1_FP", "F1_thr"]
    assert "F1" not in sample.per_class[0]  # the original is untouched
    pts = best_operating_points(sample)
    assert len(full.per_class) == len(sample.per_class) == len(pts.classes)
    for row, old, p in zip(full.per_class, sample.per_class, pts.classes):
        assert list(row)[: len(old)] == list(old) and list(row)[len(old) :] == names
        assert all(row[k] == v for k, v in old.items())  # existing values unchanged
        assert row["F1_TP"] == p.tp and row["F1_FP"] == p.fp
        if p.npos == 0:
            assert row["F1"] is None and row["F1_R"] is None and row["F1_thr"] is None
        else:
            assert row["F1"] == p.fbeta and row["F1_R"] == p.recall
            assert row["F1_thr"] == (None if math.isnan(p.threshold) else p.threshold)
    assert full.stats == sample.stats
    # JSON (NaN-free: undefined values are null), CSV (empty cells) and the text table render them
    data = json.loads(full.to_json())
    assert data["per_class"][0]["F1_TP"] == pts.classes[0].tp
    header = next(csv.reader(io.StringIO(per_class_csv(full))))
    assert header[-6:] == names
    assert "F1_thr" in per_class_table(full).splitlines()[0]
    assert not re.search(r"\bnan\b", per_class_table(full))
    f2 = with_operating_points(sample, beta=2.0)
    assert (
        list(f2.per_class[0])[-6:] == operating_point_columns(2.0) == ["F2", "F2_P", "F2_R", "F2_TP", "F2_FP", "F2_thr"]
    )


def test_with_operating_points_voc():
    from conftest import COCO_PAIRS

    pair = COCO_PAIRS["voc100"]
    res = deteval.evaluate(pair.load_preds(), pair.load_gt(), protocol="voc07")
    full = with_operating_points(res)
    pts = best_operating_points(res)
    assert [r["F1_TP"] for r in full.per_class] == [p.tp for p in pts.classes]
    assert all(r["F1"] is not None for r in full.per_class if not r["no_positives"])


# ---------------------------------------------------------------- CLI: curves, plots, confusion, score threshold


@pytest.mark.slow
def test_cli_curves_plots_confusion(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (optional extra 'plot')")
    preds, gt = sample_pair()
    curves_path = tmp_path / "curves.json"
    argv = [
        "--protocol", "coco", preds, gt, "--per-class", "--plot", str(tmp_path), "--curves", str(curves_path),
        "--confusion",
    ]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "F1_thr" in out  # per-class table with the operating point
    assert "Confusion" in out
    for name in ("pr_curves.png", "per_class_ap.png", "pr_per_class.png", "f1_confidence.png", "confusion_matrix.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name
    data = json.loads(curves_path.read_text())
    for key in ("iou", "area", "max_dets", "indices", "recall", "classes", "mean"):  # the 101-point keys stay
        assert key in data
    assert data["protocol"] == "coco" and data["beta"] == 1.0
    sc = data["score_curves"]
    assert set(sc) >= {"iou", "area", "beta", "classes", "micro"}
    first = sc["classes"][0]
    assert set(first["vs_score"]) == {"threshold", "tp", "fp", "precision", "recall", "fbeta"}
    assert set(first["raw"]) == {"score", "precision", "recall", "envelope"}
    assert len(sc["classes"]) == len(data["classes"])
    best = data["operating_points"]["best"]
    assert set(best) >= {"classes", "micro", "macro"}
    want = best_operating_points(deteval.evaluate(preds, gt))
    assert best["micro"]["tp"] == want.micro.tp and best["micro"]["fbeta"] == want.micro.fbeta
    assert "at_threshold" not in data["operating_points"]


def test_cli_score_thr_and_beta(tmp_path, capsys):
    curves_path = tmp_path / "c.json"
    assert main(["--sample", "--score-thr", "0.5", "--beta", "2", "--curves", str(curves_path)]) == 0
    out = capsys.readouterr().out
    block = out.split("At score >= 0.5", 1)[1]
    lines = block.splitlines()
    assert lines[1].split()[-1] == "F2"
    pts = operating_points_at(deteval.evaluate(*sample_pair()), 0.5, beta=2.0)
    micro = next(line for line in lines if line.split()[:1] == ["micro"]).split()
    assert micro[3:5] == [str(pts.micro.tp), str(pts.micro.fp)]
    assert micro[-1] == f"{pts.micro.fbeta:.3f}"
    assert any(line.split()[:1] == ["macro"] for line in lines)
    data = json.loads(curves_path.read_text())
    assert data["beta"] == 2.0 and data["operating_points"]["at_threshold"]["threshold"] == 0.5
    # --quiet prints nothing, files are still written
    curves_path.unlink()
    assert main(["--sample", "--quiet", "--score-thr", "0.5", "--confusion", "--curves", str(curves_path)]) == 0
    assert capsys.readouterr().out == ""
    assert curves_path.exists()


@pytest.mark.parametrize("bad", [["--beta", "0"], ["--beta", "-1"], ["--beta", "nan"], ["--score-thr", "inf"],
                                 ["--confusion=2:0.1"], ["--confusion=x:y"]])  # fmt: skip
def test_cli_rejects_bad_values(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--sample", *bad])
    assert exc.value.code == 2
    assert bad[0].split("=")[0] in capsys.readouterr().err


def test_cli_confusion_before_positionals(capsys):
    # `--confusion PREDS GT`: the optional value swallowed PREDS; the CLI puts it back
    preds, gt = sample_pair()
    assert main(["--confusion", preds, gt]) == 0
    assert "Confusion summary" in capsys.readouterr().out
    assert main([preds, gt, "--confusion", "0.5:0.9"]) == 0
    assert "score >= 0.9" in capsys.readouterr().out


def test_cli_confusion_boxes_only(capsys):
    assert main(["--sample", "--iou-type", "segm", "--confusion", "--quiet"]) == 2
    assert "boxes only" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_voc_curves_and_plots(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (optional extra 'plot')")
    from conftest import COCO_PAIRS

    pair = COCO_PAIRS["voc100"]
    curves_path = tmp_path / "voc.json"
    argv = ["--protocol", "voc10", str(pair.dt_path), str(pair.gt_path), "--quiet", "--curves", str(curves_path),
            "--plot", str(tmp_path), "--confusion"]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(curves_path.read_text())
    assert set(data) == {"iou", "area", "protocol", "beta", "score_curves", "operating_points"}
    assert data["protocol"] == "voc10" and data["iou"] == 0.5
    for name in ("pr_per_class.png", "f1_confidence.png", "confusion_matrix.png"):
        assert (tmp_path / name).stat().st_size > 10_000
    assert not (tmp_path / "pr_curves.png").exists()  # no 101-point arrays for VOC


def test_cli_refuses_missing_output_directories_and_unwritable_paths(tmp_path, capsys):
    # deliberately changed (hardening issue): missing directories are an error, no longer created
    out = tmp_path / "new" / "dir"
    assert main(["--sample", "--quiet", "--curves", str(out / "curves.json")]) == 2
    assert f"--curves: cannot write {out / 'curves.json'}: {out} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["--sample", "--quiet", "--json", str(blocker / "x.json")]) == 2
    assert f"cannot write {blocker / 'x.json'}: {blocker} is not a directory" in capsys.readouterr().err


def test_cli_at_iou_and_area_select_the_curves_and_operating_points(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["--sample", "--quiet", "--curves", str(out), "--at-iou", "0.75", "--at-area", "large"]) == 0
    curves = json.loads(out.read_text())
    assert (curves["iou"], curves["area"]) == (0.75, "large")
    expected = best_operating_points(deteval.evaluate(*sample_pair()), iou_thr=0.75, area="large")
    assert curves["operating_points"]["best"]["micro"]["fbeta"] == expected.micro.fbeta


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--per-class", "--at-iou", "0.33"], "--at-iou/--at-area: IoU 0.33 is not an evaluated threshold"),
        (["--score-thr", "0.5", "--at-area", "huge"], "--score-thr: area 'huge' is not an evaluated area range"),
        (["--curves", "x.json", "--at-area", "huge"], "area 'huge' is not an evaluated area range"),
    ],
)
def test_cli_at_iou_and_area_must_be_evaluated(flags, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--sample", "--quiet", *flags]) == 2
    assert message in capsys.readouterr().err

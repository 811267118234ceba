"""``deteval --report DIR``: DIR/report.html written as --plot's folder is (all or nothing, never into an input)."""

from __future__ import annotations

import shutil

import pytest
from conftest import DATA_DIR
from support.html_check import check_page, tables

from deteval.cli import main


def _one_line_error(err: str, *parts: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for p in parts:
        assert p in lines[0], lines[0]


def test_report_with_tide_and_calibration(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["--sample", "--quiet", "--tide", "--calibration", "--report", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no temporary left beside it
    assert [p.name for p in out.iterdir()] == ["report.html"]
    page = (out / "report.html").read_text(encoding="utf-8")
    checked = check_page(page)
    assert checked.counts["svg"] == 4
    for section in ("tide", "calibration", "worst"):
        assert f'<section id="{section}">' in page
    heads = tables(page)["per-class"]["heads"]
    assert heads[-6:] == ["F1", "F1_P", "F1_R", "F1_TP", "F1_FP", "F1_thr"]  # the operating points, as --csv's
    assert "sample_data" in page  # the inputs named under the title


def test_report_options_follow_the_flags(tmp_path):
    out = tmp_path / "rep"
    assert main(["--sample", "--quiet", "--report", str(out), "--beta", "2", "--at-iou", "0.75"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "F2 against the score threshold (IoU=0.75, area=all)" in page
    assert "Precision-recall (IoU=0.75, area=all, maxDets=100)" in page
    assert "F2_thr" in tables(page)["per-class"]["heads"]
    assert '<section id="tide">' not in page


@pytest.mark.parametrize("flag", ["--matches", "--per-image"])
def test_report_beside_one_table_flag_still_has_both_tables(tmp_path, flag):
    """--matches or --per-image written beside --report: the report still gets the worst images and their
    match rows (the flag's file holds its own table only)."""
    out, table = tmp_path / "rep", tmp_path / "table.csv"
    assert main(["--sample", "--quiet", flag, str(table), "--report", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "No per-image results were given" not in page and "No match rows were given" not in page
    assert '<section id="worst">' in page
    head = table.read_text().splitlines()[0]
    assert head.startswith("iou_thr," if flag == "--matches" else "image_id,"), head


def test_report_into_an_existing_folder_keeps_its_other_files(tmp_path):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "report.html").write_text("an old report")
    assert main(["--sample", "--quiet", "--report", str(out)]) == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")  # replaced, as --plot's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


@pytest.mark.parametrize(
    "target, message",
    [
        ("-", "--report: cannot go to stdout ('-'): give a directory"),
        ("afile", "afile exists and is not a directory"),
        ("missing/rep", "does not exist"),
    ],
)
def test_report_bad_targets(tmp_path, monkeypatch, capsys, target, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    assert main(["--sample", "--quiet", "--report", target]) == 2
    _one_line_error(capsys.readouterr().err, "--report", message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_report_and_plot_are_two_folders(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["--sample", "--quiet", "--report", str(out), "--plot", str(out)]) == 2
    _one_line_error(capsys.readouterr().err, "--report", "is also --plot")
    assert not out.exists()


def test_failed_run_writes_no_report(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["--sample", "--quiet", "--report", str(out), "--at-area", "tiny"]) == 2
    assert "tiny" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # neither the folder nor a temporary


def test_report_never_inside_an_input_folder(tmp_path, capsys):
    voc = tmp_path / "voc"
    shutil.copytree(DATA_DIR / "voc100_native", voc)
    before = sorted(p.relative_to(voc) for p in voc.rglob("*"))
    argv = ["--protocol", "voc07", "--quiet", "--names", str(voc / "voc.names"), str(voc / "dets_txt"),
            str(voc / "gt_xml"), "--report", str(voc / "gt_xml" / "rep")]  # fmt: skip
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, "--report", "lies inside the folder GT")
    assert sorted(p.relative_to(voc) for p in voc.rglob("*")) == before


def test_report_given_no_folder_says_so(tmp_path, capsys):
    from deteval.cli import sample_pair

    dt, gt = sample_pair()
    with pytest.raises(SystemExit) as exc:
        main(["--report", str(dt), str(gt)])
    assert exc.value.code == 2
    _one_line_error(capsys.readouterr().err, "--report takes a folder (--report DIR)")


D = DATA_DIR
PROTOCOL_RUNS = {
    "segm": ["--iou-type", "segm", "--tide", f"{D}/coco_fake100/instances_val2014_fakesegm100_results.json",
             f"{D}/coco_fake100/instances_val2014_100.json"],
    "keypoints": ["--iou-type", "keypoints", f"{D}/keypoints1/dt_dataset.json", f"{D}/keypoints1/gt_dataset.json"],
    "obb": ["--iou-type", "obb", f"{D}/obb/dets.json", f"{D}/obb/gt.json"],
    "crowdpose": ["--protocol", "crowdpose", f"{D}/crowdpose/example_crowdpose_preds.json",
                  f"{D}/crowdpose/example_crowdpose_val.json"],
    "voc07": ["--protocol", "voc07", "--names", f"{D}/voc100_native/voc.names", f"{D}/voc100_native/dets_txt",
              f"{D}/voc100_native/gt_xml"],
    "dota": ["--protocol", "dota", f"{D}/dota/dets", f"{D}/dota/gt"],
    "openimages": ["--protocol", "openimages", f"{D}/openimages/challenge_dets.csv",
                   f"{D}/openimages/challenge_boxes.csv", "--labels", f"{D}/openimages/challenge_labels.csv",
                   "--no-expand"],
    "yolo": ["--protocol", "yolo", "--image-sizes", f"{D}/yolo_example/sizes.json", f"{D}/yolo_example/preds",
             f"{D}/yolo_example/labels"],
    "citypersons": ["--protocol", "citypersons", f"{D}/pedestrian/citypersons_results.json",
                    f"{D}/pedestrian/citypersons_gt.json"],
    "crowdhuman": ["--protocol", "crowdhuman", f"{D}/pedestrian/crowdhuman_preds.odgt",
                   f"{D}/pedestrian/crowdhuman_gt.odgt"],
    "lvis": ["--protocol", "lvis", "--calibration", f"{D}/lvis100/dets_bbox.json.gz",
             f"{D}/lvis100/lvis_val_100.json.gz"],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PROTOCOL_RUNS))
def test_report_of_every_protocol(name, tmp_path):
    """Every protocol's result makes a well-formed page: per-class rows of any shape, curves or the words why not."""
    out = tmp_path / "rep"
    assert main([*PROTOCOL_RUNS[name], "--quiet", "--report", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    check_page(page)
    assert "<script>" in page and '<section id="worst">' in page

"""A new user's mistakes: each caught with its fix named, one line, exit 2 (or one warning), never a silent number.

Corner-pair results boxes, swapped PREDS and GT, a YOLO label folder given to VOC, a protocol's only iou
type, flags misspelt or abbreviated, ``compare``'s usage errors and its place in ``--help``.
"""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path

import pytest
from conftest import DATA_DIR

import deteval
from deteval.cli import main
from deteval.errors import DetevalWarning, InputError
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.tuning import TUNING

COCO_GT = DATA_DIR / "coco_fake100" / "instances_val2014_100.json"
COCO_DT = DATA_DIR / "coco_fake100" / "instances_val2014_fakebbox100_results.json"
CORNERS = "look like corners [x1, y1, x2, y2]"


def _one_line(err: str, *parts: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def _usage_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return _one_line(capsys.readouterr().err)


def _as_corners(records: list[dict]) -> list[dict]:
    return [dict(r, bbox=[r["bbox"][0], r["bbox"][1], r["bbox"][0] + r["bbox"][2], r["bbox"][1] + r["bbox"][3]])
            for r in records]  # fmt: skip


def _read(path: Path):
    return json.load(gzip.open(path) if path.suffix == ".gz" else path.open())


# ---------------------------------------------------------------- corner pairs


@pytest.mark.parametrize("scanner", [False, True], ids=["general reader", "byte scanner"])
def test_corner_pair_results_warn_and_fail_with_strict(tmp_path, monkeypatch, capsys, scanner):
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0 if scanner else 1 << 62)
    path = tmp_path / "corners.json"
    path.write_text(json.dumps(_as_corners(json.loads(COCO_DT.read_text()))))
    assert main([str(path), str(COCO_GT), "--quiet", "--json", str(tmp_path / "a.json")]) == 0  # quiet: no warning
    assert main([str(path), str(COCO_GT)]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if CORNERS in line]
    assert len(warned) == 1 and "write [x1, y1, x2 - x1, y2 - y1]" in warned[0] and "--strict" in warned[0]
    assert main([str(path), str(COCO_GT), "--strict"]) == 2
    _one_line(capsys.readouterr().err, str(path), CORNERS)
    # scored as pycocotools scores it: the warning changes no number
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetevalWarning)
        plain = deteval.evaluate(str(path), str(COCO_GT))
    assert json.loads((tmp_path / "a.json").read_text())["stats"] == pytest.approx(plain.stats, abs=0, rel=0)


REAL = [
    ("coco_fake100/instances_val2014_fakebbox100_results.json", "coco_fake100/instances_val2014_100.json"),
    ("coco_fake100_nocrowd/sampled_bbox_results.json", "coco_fake100_nocrowd/sampled_gts_bbox_area.json"),
    ("keypoints1/dt_dataset.json", "keypoints1/gt_dataset.json"),
    ("polygons3/dt_dataset.json", "polygons3/gt_dataset.json"),
    ("voc100/coco_results_from_dets.json", "voc100/coco_gt_from_voc.json"),
    ("lvis100/dets_bbox.json.gz", "lvis100/lvis_val_100.json.gz"),
]


@pytest.mark.parametrize("dt, gt", REAL, ids=[d.split("/")[0] for d, _ in REAL])
def test_corner_pair_check_is_silent_on_real_results_and_fires_on_them_as_corners(dt, gt):
    data = _read(DATA_DIR / dt)
    records = data["annotations"] if isinstance(data, dict) else data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetevalWarning)  # the LVIS file's own notes
        gt_loaded = load_coco_gt(_read(DATA_DIR / gt))
    for recs, fires in ((records, False), (_as_corners(records), True)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            load_coco_results(recs, gt_loaded)
        assert any(CORNERS in str(w.message) for w in caught) == fires
        if fires:
            with pytest.raises(InputError, match=r"look like corners"):
                load_coco_results(recs, gt_loaded, strict=True)


def _gt(width: float, height: float, n_images: int = 1) -> dict:
    return {
        "images": [{"id": i, "width": width, "height": height} for i in range(n_images)],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [{"id": 1, "image_id": 0, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}],
    }


def _warned(boxes: list[list[float]], gt: dict) -> bool:
    recs = [{"image_id": 0, "category_id": 1, "bbox": b, "score": 0.5} for b in boxes]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_coco_results(recs, load_coco_gt(gt))
    return any(CORNERS in str(w.message) for w in caught)


def test_corner_pair_check_boundaries():
    gt = _gt(100, 100)
    corners = [[10, 10, 60, 60], [40, 40, 90, 95], [50, 5, 99, 40], [5, 50, 30, 99], [60, 60, 70, 70]]
    assert _warned(corners, gt)
    assert not _warned(corners[:4], gt)  # fewer than 5 boxes: too little evidence
    # one box with w < x: not corners (real boxes away from the top-left corner)
    assert not _warned([*corners, [80, 10, 5, 5]], gt)
    # all w >= x, h >= y, but inside the image (big boxes near the top-left corner): no warning
    assert not _warned([[0, 0, 50, 50], [1, 2, 60, 70], [3, 3, 90, 90], [10, 10, 80, 80], [0, 5, 99, 94]], gt)
    # reaching 5% + 1 pixel past is not past; a hair beyond is
    edge = [[10, 10, 96, 10]] * 5  # x + w = 106 = 100 * 1.05 + 1
    assert not _warned(edge, gt)
    assert _warned([[10, 10, 96.001, 10]] * 5, gt)
    # a quarter past is enough: 2 of 8 past, the others inside
    inside = [[1, 1, 5, 5]] * 6
    assert _warned([*inside, [10, 10, 96.001, 10], [10, 10, 96.001, 10]], gt)
    assert not _warned([*inside, [10, 10, 96.001, 10], [1, 1, 5, 5]], gt)
    # images of unknown size (no width/height) say nothing
    assert not _warned(corners, {**gt, "images": [{"id": 0}]})


# ---------------------------------------------------------------- swapped inputs


def test_swapped_coco_inputs(capsys, tmp_path):
    assert main([str(COCO_GT), str(COCO_DT)]) == 2
    _one_line(capsys.readouterr().err, str(COCO_DT), "did you swap PREDS and GT?")
    assert main([str(COCO_GT), str(COCO_GT)]) == 2  # a GT dict in the results' place
    _one_line(capsys.readouterr().err, str(COCO_GT), "is this ground truth? Did you swap PREDS and GT?")
    # LVIS ground truth has no iscrowd: its 'images' say it is a dataset
    lvis = tmp_path / "lvis.json"
    lvis.write_bytes(gzip.open(DATA_DIR / "lvis100" / "lvis_val_100.json.gz").read())
    assert main(["--protocol", "lvis", str(lvis), str(lvis)]) == 2
    _one_line(capsys.readouterr().err, "comes with 'images'", "Did you swap PREDS and GT?")


def test_swapped_voc_and_dota_inputs(capsys):
    voc = DATA_DIR / "voc100_native"
    assert main(["--protocol", "voc10", str(voc / "gt_xml"), str(voc / "dets_txt")]) == 2
    _one_line(capsys.readouterr().err, "VOC annotations (.xml, ground truth)", "did you swap PREDS and GT?")
    dota = DATA_DIR / "dota"
    assert main(["--protocol", "dota", str(dota / "gt"), str(dota / "dets")]) == 2
    _one_line(capsys.readouterr().err, "Task1_<class>.txt", "did you swap PREDS and GT?")


def test_swapped_openimages_and_yolo_inputs(capsys):
    oi = DATA_DIR / "openimages"
    boxes, dets, labels = (str(oi / f) for f in ("challenge_boxes.csv", "challenge_dets.csv", "challenge_labels.csv"))
    assert main(["--protocol", "openimages", boxes, dets, "--labels", labels]) == 2
    _one_line(capsys.readouterr().err, "challenge_dets.csv: line 1: missing column IsGroupOf",
              "it holds detections (a Score column): did you swap PREDS and GT?")  # fmt: skip
    yolo = DATA_DIR / "yolo_example"
    sizes = str(yolo / "sizes.json")
    assert main(["--protocol", "yolo", "--image-sizes", sizes, str(yolo / "labels"), str(yolo / "preds")]) == 2
    _one_line(capsys.readouterr().err, "6 fields; a label line is", "did you swap PREDS and GT?")


# ---------------------------------------------------------------- YOLO labels given to VOC


def _folder(root: Path, lines: dict[str, str]) -> Path:
    root.mkdir()
    for name, text in lines.items():
        (root / f"{name}.txt").write_text(text)
    return root


def test_yolo_label_folder_given_to_voc_is_refused(tmp_path, capsys):
    # YOLO: class cx cy w h [conf]; centres right of their widths read as x2 < x1
    gt = _folder(tmp_path / "gt", {"a": "0 0.5 0.5 0.2 0.3\n1 0.7 0.2 0.1 0.1\n", "b": "0 0.3 0.6 0.4 0.2\n"})
    dets = _folder(tmp_path / "dets", {"a": "0 0.5 0.5 0.2 0.3 0.9\n", "b": "1 0.3 0.6 0.4 0.2 0.8\n"})
    xml = DATA_DIR / "voc100_native" / "gt_xml"
    for argv, where in (([str(dets), str(gt)], gt), ([str(dets), str(xml)], dets)):
        assert main(["--protocol", "voc10", *argv]) == 2
        _one_line(capsys.readouterr().err, str(where), "looks like YOLO labels", "--protocol yolo")


def test_normalised_voc_corners_are_not_taken_for_yolo(tmp_path, capsys):
    gt = _folder(tmp_path / "gt", {"a": "0 0.1 0.1 0.3 0.4\n", "b": "1 0.5 0.5 0.9 0.9\n"})
    dets = _folder(tmp_path / "dets", {"a": "0 0.9 0.1 0.1 0.3 0.4\n", "b": "1 0.8 0.5 0.5 0.8 0.9\n"})
    assert main(["--protocol", "voc10", "--no-plus-one", str(dets), str(gt), "--quiet"]) == 0


# ---------------------------------------------------------------- iou types


def test_a_protocol_with_one_iou_type_uses_it(capsys):
    files = [str(DATA_DIR / "crowdpose" / f) for f in ("example_crowdpose_preds.json", "example_crowdpose_val.json")]
    assert main(["--protocol", "crowdpose", *files]) == 0
    implicit = capsys.readouterr().out
    assert main(["--protocol", "crowdpose", "--iou-type", "keypoints", *files]) == 0
    assert capsys.readouterr().out == implicit
    assert deteval.evaluate(*files, protocol="crowdpose").stats == deteval.evaluate(
        *files, protocol="crowdpose", iou_type="keypoints"
    ).stats


def test_iou_type_errors_name_the_flag_and_list_choices_as_text(capsys):
    line = _usage_error(["--sample", "--iou-type", "mask"], capsys)
    assert line == "deteval: error: --iou-type: protocol 'coco' evaluates bbox, segm, keypoints or obb, not 'mask'"
    line = _usage_error(["--protocol", "voc07", "--iou-type", "segm", "a", "b"], capsys)
    assert line == "deteval: error: --iou-type: protocol 'voc07' evaluates bbox, not 'segm'"
    with pytest.raises(InputError, match=r"evaluates bbox, segm, keypoints or obb, not 'mask'") as exc:
        deteval.evaluate(str(COCO_DT), str(COCO_GT), iou_type="mask")
    assert "(" not in str(exc.value)  # no Python tuple


def test_oriented_boxes_without_iou_type_obb_name_the_flag(capsys):
    assert main([str(DATA_DIR / "obb" / "dets.json"), str(DATA_DIR / "obb" / "gt.json")]) == 2
    _one_line(capsys.readouterr().err, "missing key 'bbox'", "--iou-type obb")
    assert main([str(DATA_DIR / "obb" / "dets.json"), str(DATA_DIR / "obb" / "gt.json"), "--iou-type", "obb"]) == 0


# ---------------------------------------------------------------- flags


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--jsn", "out.json", "a.json", "b.json"], "deteval: error: --jsn: unknown flag; did you mean --json?"),
        (["--sample", "--per-clas"], "deteval: error: --per-clas: unknown flag; did you mean --per-class?"),
        (["--sample", "--bootstrp=5"], "deteval: error: --bootstrp: unknown flag; did you mean --bootstrap?"),
        (["--sample", "--qqqqqqq"], "deteval: error: --qqqqqqq: unknown flag (deteval --help lists the flags)"),
        (["a", "b", "c"], "deteval: error: command line: unexpected argument 'c' (after PREDS 'a', GT 'b')"),
    ],
)
def test_unknown_flags_name_the_nearest_and_abbreviations_are_off(argv, expected, capsys):
    assert _usage_error(argv, capsys) == expected


def test_plot_given_a_file_says_it_takes_a_folder(capsys):
    line = _usage_error(["--plot", str(COCO_DT), str(COCO_GT)], capsys)
    assert "--plot takes a folder (--plot DIR)" in line


def test_compare_usage_errors_are_one_line(capsys):
    assert _usage_error(["compare", "a", "b"], capsys).startswith("deteval compare: error: ")
    line = _usage_error(["compare", "a", "b", "c", "--seeed", "3"], capsys)
    assert line == "deteval compare: error: --seeed: unknown flag; did you mean --seed?"
    line = _usage_error(["compare", "a", "b", "c", "--boot", "3"], capsys)  # no abbreviations
    assert "unknown flag" in line


def test_help_lists_compare(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "deteval compare PREDS_A PREDS_B GT" in out


def test_compare_takes_the_protocols_only_iou_type(tmp_path, capsys):
    files = [DATA_DIR / "crowdpose" / f for f in ("example_crowdpose_preds.json", "example_crowdpose_val.json")]
    b = shutil.copy(files[0], tmp_path / "b.json")
    assert main(["compare", str(files[0]), str(b), str(files[1]), "--protocol", "crowdpose", "--bootstrap", "3"]) == 0


# ---------------------------------------------------------------- table layouts


def test_per_class_shows_categories_with_ground_truth_or_detections(tmp_path, capsys):
    gt = tmp_path / "lvis.json"
    gt.write_bytes(gzip.open(DATA_DIR / "lvis100" / "lvis_val_100.json.gz").read())
    dt = tmp_path / "dets.json"
    dt.write_bytes(gzip.open(DATA_DIR / "lvis100" / "dets_bbox.json.gz").read())
    result = deteval.evaluate(str(dt), str(gt), protocol="lvis")
    present = {r["name"] for r in result.per_class if r["num_gt"] or r["num_det"]}
    assert 0 < len(present) < len(result.per_class)
    for extra, shown in (([], present), (["--all-classes"], {r["name"] for r in result.per_class})):
        assert main(["--protocol", "lvis", str(dt), str(gt), "--per-class", *extra]) == 0
        out = capsys.readouterr().out
        table = out[out.index("category_id") :].splitlines()
        rows = [line for line in table[2:] if not line.startswith("(")]
        assert {line.split()[1] for line in rows} == {n.split()[0] for n in shown}
        assert len(rows) == len(shown)
        hidden = len(result.per_class) - len(shown)
        assert (f"({hidden} categories with no ground truth and no detections not shown" in out) == bool(hidden)


def test_voc_integrator_columns_are_as_wide_as_their_headers(capsys):
    voc = DATA_DIR / "voc100_native"
    argv = ["--protocol", "voc10", str(voc / "dets_txt"), str(voc / "gt_xml"), "--names", str(voc / "voc.names")]
    assert main([*argv, "--integrator", "all_points,non_interpolated,voc11"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[1]
    for line in lines[2:]:
        if line.startswith("mAP ("):
            break
        assert len(line.rstrip()) == len(header), (header, line)
    assert header.split()[-2:] == ["AP50:non_interpolated", "AP50:voc11"]


def test_compare_per_class_block_has_a_header(tmp_path, capsys):
    records = json.loads(COCO_DT.read_text())
    for r in records[::3]:
        r["score"] *= 0.5
    b = tmp_path / "b.json"
    b.write_text(json.dumps(records))
    assert main(["compare", str(COCO_DT), str(b), str(COCO_GT), "--bootstrap", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Per-class AP delta"))
    assert lines[at + 1].split() == ["class", "AP", "A", "AP", "B", "delta"]
    assert len(lines[at + 1]) == len(lines[at + 2])

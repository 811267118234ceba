"""The openimages protocol: the reference's published cases (tensorflow/models research/object_detection
*_test.py, expected values as those tests assert them), the expansion, input handling and the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from support.openimages_reference import evaluate as reference
from support.openimages_reference import expand_boxes, expand_labels, hierarchy_parents

import deteval
from deteval.cli import main
from deteval.errors import DetevalWarning, InputError
from deteval.io.openimages import load_hierarchy, load_openimages_gt

DATA = Path(__file__).parents[2] / "data" / "openimages"
BOX_HEADER = (
    "ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepiction,IsInside"
)
DET_HEADER = "ImageID,LabelName,Score,XMin,XMax,YMin,YMax"


def challenge(**options):
    return deteval.evaluate(
        str(DATA / "challenge_dets.csv"),
        str(DATA / "challenge_boxes.csv"),
        protocol="openimages",
        labels=str(DATA / "challenge_labels.csv"),
        **options,
    )


def ap_by_name(result):
    return {row["name"]: row["AP"] for row in result.per_class}


# utils/object_detection_evaluation_test.py, OpenImagesChallengeEvaluatorTest.
# test_returns_correct_detection_metric_values (group_of_weight=0.5; assertAlmostEqual, 7 places)
PUBLISHED_HALF = {"dog": 0.3333333333, "elephant": 0.333333333333, "cat": 0.142857142857}
PUBLISHED_HALF_MAP = 0.269841269
# the same case at the challenge's default weight 1.0 (issue 18's figures, which the reference in tests gives)
WEIGHT_ONE = {"cat": 0.125, "dog": 1 / 3, "elephant": 0.5}
WEIGHT_ONE_MAP = 0.3194444444444444


def _fixture_rows():
    """challenge_*.csv as the reference's rows."""
    boxes = [(r[0], r[2], *map(float, r[4:8]), int(r[10])) for r in _rows(DATA / "challenge_boxes.csv")]
    labels = [(r[0], r[2], int(r[3])) for r in _rows(DATA / "challenge_labels.csv")]
    dets = [(r[0], r[1], *map(float, r[2:7])) for r in _rows(DATA / "challenge_dets.csv")]
    return boxes, labels, dets


def _rows(path: Path) -> list[list[str]]:
    return [line.split(",") for line in path.read_text().splitlines()[1:] if line]


def test_published_challenge_case_at_weight_half():
    res = challenge(group_of_weight=0.5)
    for name, want in PUBLISHED_HALF.items():
        assert ap_by_name(res)[name] == pytest.approx(want, abs=5e-8)
    assert res.stats["mAP"] == pytest.approx(PUBLISHED_HALF_MAP, abs=5e-8)
    want, want_map = reference(*_fixture_rows(), group_of_weight=0.5)  # the reference in tests agrees
    assert ap_by_name(res) == pytest.approx(want, abs=1e-12) and res.stats["mAP"] == pytest.approx(want_map, abs=1e-12)


def test_challenge_case_at_weight_one():
    res = challenge()
    assert ap_by_name(res) == pytest.approx(WEIGHT_ONE, abs=1e-15)
    assert res.stats["mAP"] == pytest.approx(WEIGHT_ONE_MAP, abs=1e-15)
    want, want_map = reference(*_fixture_rows(), group_of_weight=1.0)
    assert want == pytest.approx(WEIGHT_ONE, abs=1e-15) and want_map == pytest.approx(WEIGHT_ONE_MAP, abs=1e-15)
    rows = {r["name"]: r for r in res.per_class}
    assert (rows["cat"]["num_gt"], rows["cat"]["num_group_of"]) == (4, 1)
    assert rows["dog"]["num_det"] == 3  # img2's dog is not verified there: not evaluated


def test_published_open_images_v2_case_at_weight_zero(tmp_path):
    """OpenImagesV2EvaluationTest.test_returns_correct_metric_values: weight 0 (group-of boxes ignored), every
    class of an image's boxes evaluated; expected dog 0, elephant 0, cat 0.16666666, mAP 0.05555555."""
    boxes = [
        ("img1", "cat", 0, 1, 0, 1, 0),
        ("img1", "elephant", 0, 2, 0, 2, 0),
        ("img1", "cat", 0, 3, 0, 3, 0),
        ("img2", "cat", 10, 11, 10, 11, 0),
        ("img2", "cat", 500, 510, 500, 510, 1),
        ("img2", "elephant", 10, 12, 10, 12, 0),
        ("img3", "dog", 0, 1, 0, 1, 0),
    ]
    dets = [
        ("img2", "cat", 0.7, 10, 11, 10, 11),
        ("img2", "cat", 0.8, 100, 120, 100, 120),
        ("img2", "elephant", 0.9, 100, 220, 100, 220),
    ]
    b, d = tmp_path / "b.csv", tmp_path / "d.csv"
    b.write_text(
        "\n".join([BOX_HEADER] + [f"{r[0]},x,{r[1]},1,{r[2]},{r[3]},{r[4]},{r[5]},0,0,{r[6]},0,0" for r in boxes])
    )
    d.write_text("\n".join([DET_HEADER] + [",".join(map(str, r)) for r in dets]))
    res = deteval.evaluate(str(d), str(b), protocol="openimages", group_of_weight=0.0)
    got = ap_by_name(res)
    assert got["dog"] == 0 and got["elephant"] == 0 and got["cat"] == pytest.approx(0.16666666, abs=5e-8)
    assert res.stats["mAP"] == pytest.approx(0.05555555, abs=5e-8)
    want, want_map = reference(boxes, [], dets, group_of_weight=0.0)
    assert got == pytest.approx(want, abs=1e-12) and res.stats["mAP"] == pytest.approx(want_map, abs=1e-12)


def _pairs(gt) -> tuple[list, list]:
    k = len(gt.categories)
    boxes = sorted(
        (str(gt.images.ids[i]), str(gt.categories.ids[c]), *map(float, b))
        for i, c, b in zip(gt.image, gt.category, gt.boxes)
    )
    labels = sorted((str(gt.images.ids[v // k]), str(gt.categories.ids[v % k])) for v in gt.verified)
    return boxes, labels


def test_published_hierarchy_expansion():
    """dataset_tools/oid_hierarchical_labels_expansion_test.py, test_bbox_expansion and test_labels_expansion:
    the expanded rows as those tests list them (d sits under c and under f, f under c and under the root)."""
    gt = load_openimages_gt(
        DATA / "expansion_boxes.csv", DATA / "expansion_labels.csv", DATA / "expansion_hierarchy.json"
    )
    boxes, labels = _pairs(gt)
    assert boxes == sorted(
        [
            ("123", "b", 0.1, 0.1, 0.2, 0.2),
            ("123", "d", 0.2, 0.1, 0.3, 0.2),
            ("123", "f", 0.2, 0.1, 0.3, 0.2),
            ("123", "c", 0.2, 0.1, 0.3, 0.2),
        ]
    )
    published = [
        "123,verification,b,0",
        "123,verification,c,0",
        "123,verification,d,0",
        "123,verification,f,0",
        "123,verification,e,0",
        "124,verification,d,1",
        "124,verification,f,1",
        "124,verification,c,1",
    ]
    assert labels == sorted((r.split(",")[0], r.split(",")[2]) for r in published)
    assert "a" not in gt.categories.ids.tolist()  # the root is no class
    # the reference in tests expands the same way
    h = json.loads((DATA / "expansion_hierarchy.json").read_text())
    parents = hierarchy_parents(h)
    assert sorted(r[:3] for r in expand_labels([("123", "b", 0), ("123", "c", 0), ("124", "d", 1)], parents)) == sorted(
        (r.split(",")[0], r.split(",")[2], int(r.split(",")[3])) for r in published
    )
    assert sorted(r[1] for r in expand_boxes([("123", "d", 0.2, 0.3, 0.1, 0.2, 0)], parents)) == ["c", "d", "f"]
    unexpanded = load_openimages_gt(
        DATA / "expansion_boxes.csv", DATA / "expansion_labels.csv", DATA / "expansion_hierarchy.json", expand=False
    )
    assert len(unexpanded) == 2 and len(unexpanded.verified) == 3


def test_part_edges_are_not_expanded():
    h = load_hierarchy(
        {
            "LabelName": "r",
            "Subcategory": [{"LabelName": "car", "Part": [{"LabelName": "wheel"}]}, {"LabelName": "wheel"}],
        }
    )
    assert h.names.tolist() == ["car", "wheel"] and len(h.ancestors) == 0


def _write(tmp_path: Path, boxes: str, dets: str, labels: str | None = None) -> tuple[str, str, dict]:
    (tmp_path / "b.csv").write_text(boxes)
    (tmp_path / "d.csv").write_text(dets)
    opts = {}
    if labels is not None:
        (tmp_path / "l.csv").write_text(labels)
        opts["labels"] = str(tmp_path / "l.csv")
    return str(tmp_path / "d.csv"), str(tmp_path / "b.csv"), opts


GOOD_BOX = f"{BOX_HEADER}\nimg1,x,/m/a,1,0,0.5,0,0.5,0,0,0,0,0\n"


def test_dropped_detections_are_counted_in_one_warning(tmp_path):
    dets = (
        f"{DET_HEADER}\nimg1,/m/a,0.9,0,0.5,0,0.5\nimg1,/m/a,0.8,0.5,0.2,0,0.5\n"
        "nowhere,/m/a,0.7,0,0.5,0,0.5\nimg1,/m/zzz,0.6,0,0.5,0,0.5\n"
    )
    d, b, opts = _write(tmp_path, GOOD_BOX, dets)
    with pytest.warns(DetevalWarning, match=r"3 detections dropped.*1 on images.*1 of labels.*1 with XMin >= XMax"):
        res = deteval.evaluate(d, b, protocol="openimages", **opts)
    assert res.stats["mAP"] == 1.0 and res.per_class[0]["num_det"] == 1


@pytest.mark.parametrize(
    ("boxes", "dets", "where", "rule"),
    [
        (GOOD_BOX.replace(",IsGroupOf", ",Group"), DET_HEADER + "\n", "b.csv: line 1", "missing column IsGroupOf"),
        (GOOD_BOX, "ImageID,LabelName,XMin,XMax,YMin,YMax\n", "d.csv: line 1", "missing column Score"),
        (GOOD_BOX, f"{DET_HEADER}\nimg1,/m/a,high,0,1,0,1\n", "d.csv: line 2", "Score must be a number, got 'high'"),
        (
            GOOD_BOX + "img1,x,/m/a,1,0,zero,0,1,0,0,0,0,0\n",
            DET_HEADER + "\n",
            "b.csv: line 3",
            "XMax must be a number",
        ),
        (GOOD_BOX, f"{DET_HEADER}\nimg1,/m/a,nan,0,1,0,1\n", "d.csv: line 2", "Score must be a finite number"),
        (GOOD_BOX + "img1,x,/m/a,1,0,1\n", DET_HEADER + "\n", "b.csv: line 3", "wrong number of fields: 6"),
        (GOOD_BOX + "img1,x,/m/a,1,0,1,0,1,0,0,2,0,0\n", DET_HEADER, "b.csv: line 3", "IsGroupOf must be 0 or 1"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path, boxes, dets, where, rule):
    d, b, opts = _write(tmp_path, boxes, dets)
    with pytest.raises(InputError, match=rule) as info:
        deteval.evaluate(d, b, protocol="openimages", **opts)
    assert where in str(info.value)


def test_ground_truth_label_outside_the_hierarchy_is_an_error(tmp_path):
    (tmp_path / "h.json").write_text(json.dumps({"LabelName": "r", "Subcategory": [{"LabelName": "/m/a"}]}))
    d, b, opts = _write(tmp_path, GOOD_BOX, DET_HEADER + "\n", "ImageID,Source,LabelName,Confidence\nimg1,v,/m/b,1\n")
    with pytest.raises(InputError, match=r"l.csv: line 2: LabelName '/m/b' of a label row is not a class"):
        deteval.evaluate(d, b, protocol="openimages", hierarchy=str(tmp_path / "h.json"), **opts)


@pytest.mark.parametrize(
    ("hierarchy", "where"),
    [
        ({"Subcategory": []}, "root"),
        ({"LabelName": "r", "Subcategory": [{"LabelName": "a"}, {"Name": "b"}]}, "root.Subcategory[1]"),
        ({"LabelName": "r", "Subcategory": {"LabelName": "a"}}, "root"),
        ({"LabelName": "r"}, "root"),
    ],
)
def test_malformed_hierarchy(tmp_path, hierarchy, where):
    (tmp_path / "h.json").write_text(json.dumps(hierarchy))
    with pytest.raises(InputError, match=re.escape(f"h.json: {where}: ")):
        load_hierarchy(tmp_path / "h.json")


def test_hierarchy_that_is_not_json(tmp_path):
    (tmp_path / "h.json").write_text("{")
    with pytest.raises(InputError, match="h.json: malformed JSON"):
        load_hierarchy(tmp_path / "h.json")


def test_ties_rank_stably(tmp_path):
    """Tied scores: the reference's order is undefined; deteval's matching takes them in input order."""
    dets = f"{DET_HEADER}\nimg1,/m/a,0.5,0,0.5,0,0.5\nimg1,/m/a,0.5,0.5,1,0.5,1\n"
    d, b, opts = _write(tmp_path, GOOD_BOX, dets)
    assert deteval.evaluate(d, b, protocol="openimages").stats["mAP"] == 1.0
    d, b, opts = _write(tmp_path, GOOD_BOX, f"{DET_HEADER}\n" + "\n".join(dets.splitlines()[1:][::-1]))
    assert deteval.evaluate(d, b, protocol="openimages").stats["mAP"] == 0.5


def test_cli_json(tmp_path, capsys):
    out = tmp_path / "out.json"
    argv = [
        "--protocol",
        "openimages",
        "--json",
        str(out),
        str(DATA / "challenge_dets.csv"),
        str(DATA / "challenge_boxes.csv"),
        "--labels",
        str(DATA / "challenge_labels.csv"),
        "--per-class",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    res = json.loads(out.read_text())
    assert res["stats"]["mAP"] == pytest.approx(WEIGHT_ONE_MAP, abs=1e-15)
    assert {r["name"]: r["AP"] for r in res["per_class"]} == pytest.approx(WEIGHT_ONE, abs=1e-15)
    assert set(res["per_class"][0]) >= {"name", "display_name", "AP", "num_gt", "num_det"}
    assert "mAP = 0.3194" in capsys.readouterr().out
    assert main([*argv[:-1], "--group-of-weight", "0.5", "--quiet"]) == 0
    assert json.loads(out.read_text())["stats"]["mAP"] == pytest.approx(PUBLISHED_HALF_MAP, abs=5e-8)


def test_cli_hierarchy_class_names_and_no_expand(tmp_path, capsys):
    (tmp_path / "names.csv").write_text("b,Bee\nd,Dee\n")
    out = tmp_path / "out.json"
    base = [
        "--protocol",
        "openimages",
        "--quiet",
        "--json",
        str(out),
        str(DATA / "expansion_dets.csv"),
        str(DATA / "expansion_boxes.csv"),
        "--labels",
        str(DATA / "expansion_labels.csv"),
        "--hierarchy",
        str(DATA / "expansion_hierarchy.json"),
        "--class-names",
        str(tmp_path / "names.csv"),
    ]
    assert main(base) == 0, capsys.readouterr().err
    rows = {r["name"]: r for r in json.loads(out.read_text())["per_class"]}
    assert rows["b"]["display_name"] == "Bee" and rows["c"]["display_name"] == "c"
    assert (rows["c"]["num_gt"], rows["f"]["num_gt"]) == (1, 1)  # copies of the d box
    assert main([*base, "--no-expand"]) == 0, capsys.readouterr().err
    rows = {r["name"]: r for r in json.loads(out.read_text())["per_class"]}
    assert rows["c"]["num_gt"] == 0 and rows["c"]["AP"] is None


def test_cli_error_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "d.csv"
    bad.write_text(f"{DET_HEADER}\nimg1,cat,x,0,1,0,1\n")
    assert main(["--protocol", "openimages", str(bad), str(DATA / "challenge_boxes.csv")]) == 2
    assert "d.csv: line 2: Score must be a number" in capsys.readouterr().err


def test_positives_count_normal_and_group_of_boxes():
    res = challenge()
    assert np.isfinite(res.ap).all() and res.npos.tolist() == [4.0, 1.0, 2.0]


def test_nms_step_drops_scores_at_or_below_minus_ten_and_keeps_max_dets(tmp_path):
    """np_box_list_ops.non_max_suppression (IoU 1.0, score_threshold -10, nms_max_output_boxes): a score <= -10 is
    dropped; past max_dets per image and class (10000; 1 here through a preset) the lowest are dropped."""
    dets = f"{DET_HEADER}\nimg1,/m/a,-9.5,0.6,1,0.6,1\nimg1,/m/a,-10,0,0.5,0,0.5\nimg1,/m/a,-10.5,0.5,1,0.5,1\n"
    d, b, _ = _write(tmp_path, GOOD_BOX, dets)
    res = deteval.evaluate(d, b, protocol="openimages")
    assert res.stats["mAP"] == 0.0 and res.per_class[0]["num_det"] == 1  # only the FP at -9.5 is ranked
    dets = f"{DET_HEADER}\nimg1,/m/a,0.9,0.6,1,0.6,1\nimg1,/m/a,0.8,0,0.5,0,0.5\n"
    d, b, _ = _write(tmp_path, GOOD_BOX, dets)
    assert deteval.evaluate(d, b, protocol="openimages").stats["mAP"] == 0.5
    assert deteval.evaluate(d, b, protocol="openimages", config={"max_dets": 1}).stats["mAP"] == 0.0


def test_group_of_box_absorbing_only_non_positive_scores_counts_nothing(tmp_path):
    """compute_match_ioa keeps max(0, scores): a group-of box whose detections all score <= 0 yields no TP,
    and those detections are not FPs either (absorbed)."""
    boxes = f"{BOX_HEADER}\nimg1,x,/m/a,1,0,1,0,1,0,0,1,0,0\n"
    d, b, _ = _write(tmp_path, boxes, f"{DET_HEADER}\nimg1,/m/a,-0.5,0,0.5,0,0.5\nimg1,/m/a,0,0.5,1,0.5,1\n")
    res = deteval.evaluate(d, b, protocol="openimages")
    assert res.stats["mAP"] == 0.0 and res.per_class[0]["num_det"] == 2
    d, b, _ = _write(tmp_path, boxes, f"{DET_HEADER}\nimg1,/m/a,0.1,0,0.5,0,0.5\nimg1,/m/a,0.7,0.5,1,0.5,1\n")
    assert deteval.evaluate(d, b, protocol="openimages").stats["mAP"] == 1.0


def test_a_label_confidence_other_than_0_or_1_is_refused(tmp_path):
    labels = "ImageID,Source,LabelName,Confidence\nimg1,x,/m/a,1\nimg1,x,/m/b,0.5\n"
    d, b, opts = _write(tmp_path, GOOD_BOX, DET_HEADER + "\n", labels)
    with pytest.raises(InputError, match=r"l\.csv: line 3: Confidence must be 0 or 1, got 0\.5"):
        deteval.evaluate(d, b, protocol="openimages", **opts)

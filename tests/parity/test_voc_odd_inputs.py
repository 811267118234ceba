"""The input voc_eval.py scores though deteval would rather not, scored as voc_eval.py scores it.

Generated VOC datasets (Annotations XML and comp4 files, written out) hold what such files hold in the
wild: inverted detection boxes (``x2 < x1`` or ``y2 < y1``: clipped or degenerate output), boxes of
zero width under the +1 rule (``x2 = x1 - 1``), boxes inverted so that their +1 area is the negative
of a ground truth's (numpy's ``0 / 0``: a NaN overlap, which makes the detection an FP whatever else
it overlaps; a ground truth's inverted "negative twin" does that to the detections equal to it), boxes
outside the image and negative coordinates, scores outside [0, 1] on a coarse grid (heavy ties),
``nan`` and ``inf`` scores and coordinates (voc_eval.py's ``float`` reads them), duplicate lines; on
the ground-truth side inverted and zero-size objects, duplicate objects and ``<difficult>`` values
other than 0 and 1. Per class, deteval's AP equals that of the literal voc_eval.py oracle
(:mod:`support.voc_eval_literal`) with ``==``, under both metrics and at two IoU thresholds, with the
stable order (``ties="item"``) on both sides. The warnings (one per oddity, the count and the first
file and line) and ``--strict`` are checked through the CLI.
"""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA_DIR
from support.voc_eval_literal import parse_rec, voc_eval

import deteval
from deteval.cli import COMPILE_NOTICE, main
from deteval.errors import DetevalWarning

CLASSES = ("cat", "dog", "bird")
SCORES = ("0.500000", "0.900000", "1.000000", "-0.250000", "1.500000", "0.000000", "17.000000", "-3.000000")


def _err_lines(capsys) -> list[str]:
    """stderr's lines but the notice a cold kernel cache prints once (a fresh CI venv compiles here)."""
    return [line for line in capsys.readouterr().err.strip().splitlines() if line != COMPILE_NOTICE]


def _xml(objects: list[tuple[str, list[int], str | None]]) -> str:
    parts = ["<annotation>", "  <size><width>100</width><height>80</height></size>"]
    for name, (x1, y1, x2, y2), difficult in objects:
        parts.append(f"  <object>\n    <name>{name}</name>")
        if difficult is not None:
            parts.append(f"    <difficult>{difficult}</difficult>")
        parts.append(f"    <bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox>")
        parts.append("  </object>")
    parts.append("</annotation>")
    return "\n".join(parts) + "\n"


def _gt_box(rng: random.Random) -> list[int]:
    x1, y1 = rng.randint(-5, 90), rng.randint(-5, 70)
    kind = rng.random()
    if kind < 0.1:  # inverted
        return [x1, y1, x1 - rng.randint(1, 6), y1 + rng.randint(0, 10)]
    if kind < 0.15:  # zero width under +1
        return [x1, y1, x1 - 1, y1 + rng.randint(0, 10)]
    if kind < 0.2:  # one pixel
        return [x1, y1, x1, y1]
    return [x1, y1, x1 + rng.randint(1, 40), y1 + rng.randint(1, 40)]


def _det_box(rng: random.Random, g: list[int] | None) -> list[float]:
    kind = rng.random()
    if g is None or kind < 0.15:  # anywhere, out of the image included
        x1, y1 = rng.uniform(-20, 120), rng.uniform(-20, 100)
        return [x1, y1, x1 + rng.uniform(-10, 60), y1 + rng.uniform(-10, 60)]
    x1, y1, x2, y2 = g
    if kind < 0.3:  # +1 area the negative of the ground truth's: uni = 0 and inters = 0, a NaN overlap
        return [x1, y1, x1 - (x2 - x1) - 2, y2]
    if kind < 0.4:  # inverted in both axes: a positive +1 area, no intersection
        return [x2 + 3, y2 + 2, x1, y1]
    if kind < 0.45:  # zero width under +1
        return [x1, y1, x1 - 1, y2]
    if kind < 0.65:
        return [float(v) for v in g]  # the ground truth's box
    j = lambda: rng.choice([0, 0, 0.5, -0.5, 1, -1, 2, -3])  # noqa: E731
    return [x1 + j(), y1 + j(), x2 + j(), y2 + j()]


def make_dataset(root: Path, seed: int) -> list[str]:
    """``root/ann/<image>.xml`` and ``root/dets/comp4_det_test_<class>.txt``; returns the image names."""
    rng = random.Random(seed)
    (root / "ann").mkdir(parents=True)
    (root / "dets").mkdir()
    names = [f"{i:06d}" for i in rng.sample(range(1, 999), rng.randint(3, 9))]
    lines: dict[str, list[str]] = {c: [] for c in CLASSES}
    # what voc_eval.py's float() reads besides numbers: NaN scores (ranked last) or -inf ones, not both
    specials = rng.choice([(), ("nan", "inf"), ("-inf", "inf")])
    for name in names:
        objects = []
        for _ in range(rng.randint(0, 5)):
            obj = (rng.choice(CLASSES), _gt_box(rng), rng.choice(["0", "0", "0", "1", "2", None]))
            objects.append(obj)
            if rng.random() < 0.1:
                objects.append(obj)  # a duplicate object
            x1, y1, x2, y2 = obj[1]
            if rng.random() < 0.2 and x2 >= x1 and y2 >= y1:
                # its negative twin: +1 area -(w+1)(h+1), so a detection equal to it has a NaN overlap with
                # the twin (uni = 0, inters = 0), which makes it an FP (np.max is NaN) instead of a TP
                objects.append((obj[0], [x1, y1, x1 - (x2 - x1) - 2, y2], rng.choice(["0", "1"])))
        # voc_eval.py's parse_rec needs a <difficult>; deteval reads a missing one as 0
        objects = [(c, b, "0" if d is None else d) for c, b, d in objects]
        (root / "ann" / f"{name}.xml").write_text(_xml(objects))
        for _ in range(rng.randint(0, 8)):
            cls, g = rng.choice(CLASSES), None
            if objects and rng.random() < 0.75:
                cls, g, _ = rng.choice(objects)
                cls = cls if rng.random() < 0.9 else rng.choice(CLASSES)
            score = rng.choice(SCORES) if rng.random() < 0.7 else f"{rng.uniform(-2, 2):.6f}"
            box = [f"{v:.1f}" for v in _det_box(rng, g)]
            if specials and rng.random() < 0.15:
                score = rng.choice(specials)
            if specials and rng.random() < 0.05:
                box[rng.randrange(4)] = rng.choice(["nan", "inf", "-inf"])
            box = " ".join(box)
            line = f"{name} {score} {box}"
            lines[cls].append(line)
            if rng.random() < 0.1:
                lines[cls].append(line)  # a duplicate line
    for cls in CLASSES:  # voc_eval.py crashes on an empty comp4 file: one line at least
        if not lines[cls]:
            lines[cls].append(f"{names[0]} 0.100000 1.0 1.0 5.0 5.0")
        (root / "dets" / f"comp4_det_test_{cls}.txt").write_text("\n".join(lines[cls]) + "\n")
    return names


def test_the_oracle_reproduces_stored_voc_eval_output():
    """The oracle itself: on voc100 (comp4 files, Annotations XML), its per-class AP equals what voc_eval.py
    gave (tests/data/voc100_native/reference), ``==`` for all 20 classes, both metrics, IoU 0.5 and 0.75."""
    voc = DATA_DIR / "voc100_native"
    ref = json.loads((voc / "reference" / "voc_eval_reference.json").read_text())
    names = (voc / "reference" / "imageset.txt").read_text().split()
    for key, thr, use_07 in (("iou0.5_voc07_11pt", 0.5, True), ("iou0.5_voc10_allpt", 0.5, False),
                             ("iou0.75_voc07_11pt", 0.75, True), ("iou0.75_voc10_allpt", 0.75, False)):  # fmt: skip
        for cls, want in ref[key]["per_class_AP"].items():
            f = voc / "reference" / "comp4_det_files" / f"comp4_det_test_{cls}.txt"
            assert voc_eval(f, voc / "gt_xml", names, cls, thr, use_07) == want, (key, cls)


@pytest.mark.parametrize("seed", range(40))
def test_generated_odd_inputs_equal_voc_eval(tmp_path, seed):
    names = make_dataset(tmp_path, seed)
    for protocol, use_07 in (("voc07", True), ("voc10", False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DetevalWarning)
            res = deteval.evaluate(
                tmp_path / "dets", tmp_path / "ann", protocol=protocol, iou_thrs=[0.5, 0.7], ties="item"
            )
        rows = {r["name"]: r for r in res.per_class}
        for cls in CLASSES:
            for thr in (0.5, 0.7):
                want = voc_eval(
                    tmp_path / "dets" / f"comp4_det_test_{cls}.txt", tmp_path / "ann", names, cls, thr, use_07
                )
                got = rows[cls][f"AP{round(thr * 100)}"]
                if rows[cls]["npos"] == 0:
                    assert got is None  # voc_eval.py divides by npos = 0; deteval leaves the class out
                else:
                    assert got == want, (seed, protocol, cls, thr, got, want)


def test_the_generator_reaches_the_odd_cases(tmp_path):
    """The generated data holds every case the module names, NaN overlaps (numpy's 0 / 0) included."""
    keys = ("nan_overlap", "inverted_dt", "inverted_gt", "difficult_2", "outside", "score_out", "nonfinite")
    seen = dict.fromkeys(keys, 0)
    for seed in range(40):
        root = tmp_path / str(seed)
        names = make_dataset(root, seed)
        recs = {n: parse_rec(root / "ann" / f"{n}.xml") for n in names}
        for obj in (o for objs in recs.values() for o in objs):
            x1, y1, x2, y2 = obj["bbox"]
            seen["inverted_gt"] += x2 < x1 or y2 < y1
            seen["difficult_2"] += obj["difficult"] == 2
        for f in (root / "dets").iterdir():
            cls = f.stem.split("_")[-1]
            for line in f.read_text().splitlines():
                im, s, *b = line.split(" ")
                bb = np.array(b, float)
                x1, y1, x2, y2 = bb
                seen["inverted_dt"] += x2 < x1 or y2 < y1
                seen["outside"] += min(x1, y1) < 0 or x2 > 100
                seen["score_out"] += not 0 <= float(s) <= 1
                seen["nonfinite"] += not np.isfinite([float(s), *bb]).all()
                g = np.array([o["bbox"] for o in recs[im] if o["name"] == cls], float).reshape(-1, 4)
                with np.errstate(all="ignore"):
                    iw = np.maximum(np.minimum(g[:, 2], bb[2]) - np.maximum(g[:, 0], bb[0]) + 1.0, 0.0)
                    ih = np.maximum(np.minimum(g[:, 3], bb[3]) - np.maximum(g[:, 1], bb[1]) + 1.0, 0.0)
                    inters = iw * ih
                    uni = (bb[2] - bb[0] + 1) * (bb[3] - bb[1] + 1) + (g[:, 2] - g[:, 0] + 1) * (g[:, 3] - g[:, 1] + 1)
                    zero = (uni - inters == 0) & (inters == 0) & np.isfinite(bb).all()
                seen["nan_overlap"] += bool(zero.any())
    assert all(v > 0 for v in seen.values()), seen


# --------------------------------------------------------------------------------------
# warnings and --strict, through the CLI

GT_XML = _xml([("dog", [10, 10, 50, 50], "0"), ("dog", [60, 10, 55, 30], "2"), ("cat", [1, 1, 20, 20], "0")])


@pytest.fixture
def odd_pair(tmp_path):
    ann = tmp_path / "ann"
    ann.mkdir()
    (ann / "im1.xml").write_text(GT_XML)
    (ann / "im2.xml").write_text(_xml([("cat", [5, 5, 30, 30], "0")]))
    dets = tmp_path / "dets"
    dets.mkdir()
    (dets / "comp4_det_test_cat.txt").write_text("im1 0.9 1 1 20 20\nim2 1.7 30 5 5 30\nim2 -0.5 5 5 30 30\n")
    (dets / "comp4_det_test_dog.txt").write_text("im1 0.8 10 10 50 50\nim1 0.8 10 10 50 50\nim1 0.7 50 10 8 50\n")
    return dets, ann


def test_warnings_name_the_count_and_first_file_and_line(odd_pair, capsys):
    dets, ann = odd_pair
    assert main(["--protocol", "voc10", str(dets), str(ann)]) == 0
    err = _err_lines(capsys)
    assert len(err) == 3 and all(m.startswith("deteval: warning: ") for m in err), err
    messages = [m[len("deteval: warning: ") :] for m in err]
    dt, gt_box, gt_diff = (
        next(m for m in messages if "detections" in m),
        next(m for m in messages if "ground-truth objects" in m and "x2 < x1" in m),
        next(m for m in messages if "<difficult>" in m),
    )
    cat = str(dets / "comp4_det_test_cat.txt")
    assert dt.startswith(f"{cat}: 2 detections in {dets} (2 files) have a box with x2 < x1 or y2 < y1;")
    assert dt.endswith("first: line 2: box has x2 < x1 or y2 < y1, got [30.0, 5.0, 5.0, 30.0]")
    assert gt_box.startswith(f"{ann / 'im1.xml'}: 1 ground-truth objects in {ann} have a box with x2 < x1")
    assert "first: line " in gt_box and "(object 1): box has x2 < x1 or y2 < y1, got [60.0, 10.0, 55.0, 30.0]" in gt_box
    assert gt_diff.startswith(f"{ann / 'im1.xml'}: 1 ground-truth objects in {ann} have a <difficult> other than 0")
    assert gt_diff.endswith("(object 1): <difficult> is '2', not 0 or 1")


def test_the_python_api_warns_once_per_oddity(odd_pair):
    dets, ann = odd_pair
    with pytest.warns(DetevalWarning) as caught:
        deteval.evaluate(dets, ann, protocol="voc07")
    assert len([w for w in caught if issubclass(w.category, DetevalWarning)]) == 3


def test_strict_refuses_in_one_line(odd_pair, capsys):
    dets, ann = odd_pair
    assert main(["--protocol", "voc07", "--strict", str(dets), str(ann)]) == 2
    err = _err_lines(capsys)
    assert len(err) == 1, err
    # the ground truth is read first: its first inverted object
    assert f"{ann / 'im1.xml'}: line " in err[0] and "box has x2 < x1 or y2 < y1" in err[0]


def test_strict_detections(tmp_path, capsys):
    ann = tmp_path / "ann"
    ann.mkdir()
    (ann / "im1.xml").write_text(_xml([("cat", [1, 1, 20, 20], "0")]))
    dets = tmp_path / "dets"
    dets.mkdir()
    f = dets / "comp4_det_test_cat.txt"
    f.write_text("im1 0.9 1 1 20 20\nim1 0.5 20 1 1 20\n")
    assert main(["--protocol", "voc10", "--strict", str(dets), str(ann)]) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and f"{f}: line 2: box has x2 < x1 or y2 < y1, got [20.0, 1.0, 1.0, 20.0]" in err[0], err
    with pytest.raises(deteval.InputError, match="line 2: box has x2 < x1"):
        deteval.evaluate(dets, ann, protocol="voc10", strict=True)


def test_a_detection_on_an_image_outside_the_set_is_one_line(tmp_path, capsys):
    """voc_eval.py's ``class_recs[image_ids[d]]`` raises KeyError there: deteval names the file and line."""
    ann = tmp_path / "ann"
    ann.mkdir()
    (ann / "im1.xml").write_text(_xml([("cat", [1, 1, 20, 20], "0")]))
    dets = tmp_path / "dets"
    dets.mkdir()
    f = dets / "comp4_det_test_cat.txt"
    f.write_text("im1 0.9 1 1 20 20\nim9 0.5 1 1 20 20\n")
    with pytest.raises(KeyError):
        voc_eval(f, ann, ["im1"], "cat")
    assert main(["--protocol", "voc10", str(dets), str(ann)]) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and f"{f}: line 2: image 'im9' is not an image of the ground truth" in err[0], err


def test_nan_and_negative_overlaps_are_numpy_s():
    """A detection whose +1 area is the negative of a ground truth's has a NaN overlap with it (numpy's
    0 / 0); a union that goes negative gives -0.0; both as voc_eval.py's numpy expressions give them."""
    from deteval.geometry.pixel_boxes import iou_matrix

    g = np.array([[0.0, 0.0, 4.0, 2.0], [10.0, 0.0, 20.0, 2.0], [0.0, 0.0, 1.0, 1.0]])
    d = np.array([[10.0, 0.0, 4.0, 2.0]])  # w+1 = -5, h+1 = 3: +1 area -15, the first ground truth's 15
    iou = iou_matrix(d, g)
    assert np.isnan(iou[0, 0]) and iou[0, 1] == 0.0
    assert iou[0, 2] == 0.0 and np.signbit(iou[0, 2])  # union -15 + 4 = -11: 0 / -11


def test_non_finite_numbers_warn_once_per_kind(tmp_path, capsys):
    ann = tmp_path / "ann"
    ann.mkdir()
    (ann / "im1.xml").write_text(_xml([("cat", [1, 1, 20, 20], "0")]))
    dets = tmp_path / "dets"
    dets.mkdir()
    f = dets / "comp4_det_test_cat.txt"
    f.write_text("im1 nan 1 1 20 20\nim1 0.5 1 1 20 inf\nim1 inf 1 1 20 20\nim1 nan 1 1 20 20\n")
    assert main(["--protocol", "voc10", str(dets), str(ann)]) == 0
    err = [m[len("deteval: warning: ") :] for m in _err_lines(capsys)]
    assert len(err) == 3, err
    assert f"{f}: 1 detections in {dets} have a NaN or infinite coordinate;" in err[0]
    assert err[0].endswith("first: line 2: box is not finite: [1.0, 1.0, 20.0, inf]")
    assert err[1].startswith(f"{f}: 1 detections in {dets} have an infinite score;")
    assert err[1].endswith("first: line 3: score is inf")
    assert err[2].startswith(f"{f}: 2 detections in {dets} have a NaN score; ranked last")
    assert err[2].endswith("first: line 1: score is NaN")
    # the inf score first takes the ground truth, the NaN ones rank last: AP as voc_eval.py gives it
    with pytest.warns(DetevalWarning):
        res = deteval.evaluate(dets, ann, protocol="voc10", ties="item")
    assert res.per_class[0]["AP"] == voc_eval(f, ann, ["im1"], "cat") == 1.0
    assert main(["--protocol", "voc10", "--strict", str(dets), str(ann)]) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and f"{f}: line 2: box is not finite" in err[0], err

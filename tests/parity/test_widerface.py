"""WIDER FACE (``--protocol widerface``) against the vendored WiderFace-Evaluation ``evaluation.py`` run in the
test (tests/support/widerface_reference.py) on generated data built for its quirks and on the official
validation ground truth (tests/data/widerface/); the command line, bad inputs, and replay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("scipy")

from support.widerface_data import SCORE_STYLES, write_dataset  # noqa: E402
from support.widerface_reference import reference_aps  # noqa: E402

import deteval  # noqa: E402
from deteval.cli import main  # noqa: E402
from deteval.errors import DetevalWarning, InputError  # noqa: E402

SUBSETS = ("easy", "medium", "hard")
REAL_GT = Path(__file__).resolve().parent.parent / "data" / "widerface"


def _ours(pred_dir, gt_dir, **options) -> list[float]:
    r = deteval.evaluate(str(pred_dir), str(gt_dir), protocol="widerface", **options)
    return [r.stats[s] for s in SUBSETS]


@pytest.mark.parametrize("style", SCORE_STYLES)
@pytest.mark.parametrize("seed", range(3))
def test_generated_equals_reference(tmp_path, style, seed):
    pred_dir, gt_dir = write_dataset(tmp_path, seed, style)
    ref = reference_aps(pred_dir, gt_dir, tmp_path)
    assert len(ref) == 3
    assert _ours(pred_dir, gt_dir) == [float(v) for v in ref]


def _real_predictions(root: Path, gt_dir: Path, seed: int, per_face: float = 1.0) -> Path:
    """A prediction file per real image: jittered faces (some at IoU exactly 0.5), misses and noise,
    scores from a logit-like spread; rows in random order, first lines with the event's path."""
    from scipy.io import loadmat

    rng = np.random.default_rng(seed)
    mat = loadmat(gt_dir / "wider_face_val.mat")
    pred_dir = root / "pred"
    for e, files, boxes in zip(mat["event_list"][:, 0], mat["file_list"][:, 0], mat["face_bbx_list"][:, 0]):
        event = str(e[0])
        (pred_dir / event).mkdir(parents=True)
        for name, faces in zip(files[:, 0], boxes[:, 0]):
            name = str(name[0])
            f = faces.astype(np.float64).reshape(-1, 4)
            keep = f[rng.random(len(f)) < per_face * 0.8]
            jitter = rng.integers(-2, 3, keep.shape).astype(np.float64)
            rows = (
                np.vstack([keep + jitter, rng.integers(0, 1000, (rng.integers(0, 6), 4))])
                if len(f)
                else rng.integers(0, 1000, (rng.integers(0, 3), 4)).astype(np.float64)
            )
            rows = rng.permutation(rows)
            score = rng.normal(1.0, 2.0, len(rows))
            lines = [f"{event}/{name}.jpg", str(len(rows))]
            lines += [" ".join([*(str(int(v)) for v in r), repr(float(s))]) for r, s in zip(rows, score)]
            (pred_dir / event / f"{name}.txt").write_text("\n".join(lines) + "\n")
    return pred_dir


def _real_events(tmp_path: Path, n_events: int) -> Path:
    """The official ground truth restricted to its first ``n_events`` events (savemat of loadmat's cells)."""
    from scipy.io import loadmat, savemat

    out = tmp_path / "gt"
    out.mkdir()
    face = loadmat(REAL_GT / "wider_face_val.mat")
    savemat(out / "wider_face_val.mat", {k: face[k][:n_events] for k in ("event_list", "file_list", "face_bbx_list")})
    for s in SUBSETS:
        m = loadmat(REAL_GT / f"wider_{s}_val.mat")
        savemat(out / f"wider_{s}_val.mat", {"gt_list": m["gt_list"][:n_events]})
    return out


def test_real_events_equal_reference(tmp_path):
    gt_dir = _real_events(tmp_path, 3)
    pred_dir = _real_predictions(tmp_path, gt_dir, seed=1)
    assert _ours(pred_dir, gt_dir) == [float(v) for v in reference_aps(pred_dir, gt_dir, tmp_path)]


@pytest.mark.slow
def test_real_ground_truth_equals_reference(tmp_path):
    pred_dir = _real_predictions(tmp_path, REAL_GT, seed=2)
    ref = reference_aps(pred_dir, REAL_GT, tmp_path)
    assert _ours(pred_dir, REAL_GT) == [float(v) for v in ref]


def test_cli_json_and_a_missing_file(tmp_path, capsys):
    pred_dir, gt_dir = write_dataset(tmp_path, 7, "logits")
    out = tmp_path / "out.json"
    assert main(["--protocol", "widerface", "--quiet", "--json", str(out), str(pred_dir), str(gt_dir)]) == 0
    stats = json.loads(out.read_text())["stats"]
    assert [stats[s] for s in SUBSETS] == [float(v) for v in reference_aps(pred_dir, gt_dir, tmp_path)]
    capsys.readouterr()
    victim = sorted(p for p in (pred_dir / "0--Event_0").iterdir() if p.read_text().startswith("0--Event_0/"))[0]
    image = victim.read_text().splitlines()[0].split("/")[-1][: -len(".jpg")]
    victim.unlink()
    assert (
        main(["--protocol", "widerface", "--quiet", "--json", str(tmp_path / "o2.json"), str(pred_dir), str(gt_dir)])
        == 2
    )
    err = capsys.readouterr().err
    assert f"0--Event_0/{image}" in err and "no prediction file" in err and "Traceback" not in err
    assert not (tmp_path / "o2.json").exists()


def _one_image(tmp_path: Path, body: str, name: str = "face") -> tuple[Path, Path]:
    from scipy.io import savemat

    gt = tmp_path / "gt"
    gt.mkdir()

    def cells(items):
        out = np.empty((len(items), 1), dtype=object)
        for i, v in enumerate(items):
            out[i, 0] = v
        return out

    savemat(
        gt / "wider_face_val.mat",
        {
            "event_list": cells([np.array(["ev"])]),
            "file_list": cells([cells([np.array([name])])]),
            "face_bbx_list": cells([cells([np.array([[0, 0, 9, 9]], np.int32)])]),
        },
    )
    for s in SUBSETS:
        savemat(gt / f"wider_{s}_val.mat", {"gt_list": cells([cells([np.array([[1]], np.uint8)])])})
    pred = tmp_path / "pred" / "ev"
    pred.mkdir(parents=True)
    (pred / "whatever.txt").write_text(body)
    return pred.parent, gt


def test_iou_exactly_half_matches(tmp_path):
    # face 10 x 10 (+1 widths), prediction 10 x 5 inside it: IoU 50 / 100; a second, lower, far away (one
    # score alone normalises to 0 / 0)
    pred, gt = _one_image(tmp_path, "ev/face.jpg\n2\n0 0 9 4 0.9\n500 500 9 9 0.1\n")
    assert _ours(pred, gt) == [1.0, 1.0, 1.0]
    assert _ours(pred, gt, iou_thr=0.51) == [0.0, 0.0, 0.0]


def test_a_single_score_normalises_to_nan(tmp_path):
    pred, gt = _one_image(tmp_path, "ev/face.jpg\n1\n0 0 9 9 0.9\n")
    with pytest.warns(DetevalWarning, match="max - min"):
        ours = _ours(pred, gt)
    assert ours == [float(v) for v in reference_aps(pred, gt, tmp_path)] == [0.0, 0.0, 0.0]


def test_bad_inputs_are_named(tmp_path):
    pred, gt = _one_image(tmp_path, "ev/face.jpg\n1\n0 0 9 nan 0.9\n")
    with pytest.raises(InputError, match="NaN"):
        _ours(pred, gt)
    (pred / "ev" / "whatever.txt").write_text("ev/face.jpg\n1\n0 0 9 9\n")
    with pytest.raises(InputError, match="line 3"):
        _ours(pred, gt)
    (pred / "ev" / "whatever.txt").write_text("")
    with pytest.raises(InputError, match="empty"):
        _ours(pred, gt)
    (pred / "ev" / "whatever.txt").write_text("ev/face.jpg\n1\n0 0 9 9 0.5\n")
    (pred / "ev" / "again.txt").write_text("face.jpg\n0\n")
    with pytest.raises(InputError, match="one file per image"):
        _ours(pred, gt)


def test_trailing_spaces_warn_or_fail_under_strict(tmp_path):
    pred, gt = _one_image(tmp_path, "ev/face.jpg\n1\n0 0 9 9 0.9 \n\n500 500 9 9 0.1\n")
    with pytest.warns(DetevalWarning, match="lines ending in a space"):
        with pytest.warns(DetevalWarning, match="blank lines"):
            assert _ours(pred, gt) == [1.0, 1.0, 1.0]
    with pytest.raises(InputError, match="Pytorch_Retinaface"):
        deteval.evaluate(str(pred), str(gt), protocol="widerface", strict=True)


def test_matlab_start_differs_only_when_scores_leave_zero_to_one(tmp_path):
    pred_dir, gt_dir = write_dataset(tmp_path / "p", 3, "probabilities")
    assert _ours(pred_dir, gt_dir, score_norm="matlab") == _ours(pred_dir, gt_dir)
    pred_dir, gt_dir = write_dataset(tmp_path / "a", 3, "above_one")
    port = deteval.evaluate(str(pred_dir), str(gt_dir), protocol="widerface")
    matlab = deteval.evaluate(str(pred_dir), str(gt_dir), protocol="widerface", score_norm="matlab")
    assert port.params["score_min"] == 1.0 and matlab.params["score_min"] > 1.0
    assert port.params["score_max"] == matlab.params["score_max"]


def test_bootstrap_replicates_equal_materialised_datasets(tmp_path):
    from deteval.io.widerface import WiderGroundTruth, WiderPredictions
    from deteval.protocols import get

    pred_dir, gt_dir = write_dataset(tmp_path, 11, "logits")
    proto = get("widerface")
    params = proto.params()
    preds, gt = proto.load(str(pred_dir), str(gt_dir), params)
    result = proto.evaluate_loaded(preds, gt, params)
    replay = proto.replay(result)
    fn = replay.replicate_fn()
    rng = np.random.default_rng(0)
    for _ in range(5):
        draw = replay.file_order[rng.integers(0, len(gt), len(gt))]
        places = replay.record.place[draw]
        g_parts = [gt.boxes[gt.box_offsets[i] : gt.box_offsets[i + 1]] for i in places]
        p_parts = [preds.rows[preds.offsets[i] : preds.offsets[i + 1]] for i in places]
        keep = np.concatenate([gt.keep[:, gt.box_offsets[i] : gt.box_offsets[i + 1]] for i in places], axis=1)
        mat_gt = WiderGroundTruth(
            events=["e"],
            image_event=np.zeros(len(places), np.int64),
            image_names=[f"i{k}" for k in range(len(places))],
            boxes=np.concatenate(g_parts),
            box_offsets=np.concatenate([[0], np.cumsum([len(p) for p in g_parts])]),
            keep=keep,
            keep_counts=gt.keep_counts[:, places],
            bad_keep=gt.bad_keep[:, places],
        )
        mat_preds = WiderPredictions(
            rows=np.concatenate(p_parts),
            outside_scores=preds.outside_scores,
            offsets=np.concatenate([[0], np.cumsum([len(p) for p in p_parts])]),
        )
        expected = deteval.evaluate(mat_preds, mat_gt, protocol="widerface").stats
        assert fn(draw) == [expected[s] for s in SUBSETS]
    boot = deteval.bootstrap(result, n=20, seed=1)
    assert boot is not None


def test_copied_official_files_load(tmp_path):
    from deteval.io.widerface import load_widerface_gt

    gt = load_widerface_gt(REAL_GT)
    assert len(gt) == 3226 and len(gt.boxes) == 39708
    assert gt.keep_counts.sum(axis=1).tolist() == [7211, 13319, 31958]
    shutil.copytree(REAL_GT, tmp_path / "gt")
    (tmp_path / "gt" / "wider_hard_val.mat").unlink()
    with pytest.raises(InputError, match="wider_hard_val.mat"):
        load_widerface_gt(tmp_path / "gt")


def test_curves_json_and_arrays(tmp_path):
    pred_dir, gt_dir = write_dataset(tmp_path, 5, "grid")
    out = tmp_path / "curves.json"
    assert main(["--protocol", "widerface", "--quiet", "--curves", str(out), str(pred_dir), str(gt_dir)]) == 0
    curves = json.loads(out.read_text())
    r = deteval.evaluate(str(pred_dir), str(gt_dir), protocol="widerface")
    assert curves["protocol"] == "widerface" and len(curves["thresholds"]) == 1000
    for k, s in enumerate(SUBSETS):
        assert curves["curves"][s]["AP"] == r.stats[s]
        rec = curves["curves"][s]["recall"]
        assert rec == r.recall[k].tolist()
        prec = [np.nan if v is None else v for v in curves["curves"][s]["precision"]]
        np.testing.assert_array_equal(prec, r.precision[k])


@pytest.mark.parametrize("seed", range(3))
def test_generated_data_holds_the_quirks(tmp_path, seed):
    from deteval.matching.widerface import best_faces
    from deteval.protocols import get

    pred_dir, gt_dir = write_dataset(tmp_path, seed, "ties")
    proto = get("widerface")
    preds, gt = proto.load(str(pred_dir), str(gt_dir), proto.params())
    best, iou = best_faces(preds.rows, preds.offsets, gt.boxes, gt.box_offsets)
    faces, rows = np.diff(gt.box_offsets), np.diff(preds.offsets)
    assert (iou == 0.5).any() and (iou == 1.0).any()  # matches at exactly the threshold, and exact boxes
    assert (gt.boxes[:, 2] == 0).any() and (gt.boxes[:, 2] == 1).any()  # zero-width and one-pixel faces
    assert ((faces == 0) & (rows > 0)).any() and ((faces > 0) & (rows == 0)).any()
    assert (gt.keep.sum(axis=1) < len(gt.boxes)).all()  # faces outside each subset
    assert len(preds.outside_scores) > 0  # files of images the ground truth lacks
    names = [p.name for p in pred_dir.rglob("*.txt")]
    assert any(n.startswith("renamed_") for n in names)

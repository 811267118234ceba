"""The detection confusion matrix (deteval.analysis.confusion): hand-built images, invariants, a brute-force oracle."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from deteval.analysis.confusion import ConfusionMatrix, confusion_matrix, parse_confusion_spec
from deteval.geometry.boxes import box_iou
from deteval.io.coco import load_coco_pair

CATS = [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}, {"id": 3, "name": "bird"}]
CAT, DOG, BIRD, BG = 0, 1, 2, 3


def _gt(anns):
    images = sorted({a[0] for a in anns} | {1, 2, 3, 4, 5, 6})
    return {
        "images": [{"id": i, "width": 100, "height": 100} for i in images],
        "categories": CATS,
        "annotations": [
            {"id": n + 1, "image_id": img, "category_id": c, "bbox": list(b), "area": b[2] * b[3], "iscrowd": crowd}
            for n, (img, c, b, crowd) in enumerate(anns)
        ],
    }


def _dets(rows):
    return [{"image_id": img, "category_id": c, "bbox": list(b), "score": s} for img, c, b, s in rows]


GT = _gt(
    [
        (1, 1, (0, 0, 10, 10), 0),  # A cat
        (1, 2, (20, 0, 10, 10), 0),  # B dog
        (2, 1, (0, 0, 10, 10), 0),  # C cat
        (3, 3, (0, 0, 10, 10), 0),  # D bird, never detected
        (3, 1, (30, 30, 20, 20), 1),  # E cat, crowd
        (4, 2, (0, 0, 10, 10), 0),  # F dog
        (5, 1, (0, 0, 10, 10), 0),  # G cat
        (5, 2, (5, 0, 10, 10), 0),  # H dog
        (6, 1, (0, 0, 10, 10), 0),  # I cat
    ]
)
DETS = _dets(
    [
        (1, 1, (0, 0, 10, 10), 0.9),  # cat on A: correct
        (1, 1, (20, 0, 10, 10), 0.8),  # cat on B (IoU 1): class confusion, dog row / cat column
        (2, 1, (0, 0, 10, 10), 0.9),  # cat on C: correct
        (2, 2, (0, 0, 10, 10), 0.8),  # dog on C, already matched: duplicate -> background row
        (2, 3, (50, 50, 10, 10), 0.7),  # bird on nothing: background FP
        (2, 1, (0, 0, 10, 10), 0.1),  # below score 0.25: not counted
        (3, 2, (30, 30, 20, 20), 0.6),  # dog on the crowd region: crowd is left out -> background
        (4, 2, (0, 0, 10, 20), 0.7),  # dog on F, IoU 100/200 = 0.5 exactly: matched at iou_thr 0.5 (>=)
        # image 5: the dog detection (score .9) overlaps G by 60/140 = .43 and H by 90/110 = .82:
        # greedy takes H (highest IoU); then the cat detection overlaps G by 90/110 (H is taken)
        (5, 2, (4, 0, 10, 10), 0.9),
        (5, 1, (1, 0, 10, 10), 0.8),
        # image 6: the cat detection has the higher score, so it takes I; the dog one is left over
        (6, 2, (0, 0, 10, 10), 0.5),
        (6, 1, (0, 0, 10, 10), 0.9),
    ]
)


@pytest.fixture(scope="module")
def loaded():
    return load_coco_pair(DETS, GT)


def test_hand_built_matrix(loaded):
    cm = confusion_matrix(*loaded, iou_thr=0.5, score_thr=0.25)
    expect = np.zeros((4, 4), np.int64)
    expect[CAT, CAT] = 4  # A, C, G, I
    expect[DOG, CAT] = 1  # B detected as cat
    expect[DOG, DOG] = 2  # F (IoU exactly .5), H
    expect[BIRD, BG] = 1  # D missed
    expect[BG, DOG] = 3  # duplicate on C, crowd region, leftover in image 6
    expect[BG, BIRD] = 1  # bird on nothing
    assert np.array_equal(cm.matrix, expect)
    assert cm.labels == ("cat", "dog", "bird", "background")
    assert cm.category_ids.tolist() == [1, 2, 3]
    # rows: non-crowd ground truth per class (cat A C G I, dog B F H, bird D); columns: detections >= .25
    assert cm.num_gt.tolist() == [4, 3, 1]
    assert cm.num_det.tolist() == [5, 5, 1]


def test_thresholds_move_the_counts(loaded):
    # score 0.05 lets in the 0.1 cat on C, which is already matched: one more background cat
    low = confusion_matrix(*loaded, iou_thr=0.5, score_thr=0.05)
    base = confusion_matrix(*loaded, iou_thr=0.5, score_thr=0.25)
    diff = low.matrix - base.matrix
    assert diff[BG, CAT] == 1 and np.abs(diff).sum() == 1
    # IoU 0.6: F's dog (IoU .5) no longer matches: F missed, the detection is background
    strict = confusion_matrix(*loaded, iou_thr=0.6, score_thr=0.25)
    diff = strict.matrix - base.matrix
    assert (diff[DOG, DOG], diff[DOG, BG], diff[BG, DOG]) == (-1, 1, 1) and np.abs(diff).sum() == 3
    # score threshold at a detection's score keeps it (>=)
    at = confusion_matrix(*loaded, iou_thr=0.5, score_thr=0.1)
    assert np.array_equal(at.matrix, low.matrix)


def test_xyxy_containers_give_the_same_matrix(loaded):
    dets, gt = loaded

    def corners(c):
        b = c.boxes
        return dataclasses.replace(c, boxes=np.c_[b[:, :2], b[:, :2] + b[:, 2:]], box_format="xyxy")

    a = confusion_matrix(dets, gt)
    b = confusion_matrix(corners(dets), corners(gt))
    assert np.array_equal(a.matrix, b.matrix)


def _brute(dets, gt, iou_thr, score_thr):
    """A direct Python version of the documented rule, from pycocotools-exact IoU matrices."""
    k = len(gt.categories)
    m = np.zeros((k + 1, k + 1), np.int64)
    for img in range(len(gt.images)):
        g = [i for i in range(len(gt)) if gt.image[i] == img and not gt.crowd[i]]
        d = [i for i in range(len(dets)) if dets.image[i] == img and dets.score[i] >= score_thr]
        d.sort(key=lambda i: -dets.score[i])  # Python's sort is stable
        ious = box_iou(dets.boxes[d], gt.boxes[g]) if d and g else np.zeros((len(d), len(g)))
        taken = set()
        for row, di in enumerate(d):
            cands = [(ious[row, col], -col) for col in range(len(g)) if col not in taken and ious[row, col] >= iou_thr]
            if cands:
                col = -max(cands)[1]
                taken.add(col)
                m[gt.category[g[col]], dets.category[di]] += 1
            else:
                m[k, dets.category[di]] += 1
        for col, gi in enumerate(g):
            if col not in taken:
                m[gt.category[gi], k] += 1
    return m


def _random_pair(seed):
    rng = np.random.default_rng(seed)
    n_img, n_cat = 4, 3
    anns, rows = [], []
    for img in range(1, n_img + 1):
        for _ in range(rng.integers(0, 6)):
            x, y = rng.integers(0, 30, 2)
            w, h = rng.integers(4, 15, 2)
            anns.append(
                (img, int(rng.integers(1, n_cat + 1)), (int(x), int(y), int(w), int(h)), int(rng.random() < 0.1))
            )
        for _ in range(rng.integers(0, 8)):
            x, y = rng.integers(0, 30, 2)
            w, h = rng.integers(4, 15, 2)
            s = float(rng.choice([0.2, 0.3, 0.5, 0.9]))  # ties on purpose
            rows.append((img, int(rng.integers(1, n_cat + 1)), (int(x), int(y), int(w), int(h)), s))
    return load_coco_pair(_dets(rows), _gt(anns))


@pytest.mark.parametrize("seed", range(30))
def test_brute_force_and_sum_invariants(seed):
    dets, gt = _random_pair(seed)
    for iou_thr, score_thr in ((0.5, 0.25), (0.1, 0.0), (0.75, 0.5)):
        cm = confusion_matrix(dets, gt, iou_thr=iou_thr, score_thr=score_thr)
        assert np.array_equal(cm.matrix, _brute(dets, gt, iou_thr, score_thr))
        k = len(gt.categories)
        non_crowd = ~gt.crowd
        assert cm.num_gt.tolist() == np.bincount(gt.category[non_crowd], minlength=k).tolist()
        kept = dets.score >= score_thr
        assert cm.num_det.tolist() == np.bincount(dets.category[kept], minlength=k).tolist()
        assert cm.matrix[k, k] == 0
        # every kept detection matches at most one ground truth: matched count = matched GT count
        assert cm.matrix[:k, :k].sum() + cm.matrix[k, :k].sum() == kept.sum()


def test_sample_invariants():
    from deteval.cli import sample_pair

    dets, gt = load_coco_pair(*sample_pair())
    cm = confusion_matrix(dets, gt)
    k = len(gt.categories)
    assert cm.matrix.shape == (k + 1, k + 1)
    assert cm.num_gt.tolist() == np.bincount(gt.category[~gt.crowd], minlength=k).tolist()
    assert cm.num_det.tolist() == np.bincount(dets.category[dets.score >= 0.25], minlength=k).tolist()
    assert np.trace(cm.matrix[:k, :k]) > 0


def test_normalised_and_text(loaded):
    cm = confusion_matrix(*loaded)
    rows = cm.normalized("row")
    sums = rows.sum(axis=1)
    assert np.allclose(sums[cm.matrix.sum(axis=1) > 0], 1.0)
    cols = cm.normalized("col")
    assert np.allclose(cols.sum(axis=0)[cm.matrix.sum(axis=0) > 0], 1.0)
    with pytest.raises(ValueError, match="row"):
        cm.normalized("diag")
    text = cm.format_table()
    assert "rows = ground-truth class, columns = predicted class" in text
    lines = text.splitlines()
    assert lines[1].split()[-4:] == ["cat", "dog", "bird", "background"]
    assert lines[3].split() == ["dog", "1", "2", "0", "0"]  # the dog row: B as cat, F and H as dog
    assert lines[-1].split() == ["background", "0", "3", "1", "0"]
    assert cm.format_table(normalize="row").splitlines()[-1].split() == ["background", "0.00", "0.75", "0.25", "0.00"]
    summary = cm.format_summary()
    assert "dog -> cat: 1" in summary
    d = cm.to_dict()
    assert d["matrix"] == cm.matrix.tolist() and d["labels"][-1] == "background"


def test_errors(loaded):
    dets, gt = loaded
    with pytest.raises(ValueError, match="bbox"):
        confusion_matrix(dets, gt, iou_type="segm")
    for bad in (0.0, -0.1, 1.5, math.nan, True):
        with pytest.raises(ValueError, match="iou_thr"):
            confusion_matrix(dets, gt, iou_thr=bad)
    for bad in (math.nan, math.inf, None):
        with pytest.raises(ValueError, match="score_thr"):
            confusion_matrix(dets, gt, score_thr=bad)
    with pytest.raises(TypeError, match="load_coco_pair"):
        confusion_matrix(DETS, GT)
    wrong = dataclasses.replace(dets, category=np.full(len(dets), 7, np.int32))
    with pytest.raises(ValueError, match="outside"):
        confusion_matrix(wrong, gt)


def test_parse_spec():
    assert parse_confusion_spec("0.5:0.25") == (0.5, 0.25)
    assert parse_confusion_spec("0.7") == (0.7, 0.25)
    assert parse_confusion_spec(":0.1") == (0.5, 0.1)
    for bad in ("a:b", "0.5:0.2:0.1", "2:0.1", "0:0.1", "0.5:nan"):
        with pytest.raises(ValueError):
            parse_confusion_spec(bad)


def test_heatmap_png(tmp_path, loaded):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (optional extra 'plot')")
    from deteval.analysis.plots import plot_confusion_matrix

    cm = confusion_matrix(*loaded)
    for norm in ("row", None):
        p = plot_confusion_matrix(cm, tmp_path / f"cm_{norm}.png", normalize=norm)
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert isinstance(cm, ConfusionMatrix)

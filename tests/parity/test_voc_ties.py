"""voc_eval.py's order of equal scores (``ties="argsort"``, the default of voc07, voc10 and dota) on data full
of ties, against the voc_eval oracle (``tests/support/voc_oracle.py``: ``np.argsort(-confidence)`` of a class's
rows in file order, numpy's own under numpy < 1.25) and a DOTA_devkit oracle written here: ``==`` per class.

The datasets have hundreds of detections per class (numpy's introsort is an insertion sort, hence stable,
up to 16 elements), duplicates of one ground truth at one score (which of them is the TP is decided by the
order), difficult objects, and rows shuffled, so file order is neither image nor score order.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA_DIR
from support.voc_oracle import argsort_desc, class_ap

import deteval
from deteval.io import voc as voc_io
from deteval.types import Detections, GroundTruth, IdTable

VOC = DATA_DIR / "voc100_native"
N_CLS = 3


def generated(seed: int, n_images: int = 25, per_class: int = 400, levels: int = 7):
    """Ground truth on a grid (20 x 20 boxes 50 apart: IoUs of a shifted copy are far from any threshold)
    and detections near them (shift 0, 1 or 2: duplicates; 12: below 0.5) or nowhere, scores on ``levels``."""
    rs = np.random.RandomState(seed)
    gts = []
    for im in range(n_images):
        for slot in range(rs.randint(0, 7)):
            x, y = 50.0 * (slot % 3), 50.0 * (slot // 3)
            gts.append((im, int(rs.randint(0, N_CLS)), (x, y, x + 20.0, y + 20.0), bool(rs.random_sample() < 0.1)))
    dets = []
    for c in range(N_CLS):
        mine = [g for g in gts if g[1] == c]
        for _ in range(per_class):
            score = float(rs.randint(1, levels + 1)) / levels
            if mine and rs.random_sample() < 0.8:
                im, _, b, _ = mine[rs.randint(len(mine))]
                s = float(rs.choice([0.0, 0.0, 1.0, 2.0, 12.0]))
                dets.append((im, c, score, (b[0] + s, b[1], b[2] + s, b[3])))
            else:
                x = 300.0 + 30.0 * rs.randint(0, 5)
                dets.append((int(rs.randint(0, n_images)), c, score, (x, 0.0, x + 20.0, 20.0)))
    order = rs.permutation(len(dets))
    return n_images, gts, [dets[i] for i in order]


def containers(n_images, gts, dets):
    gt = GroundTruth(
        image=np.array([g[0] for g in gts], np.int32),
        category=np.array([g[1] for g in gts], np.int32),
        boxes=np.array([g[2] for g in gts], float).reshape(-1, 4),
        area=np.zeros(len(gts)),
        crowd=np.zeros(len(gts), bool),
        ignore=np.zeros(len(gts), bool),
        difficult=np.array([g[3] for g in gts], bool),
        ann_id=np.arange(1, len(gts) + 1),
        images=IdTable(np.arange(1, n_images + 1, dtype=np.int64)),
        categories=IdTable(np.arange(N_CLS, dtype=np.int64), names=[f"c{k}" for k in range(N_CLS)]),
        box_format="xyxy",
    )
    dt = Detections(
        image=np.array([d[0] for d in dets], np.int32),
        category=np.array([d[1] for d in dets], np.int32),
        boxes=np.array([d[3] for d in dets], float).reshape(-1, 4),
        score=np.array([d[2] for d in dets], float),
        area=np.zeros(len(dets)),
        box_format="xyxy",
    )
    return dt, gt


THRS = (0.5, 0.85)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("protocol", ["voc07", "voc10"])
def test_generated_ties_equal_the_oracle(seed, protocol):
    n_images, gts, dets = generated(seed)
    dt, gt = containers(n_images, gts, dets)
    use07 = protocol == "voc07"
    differs = False
    for ties in ("argsort", "item"):
        options = {} if ties == "argsort" else {"ties": ties}  # argsort: the default
        res = deteval.evaluate(dt, gt, protocol=protocol, iou_thrs=list(THRS), **options)
        assert res.params["ties"] == ties
        for t, thr in enumerate(THRS):
            for c in range(N_CLS):
                want = class_ap(gts, dets, c, thr, use07, ties=ties)
                assert res.arrays["ap"][t, c, 0] == want, (ties, thr, c)
                other = class_ap(gts, dets, c, thr, use07, ties="item" if ties == "argsort" else "argsort")
                differs |= other != want
    assert differs  # the two orders give other numbers here: the test can tell them apart


def _comp4_rows(seed: int, gt: GroundTruth):
    """voc100's detections, each written 6 times with its box moved by 0-2 pixels and its score rounded to
    2 decimals, lines shuffled: ``{class name: [(image id, score, box)]}`` in file order."""
    dets, _ = voc_io.load_voc(VOC / "dets_txt", VOC / "gt_xml", names=VOC / "voc.names")
    rs = np.random.RandomState(seed)
    rows: dict[str, list] = {}
    for i in range(len(dets)):
        name = gt.categories.name_of(int(dets.category[i]))
        image_id = str(gt.images.ids[dets.image[i]])
        for _ in range(6):
            box = dets.boxes[i] + rs.randint(0, 3, 4)
            score = round(float(np.clip(dets.score[i] + rs.randint(-3, 4) / 100, 0, 1)), 2)
            rows.setdefault(name, []).append((image_id, score, tuple(float(v) for v in box)))
    return {name: [r[k] for k in rs.permutation(len(r))] for name, r in rows.items()}


@pytest.mark.parametrize("protocol", ["voc07", "voc10"])
def test_comp4_files_in_file_order_equal_the_oracle(tmp_path, protocol):
    _, gt = voc_io.load_voc(VOC / "dets_txt", VOC / "gt_xml", names=VOC / "voc.names")
    rows = _comp4_rows(7, gt)
    for name, lines in rows.items():
        text = "".join(f"{im} {s:.6f} {b[0]:.1f} {b[1]:.1f} {b[2]:.1f} {b[3]:.1f}\n" for im, s, b in lines)
        (tmp_path / f"comp4_det_test_{name}.txt").write_text(text)
    res = deteval.evaluate(str(tmp_path), str(VOC / "gt_xml"), protocol=protocol)
    difficult = gt.difficult | gt.crowd | gt.ignore
    rows_gt = zip(gt.image, gt.category, gt.boxes.tolist(), difficult)
    gts = [(int(i), int(c), tuple(b), bool(x)) for i, c, b, x in rows_gt]
    index = {str(v): k for k, v in enumerate(gt.images.ids)}
    names = [gt.categories.name_of(k) for k in range(len(gt.categories))]
    dets = [(index[im], names.index(name), s, b) for name in sorted(rows) for im, s, b in rows[name]]
    for r in res.per_class:
        want = class_ap(gts, dets, names.index(r["name"]), 0.5, protocol == "voc07")
        assert r["AP"] == want, r["name"]


# ---------------------------------------------------------------- DOTA: the devkit's rule, axis-aligned quadrilaterals


def _devkit_class_ap(gts, dets, cls, use07):
    """dota_evaluation_task1.voc_eval's procedure on rectangles (their polygon IoU is the box IoU, no +1;
    the generated IoUs lie far from 0.5), ranked by ``np.argsort(-confidence)`` as numpy < 1.25 ranked."""
    mine = [d for d in dets if d[1] == cls]
    mine = [mine[i] for i in argsort_desc([d[2] for d in mine])]
    objs = [[g[0], g[2], g[3], False] for g in gts if g[1] == cls]
    npos = sum(1 for o in objs if not o[2])
    tp, fp = np.zeros(len(mine)), np.zeros(len(mine))
    for k, (im, _, _, b) in enumerate(mine):
        ovmax, jmax = -np.inf, -1
        for j, (gim, g, _, _) in enumerate(objs):
            if gim != im:
                continue
            iw = min(b[2], g[2]) - max(b[0], g[0])
            ih = min(b[3], g[3]) - max(b[1], g[1])
            if iw + 1 <= 0 or ih + 1 <= 0:
                continue  # the devkit's +1 enclosing-box pre-filter
            inter = max(iw, 0.0) * max(ih, 0.0)
            ov = inter / ((b[2] - b[0]) * (b[3] - b[1]) + (g[2] - g[0]) * (g[3] - g[1]) - inter)
            if ov > ovmax:
                ovmax, jmax = ov, j
        if ovmax > 0.5:
            if objs[jmax][2]:
                continue
            if not objs[jmax][3]:
                tp[k], objs[jmax][3] = 1.0, True
            else:
                fp[k] = 1.0
        else:
            fp[k] = 1.0
    if npos == 0:
        return 0.0
    tp, fp = np.cumsum(tp), np.cumsum(fp)
    rec, prec = tp / npos, tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    if use07:
        ap = 0.0
        for t in np.arange(0.0, 1.1, 0.1):
            ap = ap + (np.max(prec[rec >= t]) if np.sum(rec >= t) else 0.0) / 11.0
        return ap
    mrec, mpre = np.concatenate(([0.0], rec, [1.0])), np.concatenate(([0.0], prec, [0.0]))
    for i in range(len(mpre) - 1, 0, -1):
        mpre[i - 1] = max(mpre[i - 1], mpre[i])
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))


def _quad(b) -> str:
    x1, y1, x2, y2 = b
    return " ".join(f"{v:.1f}" for v in (x1, y1, x2, y1, x2, y2, x1, y2))


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("integrator", ["voc11", "all_points"])
def test_dota_generated_ties_equal_the_devkit_rule(tmp_path, seed, integrator):
    n_images, gts, dets = generated(100 + seed)
    gt_dir, dt_dir = tmp_path / "gt", tmp_path / "dets"
    gt_dir.mkdir()
    dt_dir.mkdir()
    for im in range(n_images):
        lines = [f"{_quad(b)} c{c} {int(d)}\n" for i, c, b, d in gts if i == im]
        (gt_dir / f"im{im}.txt").write_text("imagesource:x\ngsd:1\n" + "".join(lines))
    for c in range(N_CLS):
        lines = [f"im{im} {s!r} {_quad(b)}\n" for im, cc, s, b in dets if cc == c]
        (dt_dir / f"Task1_c{c}.txt").write_text("".join(lines))
    res = deteval.evaluate(str(dt_dir), str(gt_dir), protocol="dota", integrator=integrator)
    assert res.params["ties"] == "argsort"
    file_order = [d for c in range(N_CLS) for d in dets if d[1] == c]
    got = {r["name"]: r["AP"] for r in res.per_class}
    for c in range(N_CLS):
        if f"c{c}" in got:
            assert got[f"c{c}"] == _devkit_class_ap(gts, file_order, c, integrator == "voc11"), c

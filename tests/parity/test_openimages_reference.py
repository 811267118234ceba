"""The openimages protocol against the tests' independent reference (tests/support/openimages_reference.py) on
generated datasets: per-class AP and mAP within 1e-12.

The data aims at the rules' corners: group-of boxes with many detections inside, duplicates on a taken
box, boxes on a 1/8 grid (IoU and IoA of exactly 0.5 occur), negative and unverified labels, detection
labels outside the classes, detections on images without ground truth, inverted boxes, scores <= 0
(a group-of box absorbing only those counts for nothing), multi-parent and deep hierarchies with
``Part`` edges (ignored), classes with only group-of boxes, expansion on and off, group-of weights
1, 0.5 and 0. Scores are distinct (the reference's sort is unstable).
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.openimages_reference import evaluate as reference

import deteval

BOX_HEADER = (
    "ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepiction,IsInside"
)


def _tree(children: dict[str, list[str]], label: str, parts: dict[str, list[str]]) -> dict:
    node: dict = {"LabelName": label}
    if children.get(label):
        node["Subcategory"] = [_tree(children, c, parts) for c in children[label]]
    if parts.get(label):
        node["Part"] = [{"LabelName": p} for p in parts[label]]
    return node


@st.composite
def datasets(draw):
    n_cls = draw(st.integers(1, 6))
    classes = [f"/m/c{i}" for i in range(n_cls)]
    children: dict[str, list[str]] = {"/m/root": []}
    for i, c in enumerate(classes):  # parents among earlier classes or the root: chains and several parents
        pool = ["/m/root", *classes[:i]]
        for p in draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True)):
            children.setdefault(p, []).append(c)
    parts = {classes[0]: [classes[-1]]} if draw(st.booleans()) else {}  # a Part edge: never expanded
    hierarchy = _tree(children, "/m/root", parts)
    n_img = draw(st.integers(1, 4))
    images = [f"img{i}" for i in range(n_img)]
    grid = st.integers(0, 8).map(lambda v: v / 8)

    def box():
        x1, x2, y1, y2 = draw(grid), draw(grid), draw(grid), draw(grid)
        return min(x1, x2), max(x1, x2) + 0.125, min(y1, y2), max(y1, y2) + 0.125

    boxes, labels = [], []
    for im in images:
        for _ in range(draw(st.integers(0, 5))):
            boxes.append((im, draw(st.sampled_from(classes)), *box(), int(draw(st.integers(0, 9)) < 3)))
        for _ in range(draw(st.integers(0, 3))):
            labels.append((im, draw(st.sampled_from(classes)), draw(st.sampled_from([0, 1]))))
    if not boxes and not labels:
        labels.append((images[0], classes[0], 1))
    dets = []
    for im in [*images, "ghost"]:
        for _ in range(draw(st.integers(0, 8))):
            label = draw(st.sampled_from([*classes, "/m/unknown"]))
            mine = [b for b in boxes if b[0] == im]
            if mine and draw(st.booleans()):  # on or inside a box: TPs, duplicates, group-of absorption
                b = draw(st.sampled_from(mine))
                label = b[1] if draw(st.integers(0, 3)) else label
                x1, x2, y1, y2 = b[2:6]
                if draw(st.booleans()):
                    x2, y2 = x1 + (x2 - x1) / 2, y1 + (y2 - y1) / 2
            elif draw(st.integers(0, 9)) == 0:
                x1, x2, y1, y2 = 0.5, 0.25, 0.0, 1.0  # inverted: dropped
            else:
                x1, x2, y1, y2 = box()
            dets.append([im, label, 0.0, x1, x2, y1, y2])
    perm = draw(st.permutations(range(len(dets))))
    negative = draw(st.booleans())
    for d, p in zip(dets, perm):
        d[2] = (p + 1) / (len(dets) + 1) - (0.3 if negative else 0.0)
    dets = [tuple(d) for d in dets]
    weight = draw(st.sampled_from([1.0, 1.0, 0.5, 0.0]))
    expand = draw(st.booleans())
    return hierarchy, boxes, labels, dets, weight, expand


def _write(folder: Path, hierarchy, boxes, labels, dets) -> tuple[Path, Path, Path, Path]:
    paths = tuple(folder / n for n in ("h.json", "boxes.csv", "labels.csv", "dets.csv"))
    paths[0].write_text(json.dumps(hierarchy))
    paths[1].write_text(
        "\n".join(
            [BOX_HEADER] + [f"{r[0]},xclick,{r[1]},1,{r[2]!r},{r[3]!r},{r[4]!r},{r[5]!r},0,0,{r[6]},0,0" for r in boxes]
        )
        + "\n"
    )
    paths[2].write_text(
        "\n".join(["ImageID,Source,LabelName,Confidence"] + [f"{a},verification,{b},{c}" for a, b, c in labels])
    )
    paths[3].write_text(
        "\n".join(
            ["ImageID,LabelName,Score,XMin,XMax,YMin,YMax"]
            + [",".join(map(str, (r[0], r[1], *(repr(v) for v in r[2:])))) for r in dets]
        )
        + "\n"
    )
    return paths


@settings(max_examples=examples(250))
@given(datasets())
def test_openimages_matches_reference(data):
    hierarchy, boxes, labels, dets, weight, expand = data
    want, want_map = reference(boxes, labels, dets, hierarchy, expand=expand, group_of_weight=weight)
    with tempfile.TemporaryDirectory() as tmp:
        h, b, lab, d = _write(Path(tmp), hierarchy, boxes, labels, dets)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = deteval.evaluate(
                str(d),
                str(b),
                protocol="openimages",
                labels=str(lab),
                hierarchy=str(h),
                expand=expand,
                group_of_weight=weight,
            )
    got = {r["name"]: r["AP"] for r in res.per_class}
    assert set(got) == set(want)
    for name, ap in want.items():
        if ap is None:
            assert got[name] is None, name
        else:
            assert got[name] is not None and abs(got[name] - ap) <= 1e-12, (name, got[name], ap)
    if want_map is None:
        assert res.stats["mAP"] == -1.0
    else:
        assert abs(res.stats["mAP"] - want_map) <= 1e-12


def test_a_large_ranking_matches_reference(tmp_path):
    """Classes of hundreds of detections (deteval's threaded radix ranking path), scores of both signs."""
    rng = np.random.default_rng(7)
    classes = ["/m/a", "/m/b"]
    hierarchy = {"LabelName": "/m/r", "Subcategory": [{"LabelName": "/m/a", "Subcategory": [{"LabelName": "/m/b"}]}]}
    boxes, dets = [], []
    for i in range(30):
        for _ in range(rng.integers(1, 6)):
            x, y = (float(v) for v in rng.integers(0, 7, 2) / 8)
            boxes.append((f"im{i}", classes[rng.integers(2)], x, x + 0.25, y, y + 0.25, int(rng.random() < 0.2)))
        for _ in range(25):
            x, y = (float(v) for v in rng.integers(0, 13, 2) / 16)
            dets.append([f"im{i}", classes[rng.integers(2)], 0.0, x, x + 0.25, y, y + 0.25])
    for d, p in zip(dets, rng.permutation(len(dets))):
        d[2] = float((p + 1) / (len(dets) + 1) - 0.5)
    dets = [tuple(d) for d in dets]
    labels = [(f"im{i}", "/m/b", 0) for i in range(0, 30, 4)]
    want, want_map = reference(boxes, labels, dets, hierarchy)
    h, b, lab, d = _write(tmp_path, hierarchy, boxes, labels, dets)
    res = deteval.evaluate(str(d), str(b), protocol="openimages", labels=str(lab), hierarchy=str(h))
    assert min(r["num_det"] for r in res.per_class) >= 256
    assert {r["name"]: r["AP"] for r in res.per_class} == pytest.approx(want, abs=1e-12)
    assert res.stats["mAP"] == pytest.approx(want_map, abs=1e-12)

"""``result.matches`` and ``result.per_image`` of the lvis protocol equal lvis-api's own ``eval_imgs``, row by row
(lvis-api run in the test: support.lvis_oracle), on the lvis100 fixture and generated federated datasets."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from support.examples import examples
from support.lvis_oracle import fixture_files, run_lvis
from support.match_rows import KEYS, assert_rows_equal, expected_lvis_matches
from support.warned import oddities_warned
from test_lvis_parity import lvis_cases  # the lvis parity suite's generated datasets

import deteval


def _marked(dets: list) -> list:
    """The results with their file row under ``_row``, which lvis-api keeps through its reordering cut."""
    return [dict(d, _row=i) for i, d in enumerate(dets)]


def _check(dets: list, gt, iou_type: str = "bbox", max_dets: int = 300) -> deteval.EvalResult:
    ev = run_lvis(gt, _marked(dets), iou_type, max_dets=max_dets)
    with oddities_warned():  # generated mask results may lack a segmentation: scored as lvis-api scores them
        res = deteval.evaluate(
            dets, gt, protocol="lvis", iou_type=iou_type, config={"max_dets": max_dets}, matches=True
        )
    assert_rows_equal(res.matches, expected_lvis_matches(ev), KEYS)
    per_image = {r["image_id"]: r for r in res.per_image}
    for r in res.matches:  # the per-image counts are the rows' at IoU .50 (no other reference holds them)
        assert r["image_id"] in per_image
    at50 = [r for r in res.matches if r["iou_thr"] == 0.5 and r["det_index"] is not None]
    for image_id, row in per_image.items():
        mine = [r for r in at50 if r["image_id"] == image_id]
        assert row["num_dt"] == len(mine)
        assert row["tp"] == sum(r["gt_id"] is not None and not r["ignored"] for r in mine)
        assert row["fp"] == sum(r["gt_id"] is None and not r["ignored"] for r in mine)
    return res


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_lvis100_matches_lvis_api(tmp_path, iou_type):
    files = fixture_files(tmp_path)
    dets = json.loads(open(files[f"dets_{iou_type}"], encoding="utf-8").read())
    res = _check(dets, files["lvis_val_100"], iou_type)
    assert any(r["ignored"] for r in res.matches)  # not-exhaustive categories' unmatched detections


@settings(max_examples=examples(60))
@given(lvis_cases())
def test_generated_lvis_matches_lvis_api(case):
    (gt, dets, max_dets), iou_type = case
    _check(dets, gt, iou_type, max_dets)

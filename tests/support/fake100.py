"""coco_fake100's files (pycocotools' own test data, tests/data/coco_fake100): the pair the resampling tests share."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "coco_fake100"
GT = DATA / "instances_val2014_100.json"
PREDS = {"bbox": DATA / "instances_val2014_fakebbox100_results.json",
         "segm": DATA / "instances_val2014_fakesegm100_results.json"}  # fmt: skip

"""Reproduce the pycocotools numbers recorded beside reference data, and VOC's.

    python scripts/reproduce_shared.py [--data DIR]   # default: the repository's tests/data

Each `pycocotools_summary*.txt` beside the data records pycocotools 2.0.11's stats at full
precision for one (results, ground truth, iou type); deteval's must be equal (==), not close.
The VOC reference (`voc100/reference/voc_eval_reference.json`) gives py-faster-rcnn voc_eval's
per-class AP; deteval's must agree to 1e-12. Exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import warnings
from pathlib import Path

import deteval


def summaries(data: Path):
    """(results path, gt path, iou type, stats) for each recorded pycocotools run."""
    for summary in sorted(data.glob("**/pycocotools_summary*.txt")):
        gt = dt = iou_type = None
        for line in summary.read_text().splitlines():
            if line.startswith("# gt="):
                gt = summary.parent / Path(line[5:].strip()).name
            elif line.startswith("# dt="):
                dt = summary.parent / Path(line[5:].strip()).name
            elif line.startswith("type="):
                iou_type = line[5:].strip()
            elif line.startswith("stats(full precision)=") and gt and dt and gt.exists() and dt.exists():
                yield dt, gt, iou_type, ast.literal_eval(line.split("=", 1)[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "tests" / "data",
        help="a folder of data pairs with their recorded pycocotools_summary*.txt (default: tests/data)",
    )
    args = parser.parse_args()
    failures = 0
    warnings.simplefilter("ignore", deteval.DetevalWarning)
    for dt, gt, iou_type, expected in summaries(args.data):
        got = list(deteval.evaluate(dt, gt, iou_type=iou_type).stats.values())
        ok = got == expected
        failures += not ok
        print(f"{'ok  ' if ok else 'DIFF'} coco {iou_type:9s} {dt.relative_to(args.data)}  AP={got[0]!r}")
    voc = args.data / "voc100"
    reference = voc / "reference" / "voc_eval_reference.json"
    if not reference.is_file():
        print(f"skip voc07/voc10: no {reference.relative_to(args.data)} (voc_eval's per-class AP) in {args.data}")
        return 1 if failures else 0
    ref = json.loads(reference.read_text())
    for protocol, key in (("voc07", "voc07_11pt"), ("voc10", "voc10_allpt")):
        for iou in (0.5, 0.75):
            want = ref[f"iou{iou}_{key}"]
            res = deteval.evaluate(
                voc / "dets_txt", voc / "gt_xml", protocol=protocol, iou_thrs=(iou,), names=voc / "voc.names"
            )
            got = {row["name"]: row["AP"] for row in res.per_class}
            per_class = want["per_class_AP"]
            diff = max(abs(got[name] - ap) for name, ap in per_class.items() if isinstance(ap, float))
            ok = diff <= 1e-12
            failures += not ok
            mean = res.stats["mAP"]
            print(f"{'ok  ' if ok else 'DIFF'} {protocol} IoU {iou}: max per-class |diff| {diff:.1e}, mAP {mean!r}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""``deteval compare PREDS_A PREDS_B GT``: paired bootstrap comparison of two models (deteval.analysis.comparison)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from deteval.errors import InputError


def _parser() -> argparse.ArgumentParser:
    from deteval import protocols
    from deteval.cli.parse import interval_level, positive_int

    p = argparse.ArgumentParser(
        prog="deteval compare",
        description="Compare two models' results on the same ground truth: every stat of both, their "
        "difference (B - A) with a paired bootstrap interval and p-value, and per-class AP deltas.",
    )
    p.add_argument("preds_a", help="model A's detections")
    p.add_argument("preds_b", help="model B's detections")
    p.add_argument("gt", help="the ground truth")
    p.add_argument("--protocol", default="coco", choices=protocols.available(), help="the protocol (default coco)")
    p.add_argument("--iou-type", default="bbox", choices=["bbox", "segm", "keypoints"], help="what is compared")
    p.add_argument("--bootstrap", type=positive_int, default=1000, metavar="N", help="replicates (default 1000)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="the bootstrap's seed (default 0)")
    p.add_argument(
        "--level", type=interval_level, default=0.95, metavar="L", help="the intervals' level (default 0.95)"
    )
    p.add_argument("--names", metavar="FILE", help="voc07/voc10: class names file of VOC text detections")
    p.add_argument("--json", metavar="PATH", help="write the comparison as JSON (- for stdout)")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return p


def compare_main(argv: Sequence[str]) -> int:
    """Run ``deteval compare``; the exit status (0 done, 2 bad input)."""
    args = _parser().parse_args(list(argv))
    from deteval.api import compare

    try:
        result = compare(
            args.preds_a, args.preds_b, args.gt, n=args.bootstrap, seed=args.seed, level=args.level,
            protocol=args.protocol, iou_type=args.iou_type, **({"names": args.names} if args.names else {}),
        )  # fmt: skip
        text = json.dumps(result.to_dict(), indent=2) + "\n"
        if args.json not in (None, "-"):
            Path(args.json).write_text(text)
    except (InputError, OSError) as exc:
        print(f"deteval: error: {exc}", file=sys.stderr)
        return 2
    out = sys.stderr if args.json == "-" else sys.stdout
    if not args.quiet:
        print(result.format_table(), file=out)
    if args.json == "-":
        sys.stdout.write(text)
    return 0

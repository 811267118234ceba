"""``deteval compare PREDS_A PREDS_B GT``: paired bootstrap comparison of two models (deteval.analysis.comparison)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from deteval.errors import InputError


def _parser():
    from deteval import protocols
    from deteval.cli.parse import Parser, interval_level, positive_int

    p = Parser(
        prog="deteval compare",
        description="Compare two models' results on the same ground truth: every stat of both, their "
        "difference (B - A) with a paired bootstrap interval and p-value, and per-class AP deltas.",
    )
    p.add_argument("preds_a", metavar="PREDS_A", help="model A's detections")
    p.add_argument("preds_b", metavar="PREDS_B", help="model B's detections")
    p.add_argument("gt", metavar="GT", help="the ground truth")
    p.add_argument("--protocol", default="coco", choices=protocols.available(), help="the protocol (default coco)")
    p.add_argument(
        "--iou-type", help="what is compared: bbox, segm, keypoints, obb (default bbox, or the protocol's only one)"
    )
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
    """Run ``deteval compare``; the exit status (0 done, 2 bad input); a usage error raises ``SystemExit(2)``."""
    from deteval.api import compare
    from deteval.cli.parse import iou_type_of

    try:
        args = _parser().parse_args(list(argv))
        args.iou_type = iou_type_of(args.protocol, args.iou_type)
    except InputError as exc:
        print(f"deteval compare: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None

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

"""``deteval compare PREDS_A PREDS_B GT``: paired bootstrap comparison of two models (deteval.analysis.comparison)."""

from __future__ import annotations

import argparse
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
    p.add_argument(
        "--max-input-bytes", type=positive_int, metavar="N", help="the most bytes read from a stream or a .gz input"
    )
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return p


def compare_main(argv: Sequence[str]) -> int:
    """Run ``deteval compare``; the exit status (0 done, 2 bad input); a usage error raises ``SystemExit(2)``.

    ``--json`` follows the main command's output rule (:mod:`deteval.cli.guard`): never an input nor
    inside an input folder, checked before anything is loaded, written to a temporary and renamed.
    """
    from deteval.cli.parse import iou_type_of
    from deteval.io.json_source import max_input_bytes

    try:
        args = _parser().parse_args(list(argv))
        args.iou_type = iou_type_of(args.protocol, args.iou_type)
    except InputError as exc:
        print(f"deteval compare: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    with max_input_bytes(args.max_input_bytes):
        return _compare(args)


def _compare(args: argparse.Namespace) -> int:
    from deteval.api import compare
    from deteval.cli.guard import Staging, check_outputs, input_files

    target = None
    try:
        read = input_files({"PREDS_A": args.preds_a, "PREDS_B": args.preds_b, "GT": args.gt, "--names": args.names})
        if args.json not in (None, "-"):
            check_outputs({"--json": (args.json, False)}, read)
        from deteval.analysis.intervals import check_replicates

        check_replicates(args.bootstrap, "--bootstrap")
        result = compare(
            args.preds_a, args.preds_b, args.gt, n=args.bootstrap, seed=args.seed, level=args.level,
            protocol=args.protocol, iou_type=args.iou_type, **({"names": args.names} if args.names else {}),
        )  # fmt: skip
        text = json.dumps(result.to_dict(), indent=2) + "\n"
        if args.json not in (None, "-"):
            target = Path(args.json)
            staging = Staging(read)
            try:
                staging.file(target, "--json").write_text(text, encoding="utf-8")
                staging.commit()
            finally:
                staging.discard()
    except InputError as exc:
        print(f"deteval: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the message names the file the user gave, not a temporary
        if target is None:
            raise  # not the output's: main() reports it
        print(f"deteval: error: {InputError(f'--json: cannot write {target}', None, exc.strerror or str(exc))}",
              file=sys.stderr)  # fmt: skip
        return 2
    out = sys.stderr if args.json == "-" else sys.stdout
    if not args.quiet:
        print(result.format_table(), file=out)
    if args.json == "-":
        sys.stdout.write(text)
    return 0

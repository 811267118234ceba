"""``deteval`` command line: evaluate a results file against ground truth and print the summary.

Protocols may add their own flags: a protocol module that defines
``add_cli_arguments(parser)`` and ``options_from_args(args) -> dict`` gets
them called, and the options go to its ``evaluate``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from deteval import protocols
from deteval.errors import InputError


def _sample_pair() -> tuple[str, str]:
    from importlib import resources

    root = resources.files("deteval") / "sample_data"
    return (
        str(root / "instances_val2014_fakebbox100_results.json"),
        str(root / "instances_val2014_100.json"),
    )


def _base_parser(add_help: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="deteval",
        add_help=add_help,
        description="Evaluate object detections against ground truth (COCO, bit-identical to pycocotools).",
        epilog="example: deteval --protocol coco results.json instances_val2017.json",
    )
    p.add_argument("preds", nargs="?", help="detections (COCO results JSON, or a protocol's own format)")
    p.add_argument("gt", nargs="?", help="ground truth (COCO JSON, or a protocol's own format)")
    p.add_argument(
        "--protocol", default="coco", choices=protocols.available(), help="evaluation protocol (default: coco)"
    )
    p.add_argument("--iou-type", default="bbox", help="what is compared: bbox (default), segm, keypoints")
    p.add_argument(
        "--fixed", action="store_true", help="correct the reference tool's quirks instead of reproducing them"
    )
    p.add_argument("--json", metavar="PATH", help="write stats and per-class results as JSON")
    p.add_argument("--arrays", metavar="PATH.npz", help="write the raw arrays (precision, recall, scores ...) as .npz")
    p.add_argument("--per-class", action="store_true", help="print a per-class table after the summary")
    # per-class exports, curves and plots (deteval.report, deteval.curves, deteval.plots)
    p.add_argument(
        "--sort-by", metavar="COLUMN", help="sort per-class rows (--per-class, --csv, --markdown) by COLUMN, e.g. AP"
    )
    p.add_argument("--csv", metavar="PATH", help="write the per-class results as CSV")
    p.add_argument("--markdown", metavar="PATH", help="write the per-class results as a Markdown table")
    p.add_argument("--curves", metavar="PATH.json", help="write per-class and mean PR curves at IoU .50 as JSON")
    p.add_argument("--plot", metavar="DIR", help="write pr_curves.png and per_class_ap.png (needs matplotlib)")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.add_argument(
        "--sample", action="store_true", help="evaluate the bundled 100-image COCO sample (ignores PREDS GT)"
    )
    return p


def build_parser(protocol: str = "coco") -> argparse.ArgumentParser:
    """The full parser for ``protocol``: common flags plus the protocol's own."""
    parser = _base_parser()
    module = protocols.get(protocol)
    if hasattr(module, "add_cli_arguments"):
        module.add_cli_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 bad input or usage)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # first pass: only to learn the protocol, whose flags join the full parser (and its --help)
    known, _ = _base_parser(add_help=False).parse_known_args(argv)
    parser = build_parser(known.protocol)
    args = parser.parse_args(argv)
    if args.sample:
        args.preds, args.gt = _sample_pair()
    if args.preds is None or args.gt is None:
        parser.error("PREDS and GT are required (or --sample)")
    module = protocols.get(args.protocol)

    from deteval.api import evaluate

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            options = module.options_from_args(args) if hasattr(module, "options_from_args") else {}
            result = evaluate(
                args.preds, args.gt, protocol=args.protocol, iou_type=args.iou_type, compat=not args.fixed, **options
            )
        except InputError as exc:
            print(f"deteval: error: {exc}", file=sys.stderr)
            return 2
    # files first: a closed pipe on stdout (| head) must not lose them
    if args.json:
        result.to_json(Path(args.json))
    if args.arrays:
        result.save_arrays(Path(args.arrays))
    status = _write_exports(args, result)
    if status:
        return status
    if not args.quiet:
        for w in caught:
            print(f"deteval: warning: {w.message}", file=sys.stderr)
        print(result.summary())
        if args.per_class:
            from deteval.report import per_class_table

            print()
            print(per_class_table(result, sort_by=args.sort_by))
    return 0


def _write_exports(args: argparse.Namespace, result) -> int:
    """Write the --csv, --markdown, --curves and --plot files; 2 (with a message) when one cannot be made."""
    try:
        if args.sort_by is not None and result.per_class and args.sort_by not in result.per_class[0]:
            raise ValueError(f"--sort-by: no column {args.sort_by!r}; choose one of: {', '.join(result.per_class[0])}")
        if args.csv or args.markdown:
            from deteval.report import per_class_csv, per_class_markdown

            if args.csv:
                Path(args.csv).write_text(per_class_csv(result, sort_by=args.sort_by), newline="")
            if args.markdown:
                Path(args.markdown).write_text(per_class_markdown(result, sort_by=args.sort_by))
        if args.curves:
            from deteval.curves import write_pr_curves

            write_pr_curves(result, Path(args.curves))
        if args.plot:
            from deteval.curves import default_iou
            from deteval.plots import plot_pr_curves

            plot_pr_curves(result, Path(args.plot), iou=default_iou(result))
    except (ValueError, ImportError) as exc:
        print(f"deteval: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

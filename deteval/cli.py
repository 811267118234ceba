"""``deteval`` command line: evaluate a results file against ground truth and print the summary.

Beyond the summary: per-class tables and exports (``--per-class``, ``--csv``,
``--markdown``, ``--json``; with the best-F1 operating point per class when the
protocol records per-detection outcomes), curves (``--curves``), plots
(``--plot``), P/R/F at a score threshold (``--score-thr``) and a confusion
matrix (``--confusion``).

Protocols may add their own flags: a protocol module that defines
``add_cli_arguments(parser)`` and ``options_from_args(args) -> dict`` gets
them called, and the options go to its ``evaluate``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import warnings
from pathlib import Path

from deteval import protocols
from deteval.errors import InputError
from deteval.result import jsonable as _jsonable


def _sample_pair() -> tuple[str, str]:
    from importlib import resources

    root = resources.files("deteval") / "sample_data"
    return (
        str(root / "instances_val2014_fakebbox100_results.json"),
        str(root / "instances_val2014_100.json"),
    )


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return v


def _finite_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return v


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
    p.add_argument(
        "--curves",
        metavar="PATH.json",
        help="write PR curves at IoU .50 as JSON: COCO's 101-point curves, the raw step curves, "
        "P/R/F-beta vs score and the operating points",
    )
    p.add_argument(
        "--plot",
        metavar="DIR",
        help="write plots (needs matplotlib): pr_curves.png, per_class_ap.png (COCO), pr_per_class.png, "
        "f1_confidence.png, confusion_matrix.png (with --confusion)",
    )
    p.add_argument(
        "--beta", type=_positive_float, default=1.0, metavar="B", help="F-beta weight of recall (default: 1, F1)"
    )
    p.add_argument(
        "--at-iou",
        type=_positive_float,
        metavar="T",
        help="the IoU threshold of the curves, plots and operating points (one that was evaluated; default .50)",
    )
    p.add_argument(
        "--at-area",
        metavar="LABEL",
        help="the area range of the curves, plots and operating points (default: all)",
    )
    p.add_argument(
        "--score-thr",
        type=_finite_float,
        metavar="S",
        help="print precision, recall and F-beta per class, micro and macro, keeping detections with score >= S",
    )
    p.add_argument(
        "--confusion",
        nargs="?",
        const="0.5:0.25",
        metavar="IOU:SCORE",
        help="print a class-agnostic confusion matrix (boxes; default 0.5:0.25: IoU >= 0.5, score >= 0.25; "
        "over 20 classes present: a per-class summary and the top confusions); "
        "put it after PREDS GT or write --confusion=IOU:SCORE",
    )
    p.add_argument(
        "--tide",
        action="store_true",
        help="TIDE error breakdown (Cls, Loc, Both, Dupe, Bkg, Miss and their dAP), as tidecv 1.0.1 computes it "
        "(coco protocol, boxes); printed, and under 'tide' in --json",
    )
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
    args.confusion_thrs = None
    if args.confusion is not None:
        from deteval.confusion import parse_confusion_spec

        try:
            args.confusion_thrs = parse_confusion_spec(args.confusion)
        except ValueError as exc:
            if args.preds is not None and args.gt is None and not re.fullmatch(r"[-+0-9.eE:]*", args.confusion):
                # `--confusion PREDS GT`: the flag's optional value took PREDS
                args.preds, args.gt = args.confusion, args.preds
                args.confusion_thrs = (0.5, 0.25)
            else:
                parser.error(f"--confusion: {exc}")
    if args.sample:
        args.preds, args.gt = _sample_pair()
    if args.preds is None or args.gt is None:
        parser.error("PREDS and GT are required (or --sample)")
    module = protocols.get(args.protocol)

    from deteval.api import evaluate_loaded, load_inputs
    from deteval.progress import Progress

    writes = any((args.json, args.csv, args.markdown, args.curves, args.plot))
    stages = 2 + (args.confusion_thrs is not None) + args.tide + writes
    with Progress(stages, enabled=not args.quiet) as progress:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                options = module.options_from_args(args) if hasattr(module, "options_from_args") else {}
                progress.stage("loading")
                dets, gt = load_inputs(args.preds, args.gt, protocol=args.protocol, iou_type=args.iou_type)
                progress.stage("evaluating")
                result = evaluate_loaded(
                    dets, gt, protocol=args.protocol, iou_type=args.iou_type, compat=not args.fixed, **options
                )
            except InputError as exc:
                progress.close()
                print(f"deteval: error: {exc}", file=sys.stderr)
                return 2
        status, result, extras = _after_evaluation(args, module, result, dets, gt, progress)
    if status:
        return status
    if not args.quiet:
        for w in caught:
            print(f"deteval: warning: {w.message}", file=sys.stderr)
        _print_results(args, result, extras)
    return 0


def _tide(args: argparse.Namespace):
    """TIDE on the CLI's files: read again, for tidecv's image order (it breaks score ties)."""
    from deteval.tide import tide_errors

    if args.protocol != "coco" or args.iou_type != "bbox":
        raise ValueError(f"TIDE is defined for --protocol coco --iou-type bbox, not {args.protocol} {args.iou_type}")
    return tide_errors(args.preds, args.gt)


def _after_evaluation(args: argparse.Namespace, module, result, dets, gt, progress):
    """Operating points, confusion matrix, TIDE and files: ``(status, result, extras)``.

    ``extras`` holds what is printed after the summary: ``score_thr`` (text), ``confusion``, ``tide``.
    """
    extras: dict = {"score_thr": None, "confusion": None, "tide": None}
    flag = ""
    try:
        if (
            result.outcomes is not None
            and result.per_class
            and (args.json or args.csv or args.markdown or args.per_class or args.sort_by)
        ):
            from deteval.report import with_operating_points

            flag = "--at-iou/--at-area"
            result = with_operating_points(result, beta=args.beta, iou=args.at_iou, area=args.at_area)
        if args.confusion_thrs is not None:
            progress.stage("confusion matrix")
            flag = "--confusion"
            extras["confusion"] = _confusion(args, module, dets, gt)
        if args.tide:
            progress.stage("TIDE")
            flag = "--tide"
            extras["tide"] = _tide(args)
        if args.score_thr is not None:
            flag = "--score-thr"
            extras["score_thr"] = _score_thr_text(result, args)
    except (InputError, ValueError, TypeError) as exc:
        progress.close()
        print(f"deteval: error: {flag}: {exc}", file=sys.stderr)
        return 2, result, extras
    tide, confusion = extras["tide"], extras["confusion"]
    # files first: a closed pipe on stdout (| head) must not lose them
    try:
        for path in (args.json, args.arrays, args.csv, args.markdown, args.curves):
            if path:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        if args.plot:
            Path(args.plot).mkdir(parents=True, exist_ok=True)
        if any((args.json, args.csv, args.markdown, args.curves, args.plot)):
            progress.stage("writing files")
        if args.json:
            payload = result.to_dict() | ({"tide": tide.to_dict()} if tide is not None else {})
            Path(args.json).write_text(json.dumps(_jsonable(payload), indent=2) + "\n")
        if args.arrays:
            result.save_arrays(Path(args.arrays))
        _write_exports(args, result, confusion)
    except OSError as exc:
        progress.close()
        print(f"deteval: error: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2, result, extras
    except (ValueError, ImportError) as exc:
        progress.close()
        print(f"deteval: error: {exc}", file=sys.stderr)
        return 2, result, extras
    return 0, result, extras


def _print_results(args: argparse.Namespace, result, extras: dict) -> None:
    print(result.summary())
    if args.per_class:
        from deteval.report import per_class_table

        print()
        print(per_class_table(result, sort_by=args.sort_by))
    if extras["score_thr"] is not None:
        print()
        print(extras["score_thr"])
    confusion = extras["confusion"]
    if confusion is not None:
        print()
        shown = len(confusion.present())
        print(confusion.format_table() if shown <= 20 else confusion.format_summary())
    if extras["tide"] is not None:
        print()
        print(extras["tide"].summary())


def _score_thr_text(result, args: argparse.Namespace) -> str:
    if result.outcomes is None:
        return f"--score-thr: the {result.protocol!r} result holds no per-detection outcomes"
    from deteval.operating_points import operating_points_at

    pts = operating_points_at(result, args.score_thr, iou=args.at_iou, area=args.at_area, beta=args.beta)
    head = (
        f"At score >= {args.score_thr:g} (IoU={pts.iou:.2f}, area={pts.area}); "
        f"micro: counts pooled over classes; macro: mean over classes with ground truth"
    )
    return head + "\n" + pts.format_table(only_with_gt=True)


def _confusion(args: argparse.Namespace, module, dets, gt):
    """The confusion matrix of the CLI's inputs, from the containers the evaluation loaded."""
    from deteval.confusion import confusion_matrix
    from deteval.types import Detections, GroundTruth

    if args.iou_type != "bbox":
        raise ValueError(f"the confusion matrix compares boxes only, not --iou-type {args.iou_type}")
    if not (isinstance(dets, Detections) and isinstance(gt, GroundTruth)):
        # VOC's loading hook passes paths through (its loaders need the protocol's options)
        opts = module.options_from_args(args)
        dets, gt = module._load(dets, gt, opts["names"], opts["image_set"], opts["box_format"])
    iou, score = args.confusion_thrs
    return confusion_matrix(dets, gt, iou_thr=iou, score_thr=score)


def _write_exports(args: argparse.Namespace, result, confusion=None) -> None:
    """Write the --csv, --markdown, --curves and --plot files; ValueError/ImportError when one cannot be made."""
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

        write_pr_curves(
            result, Path(args.curves), iou=args.at_iou, area=args.at_area or "all", beta=args.beta,
            score_thr=args.score_thr,
        )  # fmt: skip
    if args.plot:
        _write_plots(args, result, confusion)


def _write_plots(args: argparse.Namespace, result, confusion) -> None:
    from deteval import plots
    from deteval.curves import default_iou, has_coco_arrays

    out = Path(args.plot)
    iou = default_iou(result) if args.at_iou is None else args.at_iou
    area = args.at_area or "all"
    if has_coco_arrays(result):
        plots.plot_pr_curves(result, out, iou=iou, area=area)
    elif result.outcomes is None:
        raise ValueError(f"--plot: the {result.protocol!r} result has neither COCO arrays nor per-detection outcomes")
    if result.outcomes is not None:
        plots.plot_pr_per_class(result, out / "pr_per_class.png", iou=iou, area=area)
        plots.plot_f_vs_confidence(result, out / f"f{args.beta:g}_confidence.png", iou=iou, area=area, beta=args.beta)
    if confusion is not None:
        plots.plot_confusion_matrix(confusion, out / "confusion_matrix.png")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

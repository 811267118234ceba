"""The ``deteval`` command line, written: the result files (--json, --arrays, --csv ...) and stdout."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from deteval.cli.run import Extras, flag_errors
from deteval.errors import InputError
from deteval.result import EvalResult, jsonable

_FILE_FLAGS = ("json", "arrays", "csv", "markdown", "curves")


def wants_files(args: argparse.Namespace) -> bool:
    return any((args.json, args.csv, args.markdown, args.curves, args.plot))


def write_files(args: argparse.Namespace, result: EvalResult, extras: Extras, progress) -> None:
    """Every file asked for; :class:`InputError` when one cannot be made or written."""
    try:
        for name in _FILE_FLAGS:
            path = getattr(args, name)
            if path:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        if args.plot:
            Path(args.plot).mkdir(parents=True, exist_ok=True)
        if wants_files(args):
            progress.stage("writing files")
        if args.json:
            payload = result.to_dict() | ({"tide": extras.tide.to_dict()} if extras.tide is not None else {})
            Path(args.json).write_text(json.dumps(jsonable(payload), indent=2) + "\n")
        if args.arrays:
            result.save_arrays(Path(args.arrays))
        _write_exports(args, result, extras.confusion)
    except OSError as exc:
        # the message reads "cannot write PATH: REASON"
        raise InputError(f"cannot write {exc.filename}", None, exc.strerror or str(exc)) from None


def _write_exports(args: argparse.Namespace, result: EvalResult, confusion=None) -> None:
    """The --csv, --markdown, --curves and --plot files."""
    if args.sort_by is not None and result.per_class and args.sort_by not in result.per_class[0]:
        raise InputError(
            "--sort-by", None, f"no column {args.sort_by!r}; choose one of: {', '.join(result.per_class[0])}"
        )
    if args.csv or args.markdown:
        from deteval.report import per_class_csv, per_class_markdown

        if args.csv:
            Path(args.csv).write_text(per_class_csv(result, sort_by=args.sort_by), newline="")
        if args.markdown:
            Path(args.markdown).write_text(per_class_markdown(result, sort_by=args.sort_by))
    if args.curves:
        from deteval.curves import write_pr_curves

        with flag_errors("--curves"):
            write_pr_curves(
                result, Path(args.curves), iou_thr=args.at_iou, area=args.at_area or "all", beta=args.beta,
                score_thr=args.score_thr,
            )  # fmt: skip
    if args.plot:
        with flag_errors("--plot"):
            _write_plots(args, result, confusion)


def _write_plots(args: argparse.Namespace, result: EvalResult, confusion) -> None:
    from deteval import plots
    from deteval.curves import default_iou
    from deteval.result import CocoResult

    out = Path(args.plot)
    iou_thr = default_iou(result) if args.at_iou is None else args.at_iou
    area = args.at_area or "all"
    if isinstance(result, CocoResult):
        plots.plot_pr_curves(result, out, iou_thr=iou_thr, area=area)
    elif result.outcomes is None:
        raise ValueError(f"the {result.protocol!r} result has neither COCO arrays nor per-detection outcomes")
    if result.outcomes is not None:
        plots.plot_pr_per_class(result, out / "pr_per_class.png", iou_thr=iou_thr, area=area)
        plots.plot_f_vs_confidence(
            result, out / f"f{args.beta:g}_confidence.png", iou_thr=iou_thr, area=area, beta=args.beta
        )
    if confusion is not None:
        plots.plot_confusion_matrix(confusion, out / "confusion_matrix.png")


def print_results(args: argparse.Namespace, result: EvalResult, extras: Extras) -> None:
    """The summary, then what was asked for: per-class table, --score-thr, --confusion, --tide."""
    print(result.summary())
    if args.per_class:
        from deteval.report import per_class_table

        print()
        print(per_class_table(result, sort_by=args.sort_by))
    if extras.score_thr is not None:
        print()
        print(extras.score_thr)
    if extras.confusion is not None:
        print()
        shown = len(extras.confusion.present())
        print(extras.confusion.format_table() if shown <= 20 else extras.confusion.format_summary())
    if extras.tide is not None:
        print()
        print(extras.tide.summary())

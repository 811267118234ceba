"""The ``deteval`` command line, written: the result files (--json, --arrays, --csv ...) and stdout.

Output paths are checked before anything is loaded (:func:`check_paths`). Files are then written
all-or-nothing: each to a temporary file beside its target, renamed into place only once every
output was written (:class:`deteval.cli.guard.Staging`), so a failed or interrupted run changes no output file;
no output may be or lie inside an input (:mod:`deteval.cli.guard`). ``-`` sends --json, --csv or --markdown
to stdout (the summary then goes to stderr); the other outputs refuse it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from deteval import protocols
from deteval.cli.guard import InputFile, Staging, check_outputs, input_files
from deteval.cli.parse import CURVE_POINTS, Invocation
from deteval.cli.run import Extras, flag_errors
from deteval.errors import InputError
from deteval.result import EvalResult, jsonable

_FILE_FLAGS = ("json", "arrays", "csv", "markdown", "curves", "matches", "per_image")
_DIR_FLAGS = ("plot", "report")  # outputs that are folders: DIR created when its parent exists, files replaced in it
TABLE_FLAGS = ("matches", "per_image")  # row tables, in the format their extension names
TABLE_FORMATS = (".json", ".csv")
STDOUT_FLAGS = ("json", "csv", "markdown")  # the flags that take "-" for stdout


def wants_files(args: argparse.Namespace) -> bool:
    return any(getattr(args, name) for name in (*_FILE_FLAGS, *_DIR_FLAGS))


def to_stdout(args: argparse.Namespace) -> list[str]:
    """The flags whose output goes to stdout (``-``), as typed."""
    return [f"--{name}" for name in STDOUT_FLAGS if getattr(args, name) == "-"]


# ---------------------------------------------------------------- checks before loading


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def inputs(inv: Invocation) -> list[InputFile]:
    """Every input of the run (see :mod:`deteval.cli.guard`): the files and folders it reads."""
    args = inv.args
    named = {"PREDS": args.preds, "GT": args.gt, "--config": args.config, "--slices": args.slices}
    flags = {o.name: o.flag for o in protocols.get(args.protocol).options}
    options = {flags.get(k, _flag(k)): v for k, v in inv.options.items() if isinstance(v, (str, os.PathLike))}
    return input_files(named, options)


def check_paths(inv: Invocation) -> None:
    """Every output path usable, none an input (or inside an input folder) nor another output;
    :class:`InputError` naming the flag."""
    args = inv.args
    if len(to_stdout(args)) > 1:
        raise InputError(", ".join(to_stdout(args)), None, "only one output can go to stdout ('-')")
    outputs = {}
    for name in (*_FILE_FLAGS, *_DIR_FLAGS):
        path = getattr(args, name)
        if not path or (path == "-" and name in STDOUT_FLAGS):
            continue
        if path == "-":
            where = "a directory" if name in _DIR_FLAGS else "a file"
            raise InputError(_flag(name), None, f"cannot go to stdout ('-'): give {where}")
        if name in TABLE_FLAGS and _table_format(path) is None:
            rule = f"the format comes from the extension: {' or '.join(TABLE_FORMATS)}, got {path!r}"
            raise InputError(_flag(name), None, rule)
        outputs[_flag(name)] = (path, name in _DIR_FLAGS)
    check_outputs(outputs, inputs(inv))


# ---------------------------------------------------------------- writing, all or nothing


def write_files(
    args: argparse.Namespace, result: EvalResult, extras: Extras, progress, read: list[InputFile] | None = None
) -> list[str]:
    """Every file asked for, all or none; returns the texts for stdout (``-``).

    :class:`InputError` naming the path when one cannot be written. ``read``: the run's inputs
    (:func:`inputs`), which no file of ``--plot``'s directory may be.
    """
    if wants_files(args):
        progress.stage("writing files")
    staging = Staging(read)
    target: Path | None = None  # the output being written, for the error message
    flag = ""
    try:
        texts = _texts(args, result, extras)
        for name in STDOUT_FLAGS:
            if getattr(args, name) and getattr(args, name) != "-":
                flag, target = _flag(name), Path(getattr(args, name))
                # a lone surrogate in a name (valid JSON, not UTF-8) is written as its \\u escape
                text = texts[name]
                staging.file(target, flag).write_text(text, encoding="utf-8", errors="backslashreplace", newline="")
        if args.arrays:
            flag, target = "--arrays", Path(args.arrays)
            result.save_arrays(staging.file(target, flag), compressed=not args.arrays_uncompressed)
        if args.curves:
            flag, target = "--curves", Path(args.curves)
            _write_curves(args, result, staging.file(target, flag))
        for name, table in (("matches", result.match_table), ("per_image", result.image_table)):
            if getattr(args, name):
                flag, target = _flag(name), Path(getattr(args, name))
                text = _table_text(table, getattr(args, name))
                staging.file(target, flag).write_text(text, encoding="utf-8", errors="backslashreplace", newline="")
        if args.plot:
            flag, target = "--plot", Path(args.plot)
            with flag_errors("--plot"):
                _write_plots(args, result, extras.confusion, staging.directory(target, flag), extras.calibration)
        if args.report:
            flag, target = "--report", Path(args.report)
            with flag_errors("--report"):
                _write_report(args, result, extras, staging.directory(target, flag))
        staging.commit()
    except OSError as exc:
        # the message reads "cannot write PATH: REASON", PATH the user's (not a temporary's)
        raise InputError(f"{flag}: cannot write {target}", None, exc.strerror or str(exc)) from None
    finally:
        staging.discard()
    return [texts[name] for name in STDOUT_FLAGS if getattr(args, name) == "-"]


def _texts(args: argparse.Namespace, result: EvalResult, extras: Extras) -> dict[str, str]:
    """--json, --csv and --markdown as text (made before any file is touched)."""
    if args.sort_by is not None and result.per_class and args.sort_by not in result.per_class[0]:
        raise InputError(
            "--sort-by", None, f"no column {args.sort_by!r}; choose one of: {', '.join(result.per_class[0])}"
        )
    texts = {}
    if args.json:
        payload = result.to_dict() | ({"tide": extras.tide.to_dict()} if extras.tide is not None else {})
        for key in ("calibration", "lrp"):
            if getattr(extras, key, None) is not None:
                payload[key] = getattr(extras, key).to_dict()
        if extras.bootstrap is not None:
            payload["bootstrap"] = extras.bootstrap.to_dict(replicates=args.bootstrap_replicates)
        texts["json"] = json.dumps(jsonable(payload), indent=2) + "\n"
    if args.csv or args.markdown:
        from deteval.analysis.report import per_class_csv, per_class_markdown

        if args.csv:
            texts["csv"] = per_class_csv(result, sort_by=args.sort_by)
        if args.markdown:
            texts["markdown"] = per_class_markdown(result, sort_by=args.sort_by)
    return texts


def _table_format(path: str) -> str | None:
    """The table format a path's extension names (``.json``, ``.csv``; any case), or None."""
    ext = os.path.splitext(path)[1].lower()
    return ext if ext in TABLE_FORMATS else None


def _table_text(table, path: str) -> str:
    from deteval.analysis.report import rows_csv, rows_json

    return rows_json(table) if _table_format(path) == ".json" else rows_csv(table)


def _write_curves(args: argparse.Namespace, result: EvalResult, path: Path) -> None:
    from deteval.analysis.curves import write_pr_curves

    with flag_errors("--curves"):
        write_pr_curves(
            result,
            path,
            iou_thr=args.at_iou,
            area=args.at_area or "all",
            beta=args.beta,
            score_thr=args.score_thr,
            max_points=None if args.curves_raw else CURVE_POINTS,
        )


def _write_plots(args: argparse.Namespace, result: EvalResult, confusion, out: Path, calibration=None) -> None:
    from deteval import protocols
    from deteval.analysis import plots
    from deteval.analysis.curves import default_iou
    from deteval.result import CocoResult

    if hasattr(result, "threshold_curves"):  # a protocol's own fixed-threshold curves (widerface, kitti)
        plots.plot_threshold_curves(result, out / "pr_curves.png")
        return
    miss_rate = protocols.get(result.protocol).miss_rate_curves(result)
    if miss_rate is not None:  # the pedestrian protocols
        plots.plot_miss_rate(result, out / "miss_rate_fppi.png", miss_rate)
        return
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
    if calibration is not None:
        plots.plot_reliability(calibration, out / "reliability.png")


def _write_report(args: argparse.Namespace, result: EvalResult, extras: Extras, out: Path) -> None:
    import numpy as np

    from deteval.analysis.html_report import worst_images, write_report

    # the per-image and match rows, where the result carries them (the --per-image / --matches tables); of the
    # matches only the worst images' (the page shows no other), not the millions of rows of a COCO-sized run
    per_image = getattr(result, "per_image", None)
    table = getattr(result, "match_table", None)
    matches = None
    if per_image is not None and table is not None:
        shown = [r["image_id"] for r in worst_images(per_image)]
        matches = table.where(np.isin(table.columns["image_id"], np.array(shown, dtype=object))).records()
    write_report(
        result,
        out,
        tide=extras.tide,
        calibration=extras.calibration,
        per_image=per_image,
        matches=matches,
        iou_thr=args.at_iou,
        area=args.at_area,
        beta=args.beta,
        sources=[("predictions", str(args.preds)), ("ground truth", str(args.gt))],
    )


def print_results(args: argparse.Namespace, result: EvalResult, extras: Extras, out=None) -> None:
    """The summary, then what was asked for: per-class table, --score-thr, --confusion, --tide.

    To ``out`` (default stdout; stderr when an output goes to stdout, so stdout holds that file only).
    """
    out = sys.stdout if out is None else out
    print(result.summary(), file=out)
    if args.per_class:
        from deteval.analysis.report import per_class_table

        print(file=out)
        print(per_class_table(result, sort_by=args.sort_by, all_classes=args.all_classes), file=out)
    if extras.score_thr is not None:
        print(file=out)
        print(extras.score_thr, file=out)
    if extras.confusion is not None:
        print(file=out)
        shown = len(extras.confusion.present())
        print(extras.confusion.format_table() if shown <= 20 else extras.confusion.format_summary(), file=out)
    if extras.tide is not None:
        print(file=out)
        print(extras.tide.summary(), file=out)
    for key in ("calibration", "lrp"):
        if getattr(extras, key, None) is not None:
            print(file=out)
            print(getattr(extras, key).format_table(), file=out)
    if result.slices:
        from deteval.analysis.report import slices_table

        print(file=out)
        print(slices_table(result.slices), file=out)
    if extras.bootstrap is not None:
        print(file=out)
        print(extras.bootstrap.format_table(), file=out)

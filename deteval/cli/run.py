"""The ``deteval`` command line, run: load and evaluate through the protocol object, then the analyses.

Everything here works on what the evaluation loaded (the protocol's containers): no file is read twice.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from deteval import protocols
from deteval.cli.parse import Invocation
from deteval.errors import InputError
from deteval.result import EvalResult


@dataclass
class Extras:
    """What is printed after the summary (and partly written): each None unless asked for."""

    score_thr: str | None = None  # --score-thr's table
    confusion: Any = None  # --confusion's ConfusionMatrix
    tide: Any = None  # --tide's TideResult
    calibration: Any = None  # --calibration's Calibration
    lrp: Any = None  # --lrp's LrpResult
    bootstrap: Any = None  # --bootstrap's BootstrapResult


@contextmanager
def flag_errors(flag: str) -> Iterator[None]:
    """Errors of the work a flag asked for, as :class:`InputError` naming the flag."""
    try:
        yield
    except InputError as exc:
        if exc.source.startswith(flag):  # named the flag already: as it is
            raise
        raise InputError(flag, None, str(exc)) from None
    except (ValueError, TypeError, ImportError) as exc:
        raise InputError(flag, None, str(exc)) from None


MAX_CAL_BINS = 100_000  # --cal-bins: far beyond a useful histogram, and a few MB per class at most


def check_requests(inv: Invocation) -> None:
    """Resource requests within bounds, before anything is loaded: :class:`InputError` naming the flag."""
    args = inv.args
    if getattr(args, "calibration", False) and not 1 <= args.cal_bins <= MAX_CAL_BINS:
        raise InputError("--cal-bins", None, f"must lie between 1 and {MAX_CAL_BINS:,}, got {args.cal_bins:,}")
    if args.bootstrap is not None:
        from deteval.analysis.intervals import check_replicates

        check_replicates(args.bootstrap, "--bootstrap")


def evaluate(inv: Invocation, progress) -> tuple[EvalResult, Any, Any, dict]:
    """``(result, detections, ground truth, read)``: the protocol's evaluation of the command line's inputs;
    ``read`` holds the bytes of the files loaded, by path (``--slice-by`` parses the ground truth's)."""
    args = inv.args
    proto = protocols.get(args.protocol)
    from deteval.protocols.presets import blamed_on, read_config

    preset = read_config(args.config) if args.config is not None else None
    try:
        with blamed_on(preset, inv.options):  # the protocol names the parameter; the user's file gave it: say which
            params = proto.params(
                args.iou_type, compat=not args.fixed, preset=preset, strict=args.strict, **inv.options
            )
    except InputError as exc:  # a keyword the user gave as a flag: named as the flag
        flags = {o.name: o.flag for o in proto.options} | {"iou_type": "--iou-type"}
        if exc.source in flags:
            raise InputError(flags[exc.source], exc.record, exc.rule) from None
        raise
    if getattr(args, "lrp", False):
        if not proto.supports("lrp", args.iou_type):
            where = _defined_for("lrp", with_iou_types=False)
            raise InputError("--lrp", None, f"optimal LRP is defined for {where}, not {args.protocol}")
        import dataclasses

        params = dataclasses.replace(params, keep_iou=True)  # the matching keeps each match's IoU
    report = bool(getattr(args, "report", None))  # the report shows the worst images and their match rows
    if args.matches or args.per_image:
        flag = "--matches" if args.matches else "--per-image"
        try:
            params = proto.keeping_tables(
                params, matches=bool(args.matches) or report, per_image=bool(args.per_image) or report
            )
        except InputError as exc:
            raise InputError(flag, None, exc.rule) from None
    elif report:  # where the protocol keeps the tables
        try:
            params = proto.keeping_tables(params, matches=True, per_image=True)
        except InputError:
            pass
    progress.stage("loading")
    from deteval.io.json_source import keep_reads

    with keep_reads() as read:
        dets, gt = proto.load(args.preds, args.gt, params)
    progress.stage("evaluating")
    return proto.evaluate_loaded(dets, gt, params), dets, gt, read


def analyses(
    inv: Invocation, result: EvalResult, dets: Any, gt: Any, progress, read: dict | None = None
) -> tuple[EvalResult, Extras]:
    """Operating points, confusion matrix, TIDE and --score-thr: ``(result, extras)``. ``read``: :func:`evaluate`'s."""
    args, extras = inv.args, Extras()
    if (
        result.outcomes is not None
        and result.per_class
        and (args.json or args.csv or args.markdown or args.per_class or args.sort_by or args.report)
    ):
        from deteval.analysis.report import with_operating_points

        with flag_errors("--at-iou/--at-area"):
            result = with_operating_points(result, beta=args.beta, iou_thr=args.at_iou, area=args.at_area)
    if inv.confusion_thrs is not None:
        progress.stage("confusion matrix")
        with flag_errors("--confusion"):
            extras.confusion = _confusion(args, inv.confusion_thrs, dets, gt)
    if args.tide:
        progress.stage("TIDE")
        with flag_errors("--tide"):
            extras.tide = _tide(args, dets, gt)
    if getattr(args, "calibration", False):
        from deteval.analysis.calibration import calibration

        with flag_errors("--calibration"):
            extras.calibration = calibration(result, n_bins=args.cal_bins, iou_thr=args.cal_iou_thr)
    if getattr(args, "lrp", False):
        from deteval.analysis.lrp import optimal_lrp

        with flag_errors("--lrp"):
            extras.lrp = optimal_lrp(result)
    if args.slices is not None or args.slice_by is not None:
        from deteval.analysis.slices import read_slices, slice_stats, slices_by_field

        flag = "--slices" if args.slices is not None else "--slice-by"
        with flag_errors(flag):
            if args.slices is not None:
                chosen = read_slices(args.slices)
            else:
                chosen = slices_by_field(args.gt, args.slice_by, raw=(read or {}).get(str(args.gt)))
            result.slices = slice_stats(result, chosen)
    if args.bootstrap is not None:
        from deteval.analysis.intervals import bootstrap_result

        progress.stage("bootstrap")
        with flag_errors("--bootstrap"):
            extras.bootstrap = bootstrap_result(
                result, n=args.bootstrap, seed=args.seed, level=args.level,
                progress=lambda done, n: progress.detail(f"bootstrap {done:,}/{n:,} replicates"),
            )  # fmt: skip
    if args.score_thr is not None:
        with flag_errors("--score-thr"):
            extras.score_thr = _score_thr_text(result, args)
    return result, extras


def _confusion(args: argparse.Namespace, thrs: tuple[float, float], dets: Any, gt: Any):
    """The confusion matrix from the containers the evaluation loaded."""
    from deteval.analysis.confusion import confusion_matrix

    if args.iou_type != "bbox":
        raise ValueError(f"the confusion matrix compares boxes only, not --iou-type {args.iou_type}")
    iou, score = thrs
    return confusion_matrix(dets, gt, iou_thr=iou, score_thr=score)


def _tide(args: argparse.Namespace, dets: Any, gt: Any):
    """TIDE of the loaded containers (the ground truth's image table keeps the file's image order,
    by which tidecv breaks score ties)."""
    from deteval.analysis.tide import tide_from_containers

    if not protocols.get(args.protocol).supports("tide", args.iou_type):
        where = _defined_for("tide", with_iou_types=True)
        raise ValueError(f"TIDE is defined for {where}, not {args.protocol} {args.iou_type}")
    return tide_from_containers(dets, gt, iou_type=args.iou_type)


def _defined_for(analysis: str, with_iou_types: bool) -> str:
    """The protocols (and iou types) that define ``analysis``, as flags: ``--protocol coco --iou-type bbox or segm``."""
    parts = []
    for name in protocols.available():
        iou_types = protocols.get(name).analyses.get(analysis)
        if iou_types:
            parts.append(f"--protocol {name}" + (f" --iou-type {' or '.join(iou_types)}" if with_iou_types else ""))
    return "; ".join(parts) or "no protocol"


def _score_thr_text(result: EvalResult, args: argparse.Namespace) -> str:
    if result.outcomes is None:
        return f"--score-thr: the {result.protocol!r} result holds no per-detection outcomes"
    from deteval.analysis.operating_points import operating_points_at

    pts = operating_points_at(result, args.score_thr, iou_thr=args.at_iou, area=args.at_area, beta=args.beta)
    head = (
        f"At score >= {args.score_thr:g} (IoU={pts.iou:.2f}, area={pts.area}); "
        f"micro: counts pooled over classes; macro: mean over classes with ground truth"
    )
    return head + "\n" + pts.format_table(only_with_gt=True)

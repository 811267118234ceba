"""The ``deteval`` command line, written: the result files (--json, --arrays, --csv ...) and stdout.

Output paths are checked before anything is loaded (:func:`check_paths`). Files are then written
all-or-nothing: each to a temporary file beside its target, renamed into place only once every
output was written (:class:`_Staging`), so a failed or interrupted run changes no output file.
``-`` sends --json, --csv or --markdown to stdout; the summary then goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from deteval.cli.parse import CURVE_POINTS, Invocation
from deteval.cli.run import Extras, flag_errors
from deteval.errors import InputError
from deteval.result import EvalResult, jsonable

_FILE_FLAGS = ("json", "arrays", "csv", "markdown", "curves")
STDOUT_FLAGS = ("json", "csv", "markdown")  # the flags that take "-" for stdout
_INPUT_OPTIONS = {"names": "--names", "image_set": "--image-set"}  # protocol options that name input files
_INPUT_OPTIONS |= {"labels": "--labels", "hierarchy": "--hierarchy", "class_names": "--class-names"}


def wants_files(args: argparse.Namespace) -> bool:
    return any((args.json, args.csv, args.markdown, args.curves, args.plot, args.arrays))


def to_stdout(args: argparse.Namespace) -> list[str]:
    """The flags whose output goes to stdout (``-``), as typed."""
    return [f"--{name}" for name in STDOUT_FLAGS if getattr(args, name) == "-"]


# ---------------------------------------------------------------- checks before loading


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _inputs(inv: Invocation) -> dict[Path, str]:
    """Every input file by resolved path, with the flag (or positional) that names it."""
    args = inv.args
    named = {"PREDS": args.preds, "GT": args.gt, "--config": args.config}
    named |= {flag: inv.options.get(key) for key, flag in _INPUT_OPTIONS.items()}
    return {Path(p).resolve(): what for what, p in named.items() if isinstance(p, (str, os.PathLike))}


def check_paths(inv: Invocation) -> None:
    """Every output path usable, none an input nor another output; :class:`InputError` naming the flag."""
    args = inv.args
    inputs = _inputs(inv)
    seen: dict[Path, str] = {}
    if len(to_stdout(args)) > 1:
        raise InputError(", ".join(to_stdout(args)), None, "only one output can go to stdout ('-')")
    for name in (*_FILE_FLAGS, "plot"):
        path = getattr(args, name)
        if not path or (path == "-" and name in STDOUT_FLAGS):
            continue
        flag = _flag(name)
        _check_target(flag, Path(path), directory=name == "plot")
        resolved = Path(path).resolve()
        clash = inputs.get(resolved) or seen.get(resolved)
        if clash is not None:
            raise InputError(flag, None, f"{path} is also {clash}; refusing to overwrite it")
        seen[resolved] = flag


def _check_target(flag: str, path: Path, *, directory: bool) -> None:
    """The target's parent exists and is writable; the target itself, if present, is of the right kind."""
    parent = path.parent
    if not parent.is_dir():
        # no longer created: a typo in a directory name should not scatter outputs
        problem = "is not a directory" if parent.exists() else "does not exist"
        raise InputError(flag, None, f"cannot write {path}: {parent} {problem}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(flag, None, f"cannot write {path}: directory {parent} is not writable")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(flag, None, f"cannot write {path}: {exc.strerror}") from None
    if directory:
        if not stat.S_ISDIR(mode):
            raise InputError(flag, None, f"{path} exists and is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError(flag, None, f"cannot write into {path}: not writable")
    elif stat.S_ISDIR(mode):
        raise InputError(flag, None, f"{path} is a directory")
    elif not stat.S_ISREG(mode):
        raise InputError(flag, None, f"{path} is not a regular file (a device, pipe or socket)")


# ---------------------------------------------------------------- writing, all or nothing


class _Staging:
    """Temporary files and directories beside their targets; :meth:`commit` renames them all into place.

    Renames within one directory are atomic, so each target is either old or new, never half written;
    :meth:`discard` (on any failure) removes every temporary and leaves the targets untouched.
    """

    def __init__(self) -> None:
        self.files: list[tuple[Path, Path]] = []  # (temporary, target)
        self.dirs: list[tuple[Path, Path]] = []

    def file(self, target: Path) -> Path:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        self.files.append((Path(tmp), target))
        return Path(tmp)

    def directory(self, target: Path) -> Path:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        self.dirs.append((tmp, target))
        return tmp

    def commit(self) -> None:
        for tmp, target in self.files:
            # mkstemp makes 0600 files; outputs get the usual mode, as a plain open() would
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, target)
        for tmp, target in self.dirs:
            target.mkdir(exist_ok=True)  # --plot's directory itself (its parent was checked)
            for item in sorted(tmp.iterdir()):
                os.chmod(item, 0o666 & ~_umask())
                os.replace(item, target / item.name)
            tmp.rmdir()
        self.files, self.dirs = [], []

    def discard(self) -> None:
        for tmp, _ in self.files:
            tmp.unlink(missing_ok=True)
        for tmp, _ in self.dirs:
            shutil.rmtree(tmp, ignore_errors=True)
        self.files, self.dirs = [], []


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_files(args: argparse.Namespace, result: EvalResult, extras: Extras, progress) -> list[str]:
    """Every file asked for, all or none; returns the texts for stdout (``-``).

    :class:`InputError` naming the path when one cannot be written.
    """
    if wants_files(args):
        progress.stage("writing files")
    staging = _Staging()
    target: Path | None = None  # the output being written, for the error message
    flag = ""
    try:
        texts = _texts(args, result, extras)
        for name in STDOUT_FLAGS:
            if getattr(args, name) and getattr(args, name) != "-":
                flag, target = _flag(name), Path(getattr(args, name))
                staging.file(target).write_text(texts[name], newline="")
        if args.arrays:
            flag, target = "--arrays", Path(args.arrays)
            result.save_arrays(staging.file(target), compressed=not args.arrays_uncompressed)
        if args.curves:
            flag, target = "--curves", Path(args.curves)
            _write_curves(args, result, staging.file(target))
        if args.plot:
            flag, target = "--plot", Path(args.plot)
            with flag_errors("--plot"):
                _write_plots(args, result, extras.confusion, staging.directory(target), extras.calibration)
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
    from deteval.analysis import plots
    from deteval.analysis.curves import default_iou
    from deteval.result import CocoResult

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

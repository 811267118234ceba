"""``deteval`` command line: evaluate a results file against ground truth and print the summary.

Beyond the summary: per-class tables and exports (``--per-class``, ``--csv``,
``--markdown``, ``--json``; with the best-F1 operating point per class when the
protocol records per-detection outcomes), curves (``--curves``), plots
(``--plot``), P/R/F at a score threshold (``--score-thr``) and a confusion
matrix (``--confusion``).

Protocols add their own flags by declaring them (``Protocol.options``); the
parser is built from the declarations (:mod:`deteval.cli.parse`), the protocol
object runs the evaluation (:mod:`deteval.cli.run`), and :mod:`deteval.cli.output`
writes and prints. A user's preset file (``--config``) supplies the protocol's
parameters; flags override it.

The first run on a machine compiles the kernels (numba, cached for later runs): one line on
stderr says so (:data:`COMPILE_NOTICE`), unless ``--quiet``.

Exit status: 0 done; 2 bad input; 130 interrupted (Ctrl-C, one line on stderr); 143 and 129
terminated by SIGTERM or SIGHUP (one line; the temporaries removed as on Ctrl-C);
141 (128 + SIGPIPE, as a shell reports a process a closed pipe ended) when stdout was
closed before everything was printed (``| head``): the files were written by then.
Every mistake of the user's is an :class:`~deteval.errors.InputError`, printed as one
line ``deteval: error: ...``; usage errors (flags and their values) leave
through ``SystemExit(2)`` as argparse's do, errors found in the inputs or the output
paths make :func:`main` return 2.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from deteval.cli.parse import (
    Invocation,
    build_parser,
    parse_command_line,
    sample_pair,  # tests and scripts import it from here
)
from deteval.errors import InputError
from deteval.text import printable

__all__ = ["build_parser", "console_main", "main", "sample_pair"]


def _print_error(exc: InputError) -> None:
    print(f"deteval: error: {exc}", file=sys.stderr)


COMPILE_NOTICE = "deteval: compiling kernels for this machine, once (about 5-30 s; later runs reuse them)"


@contextmanager
def _compile_notice(progress, enabled: bool) -> Iterator[None]:
    """In this block, :data:`COMPILE_NOTICE` goes to stderr as the first kernel compilation starts."""
    if not enabled:
        yield
        return
    from deteval.jit import on_first_compile

    on_first_compile(lambda: progress.note(COMPILE_NOTICE))
    try:
        yield
    finally:
        on_first_compile(None)


EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


def console_main() -> None:
    """The ``deteval`` command (``[project.scripts]``): :func:`main`, then the exit of ``python -m deteval``
    (:func:`deteval.cli.leave.leave`: no interpreter teardown)."""
    from deteval.cli.leave import leave

    leave(main())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 bad input, 130 interrupted, 141 stdout closed early).

    A usage error raises ``SystemExit(2)``.
    """
    from deteval.cli.guard import Terminated, terminable

    for stream in (sys.stdout, sys.stderr):  # a lone surrogate in a name is printed escaped, never raises
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        with terminable():
            status = _main(argv)
    except Terminated as exc:  # SIGTERM, SIGHUP: as Ctrl-C, the temporaries removed on the way out
        print("deteval: terminated", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        # Ctrl-C: one line, no traceback; the files are all or nothing (output.write_files)
        print("deteval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # the machine's, not the input's (a full disk under numba's cache, say): one line
        where = f"{exc.filename}: " if exc.filename else ""
        print(printable(f"deteval: error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return 2
    from deteval._runtime.aot_background import build_in_background

    build_in_background()  # the kernels later runs call without importing numba: built once, after this run
    return status


def _silence_stdout() -> None:
    """Point stdout at devnull, so the interpreter's flush at exit does not raise BrokenPipeError again
    (what Python's documentation of SIGPIPE advises)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real descriptor (a test's capture): nothing to flush
        pass


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["compare"]:  # deteval compare PREDS_A PREDS_B GT ...
        from deteval.cli.compare import compare_main

        return compare_main(argv[1:])
    if argv[:1] == ["convert"]:  # deteval convert --from yolo --to coco LABELS GT.json ...
        from deteval.cli.convert import convert_main

        return convert_main(argv[1:])
    try:
        inv = parse_command_line(argv)
    except InputError as exc:
        _print_error(exc)
        raise SystemExit(2) from None
    from deteval.io.json_source import max_input_bytes

    with max_input_bytes(inv.args.max_input_bytes):
        return _run(inv)


def _warning_text(w: warnings.WarningMessage) -> str:
    """A warning's one line: deteval's own say what and where in the input; any other (numpy's
    floating-point warnings, say) is named with its kind and the line of deteval that raised it."""
    from deteval.errors import DetevalWarning

    if issubclass(w.category, DetevalWarning):
        return str(w.message)
    where = os.path.relpath(w.filename, os.path.dirname(os.path.dirname(__file__)))
    why = ", from an input value out of range" if issubclass(w.category, RuntimeWarning) else ""
    return f"{w.message} ({w.category.__name__} at {where}:{w.lineno}{why})"


def _run(inv: Invocation) -> int:
    """The evaluation of a parsed command line, its files and its printing; the exit status."""
    from deteval.cli import output, run
    from deteval.progress import Progress

    args = inv.args

    try:
        # before anything is loaded: a bad output path must not cost an evaluation
        output.check_paths(inv)
        run.check_requests(inv)
    except InputError as exc:
        _print_error(exc)
        return 2
    # when a file goes to stdout, stdout holds that file only: the summary and tables go to stderr
    printed = sys.stderr if output.to_stdout(args) else sys.stdout
    stages = 2 + (inv.confusion_thrs is not None) + args.tide + output.wants_files(args) + (args.bootstrap is not None)
    with Progress(stages, enabled=not args.quiet) as progress, _compile_notice(progress, not args.quiet):
        try:
            # the loaders' and protocols' warnings are printed after the summary's progress display
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result, dets, gt, read = run.evaluate(inv, progress)
                result, extras = run.analyses(inv, result, dets, gt, progress, read)
                # files first: a closed pipe on stdout (| head) must not lose them
                stdout_texts = output.write_files(args, result, extras, progress, output.inputs(inv))
        except InputError as exc:
            progress.close()
            _print_error(exc)
            return 2
    if not args.quiet:
        for w in caught:
            print(f"deteval: warning: {printable(_warning_text(w))}", file=sys.stderr)
        output.print_results(args, result, extras, printed)
    for text in stdout_texts:  # written even with --quiet: the user asked for it
        sys.stdout.write(text)
    sys.stdout.flush()  # a closed pipe shows here, inside main, not at the interpreter's exit
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

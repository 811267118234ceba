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

Exit status: 0 done; 2 bad input. Every mistake of the user's is an
:class:`~deteval.errors.InputError`, printed as one line ``deteval: error: ...``;
usage errors (flags and their values) leave through ``SystemExit(2)`` as argparse's
do, errors found in the inputs make :func:`main` return 2.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence

from deteval.cli.parse import (
    build_parser,
    parse_command_line,
    sample_pair,  # tests and scripts import it from here
)
from deteval.errors import InputError

__all__ = ["build_parser", "main", "sample_pair"]


def _print_error(exc: InputError) -> None:
    print(f"deteval: error: {exc}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 bad input); a usage error raises ``SystemExit(2)``."""
    try:
        inv = parse_command_line(sys.argv[1:] if argv is None else argv)
    except InputError as exc:
        _print_error(exc)
        raise SystemExit(2) from None
    args = inv.args

    from deteval.cli import output, run
    from deteval.progress import Progress

    stages = 2 + (inv.confusion_thrs is not None) + args.tide + output.wants_files(args)
    with Progress(stages, enabled=not args.quiet) as progress:
        try:
            # the loaders' and protocols' warnings are printed after the summary's progress display
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result, dets, gt = run.evaluate(inv, progress)
            result, extras = run.analyses(inv, result, dets, gt, progress)
            # files first: a closed pipe on stdout (| head) must not lose them
            output.write_files(args, result, extras, progress)
        except InputError as exc:
            progress.close()
            _print_error(exc)
            return 2
    if not args.quiet:
        for w in caught:
            print(f"deteval: warning: {w.message}", file=sys.stderr)
        output.print_results(args, result, extras)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""How the command line exits: as ``sys.exit`` would, without the interpreter's teardown."""

from __future__ import annotations

import sys


def leave(status: object) -> None:
    """Exit with ``status`` as ``sys.exit`` would, without the interpreter's teardown.

    Freeing the modules one by one at exit (numba's and llvmlite's object graphs) took
    about 0.1 s of every run, after the last line was printed. The ``atexit`` handlers
    still run and the output is flushed; only the teardown is skipped. A status that is
    not an int (a message), or output that cannot be flushed, leaves the usual way.
    """
    if status is not None and not isinstance(status, int):
        sys.exit(status)
    import atexit
    import os

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(status)
    os._exit(status or 0)

"""numpy's idle BLAS thread given back in deteval's own command-line process.

numpy's OpenBLAS starts a worker thread when numpy is imported, and an idle worker spins for about
0.1 s of CPU before it sleeps: on a 2-core machine, half the cores while deteval loads its files on
both. deteval computes nothing with BLAS, so the command line (``python -m deteval`` or the ``deteval``
script, a process of its own) asks for one BLAS thread unless ``OPENBLAS_NUM_THREADS`` is set. This
module is imported first by the package, before numpy; a program that imports deteval is not touched.
"""

from __future__ import annotations

import os
import sys

__all__ = ["quiet_interrupt_while_loading", "spare_blas_thread", "runs_command_line"]


def runs_command_line(argv: list[str], orig_argv: list[str]) -> bool:
    """Whether ``sys.argv``/``sys.orig_argv`` are those of deteval's command line: the ``deteval`` script,
    or ``python -m deteval`` while its package is being located (``sys.argv[0]`` is then ``"-m"``)."""
    if argv[:1] == ["-m"]:
        for i, arg in enumerate(orig_argv[1:], 1):
            if arg == "-m":
                return orig_argv[i + 1 : i + 2] == ["deteval"]
            if arg.startswith("-m"):
                return arg == "-mdeteval"
        return False
    return bool(argv) and os.path.basename(argv[0]) in ("deteval", "deteval.exe", "deteval-script.py")


def spare_blas_thread() -> None:
    """``OPENBLAS_NUM_THREADS=1`` for deteval's command line, when numpy is not imported yet and the
    variable is not set."""
    if "numpy" not in sys.modules and runs_command_line(sys.argv, getattr(sys, "orig_argv", [])):
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _interrupted_while_loading(signum: int, frame: object) -> None:
    import signal

    os.write(2, b"deteval: interrupted\n" if signum == signal.SIGINT else b"deteval: terminated\n")
    os._exit(128 + signum)


def quiet_interrupt_while_loading() -> None:
    """Ctrl-C while deteval's command line imports its modules (numpy's ~0.1 s among them) exits as Ctrl-C
    during a run does: ``deteval: interrupted``, status 130, no traceback; SIGTERM and SIGHUP say
    ``deteval: terminated`` (143, 129). Nothing is written yet, so
    nothing needs cleaning; :func:`deteval.cli.main` takes SIGINT back for the run."""
    if runs_command_line(sys.argv, getattr(sys, "orig_argv", [])):
        import signal

        try:
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                signal.signal(signal.SIGINT, _interrupted_while_loading)
            for name in ("SIGTERM", "SIGHUP"):  # likewise, where the process was not started ignoring them
                sig = getattr(signal, name, None)
                if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
                    signal.signal(sig, _interrupted_while_loading)
        except ValueError:  # not the main thread
            pass

"""A one-line stage indicator on stderr for long command-line runs.

The CLI's work is a few long stages (loading, evaluating, exports), each one
call into native code, so the indicator shows which stage runs, how many
are done and the elapsed time, not a percentage it could not know. It
appears only after ``delay`` seconds, only on a terminal, and erases itself
when done; with a pipe, a file or ``--quiet`` it writes nothing.

numba kernels hold the GIL, so the clock may pause while one runs and
catches up when it returns.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Progress:
    """Context manager; call :meth:`stage` as each stage starts.

    Parameters
    ----------
    total : int
        Number of stages the run will go through (the bar's length).
    enabled : bool
        False draws nothing (``--quiet``); True draws only if ``stream`` is a terminal.
    delay : float, default 2.0
        Seconds before the line first appears: short runs never show it.
    stream : text stream, default ``sys.stderr``
    interval : float, default 0.2
        Seconds between redraws.
    """

    def __init__(
        self,
        total: int,
        enabled: bool = True,
        delay: float = 2.0,
        stream: TextIO | None = None,
        interval: float = 0.2,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(enabled and isatty is not None and isatty())
        self.total = max(int(total), 1)
        self.delay, self.interval = float(delay), float(interval)
        self._done = 0
        self._name = ""
        self._width = 0  # length of the line on screen, 0 when none is drawn
        self._start = time.perf_counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def stage(self, name: str) -> None:
        """Mark the start of the next stage (the previous one counts as done)."""
        with self._lock:
            if self._name:
                self._done = min(self._done + 1, self.total - 1)
            self._name = name
        self._draw()

    def detail(self, name: str) -> None:
        """Rename the running stage (``bootstrap 2000/100000``) without counting a new one."""
        with self._lock:
            self._name = name

    def note(self, text: str) -> None:
        """Print ``text`` as a line of its own on the stream, whether or not the indicator is drawn
        (it is erased first, and redrawn below at its next tick)."""
        with self._lock:
            if self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self._width = 0
            self.stream.write(text + "\n")
            self.stream.flush()

    def line(self) -> str:
        """The text drawn now: bar, stage count and name, elapsed seconds."""
        filled = round(20 * self._done / self.total)
        bar = "#" * filled + "-" * (20 - filled)
        elapsed = time.perf_counter() - self._start
        return f"deteval [{bar}] {self._done + 1}/{self.total} {self._name} {elapsed:.1f} s"

    def _draw(self) -> None:
        if not self.enabled or time.perf_counter() - self._start < self.delay:
            return
        with self._lock:
            text = self.line()
            pad = max(self._width - len(text), 0)
            self.stream.write("\r" + text + " " * pad)
            self.stream.flush()
            self._width = len(text)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._draw()

    def __enter__(self) -> Progress:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="deteval-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop drawing and erase the line (before printing anything else to the terminal)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
                self._width = 0

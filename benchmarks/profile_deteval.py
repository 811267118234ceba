"""Per-stage wall times of one deteval run, for ``bench.py --profile``.

Nothing in deteval is changed for this: :func:`install` wraps, in this process only, the functions
each stage runs through (module attributes looked up at call time), so a run without ``--profile``
pays nothing. The stages, in seconds of this thread's wall clock:

- ``read``: ``read_bytes`` (the file opened and memory-mapped, ``MAP_POPULATE`` reading it in; small
  files read whole); summed over every thread that calls it (segm reads the results on a thread);
- ``parse``: the rest of the load (``deteval.load``'s wall time less the reads on this thread):
  the byte scanners or JSON parsing, validation, the containers;
- ``kernel import``: the first import of deteval's kernel modules (numba itself for small files,
  where the loaders need no kernel), which the matching stage would otherwise pay;
- ``group``, ``IoU``, ``match``: ``group_by_image_category``, the pipeline's ``overlaps_of``, and the rest of the
  protocol's ``match`` (``match_groups`` and the per-detection columns);
- ``accumulate``: the protocol's ``reduce`` (ranking, accumulation, stats, per-class rows);
- ``summarise``: the protocol's ``summarize``;
- ``other``: the rest of ``deteval.evaluate`` (parameters, protocol lookup).

A kernel's first call loads it from numba's cache (or compiles it): that time is in its stage.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable

STAGES = ("read", "parse", "kernel import", "group", "IoU", "match", "accumulate", "summarise", "other")
# modules matching imports on first use: imported, timed, before its first call (names looked up then)
KERNEL_MODULES = ("deteval.jit", "deteval.matching.groups", "deteval.matching.coco", "deteval.accumulation.accumulate")


class StageClock:
    """Wall seconds per stage, this thread's and all threads'."""

    def __init__(self) -> None:
        self.main = threading.get_ident()
        self.seconds: dict[str, float] = defaultdict(float)
        self.main_seconds: dict[str, float] = defaultdict(float)

    def timed(self, stage: str, fn: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                self.seconds[stage] += dt
                if threading.get_ident() == self.main:
                    self.main_seconds[stage] += dt

        wrapper.__wrapped__ = fn
        return wrapper

    def wrap(self, owner, name: str, stage: str) -> None:
        """``owner.name`` (a module or class attribute) replaced by a timed call of it."""
        setattr(owner, name, self.timed(stage, getattr(owner, name)))


def install(protocol: str = "coco") -> StageClock:
    """Wrap deteval's stage functions for ``protocol`` in this process; the clock they add to."""
    import importlib

    import deteval
    from deteval import protocols
    from deteval.io import coco as io_coco
    from deteval.io import json_source

    clock = StageClock()
    for owner in (json_source, io_coco):
        clock.wrap(owner, "read_bytes", "read")
    clock.wrap(deteval, "load", "load")
    clock.wrap(deteval, "evaluate", "evaluate")
    cls = type(protocols.get(protocol))
    match = cls.match
    patched = []

    def match_first(self, *args, **kwargs):
        if not patched:  # first call: the kernel modules, then their entry points wrapped
            t0 = time.perf_counter()
            for name in KERNEL_MODULES:
                importlib.import_module(name)
            clock.seconds["kernel import"] += time.perf_counter() - t0
            groups, matching = importlib.import_module(KERNEL_MODULES[1]), importlib.import_module(KERNEL_MODULES[2])
            for owner, name, stage in (
                (groups, "group_by_image_category", "group"),
                (importlib.import_module("deteval.protocols.coco_matching"), "overlaps_of", "IoU"),
                (matching, "match_groups", "match_kernel"),
            ):
                if hasattr(owner, name):
                    clock.wrap(owner, name, stage)
            patched.append(True)
        return match(self, *args, **kwargs)

    cls.match = clock.timed("match_total", match_first)
    clock.wrap(cls, "reduce", "accumulate")
    clock.wrap(cls, "summarize", "summarise")
    return clock


def split(clock: StageClock) -> dict[str, float]:
    """The stages of :data:`STAGES` (seconds) from what the clock collected."""
    s = clock.seconds
    out = {
        "read": s["read"],
        "parse": s["load"] - clock.main_seconds["read"],
        "kernel import": s["kernel import"],
        "group": s["group"],
        "IoU": s["IoU"],
        "match": s["match_total"] - s["kernel import"] - s["group"] - s["IoU"],
        "accumulate": s["accumulate"],
        "summarise": s["summarise"],
    }
    out["other"] = s["evaluate"] - s["match_total"] - s["accumulate"] - s["summarise"]
    return out

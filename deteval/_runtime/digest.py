"""The part of every kernel's cache key that covers deteval's own sources (see :class:`KernelCache`)."""

from __future__ import annotations

import hashlib
import os
import re
from functools import cache

_TAKES_NJIT = re.compile(rb"^from deteval\.jit import [^\n]*\bnjit\b", re.MULTILINE)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # deteval/


@cache
def kernel_sources_digest() -> str:
    """sha256 of every deteval module that takes ``njit`` from :mod:`deteval.jit` (a line
    ``from deteval.jit import ... njit ...``), of :mod:`deteval.jit` and of every module of
    :mod:`deteval._runtime` (their paths and bytes). A module taking only the threads from
    ``deteval.jit`` holds no kernel: editing it recompiles none."""
    digest = hashlib.sha256()
    for rel, path in sorted(_package_sources(_PACKAGE, "")):
        with open(path, "rb") as f:
            text = f.read()
        if rel == "jit.py" or rel.startswith("_runtime/") or _TAKES_NJIT.search(text):
            digest.update(rel.encode() + b"\0" + text)
    return digest.hexdigest()


def _package_sources(folder: str, prefix: str) -> list[tuple[str, str]]:
    """``(path relative to the package with "/", path)`` of every ``.py`` file under ``folder``
    (``os.scandir``: pathlib's ``rglob`` took 4 ms of each process's first kernel call)."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir() and entry.name != "__pycache__":
                found += _package_sources(entry.path, prefix + entry.name + "/")
            elif entry.name.endswith(".py") and entry.is_file():
                found.append((prefix + entry.name, entry.path))
    return found

"""The part of every kernel's cache key that covers deteval's own sources (see :class:`KernelCache`)."""

from __future__ import annotations

import binascii
import os
import re
from functools import cache

_NJIT_IMPORT = b"from deteval.jit import "
_NJIT_NAME = re.compile(rb"\bnjit\b")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # deteval/


@cache
def kernel_sources_digest() -> str:
    """A checksum of every deteval module that takes ``njit`` from :mod:`deteval.jit` (a line
    ``from deteval.jit import ... njit ...``), of :mod:`deteval.jit` and of every module of
    :mod:`deteval._runtime` (their paths and bytes). A module taking only the threads from
    ``deteval.jit`` holds no kernel: editing it recompiles none.

    Two CRC-32s, of the bytes in order and reversed (64 bits against an edit slipping through), not
    a cryptographic hash: this guards against stale kernels, not tampering, and every process that
    uses a compiled kernel computes it (hashlib's import alone took 3 ms of it)."""
    forward = backward = 0
    for rel, path in sorted(_package_sources(_PACKAGE, "")):
        with open(path, "rb") as f:
            text = f.read()
        if rel == "jit.py" or rel.startswith("_runtime/") or _takes_njit(text):
            named = rel.encode() + b"\0" + text
            forward = binascii.crc32(named, forward)
            backward = binascii.crc32(named[::-1], backward)
    return f"{forward:08x}{backward:08x}"


def _takes_njit(text: bytes) -> bool:
    """Whether a line starts ``from deteval.jit import`` and names ``njit`` (a search for the words, then
    the line: a multi-line regular expression over every module took 3 ms)."""
    at = text.find(_NJIT_IMPORT)
    while at >= 0:
        end = text.find(b"\n", at)
        if (at == 0 or text[at - 1] == 10) and _NJIT_NAME.search(text, at, len(text) if end < 0 else end):
            return True
        at = text.find(_NJIT_IMPORT, at + 1)
    return False


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

"""Where the kernels compiled when the package was built are: this package's folders, or an installed copy's."""

from __future__ import annotations

import os
import sys

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # deteval/


def built_folder(dirname: str) -> str:
    """The folder of kernels compiled when the package was built (``_kernels``, ``_aot``): this package's, or,
    where this package is a source tree without them (Python started in a clone's root, which puts the clone
    first on ``sys.path``), those of the copy ``pip install .`` put further along ``sys.path``.

    Safe either way: both caches serve an entry only to sources whose digest it was built from
    (:mod:`.digest`), so an installed copy of other sources is simply not used.
    """
    own = os.path.join(_PACKAGE, dirname)
    if os.path.isdir(own):
        return own
    for entry in sys.path:
        candidate = os.path.join(entry or os.curdir, "deteval", dirname)
        if os.path.isdir(candidate) and os.path.realpath(os.path.dirname(candidate)) != os.path.realpath(_PACKAGE):
            return candidate
    return own

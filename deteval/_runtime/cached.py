"""Whether a kernel group's code is at hand without compiling: the one place that asks numba's cache."""

from __future__ import annotations

from collections.abc import Collection


def group_cached(group: str, skip: Collection[str] = ()) -> bool:
    """Whether the package's ahead-of-time code or numba's cache holds every kernel of ``group``
    (:data:`deteval.kernel_signatures.GROUPS`, but those named in ``skip``) with its recorded argument
    types, loading none. False for an unknown or empty group, and where the question cannot be asked
    (``DETEVAL_PLAIN_NUMBA``, ``NUMBA_DISABLE_JIT``)."""
    from deteval.compile_ahead import kernel_named, parse_signature
    from deteval.kernel_signatures import GROUPS

    kernels = [(kernel_named(name), texts) for name, texts in GROUPS.get(group, []) if name not in skip]
    if not kernels:
        return False
    if all(tuple(texts) in kernel.compiled_ahead for kernel, texts in kernels):  # in the package: none to load
        return True
    for kernel, texts in kernels:
        cached_signatures = getattr(getattr(kernel, "_cache", None), "cached_signatures", None)
        if cached_signatures is None:
            return False
        if parse_signature(texts) not in set(map(tuple, cached_signatures(kernel.targetctx.codegen()))):
            return False
    return True

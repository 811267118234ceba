"""What runs around a process's start, beside numba's private API (:mod:`deteval._runtime`, which
``DETEVAL_PLAIN_NUMBA=1`` turns off): OpenBLAS asked for one thread before numpy loads
(:mod:`.blas_thread`), and the helper processes that compile a cold kernel cache's kernel groups while a run
goes on (:mod:`.compile_ahead`, with the groups' kernels and argument types in :mod:`.kernel_signatures`).
Importing this package imports nothing.
"""

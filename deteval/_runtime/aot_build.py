"""The build step that compiles kernels ahead of time into ``deteval/_aot`` (read by :mod:`deteval._runtime.aot`).

Run by ``setup.py`` after the shipped kernels (:mod:`deteval._runtime.shipped`), on the
package being built. Each kernel group of :mod:`deteval._startup.kernel_signatures` becomes one
extension module made by ``numba.pycc`` (numba's compiler and runtime, a C compiler for
the module's glue), every recorded signature an exported function; a group that will not
build as one module is built a kernel per module. Argument types are the recorded ones;
return types are what numba infers for them (each kernel is compiled, or loaded from the
shipped kernels, first). A ``nogil`` kernel releases the GIL, as its dispatcher does: the
thread pool runs them side by side.

Modules are compiled for the platform's baseline CPU, not this one's (they may be run on
another machine of the kind); on the kernels measured that costs nothing (IoU, matching
and accumulation are branchy scalar loops). ``index.json`` lists each signature's module
and symbol, with the digest of the kernel sources it was built from.
"""

from __future__ import annotations

import json
import os
import sys

from deteval._runtime.aot import DIR_ENV, ENV, INDEX


def _pycc():
    """``numba.pycc`` (pending deprecation since numba 0.57: once it is gone, the build step says so and the
    package installs without ahead-of-time code), its notice silenced."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import numba.pycc
        import numba.pycc.compiler
        import numba.pycc.platform

    return numba.pycc


# the groups built into extension modules: the evaluations' (loading, matching, accumulation, the report) of
# the COCO family and VOC, whose runs then import no numba. The others (analyses, replays, the other protocols)
# ship in the numba cache only: their runs import numba (~0.3 s) but compile nothing, and the install does not
# compile them a second time
AOT_GROUPS = (
    "coco-bbox-scan", "coco-segm-gt-scan", "coco-bbox", "coco-segm", "coco-keypoints", "sort-large", "coco-report",
    "voc",
)  # fmt: skip


def _modules() -> list[tuple[str, list[tuple[str, tuple[str, ...]]]]]:
    """(module name, its signatures) per kernel group of :data:`AOT_GROUPS`, each signature in the first group
    that records it."""
    from deteval._startup.kernel_signatures import GROUPS, ORDER

    seen: set[tuple[str, tuple[str, ...]]] = set()
    modules = []
    for group in (g for g in ORDER if g in AOT_GROUPS):
        entries = [(n, tuple(t)) for n, t in GROUPS[group] if (n, tuple(t)) not in seen]
        seen.update(entries)
        if entries:
            modules.append((group.replace("-", "_"), entries))
    return modules


def _compile_module(target: str, module: str, entries: list[tuple[str, tuple[str, ...]]]) -> list[list]:
    """Build one extension module exporting ``entries`` into ``target``: its index rows."""
    from deteval._startup.compile_ahead import kernel_named, parse_signature

    pycc = _pycc()

    # py_func -> the kernel's own nogil and _nrt options, which pycc's flags would drop: a kernel compiled without
    # numba's runtime (the JSON scanners) would get it back, and an incref and a decref around every array it
    # hands an inlined helper (the results scanner ran 2.6x slower: 3.9 ns per byte against 1.5)
    nogil, nrt = {}, {}
    pycc_compile = pycc.compiler.compile_extra

    def compile_extra(typingctx, targetctx, func, args, return_type, flags, *rest, **kwargs):
        flags.release_gil = nogil[func]
        flags.nrt = nrt[func]
        return pycc_compile(typingctx, targetctx, func, args, return_type, flags, *rest, **kwargs)

    pycc.compiler.compile_extra = compile_extra  # pycc makes its flags itself: the one place to set them
    cc = pycc.CC(module)
    cc.output_dir = target
    rows = []
    for k, (name, texts) in enumerate(entries):
        dispatcher = kernel_named(name).dispatcher
        nogil[dispatcher.py_func] = bool(dispatcher.targetoptions.get("nogil"))
        nrt[dispatcher.py_func] = bool(dispatcher.targetoptions.get("_nrt", True))
        args = parse_signature(texts)
        dispatcher.compile(args)  # the return type; a load from the shipped kernels
        cc.export(f"k{k}", dispatcher.overloads[args].signature)(dispatcher.py_func)
        rows.append([name, list(texts), os.path.basename(cc.output_file), f"k{k}"])
    cc.compile()
    return rows


def compile_modules(target: str, claims: str, modules: list[str]) -> None:
    """In a child process: build each of ``modules`` (names from :func:`_modules`) no other process claimed,
    writing ``<module>.json`` (its index rows) beside it. Each build runs in a process of its own (pycc's
    patched flags, and numba's state after a failed compile, stay there); a group that fails as one module
    is built a kernel per module (a kernel that fails then is left to numba at run time)."""
    import subprocess
    import time

    from deteval._startup.compile_ahead import claim, in_this_deteval

    plan = dict(_modules())
    for module in modules:
        if not claim(os.path.join(claims, module)):
            continue
        entries = plan[module]
        code = in_this_deteval("from deteval._runtime.aot_build import compile_one as c; c(*sys.argv[1:])")
        start = time.perf_counter()
        whole = subprocess.run([sys.executable, "-c", code, target, module], capture_output=True, text=True)
        if whole.returncode == 0:
            took = time.perf_counter() - start
            print(f"deteval: [{module}] extension module, {len(entries)} signature(s), {took:.1f} s", flush=True)
            continue
        why = (whole.stderr.strip().splitlines() or ["?"])[-1]  # the error's last line (the traceback is numba's)
        if len(entries) == 1:
            print(f"deteval: {module} not compiled ahead of time ({why})", file=sys.stderr)
            continue
        print(f"deteval: {module} is built a kernel per module ({why})", file=sys.stderr)
        for k in range(len(entries)):
            if subprocess.run([sys.executable, "-c", code, target, module, str(k)]).returncode != 0:
                print(f"deteval: {entries[k][0]}{entries[k][1]} not compiled ahead of time", file=sys.stderr)


def compile_one(target: str, module: str, part: str | None = None) -> None:
    """Build group ``module`` (or its entry ``part`` alone, as ``<module>_<part>``) and write its index rows."""
    entries = dict(_modules())[module]
    if part is not None:
        entries, module = [entries[int(part)]], f"{module}_{part}"
    rows = _compile_module(target, module, entries)
    with open(os.path.join(target, module + ".json"), "w", encoding="utf-8") as f:
        json.dump(rows, f)


def build(target: str, processes: int | None = None, groups: list[str] | None = None) -> None:
    """Fill ``target`` with the modules of these kernel groups (default: all) and ``index.json``,
    ``processes`` children at once."""
    import subprocess
    import tempfile

    from deteval._runtime.digest import kernel_sources_digest
    from deteval._startup.compile_ahead import in_this_deteval, usable_cpus

    if not _pycc().platform.external_compiler_works():  # each module's glue is C: nothing to build or retry
        raise RuntimeError("no working C compiler (numba.pycc needs one)")
    target = os.path.abspath(target)  # the children run in a scratch folder
    wanted = None if groups is None else {g.replace("-", "_") for g in groups}
    modules = [m for m, _ in _modules() if wanted is None or m in wanted]
    processes = max(1, min(processes or usable_cpus(), len(modules)))
    os.makedirs(target, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="deteval-aot-") as scratch:
        env = dict(os.environ, NUMBA_CACHE_DIR=scratch, DETEVAL_COMPILE_HELPERS="0", **{ENV: "0"})
        env.pop("DETEVAL_PLAIN_NUMBA", None)
        env.pop(DIR_ENV, None)
        claims = os.path.join(scratch, "claims")
        os.mkdir(claims)
        run = "from deteval._runtime.aot_build import compile_modules as c; c(*sys.argv[1:3], sys.argv[3:])"
        code = in_this_deteval(run)
        procs = [
            subprocess.Popen([sys.executable, "-c", code, target, claims, *modules], env=env, cwd=scratch)
            for _ in range(processes)
        ]
        failed = [p.args for p in procs if p.wait() != 0]
    rows = []  # the modules built, whatever failed: a kernel without a row is compiled by numba on use
    for name in sorted(os.listdir(target)):
        if name.endswith(".json") and name != INDEX:
            with open(os.path.join(target, name), encoding="utf-8") as f:
                rows += json.load(f)
            os.remove(os.path.join(target, name))
    with open(os.path.join(target, INDEX), "w", encoding="utf-8") as f:
        json.dump({"sources": kernel_sources_digest(), "kernels": rows}, f, indent=0)
    if failed:
        raise RuntimeError(f"compiling kernels ahead of time failed: {failed}")

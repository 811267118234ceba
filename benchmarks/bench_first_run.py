"""The first run after install: deteval's CLI with an empty numba cache, with and without the kernels
``pip install .`` compiled into the package, and warm.

    python benchmarks/bench_first_run.py --deteval VENV/bin/deteval [--runs 3] [--data DIR]

``--deteval`` is the console script of an installed (not editable) deteval. Each cold run gets a new
empty ``NUMBA_CACHE_DIR``; "compiled here" is the kernels the run compiled into it (the shipped ones
are loaded, never copied). Three columns: the package as installed (its ahead-of-time modules, then its
shipped numba cache), the shipped cache alone (``DETEVAL_AOT=0``), and the JIT path (both off, the
compile helpers on, as a user without them gets it). ``--data`` (a folder with ``gt.json`` and
``dets.json``, e.g. the ``coco`` preset) adds a COCO-sized input to the bundled sample.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

KINDS = {  # column: (DETEVAL_AOT, DETEVAL_SHIPPED_KERNELS)
    "installed": ("1", "1"),
    "shipped cache only": ("0", "1"),
    "JIT": ("0", "0"),
}


def _run(cmd: list[str], cache: str, kind: str = "installed") -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    env.pop("DETEVAL_COMPILE_HELPERS", None)
    env["DETEVAL_AOT"], env["DETEVAL_SHIPPED_KERNELS"] = KINDS[kind]
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def _compiled(cache: str) -> int:
    return sum(1 for _ in Path(cache).rglob("*.nbi"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deteval", required=True, help="the installed deteval console script")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data", type=Path, help="folder with gt.json and dets.json (a COCO-sized input)")
    a = ap.parse_args()
    inputs = {"sample (README command)": [a.deteval, "--protocol", "coco", "--per-class", "--sample"]}
    if a.data:
        inputs[a.data.name] = [a.deteval, "--protocol", "coco", str(a.data / "dets.json"), str(a.data / "gt.json")]
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    heads = " | ".join(f"empty cache, {kind}: s (compiled here)" for kind in KINDS)
    print(f"| input | {heads} | warm, shipped cache only: s |")
    print("|---|" + "---|" * (len(KINDS) + 1))
    for name, cmd in inputs.items():
        cells: dict[str, list[str]] = {kind: [] for kind in KINDS}
        with tempfile.TemporaryDirectory() as warm:
            _run(cmd, warm, "shipped cache only")
            warm_s = [_run(cmd, warm, "shipped cache only") for _ in range(a.runs)]
            for _ in range(a.runs):  # interleaved
                for kind in cells:
                    with tempfile.TemporaryDirectory() as cache:
                        s = _run(cmd, cache, kind)
                        cells[kind].append(f"{s:.2f} ({_compiled(cache)})")
        row = " | ".join(", ".join(cells[kind]) for kind in KINDS)
        print(f"| {name} | {row} | {statistics.median(warm_s):.2f} (median of {a.runs}) |")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""The first run after install: deteval's CLI with an empty numba cache, with and without the kernels
``pip install .`` compiled into the package, and warm.

    python benchmarks/bench_first_run.py --deteval VENV/bin/deteval [--runs 3] [--data DIR]

``--deteval`` is the console script of an installed (not editable) deteval. Each cold run gets a new
empty ``NUMBA_CACHE_DIR``; "compiled here" is the kernels the run compiled into it (the shipped ones
are loaded, never copied). ``DETEVAL_SHIPPED_KERNELS=0`` gives the JIT path (the compile helpers on,
as a user gets it). ``--data`` (a folder with ``gt.json`` and ``dets.json``, e.g. the ``coco`` preset)
adds a COCO-sized input to the bundled sample.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def _run(cmd: list[str], cache: str, shipped: bool) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    env.pop("DETEVAL_COMPILE_HELPERS", None)
    env["DETEVAL_SHIPPED_KERNELS"] = "1" if shipped else "0"
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
    print("| input | empty cache, shipped kernels: s (compiled here) | empty cache, JIT: s (compiled here) | warm: s |")
    print("|---|---|---|---|")
    for name, cmd in inputs.items():
        cells: dict[str, list[str]] = {"shipped": [], "jit": []}
        with tempfile.TemporaryDirectory() as warm:
            _run(cmd, warm, True)
            warm_s = [_run(cmd, warm, True) for _ in range(a.runs)]
            for _ in range(a.runs):  # interleaved
                for kind in cells:
                    with tempfile.TemporaryDirectory() as cache:
                        s = _run(cmd, cache, kind == "shipped")
                        cells[kind].append(f"{s:.2f} ({_compiled(cache)})")
        med = f"{statistics.median(warm_s):.2f}"
        print(f"| {name} | {', '.join(cells['shipped'])} | {', '.join(cells['jit'])} | {med} (median of {a.runs}) |")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

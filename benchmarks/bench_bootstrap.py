"""Time the bootstrap (issue 20's speed target): one evaluation, ``--bootstrap N`` and ``compare A B GT``.

    python benchmarks/bench_bootstrap.py [--preset coco] [--data DIR] [--n 1000] [--runs 1] [--preds-b FILE]

Each command runs as a user runs it, in a fresh subprocess with ``--quiet``: ``deteval DETS GT --protocol
coco``, the same with ``--bootstrap N``, and ``deteval compare DETS B GT --bootstrap N`` (B is ``--preds-b``,
else DETS again: both models are still matched and re-accumulated), after one ``--bootstrap 2`` to warm the
kernel cache. Prints each command's wall and CPU seconds (medians over ``--runs``), the ratios to one
evaluation (the target: bootstrap under 10x, compare under 2x the bootstrap) and the milliseconds per
replicate: ``(bootstrap - one evaluation) / N``, which counts the ranked index built once per evaluation
with the replicates, and half of ``compare - 2 x one evaluation`` per replicate for compare. The load
average is printed with them: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CLI = "import sys; from deteval.cli import main; sys.exit(main())"


def _time(args: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of ``deteval ARGS`` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", CLI, *args], check=True, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="coco", help="a benchmark preset (benchmarks/make_data.py); default coco")
    ap.add_argument("--data", type=Path, help="dir with gt.json and dets.json (default benchmarks/data/<preset>)")
    ap.add_argument("--n", type=int, default=1000, help="replicates (default 1000)")
    ap.add_argument("--runs", type=int, default=1, help="runs per command; medians are reported (default 1)")
    ap.add_argument("--preds-b", type=Path, help="model B for compare (default: the preset's dets.json again)")
    a = ap.parse_args()
    data = a.data or HERE / "data" / a.preset
    gt, dets = data / "gt.json", data / "dets.json"
    if not (gt.exists() and dets.exists()):
        sys.path.insert(0, str(HERE))
        import make_data

        make_data.make(a.preset, data)
    b = a.preds_b or dets
    commands = {
        "one evaluation": [str(dets), str(gt), "--protocol", "coco", "--quiet"],
        f"--bootstrap {a.n}": [str(dets), str(gt), "--protocol", "coco", "--quiet", "--bootstrap", str(a.n)],
        f"compare --bootstrap {a.n}": ["compare", str(dets), str(b), str(gt), "--quiet", "--bootstrap", str(a.n)],
    }
    # warm: the kernel cache (the replicate kernel's too: a changed kernel module recompiles, ~10 s) and the
    # page cache, as a second run by a user
    _time([*commands["one evaluation"], "--bootstrap", "2"])
    load = os.getloadavg()
    times = {}
    for name, args in commands.items():
        runs = [_time(args) for _ in range(a.runs)]
        times[name] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
    load = tuple(max(x, y) for x, y in zip(load, os.getloadavg()))
    loads = " ".join(f"{x:.2f}" for x in load)
    print(f"preset {a.preset} ({data}), {a.n} replicates, {a.runs} run(s) each, {os.cpu_count()} CPUs, "
          f"load average (1, 5, 15 min; the larger of before and after) {loads}")  # fmt: skip
    print(f"  {'command':<26} {'wall s':>8} {'cpu s':>8} {'x one eval':>11}")
    one, boot, comp = (times[k] for k in commands)
    for name, (wall, cpu) in times.items():
        print(f"  {name:<26} {wall:8.2f} {cpu:8.2f} {wall / one[0]:11.2f}")
    print(f"  bootstrap / one evaluation: {boot[0] / one[0]:.2f}x wall (target < 10)")
    print(f"  compare / bootstrap: {comp[0] / boot[0]:.2f}x wall (target < 2)")
    wall_ms, cpu_ms = 1000 * (boot[0] - one[0]) / a.n, 1000 * (boot[1] - one[1]) / a.n
    comp_ms = 1000 * (comp[0] - 2 * one[0]) / (2 * a.n)
    print(f"  per replicate: {wall_ms:.2f} ms wall, {cpu_ms:.2f} ms cpu (bootstrap)")
    print(f"  per replicate and model: {comp_ms:.2f} ms wall (compare)")


if __name__ == "__main__":
    main()

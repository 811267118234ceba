"""Time ``--matches`` and ``--per-image`` against a plain run: what keeping and writing the tables costs.

    python benchmarks/bench_matches.py [--preset coco] [--data DIR] [--runs 3] [--cli-runs 1]

In process, on containers loaded once (``deteval.load``), after one warm-up of each: ``deteval.evaluate``
plain, with ``matches=True`` (the kernel keeps each match's ground truth, the tables are built as NumPy
columns), then the tables' JSON and CSV texts (``deteval.analysis.report.rows_json`` / ``rows_csv``, what
the command line writes) and ``result.matches`` as Python dicts. Then the command line in fresh processes:
``deteval DETS GT --quiet`` and the same with ``--matches m.csv --per-image p.csv`` and with ``.json``
(files in a temporary folder). Medians; wall seconds, with the load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CLI = "import sys; from deteval.cli import main; sys.exit(main())"


def _median_time(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _cli(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", CLI, *args], check=True, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="coco", help="a benchmark preset (benchmarks/make_data.py); default coco")
    ap.add_argument("--data", type=Path, help="dir with gt.json and dets.json (default benchmarks/data/<preset>)")
    ap.add_argument("--runs", type=int, default=3, help="in-process runs per step; medians (default 3)")
    ap.add_argument("--cli-runs", type=int, default=1, help="fresh-process runs per command; medians (default 1)")
    a = ap.parse_args()
    data = a.data or HERE / "data" / a.preset
    gt_path, dt_path = data / "gt.json", data / "dets.json"
    if not (gt_path.exists() and dt_path.exists()):
        sys.path.insert(0, str(HERE))
        import make_data

        make_data.make(a.preset, data)
    sys.path.insert(0, str(REPO))
    import deteval
    from deteval.analysis.report import rows_csv, rows_json

    dets, gt = deteval.load(dt_path, gt_path)
    deteval.evaluate(dets, gt, matches=True)  # warm-up: every kernel loaded
    plain, _ = _median_time(lambda: deteval.evaluate(dets, gt), a.runs)
    kept, res = _median_time(lambda: deteval.evaluate(dets, gt, matches=True), a.runs)
    t_json, text_json = _median_time(lambda: rows_json(res.match_table), a.runs)
    t_csv, text_csv = _median_time(lambda: rows_csv(res.match_table), a.runs)
    t_img, _ = _median_time(lambda: (rows_csv(res.image_table), rows_json(res.image_table)), a.runs)
    t_dicts, _ = _median_time(lambda: res.matches, 1)
    n_rows = len(res.match_table)
    print(f"{a.preset}: {len(dets):,} detections, {len(gt):,} ground truth, {len(gt.images):,} images; "
          f"{n_rows:,} match rows; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| in process (loaded containers) | s | x plain |")
    print("|---|---:|---:|")
    print(f"| evaluate() | {plain:.3f} | 1.00 |")
    print(f"| evaluate(matches=True) | {kept:.3f} | {kept / plain:.2f} |")
    print(f"| matches as CSV text ({len(text_csv) / 1e6:.0f} MB) | {t_csv:.3f} | {t_csv / plain:.2f} |")
    print(f"| matches as JSON text ({len(text_json) / 1e6:.0f} MB) | {t_json:.3f} | {t_json / plain:.2f} |")
    print(f"| per-image table as CSV and JSON text | {t_img:.3f} | {t_img / plain:.2f} |")
    print(f"| result.matches (list of dicts, once) | {t_dicts:.3f} | {t_dicts / plain:.2f} |")
    res = text_csv = text_json = None  # memory back before the command-line runs
    base = [str(dt_path), str(gt_path), "--protocol", "coco", "--quiet"]
    _cli(base)  # warm-up
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            "deteval DETS GT": base,
            "+ --matches m.csv --per-image p.csv": [*base, "--matches", f"{tmp}/m.csv", "--per-image", f"{tmp}/p.csv"],
            "+ --matches m.json --per-image p.json": [
                *base, "--matches", f"{tmp}/m.json", "--per-image", f"{tmp}/p.json",
            ],
        }  # fmt: skip
        walls = {}
        for name, args in runs.items():
            walls[name] = statistics.median(_cli(args) for _ in range(a.cli_runs))
            for f in Path(tmp).iterdir():
                f.unlink()
    print()
    print(f"| command line (fresh process) | wall s | x plain |  load average {os.getloadavg()[0]:.1f}")
    print("|---|---:|---:|")
    first = walls["deteval DETS GT"]
    for name, wall in walls.items():
        print(f"| {name} | {wall:.2f} | {wall / first:.2f} |")


if __name__ == "__main__":
    main()

"""Boundary IoU (``--iou-type boundary``) against faster-coco-eval's and vernier's boundary modes, in one run.

    python benchmarks/bench_boundary.py --data /work/benchdata/coco-segm [--images 500] [--runs 3]
        [--tools deteval,faster-coco-eval,vernier] [--ratio 0.02]

``--data`` holds ``gt.json`` and ``dets.json`` (``benchmarks/make_data.py --preset coco-segm``); ``--images N``
evaluates the first N images of the ground truth (and their results), written to a temporary folder first.
Each run of each tool is a fresh process with 2 threads (NUMBA_NUM_THREADS, faster-coco-eval's
``boundary_cpu_count``, vernier's ``num_threads``); the table gives the medians of the in-process time (import
to summary), of the whole process and of the peak RSS (VmHWM), the ratio of each tool to deteval, and whether
each tool's 12 stats equal deteval's (``==``; else the largest difference).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
THREADS = 2

TOOLS = {
    "deteval": (
        "import deteval\n"
        "res = deteval.evaluate(DT, GT, protocol='coco', iou_type='boundary', dilation_ratio=RATIO)\n"
        "STATS = [float(x) for x in res.stats.values()]\n"
    ),
    "faster-coco-eval": (
        "import contextlib, io\n"
        "from faster_coco_eval import COCO, COCOeval_faster\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    gt = COCO(GT)\n"
        "    dt = gt.loadRes(DT)\n"
        "    E = COCOeval_faster(gt, dt, 'boundary', boundary_dilation_ratio=RATIO, boundary_cpu_count=THREADS)\n"
        "    E.evaluate(); E.accumulate(); E.summarize()\n"
        "STATS = [float(x) for x in E.stats]\n"
    ),
    "vernier": (
        "import vernier.instance as VI\n"
        "S = VI.evaluate_boundary_summary(open(GT, 'rb').read(), open(DT, 'rb').read(), parity_mode='strict',\n"
        "    max_dets=[1, 10, 100], use_cats=True, num_threads=THREADS, dilation_ratio=RATIO)\n"
        "STATS = [float(x) for x in S.stats]\n"
    ),
}

CHILD = """import sys, time, json
T0 = time.perf_counter()
GT, DT, OUT, RATIO, THREADS = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
{body}
T = time.perf_counter() - T0
peak = None
for line in open('/proc/self/status'):
    if line.startswith('VmHWM:'):
        peak = int(line.split()[1]) / 1024
json.dump({{'seconds': T, 'stats': STATS, 'rss_mb': peak}}, open(OUT, 'w'))
"""


def subset(gt_path: Path, dt_path: Path, n_images: int, out: Path) -> tuple[Path, Path]:
    """The first ``n_images`` images of the ground truth, their annotations and their results."""
    gt = json.loads(gt_path.read_text())
    keep = {im["id"] for im in gt["images"][:n_images]}
    gt["images"] = [im for im in gt["images"] if im["id"] in keep]
    gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] in keep]
    dets = [d for d in json.loads(dt_path.read_text()) if d["image_id"] in keep]
    (out / "gt.json").write_text(json.dumps(gt))
    (out / "dets.json").write_text(json.dumps(dets))
    return out / "gt.json", out / "dets.json"


def run_once(tool: str, gt: Path, dt: Path, ratio: float, tmp: Path) -> dict:
    script = tmp / f"run_{tool.replace('-', '_')}.py"  # not the package's own name
    script.write_text(CHILD.format(body=TOOLS[tool]))
    out = tmp / f"{tool}.json"
    env = dict(os.environ, NUMBA_NUM_THREADS=str(THREADS), OMP_NUM_THREADS=str(THREADS),
               OPENBLAS_NUM_THREADS="1", RAYON_NUM_THREADS=str(THREADS))  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(script), str(gt), str(dt), str(out), repr(ratio), str(THREADS)],
                   check=True, env=env, stdout=subprocess.DEVNULL)  # fmt: skip
    whole = time.perf_counter() - t0
    result = json.loads(out.read_text())
    result["process"] = whole
    return result


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--images", type=int, default=0, help="the first N images only (0: all)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ratio", type=float, default=0.02)
    ap.add_argument("--tools", default=",".join(TOOLS))
    args = ap.parse_args(argv)
    tools = args.tools.split(",")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        gt, dt = args.data / "gt.json", args.data / "dets.json"
        if args.images:
            gt, dt = subset(gt, dt, args.images, tmp)
        n_det = len(json.loads(dt.read_text()))
        print(f"{gt} / {dt}: {n_det} results, dilation ratio {args.ratio}, {THREADS} threads, {args.runs} runs")
        runs: dict[str, list[dict]] = {t: [] for t in tools}
        for _ in range(args.runs):  # interleaved: a busy spell slows every tool alike
            for tool in tools:
                runs[tool].append(run_once(tool, gt, dt, args.ratio, tmp))
    base = runs.get("deteval")
    print("\n| tool | in process s | whole process s | peak RSS MB | in process / deteval | stats == deteval |")
    print("|---|---:|---:|---:|---:|---|")
    for tool in tools:
        med = {k: statistics.median(r[k] for r in runs[tool]) for k in ("seconds", "process", "rss_mb")}
        ratio = med["seconds"] / statistics.median(r["seconds"] for r in base) if base else float("nan")
        same = "-"
        if base and tool != "deteval":
            a, b = runs[tool][0]["stats"], base[0]["stats"]
            same = "yes" if a == b else f"no (max diff {max(abs(x - y) for x, y in zip(a, b)):.3g})"
        print(f"| {tool} | {med['seconds']:.3f} | {med['process']:.3f} | {med['rss_mb']:.0f} | {ratio:.2f} | {same} |")


if __name__ == "__main__":
    main()

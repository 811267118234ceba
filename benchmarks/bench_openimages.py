"""Time deteval's ``openimages`` protocol against hotcoco's ``oid_style`` on ``make_data.py --preset openimages``.

    python benchmarks/bench_openimages.py [--data DIR] [--runs 3]

Each tool runs in its own process, end to end from the files (CSV reading, hierarchy expansion,
matching, AP); the table gives the best wall time of ``--runs`` runs (each after one untimed run, so
deteval's kernels are loaded from its cache) and the peak RSS. The two do not compute the same
numbers (hotcoco ignores the image-level labels, moves a duplicate to the next free box, makes the
hierarchy root a class and keeps one parent per class): compare their speed only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

DETEVAL = """
import resource, sys, time, warnings
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
import deteval
d = {data!r}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    r = deteval.evaluate(d + "/dets.csv", d + "/boxes.csv", protocol="openimages", labels=d + "/labels.csv",
                         hierarchy=d + "/hierarchy.json")
print({{"wall": time.perf_counter() - t0, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "mAP": r.stats["mAP"]}})
"""

HOTCOCO = """
import json, resource, time, warnings
t0 = time.perf_counter()
import hotcoco
d = {data!r}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    gt = hotcoco.COCO.from_oid(d + "/boxes.csv")
    dt = gt.load_res_oid(d + "/dets.csv")
    label_to_id = {{c["name"]: c["id"] for c in gt.dataset["categories"]}}
    h = hotcoco.Hierarchy.from_file(d + "/hierarchy.json", label_to_id)
    ev = hotcoco.COCOeval(gt, dt, "bbox", oid_style=True, hierarchy=h)
    ev.run()
print({{"wall": time.perf_counter() - t0, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "mAP": ev.get_results()["AP"]}})
"""


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return eval(out.strip().splitlines()[-1])  # noqa: S307 - our own child's dict


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=HERE / "data" / "openimages")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args(argv)
    if not (a.data / "dets.csv").is_file():
        from make_openimages import make_openimages

        make_openimages(a.data)
    rows = {}
    for name, code in (("deteval", DETEVAL), ("hotcoco oid_style", HOTCOCO)):
        code = code.format(root=str(HERE.parent), data=str(a.data))
        _run(code)  # untimed: compiles or loads kernels, warms the page cache
        runs = [_run(code) for _ in range(a.runs)]
        rows[name] = {"wall_s": min(r["wall"] for r in runs), "peak_rss_mb": max(r["rss_mb"] for r in runs),
                      "mAP": runs[0]["mAP"]}  # fmt: skip
    print(json.dumps(rows, indent=2))
    base = rows["hotcoco oid_style"]
    for name, r in rows.items():
        print(f"{name:18s} {r['wall_s']:7.2f} s ({r['wall_s'] / base['wall_s']:.2f}x hotcoco)  "
              f"peak RSS {r['peak_rss_mb']:8.0f} MB  mAP {r['mAP']:.6f}")  # fmt: skip


if __name__ == "__main__":
    main()

"""Time deteval's ``dota`` protocol on ``make_data.py --preset dota``, and DOTA_devkit's evaluation when given.

    python benchmarks/bench_dota.py [--data DIR] [--devkit DEVKIT_DIR]

deteval: a cold run (kernels compiled or loaded from the cache) then the best of 3 warm ones, load and
evaluation separately. ``--devkit``: a folder with the devkit's ``dota_evaluation_task1.py`` and its built
``polyiou``; its ``voc_eval`` is run once per class, 11-point, and the mAPs are compared.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=HERE / "data" / "dota")
    ap.add_argument("--devkit", type=Path)
    a = ap.parse_args(argv)
    if not (a.data / "labelTxt").is_dir():
        from make_dota import make_dota

        make_dota(a.data)
    from deteval.protocols import get

    dota = get("dota")
    params = dota.params()
    runs = []
    for _ in range(4):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dets, gt = dota.load(a.data / "Task1", a.data / "labelTxt", params)
        t1 = time.perf_counter()
        result = dota.evaluate_loaded(dets, gt, params)
        runs.append((t1 - t0, time.perf_counter() - t1))
    load, ev = min(r[0] for r in runs[1:]), min(r[1] for r in runs[1:])
    print(f"deteval dota: {len(dets)} detections, {len(gt)} GT; cold {sum(runs[0]):.2f} s; warm load {load:.2f} s "
          f"+ evaluate {ev:.2f} s = {load + ev:.2f} s; mAP {result.stats['mAP']:.12f}")  # fmt: skip
    if a.devkit:
        sys.path.insert(0, str(a.devkit))
        import dota_evaluation_task1 as dk

        names = sorted(p.stem for p in (a.data / "labelTxt").glob("*.txt"))
        image_set = a.data / "imageset.txt"
        image_set.write_text("\n".join(names) + "\n")
        t0 = time.perf_counter()
        aps = []
        for row in result.per_class:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                aps.append(dk.voc_eval(str(a.data / "Task1" / "Task1_{:s}.txt"), str(a.data / "labelTxt" / "{:s}.txt"),
                                       str(image_set), row["name"], ovthresh=0.5, use_07_metric=True)[2])  # fmt: skip
        m_ap = sum(aps) / len(aps)
        gap = abs(m_ap - result.stats["mAP"])
        print(f"DOTA_devkit: {time.perf_counter() - t0:.2f} s; mAP {m_ap:.12f}; |difference| {gap:.1e}")


if __name__ == "__main__":
    main()

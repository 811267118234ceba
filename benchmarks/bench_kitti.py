"""The KITTI preset: ``--protocol kitti`` against OpenPCDet's ``kitti_object_eval_python`` in the same run.

Generates (once, into ``--data``) KITTI-val-sized folders: ``--images`` label files (default 3,769, the
common val split), ~8 objects each (Car, Pedestrian, Cyclist, Van, Person_sitting, Truck, DontCare) and
~40 detections each (~150k), scores distinct. Then times, best of ``--runs``, after one warm-up run each:

* the reference (vendored in tests/references/, shims in tests/support/kitti_reference.py): reading both
  folders with ``get_label_annos``; ``eval_class`` for image boxes (metric 0), classes 0-2, with
  ``get_official_eval_result``'s overlaps, then ``get_mAP`` / ``get_mAP_R40`` (its 2D figures; BEV/3D,
  which need CUDA, left out);
* deteval: reading the folders; the evaluation of the loaded labels; the whole ``evaluate()``.

The figures must be equal (checked, printed).

    python benchmarks/bench_kitti.py --data /tmp/kitti-bench --runs 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TYPES = ["Car"] * 6 + ["Pedestrian"] * 2 + ["Cyclist", "Van", "Person_sitting", "Truck", "DontCare", "DontCare"]


def make(root: Path, n_images: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    (root / "label_2").mkdir(parents=True, exist_ok=True)
    (root / "results").mkdir(parents=True, exist_ok=True)
    scores = rng.permutation(np.arange(1, 10_000_000))[: n_images * 200] / 1e7
    k = 0
    for i in range(n_images):
        n = int(rng.integers(1, 16))
        names = [TYPES[j] for j in rng.integers(0, len(TYPES), n)]
        wh = np.column_stack([rng.uniform(20, 300, n), rng.uniform(15, 200, n)])
        xy = np.column_stack([rng.uniform(0, 1242, n), rng.uniform(100, 375, n)]) - wh / 2
        box = np.round(np.column_stack([xy, xy + wh]), 2)
        trunc, occ, alpha = rng.choice([0.0, 0.0, 0.1, 0.3, 0.6], n), rng.integers(0, 4, n), rng.uniform(-3, 3, n)
        lines = [
            f"{names[j]} {trunc[j]:.2f} {occ[j]} {alpha[j]:.2f} {box[j, 0]:.2f} {box[j, 1]:.2f} "
            f"{box[j, 2]:.2f} {box[j, 3]:.2f} 1.52 1.63 3.88 1.84 1.47 8.41 0.01\n"
            for j in range(n)
        ]
        (root / "label_2" / f"{i:06d}.txt").write_text("".join(lines))
        m = int(rng.integers(10, 70))
        src = rng.integers(0, n, m)
        jit = rng.normal(0, 0.08, (m, 4)) * np.tile(wh[src], 2)
        dbox = np.round(box[src] + jit, 2)
        dname = [
            names[s] if names[s] != "DontCare" and rng.random() < 0.85 else TYPES[int(rng.integers(0, 9))] for s in src
        ]
        da = alpha[src] + rng.normal(0, 0.3, m)
        lines = [
            f"{dname[j]} -1 -1 {da[j]:.2f} {dbox[j, 0]:.2f} {dbox[j, 1]:.2f} {dbox[j, 2]:.2f} "
            f"{dbox[j, 3]:.2f} 1.52 1.63 3.88 1.84 1.47 8.41 0.01 {scores[k + j]:.7f}\n"
            for j in range(m)
        ]
        k += m
        (root / "results" / f"{i:06d}.txt").write_text("".join(lines))


def best(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--images", type=int, default=3769)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    if not (args.data / "results").exists():
        t = time.perf_counter()
        make(args.data, args.images)
        print(f"generated {args.data} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    sys.path.insert(0, str(ROOT / "tests"))
    from support.kitti_reference import CLASSES, DIFFICULTIES, load_reference

    import deteval
    from deteval.protocols import get

    results, labels = args.data / "results", args.data / "label_2"
    proto = get("kitti")
    params = proto.params()
    deteval.evaluate(str(results), str(labels), protocol="kitti")  # compile / warm
    t_read, (dets, gt) = best(lambda: proto.load(str(results), str(labels), params), args.runs)
    t_eval, res = best(lambda: proto.evaluate_loaded(dets, gt, params), args.runs)
    t_all, _ = best(lambda: deteval.evaluate(str(results), str(labels), protocol="kitti"), args.runs)
    print(f"{len(gt.image_ids)} images, {len(gt)} labels, {len(dets)} detections, best of {args.runs}")
    print(f"deteval: read folders {t_read:.3f} s; evaluate loaded {t_eval:.3f} s; whole evaluate() {t_all:.3f} s")

    ev, kc = load_reference(Path(tempfile.mkdtemp()))
    overlaps = np.stack(
        [
            np.array([[0.7, 0.5, 0.5, 0.7, 0.5, 0.7]] * 3),
            np.array(
                [[0.7, 0.5, 0.5, 0.7, 0.5, 0.5], [0.5, 0.25, 0.25, 0.5, 0.25, 0.5], [0.5, 0.25, 0.25, 0.5, 0.25, 0.5]]
            ),
        ]
    )[:, :, [0, 1, 2]]

    def ref_read():
        g = kc.get_label_annos(str(labels))
        return kc.get_label_annos(str(results), [int(i) for i in gt.image_ids]), g

    def ref_eval(dt_annos, gt_annos):
        aos = next((bool(a["alpha"][0] != -10) for a in dt_annos if a["alpha"].shape[0]), False)
        ret = ev.eval_class(gt_annos, dt_annos, [0, 1, 2], [0, 1, 2], 0, overlaps, aos)
        return ev.get_mAP(ret["precision"])[:, :, 0], ev.get_mAP_R40(ret["precision"])[:, :, 0]

    t_rread, (dt_annos, gt_annos) = best(ref_read, args.runs)
    ref_eval(dt_annos[:50], gt_annos[:50])  # numba's compilation, untimed
    t_reval, (r11, r40) = best(lambda: ref_eval(dt_annos, gt_annos), args.runs)
    want = {
        f"{c}/{d}/{k}": float(v[i, j])
        for i, c in enumerate(CLASSES)
        for j, d in enumerate(DIFFICULTIES)
        for k, v in (("R40", r40), ("R11", r11))
    }
    same = want == res.stats
    print(
        f"reference: read folders {t_rread:.3f} s; eval_class (2D) + mAP {t_reval:.3f} s; "
        f"together {t_rread + t_reval:.3f} s"
    )
    print(
        f"deteval faster: evaluation {t_reval / t_eval:.1f}x; reading {t_rread / t_read:.1f}x; whole "
        f"{(t_rread + t_reval) / t_all:.1f}x; figures equal: {'yes' if same else 'NO ' + str((want, res.stats))}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

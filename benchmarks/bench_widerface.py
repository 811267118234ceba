"""WIDER FACE at the real size: the official validation ground truth (tests/data/widerface: 3,226 images,
39,708 faces) and generated predictions (~100 per image by default), deteval against WiderFace-Evaluation's
``evaluation.py`` (vendored in tests/references/, run as the parity tests run it, its Cython overlap replaced
by the tests' bit-identical numpy twin) in the same run; both APs are checked equal.

    python benchmarks/bench_widerface.py [--data DIR] [--per-image 100] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
GT = ROOT / "tests" / "data" / "widerface"


def make_predictions(out: Path, per_image: int, seed: int = 0) -> int:
    """Faces jittered (80 %) and random boxes up to ``per_image`` rows per image, logit scores."""
    from scipy.io import loadmat

    rng = np.random.default_rng(seed)
    mat = loadmat(GT / "wider_face_val.mat")
    total = 0
    for e, files, boxes in zip(mat["event_list"][:, 0], mat["file_list"][:, 0], mat["face_bbx_list"][:, 0]):
        event = str(e[0])
        (out / event).mkdir(parents=True, exist_ok=True)
        for name, faces in zip(files[:, 0], boxes[:, 0]):
            name = str(name[0])
            f = faces.astype(np.float64).reshape(-1, 4)[: per_image // 2]
            f = f[rng.random(len(f)) < 0.8]
            f = f + rng.integers(-2, 3, f.shape)
            m = per_image - len(f)
            noise = np.hstack([rng.integers(0, 1000, (m, 2)), rng.integers(4, 200, (m, 2))])
            rows = rng.permutation(np.vstack([f, noise]))
            score = rng.normal(0.0, 2.0, len(rows))
            lines = [f"{event}/{name}.jpg", str(len(rows))]
            lines += [f"{int(r[0])} {int(r[1])} {int(r[2])} {int(r[3])} {s!r}" for r, s in zip(rows, score.tolist())]
            (out / event / f"{name}.txt").write_text("\n".join(lines) + "\n")
            total += len(rows)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None, help="prediction folder to write (default: a temporary one)")
    ap.add_argument("--per-image", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3, help="deteval runs (the reference runs once)")
    args = ap.parse_args()
    from support.widerface_reference import reference_aps

    import deteval

    with tempfile.TemporaryDirectory() as tmp:
        pred = args.data or Path(tmp) / "pred"
        n = make_predictions(pred, args.per_image)
        print(f"{n:,} predictions, 3,226 images, 39,708 faces")
        deteval.evaluate(str(pred), str(GT), protocol="widerface")  # compiles the kernels on a cold cache
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            r = deteval.evaluate(str(pred), str(GT), protocol="widerface")
            times.append(time.perf_counter() - t)
        ours = [r.stats[s] for s in ("easy", "medium", "hard")]
        t = time.perf_counter()
        ref = [float(v) for v in reference_aps(pred, GT, Path(tmp))]
        ref_time = time.perf_counter() - t
    med = statistics.median(times)
    print(f"deteval   {med:.3f} s (median of {args.runs}; {', '.join(f'{x:.3f}' for x in times)})  {ours}")
    print(f"reference {ref_time:.3f} s  {ref}")
    print(f"equal: {ours == ref}; ratio {ref_time / med:.1f}x")


if __name__ == "__main__":
    main()

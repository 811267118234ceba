"""Binary masks to run-length encoding, as the batch API (``deteval.Evaluator(iou_type="segm")``) gets them.

    python benchmarks/bench_mask_encode.py [--runs 5] [--masks 100] [--shapes 480x640,1024x1024]

Masks arrive as one ``(n, height, width)`` array per image (torchmetrics' convention, nonzero: inside).
Timed, in this process, medians of ``--runs`` after one untimed warm-up:

- deteval: ``deteval.rle.masks_from_binary(masks)``, the runs the evaluator keeps.
- pycocotools, faster-coco-eval, hotcoco, ultrafast-pycocotools: ``mask.encode`` of the array as each
  takes it (``(height, width, n)``, Fortran order, uint8), the conversion included, since the
  array a user holds is ``(n, height, width)``: compressed strings, which an evaluator then decodes.

Inputs (seeded): ``blobs``, one filled ellipse per mask of 2-30% of the image, as instance masks are;
``noise``, half the pixels set at random (the most runs a mask can have; ``--masks`` / 10 of them).
deteval's runs are checked equal to pycocotools' (strings decoded) on every input (✓/✗).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TOOLS = {
    "pycocotools": "pycocotools.mask",
    "faster-coco-eval": "faster_coco_eval.core.mask",
    "hotcoco": "hotcoco.mask",
    "ultrafast": "ultrafast_pycocotools.mask",
}


def blobs(n: int, h: int, w: int, rng: np.random.Generator) -> np.ndarray:
    yy, xx = np.mgrid[:h, :w]
    out = np.zeros((n, h, w), bool)
    for i in range(n):
        frac = rng.uniform(0.02, 0.3)
        ry, rx = np.sqrt(frac * h * w / np.pi) * rng.uniform(0.6, 1.4, 2)
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        out[i] = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
    return out


def timed(fn, runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--masks", type=int, default=100, help="masks per array (noise: a tenth)")
    ap.add_argument("--shapes", default="480x640,1024x1024", help="height x width, comma separated")
    args = ap.parse_args()

    import importlib

    from deteval.io.masks import decode_rle_strings
    from deteval.rle import masks_from_binary

    tools = {}
    for name, module in TOOLS.items():
        try:
            tools[name] = importlib.import_module(module)
        except ImportError:
            print(f"{name}: not installed, left out")
    rng = np.random.default_rng(0)
    print(f"{'input':<22} {'tool':<17} {'ms':>9} {'ms/mask':>8} {'ratio':>6}")
    for shape in args.shapes.split(","):
        h, w = (int(v) for v in shape.split("x"))
        n_noise = max(1, args.masks // 10)
        inputs = {"blobs": blobs(args.masks, h, w, rng), "noise": rng.random((n_noise, h, w)) < 0.5}
        for kind, masks in inputs.items():
            label = f"{kind} {len(masks)}x{h}x{w}"
            ours = masks_from_binary(masks)
            ref = tools["pycocotools"].encode(np.asfortranarray(masks.transpose(1, 2, 0).astype(np.uint8)))
            runs, n_runs = decode_rle_strings([r["counts"] for r in ref])
            same = np.array_equal(ours.counts, runs) and np.array_equal(np.diff(ours.offsets), n_runs)
            t_ours = timed(lambda m=masks: masks_from_binary(m), args.runs)
            rows = [("deteval " + ("✓" if same else "✗"), t_ours)]
            for name, mod in tools.items():
                rows.append((name, timed(lambda m=masks, e=mod.encode: e(
                    np.asfortranarray(m.transpose(1, 2, 0).astype(np.uint8))), args.runs)))  # fmt: skip
            best = min(t for name, t in rows[1:])
            for name, t in rows:
                print(f"{label:<22} {name:<17} {t * 1e3:9.2f} {t * 1e3 / len(masks):8.3f} {t / best:6.2f}")
    print("ratio: to the fastest of the other tools")


if __name__ == "__main__":
    main()

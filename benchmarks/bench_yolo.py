"""The YOLO preset: ``--protocol yolo`` on YOLO folders against ultralytics' own metric code on the same boxes.

Generates (once, into ``--data``) a label folder, a prediction folder and sizes: ``--images`` images (default
5,000), 80 classes, ~60 predictions per image (~300k), confidences distinct. Then times, best of ``--runs``:

* deteval reading the folders (``read_yolo`` and the containers);
* deteval's evaluation of the loaded containers (matching and ``ap_per_class``), and the whole ``evaluate()``;
* ultralytics 8.4.190's ``DetectionValidator._process_batch`` per image with ``DetMetrics.update_stats``, then
  ``DetMetrics.process()``: what ``yolo val`` runs after inference (the tensors made before the clock starts).

The figures must be equal (checked, printed). Needs torch and ultralytics (see docs/yolo.md).

    python benchmarks/bench_yolo.py --data /tmp/yolo-bench --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def make(root: Path, n_images: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    (root / "labels").mkdir(parents=True, exist_ok=True)
    (root / "preds").mkdir(parents=True, exist_ok=True)
    confs = rng.permutation(np.arange(1, 10_000_000))[: n_images * 200] / 1e7
    k = 0
    sizes = {}
    for i in range(n_images):
        stem = f"{i:06d}"
        sizes[stem] = [int(rng.integers(320, 1920)), int(rng.integers(240, 1080))]
        n = int(rng.integers(0, 15))
        cls = rng.integers(0, 80, n)
        wh = rng.uniform(0.01, 0.4, (n, 2))
        c = rng.uniform(wh / 2, 1 - wh / 2)
        lab = np.column_stack([cls, c, wh])
        (root / "labels" / f"{stem}.txt").write_text("".join(f"{int(r[0])} {r[1]:.6f} {r[2]:.6f} {r[3]:.6f} "
                                                             f"{r[4]:.6f}\n" for r in lab))  # fmt: skip
        m = int(rng.integers(30, 90))
        src = rng.integers(0, max(n, 1), m)
        jit = rng.normal(0, 0.08, (m, 4))
        p = np.zeros((m, 6))
        if n:
            p[:, 0] = np.where(rng.random(m) < 0.9, cls[src], rng.integers(0, 80, m))
            p[:, 1:3] = np.clip(c[src] + jit[:, :2] * wh[src], 0, 1)
            p[:, 3:5] = np.clip(wh[src] * (1 + jit[:, 2:]), 0.001, 1)
        else:
            p[:, 0] = rng.integers(0, 80, m)
            p[:, 1:5] = rng.uniform(0.05, 0.5, (m, 4))
        p[:, 5] = confs[k : k + m]
        k += m
        (root / "preds" / f"{stem}.txt").write_text("".join(f"{int(r[0])} {r[1]:.6f} {r[2]:.6f} {r[3]:.6f} "
                                                            f"{r[4]:.6f} {r[5]:.7f}\n" for r in p))  # fmt: skip
    (root / "sizes.json").write_text(json.dumps(sizes))


def best(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def ultralytics_loop(ys, dets, gt):
    """The per-image tensors (untimed) and the timed loop of ultralytics' metric code."""
    os.environ.setdefault("YOLO_OFFLINE", "1")
    os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp())
    import torch
    from ultralytics.models.yolo.detect.val import DetectionValidator
    from ultralytics.utils.metrics import DetMetrics

    conf32 = dets.score.astype(np.float32)
    ids = gt.categories.ids
    g_order, d_order = np.argsort(gt.image, kind="stable"), np.argsort(dets.image, kind="stable")
    g_off = np.searchsorted(gt.image[g_order], np.arange(len(ys.stems) + 1))
    d_off = np.searchsorted(dets.image[d_order], np.arange(len(ys.stems) + 1))
    batches = []
    for i in range(len(ys.stems)):
        g, d = g_order[g_off[i] : g_off[i + 1]], d_order[d_off[i] : d_off[i + 1]]
        d = d[np.argsort(-conf32[d], kind="stable")]
        cls = torch.from_numpy(ids[gt.category[g]].astype(np.float32))
        batches.append((
            {"cls": torch.from_numpy(ids[dets.category[d]].astype(np.float32)), "conf": torch.from_numpy(conf32[d]),
             "bboxes": torch.from_numpy(dets.boxes[d].astype(np.float32))},
            {"cls": cls, "bboxes": torch.from_numpy(gt.boxes[g].astype(np.float32))},
        ))  # fmt: skip
    v = DetectionValidator()

    def run():
        metrics = DetMetrics(names={int(k): str(k) for k in ids})
        for i, (pred, batch) in enumerate(batches):
            no_pred = pred["cls"].shape[0] == 0
            metrics.update_stats({
                **v._process_batch(pred, batch), "target_cls": batch["cls"].numpy(),
                "target_img": np.unique(batch["cls"].numpy()),
                "conf": np.zeros(0) if no_pred else pred["conf"].numpy(),
                "pred_cls": np.zeros(0) if no_pred else pred["cls"].numpy(), "im_name": str(i),
            })  # fmt: skip
        metrics.process()
        return [float(x) for x in metrics.mean_results()]

    return run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-ultralytics", action="store_true")
    args = ap.parse_args(argv)
    if not (args.data / "sizes.json").exists():
        t = time.perf_counter()
        make(args.data, args.images)
        print(f"generated {args.data} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    import deteval
    from deteval.io.yolo import read_yolo, yolo_containers
    from deteval.protocols import get

    preds, labels, sizes = args.data / "preds", args.data / "labels", args.data / "sizes.json"
    proto = get("yolo")
    params = proto.params()
    deteval.evaluate(str(preds), str(labels), protocol="yolo", image_sizes=str(sizes))  # compile / warm
    t_read, ys = best(lambda: read_yolo(preds, labels, sizes), args.runs)
    t_cont, (dets, gt) = best(lambda: yolo_containers(ys), args.runs)
    t_eval, res = best(lambda: proto.evaluate_loaded(dets, gt, params), args.runs)
    t_all, _ = best(lambda: deteval.evaluate(str(preds), str(labels), protocol="yolo", image_sizes=str(sizes)),
                    args.runs)  # fmt: skip
    print(f"{len(ys.stems)} images, {len(gt)} labels, {len(ys.preds.image)} predictions, best of {args.runs}")
    print(f"deteval: read folders {t_read:.3f} s + containers {t_cont:.3f} s; evaluate loaded {t_eval:.3f} s; "
          f"whole evaluate() {t_all:.3f} s")  # fmt: skip
    if not args.no_ultralytics:
        run = ultralytics_loop(ys, dets, gt)
        t_u, stats = best(run, args.runs)
        same = stats == list(res.stats.values())
        print(f"ultralytics DetMetrics loop {t_u:.3f} s; deteval's evaluation {t_u / t_eval:.1f}x faster; "
              f"figures equal: {'yes' if same else 'NO ' + str((stats, res.stats))}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

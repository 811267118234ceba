"""Training-loop evaluation: deteval.Evaluator against torchmetrics' MeanAveragePrecision.

    python benchmarks/bench_evaluator.py --preset coco [--batch 32] [--images N] [--runs 3]
                                         [--tools deteval,torchmetrics] [--json out.json]

Both tools get the same per-image inputs (xywh boxes, scores, labels; targets with
``iscrowd``, ``area`` and ``image_id``), built before any timing, fed in batches of
``--batch`` images in image-id order. Timed, in this process:

- ``update``: all ``update()`` calls; also given per 1,000 input detections and per batch.
  deteval matches here; torchmetrics stores the tensors.
- ``compute``: one ``compute()`` (deteval ranks and reduces; torchmetrics, with its default
  pycocotools backend, converts to COCO objects and runs COCOeval).

deteval is timed with NumPy arrays and with CPU torch tensors, after an untimed warm-up that
loads its numba kernels; its arrays are checked against ``deteval.evaluate()`` on the same
data with ``np.array_equal`` (✓/✗), and torchmetrics' ``map``/``map_50``... are printed
next to deteval's stats with their differences.

torchmetrics needs torchvision only for ``torchvision.ops.box_convert``. Where torchvision
cannot be imported (its PyPI wheels need a CUDA build of torch), this script puts a stand-in
``box_convert`` in place that supports ``in_fmt == out_fmt`` only (a clone, as torchvision
returns); boxes are given as xywh, so that is the only conversion torchmetrics asks for.
The output says when the stand-in was used.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import statistics
import sys
import time
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

STAT_MAP = {  # torchmetrics key -> deteval stat
    "map": "AP",
    "map_50": "AP50",
    "map_75": "AP75",
    "map_small": "APs",
    "map_medium": "APm",
    "map_large": "APl",
    "mar_1": "AR1",
    "mar_10": "AR10",
    "mar_100": "AR100",
    "mar_small": "ARs",
    "mar_medium": "ARm",
    "mar_large": "ARl",
}


def load(preset: str, data: Path | None, n_images: int | None):
    """GroundTruth, Detections and one (pred, target) dict per image (NumPy), image-id order."""
    from deteval.io.coco import load_coco_gt, load_coco_results

    folder = data or HERE / "data" / preset
    gt_path, dt_path = folder / "gt.json", folder / "dets.json"
    if not (gt_path.exists() and dt_path.exists()):
        sys.path.insert(0, str(HERE))
        import make_data

        make_data.make(preset, folder)
    gt = load_coco_gt(gt_path)
    dets = load_coco_results(dt_path, gt)
    n = len(gt.images) if n_images is None else min(n_images, len(gt.images))
    if n < len(gt.images):  # the first n images (by id), as containers again for evaluate()
        from deteval.types import images_between

        dets, gt = images_between(dets, gt, 0, n)
    cat_ids = gt.categories.ids
    g_order = np.argsort(gt.image, kind="stable")
    d_order = np.argsort(dets.image, kind="stable")
    g_split = np.split(g_order, np.searchsorted(gt.image[g_order], np.arange(1, n)))
    d_split = np.split(d_order, np.searchsorted(dets.image[d_order], np.arange(1, n)))
    items = []
    for i in range(n):
        g, d = g_split[i], d_split[i]
        pred = {"boxes": dets.boxes[d], "scores": dets.score[d], "labels": cat_ids[dets.category[d]]}
        tgt = {
            "boxes": gt.boxes[g],
            "labels": cat_ids[gt.category[g]],
            "iscrowd": gt.crowd[g].astype(np.int64),
            "area": gt.area[g],
            "image_id": int(gt.images.ids[i]),
        }
        items.append((pred, tgt))
    return gt, dets, items


def to_torch(items):
    import torch

    def conv(d):
        return {
            k: (torch.tensor(v) if k == "image_id" else torch.from_numpy(np.ascontiguousarray(v))) for k, v in d.items()
        }

    return [(conv(p), conv(t)) for p, t in items]


def batches(items, size):
    for k in range(0, len(items), size):
        chunk = items[k : k + size]
        yield [p for p, _ in chunk], [t for _, t in chunk]


def run_deteval(items, cats, batch):
    from deteval.evaluator import Evaluator

    ev = Evaluator(box_format="xywh", categories=cats)
    t0 = time.perf_counter()
    for preds, target in batches(items, batch):
        ev.update(preds, target)
    t1 = time.perf_counter()
    res = ev.compute()
    t2 = time.perf_counter()
    return {"update": t1 - t0, "compute": t2 - t1, "state_bytes": ev.nbytes, "kept": ev.state().num_detections}, res


def install_box_convert_stand_in() -> bool:
    """A stand-in for torchvision.ops.box_convert when torchvision cannot be imported; True if used."""
    try:
        import torchvision.ops  # noqa: F401

        return False
    except Exception:  # noqa: BLE001 - any import failure (missing, or built for another torch)
        pass
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]

    def box_convert(boxes, in_fmt, out_fmt):
        if in_fmt != out_fmt:
            raise NotImplementedError("the benchmark's stand-in converts nothing: give boxes in the metric's format")
        return boxes.clone()

    tv = types.ModuleType("torchvision")
    ops = types.ModuleType("torchvision.ops")
    ops.box_convert = box_convert
    tv.ops = ops
    sys.modules["torchvision"], sys.modules["torchvision.ops"] = tv, ops
    import torchmetrics.detection.mean_ap as tm_map

    tm_map._TORCHVISION_AVAILABLE = True
    return True


def run_torchmetrics(items_t, batch):
    from torchmetrics.detection.mean_ap import MeanAveragePrecision

    metric = MeanAveragePrecision(box_format="xywh", iou_type="bbox")
    t0 = time.perf_counter()
    for preds, target in batches(items_t, batch):
        metric.update(preds, target)
    t1 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        out = metric.compute()
    t2 = time.perf_counter()
    return {"update": t1 - t0, "compute": t2 - t1}, {k: float(v) for k, v in out.items() if k in STAT_MAP}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="coco", help="a make_data.py preset (default coco)")
    ap.add_argument("--data", type=Path, help="folder with gt.json and dets.json (default benchmarks/data/PRESET)")
    ap.add_argument("--batch", type=int, default=32, help="images per update() (default 32)")
    ap.add_argument("--images", type=int, help="use the first N images (by id) only")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of deteval; medians are reported")
    ap.add_argument("--tm-runs", type=int, default=1, help="timed runs of torchmetrics (default 1: it is slow)")
    ap.add_argument("--tools", default="deteval,torchmetrics")
    ap.add_argument("--json", type=Path, help="write the measurements here")
    a = ap.parse_args(argv)
    tools = {t.strip() for t in a.tools.split(",")}

    import deteval

    gt, dets, items = load(a.preset, a.data, a.images)
    n_det, n_img = sum(len(p["scores"]) for p, _ in items), len(items)
    cats = gt.categories.ids.tolist()
    print(f"{a.preset}: {n_img} images, {len(gt)} GT, {n_det} detections, batches of {a.batch} images")
    ref = deteval.evaluate(dets, gt)
    out: dict = {
        "meta": {
            "preset": a.preset,
            "images": n_img,
            "gt": len(gt),
            "detections": n_det,
            "batch": a.batch,
            "python": platform.python_version(),
            "machine": platform.machine(),
        },
        "tools": {},
    }
    rows = []
    if "deteval" in tools:
        run_deteval(items[: 4 * a.batch], cats, a.batch)  # warm-up: numba kernels loaded (or compiled)
        inputs = {"deteval (numpy)": items}
        try:
            inputs["deteval (torch cpu)"] = to_torch(items)
        except ImportError:
            pass
        for label, data in inputs.items():
            runs = []
            for _ in range(a.runs):
                m, res = run_deteval(data, cats, a.batch)
                runs.append(m)
            same = all(np.array_equal(res.arrays[k], ref.arrays[k]) for k in ("precision", "recall", "scores"))
            med = {k: statistics.median(r[k] for r in runs) for k in ("update", "compute")}
            med.update(state_bytes=runs[0]["state_bytes"], kept=runs[0]["kept"], same_as_evaluate=same, runs=runs)
            out["tools"][label] = med
            rows.append((label, med["update"], med["compute"], "✓" if same else "✗"))
    if "torchmetrics" in tools:
        try:
            import torchmetrics

            stand_in = install_box_convert_stand_in()
            items_t = to_torch(items)
        except ImportError as exc:
            print(f"torchmetrics: not run ({exc})")
        else:
            runs, stats = [], {}
            for _ in range(a.tm_runs):
                m, stats = run_torchmetrics(items_t, a.batch)
                runs.append(m)
            med = {k: statistics.median(r[k] for r in runs) for k in ("update", "compute")}
            label = f"torchmetrics {torchmetrics.__version__}"
            out["tools"][label] = dict(med, runs=runs, stats=stats, box_convert_stand_in=stand_in)
            rows.append((label, med["update"], med["compute"], "—"))
            if stand_in:
                print("torchmetrics: torchvision cannot be imported here; a stand-in box_convert (clone) was used")

    print()
    print("| tool | update s | update ms / 1k dets | update ms / batch | compute s | = evaluate() |")
    print("|---|---:|---:|---:|---:|:-:|")
    n_batches = -(-n_img // a.batch)
    for label, upd, comp, same in rows:
        print(
            f"| {label} | {upd:.3f} | {1000 * upd / (n_det / 1000):.2f} | {1000 * upd / n_batches:.2f} "
            f"| {comp:.3f} | {same} |"
        )
    det = out["tools"].get("deteval (numpy)")
    if det:
        print(
            f"\ndeteval state: {det['state_bytes'] / 1e6:.1f} MB for {det['kept']} kept detections "
            f"({det['state_bytes'] / max(det['kept'], 1):.1f} bytes each, images and category rows included)"
        )
    tm = [v for k, v in out["tools"].items() if k.startswith("torchmetrics")]
    if tm:
        print("\n| stat | deteval (= pycocotools) | torchmetrics | difference |")
        print("|---|---:|---:|---:|")
        for key, name in STAT_MAP.items():
            ours, theirs = ref.stats[name], tm[0]["stats"].get(key, float("nan"))
            print(f"| {name} | {ours:.6f} | {theirs:.6f} | {theirs - ours:+.2e} |")
        out["deteval_stats"] = ref.stats
    if a.json:
        a.json.write_text(json.dumps(out, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time deteval's ``citypersons`` and ``crowdhuman`` protocols against the reference scripts, at each
dataset's validation size, on generated data, in the same run.

    python benchmarks/bench_pedestrian.py [--dataset citypersons|crowdhuman|both] [--data DIR] [--runs 3]

* CityPersons val: 500 images (2048 x 1024), about 5,800 annotations (the real ``val_gt.json``'s mix of
  pedestrians, riders, groups and ignore regions, heights and visibilities), 60 detections per image. The
  reference is the authors' ``eval_MR_multisetup.py`` (its ``eval_demo.py`` loop: four setups), run from the
  checkout ``DETEVAL_CITYPERSONS_REF`` names (it has no license, so it is not in this repository; without the
  variable it is skipped), with the shims of tests/support/citypersons_reference.py; ``--gt`` scores the real
  ``val_gt.json`` instead of the generated one.
* CrowdHuman val: 4,370 images, about 100,000 ground-truth boxes (crowds, 'mask' regions, ignore flags,
  boxes past the border), about 500,000 detections. The reference is CrowdDet's ``compute_APMR`` and
  ``compute_JI.evaluation_all`` (its 10 worker processes), vendored in tests/references/crowddet, on the
  records its ``tools/test.py`` writes.

Each tool runs in its own process, end to end from the files; the table gives the best wall time of
``--runs`` runs (deteval's after one untimed run, so its kernels come from its cache; the reference's once
at full size unless ``--ref-runs`` says more) and both tools' numbers, which must agree (JI: the reference
sums in its workers' order, so its last bits may differ).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

DETEVAL = """
import resource, sys, time, warnings
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
import deteval
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    r = deteval.evaluate({preds!r}, {gt!r}, protocol={protocol!r})
print({{"wall": time.perf_counter() - t0, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "stats": r.stats}})
"""

CITYPERSONS_REF = """
import resource, sys, tempfile, time, warnings
from pathlib import Path
sys.path.insert(0, {tests!r})
warnings.simplefilter("ignore")
from support import citypersons_reference as ref
tmp = Path(tempfile.mkdtemp())
ref.load(tmp)
t0 = time.perf_counter()
mr = ref.mr(tmp, {gt!r}, __import__("json").load(open({preds!r})))
print({{"wall": time.perf_counter() - t0, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "stats": dict(zip(["Reasonable", "Reasonable_small", "Reasonable_occ=heavy", "All"], mr))}})
"""

CROWDHUMAN_REF = """
import io, contextlib, resource, sys, tempfile, time, types, warnings
from pathlib import Path
sys.path.insert(0, {tests!r})
warnings.simplefilter("ignore")
from support import crowddet_reference as cd
tmp = Path(tempfile.mkdtemp())
ref = cd.load(tmp)
if ref.ji.tqdm is None:  # the stand-in module: evaluation_all draws a progress bar
    class _Bar:
        monitor_interval = 0
        def __init__(self, *a, **k): pass
        def update(self, n): pass
        def close(self): pass
    ref.ji.tqdm = _Bar
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    ap, mr = ref.apmr.compute_APMR({preds!r}, {gt!r}, "box", 0)
    t1 = time.perf_counter()
    _, ji = ref.ji.evaluation_all({combined!r}, "box")
t2 = time.perf_counter()
ji_wall = (t2 - t1) * {ji_scale!r}
print({{"wall": t1 - t0 + ji_wall, "apmr_wall": t1 - t0, "ji_wall": ji_wall,
       "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "stats": {{"AP": float(ap), "MR": float(mr), "JI": float(ji)}}}})
"""


def make_citypersons(out: Path, n_images: int = 500, per_image_dets: int = 60, seed: int = 0) -> tuple[Path, Path]:
    """A val_gt.json-like ground truth and COCO results (category 1)."""
    rng = np.random.default_rng(seed)
    images, anns = [], []
    for i in range(1, n_images + 1):
        images.append({"id": i, "im_name": f"img{i:04d}.png", "height": 1024, "width": 2048})
        for _ in range(int(rng.poisson(11.6))):  # val_gt.json: 5,795 annotations on 500 images
            h = float(np.clip(rng.lognormal(4.1, 0.6), 8, 700))
            w = round(h * 0.41, 2)
            x, y = float(rng.uniform(0, 2048 - w)), float(rng.uniform(300, 700))
            cat = int(rng.choice([1, 1, 1, 1, 1, 2, 3, 4, 5, 0]))
            vis = float(np.clip(rng.beta(3, 1.2), 0.01, 1.0))
            anns.append({"id": len(anns) + 1, "image_id": i, "category_id": cat, "iscrowd": 0,
                         "ignore": int(cat != 1 or h < 50 or rng.random() < 0.05), "bbox": [x, y, w, h],
                         "vis_bbox": [x, y, w, h * vis], "height": h, "vis_ratio": vis})
    cats = [{"id": c, "name": n} for c, n in [(1, "pedestrian"), (2, "rider"), (3, "sitting person"),
                                               (4, "other person"), (5, "people group"), (0, "ignore region")]]
    data = {"images": images, "annotations": anns, "categories": cats}
    gt, dt = out / "citypersons_val_gt.json", out / "citypersons_dets.json"
    gt.write_text(json.dumps(data))
    dt.write_text(json.dumps(citypersons_dets(data, per_image_dets, seed)))
    return dt, gt


def citypersons_dets(gt: dict, per_image: int = 60, seed: int = 0) -> list:
    """COCO results for a CityPersons ground truth: jittered copies of its boxes and random ones."""
    rng = np.random.default_rng(seed + 1)
    by_image: dict = {}
    for a in gt["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a["bbox"])
    res = []
    for im in gt["images"]:
        boxes = by_image.get(im["id"], [])
        for _ in range(per_image):
            copy = boxes and rng.random() < 0.6
            if copy:
                x, y, w, h = boxes[int(rng.integers(len(boxes)))]
                j = rng.normal(0, 0.08, 4) * [w, h, w, h]
                box = [x + j[0], y + j[1], max(w + j[2], 1.0), max(h + j[3], 1.0)]
            else:
                h = float(np.clip(rng.lognormal(4.0, 0.7), 8, 700))
                box = [float(rng.uniform(0, 2000)), float(rng.uniform(200, 800)), h * 0.41, h]
            score = rng.beta(6, 1.5) if copy else rng.beta(1.2, 6)  # true boxes mostly ranked first
            res.append({"image_id": im["id"], "category_id": 1, "bbox": [round(float(v), 2) for v in box],
                        "score": round(float(score), 5)})
    return res


def make_crowdhuman(out: Path, n_images: int = 4370, gt_per_image: float = 22.8, dets_per_image: int = 114,
                    seed: int = 0) -> tuple[Path, Path, Path]:
    """ODGT ground truth and predictions, and the records CrowdDet's tools/test.py writes for compute_JI."""
    rng = np.random.default_rng(seed)
    classes = ("background", "person")
    gt_lines, dt_lines, combined = [], [], []
    for i in range(n_images):
        W, H = int(rng.integers(800, 1600)), int(rng.integers(600, 1200))
        cx, cy = float(rng.uniform(0.2, 0.8)) * W, float(rng.uniform(0.3, 0.7)) * H
        gtboxes, fboxes = [], []
        for _ in range(int(rng.poisson(gt_per_image))):
            w = int(rng.integers(10, 200))
            h = int(w * rng.uniform(2.0, 3.0))
            x, y = int(cx + rng.normal(0, W / 5) - w / 2), int(cy + rng.normal(0, H / 6) - h / 2)
            tag = "mask" if rng.random() < 0.04 else "person"
            rb = {"tag": tag, "fbox": [x, y, w, h], "vbox": [x, y, w, h], "hbox": [x + w // 3, y, w // 3, w // 3],
                  "extra": {"ignore": int(rng.random() < 0.02)}}
            gtboxes.append(rb)
            fboxes.append((x, y, w, h))
        dtboxes = []
        for _ in range(int(rng.poisson(dets_per_image))):
            copy = fboxes and rng.random() < 0.7
            if copy:
                x, y, w, h = fboxes[int(rng.integers(len(fboxes)))]
                j = rng.normal(0, 0.1, 4) * [w, h, w, h]
                box = [x + j[0], y + j[1], max(w + j[2], 1.0), max(h + j[3], 1.0)]
            else:
                w = float(rng.uniform(10, 200))
                box = [float(rng.uniform(-20, W)), float(rng.uniform(-20, H)), w, w * 2.5]
            score = rng.beta(5, 1.5) if copy else rng.beta(1.2, 5)
            dtboxes.append({"box": [round(float(v), 1) for v in box], "score": round(float(score), 5), "tag": 1})
        ID = f"{i:06d},{int(rng.integers(1e6)):x}"
        gt_lines.append({"ID": ID, "width": W, "height": H, "gtboxes": gtboxes})
        dt_lines.append({"ID": ID, "height": H, "width": W, "dtboxes": dtboxes})
        tags = [classes.index(b["tag"]) if b["tag"] in classes else -1 for b in gtboxes]
        tags = [-1 if b["extra"]["ignore"] else t for b, t in zip(gtboxes, tags)]
        combined.append({"ID": ID, "height": H, "width": W, "dtboxes": dtboxes,
                         "gtboxes": [{"box": b["fbox"], "tag": t} for b, t in zip(gtboxes, tags)]})
    paths = out / "crowdhuman_val.odgt", out / "crowdhuman_dets.odgt", out / "crowdhuman_eval.json"
    for path, lines in zip(paths, (gt_lines, dt_lines, combined)):
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return paths[1], paths[0], paths[2]


def _run(code: str, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env=env).stdout
    return eval(out.strip().splitlines()[-1])  # noqa: S307 - our own child's dict


def _best(code: str, runs: int, warm: bool) -> dict:
    if warm:
        _run(code)
    return min((_run(code) for _ in range(runs)), key=lambda r: r["wall"])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", choices=("citypersons", "crowdhuman", "both"), default="both")
    ap.add_argument("--data", type=Path, default=HERE / "data" / "pedestrian")
    ap.add_argument("--gt", help="CityPersons: score this ground truth (the real val_gt.json) instead")
    ap.add_argument("--images", type=int, help="fewer images (a quick look; the presets are 500 and 4,370)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ref-runs", type=int, default=1)
    ap.add_argument("--ji-images", type=int, help="CrowdHuman: run the reference's JI on the first N images only "
                    "and scale its time to all (JI is per image; its 10 workers' blossom matching is most of the "
                    "reference's time); its JI is then not compared")
    ap.add_argument("--reuse", action="store_true", help="keep the data files already in --data")
    args = ap.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    tests = str(ROOT / "tests")
    rows = []
    if args.dataset in ("citypersons", "both"):
        dt, gt = args.data / "citypersons_dets.json", args.data / "citypersons_val_gt.json"
        if not (args.reuse and dt.exists()):
            dt, gt = make_citypersons(args.data, n_images=args.images or 500)
        gt = Path(args.gt) if args.gt else gt
        if args.gt:
            dt = args.data / "citypersons_dets_real_gt.json"
            dt.write_text(json.dumps(citypersons_dets(json.loads(gt.read_text()))))
        mine = _best(DETEVAL.format(root=str(ROOT), preds=str(dt), gt=str(gt), protocol="citypersons"), args.runs, True)
        ref = None
        if os.environ.get("DETEVAL_CITYPERSONS_REF"):
            ref = _best(CITYPERSONS_REF.format(tests=tests, preds=str(dt), gt=str(gt)), args.ref_runs, False)
        rows.append(("citypersons", mine, ref))
        _print(rows[-1:], header=True)
    if args.dataset in ("crowdhuman", "both"):
        names = ("crowdhuman_dets.odgt", "crowdhuman_val.odgt", "crowdhuman_eval.json")
        dt, gt, combined = (args.data / n for n in names)
        if not (args.reuse and combined.exists()):
            dt, gt, combined = make_crowdhuman(args.data, n_images=args.images or 4370)
        mine = _best(DETEVAL.format(root=str(ROOT), preds=str(dt), gt=str(gt), protocol="crowdhuman"), args.runs, True)
        scale = 1.0
        if args.ji_images:
            lines = combined.read_text().splitlines(keepends=True)
            scale = len(lines) / args.ji_images
            combined = args.data / "crowdhuman_eval_part.json"
            combined.write_text("".join(lines[: args.ji_images]))
        code = CROWDHUMAN_REF.format(tests=tests, preds=str(dt), gt=str(gt), combined=str(combined), ji_scale=scale)
        ref = _best(code, args.ref_runs, False)
        if args.ji_images:
            del ref["stats"]["JI"]
            ref["ji_note"] = f"JI on {args.ji_images} images, time x{scale:.2f}"
        rows.append(("crowdhuman", mine, ref))
        _print(rows[-1:], header=not rows[:-1])


def _print(rows: list, header: bool) -> None:
    if header:
        print("| protocol | deteval | reference | ratio | deteval RSS | reference RSS | equal |")
        print("|---|---|---|---|---|---|---|")
    for name, mine, ref in rows:
        if ref is None:
            print(f"| {name} | {mine['wall']:.2f} s | not run (set DETEVAL_CITYPERSONS_REF) | | "
                  f"{mine['rss_mb']:.0f} MB | | |")
            continue
        same = {k: mine["stats"][k] == v for k, v in ref["stats"].items()}
        parts = f" (AP+MR {ref['apmr_wall']:.1f} s, JI {ref['ji_wall']:.1f} s)" if "ji_wall" in ref else ""
        parts += f" [{ref['ji_note']}]" if "ji_note" in ref else ""
        print(f"| {name} | {mine['wall']:.2f} s | {ref['wall']:.2f} s{parts} | {ref['wall'] / mine['wall']:.1f}x | "
              f"{mine['rss_mb']:.0f} MB | {ref['rss_mb']:.0f} MB | {same} |")
        print(f"<!-- {name}: deteval {mine['stats']} reference {ref['stats']} -->", flush=True)


if __name__ == "__main__":
    main()

"""Writes deteval/_startup/kernel_signatures.py: which kernels, with which argument types, each group compiles.

    python scripts/record_kernel_signatures.py [--check]

Runs each group's flow on the bundled sample (masks and keypoints: the tests' copies of cocoapi's fake
results) in this process, with an empty numba cache (a temporary NUMBA_CACHE_DIR), the compile helpers off
and compiled modules (deteval/_aot) ignored, and records every deteval kernel compiled at the top level (not
as another kernel's callee), in the order they start. The size thresholds of deteval.tuning are lowered for
the flows of large inputs, so the sample takes their paths (the argument types are those of any size).
``--check`` compares with the file instead of writing it.
Rerun after changing a kernel's arguments; a stale entry only costs a helper's time (the run
compiles what it misses) and leaves that kernel out of the package's build-time kernels, and
tests/unit/runtime/test_compile_ahead.py checks the sample's group.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "deteval" / "_startup" / "kernel_signatures.py"
SAMPLE = REPO / "deteval" / "sample_data"
GT = SAMPLE / "instances_val2014_100.json"
DT = SAMPLE / "instances_val2014_fakebbox100_results.json"
# the mask and keypoint flows run on the tests' copies of cocoapi's fake results (the same 100 images)
SEGM_DT = REPO / "tests" / "data" / "coco_fake100" / "instances_val2014_fakesegm100_results.json"
KP_DIR = REPO / "tests" / "data" / "keypoints1"


def record() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    os.environ["DETEVAL_COMPILE_HELPERS"] = "0"
    os.environ["DETEVAL_AOT"] = "0"  # compiled modules built in the tree would serve the calls: none recorded
    sys.path.insert(0, str(REPO))
    from numba.core import event

    import deteval
    from deteval.cli import main as cli_main
    from deteval.io.coco import load_coco_pair
    from deteval.tuning import TUNING

    depth = threading.local()
    seen: list[tuple[str, str]] = []

    class TopLevel(event.Listener):
        def on_start(self, ev):
            d = getattr(depth, "n", 0)
            depth.n = d + 1
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            if d == 0 and func is not None and func.__module__.startswith("deteval."):
                entry = (f"{func.__module__}.{func.__qualname__}", tuple(repr(t) for t in ev.data["args"]))
                if entry not in seen:
                    seen.append(entry)

        def on_end(self, ev):
            depth.n -= 1

    event.register("numba:compile", TopLevel())
    groups: dict[str, list[tuple[str, tuple[str, ...]]]] = {}

    def flow(name, fn):
        before = len(seen)
        fn()
        if len(seen) > before:  # a flow whose kernels earlier flows compiled adds no group
            groups[name] = seen[before:]

    # the order here is the helpers' order of groups (deteval._startup.compile_ahead.ORDER)
    big = dict(fast_path_bytes=0, map_bytes=0)
    kp = (str(KP_DIR / "dt_dataset.json"), str(KP_DIR / "gt_dataset.json"))
    with tuned(TUNING, **big):
        # keypoint files go through the box scanners' kernels (wider rows, the same types)
        flow("coco-bbox-scan", lambda: [load_coco_pair(str(DT), str(GT)), load_coco_pair(*kp, iou_type="keypoints")])
        # mask evaluation's scans: the ground truth's polygons (or its compressed RLE), and the results' RLE
        with tempfile.TemporaryDirectory() as tmp:
            rle_gt = _with_rle_masks(GT, Path(tmp) / "gt_rle.json")
            flow(
                "coco-segm-gt-scan",
                lambda: [
                    load_coco_pair(str(SEGM_DT), str(GT), iou_type="segm"),
                    load_coco_pair(str(SEGM_DT), str(rle_gt), iou_type="segm"),
                ],
            )
    flow("coco-bbox", lambda: deteval.evaluate(str(DT), str(GT)))
    # masks as the general loader reads them (runs), and as the scanner keeps them (text)
    scanned_segm = tuned(TUNING, **big).call(load_coco_pair, str(SEGM_DT), str(GT), iou_type="segm")
    flow(
        "coco-segm",
        lambda: [
            deteval.evaluate(str(SEGM_DT), str(GT), iou_type="segm"),
            deteval.evaluate(*scanned_segm, iou_type="segm"),
            _evaluator_segm(deteval),
        ],
    )
    # boundary IoU: the boundaries' kernels and their overlaps', on results read either way
    flow(
        "coco-boundary",
        lambda: [
            deteval.evaluate(str(SEGM_DT), str(GT), iou_type="boundary"),
            deteval.evaluate(*scanned_segm, iou_type="boundary"),
        ],
    )
    flow("coco-keypoints", lambda: deteval.evaluate(*kp, iou_type="keypoints"))
    with tuned(TUNING, kernel_sort_rows=0, radix_rows=0, csr_rows_per_part=1):
        flow("sort-large", lambda: deteval.evaluate(str(DT), str(GT)))
    # the README's first command, past the evaluation: the per-class table's kernels
    flow("coco-report", lambda: _quietly(cli_main, ["--protocol", "coco", "--per-class", "--sample"]))
    flow("voc", lambda: [deteval.evaluate(str(DT), str(GT), protocol=p) for p in ("voc07", "voc10")])
    # what README shows beyond the evaluation, each a group a first run would otherwise compile
    with tempfile.TemporaryDirectory() as tmp:
        flow("analyses", lambda: _analyses(cli_main, Path(tmp)))
    flow("replay", lambda: _replays(cli_main, deteval))
    flow("protocols", lambda: _protocols(cli_main))
    flow("evaluator", lambda: _evaluators(deteval))
    return groups


DATA = REPO / "tests" / "data"


def _cli(cli_main, *argv: str) -> None:
    code = _quietly(cli_main, list(argv))
    if code != 0:
        raise RuntimeError(f"deteval {' '.join(argv)} exited {code}")


def _analyses(cli_main, tmp: Path) -> None:
    """TIDE, confusion, curves and plots' data, calibration, LRP, --score-thr, --report, --matches: boxes, masks."""
    sample = ["--per-class", "--json", str(tmp / "a.json"), "--curves", str(tmp / "c.json"), "--score-thr", "0.5"]
    sample += ["--matches", str(tmp / "m.csv"), "--per-image", str(tmp / "p.json")]
    report = ["--report", str(tmp / "r")]
    _cli(cli_main, str(DT), str(GT), *sample, *report, "--tide", "--confusion", "--calibration", "--lrp")
    _cli(cli_main, str(SEGM_DT), str(GT), "--iou-type", "segm", "--tide", "--lrp", "--calibration")
    try:
        import matplotlib  # noqa: F401 - plots are an extra
    except ImportError:
        return
    _cli(cli_main, str(DT), str(GT), "--plot", str(tmp), "--confusion", "--calibration")


def _replays(cli_main, deteval) -> None:
    """Bootstrap, slices and compare of the COCO family and VOC."""
    kp = (str(KP_DIR / "dt_dataset.json"), str(KP_DIR / "gt_dataset.json"))
    _cli(cli_main, str(DT), str(GT), "--bootstrap", "3", "--slice-by", "license")
    _cli(cli_main, str(SEGM_DT), str(GT), "--iou-type", "segm", "--bootstrap", "3")
    _cli(cli_main, *kp, "--iou-type", "keypoints", "--bootstrap", "3")
    _cli(cli_main, "compare", str(DT), str(DT), str(GT), "--bootstrap", "3")
    for protocol in ("voc07", "voc10"):
        _cli(cli_main, "--protocol", protocol, str(DT), str(GT), "--bootstrap", "3", "--slice-by", "license")


def _protocols(cli_main) -> None:
    """lvis, crowdpose, dota, openimages, oriented boxes, yolo, widerface, kitti, citypersons and crowdhuman,
    each with its bootstrap."""
    import gzip

    with tempfile.TemporaryDirectory() as tmp:
        lvis = {}
        for name in ("lvis_val_100", "dets_bbox", "dets_segm"):  # the fixtures are gzipped
            lvis[name] = Path(tmp) / f"{name}.json"
            lvis[name].write_bytes(gzip.open(DATA / "lvis100" / f"{name}.json.gz").read())
        gt = str(lvis["lvis_val_100"])
        _cli(cli_main, "--protocol", "lvis", "--per-class", str(lvis["dets_bbox"]), gt, "--bootstrap", "3")
        _cli(cli_main, "--protocol", "lvis", "--iou-type", "segm", str(lvis["dets_segm"]), gt, "--bootstrap", "3")
        _cli(cli_main, "--protocol", "lvis", "--fixed-ap", str(lvis["dets_bbox"]), gt)
    crowd = DATA / "crowdpose"
    _cli(cli_main, "--protocol", "crowdpose", str(crowd / "example_crowdpose_preds.json"),
         str(crowd / "example_crowdpose_val.json"), "--bootstrap", "3")  # fmt: skip
    _cli(cli_main, "--protocol", "dota", str(DATA / "dota" / "dets"), str(DATA / "dota" / "gt"), "--bootstrap", "3")
    oi = DATA / "openimages"
    for kind in ("challenge", "expansion"):
        extra = ["--hierarchy", str(oi / "expansion_hierarchy.json")] if kind == "expansion" else ["--no-expand"]
        _cli(cli_main, "--protocol", "openimages", str(oi / f"{kind}_dets.csv"), str(oi / f"{kind}_boxes.csv"),
             "--labels", str(oi / f"{kind}_labels.csv"), *extra, "--bootstrap", "3")  # fmt: skip
    obb = DATA / "obb"
    _cli(cli_main, "--iou-type", "obb", str(obb / "dets.json"), str(obb / "gt.json"), "--bootstrap", "3")
    yolo = DATA / "yolo_example"
    sizes = ["--image-sizes", str(yolo / "sizes.json")]
    _cli(cli_main, "--protocol", "yolo", *sizes, str(yolo / "preds"), str(yolo / "labels"), "--bootstrap", "3")
    _cli(cli_main, "--protocol", "yolo", "--compare-coco", *sizes, str(yolo / "preds"), str(yolo / "labels"))
    wider = DATA / "widerface_example"
    _cli(cli_main, "--protocol", "widerface", str(wider / "pred"), str(wider / "gt"), "--bootstrap", "3")
    kitti = DATA / "kitti_example"
    _cli(cli_main, "--protocol", "kitti", str(kitti / "results"), str(kitti / "label_2"), "--bootstrap", "3")
    ped = DATA / "pedestrian"
    with tempfile.TemporaryDirectory() as tmp:
        _cli(cli_main, "--protocol", "citypersons", str(ped / "citypersons_results.json"),
             str(ped / "citypersons_gt.json"), "--bootstrap", "3", "--curves", str(Path(tmp) / "c.json"))  # fmt: skip
        _cli(cli_main, "--protocol", "crowdhuman", str(ped / "crowdhuman_preds.odgt"),
             str(ped / "crowdhuman_gt.odgt"), "--bootstrap", "3", "--curves", str(Path(tmp) / "h.json"))  # fmt: skip


def _evaluators(deteval) -> None:
    """The Evaluator's batch paths: boxes (every box format) of each streamed protocol, keypoints (crowdpose's),
    oriented boxes (masks: the coco-segm group)."""
    import numpy as np

    boxes = np.array([[10.0, 10.0, 50.0, 60.0], [20.0, 15.0, 70.0, 80.0]])
    pred = {"boxes": boxes, "scores": np.array([0.9, 0.4]), "labels": np.array([1, 2])}
    target = {"boxes": boxes[:1], "labels": np.array([1])}
    for protocol in ("coco", "voc07", "voc10", "lvis", "yolo"):
        for box_format in ("xyxy", "xywh", "cxcywh"):
            lvis = {"frequencies": {1: "f", 2: "c"}} if protocol == "lvis" else {}
            ev = deteval.Evaluator(protocol=protocol, box_format=box_format, categories=[1, 2], **lvis)
            ev.update([pred], [target])
            ev.compute()
    quads = np.array([[10.0, 10, 50, 10, 50, 60, 10, 60], [20, 15, 70, 15, 70, 80, 20, 80]])
    ev = deteval.Evaluator(protocol="dota", categories=[1, 2])
    ev.update([{**pred, "boxes": quads}], [{**target, "boxes": quads[:1]}])
    ev.compute()
    obb = np.array([[30.0, 35, 40, 50, 0.1], [45, 47, 50, 65, 0.3]])
    ev = deteval.Evaluator(iou_type="obb", categories=[1, 2])
    ev.update([{**pred, "boxes": obb}], [{**target, "boxes": obb[:1]}])
    ev.compute()
    kpts = np.tile(np.array([[[12.0, 14, 2]], [[22, 20, 2]]]), (1, 14, 1))  # crowdpose's 14 keypoints
    ev = deteval.Evaluator(protocol="crowdpose", categories=[1, 2])
    ev.update([{**pred, "keypoints": kpts}], [{**target, "keypoints": kpts[:1], "crowd_index": 0.3}])
    ev.compute()
    ev = deteval.Evaluator(protocol="citypersons")
    ev.update([pred], [{**target, "height": np.array([60.0]), "vis_ratio": np.array([0.9])}])
    ev.compute()
    ev = deteval.Evaluator(protocol="crowdhuman")
    ev.update([pred], [{**target, "tag": np.array([1.0]), "height": 100, "width": 100}])
    ev.compute()


def _evaluator_segm(deteval) -> None:
    """The batch API with binary masks (their encoding's kernels)."""
    import numpy as np

    masks = np.zeros((2, 6, 5), bool)
    masks[0, 1:4, 1:3] = masks[1, 2:5, 2:5] = True
    ev = deteval.Evaluator(iou_type="segm")
    ev.update([{"masks": masks, "scores": np.array([0.9, 0.5]), "labels": np.array([1, 1])}],
              [{"masks": masks[:1], "labels": np.array([1])}])  # fmt: skip
    ev.compute()


def _with_rle_masks(gt: Path, out: Path) -> Path:
    """``gt`` with every polygon segmentation written as compressed RLE (pycocotools' strings), at ``out``."""
    import json

    from pycocotools import mask as mask_utils

    data = json.loads(gt.read_text(encoding="utf-8"))
    size = {im["id"]: (im["height"], im["width"]) for im in data["images"]}
    for ann in data["annotations"]:
        if isinstance(ann.get("segmentation"), list):
            h, w = size[ann["image_id"]]
            rle = mask_utils.merge(mask_utils.frPyObjects(ann["segmentation"], h, w))
            ann["segmentation"] = {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def _quietly(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return fn(*args)


class tuned:  # noqa: N801 - a context manager read like a function
    """TUNING's fields set in this block (a frozen dataclass: set through object.__setattr__)."""

    def __init__(self, tuning, **values):
        self.tuning, self.values = tuning, values

    def __enter__(self):
        self.before = {k: getattr(self.tuning, k) for k in self.values}
        for k, v in self.values.items():
            object.__setattr__(self.tuning, k, v)

    def __exit__(self, *exc):
        for k, v in self.before.items():
            object.__setattr__(self.tuning, k, v)

    def call(self, fn, *args, **kwargs):
        with self:
            return fn(*args, **kwargs)


def render(groups: dict[str, list[tuple[str, tuple[str, ...]]]]) -> str:
    lines = [
        '"""Kernel groups: (kernel, argument types) in the order a run compiles them (each type as numba writes its',
        "repr). :mod:`deteval._startup.compile_ahead` compiles a run's groups in helper processes on a cold cache;",
        "the build compiles them all into the package (:mod:`deteval._runtime.shipped`).",
        "",
        "Generated by scripts/record_kernel_signatures.py from runs on the bundled sample (and the tests' fake",
        "mask and keypoint results); do not edit.",
        '"""',
        "",
        "# fmt: off",
        "GROUPS: dict[str, list[tuple[str, tuple[str, ...]]]] = {",
    ]
    for name, entries in groups.items():
        lines.append(f"    {name!r}: [")
        for kernel, types in entries:
            lines += [f"        ({kernel!r}, ("] + _packed([repr(t) for t in types]) + ["        )),"]
        lines.append("    ],")
    lines += ["}", "# fmt: on", "# the helpers take groups in this order", "ORDER: list[str] = list(GROUPS)", ""]
    return "\n".join(lines)


def _packed(items: list[str], indent: str = " " * 12, width: int = 120) -> list[str]:
    """``items``, each followed by a comma, as few to a line as fit in ``width`` (one item may exceed it)."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 1 + len(item) + 1 <= width:
            lines[-1] += f" {item},"
        else:
            lines.append(f"{indent}{item},")
    return [_noqa(line) for line in lines]


def _noqa(line: str) -> str:
    return line + "  # noqa: E501" if len(line) > 120 else line


def main() -> int:
    check = "--check" in sys.argv[1:]
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache
        text = render(record())
    if check:
        same = OUT.exists() and OUT.read_text() == text
        print("up to date" if same else f"{OUT} differs from a new recording")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

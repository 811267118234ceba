"""Drive COCOeval as detectron2's ``COCOEvaluator`` does (``_evaluate_predictions_on_coco`` and
``_derive_coco_results``, detectron2/evaluation/coco_evaluation.py), written from reading it.

    python detectron2_style.py [--shim] GT RESULTS IOU_TYPE [KPT_SIGMAS...]

With ``--shim`` it first calls ``deteval.init_as_pycocotools()``, as a user's script would, and
then imports pycocotools, unchanged. Prints pycocotools' output, then one JSON line of the metrics.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import sys

args = sys.argv[1:]
if args and args[0] == "--shim":
    import deteval

    deteval.init_as_pycocotools()
    args = args[1:]

import numpy as np  # noqa: E402
from pycocotools.coco import COCO  # noqa: E402
from pycocotools.cocoeval import COCOeval  # noqa: E402


class MaxDetsCOCOeval(COCOeval):
    """detectron2's ``COCOevalMaxDets``: a summary that reads the largest max dets for AP too."""

    def summarize(self):
        def one(ap=1, iou=None, area="all", max_dets=100):
            p = self.params
            s = self.eval["precision"] if ap == 1 else self.eval["recall"]
            if iou is not None:
                s = s[np.where(iou == p.iouThrs)[0]]
            aind = [i for i, a in enumerate(p.areaRngLbl) if a == area]
            mind = [i for i, m in enumerate(p.maxDets) if m == max_dets]
            s = s[:, :, :, aind, mind] if ap == 1 else s[:, :, aind, mind]
            value = -1 if len(s[s > -1]) == 0 else np.mean(s[s > -1])
            print(f"{'AP' if ap else 'AR'} iou={iou} area={area} maxDets={max_dets} = {value:0.3f}")
            return value

        if not self.eval:
            raise Exception("Please run accumulate() first")
        md = self.params.maxDets
        stats = [one(1, max_dets=md[2]), one(1, 0.5, max_dets=md[2]), one(1, 0.75, max_dets=md[2])]
        stats += [one(1, area=a, max_dets=md[2]) for a in ("small", "medium", "large")]
        stats += [one(0, max_dets=m) for m in md[:3]]
        stats += [one(0, area=a, max_dets=md[2]) for a in ("small", "medium", "large")]
        self.stats = np.array(stats)


def evaluate_on_coco(coco_gt, results, iou_type, kpt_oks_sigmas=None, img_ids=None, max_dets_per_image=None):
    assert len(results) > 0
    if iou_type == "segm":
        results = copy.deepcopy(results)
        for r in results:  # mask AP from the mask's area, not the box's
            r.pop("bbox", None)
    coco_dt = coco_gt.loadRes(results)
    max_dets = [1, 10, 100] if max_dets_per_image is None else max_dets_per_image
    ev = COCOeval(coco_gt, coco_dt, iou_type) if max_dets[2] == 100 else MaxDetsCOCOeval(coco_gt, coco_dt, iou_type)
    if iou_type != "keypoints":
        ev.params.maxDets = max_dets
    if img_ids is not None:
        ev.params.imgIds = img_ids
    if iou_type == "keypoints":
        if kpt_oks_sigmas:
            ev.params.kpt_oks_sigmas = np.array(kpt_oks_sigmas)
        n_dt = len(results[0]["keypoints"]) // 3
        n_gt = len(next(iter(coco_gt.anns.values()))["keypoints"]) // 3
        assert len(ev.params.kpt_oks_sigmas) == n_dt == n_gt
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    return ev


def derive_results(ev, iou_type, class_names):
    names = {
        "bbox": ["AP", "AP50", "AP75", "APs", "APm", "APl"],
        "segm": ["AP", "AP50", "AP75", "APs", "APm", "APl"],
        "keypoints": ["AP", "AP50", "AP75", "APm", "APl"],
    }[iou_type]
    out = {m: float(ev.stats[i] * 100 if ev.stats[i] >= 0 else "nan") for i, m in enumerate(names)}
    precisions = ev.eval["precision"]
    assert len(class_names) == precisions.shape[2]
    for k, name in enumerate(class_names):
        p = precisions[:, :, k, 0, -1]
        p = p[p > -1]
        out[f"AP-{name}"] = float(np.mean(p) * 100 if p.size else float("nan"))
    return out


def main():
    gt_path, results_path, iou_type = args[:3]
    sigmas = [float(s) for s in args[3:]] or None
    with contextlib.redirect_stdout(io.StringIO()):  # COCOEvaluator loads the ground truth silently
        coco_gt = COCO(gt_path)
    with open(results_path) as f:
        results = json.load(f)
    results = results["annotations"] if isinstance(results, dict) else results
    class_names = [c["name"] for c in coco_gt.loadCats(coco_gt.getCatIds())]
    report = {}
    runs = [({}, "default"), ({"max_dets_per_image": [1, 10, 300]}, "maxdets300")]
    runs.append(({"img_ids": sorted(coco_gt.getImgIds())[::2]}, "half_images"))
    for kwargs, tag in runs:
        if iou_type == "keypoints" and "max_dets_per_image" in kwargs:
            continue
        ev = evaluate_on_coco(coco_gt, copy.deepcopy(results), iou_type, kpt_oks_sigmas=sigmas, **kwargs)
        report[tag] = derive_results(ev, iou_type, class_names)
        report[tag + "_precision_sum"] = float(ev.eval["precision"].sum())
    print(json.dumps(report))
    print(f"COCOeval from {COCOeval.__module__}", file=sys.stderr)  # which one ran


main()

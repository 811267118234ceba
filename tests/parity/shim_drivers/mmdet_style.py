"""Drive COCOeval as mmdetection 3's ``CocoMetric.compute_metrics`` does (mmdet/evaluation/metrics/
coco_metric.py, with its ``COCO`` wrapper from mmdet/datasets/api_wrappers), written from reading it.

    python mmdet_style.py [--shim] GT RESULTS METRIC [METRIC...]      (METRIC: bbox, segm, proposal)

With ``--shim`` it first calls ``deteval.init_as_pycocotools()``. Prints pycocotools' output, then
one JSON line of the metrics (mmdet's names, rounded as mmdet rounds them, plus the classwise table).
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
import pycocotools  # noqa: E402
from pycocotools.coco import COCO as _COCO  # noqa: E402
from pycocotools.cocoeval import COCOeval  # noqa: E402


class COCO(_COCO):
    """mmdet's wrapper: pycocotools' COCO with snake_case aliases."""

    def __init__(self, annotation_file=None):
        if getattr(pycocotools, "__version__", "0") >= "12.0.2":
            raise RuntimeError("mmpycocotools is not supported")
        super().__init__(annotation_file=annotation_file)
        self.img_ann_map = self.imgToAnns
        self.cat_img_map = self.catToImgs

    def get_ann_ids(self, img_ids=[], cat_ids=[], area_rng=[], iscrowd=None):  # noqa: B006
        return self.getAnnIds(img_ids, cat_ids, area_rng, iscrowd)

    def get_cat_ids(self, cat_names=[], sup_names=[], cat_ids=[]):  # noqa: B006
        return self.getCatIds(cat_names, sup_names, cat_ids)

    def get_img_ids(self, img_ids=[], cat_ids=[]):  # noqa: B006
        return self.getImgIds(img_ids, cat_ids)

    def load_cats(self, ids):
        return self.loadCats(ids)


METRIC_INDEX = {"mAP": 0, "mAP_50": 1, "mAP_75": 2, "mAP_s": 3, "mAP_m": 4, "mAP_l": 5, "AR@100": 6, "AR@300": 7,
                "AR@1000": 8, "AR_s@1000": 9, "AR_m@1000": 10, "AR_l@1000": 11}  # fmt: skip


def compute_metrics(coco_api, predictions_of, metrics, classes, proposal_nums=(100, 300, 1000), iou_thrs=None):
    cat_ids = coco_api.get_cat_ids(cat_names=classes)
    img_ids = coco_api.get_img_ids()
    if iou_thrs is None:
        iou_thrs = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True)
    out = {}
    for metric in metrics:
        iou_type = "bbox" if metric == "proposal" else metric
        predictions = predictions_of(metric)
        if iou_type == "segm":
            for x in predictions:
                x.pop("bbox", None)  # mmdet writes a box in every mask result; these files may not
        coco_dt = coco_api.loadRes(predictions)
        ev = COCOeval(coco_api, coco_dt, iou_type)
        ev.params.catIds = cat_ids
        ev.params.imgIds = img_ids
        ev.params.maxDets = list(proposal_nums)
        ev.params.iouThrs = iou_thrs
        if metric == "proposal":
            ev.params.useCats = 0
            ev.evaluate()
            ev.accumulate()
            with contextlib.redirect_stdout(io.StringIO()):
                ev.summarize()
            for item in ["AR@100", "AR@300", "AR@1000", "AR_s@1000", "AR_m@1000", "AR_l@1000"]:
                out[item] = float(f"{ev.stats[METRIC_INDEX[item]]:.3f}")
            continue
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        precisions = ev.eval["precision"]  # (iou, recall, class, area, max dets)
        assert len(cat_ids) == precisions.shape[2]
        table = []
        for k, cat_id in enumerate(cat_ids):
            row = [coco_api.load_cats(cat_id)[0]["name"]]
            for sel in (precisions[:, :, k, 0, -1], precisions[0, :, k, 0, -1], precisions[5, :, k, 0, -1]):
                p = sel[sel > -1]
                row.append(f"{round(float(np.mean(p)) if p.size else float('nan'), 3)}")
            for area in (1, 2, 3):
                p = precisions[:, :, k, area, -1]
                p = p[p > -1]
                row.append(f"{round(float(np.mean(p)) if p.size else float('nan'), 3)}")
            table.append(row)
        out[f"{metric}_classwise"] = table
        for item in ["mAP", "mAP_50", "mAP_75", "mAP_s", "mAP_m", "mAP_l"]:
            out[f"{metric}_{item}"] = float(f"{round(ev.stats[METRIC_INDEX[item]], 3)}")
        out[f"{metric}_stats"] = [float(s) for s in ev.stats]
    return out


def main():
    gt_path, results_path, *metrics = args
    with open(results_path) as f:
        results = json.load(f)
    coco_api = COCO(gt_path)
    classes = [c["name"] for c in coco_api.dataset["categories"]][::-1]  # a dataset's own class order
    report = compute_metrics(coco_api, lambda m: copy.deepcopy(results), metrics, classes)
    report.update(compute_metrics(coco_api, lambda m: copy.deepcopy(results), [metrics[0]], classes[:5],
                                  proposal_nums=(1, 10, 100), iou_thrs=np.linspace(0.3, 0.8, 6)))  # fmt: skip
    print(json.dumps({k: v for k, v in sorted(report.items())}))
    print(f"COCOeval from {COCOeval.__module__}", file=sys.stderr)  # which one ran


main()

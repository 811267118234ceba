"""The LVIS tools of ``benchmarks/bench.py --preset lvis`` (or ``small-lvis``): same machinery, other tools.

Each tool's 13 stats are reported in ``LVISEval.results`` order and checked (==) against lvis-api's when it
ran, else deteval's. lvis-api holds every result as a Python dict: at LVIS v1 val scale (5.9M results) it
needs tens of GB and tens of minutes, so give it ``--timeout`` and a machine with the memory (it runs once,
``--tool-runs`` aside). faster-coco-eval and ultrafast are run with ``lvis_style=True`` and
``maxDets=[300]``: that cuts per image *and category*, not per image; the presets have exactly 300 results
per image, where the two cuts agree.
"""

from __future__ import annotations

KEYS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf", "AR@300", "ARs@300", "ARm@300", "ARl@300")
_FASTER_KEYS = ("AP_all", "AP_50", "AP_75", "AP_small", "AP_medium", "AP_large", "APr", "APc", "APf",
                "AR_all", "AR_small", "AR_medium", "AR_large")  # fmt: skip

TOOLS = {
    "deteval": {
        "module": "deteval",
        "dist": "deteval",
        "stages": {
            "import": "import deteval",
            "load": "dt, gt = deteval.load(DT, GT, protocol='lvis', iou_type=IOU)",
            "eval": "res = deteval.evaluate(dt, gt, protocol='lvis', iou_type=IOU)",
        },
        "stats": f"[float(res.stats[k]) for k in {KEYS!r}]",
        "cli": ["-m", "deteval", "--protocol", "lvis", "--iou-type", "{IOU}", "{DT}", "{GT}"],
        "protocol": "lvis",  # what bench.py --profile's stage clock wraps
        "unsupported": {"keypoints": "LVIS has no keypoints"},
    },
    "lvis-api": {
        "module": "lvis",
        "dist": "lvis",
        "stages": {
            # np.float for lvis 0.5.3 under numpy 2; cv2 (drawing only) stood in for where OpenCV does not load
            "import": "import sys, types, numpy as np\n"
                      "np.float = float\n"
                      "try:\n    import cv2\nexcept ImportError:\n    sys.modules['cv2'] = types.ModuleType('cv2')\n"
                      "from lvis import LVIS, LVISResults, LVISEval",
            "load": "gt = LVIS(GT)\ndt = LVISResults(gt, DT)",
            "evaluate": "E = LVISEval(gt, dt, IOU)\nE.evaluate()",
            "accumulate": "E.accumulate()",
            "summarize": "E.summarize()",
        },
        "stats": f"[float(E.results[k]) for k in {KEYS!r}]",
        "unsupported": {"keypoints": "LVIS has no keypoints"},
    },
    "hotcoco": {
        "module": "hotcoco",
        "dist": "hotcoco",
        "stages": {
            "import": "from hotcoco import LVIS, LVISResults, LVISeval",
            "load": "gt = LVIS(GT)\ndt = LVISResults(gt, DT)",
            "evaluate": "E = LVISeval(gt, dt, IOU)\nE.evaluate()",
            "accumulate": "E.accumulate()",
            "summarize": "E.summarize()",
        },
        "stats": f"[float(E.get_results()[k]) for k in {KEYS!r}]",
        "unsupported": {"keypoints": "LVIS has no keypoints"},
    },
    "faster-coco-eval": {
        "module": "faster_coco_eval",
        "dist": "faster-coco-eval",
        "stages": {
            "import": "from faster_coco_eval import COCO, COCOeval_faster",
            "load": "gt = COCO(GT)\ndt = gt.loadRes(DT)",
            "evaluate": "E = COCOeval_faster(gt, dt, IOU, lvis_style=True, print_function=lambda *a: None)\n"
                        "E.params.maxDets = [300]\nE.evaluate()",
            "accumulate": "E.accumulate()",
            "summarize": "E.summarize()",
        },
        "stats": f"[float(E.stats_as_dict[k]) for k in {_FASTER_KEYS!r}]",
        "unsupported": {"keypoints": "LVIS has no keypoints"},
    },
    "ultrafast": {
        "module": "ultrafast_pycocotools",
        "dist": "ultrafast-pycocotools",
        "stages": {
            "import": "from ultrafast_pycocotools import COCO, COCOeval",
            "load": "gt = COCO(GT)\ndt = gt.loadRes(DT)",
            "evaluate": "E = COCOeval(gt, dt, IOU, lvis_style=True)\nE.params.maxDets = [300]\nE.evaluate()",
            "accumulate": "E.accumulate()",
            "summarize": "E.summarize()",
        },
        "stats": "[float(x) for x in E.stats]",
        "unsupported": {"keypoints": "LVIS has no keypoints"},
    },
}
REFERENCES = ("lvis-api", "deteval")
TOOL_RUNS = {"lvis-api": 1}  # the slow reference: once, unless --tool-runs says otherwise

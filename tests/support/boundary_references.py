"""The references of boundary IoU, run from temporary copies of their vendored sources (tests/references/).

- ``boundary_iou_api``: the official boundary-iou-api's ``COCOeval(iouType="boundary")`` (the coco protocol's);
- ``lvis_api_2021``: lvis-api's ``lvis_challenge_2021`` branch, whose ``LVISEval(iou_type="boundary")`` and
  ``mode="challenge2021"`` (Fixed AP) are the lvis protocol's.

Their READMEs list the run-time shims applied to the copies, none of which changes a number: numpy's removed
``np.float`` alias spelled ``np.float64`` (the type it named), the boundaries computed in this process instead
of a process pool (the same function on each annotation, in order), and the 2021 branch's package renamed
``lvis2021`` so that it does not shadow lvis-api 0.5.3 (the LVIS suites' oracle).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import json
import logging
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

REFERENCES = Path(__file__).resolve().parent.parent / "references"
_LOADED: dict = {}


def _copy(src: Path, name: str, edit) -> Path:
    """``src`` copied as the package ``name`` into a fresh temporary folder, each file through ``edit``."""
    root = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    shutil.copytree(src, root / name)
    for f in (root / name).rglob("*.py"):
        f.write_text(edit(f.read_text(encoding="utf-8")), encoding="utf-8")
    return root


def _import(root: Path, name: str, modules: tuple[str, ...]) -> list:
    sys.path.insert(0, str(root))
    try:
        return [importlib.import_module(f"{name}.{m}") for m in modules]
    finally:
        sys.path.remove(str(root))


def boundary_iou_api():
    """boundary-iou-api's ``(coco module, cocoeval module)``, shimmed (the module docstring)."""
    if "coco" not in _LOADED:
        src = REFERENCES / "boundary_iou_api" / "boundary_iou"
        root = _copy(src, "boundary_iou", lambda t: t.replace("astype(dtype=np.float)", "astype(dtype=np.float64)"))
        utils, coco, cocoeval = _import(root, "boundary_iou", ("utils.boundary_utils", "coco_instance_api.coco",
                                                              "coco_instance_api.cocoeval"))  # fmt: skip

        def in_process(annotations, ann_to_mask, dilation_ratio=0.02):
            return utils.augment_annotations_with_boundary_single_core(0, annotations, ann_to_mask, dilation_ratio)

        coco.augment_annotations_with_boundary_multi_core = in_process
        _LOADED["coco"] = (coco, cocoeval)
    return _LOADED["coco"]


def run_boundary_coco(preds: list, gt: dict, dilation_ratio: float = 0.02, **params):
    """boundary-iou-api's ``COCOeval(iouType="boundary")`` run on copies of ``preds`` and ``gt``, silently;
    ``params`` set on its ``Params`` before ``evaluate()`` (``maxDets``, ``iouThrs``, ``useCats`` ...)."""
    coco, cocoeval = boundary_iou_api()
    # pycocotools' decode of the masks it erodes warns under numpy 2 (its __array__ lacks copy=)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cg = coco.COCO()
        cg.dataset = copy.deepcopy(gt)
        cg.createIndex()
        cd = cg.loadRes(copy.deepcopy(preds))
        ev = cocoeval.COCOeval(cg, cd, iouType="boundary", dilation_ratio=dilation_ratio)
        for key, value in params.items():
            setattr(ev.params, key, value)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def lvis_api_2021():
    """The ``lvis_challenge_2021`` branch's ``(lvis module, results module, eval module)``, shimmed."""
    if "lvis" not in _LOADED:
        src = REFERENCES / "lvis_api_2021" / "lvis"
        root = _copy(src, "lvis2021", lambda t: t.replace("from lvis.", "from lvis2021."))
        utils, lvis, results, ev = _import(root, "lvis2021", ("boundary_utils", "lvis", "results", "eval"))

        def in_process(annotations, imgs, dilation_ratio=0.02, max_cpu_num=80):
            return utils.augment_annotations_with_boundary_single_core(0, annotations, imgs, dilation_ratio)

        lvis.augment_annotations_with_boundary_multi_core = in_process
        logging.getLogger("lvis2021").setLevel(logging.ERROR)
        _LOADED["lvis"] = (lvis, results, ev)
    return _LOADED["lvis"]


def run_lvis_2021(gt: str, dets, *, fixed_ap: bool = False, dilation_ratio: float = 0.02):
    """The 2021 branch's ``LVISEval(iou_type="boundary")`` on ``gt`` (a path) and ``dets`` (a path or list), in
    ``mode="challenge2021"`` (Fixed AP) when ``fixed_ap``."""
    lvis, _, ev = lvis_api_2021()
    dets = str(dets) if isinstance(dets, (str, Path)) else json.loads(json.dumps(dets))
    with warnings.catch_warnings():  # LVISResults' logger.warn, pycocotools' decode under numpy 2: deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        e = ev.LVISEval(lvis.LVIS(str(gt)), dets, iou_type="boundary", dilation_ratio=dilation_ratio,
                        mode="challenge2021" if fixed_ap else "default")  # fmt: skip
        e.run()
    return e

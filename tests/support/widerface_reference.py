"""Run the vendored WiderFace-Evaluation ``evaluation.py`` (tests/references/widerface_evaluation/) inside a
test, with the run-time shims its README lists; returns the three APs its ``voc_ap`` computed."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import types
from pathlib import Path

REFERENCE = Path(__file__).resolve().parent.parent / "references" / "widerface_evaluation"


class _Bar:
    def __init__(self, iterable):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def set_description(self, *_args, **_kwargs):
        pass


def _stubs(bbox_overlaps) -> dict[str, types.ModuleType]:
    bbox = types.ModuleType("bbox")
    bbox.bbox_overlaps = bbox_overlaps
    ipython = types.ModuleType("IPython")
    ipython.embed = lambda *a, **k: None
    tqdm = types.ModuleType("tqdm")
    tqdm.tqdm = _Bar
    return {"bbox": bbox, "IPython": ipython, "tqdm": tqdm}


def reference_aps(pred_dir, gt_dir, tmp_path: Path, bbox_overlaps=None) -> list:
    """``[easy, medium, hard]`` as the script computes them (numpy floats)."""
    if bbox_overlaps is None:
        from support.widerface_bbox_twin import bbox_overlaps
    folder = Path(tmp_path) / "widerface_reference"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(REFERENCE / "evaluation.py", folder / "evaluation.py")
    saved = {name: sys.modules.get(name) for name in ("bbox", "IPython", "tqdm")}
    sys.modules.update(_stubs(bbox_overlaps))
    try:
        spec = importlib.util.spec_from_file_location("widerface_reference_evaluation", folder / "evaluation.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod
    aps = []
    voc_ap = module.voc_ap

    def recording(rec, prec):
        ap = voc_ap(rec, prec)
        aps.append(ap)
        return ap

    module.voc_ap = recording
    module.print = lambda *a, **k: None  # its result banner
    import numpy as np

    with np.errstate(all="ignore"):  # its divisions by zero warn
        module.evaluation(str(pred_dir), str(gt_dir))
    return aps

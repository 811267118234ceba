"""OpenPCDet's ``kitti_object_eval_python`` (vendored unmodified in tests/references/), run in a tmp copy.

Run-time shims, none touching the 2D evaluation:

* the files are copied into a package ``kitti_ref_<n>`` beside a stand-in ``rotate_iou.py``: ``eval.py``'s
  ``from .rotate_iou import rotate_iou_gpu_eval`` needs numba's CUDA target; the stand-in raises if called
  (only BEV/3D call it; the driver evaluates metric 0 only);
* ``kitti_common.py``'s ``from skimage import io`` gets an empty ``skimage`` module when scikit-image is
  missing (only its image-info helpers use it; ``get_label_annos`` does not).

:func:`reference_stats` reads both folders with ``get_label_annos`` and runs ``eval_class`` for metric 0 on
classes 0, 1, 2 with ``get_official_eval_result``'s overlaps, then ``get_mAP`` / ``get_mAP_R40`` as
``do_eval`` does: the figures ``get_official_eval_result`` prints for ``bbox`` (the BEV/3D lines left out).
"""

from __future__ import annotations

import importlib
import itertools
import shutil
import sys
import types
from pathlib import Path

import numpy as np

REFERENCE = Path(__file__).resolve().parent.parent / "references" / "kitti_object_eval_python"
_STAND_IN = """\
def rotate_iou_gpu_eval(*args, **kwargs):
    raise RuntimeError("the CUDA rotated IoU stand-in was called: BEV/3D is not part of the 2D evaluation")
"""
_counter = itertools.count()
_loaded: dict[str, types.ModuleType] = {}


def load_reference(tmp: Path) -> tuple[types.ModuleType, types.ModuleType]:
    """``(eval, kitti_common)`` modules from a copy under ``tmp`` (one copy per process)."""
    if "eval" in _loaded:
        return _loaded["eval"], _loaded["kitti_common"]
    name = f"kitti_ref_{next(_counter)}"
    pkg = tmp / name
    pkg.mkdir(parents=True)
    for f in ("eval.py", "kitti_common.py"):
        shutil.copy(REFERENCE / f, pkg / f)
    (pkg / "__init__.py").write_text("")
    (pkg / "rotate_iou.py").write_text(_STAND_IN)
    try:
        import skimage  # noqa: F401
    except ImportError:
        stub = types.ModuleType("skimage")
        stub.io = types.ModuleType("skimage.io")
        sys.modules.setdefault("skimage", stub)
        sys.modules.setdefault("skimage.io", stub.io)
    sys.path.insert(0, str(tmp))
    try:
        _loaded["eval"] = importlib.import_module(f"{name}.eval")
        _loaded["kitti_common"] = importlib.import_module(f"{name}.kitti_common")
    finally:
        sys.path.remove(str(tmp))
    return _loaded["eval"], _loaded["kitti_common"]


CLASSES = ("Car", "Pedestrian", "Cyclist")
DIFFICULTIES = ("easy", "moderate", "hard")


def reference_arrays(tmp: Path, pred_dir: Path, label_dir: Path) -> dict[str, np.ndarray]:
    """The reference's ``eval_class`` output for metric 0 with ``mAP`` (R11) and ``mAP_R40``; ``aos`` flag."""
    ev, kc = load_reference(tmp)
    gt_annos = kc.get_label_annos(str(label_dir))
    ids = [int(p.stem) for p in sorted(Path(label_dir).glob("*.txt")) if len(p.name) == 10 and p.stem.isdigit()]
    dt_annos = kc.get_label_annos(str(pred_dir), sorted(ids))
    # get_official_eval_result's overlaps for classes 0, 1, 2, and its AOS test
    overlap_0_7 = np.array([[0.7, 0.5, 0.5, 0.7, 0.5, 0.7]] * 3)
    overlap_0_5 = np.array(
        [[0.7, 0.5, 0.5, 0.7, 0.5, 0.5], [0.5, 0.25, 0.25, 0.5, 0.25, 0.5], [0.5, 0.25, 0.25, 0.5, 0.25, 0.5]]
    )
    min_overlaps = np.stack([overlap_0_7, overlap_0_5], axis=0)[:, :, [0, 1, 2]]
    compute_aos = False
    for anno in dt_annos:
        if anno["alpha"].shape[0] != 0:
            if anno["alpha"][0] != -10:
                compute_aos = True
            break
    ret = ev.eval_class(gt_annos, dt_annos, [0, 1, 2], [0, 1, 2], 0, min_overlaps, compute_aos)
    out = {
        "precision": ret["precision"][:, :, 0],
        "recall": ret["recall"][:, :, 0],
        "R11": ev.get_mAP(ret["precision"])[:, :, 0],
        "R40": ev.get_mAP_R40(ret["precision"])[:, :, 0],
        "aos": compute_aos,
    }
    if compute_aos:
        out["orientation"] = ret["orientation"][:, :, 0]
        out["aos_R11"] = ev.get_mAP(ret["orientation"])[:, :, 0]
        out["aos_R40"] = ev.get_mAP_R40(ret["orientation"])[:, :, 0]
    return out


def reference_stats(tmp: Path, pred_dir: Path, label_dir: Path) -> dict[str, float]:
    """``<Class>/<difficulty>/<R40|R11>`` as deteval's stats order them, from :func:`reference_arrays`."""
    a = reference_arrays(tmp, pred_dir, label_dir)
    return {
        f"{c}/{d}/{k}": float(a[k][i, j])
        for i, c in enumerate(CLASSES)
        for j, d in enumerate(DIFFICULTIES)
        for k in ("R40", "R11")
    }

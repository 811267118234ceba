"""lvis-api 0.5.3 as the reference oracle for the LVIS parity tests.

lvis-api needs two shims on today's stack, neither of which changes a number it computes:

- it calls ``astype(dtype=np.float)``, removed in numpy 1.24: ``np.float = float`` first (the same type);
- ``lvis/__init__`` imports ``lvis.vis``, which imports ``cv2`` (OpenCV) for drawing only. Where OpenCV is
  not installed or does not load (``opencv-python`` needs the system's libGL), an empty stand-in module
  named ``cv2`` is put in ``sys.modules`` before the import: evaluation never calls it (``LVISEval``,
  ``LVISResults`` and ``LVIS`` read no cv2 name).

:func:`run_lvis` runs ``LVIS``, ``LVISResults`` and ``LVISEval`` on copies of the inputs (lvis-api writes
into the result dicts it is given), silently; :func:`assert_same` compares a deteval result with it.
"""

from __future__ import annotations

import copy
import gzip
import json
import logging
import sys
import types
import warnings
from pathlib import Path

import numpy as np

__all__ = ["DATA", "assert_same", "fixture_files", "lvis_api", "run_lvis"]

DATA = Path(__file__).resolve().parent / "data" / "lvis100"


def lvis_api():
    """The ``lvis`` package (0.5.3), with the shims of the module docstring."""
    if not hasattr(np, "float"):
        setattr(np, "float", float)  # noqa: B010 - lvis-api's astype(dtype=np.float): float64 arrays, as before
    if "lvis" not in sys.modules:
        try:
            import cv2  # noqa: F401 - installed with tidecv and lvis; may fail to load (no libGL.so.1)
        except ImportError:
            sys.modules["cv2"] = types.ModuleType("cv2", "stand-in: lvis.vis draws with cv2, evaluation never calls it")
    import lvis

    logging.getLogger("lvis").setLevel(logging.ERROR)
    return lvis


def fixture_files(tmp_dir: Path) -> dict[str, str]:
    """The gzipped lvis100 files written out as plain JSON under ``tmp_dir`` (lvis-api reads plain paths)."""
    out = {}
    for name in ("lvis_val_100", "dets_bbox", "dets_segm"):
        path = tmp_dir / f"{name}.json"
        path.write_bytes(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()))
        out[name] = str(path)
    return out


def run_lvis(gt, dets, iou_type: str = "bbox", max_dets: int = 300):
    """``LVISEval`` run on ``gt`` (a path or dict) and ``dets`` (a path or list), results cut to ``max_dets``
    per image; ``Params.max_dets``, which only names the AR stats, set to the same cut."""
    lvis = lvis_api()
    if isinstance(gt, dict):
        gt_obj = lvis.LVIS.__new__(lvis.LVIS)  # LVIS() reads only paths: the same object from a dict
        gt_obj.logger = logging.getLogger("lvis.lvis")
        gt_obj.dataset = copy.deepcopy(gt)
        gt_obj._create_index()
    else:
        gt_obj = lvis.LVIS(str(gt))
    dets = str(dets) if isinstance(dets, (str, Path)) else json.loads(json.dumps(dets))
    with warnings.catch_warnings():  # LVISResults calls the deprecated logger.warn for a list of results
        warnings.simplefilter("ignore", DeprecationWarning)
        results = lvis.LVISResults(gt_obj, dets, max_dets=max_dets)
    ev = lvis.LVISEval(gt_obj, results, iou_type)
    ev.params.max_dets = max_dets
    ev.run()
    return ev


def assert_same(result, ev) -> None:
    """deteval's result equals lvis-api's: every stat with ``==`` (names and order too), and the precision
    and recall arrays bit for bit (deteval keeps a max-dets axis of one)."""
    assert list(result.stats) == list(ev.results), (list(result.stats), list(ev.results))
    for key, value in ev.results.items():
        assert result.stats[key] == value, (key, result.stats[key], value)
    assert np.array_equal(result.precision[..., 0], ev.eval["precision"])
    assert np.array_equal(result.recall[..., 0], ev.eval["recall"])

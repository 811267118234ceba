"""Run one driver on pycocotools and on deteval's shim (``deteval.pycocotools``) and compare everything.

A driver is ``drive(COCO, COCOeval, log)``: it builds its objects from the classes given (each side
gets its own deep copies of the inputs: pycocotools writes into records) and returns the COCOeval
it ran; ``log`` collects values to compare (``log(...)``, any picklable-by-== value or array).
What is compared, exactly: printed output (timings blanked), every exception's type, ``eval``'s
arrays (``np.array_equal``, shapes and dtypes), ``counts``, ``stats`` (``==``), the normalised
params, and, where asked, ``evalImgs`` records and ``ious``.
"""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
from pycocotools.coco import COCO as RealCOCO
from pycocotools.cocoeval import COCOeval as RealCOCOeval

from deteval.pycocotools import COCO as ShimCOCO
from deteval.pycocotools import COCOeval as ShimCOCOeval

__all__ = ["assert_same_eval", "compare_drivers", "same_value"]

_TIMES = re.compile(r"t=\d+\.\d+s")
PARAM_FIELDS = ("imgIds", "catIds", "iouThrs", "recThrs", "maxDets", "areaRng", "areaRngLbl", "useCats", "iouType")


def _run(drive, coco, cocoeval):
    out, log = io.StringIO(), []
    with contextlib.redirect_stdout(out):
        try:
            ev = drive(coco, cocoeval, log.append)
            error = None
        except Exception as exc:  # noqa: BLE001 - the type is compared with pycocotools'
            ev, error = None, exc
    return ev, log, _TIMES.sub("t=#s", out.getvalue()), error


def same_value(a, b) -> bool:
    """Equal values: arrays by ``np.array_equal`` with shape and dtype, containers element-wise."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b if not isinstance(a, (int, float)) else a == b


def assert_same_records(real: list, shim: list) -> None:
    assert len(real) == len(shim), f"evalImgs: {len(shim)} records, pycocotools {len(real)}"
    for i, (r, s) in enumerate(zip(real, shim)):
        assert (r is None) == (s is None), f"evalImgs[{i}]: {s!r} != pycocotools {r!r}"
        if r is None:
            continue
        assert r.keys() == s.keys()
        for k in r:
            assert same_value(r[k], s[k]), f"evalImgs[{i}][{k!r}]: {s[k]!r} != pycocotools {r[k]!r}"


def assert_same_ious(real: dict, shim: dict) -> None:
    assert list(real) == list(shim), "ious: keys differ"
    for k in real:
        assert same_value(real[k], shim[k]), f"ious[{k}]: {shim[k]!r} != pycocotools {real[k]!r}"


def assert_same_eval(real, shim, records: bool = False) -> None:
    """``eval``, ``stats`` and params of two COCOeval objects equal (and ``evalImgs``/``ious`` with ``records``)."""
    assert real.eval.keys() == shim.eval.keys()
    for k in ("precision", "recall", "scores"):
        if k in real.eval:
            assert same_value(real.eval[k], shim.eval[k]), f"eval[{k!r}] differs"
    if "counts" in real.eval:
        assert real.eval["counts"] == shim.eval["counts"]
    assert type(real.stats) is type(shim.stats)
    assert list(real.stats) == list(shim.stats), f"stats {list(shim.stats)} != pycocotools {list(real.stats)}"
    for name in PARAM_FIELDS:
        assert same_value(getattr(real.params, name), getattr(shim.params, name)), f"params.{name} differs"
    if isinstance(real._paramsEval, dict):
        assert shim._paramsEval == real._paramsEval
    else:
        for name in PARAM_FIELDS:
            assert same_value(getattr(real._paramsEval, name), getattr(shim._paramsEval, name)), f"_paramsEval.{name}"
    if records:
        assert_same_records(real.evalImgs, shim.evalImgs)
        assert_same_ious(real.ious, shim.ious)


def compare_drivers(drive, records: bool = False) -> tuple:
    """Run ``drive`` on both and assert everything equal; returns (pycocotools' COCOeval, the shim's)."""
    real, real_log, real_out, real_err = _run(drive, RealCOCO, RealCOCOeval)
    shim, shim_log, shim_out, shim_err = _run(drive, ShimCOCO, ShimCOCOeval)
    assert type(shim_err) is type(real_err), f"shim raised {shim_err!r}, pycocotools {real_err!r}"
    assert shim_out == real_out, f"printed output differs:\n--- shim\n{shim_out}\n--- pycocotools\n{real_out}"
    assert len(real_log) == len(shim_log)
    for i, (r, s) in enumerate(zip(real_log, shim_log)):
        assert same_value(r, s), f"logged value {i}: shim {s!r} != pycocotools {r!r}"
    if real is not None and real_err is None:
        assert_same_eval(real, shim, records)
    return real, shim

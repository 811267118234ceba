"""The CityPersons authors' ``eval_MR_multisetup.py`` (with its ``coco.py``) run in a test, from a local
checkout of https://github.com/cvgroup-njust/CityPersons named by ``DETEVAL_CITYPERSONS_REF`` (the
repository's root). The repository carries no license, so neither the scripts nor its ``val_gt.json`` are
copied into deteval's tree; without the variable the tests that need them skip, and
tests/support/citypersons_oracle.py (written from the script's rules) stands in.

The two scripts are copied into a temporary folder and imported from there. Run-time shims, none of which
changes what the script computes:

* the script's ``np`` is numpy with numpy 1.24's removed ``np.float`` alias put back (``float``) and
  ``linspace`` given ``int()`` of its float sample count (``np.round(...) + 1``, refused by numpy >= 1.18's
  successors); both only inside the two modules, numpy itself untouched;
* the driver is ``eval_demo.py``'s loop (a fresh ``COCO`` and ``loadRes`` per setup, ``imgIds`` sorted,
  ``evaluate(id_setup)``, ``accumulate()``, ``summarize(id_setup, file)``), results passed as a file path
  (``loadRes`` names Python 2's ``unicode`` for anything else); ``summarize`` prints and writes the MR
  rounded, so the driver reads the exact value its inner ``_summarize`` returns through ``sys.setprofile``.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import types
from pathlib import Path

import numpy as np

ENV = "DETEVAL_CITYPERSONS_REF"
_LOADED: dict[str, types.SimpleNamespace] = {}


def checkout() -> Path | None:
    """The checkout's root, or None when the variable is unset."""
    root = os.environ.get(ENV)
    return Path(root) if root else None


class _Numpy(types.ModuleType):
    """numpy with ``float`` and an ``int()`` sample count in ``linspace``: the script's ``np``."""

    def __init__(self) -> None:
        super().__init__("numpy")
        self.float = float

    def __getattr__(self, name: str):
        return getattr(np, name)

    @staticmethod
    def linspace(start, stop, num=50, *args, **kwargs):
        return np.linspace(start, stop, int(num), *args, **kwargs)


def load(tmp_root: Path) -> types.SimpleNamespace:
    if "ref" in _LOADED:
        return _LOADED["ref"]
    src = checkout() / "evaluation" / "eval_script"
    dest = Path(tmp_root) / "citypersons_eval"
    dest.mkdir(parents=True, exist_ok=True)
    for f in ("coco.py", "eval_MR_multisetup.py"):
        shutil.copy(src / f, dest / f)
    saved = {k: sys.modules.pop(k) for k in ("coco", "eval_MR_multisetup") if k in sys.modules}
    sys.path.insert(0, str(dest))
    try:
        coco = importlib.import_module("coco")
        cocoeval = importlib.import_module("eval_MR_multisetup")
    finally:
        sys.path.remove(str(dest))
        for k in ("coco", "eval_MR_multisetup"):
            sys.modules.pop(k, None)
        sys.modules.update(saved)
    coco.np = cocoeval.np = _Numpy()
    _LOADED["ref"] = types.SimpleNamespace(COCO=coco.COCO, COCOeval=cocoeval.COCOeval)
    return _LOADED["ref"]


def mr(tmp_path: Path, gt: dict | str, results: list, curves: list | None = None) -> list[float]:
    """The four setups' MR from the reference (``eval_demo.py``'s loop), exact. ``curves``: a list that
    receives per setup the ``(fppi, recall)`` that ``accumulate`` computed (its locals at return, read
    through ``sys.setprofile``; None where it returned before computing them)."""
    ref = load(tmp_path)
    ann = gt if isinstance(gt, str) else str(_dump(tmp_path / "gt.json", gt))
    res = str(_dump(tmp_path / "dt.json", results))
    out: list[float] = []

    def grab(frame, event, arg):
        if event == "return" and frame.f_code.co_name == "_summarize":
            out.append(float(arg))

    def grab_curve(frame, event, arg):
        if event == "return" and frame.f_code.co_name == "accumulate" and curves is not None:
            loc = frame.f_locals
            curves.append((np.array(loc["fppi"]), np.array(loc["recall"])) if "fppi" in loc else None)

    with open(tmp_path / "results.txt", "w") as res_file, open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            for id_setup in range(4):
                coco_gt = ref.COCO(ann)
                coco_dt = coco_gt.loadRes(res)
                ev = ref.COCOeval(coco_gt, coco_dt, "bbox")
                ev.params.imgIds = sorted(coco_gt.getImgIds())
                ev.evaluate(id_setup)
                sys.setprofile(grab_curve)
                try:
                    ev.accumulate()
                finally:
                    sys.setprofile(None)
                sys.setprofile(grab)
                try:
                    ev.summarize(id_setup, res_file)
                finally:
                    sys.setprofile(None)
        finally:
            sys.stdout = stdout
    assert len(out) == 4
    return out


def _dump(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path

"""``deteval.init_as_pycocotools()``: unchanged pycocotools code runs on deteval, with the same output.

Two scripts drive COCOeval as detectron2's ``COCOEvaluator`` and mmdetection's ``CocoMetric`` do
(``shim_drivers/``, written from reading those projects); each runs in a subprocess with real
pycocotools and after ``init_as_pycocotools()``, and everything printed (pycocotools' lines and a JSON
line of the metrics) must be the same, timings aside. Also: what the aliasing does to ``sys.modules``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import DATA_DIR, TESTS_DIR

DRIVERS = TESTS_DIR / "parity" / "shim_drivers"
FAKE = DATA_DIR / "coco_fake100"
GT = str(FAKE / "instances_val2014_100.json")
BBOX = str(FAKE / "instances_val2014_fakebbox100_results.json")
SEGM = str(FAKE / "instances_val2014_fakesegm100_results.json")
POLY = (str(DATA_DIR / "polygons3" / "gt_dataset.json"), str(DATA_DIR / "polygons3" / "dt_dataset.json"))
KPT = (str(DATA_DIR / "keypoints1" / "gt_dataset.json"), str(DATA_DIR / "keypoints1" / "dt_dataset.json"))
TOY = (str(DATA_DIR / "toy7" / "groundtruths_coco.json"), str(DATA_DIR / "toy7" / "detections_coco.json"))


def _python(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS_DIR.parent), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=600)


def _both(script: str, *args: str) -> None:
    real = _python(str(DRIVERS / script), *args)
    shim = _python(str(DRIVERS / script), "--shim", *args)
    assert real.returncode == 0, real.stderr
    assert shim.returncode == 0, shim.stderr
    assert "COCOeval from pycocotools.cocoeval" in real.stderr
    assert "COCOeval from deteval.pycocotools.cocoeval" in shim.stderr
    blank = lambda s: re.sub(r"t=\d+\.\d+s", "t=#s", s)  # noqa: E731
    assert blank(shim.stdout) == blank(real.stdout)
    assert shim.stdout.rstrip().splitlines()[-1].startswith("{")


@pytest.mark.parametrize(
    "args",
    [
        (GT, BBOX, "bbox"),
        (GT, SEGM, "segm"),
        (*POLY, "bbox"),
        (*TOY, "bbox"),
        (*KPT, "keypoints"),
        (*KPT, "keypoints", *["0.05"] * 17),
    ],
    ids=["fake100-bbox", "fake100-segm", "polygons3-bbox", "toy7-bbox", "keypoints1", "keypoints1-sigmas"],
)
@pytest.mark.slow
def test_detectron2_style(args):
    _both("detectron2_style.py", *args)


@pytest.mark.parametrize(
    "args",
    [(GT, BBOX, "bbox", "proposal"), (GT, SEGM, "segm"), (*POLY, "bbox"), (*TOY, "bbox", "proposal")],
    ids=["fake100-bbox", "fake100-segm", "polygons3", "toy7"],
)
@pytest.mark.slow
def test_mmdet_style(args):
    _both("mmdet_style.py", *args)


ALIASING = """
import sys
import pycocotools._mask as real_mask_ext
import deteval
deteval.init_as_pycocotools()
deteval.init_as_pycocotools()  # idempotent
import pycocotools, pycocotools.coco, pycocotools.cocoeval, pycocotools.mask
from pycocotools import mask, _mask
from pycocotools.cocoeval import COCOeval, Params
import deteval.pycocotools as shim
assert pycocotools is shim and pycocotools.coco is shim.coco and pycocotools.cocoeval is shim.cocoeval
assert pycocotools.mask is shim.mask is mask and COCOeval is shim.COCOeval and Params is shim.Params
assert _mask is real_mask_ext and sys.modules["pycocotools._mask"] is real_mask_ext
# deteval's own mask reading still works through the name (polygons of huge images go to pycocotools.mask)
res = deteval.evaluate("{dt}", "{gt}", iou_type="segm")
print(res.stats["AP"])
"""


def test_aliasing():
    code = ALIASING.format(dt=SEGM, gt=GT)
    shim = _python("-c", code)
    assert shim.returncode == 0, shim.stderr
    plain = _python("-c", f"import deteval; print(deteval.evaluate({SEGM!r}, {GT!r}, iou_type='segm').stats['AP'])")
    assert plain.returncode == 0, plain.stderr
    assert shim.stdout == plain.stdout


def test_deteval_import_stays_light():
    code = "import sys, deteval; print('pycocotools' in sys.modules, 'deteval.pycocotools' in sys.modules)"
    out = _python("-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]

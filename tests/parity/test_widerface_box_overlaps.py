"""The test-only numpy twin of WiderFace-Evaluation's Cython ``bbox_overlaps`` (tests/support/
widerface_bbox_twin.py, which the parity tests give the reference) is bit-identical to the compiled
``box_overlaps.pyx`` (vendored, unmodified): compiled here where Cython and a C compiler are present."""

from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest
from support.widerface_bbox_twin import bbox_overlaps as twin
from support.widerface_reference import REFERENCE

pytestmark = pytest.mark.slow  # compiling takes ~10 s


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    pytest.importorskip("Cython")
    pytest.importorskip("setuptools")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    from Cython.Build import cythonize
    from setuptools import Extension
    from setuptools.dist import Distribution

    folder = tmp_path_factory.mktemp("bbox")
    shutil.copy(REFERENCE / "box_overlaps.pyx", folder / "box_overlaps.pyx")
    ext = Extension("bbox", [str(folder / "box_overlaps.pyx")], include_dirs=[np.get_include()])
    dist = Distribution({"ext_modules": cythonize([ext], quiet=True, build_dir=str(folder))})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib, cmd.build_temp = str(folder), str(folder / "tmp")
    cmd.ensure_finalized()
    cmd.run()
    if not hasattr(np, "float"):  # the module reads np.float (removed in numpy 1.24) at import
        setattr(np, "float", float)  # noqa: B010 - np.float is what the module reads
    sys.path.insert(0, str(folder))
    try:
        import bbox
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("bbox", None)
    return bbox.bbox_overlaps


def _boxes(rng, n):
    kind = rng.integers(0, 4)
    if kind == 0:  # integer pixels, tiny and zero widths
        xy = rng.integers(0, 50, (n, 2)).astype(np.float64)
        wh = rng.integers(-1, 12, (n, 2)).astype(np.float64)
    elif kind == 1:  # halves
        xy = rng.integers(0, 100, (n, 2)) / 2
        wh = rng.integers(-2, 30, (n, 2)) / 2
    elif kind == 2:  # arbitrary doubles
        xy = rng.random((n, 2)) * 40
        wh = rng.random((n, 2)) * 20 - 1.5
    else:  # large coordinates
        xy = rng.integers(0, 4000, (n, 2)) + rng.random((n, 2))
        wh = rng.random((n, 2)) * 300
    b = np.hstack([xy, wh])
    b[:, 2:] += b[:, :2]  # x2 = x + w, as evaluation.py passes them
    return b


def test_twin_is_bit_identical(compiled):
    rng = np.random.default_rng(0)
    for _ in range(400):
        a, b = _boxes(rng, int(rng.integers(0, 30))), _boxes(rng, int(rng.integers(0, 30)))
        try:
            want = compiled(a, b)
        except ZeroDivisionError:
            with pytest.raises(ZeroDivisionError):
                twin(a, b)
            continue
        got = twin(a, b)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(got.view(np.int64), want.view(np.int64))

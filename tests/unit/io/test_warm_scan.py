"""Files below ``TUNING.fast_path_bytes`` take the byte scanner in box evaluation once its kernels are cached.

The scanner gives the general reader's containers (``test_fast_path_wiring``); what is tested here
is which reader a file takes, and that the cache check finds the kernels a scan has used.
"""

from __future__ import annotations

import pytest
from conftest import COCO_PAIRS, DATA_DIR

from deteval._startup.compile_ahead import kernel_named
from deteval._startup.kernel_signatures import GROUPS
from deteval.io import coco as coco_io
from deteval.tuning import TUNING


@pytest.mark.parametrize("cached", [True, False])
def test_the_size_rule(cached, monkeypatch):
    monkeypatch.setattr(coco_io, "_scanners_cached", lambda iou_type: cached)
    big, warm = TUNING.fast_path_bytes, TUNING.fast_path_bytes // TUNING.warm_scan_divisor
    assert coco_io._scanned(big, "bbox") and coco_io._scanned(big, "segm")
    assert coco_io._scanned(warm, "bbox") is cached
    assert coco_io._scanned(big - 1, "bbox") is cached
    assert not coco_io._scanned(warm - 1, "bbox")
    assert not coco_io._scanned(warm, "segm") and not coco_io._scanned(warm, "obb")  # their scans are other kernels
    monkeypatch.setattr(TUNING, "fast_path_bytes", 1 << 62)  # tests force the general path this way
    assert not coco_io._scanned(1 << 40, "bbox")


def _scanner_kernels_cache():
    from deteval.io.scan.gt import _scan_gt

    return getattr(getattr(_scan_gt, "_cache", None), "cached_signatures", None)


@pytest.mark.parametrize("aot", [True, False], ids=["compiled-ahead-or-cached", "numba-cache-only"])
@pytest.mark.parametrize("iou_type", ["bbox", "keypoints"])
def test_the_cache_check_finds_the_kernels_a_scan_used(iou_type, aot, monkeypatch, tmp_path):
    """Every kernel the check asks about is one a scan of that type runs: a kernel a bbox scan never runs
    (keypoints' column move) would keep small box files off the scanner wherever numba's cache is the
    only store (an install without the package's ahead-of-time code)."""
    if _scanner_kernels_cache() is None:
        pytest.skip("numba's own cache (DETEVAL_PLAIN_NUMBA) or no jit: the small-file scan is off")
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0)  # the scanners run (compiled here if the cache is cold)
    monkeypatch.setattr(coco_io, "_scanners_known", set())
    if not aot:  # as if the package had no ahead-of-time code: numba's cache must hold them
        for name, _ in GROUPS["coco-bbox-scan"]:
            monkeypatch.setattr(kernel_named(name), "_compiled", {})
    if iou_type == "bbox":
        pair = COCO_PAIRS["coco_fake100"]
        gt = coco_io.load_coco_gt(pair.gt_path)
        coco_io.load_coco_results(pair.preds_list_path(tmp_path), gt)
    else:
        gt = coco_io.load_coco_gt(DATA_DIR / "keypoints1" / "gt_dataset.json", iou_type="keypoints")
        coco_io.load_coco_results(DATA_DIR / "keypoints1" / "dt_dataset.json", gt, iou_type="keypoints")
    assert coco_io._scanners_cached(iou_type)


def test_a_warm_small_pair_is_scanned(monkeypatch, tmp_path):
    if _scanner_kernels_cache() is None:
        pytest.skip("numba's own cache (DETEVAL_PLAIN_NUMBA) or no jit: the small-file scan is off")
    pair = COCO_PAIRS["coco_fake100"]
    dt_path = pair.preds_list_path(tmp_path)
    monkeypatch.setattr(coco_io, "_scanners_cached", lambda iou_type: True)
    monkeypatch.setattr(TUNING, "fast_path_bytes", 32 * min(pair.gt_path.stat().st_size, dt_path.stat().st_size))
    taken = []
    for fn in ("gt_from_scan", "results_from_scan"):
        orig = getattr(coco_io, fn)

        def spy(*a, _o=orig, _n=fn):
            taken.append(_n)
            return _o(*a)

        monkeypatch.setattr(coco_io, fn, spy)
    coco_io.load_coco_pair(dt_path, pair.gt_path)
    assert taken == ["gt_from_scan", "results_from_scan"]

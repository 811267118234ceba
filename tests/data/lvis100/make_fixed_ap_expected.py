"""Write fixed_ap_expected.json: lvis-api's lvis_challenge_2021 branch run on the lvis100 files.

    git clone -b lvis_challenge_2021 https://github.com/lvis-dataset/lvis-api /tmp/lvis-api-2021
    (cd /tmp/lvis-api-2021 && git checkout 04e89fde501073d9f78d6d56088fad23b6df7f44)
    python tests/data/lvis100/make_fixed_ap_expected.py /tmp/lvis-api-2021

Fixed AP (Dave et al. 2021) is not in any lvis release: this branch is its reference. For each iou
type and per-category cap (10,000: the challenge's value, never reached here; 20 and 3: caps that
bite), it runs ``LVISResults(gt, dets, max_dets_per_cat=cap, max_dets_per_im=-1)`` and ``LVISEval``
with ``params.max_dets = -1`` and ``params.max_dets_per_cat = cap`` (what its ``mode="challenge2021"``
sets, without the switch to boundary IoU that mode also makes), and stores ``results`` (floats
round-trip through JSON), the printed lines and the SHA-256 of the precision and recall arrays.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CAPS = (10000, 20, 3)


def main(checkout: str) -> None:
    sys.path.insert(0, checkout)
    try:
        import cv2  # noqa: F401
    except ImportError:  # lvis.vis draws with cv2; evaluation never calls it
        sys.modules["cv2"] = types.ModuleType("cv2")
    import lvis

    assert Path(lvis.__file__).resolve().is_relative_to(Path(checkout).resolve()), lvis.__file__
    commit = subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"lvis_api": "lvis-dataset/lvis-api@" + (commit or "lvis_challenge_2021"), "cases": []}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name in ("lvis_val_100", "dets_bbox", "dets_segm"):
            paths[name] = Path(tmp) / f"{name}.json"
            paths[name].write_bytes(gzip.decompress((HERE / f"{name}.json.gz").read_bytes()))
        for iou_type in ("bbox", "segm"):
            for cap in CAPS:
                gt = lvis.LVIS(str(paths["lvis_val_100"]))
                dt = lvis.LVISResults(gt, str(paths[f"dets_{iou_type}"]), max_dets_per_cat=cap, max_dets_per_im=-1)
                ev = lvis.LVISEval(gt, dt, iou_type)
                ev.params.max_dets, ev.params.max_dets_per_cat = -1, cap
                ev.run()
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    ev.print_results()
                out["cases"].append({
                    "iou_type": iou_type,
                    "max_dets_per_cat": cap,
                    "results": {k: float(v) for k, v in ev.results.items()},
                    "printed": buf.getvalue().splitlines(),
                    "precision_sha256": _sha(ev.eval["precision"]),
                    "recall_sha256": _sha(ev.eval["recall"]),
                })  # fmt: skip
    (HERE / "fixed_ap_expected.json").write_text(json.dumps(out, indent=1) + "\n")


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, np.float64).tobytes()).hexdigest()


if __name__ == "__main__":
    main(sys.argv[1])

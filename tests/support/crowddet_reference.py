"""CrowdDet's own evaluation (tests/references/crowddet, vendored unmodified) run in a test.

The vendored tree is copied into a temporary folder and imported from there. Run-time shims, none of which
changes what the reference computes (tests/references/crowddet/README.md lists them):

* a stand-in ``tqdm`` module when tqdm is not installed (``compute_JI`` imports it at module level; the
  single-process driver below never calls it);
* JI through a single-process driver: ``compute_JI.evaluation_all`` splits the records over 10 worker
  processes and sums the per-image ratios in the order they finish; the driver calls the reference's own
  ``compute_JI_with_ignore`` (per threshold ``1e-1 * i``) on all records in the ground truth's order with a
  list for a queue, then its own ``gather`` and ``max``;
* the records ``compute_JI`` reads are the ones CrowdDet's ``tools/test.py`` writes: per ground-truth line,
  its ``ID``, ``height``, ``width``, the prediction line's ``dtboxes`` and ``gtboxes`` of ``{"box": fbox,
  "tag": t}`` with ``t`` from the reference's ``misc_utils.load_gt(record, "gtboxes", "fbox",
  ["background", "person"])`` (the class list of every CrowdDet config). tools/test.py also round-trips
  the box through x2 = x + w, w = x2 - x and rounds it to 0.1 px: the identity on CrowdHuman's integer
  boxes, skipped here so float boxes reach the reference as deteval reads them.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import types
from pathlib import Path

VENDORED = Path(__file__).resolve().parent.parent / "references" / "crowddet"
CLASSES = ["background", "person"]
_LOADED: dict[str, types.SimpleNamespace] = {}


def load(tmp_root: Path) -> types.SimpleNamespace:
    """The reference's modules (compute_APMR, compute_JI, misc_utils), imported once per process from a
    copy under ``tmp_root``; the import names (``evaluate``, ``utils``) are taken out of ``sys.modules``
    again so they shadow nothing else."""
    if "ref" in _LOADED:
        return _LOADED["ref"]
    dest = Path(tmp_root) / "crowddet"
    shutil.copytree(VENDORED, dest, dirs_exist_ok=True)
    lib = str(dest / "lib")
    saved_path = list(sys.path)
    names = ("evaluate", "utils", "tqdm")
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in names}
    for k in saved:
        del sys.modules[k]
    try:
        importlib.import_module("tqdm")
    except ImportError:
        stub = types.ModuleType("tqdm")
        stub.tqdm = None  # never called by the driver
        sys.modules["tqdm"] = stub
    sys.path.insert(0, lib)
    try:
        apmr = importlib.import_module("evaluate.compute_APMR")
        ji = importlib.import_module("evaluate.compute_JI")
        misc = importlib.import_module("utils.misc_utils")
        database = importlib.import_module("evaluate.APMRToolkits.database")
    finally:
        sys.path[:] = saved_path  # compute_JI inserts '../'
        for k in [k for k in sys.modules if k.split(".")[0] in names]:
            del sys.modules[k]
        sys.modules.update(saved)
    _LOADED["ref"] = types.SimpleNamespace(apmr=apmr, ji=ji, misc=misc, database=database)
    return _LOADED["ref"]


def _write(path: Path, records: list) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def apmr(tmp_path: Path, gts: list, dts: list, box: str = "fbox") -> tuple[float, float]:
    """(AP, MR) from ``compute_APMR.compute_APMR`` on ODGT files; ``box="hbox"``: the reference's head mode
    (``Database(..., mode=1)``, which compute_APMR cannot reach: it passes no head key)."""
    ref = load(tmp_path)
    gt_path, dt_path = _write(tmp_path / "gt.odgt", gts), _write(tmp_path / "dt.odgt", dts)
    if box == "fbox":
        ap, mr = ref.apmr.compute_APMR(dt_path, gt_path, "box", 0)
    else:
        db = ref.database.Database(gt_path, dt_path, None, "box", 1)
        db.compare()
        ap, _ = db.eval_AP()
        mr, _ = db.eval_MR()
    return float(ap), float(mr)


class _ListQueue(list):
    def put_nowait(self, item: dict) -> None:
        self.append(item)


def ji(tmp_path: Path, gts: list, dts: list) -> tuple[float, list[float]]:
    """(JI, the mean ratio per score threshold) from the reference's ``compute_JI_with_ignore`` and
    ``gather`` over the records in the ground truth's order, one process."""
    ref = load(tmp_path)
    dt_of = {d["ID"]: d["dtboxes"] for d in dts}
    records = []
    for g in gts:
        tags = ref.misc.load_gt(g, "gtboxes", "fbox", CLASSES)[:, -1]
        gtboxes = [{"box": list(b["fbox"]), "tag": int(t)} for b, t in zip(g["gtboxes"], tags)]
        records.append(
            {"ID": g["ID"], "height": g["height"], "width": g["width"], "gtboxes": gtboxes, "dtboxes": dt_of[g["ID"]]}
        )
    per_threshold = []
    for i in range(10):
        score_thr = 1e-1 * i  # evaluation_all's loop
        queue = _ListQueue()
        ref.ji.compute_JI_with_ignore(queue, records, score_thr, "box")
        _, mean_ratio = ref.ji.gather(queue)
        per_threshold.append(float(mean_ratio))
    return max(per_threshold), per_threshold


def apmr_curves(tmp_path: Path, gts: list, dts: list) -> dict[str, list]:
    """The curves the reference's ``Database.eval_MR`` and ``eval_AP`` return beside AP and MR (as
    ``compute_APMR`` builds the database): FPPI and miss rate, recall, precision and score per ranked
    detection."""
    ref = load(tmp_path)
    gt_path, dt_path = _write(tmp_path / "gt.odgt", gts), _write(tmp_path / "dt.odgt", dts)
    db = ref.database.Database(gt_path, dt_path, "box", None, 0)
    db.compare()
    _, (rec, prec, thr, _, _, _) = db.eval_AP()
    _, (fppi, miss) = db.eval_MR()
    return {"fppi": fppi, "miss_rate": miss, "recall": rec, "precision": prec, "score": thr}

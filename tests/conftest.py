"""Shared test configuration: data paths, COCO data pairs and hypothesis profiles."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

TESTS_DIR = Path(__file__).resolve().parent
DATA_DIR = TESTS_DIR / "data"

# no test's command-line run starts the background build of kernels ahead of time (deteval/_runtime/aot_background.py:
# tests/unit/runtime/test_aot_cache.py turns it on for itself); set here, so their subprocesses inherit it
os.environ["DETEVAL_AOT_BACKGROUND"] = "0"

# tests/support/ (oracles, strategies) is imported by the test files as the package "support"; make it
# importable whatever pytest's import mode is.
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

# --------------------------------------------------------------------------------------
# Test tiers. A plain ``pytest -q`` (README's command) is the quick tier: tests marked ``slow`` are
# deselected (pyproject.toml's addopts) and the generated (hypothesis) suites run the "quick" profile's
# few examples each. CI's full tier runs ``HYPOTHESIS_PROFILE=ci pytest -m "slow or generated"``: the slow
# tests and every generated suite at full counts. Every hypothesis test is marked ``generated`` here.
#
# hypothesis profiles; select one with HYPOTHESIS_PROFILE=<name> (default: quick)

QUICK_EXAMPLES = 5  # a sixtieth of the ci profile's
_COMMON = {
    "deadline": None,
    "print_blob": True,
    "derandomize": False,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
settings.register_profile("quick", max_examples=QUICK_EXAMPLES, **_COMMON)
settings.register_profile("ci", max_examples=300, **_COMMON)
settings.register_profile("dev", max_examples=50, **_COMMON)
# CI's repeat passes (numba's patches off, the oldest numba): the same suites under another numba, where the
# "ci" pass has already run the full example counts against the references
settings.register_profile("repeat", max_examples=60, **_COMMON)
settings.register_profile("thorough", max_examples=3000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


@pytest.fixture(autouse=True)
def _no_compile_notice(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line's once-per-machine compile notice (tests/cli/test_compile_notice.py tests it) kept out
    of the other tests' stderr: whichever in-process run first compiles a kernel would print it, so a test's
    count of its own lines would depend on the order tests run in and on the cache."""
    if request.module.__name__.rsplit(".", 1)[-1] == "test_compile_notice":
        return
    import contextlib

    import deteval.cli

    monkeypatch.setattr(deteval.cli, "_compile_notice", lambda progress, enabled: contextlib.nullcontext())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.generated)
            # random data meets what the references score with a warning (inverted boxes, corner-like boxes,
            # normalised-looking ones ...) at any example count; these suites compare numbers, and the warnings'
            # texts are asserted by the readers' and the odd inputs' own tests
            item.add_marker(pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning"))


# --------------------------------------------------------------------------------------
# COCO bbox data pairs under tests/data (see each folder's README.md for source and license)


@dataclasses.dataclass(frozen=True)
class CocoPair:
    name: str
    gt_path: Path
    dt_path: Path
    # pycocotools 2.0.11's own recorded output for this pair (a summary file with a
    # "type=bbox" section), or None
    summary_path: Path | None = None

    def load_gt(self) -> dict:
        with open(self.gt_path, encoding="utf-8") as f:
            return json.load(f)

    def load_preds(self) -> list:
        """The results list (a file holding a dict keeps its list under "annotations")."""
        with open(self.dt_path, encoding="utf-8") as f:
            data = json.load(f)
        return data["annotations"] if isinstance(data, dict) else data

    def preds_list_path(self, tmp_path: Path) -> Path:
        """A path to a results file holding a plain JSON list (written to tmp_path if needed)."""
        with open(self.dt_path, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, list):
            return self.dt_path
        out = tmp_path / f"{self.name}_results.json"
        out.write_text(json.dumps(data["annotations"]), encoding="utf-8")
        return out


def _pair(name, gt, dt, summary=None) -> CocoPair:
    return CocoPair(
        name,
        DATA_DIR / gt,
        DATA_DIR / dt,
        None if summary is None else DATA_DIR / summary,
    )


COCO_PAIRS = {
    p.name: p
    for p in [
        _pair(
            "coco_fake100",
            "coco_fake100/instances_val2014_100.json",
            "coco_fake100/instances_val2014_fakebbox100_results.json",
            "coco_fake100/pycocotools_summary.txt",
        ),
        _pair(
            "coco_fake100_nocrowd",
            "coco_fake100_nocrowd/sampled_gts_bbox_area.json",
            "coco_fake100_nocrowd/sampled_bbox_results.json",
            "coco_fake100_nocrowd/pycocotools_summary.txt",
        ),
        _pair(
            "voc100",
            "voc100/coco_gt_from_voc.json",
            "voc100/coco_results_from_dets.json",
            "voc100/pycocotools_summary.txt",
        ),
        _pair(
            "voc100_difficult_as_crowd",
            "voc100/coco_gt_from_voc_difficult_as_crowd.json",
            "voc100/coco_results_from_dets.json",
            "voc100/pycocotools_summary_difficult_as_crowd.txt",
        ),
        _pair(
            "tm4",
            "tm4/tm_inputs_gt.json",
            "tm4/tm_inputs_dets.json",
            "tm4/pycocotools_summary_tm_inputs.txt",
        ),
        _pair(
            "polygons3",
            "polygons3/gt_dataset.json",
            "polygons3/dt_dataset.json",
            "polygons3/pycocotools_summary_gt_dt_dataset.txt",
        ),
        _pair(
            "toy7",
            "toy7/groundtruths_coco.json",
            "toy7/detections_coco.json",
            "toy7/pycocotools_summary.txt",
        ),
        # keypoint results carry a bbox: evaluated here as bbox (its summary is for keypoints)
        _pair("keypoints1", "keypoints1/gt_dataset.json", "keypoints1/dt_dataset.json"),
    ]
}


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA_DIR


@pytest.fixture(params=list(COCO_PAIRS), ids=list(COCO_PAIRS))
def coco_pair(request) -> CocoPair:
    return COCO_PAIRS[request.param]


# Benchmark presets as test data: the files in benchmarks/data when generated there, else the
# small presets generated once per session (seeded, a few seconds); the large ones are skipped.
BENCH_DIR = TESTS_DIR.parent / "benchmarks" / "data"
GENERATED_IN_TESTS = ("small", "small-segm", "coco-sparse")


@pytest.fixture(scope="session")
def bench_preset(tmp_path_factory):
    """``bench_preset(name)`` -> the folder with ``gt.json`` and ``dets.json`` of a benchmark preset."""
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if (BENCH_DIR / name / "dets.json").exists():
            return BENCH_DIR / name
        if name not in GENERATED_IN_TESTS:
            pytest.skip(f"{BENCH_DIR / name} not generated (benchmarks/make_data.py)")
        if name not in made:
            sys.path.insert(0, str(TESTS_DIR.parent / "benchmarks"))
            try:
                import make_data
            finally:
                sys.path.pop(0)
            out = tmp_path_factory.mktemp(name)
            make_data.make(name, out, 0)
            made[name] = out
        return made[name]

    return get


@pytest.fixture
def no_shipped_kernels(monkeypatch):
    """Kernels compiled at build time ignored (they and their subprocesses start from numba's own cache):
    for tests of what a cold cache does. An installed package ships them (deteval/_runtime/shipped.py), and
    code compiled ahead of time (deteval/_runtime/aot.py), which would leave numba uncalled."""
    monkeypatch.setenv("DETEVAL_SHIPPED_KERNELS", "0")
    monkeypatch.setenv("DETEVAL_AOT", "0")


HANG_LIMIT_S = 300


@pytest.fixture
def hang_limit():
    """A test that waits on other processes (a Dask cluster, gloo ranks) and hangs ends the run after
    ``HANG_LIMIT_S`` seconds, every thread's stack printed (``faulthandler``), instead of holding CI to
    its time limit: one such hang was seen, in Dask, not reproduced."""
    import faulthandler

    faulthandler.dump_traceback_later(HANG_LIMIT_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()

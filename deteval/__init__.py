"""deteval: object-detection evaluation, exact against the reference tools and fast.

>>> import deteval
>>> res = deteval.evaluate("results.json", "instances_val2017.json")  # doctest: +SKIP
>>> print(res.summary())  # doctest: +SKIP
"""

import importlib
import sys
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING

from deteval._startup.blas_thread import quiet_interrupt_while_loading, spare_blas_thread
from deteval.version import __version__  # noqa: F401 - the package attribute

spare_blas_thread()  # before numpy's import: the command line's process only
quiet_interrupt_while_loading()  # Ctrl-C during the imports: one line, 130 (the command line's process only)

from deteval.api import bootstrap, compare, evaluate, load  # noqa: E402
from deteval.errors import DetevalWarning, InputError  # noqa: E402
from deteval.io.coco import load_coco_gt, load_coco_results  # noqa: E402
from deteval.result import CocoResult, EvalResult, VocResult  # noqa: E402

# modules that moved into packages keep their old import paths (``import deteval.lrp``, ``from deteval.dask
# import evaluate``): each old name is the new module itself, imported on first use
MOVED_MODULES = {
    "deteval.accumulate": "deteval.accumulation.accumulate",
    "deteval.calibration": "deteval.analysis.calibration",
    "deteval.comparison": "deteval.analysis.comparison",
    "deteval.compile_ahead": "deteval._startup.compile_ahead",
    "deteval.confusion": "deteval.analysis.confusion",
    "deteval.cumulative": "deteval.accumulation.cumulative",
    "deteval.curves": "deteval.analysis.curves",
    "deteval.dask": "deteval.evaluator.dask",
    "deteval.distributed": "deteval.evaluator.distributed",
    "deteval.integrators": "deteval.accumulation.integrators",
    "deteval.intervals": "deteval.analysis.intervals",
    "deteval.lrp": "deteval.analysis.lrp",
    "deteval.operating_points": "deteval.analysis.operating_points",
    "deteval.plots": "deteval.analysis.plots",
    "deteval.ranking": "deteval.accumulation.ranking",
    "deteval.report": "deteval.analysis.report",
    "deteval.slices": "deteval.analysis.slices",
    "deteval.tide": "deteval.analysis.tide",
}


class _MovedModules:
    """The finder (and loader) of one entry of this package's ``__path__``: it finds an old path of
    :data:`MOVED_MODULES` as the module that moved (asked only for ``deteval.<name>`` that no file of the
    package holds). Not an ``importlib.abc`` subclass: that module's import costs ~20 ms."""

    def find_spec(self, fullname, target=None):
        return ModuleSpec(fullname, self) if fullname in MOVED_MODULES else None

    def create_module(self, spec):
        module = importlib.import_module(MOVED_MODULES[spec.name])
        spec.loader_state = module.__spec__  # the import machinery gives the module the old name's spec next
        return module

    def exec_module(self, module) -> None:
        module.__spec__ = module.__spec__.loader_state
        new = module.__name__
        for name in [m for m in sys.modules if m.startswith(new + ".")]:  # a package's modules: one object each
            sys.modules.setdefault(next(k for k, v in MOVED_MODULES.items() if v == new) + name[len(new) :],
                                   sys.modules[name])  # fmt: skip


_MOVED_ENTRY = "<deteval: modules under their old paths>"
sys.path_importer_cache[_MOVED_ENTRY] = _MovedModules()
__path__.append(_MOVED_ENTRY)

if TYPE_CHECKING:  # pragma: no cover
    from deteval.evaluator import Evaluator
    from deteval.pycocotools import init_as_pycocotools

__all__ = [
    "evaluate", "load", "bootstrap", "compare",
    "Evaluator", "EvalResult", "CocoResult", "VocResult", "InputError", "DetevalWarning",
    "load_coco_gt", "load_coco_results", "init_as_pycocotools",
]  # fmt: skip


def __getattr__(name: str):
    # the training-loop Evaluator is imported on first use: the CLI and evaluate() never need it
    if name == "Evaluator":
        from deteval.evaluator import Evaluator

        return Evaluator
    if name == "init_as_pycocotools":  # numpy-only until called, but pycocotools' import is not free
        from deteval.pycocotools import init_as_pycocotools

        return init_as_pycocotools
    raise AttributeError(f"module 'deteval' has no attribute {name!r}")

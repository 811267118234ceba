"""deteval: object-detection evaluation, exact against the reference tools and fast.

>>> import deteval
>>> res = deteval.evaluate("results.json", "instances_val2017.json")  # doctest: +SKIP
>>> print(res.summary())  # doctest: +SKIP
"""

from typing import TYPE_CHECKING

from deteval.blas_thread import spare_blas_thread

spare_blas_thread()  # before numpy's import: the command line's process only

from deteval.api import bootstrap, compare, evaluate, load  # noqa: E402
from deteval.errors import InputError  # noqa: E402
from deteval.io.coco import DetevalWarning, load_coco_gt, load_coco_results  # noqa: E402
from deteval.result import CocoResult, EvalResult, VocResult  # noqa: E402

if TYPE_CHECKING:  # pragma: no cover
    from deteval.evaluator import Evaluator
    from deteval.pycocotools import init_as_pycocotools

__all__ = [
    "evaluate", "load", "bootstrap", "compare",
    "Evaluator", "EvalResult", "CocoResult", "VocResult", "InputError", "DetevalWarning",
    "load_coco_gt", "load_coco_results", "init_as_pycocotools",
]  # fmt: skip
__version__ = "0.1.0"


def __getattr__(name: str):
    # the training-loop Evaluator is imported on first use: the CLI and evaluate() never need it
    if name == "Evaluator":
        from deteval.evaluator import Evaluator

        return Evaluator
    if name == "init_as_pycocotools":  # numpy-only until called, but pycocotools' import is not free
        from deteval.pycocotools import init_as_pycocotools

        return init_as_pycocotools
    raise AttributeError(f"module 'deteval' has no attribute {name!r}")

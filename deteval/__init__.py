"""deteval: object-detection evaluation, exact against the reference tools and fast.

>>> import deteval
>>> res = deteval.evaluate("results.json", "instances_val2017.json")  # doctest: +SKIP
>>> print(res.summary())  # doctest: +SKIP
"""

from deteval.api import evaluate
from deteval.errors import InputError
from deteval.evaluator import Evaluator
from deteval.io.coco import DetevalWarning, load_coco_gt, load_coco_results
from deteval.result import EvalResult

__all__ = ["evaluate", "Evaluator", "EvalResult", "InputError", "DetevalWarning", "load_coco_gt", "load_coco_results"]
__version__ = "0.1.0"

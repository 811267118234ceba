import logging
from lvis.lvis import LVIS
from lvis.results import LVISResults
from lvis.eval import LVISEval
from lvis.vis import LVISVis

logging.basicConfig(
    format="[%(asctime)s] %(name)s %(levelname)s: %(message)s", datefmt="%m/%d %H:%M:%S",
    level=logging.WARN,
)

__all__ = ["LVIS", "LVISResults", "LVISEval", "LVISVis"]

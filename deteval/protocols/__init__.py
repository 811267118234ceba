"""Protocol registry: name -> module exposing ``evaluate(dets, gt, **options) -> EvalResult``.

A protocol module is imported only when asked for, so the CLI stays quick to
start. Each module also exposes ``IOU_TYPES`` (the iou types it supports).
"""

from __future__ import annotations

import importlib
from types import ModuleType

_REGISTRY: dict[str, str] = {
    "coco": "deteval.protocols.coco",
    "voc07": "deteval.protocols.voc",
    "voc10": "deteval.protocols.voc",
}


def available() -> list[str]:
    """Names of the registered protocols."""
    return sorted(_REGISTRY)


def get(name: str) -> ModuleType:
    """The module implementing protocol ``name``."""
    try:
        return importlib.import_module(_REGISTRY[name])
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}; choose one of {available()}") from None

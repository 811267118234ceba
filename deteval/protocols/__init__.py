"""Protocol registry: name -> :class:`~deteval.protocols.base.Protocol` object.

A protocol module is imported only when asked for, so the CLI stays quick to
start; protocol modules themselves import no kernel at module level.
"""

from __future__ import annotations

import importlib

from deteval.errors import InputError
from deteval.protocols.base import Option, Protocol

__all__ = ["Option", "Protocol", "available", "get"]

# name -> "module:object"
_REGISTRY: dict[str, str] = {
    "citypersons": "deteval.protocols.citypersons:CITYPERSONS",
    "coco": "deteval.protocols.coco:COCO",
    "crowdhuman": "deteval.protocols.crowdhuman:CROWDHUMAN",
    "crowdpose": "deteval.protocols.crowdpose:CROWDPOSE",
    "lvis": "deteval.protocols.lvis:LVIS",
    "dota": "deteval.protocols.dota:DOTA",
    "openimages": "deteval.protocols.openimages:OPENIMAGES",
    "voc07": "deteval.protocols.voc:VOC07",
    "voc10": "deteval.protocols.voc:VOC10",
    "widerface": "deteval.protocols.widerface:WIDERFACE",
    "yolo": "deteval.protocols.yolo:YOLO",
}


def available() -> list[str]:
    """Names of the registered protocols."""
    return sorted(_REGISTRY)


def get(name: str) -> Protocol:
    """The protocol registered as ``name``."""
    try:
        module, obj = _REGISTRY[name].split(":")
    except KeyError:
        raise InputError("protocol", None, f"unknown protocol {name!r}; choose one of {available()}") from None
    return getattr(importlib.import_module(module), obj)

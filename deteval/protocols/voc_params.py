"""The VOC family's parameters (``voc07``, ``voc10``, DOTA's): the checked, frozen :class:`VocParams`
and the checks of the matching options they share (IoU thresholds, integrators, IoU test, ties)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deteval.errors import InputError
from deteval.protocols import param_checks as checks
from deteval.vocabulary import FILE_BOX_FORMATS, INTEGRATORS, IOU_TESTS, TIE_POLICIES, VOC11_GRIDS

PRESET_KEYS = ("iou_thrs", "integrator", "iou_test", "plus_one", "ties", "grid", "names", "image_set", "box_format")


def parse_iou_thresholds(values: Any) -> list[float]:
    """IoU thresholds from numbers or strings: ``0.5``, ``"0.75"``, ``"0.5:0.95"`` (step 0.05), ``"0.5:0.95:0.05"``.

    Ranges on a 0.01 grid are built as ``k / 100`` (detectron2's values exactly).
    """
    if isinstance(values, (int, float, str)):
        values = [values]
    out: list[float] = []
    for v in values:
        if isinstance(v, str) and ":" in v:
            out += _iou_range(v)
        else:
            try:
                out.append(float(v))
            except (TypeError, ValueError):
                raise ValueError(f"IoU threshold must be a number, got {v!r}") from None
    if not out or not all(0.0 < t <= 1.0 for t in out):
        raise ValueError(f"IoU thresholds must lie in (0, 1], got {out}")
    if len(set(out)) != len(out):
        raise ValueError(f"IoU thresholds repeat: {out}")
    return out


def _iou_range(v: str) -> list[float]:
    parts = v.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"IoU range must be 'start:stop[:step]', got {v!r}")
    try:
        a, b = float(parts[0]), float(parts[1])
        s = float(parts[2]) if len(parts) == 3 else 0.05
    except ValueError:
        raise ValueError(f"IoU range must be 'start:stop[:step]' of numbers, got {v!r}") from None
    if s <= 0 or b < a:
        raise ValueError(f"IoU range {v!r} must rise with a positive step")
    n = int(round((b - a) / s)) + 1
    ka, ks = round(a * 100), round(s * 100)
    if abs(ka - a * 100) < 1e-9 and abs(ks - s * 100) < 1e-9 and ks > 0:
        return [(ka + i * ks) / 100.0 for i in range(n)]
    return [a + i * s for i in range(n)]


def iou_key(t: float) -> str:
    return f"{round(t * 100, 6):g}"


@dataclass(frozen=True)
class VocParams:
    """A VOC evaluation's parameters (see the module docstring), checked."""

    protocol: str
    iou_thrs: tuple[float, ...]
    integrators: tuple[str, ...]  # the first is the headline
    iou_test: str = "gt"
    plus_one: bool = True
    ties: str = "argsort"
    grid: str = "numpy"
    names: Any = None  # loading: class names file or list
    image_set: Any = None  # loading: image ids to evaluate
    box_format: str = "xyxy"  # loading: boxes of per-image text files
    compat: bool = True
    iou_type: str = "bbox"
    strict: bool = False  # loading: input voc_eval.py scores with a warning (inverted boxes ...) is an error

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "integrators": list(self.integrators),
            "iou_thresholds": list(self.iou_thrs),
            "iou_test": ">" if self.iou_test == "gt" else ">=",
            "plus_one": self.plus_one,
            "ties": self.ties,
            "voc11_grid": self.grid,
            "difficult": "not positives; a detection whose best match is difficult is ignored",
            "compat": self.compat,
        }


def _choice(values: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> str:
    return checks.choice(key, values[key], choices)


def checked_matching(values: Mapping[str, Any]) -> dict[str, Any]:
    """The checked VOC-family matching and AP options (``iou_thrs``, ``integrators``, ``iou_test``, ``ties``).

    VOC and the protocols built on its matching (DOTA) share these; each adds its own fields.
    """
    try:
        thrs = parse_iou_thresholds(values["iou_thrs"])
    except ValueError as exc:
        raise InputError("iou_thrs", None, str(exc)) from None
    names = values["integrator"]
    names = [names] if isinstance(names, str) else list(names)
    for n in names:
        checks.choice("integrator", n, INTEGRATORS)
    if not names or len(set(names)) != len(names):
        raise InputError("integrator", None, f"integrators must be distinct and at least one, got {names}")
    return {
        "iou_thrs": tuple(thrs),
        "integrators": tuple(names),
        "iou_test": _choice(values, "iou_test", IOU_TESTS),
        "ties": _choice(values, "ties", TIE_POLICIES),
    }


def checked_params(protocol: str, values: Mapping[str, Any], compat: bool, strict: bool = False) -> VocParams:
    return VocParams(
        protocol=protocol,
        **checked_matching(values),
        plus_one=bool(values["plus_one"]),
        grid=_choice(values, "grid", VOC11_GRIDS),
        names=values.get("names"),
        image_set=values.get("image_set"),
        box_format=_choice(values, "box_format", FILE_BOX_FORMATS),
        compat=bool(compat),
        strict=bool(strict),
    )

"""Protocol presets: TOML files in the repository's ``configs/``, shipped in the package.

A preset maps a protocol's parameter names to values; a user's ``--config`` file
has the same form, and overrides the built-in preset key by key.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from deteval.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path  # not imported at run time: pathlib is 3 ms of every start

T = TypeVar("T")

# deteval/configs links to the repository's configs/; a built package holds the files themselves there
CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "configs")


def _toml():
    # imported when a preset is read, not with deteval (with importlib.resources it was 15 ms of every start)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


@dataclass(frozen=True)
class Preset:
    """Parameter values by name, and where they came from (for error messages)."""

    values: Mapping[str, Any] = field(default_factory=dict)
    source: str = "<preset>"


@cache
def builtin(name: str) -> dict[str, Any]:
    """The built-in preset ``configs/<name>.toml`` (``deteval/configs`` links to the repository's ``configs/``)."""
    with open(os.path.join(CONFIGS, f"{name}.toml"), encoding="utf-8") as f:
        return _toml().loads(f.read())


def read_config(path: str | Path) -> Preset:
    """A user's preset file (TOML), checked to be readable and well-formed; its keys are checked by the protocol."""
    from deteval.io.json_source import MAX_JSON_DEPTH, check_depth, read_text

    text = read_text(path, "config")  # bounded, as every input
    toml = _toml()
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(old + 4 * MAX_JSON_DEPTH)  # tomllib recurses a few calls per level of an array
    try:
        values = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise InputError(str(path), None, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise InputError(str(path), None, f"TOML nested deeper than {MAX_JSON_DEPTH} levels") from None
    finally:
        sys.setrecursionlimit(old)
    check_depth(values, str(path), kind="TOML")
    return Preset(values, str(path))


def as_preset(preset: Preset | Mapping[str, Any] | None) -> Preset | None:
    """``preset`` as a :class:`Preset` (a plain mapping is named "preset" in error messages)."""
    return preset if preset is None or isinstance(preset, Preset) else Preset(preset, "preset")


def resolve(
    builtin_values: Mapping[str, Any],
    preset: Preset | Mapping[str, Any] | None,
    given: Mapping[str, Any],
    known: tuple[str, ...],
    build: Callable[[dict], T],
) -> T:
    """``build`` the parameters from the built-in values, updated by a user's ``preset``, then by ``given``
    (keywords; None values are left out). An :class:`InputError` about a key that came from the user's
    preset (and that ``given`` did not override) is raised again naming the preset's source, with the key
    (and the entry within it, when the rule names one, e.g. an area range's label) as the record."""
    preset, given = as_preset(preset), {k: v for k, v in given.items() if v is not None}
    with blamed_on(preset, given):
        return build(merged(builtin_values, preset, known) | given)


@contextmanager
def blamed_on(
    preset: Preset | Mapping[str, Any] | None, given: Mapping[str, Any] | Iterable[str] = ()
) -> Iterator[None]:
    """An :class:`InputError` about a key that came from the user's ``preset`` (and that ``given`` did not
    override) raised again naming the preset's source, with the key (and the entry within it, when the rule
    names one, e.g. an area range's label) as the record."""
    preset = as_preset(preset)
    try:
        yield
    except InputError as exc:
        if preset is not None and exc.source in set(preset.values) - set(given):
            record = exc.source if exc.record is None else f"{exc.source}[{exc.record!r}]"
            raise InputError(preset.source, record, exc.rule) from None
        raise


def merged(base: Mapping[str, Any], preset: Preset | Mapping[str, Any] | None, known: tuple[str, ...]) -> dict:
    """``base`` updated by ``preset``'s values; a key outside ``known`` is an error naming the preset's file."""
    out, preset = dict(base), as_preset(preset)
    if preset is None:
        return out
    for key, value in preset.values.items():
        if key not in known:
            raise InputError(preset.source, key, f"unknown parameter; this protocol takes {', '.join(known)}")
        out[key] = value
    return out

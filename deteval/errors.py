"""Errors raised for bad input, before any kernel runs; and warnings for renamed keywords."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class InputError(ValueError):
    """Invalid user input: names the source, the record and the rule broken.

    ``source`` is a file path or an argument name, ``record`` says which entry
    (for example ``"annotations[12] (id=7)"``), ``rule`` what is wrong with it.
    """

    def __init__(self, source: str, record: str | None, rule: str) -> None:
        self.source = source
        self.record = record
        self.rule = rule
        where = f"{source}: {record}" if record else source
        super().__init__(f"{where}: {rule}")


def renamed_keywords(**new_of_old: str) -> Callable[[F], F]:
    """Still accept a function's old keyword names, with a ``DeprecationWarning`` (for one release).

    ``@renamed_keywords(iou="iou_thr")``: a call with ``iou=x`` warns
    ``"iou= is now iou_thr="`` and runs as ``iou_thr=x``; passing both names is a ``TypeError``.
    """

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in new_of_old.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {old}= and {new}=; {old}= is now {new}=")
                    warnings.warn(f"{old}= is now {new}=", DeprecationWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap

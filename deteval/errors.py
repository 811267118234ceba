"""Errors raised for bad input, before any kernel runs; the warning for input scored as the reference scores it
but worth a word; and warnings for renamed keywords."""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from deteval.text import printable

F = TypeVar("F", bound=Callable[..., Any])


class InputError(ValueError):
    """Invalid user input: names the source, the record and the rule broken.

    ``source`` is a file path or an argument name, ``record`` says which entry
    (for example ``"annotations[12] (id=7)"``), ``rule`` what is wrong with it. The message is one
    line of printable text whatever the user's strings hold (a file name with a newline or an escape
    sequence, a lone surrogate: escaped as ``repr`` escapes them), a value quoted in it cut short.
    """

    def __init__(self, source: str, record: str | None, rule: str) -> None:
        self.source = source
        self.record = record
        self.rule = rule
        where = f"{source}: {record}" if record else source
        if len(rule) > MAX_RULE_CHARS:
            rule = rule[: MAX_RULE_CHARS - 5] + " ... " + rule[-20:]
        super().__init__(printable(f"{where}: {rule}"))


MAX_RULE_CHARS = 1000  # a message quoting a huge value stays readable


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


class DetevalWarning(UserWarning):
    """Input that deteval accepts but that changes what is evaluated."""


def warn(message: str) -> None:
    """A :class:`DetevalWarning` attributed to the first caller outside deteval: the user's line, whichever
    loader (general, scanned, paired) got there."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, DetevalWarning, stacklevel=level)


def accepted(name: str, strict: bool, count: int, what: str, record: str | None, rule: str) -> None:
    """Input that pycocotools scores and deteval scores the same way, but would rather not: one
    :class:`DetevalWarning` giving the ``count`` of ``what`` and the first ``record`` with its ``rule``;
    with ``strict`` the :class:`~deteval.errors.InputError` (``name``, ``record``, ``rule``) instead."""
    if strict:
        raise InputError(name, record, rule)
    at = f"{record}: " if record else ""
    warn(f"{name}: {count} {what}; first: {at}{rule}")


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

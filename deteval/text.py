"""Text for tables and summaries: unprintable characters escaped, padding by display columns."""

from __future__ import annotations

import unicodedata

__all__ = ["display_width", "pad", "printable"]


def printable(text: str) -> str:
    """``text`` with each unprintable character (``\\n``, ``\\t``, other controls) escaped as ``repr`` escapes it.

    A class name is one cell of a table: a newline or tab in it would break the rows (CSV quotes it instead).
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def display_width(text: str) -> int:
    """The columns ``text`` takes on a terminal: 2 for a wide or full-width character (CJK, most emoji),
    0 for a combining mark, 1 otherwise (what a table pads by: ``len`` misaligns such names)."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, width: int, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` display columns (``ljust``, or ``rjust`` with ``right``)."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill

"""Errors raised for bad input, before any kernel runs."""

from __future__ import annotations


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

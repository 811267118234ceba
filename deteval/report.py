"""Results people read: tables rendered from an :class:`~deteval.result.EvalResult`."""

from __future__ import annotations

from typing import Any

from deteval.result import EvalResult


def per_class_table(result: EvalResult, sort_by: str | None = None) -> str:
    """An aligned text table of ``result.per_class``, one row per category.

    Numbers are printed with 3 decimals; -1 (no ground truth) prints as ``-``.
    Rows keep category order unless ``sort_by`` names a column (descending).
    """
    rows = result.per_class
    if not rows:
        return "(no per-class results)"
    columns = list(rows[0])
    if sort_by is not None:
        rows = sorted(rows, key=lambda r: (r[sort_by] is None, -(r[sort_by] or 0)))

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "-" if v == -1 else f"{v:.3f}"
        return "-" if v is None else str(v)

    cells = [[cell(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r[c], (int, float)) for r in rows) for c in columns]

    def fmt(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    lines = [fmt(columns), fmt(["-" * w for w in widths])]
    lines += [fmt(row) for row in cells]
    return "\n".join(lines)

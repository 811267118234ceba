"""Results people read: tables rendered from an :class:`~deteval.result.EvalResult`.

Three renderings of ``result.per_class``, all with the same columns in the same
order (those of the protocol's per-class rows):

* :func:`per_class_table` -- aligned text for a terminal; 3 decimals, ``-`` for
  "no value".
* :func:`per_class_csv` -- RFC 4180 CSV with a header row; floats at full
  ``repr`` precision (they parse back to the identical float), "no value" as an
  empty cell.
* :func:`per_class_markdown` -- a GitHub-flavoured Markdown table; 3 decimals,
  "no value" as ``–`` (en dash).

"No value" is ``-1`` (pycocotools' marker for a category without ground truth
in the selected area range), ``None`` or NaN.

:func:`with_operating_points` adds each class's best-F1 operating point (read
from the result's per-detection outcomes) as extra columns; the CLI applies it
before every per-class output.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from typing import Any

import numpy as np

from deteval.errors import renamed_keywords
from deteval.result import EvalResult, RowTable
from deteval.text import display_width, pad, printable

NO_VALUE_MARKDOWN = "\u2013"


def is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float):
        return v == -1 or math.isnan(v)
    return False


def sort_columns(result: EvalResult) -> list[str]:
    """The column names :func:`per_class_table` and friends accept as ``sort_by``."""
    return list(result.per_class[0]) if result.per_class else []


def _rows(result: EvalResult, sort_by: str | None) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows, sorted by ``sort_by`` when given.

    Numeric columns sort descending with missing values (-1, None) last; text
    columns (``name``) sort ascending. Ties keep category order.
    """
    rows = result.per_class
    columns = list(rows[0]) if rows else []
    if sort_by is None or not rows:
        return columns, list(rows)
    if sort_by not in columns:
        raise ValueError(f"unknown column {sort_by!r} to sort by; choose one of: {', '.join(columns)}")
    values = [r[sort_by] for r in rows]
    if any(isinstance(v, str) for v in values):
        return columns, sorted(rows, key=lambda r: (r[sort_by] is None, str(r[sort_by] or "")))
    return columns, sorted(rows, key=lambda r: (is_missing(r[sort_by]), -(r[sort_by] or 0)))


# the count columns of a per-class row: ground truth and detections (COCO family; VOC family)
_COUNTS = (("num_gt", "num_det"), ("npos", "ndet"))


def is_empty_row(row: dict[str, Any]) -> bool:
    """Whether a category has no ground truth and no detections (by the row's count columns)."""
    for gt, det in _COUNTS:
        if gt in row and det in row:
            return not row[gt] and not row[det]
    return False


def per_class_table(result: EvalResult, sort_by: str | None = None, all_classes: bool = True) -> str:
    """An aligned text table of ``result.per_class``, one row per category.

    Numbers are printed with 3 decimals; -1 (no ground truth) prints as ``-``;
    control characters in names are escaped (``a\\nb``).
    Rows keep category order unless ``sort_by`` names a column (numeric columns
    descending, missing values last; text columns ascending). An unknown column
    raises ``ValueError``. ``all_classes=False`` leaves out the categories with neither ground truth nor
    detections (LVIS's 1,203 categories, most absent from a subset), with a line saying how many.
    """
    if not result.per_class:
        return "(no per-class results)"
    columns, rows = _rows(result, sort_by)
    hidden = 0
    if not all_classes:
        kept = [r for r in rows if not is_empty_row(r)]
        hidden, rows = len(rows) - len(kept), kept
    if not rows:
        return f"(no category has ground truth or detections; {hidden} empty categories not shown)"

    def cell(v: Any) -> str:
        if is_missing(v):
            return "-"
        return f"{v:.3f}" if isinstance(v, float) else printable(str(v))  # a newline in a name breaks rows

    cells = [[cell(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(display_width(row[i]) for row in cells)) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r[c], (int, float)) or r[c] is None for r in rows) for c in columns]

    def fmt(values: list[str]) -> str:
        return "  ".join(pad(v, w, right=num) for v, w, num in zip(values, widths, numeric)).rstrip()

    lines = [fmt(columns), fmt(["-" * w for w in widths])]
    lines += [fmt(row) for row in cells]
    if hidden:
        note = "categories with no ground truth and no detections not shown; --all-classes lists them"
        lines.append(f"({hidden} {note})")
    return "\n".join(lines)


def per_class_csv(result: EvalResult, sort_by: str | None = None) -> str:
    """``result.per_class`` as CSV text: a header row, then one row per category.

    Same columns as :func:`per_class_table`. Floats are written with ``repr``
    (``float(cell)`` gives back the identical value); -1 and ``None`` ("no
    ground truth") are written as an empty cell. Lines end with ``\\r\\n`` as
    the csv module writes them. Empty string when there are no per-class rows.

    A text cell (a category name) that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return is written with a ``'`` before it, so that a spreadsheet shows it and does not run it as a
    formula (``=HYPERLINK(...)``); numbers are written as they are.
    """
    columns, rows = _rows(result, sort_by)
    if not rows:
        return ""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([_inert(c) for c in columns])
    for r in rows:
        writer.writerow([_cell(r[c]) for c in columns])
    return buf.getvalue()


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _inert(text: str) -> str:
    """A text cell a spreadsheet will not evaluate (OWASP's advice against CSV injection)."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def _cell(value):
    if is_missing(value):
        return ""
    if isinstance(value, float):
        return repr(value)
    return _inert(value) if isinstance(value, str) else value


def per_class_markdown(result: EvalResult, sort_by: str | None = None) -> str:
    """``result.per_class`` as a Markdown (GFM) table, one row per category.

    Same columns as :func:`per_class_table`; numbers with 3 decimals, -1 and
    ``None`` ("no ground truth") as ``–``; numeric columns right-aligned;
    ``|`` and control characters (``a\\nb``) in category names escaped. CSV keeps names raw
    (the csv module quotes them), but for a leading formula character (:func:`per_class_csv`).
    """
    columns, rows = _rows(result, sort_by)
    if not rows:
        return "_(no per-class results)_\n"
    numeric = [all(isinstance(r[c], (int, float)) or r[c] is None for r in rows) for c in columns]

    def cell(v: Any) -> str:
        if is_missing(v):
            return NO_VALUE_MARKDOWN
        if isinstance(v, float):
            return f"{v:.3f}"
        return printable(str(v)).replace("|", "\\|")  # one line per row, no column breaks

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if n else ":---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(cell(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def operating_point_columns(beta: float = 1.0) -> list[str]:
    """The column names :func:`with_operating_points` adds (``F1``, ``F1_P`` ... for ``beta=1``)."""
    f = f"F{float(beta):g}"
    return [f, f"{f}_P", f"{f}_R", f"{f}_TP", f"{f}_FP", f"{f}_thr"]


@renamed_keywords(iou="iou_thr")
def with_operating_points(
    result: EvalResult, beta: float = 1.0, iou_thr: float | None = None, area: str | None = None
) -> EvalResult:
    """A copy of ``result`` whose per-class rows carry their best-F-beta operating point.

    Six columns are appended to every row (names for ``beta=1``; ``F2`` ... for
    other betas, see :func:`operating_point_columns`): ``F1`` (the best F1 over
    score thresholds), ``F1_P`` and ``F1_R`` (precision and recall there),
    ``F1_TP`` and ``F1_FP`` (detections kept there), ``F1_thr`` (the score
    threshold: keep ``score >= F1_thr``). Read at IoU ``iou_thr`` (default 0.5 when
    evaluated, else the first threshold) and area range ``area`` (default
    ``"all"`` when evaluated, else the first range); see
    :mod:`deteval.analysis.operating_points` for the conventions. Undefined values (a
    class without ground truth: F and R; without detections: P and the
    threshold) are ``None``. Existing columns and values are unchanged;
    ``result`` itself is not modified.

    A result without outcomes, or without per-class rows, is returned as is.
    """
    if result.outcomes is None or not result.per_class:
        return result
    from deteval.analysis.operating_points import best_operating_points

    points = best_operating_points(result, iou_thr=iou_thr, area=area, beta=beta)
    by_id = {p.category_id: p for p in points.classes}
    names = operating_point_columns(points.beta)

    def value(v: float) -> float | None:
        return None if math.isnan(v) else float(v)

    rows = []
    for row in result.per_class:
        p = by_id.get(row["category_id"])
        extra = (
            dict.fromkeys(names)
            if p is None
            else dict(zip(names, (value(p.fbeta), value(p.precision), value(p.recall), p.tp, p.fp,
                                  value(p.threshold))))
        )  # fmt: skip
        rows.append({**row, **extra})
    return dataclasses.replace(result, per_class=rows)


def slices_table(slices: dict[str, dict[str, float]]) -> str:
    """Every stat per slice (``EvalResult.slices``): one row per slice, one column per stat."""
    if not slices:
        return ""
    names = list(next(iter(slices.values())))
    width = max(len(n) for n in [*slices, "slice"])
    cols = [max(len(n), 6) for n in names]
    head = f"{'slice':<{width}}  " + "  ".join(f"{n:>{c}}" for n, c in zip(names, cols))
    rows = [
        f"{name:<{width}}  " + "  ".join(f"{stats[n]:>{c}.3f}" for n, c in zip(names, cols))
        for name, stats in slices.items()
    ]
    return "\n".join([head, *rows])


def rows_json(table: RowTable) -> str:
    """A :class:`~deteval.result.RowTable` (``result.match_table``, ``result.image_table``) as JSON text: a
    top-level list of objects, one per line, as ``json.dumps`` writes each of ``table.records()`` (ids keep
    their type, null where a value is missing or a float is not finite, floats at ``repr`` precision)."""
    if not len(table):
        return "[]\n"
    heads = ["{" + json.dumps(k) + ": " if i == 0 else ", " + json.dumps(k) + ": " for i, k in enumerate(table.KEYS)]
    cells = [_column_text(table, k, head, _json_value, "null") for k, head in zip(table.KEYS, heads)]
    return "[\n" + "},\n".join(map("".join, zip(*cells))) + "}\n]\n"


def rows_csv(table: RowTable) -> str:
    """A :class:`~deteval.result.RowTable` as CSV text, as the csv module writes it: a header row, one row
    per record; a missing value (or a float that is not finite) is an empty cell, booleans ``true``/``false``,
    floats at ``repr`` precision; text ids that would start a spreadsheet formula get a leading ``'`` (as
    :func:`per_class_csv`)."""
    lines = [",".join(table.KEYS)]
    if len(table):
        cells = [_column_text(table, k, "," if i else "", _csv_value, "") for i, k in enumerate(table.KEYS)]
        lines += map("".join, zip(*cells))
    return "\r\n".join(lines) + "\r\n"


def _column_text(table: RowTable, key: str, head: str, text_of, missing: str) -> list[str]:
    """Each row's cell of one column as text, ``head`` before it: every distinct value formatted once
    (a column repeats its values across the IoU thresholds), then spread to the rows."""
    values = table.columns[key]
    lo, span = (int(values.min()), int(values.max()) - int(values.min())) if values.dtype.kind in "iu" else (0, -1)
    if 0 <= span < len(values) // 2:  # integers in a range the rows repeat: every value of the range, no sort
        distinct, inverse = np.arange(lo, lo + span + 1, dtype=np.int64), (values - lo).astype(np.int64)
    elif values.dtype == np.float64:  # by bit pattern: -0.0 keeps its sign
        _, first, inverse = np.unique(values.view(np.int64), return_index=True, return_inverse=True)
        distinct = values[first]
    else:
        distinct, inverse = np.unique(values, return_inverse=True)
    texts = np.array([head + text_of(v) if _finite(v) else head + missing for v in distinct.tolist()], dtype=object)
    cells = texts[inverse.reshape(-1)]
    if key in table.nulls:
        cells[table.nulls[key]] = head + missing
    return cells.tolist()


def _finite(v: Any) -> bool:
    return not isinstance(v, float) or math.isfinite(v)


_JSON_TEXT = json.JSONEncoder(ensure_ascii=False).encode  # one encoder: json.dumps with options builds one per call


def _json_value(v: Any) -> str:
    """``json.dumps(v)``'s text of a finite value, without its per-call cost for numbers (JSON writes
    ``repr`` of a float, ``str`` of an int)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, int):
        return str(v)
    return _JSON_TEXT(v)


def _csv_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        v = _inert(v)
        # the csv module's minimal quoting: a delimiter, a quote or a line break
        return '"' + v.replace('"', '""') + '"' if any(c in v for c in ',"\r\n') else v
    return str(v)

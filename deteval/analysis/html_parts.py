"""The HTML pieces of the report page (:mod:`deteval.analysis.html_report`): escaping, cell text, the sortable
table, a figure with its caption. Every value read from the inputs goes through :func:`esc`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval.analysis.report import NO_VALUE_MARKDOWN, is_missing
from deteval.analysis.svg import esc


def fmt(v: Any, digits: int = 3) -> str:
    if is_missing(v):
        return NO_VALUE_MARKDOWN
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    if isinstance(v, (list, tuple)):  # citypersons' ranges and recall points
        return "[" + ", ".join(fmt(x, digits) for x in v) + "]"
    return str(v)


def sort_key(v: Any) -> str:
    """A cell's ``data-v``, what the page sorts by: the full value, empty for "no value"."""
    if is_missing(v):
        return ""
    if isinstance(v, bool):
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def numeric_column(values: Sequence[Any]) -> bool:
    return all(
        v is None or (isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)) for v in values
    )


def html_table(
    columns: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    *,
    table_id: str,
    sortable: bool = True,
    row_class: Sequence[str] | None = None,
    digits: Mapping[str, int] | None = None,
    links: Mapping[str, Sequence[str]] | None = None,
    css: str = "",
) -> str:
    """An HTML table; with ``sortable``, each head is a button (sorted by the page's script, on ``data-v``)."""
    digits = digits or {}
    numeric = {c: numeric_column([r.get(c) for r in rows]) for c in columns}
    head = []
    for c in columns:
        kind = "num" if numeric[c] else "text"
        label = f'<button type="button">{esc(c)}</button>' if sortable else esc(c)
        head.append(f'<th data-type="{kind}" scope="col">{label}</th>')
    body = []
    for i, r in enumerate(rows):
        cls = f' class="{row_class[i]}"' if row_class and row_class[i] else ""
        cells = []
        for c in columns:
            v = r.get(c)
            text = esc(fmt(v, digits.get(c, 3)))
            if links and c in links:
                text = f'<a href="#{links[c][i]}">{text}</a>'
            num = ' class="num"' if numeric[c] else ""
            cells.append(f'<td{num} data-v="{esc(sort_key(v))}">{text}</td>')
        body.append(f'<tr data-i="{i}"{cls}>{"".join(cells)}</tr>')
    classes = " ".join(x for x in ("sortable" if sortable else "", css) if x)
    return (
        f'<table id="{table_id}" class="{classes}"><thead><tr>{"".join(head)}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"

"""Checks of an HTML page written by deteval's report: well-formed, self-contained, and its tables read back.

Written on the standard library's tokenizer (:class:`html.parser.HTMLParser`), so the quick tier needs no
HTML library: every element closed in order (void elements excepted), no attribute twice, ids unique; and
nothing that would load from elsewhere (no ``src`` but ``data:``, no ``href`` but a ``#`` fragment, no
``<link>``, ``<iframe>``, ``<object>``, ``<embed>``, ``<base>``, no ``url(...)`` or ``@import`` in CSS).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
FORBIDDEN_TAGS = {"link", "iframe", "object", "embed", "base", "frame", "frameset", "audio", "video", "img"}
LOADING_ATTRS = {"src", "srcset", "href", "xlink:href", "action", "formaction", "poster", "background", "data"}


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.ids: set[str] = set()
        self.counts: dict[str, int] = {}
        self.styles: list[str] = []
        self.scripts: list[str] = []
        self._in: str | None = None
        self.doctype = False

    def handle_decl(self, decl: str) -> None:
        self.doctype = self.doctype or decl.lower() == "doctype html"

    def _attrs(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = [k for k, _ in attrs]
        if len(names) != len(set(names)):
            self.problems.append(f"<{tag}> has an attribute twice: {names}")
        for k, v in attrs:
            v = v or ""
            if k == "id":
                if v in self.ids:
                    self.problems.append(f"id {v!r} twice")
                self.ids.add(v)
            if k in LOADING_ATTRS:
                ok = v.startswith("#") if k in ("href", "xlink:href") else v.startswith("data:")
                if not ok:
                    self.problems.append(f"<{tag} {k}={v!r}> loads from outside the page")
            if k.startswith("on"):
                self.problems.append(f"<{tag}> has an inline event handler {k}")
            if k == "style" and re.search(r"url\(|@import", v):
                self.problems.append(f"<{tag}> style loads something: {v!r}")
        if tag in FORBIDDEN_TAGS:
            self.problems.append(f"<{tag}> in a self-contained page")
        if tag == "script" and any(k == "src" for k in names):
            self.problems.append("<script src=...>")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        counted = "svg:title" if tag == "title" and "svg" in self.stack else tag  # an SVG tooltip, not the page's
        self.counts[counted] = self.counts.get(counted, 0) + 1
        self._attrs(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)
        if tag in ("style", "script"):
            self._in = tag

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.counts[tag] = self.counts.get(tag, 0) + 1
        self._attrs(tag, attrs)  # <polyline .../>: an SVG element closed where it opens

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.problems.append(f"</{tag}> closes a void element")
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "style":
            self.styles.append(data)
        elif self._in == "script":
            self.scripts.append(data)


def check_page(text: str) -> _Checker:
    """Every problem of ``text`` as an HTML page that must stand alone; raises AssertionError listing them."""
    c = _Checker()
    c.feed(text)
    c.close()
    if not c.doctype:
        c.problems.append("no <!DOCTYPE html>")
    if c.stack:
        c.problems.append(f"unclosed elements: {c.stack}")
    for tag in ("html", "head", "body", "title"):
        if c.counts.get(tag) != 1:
            c.problems.append(f"<{tag}> {c.counts.get(tag, 0)} times")
    for css in c.styles:
        if re.search(r"url\((?!\s*['\"]?data:)|@import", css):
            c.problems.append("CSS loads something")
    assert not c.problems, "\n".join(c.problems)
    return c


class _Tables(HTMLParser):
    """Each table by id: its heads and, per body row, each cell's ``data-v`` and text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, dict] = {}
        self._table: dict | None = None
        self._cell: list | None = None
        self._row: list | None = None
        self._head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = {"heads": [], "rows": [], "row_class": []}
            self.tables[a.get("id") or f"#{len(self.tables)}"] = self._table
        elif self._table is None:
            return
        elif tag == "thead":
            self._head = True
        elif tag == "tbody":
            self._head = False
        elif tag == "tr" and not self._head:
            self._row = []
            self._table["rows"].append(self._row)
            self._table["row_class"].append(a.get("class") or "")
        elif tag in ("td", "th"):
            self._cell = [a.get("data-v"), ""]

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None and self._table is not None:
            if self._head:
                self._table["heads"].append(self._cell[1])
            else:
                self._row.append(tuple(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[1] += data


def tables(text: str) -> dict[str, dict]:
    """``{table id: {"heads": [...], "rows": [[(data-v, text), ...], ...], "row_class": [...]}}``."""
    t = _Tables()
    t.feed(text)
    t.close()
    return t.tables

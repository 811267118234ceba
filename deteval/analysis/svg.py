"""Charts as inline SVG text, for the HTML report (:mod:`deteval.analysis.html_report`).

No plotting library: a chart is a few hundred lines of SVG written here, so the report needs nothing
beyond deteval's own dependencies (``--plot``'s PNGs need matplotlib). One :class:`Chart` is an axes
box with ticks and grid lines, data drawn in data coordinates (lines, rectangles, markers), and an
optional legend on the right. Values outside the axes' ranges are clipped to them; NaN breaks a line.
Text is escaped; the SVG has no ``xmlns`` (inline SVG in HTML needs none) and links to nothing.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

#: matplotlib's tab10: the report's colours, and the PNG plots' (deteval.analysis.plots)
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def esc(text: object) -> str:
    """``text`` as HTML/SVG text or an attribute value (quotes escaped too)."""
    return html.escape(str(text), quote=True)


def _num(v: float) -> str:
    """A pixel coordinate, a tenth of a pixel at most (keeps long curves small)."""
    s = f"{v:.1f}"
    return s[:-2] if s.endswith(".0") else s


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """About ``target`` round tick values (1, 2, 5 times a power of ten) covering ``[lo, hi]``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(target, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + 1e-9 * step:
        ticks.append(round(k * step, 12))
        k += 1
    return ticks


def _tick_label(v: float) -> str:
    return f"{v:g}" if abs(v) >= 1e-4 or v == 0 else f"{v:.1e}"


class Chart:
    """One chart: axes ``x_range`` x ``y_range``, drawn into ``width`` x ``height`` pixels (``width``: 660 plus
    the legend's by default).

    ``y_ticks`` (value, label) pairs replace the numeric y ticks (a bar chart's categories);
    ``legend_width`` reserves room on the right for the legend entries added with ``label=``.
    """

    MARGIN = (36, 18, 52, 62)  # top, right, bottom, left, around the axes box (room for title, labels)

    def __init__(
        self,
        title: str,
        x_label: str,
        y_label: str,
        x_range: tuple[float, float] = (0.0, 1.0),
        y_range: tuple[float, float] = (0.0, 1.0),
        width: int | None = None,
        height: int = 420,
        legend_width: int = 0,
        y_ticks: Sequence[tuple[float, str]] | None = None,
        left: int | None = None,
    ) -> None:
        self.title, self.x_label, self.y_label = title, x_label, y_label
        self.x_range, self.y_range = (float(x_range[0]), float(x_range[1])), (float(y_range[0]), float(y_range[1]))
        width = 660 + legend_width if width is None else width  # the axes keep their width beside a legend
        self.width, self.height, self.legend_width = width, height, legend_width
        self.y_ticks = y_ticks
        top, right, bottom, default_left = self.MARGIN
        self.box = (default_left if left is None else left, top, width - right - legend_width, height - bottom)
        self.items: list[str] = []
        self.legend: list[tuple[str, str, str]] = []  # (label, colour, kind: line / box / dot)

    # ---- coordinates
    def px(self, x: float) -> float:
        lo, hi = self.x_range
        x0, _, x1, _ = self.box
        return x0 + (min(max(x, lo), hi) - lo) / ((hi - lo) or 1.0) * (x1 - x0)

    def py(self, y: float) -> float:
        lo, hi = self.y_range
        _, y0, _, y1 = self.box
        return y1 - (min(max(y, lo), hi) - lo) / ((hi - lo) or 1.0) * (y1 - y0)

    # ---- drawing, in data coordinates
    def line(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        colour: str,
        width: float = 1.5,
        opacity: float = 1.0,
        label: str | None = None,
        tooltip: str | None = None,
        dash: str | None = None,
    ) -> None:
        """A polyline through the points; NaN (in x or y) breaks it into pieces."""
        pieces: list[list[str]] = [[]]
        for x, y in zip(xs, ys):
            x, y = float(x), float(y)
            if math.isnan(x) or math.isnan(y):
                pieces.append([])
                continue
            pieces[-1].append(f"{_num(self.px(x))},{_num(self.py(y))}")
        style = f'fill="none" stroke="{colour}" stroke-width="{width:g}"'
        style += f' stroke-opacity="{opacity:g}"' if opacity < 1 else ""
        style += f' stroke-dasharray="{dash}"' if dash else ""
        body = "".join(f'<polyline points="{" ".join(p)}"/>' for p in pieces if len(p) > 1)
        body += "".join(
            f'<circle cx="{p[0].split(",")[0]}" cy="{p[0].split(",")[1]}" r="1.5" fill="{colour}"/>'
            for p in pieces
            if len(p) == 1
        )
        tip = f"<title>{esc(tooltip)}</title>" if tooltip else ""
        self.items.append(f"<g {style}>{tip}{body}</g>")
        if label is not None:
            self.legend.append((label, colour, "line"))

    def rect(
        self,
        x0: float,
        y0: float,
        x1: float,
        y1: float,
        colour: str,
        opacity: float = 1.0,
        tooltip: str | None = None,
        outline: str | None = None,
    ) -> None:
        """A filled rectangle between two corners; ``colour="none"`` with ``outline`` draws its edge only."""
        a, b = sorted((self.px(x0), self.px(x1)))
        c, d = sorted((self.py(y0), self.py(y1)))
        extra = f' fill-opacity="{opacity:g}"' if opacity < 1 else ""
        extra += f' stroke="{outline}" stroke-width="1.5"' if outline else ""
        tip = f"<title>{esc(tooltip)}</title>" if tooltip else ""
        self.items.append(
            f'<rect x="{_num(a)}" y="{_num(c)}" width="{_num(b - a)}" height="{_num(d - c)}" fill="{colour}"{extra}>'
            f"{tip}</rect>"
        )

    def marker(self, x: float, y: float, colour: str, label: str | None = None, tooltip: str | None = None) -> None:
        tip = f"<title>{esc(tooltip)}</title>" if tooltip else ""
        self.items.append(
            f'<circle cx="{_num(self.px(x))}" cy="{_num(self.py(y))}" r="5" fill="{colour}">{tip}</circle>'
        )
        if label is not None:
            self.legend.append((label, colour, "dot"))

    def note(self, x: float, y: float, text: str, colour: str = "#333", anchor: str = "start") -> None:
        """Text at a data point (offset a little up and right)."""
        self.items.append(
            f'<text x="{_num(self.px(x) + 8)}" y="{_num(self.py(y) - 8)}" fill="{colour}" font-size="12" '
            f'text-anchor="{anchor}">{esc(text)}</text>'
        )

    # ---- the SVG
    def svg(self) -> str:
        x0, y0, x1, y1 = self.box
        out = [
            f'<svg class="chart" viewBox="0 0 {self.width} {self.height}" width="{self.width}" '
            f'height="{self.height}" role="img" aria-label="{esc(self.title)}" font-family="sans-serif">',
            f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#fff"/>',
            f'<text x="{_num((x0 + x1) / 2)}" y="20" text-anchor="middle" font-size="14" font-weight="bold">'
            f"{esc(self.title)}</text>",
        ]
        grid = []
        for v in nice_ticks(*self.x_range):
            x = _num(self.px(v))
            grid.append(f'<line x1="{x}" y1="{y0}" x2="{x}" y2="{y1}" stroke="#e4e4e4"/>')
            grid.append(f'<text x="{x}" y="{y1 + 16}" text-anchor="middle" font-size="11">{_tick_label(v)}</text>')
        y_ticks = self.y_ticks if self.y_ticks is not None else [(v, _tick_label(v)) for v in nice_ticks(*self.y_range)]
        for v, text in y_ticks:
            y = _num(self.py(v))
            if self.y_ticks is None:
                grid.append(f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="#e4e4e4"/>')
            grid.append(
                f'<text x="{x0 - 6}" y="{y}" text-anchor="end" dominant-baseline="middle" font-size="11">'
                f"{esc(text)}</text>"
            )
        out += grid
        out.append(f"<g>{''.join(self.items)}</g>")
        out.append(f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" fill="none" stroke="#444"/>')
        out.append(
            f'<text x="{_num((x0 + x1) / 2)}" y="{self.height - 12}" text-anchor="middle" font-size="12">'
            f"{esc(self.x_label)}</text>"
        )
        out.append(
            f'<text transform="translate(16 {_num((y0 + y1) / 2)}) rotate(-90)" text-anchor="middle" '
            f'font-size="12">{esc(self.y_label)}</text>'
        )
        if self.legend:
            lx, ly = x1 + 14, y0 + 4
            for i, (label, colour, kind) in enumerate(self.legend):
                y = ly + 16 * i
                if kind == "line":
                    out.append(f'<line x1="{lx}" y1="{y}" x2="{lx + 20}" y2="{y}" stroke="{colour}" stroke-width="3"/>')
                elif kind == "box":
                    out.append(f'<rect x="{lx + 4}" y="{y - 5}" width="12" height="10" fill="{colour}"/>')
                else:
                    out.append(f'<circle cx="{lx + 10}" cy="{y}" r="5" fill="{colour}"/>')
                out.append(f'<text x="{lx + 26}" y="{y}" dominant-baseline="middle" font-size="11">{esc(label)}</text>')
        out.append("</svg>")
        return "\n".join(out)

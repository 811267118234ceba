"""One self-contained HTML page of an evaluation: ``deteval --report DIR`` writes it as ``DIR/report.html``.

The page holds, in this order: the summary (stats and the protocol's printed lines), the per-class table
(sorted by a click on a column's head), PR curves and F-beta against the score threshold, TIDE and
calibration when they were computed, and the worst images by per-image F1 with their match rows.

Self-contained: CSS and JavaScript are inline, the charts are inline SVG written by
:mod:`deteval.analysis.svg` (no matplotlib: the report needs no optional extra), and nothing is
fetched: the page's Content-Security-Policy forbids every load but inline styles and scripts, so it
opens from ``file://`` on a machine without network as it does anywhere. Every value read from the
inputs (category names, image ids) is HTML-escaped.

The worst-images section reads two lists of rows the caller passes (the per-image table and the
per-detection matches, with exactly the keys :data:`PER_IMAGE_KEYS` and :data:`MATCH_KEYS`); without
the per-image rows it says that none were given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from deteval.analysis.html_parts import esc, figure, html_table
from deteval.analysis.plots import TOP_CLASSES, class_aps  # TOP_CLASSES: in colour on the PR chart, as --plot's
from deteval.analysis.report import is_empty_row
from deteval.analysis.svg import COLOURS, Chart
from deteval.result import CocoResult, EvalResult, ImageTable, MatchTable

REPORT_FILE = "report.html"
#: the per-image rows' keys (``result.per_image``): GT not ignored, evaluated detections, TP / FP / FN at IoU .50
PER_IMAGE_KEYS = ImageTable.KEYS
#: the match rows' keys (``result.matches``): one row per evaluated detection and per unmatched GT, per IoU threshold
MATCH_KEYS = MatchTable.KEYS
#: the IoU threshold of the per-image counts, and so of the match rows shown beside them
PER_IMAGE_IOU = 0.5
WORST_IMAGES = 25
MATCH_ROWS_PER_IMAGE = 300  # an image's match rows shown at most (one image can hold thousands)
CURVE_POINTS = 200  # the most points of one class's F-beta curve drawn (the pooled curve: 5x)
MAX_BINS_DRAWN = 1000  # calibration bins with detections beyond which the reliability chart is left out


# ---------------------------------------------------------------- sections


def _summary(result: EvalResult) -> str:
    stats = [{"stat": k, "value": v} for k, v in result.stats.items()]
    parts = ['<section id="summary"><h2>Summary</h2>']
    if stats:
        parts.append(html_table(["stat", "value"], stats, table_id="stats", sortable=False, digits={"value": 4}))
    if result.summary_lines:
        parts.append(f"<pre>{esc(result.summary())}</pre>")
    if result.slices:
        names = list(next(iter(result.slices.values())))
        rows = [{"slice": k, **v} for k, v in result.slices.items()]
        parts.append("<h3>Slices</h3>" + html_table(["slice", *names], rows, table_id="slices"))
    parts.append("</section>")
    return "".join(parts)


def _per_class(result: EvalResult, note: str) -> str:
    rows = result.per_class
    if not rows:
        return '<section id="classes"><h2>Per class</h2><p>This result has no per-class rows.</p></section>'
    empty = ["empty" if is_empty_row(r) else "" for r in rows]
    n_empty = sum(1 for e in empty if e)
    toggle = (
        f'<p><label><input type="checkbox" data-toggle="per-class"> show the {n_empty} categories with neither '
        "ground truth nor detections</label></p>"
        if n_empty
        else ""
    )
    table = html_table(list(rows[0]), rows, table_id="per-class", row_class=empty, css="hide-empty" if n_empty else "")
    shown = len(rows) - n_empty
    what = f"{shown} categories with ground truth or detections" if "category_id" in rows[0] else f"{shown} rows"
    return (
        f'<section id="classes"><h2>Per class</h2><p>{what}. Click a column\'s head to sort by it (numbers high to '
        f"low first, names A to Z; a second click reverses; no value always last). {esc(note)}</p>{toggle}"
        f'<div class="scroll">{table}</div></section>'
    )


def _short(name: str, n: int = 26) -> str:
    return name if len(name) <= n else name[: n - 1] + "\u2026"


def _pr_chart_coco(result: CocoResult, iou_thr: float, area: str) -> str:
    from deteval.analysis.curves import pr_curves

    curves = pr_curves(result, iou_thr=iou_thr, area=area)
    rec = curves["recall"]
    classes = [c for c in curves["classes"] if c["has_gt"]]
    num_gt = {r["category_id"]: r.get("num_gt") or 0 for r in result.per_class}
    ranked = sorted(classes, key=lambda c: (-num_gt.get(c["category_id"], 0), -c["AP"]))
    where = f"IoU={curves['iou']:.2f}, area={curves['area']}, maxDets={curves['max_dets']}"
    chart = Chart(f"Precision-recall ({where})", "recall", "interpolated precision", legend_width=230)
    for c in classes:
        chart.line(rec, c["precision"], "#999", width=0.8, opacity=0.35, tooltip=f"{c['name']}: AP={c['AP']:.3f}")
    for i, c in enumerate(ranked[:TOP_CLASSES]):
        chart.line(
            rec,
            c["precision"],
            COLOURS[i % len(COLOURS)],
            label=f"{_short(c['name'])} AP={c['AP']:.3f}",
            tooltip=f"{c['name']} ({num_gt.get(c['category_id'], 0)} gt): AP={c['AP']:.3f}",
        )
    mean = curves["mean"]
    has = mean["num_classes"] > 0
    chart.line(
        rec[has],
        mean["precision"][has],
        "#000",
        width=2.8,
        label=f"mean AP={mean['AP']:.3f}",
        tooltip=f"mean over {len(classes)} classes: AP={mean['AP']:.3f}",
    )
    caption = (
        f"pycocotools' 101-point interpolated precision of every class with ground truth (grey; hover for its "
        f"name), the {min(TOP_CLASSES, len(ranked))} classes with the most ground truth in colour, and the mean "
        "over classes (black), whose mean over the recall points is the AP at this IoU."
    )
    return figure(chart.svg(), caption)


def _pr_chart_outcomes(result: EvalResult, sc: Any) -> str:
    grid = np.linspace(0.0, 1.0, 101)
    aps = class_aps(result, sc.iou)
    classes = [c for c in sc.classes if c.npos > 0]
    ranked = sorted(classes, key=lambda c: -c.npos)
    chart = Chart(
        f"Precision-recall (IoU={sc.iou:.2f}, area={sc.area})", "recall", "interpolated precision", legend_width=230
    )
    curves = {id(c): c.interpolated_precision(grid) for c in classes}

    def ap_text(c: Any) -> str:
        ap = aps.get(c.category_id)
        return f"AP={ap:.3f}" if ap is not None else "AP n/a"

    for c in classes:
        chart.line(grid, curves[id(c)], "#999", width=0.8, opacity=0.35, tooltip=f"{c.name}: {ap_text(c)}")
    for i, c in enumerate(ranked[:TOP_CLASSES]):
        chart.line(
            grid,
            curves[id(c)],
            COLOURS[i % len(COLOURS)],
            label=f"{_short(c.name)} {ap_text(c)}",
            tooltip=f"{c.name} ({c.npos} gt): {ap_text(c)}",
        )
    if classes:
        mean = np.mean(np.stack([curves[id(c)] for c in classes]), axis=0)
        chart.line(grid, mean, "#000", width=2.8, label="mean over classes")
    caption = (
        "Each class's interpolated precision (the best precision at any recall at least as high) read at 101 "
        "recall points from the ranked detections; the legend gives the protocol's own AP."
    )
    return figure(chart.svg(), caption)


def _f_chart(sc: Any) -> str:
    from deteval.analysis.curve_sampling import curve_points

    fname = f"F{sc.beta:g}"
    m = sc.micro
    lo = float(min(m.thresholds.min(), 0.0)) if len(m.thresholds) else 0.0
    hi = float(max(m.thresholds.max(), 1.0)) if len(m.thresholds) else 1.0
    chart = Chart(
        f"{fname} against the score threshold (IoU={sc.iou:.2f}, area={sc.area})",
        "score threshold (detections with score >= threshold kept)",
        fname,
        x_range=(lo, hi),
        legend_width=230,
    )
    for c in sc.classes:
        if c.npos > 0 and len(c.thresholds):
            keep = curve_points(c.recall, c._best_index(), CURVE_POINTS)
            sel = slice(None) if keep is None else keep
            chart.line(c.thresholds[sel], c.fbeta[sel], "#999", width=0.7, opacity=0.35, tooltip=c.name)
    if len(m.thresholds):
        best_i = m._best_index()
        keep = curve_points(m.recall, best_i, 5 * CURVE_POINTS)
        sel = slice(None) if keep is None else keep
        chart.line(m.thresholds[sel], m.fbeta[sel], "#000", width=2.6, label=f"all classes (micro {fname})")
        best = m.best()
        if not math.isnan(best.fbeta):
            text = f"best {fname}={best.fbeta:.3f} at {best.threshold:.3f}: P={best.precision:.3f} R={best.recall:.3f}"
            chart.marker(best.threshold, best.fbeta, "#d62728", label="best point", tooltip=text)
            chart.note(
                best.threshold,
                best.fbeta,
                text,
                colour="#d62728",
                anchor="end" if best.threshold > (lo + hi) / 2 else "start",
            )
    caption = (
        f"{fname} of each class with ground truth (grey) and of all classes pooled (black) when only the "
        "detections scoring at least the threshold are kept."
    )
    return figure(chart.svg(), caption)


def _curves(result: EvalResult, iou_thr: float | None, area: str, beta: float) -> str:
    from deteval.analysis.operating_points import default_iou, score_curves

    parts = ['<section id="curves"><h2>Curves</h2>']
    has_arrays = isinstance(result, CocoResult)
    if not has_arrays and result.outcomes is None:
        parts.append(
            f"<p>The {esc(result.protocol)} result has neither COCO's arrays nor per-detection outcomes: "
            "no curves.</p></section>"
        )
        return "".join(parts)
    iou_thr = default_iou(result) if iou_thr is None else iou_thr
    sc = score_curves(result, iou_thr=iou_thr, area=area, beta=beta) if result.outcomes is not None else None
    parts.append(_pr_chart_coco(result, iou_thr, area) if has_arrays else _pr_chart_outcomes(result, sc))
    if sc is not None:
        parts.append(_f_chart(sc))
    parts.append("</section>")
    return "".join(parts)


def _tide(tide: Any) -> str:
    from deteval.analysis.tide.result import ERROR_TYPES, SPECIAL_TYPES

    kinds = [*ERROR_TYPES, *SPECIAL_TYPES]
    values = [tide.dap[t] for t in ERROR_TYPES] + [tide.special_dap[t] for t in SPECIAL_TYPES]
    top = max([*values, 1e-9])
    n = len(kinds)
    chart = Chart(
        "TIDE: dAP of fixing each error type",
        "dAP (AP points, 0-100)",
        "",
        x_range=(0.0, top * 1.1),
        y_range=(-0.5, n - 0.5),
        height=60 + 34 * n + 40,
        y_ticks=[(n - 1 - i, k) for i, k in enumerate(kinds)],
        left=90,
    )
    for i, (k, v) in enumerate(zip(kinds, values)):
        y = n - 1 - i
        colour = COLOURS[i % len(COLOURS)] if i < len(ERROR_TYPES) else "#7f7f7f"
        chart.rect(0.0, y - 0.35, v, y + 0.35, colour, tooltip=f"{k}: dAP {v:.2f}")
    rows = [{"error": k, "dAP": v, "count": tide.counts.get(k)} for k, v in zip(kinds, values)]
    head = f"{tide.mode} AP @ {int(round(tide.pos_thr * 100))}: {tide.ap:.2f}"
    if tide.ap_range is not None:
        head += f"; AP over the thresholds asked: {tide.ap_range:.2f}"
    caption = (
        "Cls: right box, wrong class; Loc: right class, poor box; Both; Dupe: a duplicate; Bkg: background; "
        "Miss: missed ground truth; FalsePos / FalseNeg: every false positive / negative fixed (tidecv's "
        "definitions)."
    )
    return (
        f'<section id="tide"><h2>TIDE errors</h2><p>{esc(head)} (tidecv 1.0.1\'s breakdown; AP in percent)</p>'
        f"{figure(chart.svg(), caption)}"
        f"{html_table(['error', 'dAP', 'count'], rows, table_id='tide-table', digits={'dAP': 2})}</section>"
    )


def _calibration(cal: Any) -> str:
    full = np.flatnonzero(np.asarray(cal.count) > 0)
    head = (
        f"ECE {cal.ece:.4f}, MCE {cal.mce:.4f} over {cal.num_detections:,} detections in {cal.n_bins} bins "
        f"(a detection is correct when it matches at IoU {cal.iou_thr:g}; hotcoco 1.3.0's calibration)."
    )
    parts = [f'<section id="calibration"><h2>Calibration</h2><p>{esc(head)}</p>']
    if len(full) > MAX_BINS_DRAWN:
        parts.append(f"<p>{len(full):,} bins hold detections: too many to draw; no reliability diagram.</p>")
    else:
        chart = Chart(f"Reliability (IoU {cal.iou_thr:g})", "score", "fraction correct", legend_width=190)
        chart.line([0, 1], [0, 1], "#888", width=1, dash="5 4", label="perfectly calibrated")
        for j in full:
            lo, hi = float(cal.bin_lower[j]), float(cal.bin_upper[j])
            acc, conf, n = float(cal.avg_accuracy[j]), float(cal.avg_confidence[j]), int(cal.count[j])
            tip = f"[{lo:.3f}, {hi:.3f}): {n:,} detections, mean score {conf:.3f}, fraction correct {acc:.3f}"
            chart.rect(lo, 0.0, hi, acc, COLOURS[0], opacity=0.85, tooltip=tip)
            chart.rect(lo, min(acc, conf), hi, max(acc, conf), "none", outline=COLOURS[3], tooltip=tip)
        chart.legend += [("fraction correct", COLOURS[0], "box"), ("gap to the mean score", COLOURS[3], "box")]
        parts.append(
            figure(
                chart.svg(),
                "Per score bin: the fraction of correct detections (bars) against the "
                "bin's mean score (the red outline spans the gap); hover a bar for its counts.",
            )
        )
        bins = [
            {
                "bin": f"[{cal.bin_lower[j]:.3f}, {cal.bin_upper[j]:.3f})",
                "detections": int(cal.count[j]),
                "mean score": float(cal.avg_confidence[j]),
                "fraction correct": float(cal.avg_accuracy[j]),
            }
            for j in full
        ]
        parts.append(html_table(["bin", "detections", "mean score", "fraction correct"], bins, table_id="cal-bins"))
    if cal.per_category:
        worst = sorted(cal.per_category.items(), key=lambda kv: -kv[1])
        rows = [{"category": k, "ECE": v} for k, v in worst]
        parts.append(
            "<h3>ECE per category</h3>"
            + html_table(["category", "ECE"], rows, table_id="cal-classes", digits={"ECE": 4})
        )
    parts.append("</section>")
    return "".join(parts)


# ---------------------------------------------------------------- worst images


def check_rows(rows: Sequence[Mapping[str, Any]], keys: Sequence[str], what: str) -> None:
    """Each row a mapping holding ``keys``: ``ValueError`` naming the first that is not."""
    get = itemgetter(*keys)
    try:
        for r in rows:  # a million rows: one C call each, the message only when one fails
            get(r)
        return
    except (KeyError, TypeError, IndexError):
        pass
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping):
            raise ValueError(f"{what} row {i} is a {type(r).__name__}, not a dict")
        missing = [k for k in keys if k not in r]
        if missing:
            raise ValueError(f"{what} row {i} has no {', '.join(map(repr, missing))} (a row holds {', '.join(keys)})")


def image_f1(row: Mapping[str, Any]) -> float | None:
    """An image's F1 = 2 TP / (2 TP + FP + FN); None when it has nothing to find and nothing wrong."""
    tp, fp, fn = int(row["tp"]), int(row["fp"]), int(row["fn"])
    den = 2 * tp + fp + fn
    return 2 * tp / den if den else None


def worst_images(per_image: Sequence[Mapping[str, Any]], n: int = WORST_IMAGES) -> list[dict[str, Any]]:
    """The ``n`` images of lowest F1 (:func:`image_f1`), each row with ``F1`` added.

    Ties: more errors (FP + FN) first, then the rows' order. Images without an F1 are left out.
    """
    scored = [(f, r) for r in per_image if (f := image_f1(r)) is not None]
    order = sorted(range(len(scored)), key=lambda i: (scored[i][0], -(scored[i][1]["fp"] + scored[i][1]["fn"]), i))
    return [{**{k: scored[i][1][k] for k in PER_IMAGE_KEYS}, "F1": scored[i][0]} for i in order[:n]]


def _outcome(row: Mapping[str, Any]) -> str:
    if row["det_index"] is None:  # a ground truth no detection took
        return "missed, ignored" if row["ignored"] else "FN"
    if row["ignored"]:
        return "ignored"
    return "TP" if row["gt_id"] is not None else "FP"


def _threshold_shown(matches: Sequence[Mapping[str, Any]]) -> float | None:
    """The per-image counts' IoU (.50) when the rows hold it, else their lowest threshold."""
    thrs = {float(t) for t in {r["iou_thr"] for r in matches}}
    hit = [t for t in thrs if abs(t - PER_IMAGE_IOU) < 1e-9]
    return hit[0] if hit else (min(thrs) if thrs else None)


def _worst(
    per_image: Sequence[Mapping[str, Any]] | None,
    matches: Sequence[Mapping[str, Any]] | None,
    names: Mapping[Any, str],
    n: int,
) -> str:
    parts = ['<section id="worst"><h2>Worst images</h2>']
    if per_image is None:
        parts.append(
            "<p>No per-image results were given, so the worst images cannot be shown (the per-image "
            "table: <code>result.per_image</code>, <code>--per-image</code>).</p></section>"
        )
        return "".join(parts)
    check_rows(per_image, PER_IMAGE_KEYS, "per-image")
    worst = worst_images(per_image, n)
    undefined = sum(1 for r in per_image if image_f1(r) is None)
    intro = (
        f"The {len(worst)} of {len(per_image):,} images with the lowest F1 = 2 TP / (2 TP + FP + FN) at IoU .50 "
        "(more errors first among equals)"
    )
    intro += f"; {undefined:,} images with nothing to find and no false positive have no F1." if undefined else "."
    parts.append(f"<p>{esc(intro)}</p>")
    anchors = [f"image-{i}" for i in range(len(worst))]
    parts.append(
        html_table(["image_id", *PER_IMAGE_KEYS[1:], "F1"], worst, table_id="worst-images", links={"image_id": anchors})
    )
    if matches is None:
        parts.append(
            "<p>No match rows were given (<code>result.matches</code>, <code>--matches</code>): the "
            "detections and ground truth of each image are not listed.</p></section>"
        )
        return "".join(parts)
    check_rows(matches, MATCH_KEYS, "match")
    thr = _threshold_shown(matches)
    wanted = {r["image_id"]: i for i, r in enumerate(worst)}
    by_image: dict[int, list[Mapping[str, Any]]] = {i: [] for i in range(len(worst))}
    for r in matches:
        i = wanted.get(r["image_id"])
        if i is not None and abs(float(r["iou_thr"]) - thr) < 1e-9:
            by_image[i].append(r)
    parts.append(f"<h3>Their detections and ground truth at IoU {thr:.2f}</h3>" if thr is not None else "")
    columns = ["outcome", "category", "det_index", "score", "gt_id", "iou", "ignored"]
    for i, r in enumerate(worst):
        rows = by_image[i]
        # detections by score (high first), then the ground truth no detection took
        rows.sort(key=lambda m: (m["det_index"] is None, -(m["score"] if m["score"] is not None else -math.inf)))
        shown = [
            {
                "outcome": _outcome(m),
                "category": names.get(m["category_id"], str(m["category_id"])),
                **{k: m[k] for k in ("det_index", "score", "gt_id", "iou", "ignored")},
            }
            for m in rows[:MATCH_ROWS_PER_IMAGE]
        ]
        more = len(rows) - len(shown)
        summary = f"image {r['image_id']}: F1 {r['F1']:.3f}, {r['tp']} TP, {r['fp']} FP, {r['fn']} FN"
        body = (
            html_table(columns, shown, table_id=f"matches-{i}", digits={"score": 4, "iou": 4})
            if shown
            else "<p>No match rows for this image at this threshold.</p>"
        )
        if more:
            body += f"<p>{more:,} more rows not shown.</p>"
        parts.append(f'<details id="{anchors[i]}"><summary>{esc(summary)}</summary>{body}</details>')
    parts.append("</section>")
    return "".join(parts)


# ---------------------------------------------------------------- the page

_CSS = """
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 40px;color:#222}
header{border-bottom:1px solid #ccc;margin-bottom:8px}
nav a{margin-right:14px}
h2{border-bottom:1px solid #ddd;padding-top:12px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
thead th{background:#f3f3f3;position:sticky;top:0}
th button{font:inherit;font-weight:bold;background:none;border:0;padding:0;cursor:pointer}
th[aria-sort=ascending] button::after{content:" \\25B2"}
th[aria-sort=descending] button::after{content:" \\25BC"}
table.hide-empty tr.empty{display:none}
tbody tr:nth-child(even){background:#fafafa}
.scroll{max-height:75vh;overflow:auto}
pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px}
figure{margin:12px 0}
figcaption{font-size:13px;color:#555;max-width:720px}
svg.chart{max-width:100%;height:auto;display:block}
details{margin:6px 0}
summary{cursor:pointer}
"""

# sorting: numbers high to low first, text A to Z; a second click reverses; no value last; ties keep the
# rows' first order (data-i). A link to a worst image opens its rows; the checkbox shows the empty categories.
_JS = """
(function () {
  "use strict";
  function value(row, col) { return row.cells[col].getAttribute("data-v"); }
  function sortBy(table, col, th) {
    var numeric = th.getAttribute("data-type") === "num";
    var first = numeric ? "descending" : "ascending";
    var order = th.getAttribute("aria-sort") === first ? (numeric ? "ascending" : "descending") : first;
    var sign = order === "ascending" ? 1 : -1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a, col), y = value(b, col);
      var tie = Number(a.getAttribute("data-i")) - Number(b.getAttribute("data-i"));
      if (x === "" || y === "") { return x === y ? tie : (x === "" ? 1 : -1); }
      var c = numeric ? Number(x) - Number(y) : (x < y ? -1 : (x > y ? 1 : 0));
      return c !== 0 ? sign * c : tie;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", order);
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      var button = th.querySelector("button");
      if (button) { button.addEventListener("click", function () { sortBy(table, col, th); }); }
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("a[href^='#image-']"), function (link) {
    link.addEventListener("click", function () {
      var target = document.getElementById(link.getAttribute("href").slice(1));
      if (target) { target.open = true; }
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("input[data-toggle]"), function (box) {
    var table = document.getElementById(box.getAttribute("data-toggle"));
    box.addEventListener("change", function () { table.classList.toggle("hide-empty", !box.checked); });
  });
})();
"""

# nothing but the page's own inline style and script: no request leaves it, whatever a name holds
_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def html_report(
    result: EvalResult,
    *,
    tide: Any = None,
    calibration: Any = None,
    per_image: Sequence[Mapping[str, Any]] | None = None,
    matches: Sequence[Mapping[str, Any]] | None = None,
    iou_thr: float | None = None,
    area: str | None = None,
    beta: float = 1.0,
    worst: int = WORST_IMAGES,
    title: str | None = None,
    sources: Sequence[tuple[str, str]] = (),
) -> str:
    """The report's HTML text (see the module doc).

    ``tide`` (a :class:`~deteval.analysis.tide.result.TideResult`) and ``calibration`` (a
    :class:`~deteval.analysis.calibration.Calibration`) add their sections when given. ``per_image``
    and ``matches``: the per-image and per-match rows (keys :data:`PER_IMAGE_KEYS`, :data:`MATCH_KEYS`),
    for the ``worst`` images of lowest F1; None says they were not computed. ``iou_thr`` and ``area``:
    the curves' and operating points' slice (default IoU .50, area ``all``); ``beta``: the F-beta
    weight. ``sources``: (what, path) pairs shown under the title (the command line's inputs).

    Raises ``ValueError`` for an IoU or area that was not evaluated, or rows lacking a key.
    """
    from deteval.analysis.operating_points import default_iou
    from deteval.analysis.report import operating_point_columns, with_operating_points
    from deteval.version import __version__

    area = area or "all"
    note = ""
    if result.outcomes is not None and result.per_class:
        if operating_point_columns(beta)[0] not in result.per_class[0]:
            result = with_operating_points(result, beta=beta, iou_thr=iou_thr, area=area)
        at = default_iou(result) if iou_thr is None else iou_thr
        note = (
            f"F{beta:g}_* columns: each class's best-F{beta:g} operating point at IoU {at:.2f}, area {area} "
            f"(keep score >= F{beta:g}_thr)."
        )
    title = title or f"deteval report: {result.protocol} {result.iou_type}"
    names = {r["category_id"]: str(r.get("name", r["category_id"])) for r in result.per_class if "category_id" in r}
    sections = [_summary(result), _per_class(result, note), _curves(result, iou_thr, area, beta)]
    nav = [("summary", "Summary"), ("classes", "Per class"), ("curves", "Curves")]
    if tide is not None:
        sections.append(_tide(tide))
        nav.append(("tide", "TIDE"))
    if calibration is not None:
        sections.append(_calibration(calibration))
        nav.append(("calibration", "Calibration"))
    sections.append(_worst(per_image, matches, names, worst))
    nav.append(("worst", "Worst images"))
    counted = f"{len(names):,} categories; " if names else ""
    src = "".join(f"<li>{esc(what)}: <code>{esc(path)}</code></li>" for what, path in sources)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title>",
            f"<style>{_CSS}</style>",
            "</head>",
            "<body>",
            f"<header><h1>{esc(title)}</h1>",
            f"<p>protocol <b>{esc(result.protocol)}</b>, iou type <b>{esc(result.iou_type)}</b>, {counted}"
            f"deteval {esc(__version__)}</p>",
            f"<ul>{src}</ul>" if src else "",
            "<nav>" + "".join(f'<a href="#{k}">{v}</a>' for k, v in nav) + "</nav></header>",
            *sections,
            f"<script>{_JS}</script>",
            "</body>",
            "</html>",
            "",
        ]
    )


def write_report(result: EvalResult, out_dir: str | Path, **kwargs: Any) -> Path:
    """Write :func:`html_report` to ``out_dir/report.html`` (``out_dir`` created if needed); returns the path.

    A lone surrogate in a name (valid JSON, not UTF-8) is written as its ``\\u`` escape.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / REPORT_FILE
    path.write_text(html_report(result, **kwargs), encoding="utf-8", errors="backslashreplace")
    return path

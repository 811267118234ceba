"""Plots of an evaluation (optional extra ``plot``: matplotlib).

PR curves and per-class AP from COCO's arrays (:func:`plot_pr_curves`); the raw and
interpolated PR curve per class (:func:`plot_pr_per_class`) and F-beta against the
score threshold (:func:`plot_f_vs_confidence`) from the per-detection outcomes, for
every protocol that records them; the confusion matrix (:func:`plot_confusion_matrix`).

matplotlib is imported only when a plot is drawn, and only through its
object-oriented API with the Agg canvas: no ``pyplot``, no change to the
process-wide backend, no window.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from deteval.analysis.curves import pr_curves
from deteval.analysis.svg import COLOURS as _COLOURS
from deteval.errors import renamed_keywords
from deteval.result import CocoResult, EvalResult, VocResult

#: classes drawn in colour, with their AP in the legend, on the PR plot
TOP_CLASSES = 8

# matplotlib's tab10, fixed here so the plots look the same whatever the style in use


def _matplotlib() -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # tests/cli/test_report_exports.py hides matplotlib to exercise this
        raise ImportError("plotting needs matplotlib: pip install 'deteval[plot]' (or pip install matplotlib)") from exc
    return Figure, FigureCanvasAgg


def _save(fig: Any, canvas_cls: Any, path: Path) -> None:
    canvas_cls(fig)
    fig.savefig(path, dpi=110)


@renamed_keywords(iou="iou_thr")
def plot_pr_curves(
    result: EvalResult, out_dir: str | Path, iou_thr: float = 0.5, area: str = "all", max_dets: int | None = None
) -> list[Path]:
    """Write ``pr_curves.png`` and ``per_class_ap.png`` into ``out_dir`` (created if needed).

    ``pr_curves.png``: the interpolated PR curve (pycocotools' 101-point envelope)
    of every class with ground truth (faint grey), the :data:`TOP_CLASSES` classes
    with the most ground truth in colour with their AP at ``iou_thr`` in the legend
    (the most frequent classes, since on small sets many classes tie at AP 1),
    and the class-averaged curve (bold black) with its AP.

    ``per_class_ap.png``: a horizontal bar per class with ground truth: a light
    bar for AP at ``iou_thr`` and, when the per-class rows carry COCO's headline
    ``AP`` (IoU .50:.95), a dark bar for it; sorted by the dark value, best on top.

    Returns the two paths. Raises ``ImportError`` without matplotlib and
    ``ValueError`` for a result without COCO arrays or an IoU/area/cap not evaluated.
    """
    Figure, Canvas = _matplotlib()
    curves = pr_curves(result, iou_thr=iou_thr, area=area, max_dets=max_dets)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    where = f"IoU={curves['iou']:.2f}, area={curves['area']}, maxDets={curves['max_dets']}"
    rec = curves["recall"]
    classes = [c for c in curves["classes"] if c["has_gt"]]
    num_gt = {r["category_id"]: r.get("num_gt") or 0 for r in result.per_class}
    ranked = sorted(classes, key=lambda c: (-num_gt.get(c["category_id"], 0), -c["AP"]))

    # --- PR curves ---
    fig = Figure(figsize=(10.5, 6.5))
    ax = fig.add_subplot()
    for c in classes:
        ax.plot(rec, c["precision"], color="0.6", alpha=0.35, linewidth=0.8)
    if classes:
        ax.plot([], [], color="0.6", alpha=0.6, linewidth=0.8, label=f"each class ({len(classes)})")
    cmap = _COLOURS
    for i, c in enumerate(ranked[:TOP_CLASSES]):
        gt = num_gt.get(c["category_id"])
        label = f"{c['name']} ({gt} gt)  AP={c['AP']:.3f}" if gt else f"{c['name']}  AP={c['AP']:.3f}"
        ax.plot(rec, c["precision"], color=cmap[i % len(cmap)], linewidth=1.5, label=label)
    mean = curves["mean"]
    ax.plot(
        rec[mean["num_classes"] > 0],
        mean["precision"][mean["num_classes"] > 0],
        color="black",
        linewidth=2.8,
        label=f"mean over classes  AP={mean['AP']:.3f}",
    )
    ax.set_xlim(0, 1.0)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("recall")
    ax.set_ylabel("interpolated precision")
    ax.set_title(f"Precision-recall ({where})")
    ax.grid(True, alpha=0.3)
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        title=f"{min(TOP_CLASSES, len(ranked))} classes with most ground truth",
        title_fontsize=8,
        frameon=False,
    )
    fig.tight_layout()
    pr_path = out / "pr_curves.png"
    _save(fig, Canvas, pr_path)

    # --- per-class AP bars ---
    coco_ap = {r["category_id"]: r.get("AP") for r in result.per_class}
    rows = []
    for c in classes:
        headline = coco_ap.get(c["category_id"])
        headline = headline if isinstance(headline, float) and headline > -1 else None
        rows.append((c["name"], c["AP"], headline))
    rows.sort(key=lambda r: r[2] if r[2] is not None else r[1])  # ascending: best ends up on top
    n = max(len(rows), 1)
    fig = Figure(figsize=(8, 1.2 + 0.2 * n))
    ax = fig.add_subplot()
    y = np.arange(len(rows))
    ax.barh(y, [r[1] for r in rows], height=0.8, color="#9ecae1", label=f"AP@IoU={curves['iou']:.2f}")
    if any(r[2] is not None for r in rows):
        ax.barh(y, [r[2] or 0.0 for r in rows], height=0.5, color="#08519c", label="AP@[.50:.95]")
    ax.set_yticks(y, [r[0] for r in rows], fontsize=7)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlim(0, 1.0)
    ax.set_xlabel("average precision")
    ax.xaxis.set_ticks_position("both")
    ax.tick_params(axis="x", labeltop=True)
    ax.grid(True, axis="x", alpha=0.3)
    skipped = len(curves["classes"]) - len(classes)
    note = f"; {skipped} classes without ground truth left out" if skipped else ""
    ax.set_title(
        f"Per-class AP, {len(rows)} classes (area={curves['area']}, maxDets={curves['max_dets']}{note})", fontsize=10
    )
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    ap_path = out / "per_class_ap.png"
    _save(fig, Canvas, ap_path)
    return [pr_path, ap_path]


# --------------------------------------------------------------------------------------
# score-threshold curves (deteval.analysis.operating_points) and the confusion matrix (deteval.analysis.confusion)


def class_aps(result: EvalResult, iou_thr: float) -> dict[Any, float]:
    """The protocol's own AP per category id at ``iou_thr``: COCO's 101-point AP, VOC's headline integrator."""
    if isinstance(result, CocoResult):
        curves = pr_curves(result, iou_thr=iou_thr)
        return {c["category_id"]: c["AP"] for c in curves["classes"] if c["has_gt"]}
    if isinstance(result, VocResult) and result.outcomes is not None:
        thrs = np.asarray(result.iou_thrs, dtype=np.float64)
        t = int(np.flatnonzero(np.isclose(thrs, iou_thr, rtol=0.0, atol=1e-9))[0])
        ap = np.asarray(result.ap)[t, :, 0]
        npos = np.asarray(result.outcomes.npos)[:, 0]
        ids = [v.item() if hasattr(v, "item") else v for v in result.outcomes.category_ids]
        return {cid: float(ap[k]) for k, cid in enumerate(ids) if npos[k] > 0}
    return {}


def plot_threshold_curves(result: EvalResult, path: str | Path) -> list[Path]:
    """The precision-recall curves a result evaluates at fixed score thresholds (``result.threshold_curves()``),
    AP in the legend. Curves named ``<group>/<name>`` (KITTI's ``Car/easy``) draw one figure per group,
    ``<stem>_<group><suffix>`` beside ``path``, one line per name; others (WIDER FACE's subsets) one figure at
    ``path``. Curves sharing one ``recall`` axis (KITTI's 41 slots, recall ``i / 40``) are precision envelopes,
    their AP R40 in percent. Returns the paths written; raises ``ImportError`` without matplotlib."""
    Figure, Canvas = _matplotlib()
    data = result.threshold_curves()
    slots = data.get("recall")  # one recall axis for every curve: KITTI's envelope slots
    groups: dict[str | None, dict[str, Any]] = {}
    for name, c in data["curves"].items():
        group, _, short = name.rpartition("/")
        groups.setdefault(group or None, {})[short] = c
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for group, curves in groups.items():
        fig = Figure(figsize=(7.0, 5.5))
        ax = fig.add_subplot()
        for short, c in curves.items():
            if slots is None:
                ax.plot(c["recall"], c["precision"], linewidth=1.6, label=f"{short}: AP={c['AP']:.4f}")
            else:
                ax.plot(slots, c["precision"], linewidth=1.6, marker=".", label=f"{short}: AP_R40={c['AP']:.2f}")
        ax.set_xlim(0, 1.0)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("recall")
        ax.set_ylabel("precision")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower left")
        what = data["protocol"] if group is None else f"{data['protocol']} {group}"
        if slots is None:
            ax.set_title(f"{what}: precision-recall at {len(data['thresholds'])} score thresholds")
        else:
            ax.set_title(f"{what}: interpolated precision at {len(slots)} recall positions")
        fig.tight_layout()
        target = out if group is None else out.with_name(f"{out.stem}_{group}{out.suffix}")
        _save(fig, Canvas, target)
        written.append(target)
    return written


@renamed_keywords(iou="iou_thr")
def plot_pr_per_class(
    result: EvalResult,
    path: str | Path,
    iou_thr: float | None = None,
    area: str = "all",
    max_classes: int = 16,
) -> Path:
    """One small PR panel per class: the raw step curve and its interpolated envelope, AP in the legend.

    The raw curve joins the (recall, precision) points of the ranked detections
    (the sawtooth: false positives drop precision at constant recall); the
    envelope is the best precision at any recall at least as high (what COCO
    and VOC all-point AP integrate), drawn as a staircase. The legend gives the
    protocol's AP at ``iou_thr`` (COCO: 101-point AP; VOC: its headline integrator).
    Panels: the ``max_classes`` classes with the most ground truth. Read from
    the result's outcomes (:mod:`deteval.analysis.operating_points`); raises
    ``ValueError`` without them, ``ImportError`` without matplotlib.
    """
    from deteval.analysis.operating_points import score_curves

    Figure, Canvas = _matplotlib()
    sc = score_curves(result, iou_thr=iou_thr, area=area)
    aps = class_aps(result, sc.iou)
    chosen = sorted((c for c in sc.classes if c.npos > 0), key=lambda c: -c.npos)[:max_classes]
    n = max(len(chosen), 1)
    cols = min(4, n)
    rows = -(-n // cols)
    fig = Figure(figsize=(3.3 * cols, 2.9 * rows + 0.6))
    for i, c in enumerate(chosen):
        ax = fig.add_subplot(rows, cols, i + 1)
        if len(c.raw_recall):
            ax.plot(c.raw_recall, c.raw_precision, color="#9ecae1", linewidth=1.0, label="raw")
            ax.plot(
                np.r_[0.0, c.raw_recall], np.r_[c.envelope[0], c.envelope], color="#08519c",
                linewidth=1.6, drawstyle="steps-pre", label="interpolated",
            )  # fmt: skip
        ap = aps.get(c.category_id)
        ax.plot([], [], " ", label=f"AP={ap:.3f}" if ap is not None else "AP n/a")
        ax.set_xlim(0, 1.0)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{c.name} ({c.npos} gt, {len(c.raw_score)} det)", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize=7, frameon=False)
        if i % cols == 0:
            ax.set_ylabel("precision", fontsize=8)
        if i >= (rows - 1) * cols:
            ax.set_xlabel("recall", fontsize=8)
    fig.suptitle(
        f"Per-class precision-recall: raw and interpolated (IoU={sc.iou:.2f}, area={sc.area}; "
        f"{len(chosen)} classes with most ground truth)",
        fontsize=10,
    )
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    _save(fig, Canvas, out)
    return out


@renamed_keywords(iou="iou_thr")
def plot_f_vs_confidence(
    result: EvalResult, path: str | Path, iou_thr: float | None = None, area: str = "all", beta: float = 1.0
) -> Path:
    """F-beta against the score threshold: a thin line per class with ground truth, all classes pooled in bold.

    The pooled (micro) curve's best point is marked and labelled with its
    threshold, F, P and R. Raises ``ValueError`` without outcomes,
    ``ImportError`` without matplotlib.
    """
    from deteval.analysis.operating_points import score_curves

    Figure, Canvas = _matplotlib()
    sc = score_curves(result, iou_thr=iou_thr, area=area, beta=beta)
    fname = f"F{sc.beta:g}"
    fig = Figure(figsize=(9, 6))
    ax = fig.add_subplot()
    with_gt = [c for c in sc.classes if c.npos > 0 and len(c.thresholds)]
    for c in with_gt:
        ax.plot(c.thresholds, c.fbeta, color="0.55", alpha=0.35, linewidth=0.7)
    if with_gt:
        ax.plot([], [], color="0.55", alpha=0.6, linewidth=0.7, label=f"each class ({len(with_gt)})")
    m = sc.micro
    if len(m.thresholds):
        ax.plot(m.thresholds, m.fbeta, color="black", linewidth=2.6, label=f"all classes (micro {fname})")
        best = m.best()
        ax.plot([best.threshold], [best.fbeta], "o", color="#d62728", markersize=9, zorder=5)
        ax.annotate(
            f"best {fname}={best.fbeta:.3f} at score {best.threshold:.3f}\nP={best.precision:.3f}  R={best.recall:.3f}",
            (best.threshold, best.fbeta), xytext=(12, 12), textcoords="offset points", fontsize=9, color="#d62728",
        )  # fmt: skip
        lo, hi = float(min(m.thresholds.min(), 0.0)), float(max(m.thresholds.max(), 1.0))
        pad = 0.015 * (hi - lo)  # room for the marker at either end
        ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("score threshold (detections with score >= threshold kept)")
    ax.set_ylabel(fname)
    ax.set_title(f"{fname} vs confidence (IoU={sc.iou:.2f}, area={sc.area})")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=9)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    _save(fig, Canvas, out)
    return out


def plot_confusion_matrix(cm: Any, path: str | Path, normalize: str | None = "row", hide_empty: bool = True) -> Path:
    """A heatmap of a :class:`~deteval.analysis.confusion.ConfusionMatrix`, category names on both axes.

    Rows are ground-truth classes (last: background = unmatched detections),
    columns predicted classes (last: background = missed ground truth).
    ``normalize``: ``"row"`` (default: fractions of each row), ``"col"`` or None
    (counts); counts are written in the cells when there are at most 30
    classes. ``hide_empty`` leaves out classes with neither ground truth nor
    detections.
    """
    Figure, Canvas = _matplotlib()
    k = len(cm.labels) - 1
    keep = [*(cm.present() if hide_empty else range(k)), k]
    counts = cm.matrix[np.ix_(keep, keep)]
    values = counts if normalize is None else cm.normalized(normalize)[np.ix_(keep, keep)]
    names = [cm.labels[i] for i in keep]
    n = len(keep)
    size = min(max(6.0, 0.22 * n + 3.0), 24.0)
    fig = Figure(figsize=(size + 1.5, size))
    ax = fig.add_subplot()
    im = ax.imshow(values, cmap="Blues", vmin=0, vmax=1 if normalize else max(int(values.max()), 1))
    fs = 8 if n <= 30 else 7 if n <= 50 else 6
    ax.set_xticks(np.arange(n), names, rotation=90, fontsize=fs)
    ax.set_yticks(np.arange(n), names, fontsize=fs)
    ax.set_xlabel("predicted class (last: background = missed ground truth)")
    ax.set_ylabel("ground-truth class (last: background = unmatched detections)")
    if n <= 30:
        top = values.max() if values.size else 1
        for i in range(n):
            for j in range(n):
                if counts[i, j]:
                    colour = "white" if values[i, j] > 0.6 * top else "black"
                    ax.text(j, i, str(counts[i, j]), ha="center", va="center", fontsize=7, color=colour)
    norm = {"row": ", normalised by row", "col": ", normalised by column"}.get(normalize or "", "")
    ax.set_title(f"Confusion matrix (IoU >= {cm.iou_thr:g}, score >= {cm.score_thr:g}{norm})", fontsize=10)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.02)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    _save(fig, Canvas, out)
    return out


def plot_reliability(cal: Any, path: str | Path) -> Path:
    """A reliability diagram of a :class:`~deteval.analysis.calibration.Calibration`: each bin's fraction of correct
    detections over its mean score (bars), the gap to the diagonal, and the counts; ECE and MCE in the title."""
    Figure, Canvas = _matplotlib()
    fig = Figure(figsize=(6.0, 6.5))
    ax, ax_n = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    width = cal.bin_upper - cal.bin_lower
    centre = cal.bin_lower + width / 2
    full = cal.count > 0
    ax.bar(centre[full], cal.avg_accuracy[full], width=width[full], color=_COLOURS[0], edgecolor="white",
           label="fraction correct")  # fmt: skip
    acc, conf = cal.avg_accuracy[full], cal.avg_confidence[full]
    ax.bar(centre[full], np.abs(conf - acc), bottom=np.minimum(acc, conf), width=width[full], fill=False,
           hatch="//", edgecolor=_COLOURS[3], label="gap to the mean score")  # fmt: skip
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("fraction correct")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(f"Reliability (IoU {cal.iou_thr:g}): ECE {cal.ece:.4f}, MCE {cal.mce:.4f}", fontsize=10)
    ax_n.bar(centre, cal.count, width=width, color=_COLOURS[0], edgecolor="white")
    ax_n.set_xlabel("score")
    ax_n.set_ylabel("detections")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    _save(fig, Canvas, out)
    return out


def plot_miss_rate(result: EvalResult, path: str | Path, curves: dict[str, Any] | None = None) -> Path:
    """Miss rate against false positives per image on log-log axes, one curve per setup (CityPersons) or
    the one curve (CrowdHuman), MR^-2 in the legend and the FPPI points it averages marked: the plot
    pedestrian papers print. Read from ``Protocol.miss_rate_curves``; raises ``ValueError`` for a protocol
    without them, ``ImportError`` without matplotlib. ``curves``: those, when already computed."""
    from deteval import protocols

    if curves is None:
        curves = protocols.get(result.protocol).miss_rate_curves(result)
    if curves is None:
        raise ValueError(f"the {result.protocol!r} protocol has no miss-rate curves")
    Figure, Canvas = _matplotlib()
    fig = Figure(figsize=(6.4, 5.2))
    ax = fig.add_subplot(1, 1, 1)
    for i, (label, c) in enumerate(curves["miss_rate_curves"].items()):
        colour = _COLOURS[i % len(_COLOURS)]
        if c is None:
            ax.plot([], [], " ", label=f"{label}: no positives")
            continue
        fppi, miss = np.asarray(c["fppi"]), np.asarray(c["miss_rate"])
        shown = fppi > 0  # log axes: the points before the first false positive sit at FPPI 0
        ax.plot(fppi[shown], miss[shown], color=colour, linewidth=1.6, drawstyle="steps-post",
                label=f"{c['MR'] * 100:.2f}% {label}")
        ax.plot(c["points"], c["miss_rate_at_points"], "o", color=colour, markersize=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1e-3, 1e1)
    ax.set_ylim(1e-2, 1.0)
    ax.set_xlabel("false positives per image")
    ax.set_ylabel("miss rate")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower left", fontsize=8, title="MR$^{-2}$", title_fontsize=8)
    ax.set_title(f"Miss rate against FPPI ({result.protocol})", fontsize=10)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    _save(fig, Canvas, out)
    return out

"""Plots of an evaluation: PR curves and per-class AP (optional extra ``plot``: matplotlib).

matplotlib is imported only when a plot is drawn, and only through its
object-oriented API with the Agg canvas: no ``pyplot``, no change to the
process-wide backend, no window.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from deteval.curves import pr_curves
from deteval.result import EvalResult

#: classes drawn in colour, with their AP in the legend, on the PR plot
TOP_CLASSES = 8

# matplotlib's tab10, fixed here so the plots look the same whatever the style in use
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _matplotlib() -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # tests/test_report_exports.py hides matplotlib to exercise this
        raise ImportError("plotting needs matplotlib: pip install 'deteval[plot]' (or pip install matplotlib)") from exc
    return Figure, FigureCanvasAgg


def _save(fig: Any, canvas_cls: Any, path: Path) -> None:
    canvas_cls(fig)
    fig.savefig(path, dpi=110)


def plot_pr_curves(
    result: EvalResult, out_dir: str | Path, iou: float = 0.5, area: str = "all", max_dets: int | None = None
) -> list[Path]:
    """Write ``pr_curves.png`` and ``per_class_ap.png`` into ``out_dir`` (created if needed).

    ``pr_curves.png``: the interpolated PR curve (pycocotools' 101-point envelope)
    of every class with ground truth (faint grey), the :data:`TOP_CLASSES` classes
    with the most ground truth in colour with their AP at ``iou`` in the legend
    (the most frequent classes, since on small sets many classes tie at AP 1),
    and the class-averaged curve (bold black) with its AP.

    ``per_class_ap.png``: a horizontal bar per class with ground truth: a light
    bar for AP at ``iou`` and, when the per-class rows carry COCO's headline
    ``AP`` (IoU .50:.95), a dark bar for it; sorted by the dark value, best on top.

    Returns the two paths. Raises ``ImportError`` without matplotlib and
    ``ValueError`` for a result without COCO arrays or an IoU/area/cap not evaluated.
    """
    Figure, Canvas = _matplotlib()
    curves = pr_curves(result, iou=iou, area=area, max_dets=max_dets)
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

"""TideResult: the numbers of a TIDE breakdown, tidecv's printout and a JSON-able dict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

ERROR_TYPES = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")  # tidecv's TIDE._error_types, short names
SPECIAL_TYPES = ("FalsePos", "FalseNeg")


def _table(rows: list[list[str]], title: str | None = None) -> list[str]:
    """tidecv's ``plotting.print_table``, as lines."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    divider = "--" + "---".join("-" * w for w in widths) + "-"
    out = []
    if title:
        pad = (len(divider) - len(title)) // 2
        out.append(title.rjust(pad + len(title)))
    out.append(divider.replace("-", "="))
    for k, row in enumerate(rows):
        out.append("  " + "   ".join(cell.rjust(w) for cell, w in zip(row, widths)) + "  ")
        if k == 0:
            out.append(divider)
    out.append(divider.replace("-", "="))
    return out


@dataclass(frozen=True)
class TideResult:
    """A TIDE error breakdown (Bolya et al. 2020), as tidecv 1.0.1 computes it.

    All AP values are in percent (0-100), tidecv's unit. Error types, in tidecv's order:
    ``Cls, Loc, Both, Dupe, Bkg, Miss``; special: ``FalsePos, FalseNeg``.

    Attributes
    ----------
    ap : the mAP at ``pos_thr`` (the ``iou_thr`` of the run; tidecv's ``run.ap``, "bbox AP @ 50").
    counts : number of errors of each type (``run.count_errors()``).
    dap : dAP of fixing each main error type alone, ``max(fixed - ap, 0)`` (``fix_main_errors``).
    special_dap : ``FalsePos`` / ``FalseNeg`` dAP, not clamped (``fix_special_errors``).
    fixed_ap : the mAP after each fix, main and special types.
    per_class : category id -> ``{"name", "num_gt", "AP", "counts", "fixed_AP"}``: the class's AP before
        and after each fix (a class that a fix empties has AP 0), and its errors (detection errors
        under the detection's category, Miss under the ground truth's).
    ap_by_threshold : AP at each IoU threshold asked for (tidecv's ``evaluate_range``), or None.
    det_error : per input detection: -3 cut by max_dets, -1 true positive, else the index of its
        error type in ``ERROR_TYPES``.
    det_ignored : per input detection: ignored by a crowd region (still given an error, as in tidecv).
    gt_status : per ground truth: -2 crowd (an ignore region), -1 matched, 5 missed (a Miss error),
        6 unmatched but the target of a Cls or Loc error (not a Miss).
    """

    name: str
    ap: float
    counts: dict[str, int]
    dap: dict[str, float]
    special_dap: dict[str, float]
    fixed_ap: dict[str, float]
    per_class: dict[Any, dict[str, Any]]
    ap_by_threshold: dict[float, float] | None
    pos_thr: float
    bg_thr: float
    max_dets: int
    det_error: np.ndarray
    det_ignored: np.ndarray
    gt_status: np.ndarray
    mode: str = "bbox"  # tidecv's name of the mode: "bbox" (boxes) or "mask" (iou_type="segm")

    @property
    def ap_range(self) -> float | None:
        """Mean AP over ``ap_by_threshold`` (tidecv's "bbox AP @ [50-95]"), or None."""
        if not self.ap_by_threshold:
            return None
        aps = list(self.ap_by_threshold.values())
        return sum(aps) / len(aps)

    def summary(self, counts: bool = True, per_class: bool = False) -> str:
        """tidecv's ``TIDE.summarize()`` printout for this run, then (optionally) error counts per type
        and a per-class table. The first part is character for character what tidecv prints."""
        lines = [f"-- {self.name} --", ""]
        if self.ap_by_threshold:
            thrs = list(self.ap_by_threshold)
            title = f"{self.mode} AP @ [{int(thrs[0] * 100):d}-{int(thrs[-1] * 100):d}]"
            lines.append(f"{title}: {self.ap_range:.2f}")
            lines += _table(
                [
                    ["Thresh"] + [str(int(t * 100)) for t in thrs],
                    ["  AP  "] + [f"{a:6.2f}" for a in self.ap_by_threshold.values()],
                ],
                title=title,
            )
        else:
            lines.append(f"{self.mode} AP @ {int(self.pos_thr * 100):d}: {self.ap:.2f}")
        lines.append("")
        lines += _table(
            [["Type", *ERROR_TYPES], [" dAP"] + [f"{self.dap[t]:6.2f}" for t in ERROR_TYPES]], title="Main Errors"
        )
        lines.append("")
        lines += _table(
            [["Type", *SPECIAL_TYPES], [" dAP"] + [f"{self.special_dap[t]:6.2f}" for t in SPECIAL_TYPES]],
            title="Special Error",
        )
        lines.append("")
        if counts:
            lines += _table(
                [["Type", *ERROR_TYPES], ["Count"] + [str(self.counts[t]) for t in ERROR_TYPES]], "Error Counts"
            )
            lines.append("")
        if per_class:
            head = ["Class", "#GT", "AP"] + [f"d{t}" for t in ERROR_TYPES] + [f"#{t}" for t in ERROR_TYPES]
            rows = [head]
            for pc in self.per_class.values():
                d = [f"{max(pc['fixed_AP'][t] - pc['AP'], 0):.2f}" for t in ERROR_TYPES]
                rows.append(
                    [pc["name"], str(pc["num_gt"]), f"{pc['AP']:.2f}", *d, *(str(pc["counts"][t]) for t in ERROR_TYPES)]
                )
            lines += _table(rows, "Per Class")
            lines.append("")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able numbers: thresholds, AP, counts, dAP, fixed AP and the per-class table."""
        return {
            "name": self.name,
            "mode": self.mode,
            "pos_thr": self.pos_thr,
            "bg_thr": self.bg_thr,
            "max_dets": self.max_dets,
            "AP": self.ap,
            "counts": dict(self.counts),
            "dAP": dict(self.dap),
            "special_dAP": dict(self.special_dap),
            "fixed_AP": dict(self.fixed_ap),
            "AP_by_threshold": None
            if self.ap_by_threshold is None
            else {str(k): v for k, v in self.ap_by_threshold.items()},
            "AP_range": self.ap_range,
            "per_class": [
                {"category_id": k, **{kk: (dict(v) if isinstance(v, dict) else v) for kk, v in pc.items()}}
                for k, pc in self.per_class.items()
            ],
        }

    def __repr__(self) -> str:
        d = ", ".join(f"{t}={self.dap[t]:.2f}" for t in ERROR_TYPES)
        return f"TideResult(AP@{int(self.pos_thr * 100)}={self.ap:.2f}, dAP: {d})"

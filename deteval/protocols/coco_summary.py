"""COCO's headline stats, pycocotools' printed summary and the per-class rows, from the accumulated arrays.

The headline stats are pycocotools' (``COCOeval.stats``), whatever the parameters. What they do not
read is summarised by the *extra stats*, kept apart (``CocoResult.extra_stats``) and printed after
pycocotools' lines, each computed as ``_summarize`` would (the mean of valid entries, -1 if none):

- ``AP_<label>`` and ``AR_<label>`` for each area range the headline stats do not read (any label but
  all/small/medium/large; all/medium/large for keypoints): over every IoU threshold, at the max dets
  of the area stats (APs..ARl: the largest, or pycocotools' third value in compat mode);
- ``AP@<t>`` for each IoU threshold other than .50 and .75 when the thresholds are not the default
  .50:.05:.95 grid: area ``all``, same max dets; ``t`` written shortest (``AP@0.6``, ``AP@0.3``).
"""

from __future__ import annotations

import numpy as np

from deteval.numeric import mean_valid
from deteval.protocols.coco_params import CocoParams, default_iou_thrs
from deteval.types import IdTable


def _summarize_indices(
    arr: np.ndarray, params: CocoParams, iou: float | None, area: str, max_det: int
) -> tuple[np.ndarray, list[int], list[int]]:
    """pycocotools' ``_summarize`` lookups: ``arr`` cut to the IoU threshold (exact float equality in
    compat mode, 1e-12 otherwise; all thresholds for ``iou=None``), and the area and max-dets indices."""
    if iou is not None:
        if params.compat:
            t = np.where(iou == params.iou_thrs)[0]
        else:
            t = np.where(np.isclose(params.iou_thrs, iou, rtol=0, atol=1e-12))[0]
        arr = arr[t]
    a = [i for i, lbl in enumerate(params.area_labels) if lbl == area]
    m = [i for i, md in enumerate(params.max_dets) if md == max_det]
    return arr, a, m


def _select(arr: np.ndarray, params: CocoParams, iou: float | None, area: str, max_det: int, k=slice(None)):
    """pycocotools' ``_summarize`` selection: the mean of valid entries, -1 if none."""
    arr, a, m = _summarize_indices(arr, params, iou, area, max_det)
    if arr.ndim == 5:  # precision T,R,K,A,M
        return mean_valid(arr[:, :, k][..., a, m])
    return mean_valid(arr[:, k][..., a, m])


def _stat_specs(params: CocoParams) -> list[tuple[str, bool, float | None, str, int]]:
    """(name, is_ap, iou, area, max_det) for each headline stat, in COCOeval.stats order."""
    md = params.max_dets
    if params.iou_type == "keypoints":
        m = 20 if params.compat else md[-1]  # pycocotools' _summarizeKps hard-codes maxDets=20
        return [
            (f"{kind}{suffix}", kind == "AP", iou, area, m)
            for kind in ("AP", "AR")
            for suffix, iou, area in (("", None, "all"), ("50", 0.5, "all"), ("75", 0.75, "all"),
                                      ("m", None, "medium"), ("l", None, "large"))
        ]  # fmt: skip
    last = md[2] if params.compat else md[-1]
    ap_all = 100 if params.compat else md[-1]  # pycocotools' _summarize default
    specs = [
        ("AP", True, None, "all", ap_all),
        ("AP50", True, 0.5, "all", last),
        ("AP75", True, 0.75, "all", last),
        ("APs", True, None, "small", last),
        ("APm", True, None, "medium", last),
        ("APl", True, None, "large", last),
    ]
    specs += [(f"AR{m}", False, None, "all", m) for m in md[:3]]
    specs += [
        ("ARs", False, None, "small", last),
        ("ARm", False, None, "medium", last),
        ("ARl", False, None, "large", last),
    ]
    return specs


def _iou_name(t: float) -> str:
    """A threshold as the shortest decimal of its value to 10 places: 0.6000000000000001 -> ``0.6``."""
    return np.format_float_positional(round(float(t), 10), trim="-")


def _is_default_grid(params: CocoParams) -> bool:
    default = default_iou_thrs(params.iou_type)
    return len(default) == len(params.iou_thrs) and bool(np.allclose(params.iou_thrs, default, rtol=0, atol=1e-12))


def _extra_specs(params: CocoParams) -> list[tuple[str, bool, float | None, str, int]]:
    """(name, is_ap, iou, area, max_det) of each extra stat (see the module docstring), in order."""
    specs = _stat_specs(params)
    max_det = specs[-1][4]  # the max dets of the area stats (ARl)
    read_areas = {s[3] for s in specs}
    extras = [
        (f"{kind}_{label}", kind == "AP", None, label, max_det)
        for label in params.area_labels
        if label not in read_areas
        for kind in ("AP", "AR")
    ]
    if not _is_default_grid(params):
        read_ious = np.array([s[2] for s in specs if s[2] is not None])
        extras += [
            (f"AP@{_iou_name(t)}", True, float(t), "all", max_det)
            for t in params.iou_thrs
            if not np.isclose(read_ious, t, rtol=0, atol=1e-12).any()
        ]
    return list({spec[0]: spec for spec in extras}.values())  # a repeated threshold: one stat


def _stats_of(precision: np.ndarray, recall: np.ndarray, params: CocoParams, specs) -> dict[str, float]:
    return {
        name: _select(precision if is_ap else recall, params, iou, area, max_det)
        for name, is_ap, iou, area, max_det in specs
    }


def coco_stats(precision: np.ndarray, recall: np.ndarray, params: CocoParams) -> dict[str, float]:
    """The headline stats, in ``COCOeval.stats`` order (``_summarize``'s means, -1 where none is valid)."""
    return _stats_of(precision, recall, params, _stat_specs(params))


def extra_stats(precision: np.ndarray, recall: np.ndarray, params: CocoParams) -> dict[str, float]:
    """The extra stats (module docstring): custom area ranges and IoU thresholds; empty by default."""
    return _stats_of(precision, recall, params, _extra_specs(params))


def stat_plan(params: CocoParams) -> list[tuple[str, bool, np.ndarray, list[int], list[int]]]:
    """Where each stat, then each extra stat, reads: ``(name, is_ap, IoU indices, area indices, max-dets
    indices)``; the stat is the mean of the valid entries of ``arr[iou indices][..., areas, max dets]``,
    as :func:`coco_stats` computes it (for re-accumulated arrays: deteval.analysis.intervals)."""
    thr = np.arange(len(params.iou_thrs))
    plan = []
    for name, is_ap, iou, area, max_det in [*_stat_specs(params), *_extra_specs(params)]:
        t, a, m = _summarize_indices(thr, params, iou, area, max_det)
        plan.append((name, is_ap, t, a, m))
    return plan


def stat_reads(params: CocoParams) -> tuple[list, np.ndarray]:
    """:func:`stat_plan` and the (area range, max dets) pairs whose precision it reads, bool ``(A, M)``."""
    plan = stat_plan(params)
    need = np.zeros((len(params.area_labels), len(params.max_dets)), np.bool_)
    for _, is_ap, _, a, m in plan:
        if is_ap:
            need[np.ix_(a, m)] = True
    return plan, need


def stats_of_plan(precision: np.ndarray, recall: np.ndarray, plan) -> list[float]:
    """pycocotools' ``_summarize`` means from re-accumulated arrays laid out ``[A, M, T, ...]``
    (:func:`deteval.accumulation.resample.replicate_arrays`), read by :func:`stat_plan`: the same entries in the same
    order, so the same floats as :func:`coco_stats` then :func:`extra_stats`."""
    from deteval.accumulation.resample import as_pycocotools

    out = []
    for _, is_ap, t, a, m in plan:
        arr = precision if is_ap else recall
        if len(a) == 1 and len(m) == 1:
            out.append(mean_valid(arr[a[0], m[0]][t]))
        else:  # a repeated label or max dets: pycocotools' own indexing
            out.append(mean_valid(as_pycocotools(precision, recall)[0 if is_ap else 1][t][..., a, m]))
    return out


def _summary_line(params: CocoParams, is_ap: bool, iou: float | None, area: str, max_det: int, value: float) -> str:
    """One line in pycocotools' ``_summarize`` format."""
    title, kind = ("Average Precision", "(AP)") if is_ap else ("Average Recall", "(AR)")
    iou_str = f"{params.iou_thrs[0]:0.2f}:{params.iou_thrs[-1]:0.2f}" if iou is None else f"{iou:0.2f}"
    return f" {title:<18} {kind} @[ IoU={iou_str:<9} | area={area:>6s} | maxDets={max_det:>3d} ] = {value:0.3f}"


def summary_lines(stats: dict[str, float], params: CocoParams, extras: dict[str, float] | None = None) -> list[str]:
    """pycocotools' printed summary, one line per stat, then one per extra stat (``extras``)."""
    specs = [(spec, stats) for spec in _stat_specs(params)]
    specs += [(spec, extras) for spec in _extra_specs(params) if extras and spec[0] in extras]
    return [_summary_line(params, *spec[1:], values[spec[0]]) for spec, values in specs]


def per_class_rows(precision, recall, npig, ndet, categories: IdTable, params: CocoParams) -> list[dict]:
    """One row per category: the AP stats, AR at the largest max dets, the extra stats, ground truth and
    detection counts."""
    if not params.use_cats:
        return []
    specs = _stat_specs(params)
    ap_specs = [s for s in specs if s[1]]
    ar_last = ("AR", False, None, "all", params.max_dets[-1])
    all_idx = params.area_labels.index("all") if "all" in params.area_labels else None
    columns = {name: _per_class_means(precision if is_ap else recall, params, iou, area, max_det)
               for name, is_ap, iou, area, max_det in [*ap_specs, ar_last, *_extra_specs(params)]}  # fmt: skip
    rows = []
    for k in range(len(categories)):
        row = {"category_id": categories.id_of(k), "name": categories.name_of(k)}
        row.update((name, float(values[k])) for name, values in columns.items())
        row["num_gt"] = int(npig[k, all_idx]) if all_idx is not None else None
        row["num_det"] = int(ndet[k])
        rows.append(row)
    return rows


def _per_class_means(arr: np.ndarray, params: CocoParams, iou: float | None, area: str, max_det: int) -> np.ndarray:
    """:func:`_select` for every category at once: the same floats, one vectorised mean per category.

    A category's entries at one area range are all valid or all -1 (no ground truth there), so the
    mean of its valid entries is the mean of its whole row, summed in the same order as ``np.mean``
    sums the compacted entries, provided the row holds one area range and one max dets.
    """
    k_axis = 2 if arr.ndim == 5 else 1
    n_cat = arr.shape[k_axis]
    if n_cat == 0:  # a ground truth with no categories: pycocotools scores it (every stat -1), no rows
        return np.zeros(0)
    arr, a, m = _summarize_indices(arr, params, iou, area, max_det)
    if len(a) != 1 or len(m) != 1 or arr.shape[0] == 0:
        return np.array([_select(arr, params, None, area, max_det, k=slice(k, k + 1)) for k in range(n_cat)])
    sub = np.moveaxis(arr[..., a[0], m[0]], k_axis, 0).reshape(n_cat, -1)
    valid = sub > -1
    all_valid, none_valid = valid.all(axis=1), ~valid.any(axis=1)
    out = np.where(none_valid, -1.0, np.ascontiguousarray(sub).mean(axis=1))
    for k in np.flatnonzero(~(all_valid | none_valid)):  # mixed rows: never from accumulate, kept exact anyway
        out[k] = mean_valid(sub[k])
    return out

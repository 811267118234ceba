"""The COCO protocol: pycocotools' parameters, its pipeline and its summary.

``compat=True`` (the default) reproduces pycocotools 2.0.11 to the last bit,
quirks included; ``compat=False`` corrects them (see README, "Compat and
fixed modes"):

============================  =======================================  ==========================
behaviour                     compat (pycocotools)                     fixed
============================  =======================================  ==========================
GT ``ignore`` field           overwritten by ``iscrowd``: no effect    honoured (ignored GT)
GT annotation id 0            a match to it counts as a false positive  an ordinary match
``stats[0]`` max dets         100, hard-coded (-1 if 100 is absent)    the largest max dets
summary IoU lookup            exact float equality (0.9 never found)   ``np.isclose``
============================  =======================================  ==========================
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from importlib import resources

import numpy as np

from deteval.errors import InputError
from deteval.result import EvalResult, Outcomes
from deteval.types import Detections, GroundTruth, IdTable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

IOU_TYPES = ("bbox", "segm", "keypoints")


@dataclass(frozen=True)
class CocoParams:
    """Evaluation parameters, pycocotools' ``Params`` after ``evaluate()`` normalised them."""

    iou_type: str
    iou_thrs: np.ndarray  # float64 (T,)
    rec_thrs: np.ndarray  # float64 (R,)
    max_dets: tuple[int, ...]  # ascending, as pycocotools sorts them
    area_ranges: np.ndarray  # float64 (A, 2), inclusive bounds
    area_labels: tuple[str, ...]
    use_cats: bool = True
    compat: bool = True
    kpt_sigmas: np.ndarray | None = None  # keypoints only: one sigma per keypoint

    def to_dict(self) -> dict:
        return {
            "iou_type": self.iou_type,
            **({"kpt_sigmas": self.kpt_sigmas.tolist()} if self.kpt_sigmas is not None else {}),
            "iou_thrs": self.iou_thrs.tolist(),
            "max_dets": list(self.max_dets),
            "area_ranges": {k: v.tolist() for k, v in zip(self.area_labels, self.area_ranges)},
            "use_cats": self.use_cats,
            "compat": self.compat,
        }


def _array(spec) -> np.ndarray:
    if isinstance(spec, dict):
        start, stop, num = spec["linspace"]
        return np.linspace(start, stop, int(num), endpoint=True)
    return np.asarray(spec, dtype=np.float64)


@cache
def _preset(iou_type: str) -> dict:
    text = resources.files("deteval").joinpath("configs", "coco.toml").read_text()
    return tomllib.loads(text)[iou_type]


def make_params(
    iou_type: str = "bbox",
    *,
    iou_thrs: Sequence[float] | None = None,
    area_ranges: Mapping[str, Sequence[float]] | None = None,
    max_dets: Sequence[int] | None = None,
    use_cats: bool = True,
    compat: bool = True,
    kpt_sigmas: Sequence[float] | None = None,
) -> CocoParams:
    """Build :class:`CocoParams` from the preset, overriding what is given.

    ``area_ranges`` maps a label to ``(lo, hi)``; the summary reads the
    labels ``all``, ``small``, ``medium`` and ``large``. ``kpt_sigmas``
    (keypoints only) defaults to the 17 COCO person sigmas.
    """
    if iou_type not in IOU_TYPES:
        raise InputError(
            "iou_type", None, f"{iou_type!r} is not supported by the coco protocol; choose from {IOU_TYPES}"
        )
    preset = _preset(iou_type)
    thrs = _array(preset["iou_thrs"]) if iou_thrs is None else np.asarray(iou_thrs, dtype=np.float64).reshape(-1)
    if len(thrs) == 0 or not np.all((thrs >= 0) & (thrs <= 1)):
        raise InputError("iou_thrs", None, f"IoU thresholds must be a non-empty list in [0, 1], got {thrs.tolist()}")
    md = preset["max_dets"] if max_dets is None else list(max_dets)
    if len(md) == 0 or any(isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1 for m in md):
        raise InputError("max_dets", None, f"max dets must be positive integers, got {md}")
    if compat and len(md) < 3 and iou_type != "keypoints":
        rule = f"pycocotools' summary reads 3 max-dets values, got {md}; use compat=False (--fixed) to summarise fewer"
        raise InputError("max_dets", None, rule)
    rng = preset["area_ranges"] if area_ranges is None else dict(area_ranges)
    try:
        ranges = np.array([[float(lo), float(hi)] for lo, hi in rng.values()], dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError):
        raise InputError("area_ranges", None, f"area ranges must map labels to (lo, hi) pairs, got {rng}") from None
    if len(ranges) == 0:
        raise InputError("area_ranges", None, "at least one area range is needed")
    sigmas = None
    if iou_type == "keypoints":
        from deteval.geometry.keypoints import COCO_SIGMAS

        try:
            sigmas = COCO_SIGMAS if kpt_sigmas is None else np.asarray(kpt_sigmas, dtype=np.float64).reshape(-1)
            ok = len(sigmas) > 0 and bool(np.all(np.isfinite(sigmas) & (sigmas > 0)))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise InputError("kpt_sigmas", None, f"keypoint sigmas must be positive numbers, got {kpt_sigmas!r}")
        if compat and not use_cats:
            rule = (
                "pycocotools cannot pool categories for keypoints (computeOks reads no ground truth); use compat=False"
            )
            raise InputError("use_cats", None, rule)
    elif kpt_sigmas is not None:
        raise InputError("kpt_sigmas", None, "keypoint sigmas apply to iou_type='keypoints' only")
    return CocoParams(
        iou_type=iou_type,
        iou_thrs=thrs,
        rec_thrs=_array(preset["rec_thrs"]),
        max_dets=tuple(sorted(int(m) for m in md)),
        area_ranges=ranges,
        area_labels=tuple(str(k) for k in rng),
        use_cats=bool(use_cats),
        compat=bool(compat),
        kpt_sigmas=sigmas,
    )


@dataclass(frozen=True)
class CocoMatches:
    """The outcome of matching: everything accumulation needs, as flat arrays.

    Shards of a dataset (batches, processes, Dask partitions) concatenate
    row-wise, with ``npig`` and ``ndet`` summed, once their image indices
    refer to one shared, id-sorted image table.
    """

    det_category: np.ndarray  # int32 (N,), 0 for all when categories are pooled
    det_image: np.ndarray  # int32 (N,), ascending with the image id
    det_rank: np.ndarray  # int32 (N,), rank by score within (image, category)
    det_score: np.ndarray  # float64 (N,)
    state: np.ndarray  # int8 (N, A, T): FP 0, TP 1, ignored 2
    npig: np.ndarray  # int64 (K, A): ground truth that counts, per category and area range
    ndet: np.ndarray  # int64 (K,): detections per category, before the max-dets cut


def match(dets: Detections, gt: GroundTruth, params: CocoParams) -> CocoMatches:
    """Group, compute IoU and match, for every IoU threshold and area range."""
    # kernels are imported here so that loading and argument checks do not pay numba's import
    from deteval import accumulate, matching
    from deteval.accumulate import positives_per_category
    from deteval.jit import in_background, preload, run_tasks
    from deteval.matching.coco import match_groups
    from deteval.matching.groups import group_by_image_category

    # the later stages' kernels load on a thread of their own while the grouping runs on this one
    later = (*matching.coco.KERNELS, *accumulate.KERNELS)
    if params.iou_type == "bbox":
        from deteval.geometry import boxes

        later = (*boxes.KERNELS, *later)
    if not all(getattr(kernel, "overloads", True) for kernel in later):  # once per process, in effect
        in_background(preload, later)

    if gt.box_format != "xywh" or dets.box_format != "xywh":
        raise InputError(dets.source, None, "the coco protocol needs xywh boxes")
    gt_ignore = gt.crowd if params.compat else (gt.crowd | gt.ignore)
    if params.iou_type == "keypoints":
        gt_ignore = gt_ignore | (_need(gt, "num_keypoints", "keypoints") == 0)
    # pycocotools marks matches with annotation ids and reads 0 as "no match"
    gt_counts = gt.ann_id != 0 if params.compat else np.ones(len(gt), bool)
    n_cat = len(gt.categories) if params.use_cats else 1
    groups = group_by_image_category(gt, dets, use_cats=params.use_cats, max_det=params.max_dets[-1])
    ious = overlaps(groups, dets, gt, params)
    # pycocotools reads a mask result's area from its box when it has one; fixed mode uses the mask
    dt_area = dets.mask_area if params.iou_type == "segm" and not params.compat else dets.area
    state = match_groups(
        groups, ious, gt.area, gt.crowd, gt_ignore, gt_counts, dt_area, params.iou_thrs, params.area_ranges
    )
    gt_cat = gt.category if params.use_cats else np.zeros(len(gt), np.int32)
    dt_cat = dets.category if params.use_cats else np.zeros(len(dets), np.int32)
    per_group = np.diff(groups.dt_offsets)  # each group's image and category repeated: no random reads
    # numpy releases the GIL in each: side by side on threads
    det_category, det_image, det_score, ndet = run_tasks([
        partial(np.repeat, groups.category if params.use_cats else np.zeros(len(groups), np.int32), per_group),
        partial(np.repeat, groups.image, per_group),
        partial(np.take, dets.score, groups.dt_rows),
        partial(np.bincount, dt_cat, minlength=n_cat),
    ])  # fmt: skip
    return CocoMatches(
        det_category=det_category,
        det_image=det_image,
        det_rank=groups.dt_rank,
        det_score=det_score,
        state=state,
        npig=positives_per_category(gt_cat, gt.area, gt_ignore, params.area_ranges, n_cat),
        ndet=ndet.astype(np.int64),
    )


def _need(container, key: str, iou_type: str):
    if getattr(container, key) is None:
        raise InputError(container.source, None, f"loaded without {key}: load it with iou_type={iou_type!r}")
    return getattr(container, key)


def overlaps(groups, dets: Detections, gt: GroundTruth, params: CocoParams) -> np.ndarray:
    """The overlap of every (detection, ground truth) pair of every group: box IoU, mask IoU or OKS."""
    blocks = (groups.gt_rows, groups.gt_offsets, groups.dt_rows, groups.dt_offsets, groups.pair_offsets())
    if params.iou_type == "bbox":
        from deteval.geometry.boxes import box_iou_blocks

        return box_iou_blocks(*blocks, gt.boxes, gt.crowd, dets.boxes)
    if params.iou_type == "segm":
        from deteval.geometry.masks import mask_iou_blocks

        return mask_iou_blocks(*blocks, _need(gt, "masks", "segm"), gt.crowd, _need(dets, "masks", "segm"))
    from deteval.geometry.keypoints import oks_blocks

    gt_kpts, dt_kpts = _need(gt, "keypoints", "keypoints"), _need(dets, "keypoints", "keypoints")
    k = len(params.kpt_sigmas)
    for c, who in ((gt_kpts, gt.source), (dt_kpts, dets.source)):
        if len(c) and c.shape[1] != 3 * k:
            raise InputError(who, None, f"keypoints have {c.shape[1] // 3} points but there are {k} sigmas")
    return oks_blocks(*blocks, gt_kpts, gt.boxes, gt.area, dt_kpts, params.kpt_sigmas)


def result_from_matches(matches: CocoMatches, categories: IdTable, params: CocoParams) -> EvalResult:
    """Rank, accumulate and summarise matches into the protocol's result."""
    from deteval.accumulate import accumulate

    m = matches
    precision, recall, scores = accumulate(
        m.det_category, m.det_image, m.det_rank, m.det_score, m.state, m.npig,
        np.array(params.max_dets), params.rec_thrs,
    )  # fmt: skip
    stats, lines = summarize(precision, recall, params)
    return EvalResult(
        protocol="coco",
        iou_type=params.iou_type,
        stats=stats,
        per_class=_per_class(precision, recall, m.npig, m.ndet, categories, params),
        arrays={
            "precision": precision,
            "recall": recall,
            "scores": scores,
            "iou_thrs": params.iou_thrs,
            "rec_thrs": params.rec_thrs,
            "cat_ids": categories.ids if params.use_cats else np.array([-1]),
            "area_labels": np.array(params.area_labels),
            "max_dets": np.array(params.max_dets),
        },
        summary_lines=lines,
        params=params.to_dict(),
        outcomes=Outcomes(
            category=m.det_category,
            image=m.det_image,
            score=m.det_score,
            state=m.state,
            npos=m.npig,
            iou_thrs=params.iou_thrs,
            area_labels=params.area_labels,
            category_ids=categories.ids if params.use_cats else np.array([-1]),
            category_names=tuple(categories.name_of(k) for k in range(len(categories)))
            if params.use_cats
            else ("all",),
        ),
    )


def evaluate(
    dets: Detections,
    gt: GroundTruth,
    *,
    iou_type: str = "bbox",
    compat: bool = True,
    iou_thrs: Sequence[float] | None = None,
    area_ranges: Mapping[str, Sequence[float]] | None = None,
    max_dets: Sequence[int] | None = None,
    use_cats: bool = True,
    kpt_sigmas: Sequence[float] | None = None,
) -> EvalResult:
    """Evaluate loaded detections against loaded ground truth with the COCO protocol."""
    params = make_params(
        iou_type,
        iou_thrs=iou_thrs,
        area_ranges=area_ranges,
        max_dets=max_dets,
        use_cats=use_cats,
        compat=compat,
        kpt_sigmas=kpt_sigmas,
    )
    return result_from_matches(match(dets, gt, params), gt.categories, params)


def _mean_valid(s: np.ndarray) -> float:
    valid = s[s > -1]
    return -1.0 if len(valid) == 0 else float(np.mean(valid))


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
        return _mean_valid(arr[:, :, k][..., a, m])
    return _mean_valid(arr[:, k][..., a, m])


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


def summarize(precision: np.ndarray, recall: np.ndarray, params: CocoParams) -> tuple[dict[str, float], list[str]]:
    """The headline stats and pycocotools' printed summary lines."""
    stats: dict[str, float] = {}
    lines = []
    for name, is_ap, iou, area, max_det in _stat_specs(params):
        value = _select(precision if is_ap else recall, params, iou, area, max_det)
        stats[name] = value
        title, kind = ("Average Precision", "(AP)") if is_ap else ("Average Recall", "(AR)")
        iou_str = f"{params.iou_thrs[0]:0.2f}:{params.iou_thrs[-1]:0.2f}" if iou is None else f"{iou:0.2f}"
        lines.append(
            f" {title:<18} {kind} @[ IoU={iou_str:<9} | area={area:>6s} | maxDets={max_det:>3d} ] = {value:0.3f}"
        )
    return stats, lines


def _per_class(precision, recall, npig, ndet, categories: IdTable, params: CocoParams) -> list[dict]:
    if not params.use_cats:
        return []
    specs = _stat_specs(params)
    ap_specs = [s for s in specs if s[1]]
    ar_last = ("AR", False, None, "all", params.max_dets[-1])
    all_idx = params.area_labels.index("all") if "all" in params.area_labels else None
    columns = {name: _per_class_means(precision if is_ap else recall, params, iou, area, max_det)
               for name, is_ap, iou, area, max_det in [*ap_specs, ar_last]}  # fmt: skip
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
    arr, a, m = _summarize_indices(arr, params, iou, area, max_det)
    if len(a) != 1 or len(m) != 1 or arr.shape[0] == 0:
        return np.array([_select(arr, params, None, area, max_det, k=slice(k, k + 1)) for k in range(n_cat)])
    sub = np.moveaxis(arr[..., a[0], m[0]], k_axis, 0).reshape(n_cat, -1)
    valid = sub > -1
    all_valid, none_valid = valid.all(axis=1), ~valid.any(axis=1)
    out = np.where(none_valid, -1.0, np.ascontiguousarray(sub).mean(axis=1))
    for k in np.flatnonzero(~(all_valid | none_valid)):  # mixed rows: never from accumulate, kept exact anyway
        out[k] = _mean_valid(sub[k])
    return out


def add_cli_arguments(parser) -> None:
    """COCO's own flags for the ``deteval`` command line."""
    g = parser.add_argument_group("coco protocol")
    g.add_argument("--iou-thrs", type=float, nargs="+", metavar="T", help="IoU thresholds (default: .50:.05:.95)")
    g.add_argument("--max-dets", type=int, nargs="+", metavar="N", help="max detections per image (default: 1 10 100)")
    g.add_argument(
        "--area-range",
        action="append",
        metavar="LABEL:LO:HI",
        help="an area range, repeatable (default: all, small, medium, large as COCO defines them)",
    )
    g.add_argument("--no-cats", action="store_true", help="pool categories (pycocotools' useCats=0)")
    g.add_argument(
        "--kpt-sigmas",
        type=float,
        nargs="+",
        metavar="S",
        help="keypoint sigmas, one per keypoint (default: COCO's 17)",
    )


def options_from_args(args) -> dict:
    """Protocol options from the parsed command line."""
    options: dict = {"use_cats": not args.no_cats}
    if args.kpt_sigmas:
        options["kpt_sigmas"] = args.kpt_sigmas
    if args.iou_thrs:
        options["iou_thrs"] = args.iou_thrs
    if args.max_dets:
        options["max_dets"] = args.max_dets
    if args.area_range:
        ranges = {}
        for spec in args.area_range:
            try:
                label, lo, hi = spec.split(":")
                ranges[label] = (float(lo), float(hi))
            except ValueError:
                raise InputError("--area-range", spec, "expected LABEL:LO:HI, e.g. small:0:1024") from None
        options["area_ranges"] = ranges
    return options

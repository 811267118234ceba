"""COCO's accumulation over a resampled or sliced set of images, from one matching pass.

A bootstrap replicate or a slice is a list of images, *draws*, each a dense image index (an image may
come more than once). Evaluating it means evaluating the dataset those images make when materialised:
draw ``j`` becomes the ``j``-th image, with its ground truth and detections copied. Matching is per
(image, category), so every copy of an image has its original detections' states; only accumulation
changes. This module re-accumulates without copying anything:

- each category's detections are ranked once, by descending score, ties by image then rank
  (:func:`build_index`): the order of the original evaluation;
- a replicate weighs each detection by its image's count of draws, and counts a true positive as
  that many true positives and a false positive as that many false positives, which is what the
  copies give when they stand next to each other in the ranking;
- they do unless scores tie: pycocotools breaks ties between images by image order, here the draw
  order, and within an image by rank. A run of equal scores that holds a true and a false positive of
  one column (*mixed*) is taken apart: the copies of its images that hold a true positive are put in
  draw order, and every other copy is counted in the stretch between two of them where it stands.

What a replicate walks is built once (:func:`build_index`), so that its work is little more than one
look-up of an image's weight per row:

- rows with no true positive between two true positives add only to false-positive counts, and only
  through their pattern (their state row and max-dets cut; coco has a few hundred): they are grouped by
  pattern, and a replicate sums each group's image weights and adds the pattern once;
- a true positive writes its false-positive count only where the precision is read (``need_precision``;
  the recall needs only the count of true positives), and its true-positive columns come listed;
- a mixed run keeps its true-positive blocks (an image's rows in rank order) and, for its other rows,
  the image and the pattern's place among the run's patterns: a replicate counts those per stretch.

On the ``coco`` benchmark preset (485,000 ranked rows; 8,200 mixed runs hold 35% of them) this took a
replicate from 23 ms to about 12 ms on one core (benchmarks/README.md, "Bootstrap").

The precision points come from :func:`deteval.accumulation.integrators.coco101_from_true_positives`, the function
COCO's accumulation (:mod:`deteval.accumulation.accumulate`) uses, on the same counts, so a replicate's arrays are
the same bits as evaluating the materialised dataset.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from deteval.accumulation.accumulate import group_order
from deteval.accumulation.integrators import coco101_from_true_positives, counts_reaching
from deteval.jit import njit
from deteval.matching.sorting import sort_by_score_desc, sort_slices_by_score_desc


@dataclass(frozen=True)
class ReplayIndex:
    """One evaluation's matched detections ranked per category, and its ground truth, for re-accumulation.

    Detections outside the largest max-dets cut are dropped. ``state`` is ``(N, A * T)``, column
    ``a * n_thr + t``; ``tie_end[p]`` is the end of the run of equal scores that starts at row ``p``
    (``p + 1`` when none ties with it). Only a run that is ``mixed`` needs its copies in draw order: in
    any other, each column's true positives see the same false-positive counts in every order.
    """

    state: np.ndarray  # int8 (N, A * T), rows in ranked order
    n_thr: int
    image: np.ndarray  # int64 (N,), dense image index
    m0: np.ndarray  # int64 (N,), the least max-dets index that keeps the row
    rank: np.ndarray  # int64 (N,), rank within the (image, category)
    tie_end: np.ndarray  # int64 (N,)
    mixed: np.ndarray  # bool (N,): the run starting at row p holds a true and a false positive of one column
    is_tp: np.ndarray  # bool (N,): a true positive in some column
    pattern: np.ndarray  # int64 (N,): the row's (state row, m0) among the patterns (rows with no true positive)
    pattern_fp: np.ndarray  # int64 (P, A * T): 1 where the pattern is a false positive
    pattern_m0: np.ndarray  # int64 (P,)
    cat_off: np.ndarray  # int64 (K + 1,)
    gt_image: np.ndarray  # int64 (G,)
    gt_category: np.ndarray  # int64 (G,)
    gt_counted: np.ndarray  # bool (G, A): the ground truth counts as a positive in area range a
    n_images: int
    max_dets: np.ndarray  # int64 (M,)
    rec_thrs: np.ndarray  # float64 (R,)
    span: int = 1  # ranks are below it (rank, span: for callers; the kernel reads a run's order off its blocks)
    # what a replicate walks: each category's items (cat_item_off), in ranked order. Kind 0: a group, the rows
    # of one pattern between two true positives (grp_pat; their images grp_img[grp_off[g]:grp_off[g + 1]]).
    # Kind 1: a true-positive row outside mixed runs. Kind 2: mixed run u: its blocks (an image's rows, holding
    # a true positive: rows blk_start..blk_end - 1 of image blk_img) run_blk_off[u]:run_blk_off[u + 1]; its
    # other rows' images nt_img[run_nt_off[u]:run_nt_off[u + 1]] and patterns, as places nt_lp among the
    # run's distinct patterns run_pats[run_pat_off[u]:run_pat_off[u + 1]]. tp_cols[tp_col_off[r]:...]: row
    # r's true-positive columns.
    item_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    item_arg: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cat_item_off: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    grp_pat: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    grp_off: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    grp_img: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    run_blk_off: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    blk_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    blk_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    blk_img: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    run_nt_off: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    nt_img: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    nt_lp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    run_pat_off: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    run_pats: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tp_col_off: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    tp_cols: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The shapes of ``precision`` (T, R, K, A, M) and ``recall`` (T, K, A, M)."""
        t, k, a, m = self.n_thr, len(self.cat_off) - 1, self.state.shape[1] // self.n_thr, len(self.max_dets)
        return (t, len(self.rec_thrs), k, a, m), (t, k, a, m)


def build_index(
    det_category: np.ndarray,
    det_image: np.ndarray,
    det_rank: np.ndarray,
    det_score: np.ndarray,
    state: np.ndarray,
    gt_image: np.ndarray,
    gt_category: np.ndarray,
    gt_counted: np.ndarray,
    n_cat: int,
    n_images: int,
    max_dets: np.ndarray,
    rec_thrs: np.ndarray,
) -> ReplayIndex:
    """Rank matched detections (as :func:`deteval.accumulation.accumulate.accumulate` does) once, for many replicates.

    ``det_*`` and ``state`` are a matching's rows (``CocoMatches``), ``gt_counted`` each ground truth's
    "counts as a positive" flag per area range (what ``npig`` counts).
    """
    n, n_area, n_thr = state.shape
    order, cat_off, _ = group_order(det_category, det_image, det_rank, n_cat)
    score = np.ascontiguousarray(det_score, np.float64)
    if n:
        sort_slices_by_score_desc(order, cat_off, score)
    max_dets = np.ascontiguousarray(max_dets, np.int64)
    rank = np.asarray(det_rank, np.int64)[order]
    m0 = np.searchsorted(max_dets, rank, side="right")  # max dets m keep a row when rank < max_dets[m]
    keep = m0 < len(max_dets)
    order, rank, m0 = order[keep], rank[keep], m0[keep]
    category = np.asarray(det_category, np.int64)[order]
    cat_off = np.searchsorted(category, np.arange(n_cat + 1), side="left").astype(np.int64)
    s = score[order]
    # runs of equal scores within a category; -inf stands for NaN scores, and compares equal as NaN would sort
    starts = np.flatnonzero(np.concatenate([[True], (s[1:] != s[:-1]) | (category[1:] != category[:-1])]))
    ends = np.append(starts[1:], len(order)) if len(order) else starts
    ranked = np.ascontiguousarray(np.asarray(state, np.int8).reshape(n, n_area * n_thr)[order])
    mixed = np.zeros(len(order), np.bool_)
    if len(order):
        some_tp = np.logical_or.reduceat(ranked == 1, starts, axis=0)
        some_fp = np.logical_or.reduceat(ranked == 0, starts, axis=0)
        mixed[starts] = (some_tp & some_fp).any(axis=1) & (ends - starts > 1)
    # rows with no true positive only add to false-positive counts: a replicate sums their weights per
    # distinct (state row, m0) pattern between true positives, and adds each pattern once
    is_tp = (ranked == 1).any(axis=1) if len(order) else np.zeros(0, np.bool_)
    pattern, first = _pattern_ids(ranked, m0)
    index = ReplayIndex(
        is_tp=is_tp,
        pattern=pattern,
        pattern_fp=(ranked[first] == 0).astype(np.int64),
        pattern_m0=m0[first].astype(np.int64),
        state=ranked,
        n_thr=n_thr,
        image=np.asarray(det_image, np.int64)[order],
        m0=m0.astype(np.int64),
        rank=rank,
        tie_end=np.repeat(ends, ends - starts).astype(np.int64),
        mixed=mixed,
        cat_off=cat_off,
        gt_image=np.asarray(gt_image, np.int64),
        gt_category=np.asarray(gt_category, np.int64),
        gt_counted=np.ascontiguousarray(gt_counted, np.bool_).reshape(len(gt_image), n_area),
        n_images=int(n_images),
        max_dets=max_dets,
        rec_thrs=np.ascontiguousarray(rec_thrs, np.float64),
        span=int(rank.max()) + 1 if len(rank) else 1,
    )
    return replace(index, **_items(index, cat_off))


def _items(index: ReplayIndex, cat_off: np.ndarray) -> dict[str, np.ndarray]:
    """The items a replicate walks (see :class:`ReplayIndex`), built once with numpy."""
    n = len(index.image)
    image, is_tp = index.image, index.is_tp
    # rows inside mixed runs
    run_start = np.flatnonzero(index.mixed)
    run_end = index.tie_end[run_start]
    depth = np.zeros(n + 1, np.int64)
    np.add.at(depth, run_start, 1)
    np.add.at(depth, run_end, -1)
    in_run = np.cumsum(depth[:n]) > 0
    cat_start = np.zeros(n, np.bool_)
    cat_start[cat_off[:-1][cat_off[:-1] < n]] = True
    # groups: a stretch of rows with no true positive outside runs, split by pattern (order in it is free)
    plain = ~is_tp & ~in_run
    stretch = np.cumsum(~plain | cat_start)
    rows = np.flatnonzero(plain)
    rows = rows[np.lexsort((index.pattern[rows], stretch[rows]))]
    new = np.ones(len(rows), np.bool_)
    new[1:] = (stretch[rows[1:]] != stretch[rows[:-1]]) | (index.pattern[rows[1:]] != index.pattern[rows[:-1]])
    first = np.flatnonzero(new)
    grp_off = np.append(first, len(rows)).astype(np.int64)
    grp_row = rows[first]  # a row of the group: its pattern; its stretch's rows all lie between the same items
    tp_rows = np.flatnonzero(is_tp & ~in_run)
    # mixed runs: a run's rows come by image then rank; an image's rows holding a true positive make a block
    run_rows = np.flatnonzero(in_run)
    run_id = np.searchsorted(run_start, run_rows, side="right") - 1
    b_new = np.ones(len(run_rows), np.bool_)
    b_new[1:] = (image[run_rows[1:]] != image[run_rows[:-1]]) | (run_id[1:] != run_id[:-1])
    first_of = np.flatnonzero(b_new)
    blk_len = np.diff(np.append(first_of, len(run_rows)))
    blk_tp = np.logical_or.reduceat(is_tp[run_rows], first_of) if len(run_rows) else np.zeros(0, np.bool_)
    blk_start = run_rows[first_of][blk_tp]
    blk_end = blk_start + blk_len[blk_tp]
    run_blk_off = np.searchsorted(blk_start, np.append(run_start, n)).astype(np.int64)
    # the other rows of a run: their image and their pattern's place among the run's distinct patterns
    row_tp_blk = np.repeat(blk_tp, blk_len)
    nt, nt_run = run_rows[~row_tp_blk], run_id[~row_tp_blk]
    n_pat = len(index.pattern_m0) + 1
    code = nt_run * n_pat + index.pattern[nt]
    pairs = np.unique(code)
    run_pat_off = np.searchsorted(pairs // n_pat, np.arange(len(run_start) + 1)).astype(np.int64)
    nt_lp = np.searchsorted(pairs, code) - run_pat_off[nt_run]
    # items in ranked order: a group stands at its first row (its stretch holds no other item)
    where = np.concatenate([grp_row, tp_rows, run_start])
    kind = np.repeat(np.array([0, 1, 2], np.int8), [len(grp_row), len(tp_rows), len(run_start)])
    arg = np.concatenate([np.arange(len(grp_row)), tp_rows, np.arange(len(run_start))]).astype(np.int64)
    o = np.argsort(where, kind="stable")
    tp_r, tp_c = np.nonzero(index.state == 1)
    return {
        "item_kind": kind[o], "item_arg": arg[o],
        "cat_item_off": np.searchsorted(where[o], cat_off, side="left").astype(np.int64),
        "grp_pat": index.pattern[grp_row].astype(np.int64), "grp_off": grp_off, "grp_img": image[rows].astype(np.int32),
        "run_blk_off": run_blk_off, "blk_start": blk_start.astype(np.int64), "blk_end": blk_end.astype(np.int64),
        "blk_img": image[blk_start].astype(np.int64),
        "run_nt_off": np.searchsorted(nt_run, np.arange(len(run_start) + 1)).astype(np.int64),
        "nt_img": image[nt].astype(np.int32), "nt_lp": nt_lp.astype(np.int32),
        "run_pat_off": run_pat_off, "run_pats": (pairs % n_pat).astype(np.int64),
        "tp_col_off": np.searchsorted(tp_r, np.arange(n + 1)).astype(np.int64), "tp_cols": tp_c.astype(np.int64),
    }  # fmt: skip


def _pattern_ids(state: np.ndarray, m0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's pattern (its distinct (state row, m0) pair) and a row of each pattern: np.unique's rows,
    by a lexsort of the rows' bytes read as 64-bit words (a state is one byte)."""
    n, v = state.shape
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    padded = np.zeros((n, -(-v // 8) * 8), np.int8)
    padded[:, :v] = state
    keys = [np.asarray(m0, np.uint64), *padded.view(np.uint64).T]
    keys_arr = np.stack(keys)
    order = np.lexsort(keys_arr)
    ordered = keys_arr[:, order]
    new = np.concatenate([[True], (ordered[:, 1:] != ordered[:, :-1]).any(axis=0)])
    pattern = np.empty(n, np.int64)
    pattern[order] = np.cumsum(new) - 1
    return pattern, order[new]


@njit(cache=True, nogil=True, inline="always")
def _take(row, wt, st, m0, tp_col_off, tp_cols, fp_by_m0, n_tp, tp_fp, need_col, has):  # pragma: no cover - numba
    """Count ``wt`` copies of ranked row ``row``, standing next to each other; False when the copies would
    overflow ``tp_fp`` (more true positives than positives: inconsistent input).

    :mod:`deteval.accumulation.accumulate`'s per-row step, kept apart for three differences: a row counts ``wt`` times
    (copies of a drawn image); a true positive's false-positive count is written only where
    ``need_col[m, j]`` (the precision is read there; elsewhere the recall needs only ``n_tp``, added for
    all columns at once); and the row's true-positive columns come listed (``tp_cols``), not searched."""
    n_md, n_var, cap = tp_fp.shape
    m = m0[row]
    for mm in range(m, n_md):
        has[mm] = True
    srow = st[row]
    frow = fp_by_m0[m]
    for j in range(n_var):  # branch-free (it vectorises)
        frow[j] += wt if srow[j] == 0 else 0
    ok = True
    x0, x1 = tp_col_off[row], tp_col_off[row + 1]
    for mm in range(m, n_md):
        if need_col[mm, n_var]:  # some column's precision is read at these max dets
            for x in range(x0, x1):
                j = tp_cols[x]
                if not need_col[mm, j]:
                    continue
                n_fp = 0
                for m1 in range(mm + 1):
                    n_fp += fp_by_m0[m1, j]
                v = n_tp[mm, j]
                if v + wt > cap:
                    ok = False
                    continue
                for c in range(wt):
                    tp_fp[mm, j, v + c] = n_fp
        nrow = n_tp[mm]
        for j in range(n_var):
            nrow[j] += wt if srow[j] == 1 else 0
    return ok


@njit(cache=True, nogil=True, inline="always")
def _add_pattern(q_, wt, pattern_fp, pattern_m0, fp_by_m0, has):  # pragma: no cover - numba
    """``wt`` detections of pattern ``q_`` (no true positive anywhere) add to the false-positive counts."""
    m = pattern_m0[q_]
    for mm in range(m, len(has)):
        has[mm] = True
    frow = fp_by_m0[m]
    prow = pattern_fp[q_]
    for j in range(len(frow)):
        frow[j] += wt * prow[j]


@njit(cache=True, nogil=True)
def _replicate_kernel(
    draw, n_images, st, n_thr, image, m0, is_tp, pattern, pattern_fp, pattern_m0, item_kind, item_arg,
    cat_item_off, grp_pat, grp_off, grp_img, run_blk_off, blk_start, blk_end, blk_img, run_nt_off, nt_img, nt_lp,
    run_pat_off, run_pats, tp_col_off, tp_cols, gt_image, gt_category, gt_counted, n_md, rec_thrs, need_p,
    precision, recall,
):  # pragma: no cover - numba  # fmt: skip
    """One replicate's ``precision[A, M, T, K, R]`` (where ``need_p[a, m]``) and ``recall[A, M, T, K]``;
    False on inconsistent input. Walks each category's items (:class:`ReplayIndex`)."""
    n = len(draw)
    w = np.zeros(n_images, np.int64)
    for j in range(n):
        w[draw[j]] += 1
    # the draw positions of each image, ascending (a counting sort of the draws)
    pos_off = np.zeros(n_images + 1, np.int64)
    for i in range(n_images):
        pos_off[i + 1] = pos_off[i] + w[i]
    fill = pos_off[:-1].copy()
    pos = np.empty(n, np.int64)
    for j in range(n):
        pos[fill[draw[j]]] = j
        fill[draw[j]] += 1
    n_cat = len(cat_item_off) - 1
    n_var = st.shape[1]
    n_area = n_var // n_thr
    n_rec = len(rec_thrs)
    npig = np.zeros((n_cat, n_area), np.int64)
    for g in range(len(gt_image)):
        wg = w[gt_image[g]]
        if wg:
            for a in range(n_area):
                if gt_counted[g, a]:
                    npig[gt_category[g], a] += wg
    cap = 1
    for k in range(n_cat):
        for a in range(n_area):
            cap = max(cap, npig[k, a])
    need_col = np.zeros((n_md, n_var + 1), np.bool_)  # column n_var: any column
    for m in range(n_md):
        for j in range(n_var):
            need_col[m, j] = need_p[j // n_thr, m]
            need_col[m, n_var] |= need_col[m, j]
    n_tp = np.empty((n_md, n_var), np.int64)
    fp_by_m0 = np.empty((n_md, n_var), np.int64)
    tp_fp = np.empty((n_md, n_var, cap), np.int32)  # int32 as accumulate's: half the cache
    has = np.empty(n_md, np.bool_)
    env = np.empty(cap)
    q = np.empty(n_rec)
    which = np.empty(n_rec, np.int64)
    need = np.empty(n_rec, np.int64)
    # scratch for a mixed run's copies, grown as needed
    t_key = np.empty(16)  # minus the draw position of each copy of a block holding a true positive
    t_ord = np.empty(16, np.int64)
    t_blk = np.empty(16, np.int64)
    t_pos = np.empty(16, np.int64)
    seg_w = np.empty(64, np.int64)
    ok = True
    for k in range(n_cat):
        for m in range(n_md):
            has[m] = False
            for j in range(n_var):
                n_tp[m, j] = 0
                fp_by_m0[m, j] = 0
        for it in range(cat_item_off[k], cat_item_off[k + 1]):
            kind, arg = item_kind[it], item_arg[it]
            if kind == 0:  # a pattern's rows between two true positives: their weights, summed
                s = 0
                for x in range(grp_off[arg], grp_off[arg + 1]):
                    s += w[grp_img[x]]
                if s:
                    _add_pattern(grp_pat[arg], s, pattern_fp, pattern_m0, fp_by_m0, has)
                continue
            if kind == 1:  # a true positive (in some column) whose copies may stand together
                wt = w[image[arg]]
                if wt:
                    ok &= _take(arg, wt, st, m0, tp_col_off, tp_cols, fp_by_m0, n_tp, tp_fp, need_col, has)
                continue
            # equal scores mixing true and false positives: the copies stand in (draw position, rank) order.
            # A run's rows come by image then rank: one block per image. The copies of blocks holding a true
            # positive are sorted by position; every other block's copy only needs how many of those stand
            # before it (its segment): seg_w counts each of the run's patterns per segment.
            b0, b1 = run_blk_off[arg], run_blk_off[arg + 1]
            c = 0
            for b in range(b0, b1):
                c += w[blk_img[b]]
            l0 = run_pat_off[arg]
            n_lp = run_pat_off[arg + 1] - l0
            if c + 1 > len(t_key):
                t_key = np.empty(2 * c + 2)
                t_ord = np.empty(2 * c + 2, np.int64)
                t_blk = np.empty(2 * c + 2, np.int64)
                t_pos = np.empty(2 * c + 2, np.int64)
            if (c + 1) * n_lp > len(seg_w):
                seg_w = np.empty(2 * (c + 1) * n_lp, np.int64)
            c = 0
            for b in range(b0, b1):
                i = blk_img[b]
                for x in range(pos_off[i], pos_off[i + 1]):
                    t_key[c] = -pos[x]
                    t_blk[c] = b
                    t_ord[c] = c
                    c += 1
            if c > 16:
                sort_by_score_desc(t_ord[:c], t_key)  # ascending position (positions are distinct)
            elif c > 1:  # few: each copy's place is the count of copies before it
                for y in range(c):
                    s = 0
                    for z in range(c):
                        s += t_key[z] > t_key[y]
                    t_ord[s] = y
            for s in range(c):
                t_pos[s] = -t_key[t_ord[s]]
            for x in range((c + 1) * n_lp):
                seg_w[x] = 0
            e0, e1 = run_nt_off[arg], run_nt_off[arg + 1]
            if c == 0:  # no true positive drawn: every copy in the one segment
                for e in range(e0, e1):
                    i = nt_img[e]
                    seg_w[nt_lp[e]] += pos_off[i + 1] - pos_off[i]
            elif c <= 16:  # the true positives' copies before a copy's position, counted without branches
                for e in range(e0, e1):
                    i = nt_img[e]
                    for x in range(pos_off[i], pos_off[i + 1]):
                        p = pos[x]
                        s = 0
                        for y in range(c):
                            s += t_pos[y] < p
                        seg_w[s * n_lp + nt_lp[e]] += 1
            else:
                for e in range(e0, e1):
                    i = nt_img[e]
                    for x in range(pos_off[i], pos_off[i + 1]):
                        p = pos[x]
                        s, hi = 0, c
                        while s < hi:
                            mid = (s + hi) >> 1
                            if t_pos[mid] < p:
                                s = mid + 1
                            else:
                                hi = mid
                        seg_w[s * n_lp + nt_lp[e]] += 1
            for s in range(c + 1):
                base = s * n_lp
                for x in range(n_lp):
                    v = seg_w[base + x]
                    if v:
                        _add_pattern(run_pats[l0 + x], v, pattern_fp, pattern_m0, fp_by_m0, has)
                if s < c:
                    b = t_blk[t_ord[s]]
                    for r in range(blk_start[b], blk_end[b]):  # this copy's rows, by rank
                        if is_tp[r]:
                            ok &= _take(r, 1, st, m0, tp_col_off, tp_cols, fp_by_m0, n_tp, tp_fp, need_col, has)
                        else:
                            _add_pattern(pattern[r], 1, pattern_fp, pattern_m0, fp_by_m0, has)
        for a in range(n_area):
            npos = npig[k, a]
            if npos == 0:  # -1: a category without positives is never penalised
                for m in range(n_md):
                    for t in range(n_thr):
                        recall[a, m, t, k] = -1.0
                        if need_p[a, m]:
                            for r in range(n_rec):
                                precision[a, m, t, k, r] = -1.0
                continue
            counts_reaching(rec_thrs, npos, need)
            for m in range(n_md):
                for t in range(n_thr):
                    j = a * n_thr + t
                    ntp = n_tp[m, j]
                    ok &= ntp <= npos  # more true positives than positives: inconsistent input
                    recall[a, m, t, k] = ntp / npos if ntp > 0 else 0.0
                    if need_p[a, m]:
                        coco101_from_true_positives(tp_fp[m, j], ntp, need, has[m], env, q, which)
                        for r in range(n_rec):
                            precision[a, m, t, k, r] = q[r]
    return ok


KERNELS = (_replicate_kernel,)


def replicate_arrays(
    index: ReplayIndex, draw: np.ndarray, need_precision: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """COCO's ``precision`` and ``recall`` of the images ``draw`` (dense indices, in the order they stand,
    repeats allowed), as evaluating that materialised dataset gives them, laid out ``[A, M, T, R, K]``
    and ``[A, M, T, K]`` (``precision[a, m]`` is pycocotools' ``precision[:, :, :, a, m]``). The precision
    is a view of an ``[A, M, T, K, R]`` array: the kernel writes each column's 101 points side by side
    (a stride of K doubles cost 1 ms of a 12 ms replicate on coco); indexing reads the same values.

    ``need_precision`` (bool ``(A, M)``) limits the precision to the (area range, max dets) pairs asked
    for (the others are left unwritten); None computes all. The kernel holds no GIL: replicates run
    side by side on threads.
    """
    (n_thr, n_rec, n_cat, n_area, n_md), _ = index.shapes
    need = np.ones((n_area, n_md), np.bool_) if need_precision is None else np.asarray(need_precision, np.bool_)
    precision = np.empty((n_area, n_md, n_thr, n_cat, n_rec))
    recall = np.empty((n_area, n_md, n_thr, n_cat))
    if len(index.cat_item_off) != len(index.cat_off):
        raise ValueError("the index has no items: build it with build_index")
    draw = np.ascontiguousarray(draw, np.int64)
    if len(draw) and (draw.min() < 0 or draw.max() >= index.n_images):
        raise ValueError(f"image indices must lie in [0, {index.n_images})")
    ok = _replicate_kernel(
        draw, index.n_images, index.state, index.n_thr, index.image, index.m0, index.is_tp, index.pattern,
        index.pattern_fp, index.pattern_m0, index.item_kind, index.item_arg, index.cat_item_off, index.grp_pat,
        index.grp_off, index.grp_img, index.run_blk_off, index.blk_start, index.blk_end, index.blk_img,
        index.run_nt_off, index.nt_img, index.nt_lp, index.run_pat_off, index.run_pats, index.tp_col_off, index.tp_cols,
        index.gt_image, index.gt_category, index.gt_counted, n_md, index.rec_thrs, need, precision,
        recall,
    )  # fmt: skip
    if not ok:
        raise ValueError("a category has more true positives than positives: matches and ground truth disagree")
    return precision.transpose(0, 1, 2, 4, 3), recall


def as_pycocotools(precision: np.ndarray, recall: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`replicate_arrays`' arrays as pycocotools lays them out: ``[T, R, K, A, M]`` and ``[T, K, A, M]``."""
    return precision.transpose(2, 3, 4, 0, 1), recall.transpose(2, 3, 0, 1)

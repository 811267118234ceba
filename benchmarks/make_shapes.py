"""Shapes for the benchmark generators: image sizes, boxes, polygons and their RLE masks (vectorised numpy).

Shared by ``make_data.py`` (COCO boxes, masks, keypoints); the RLE encoder writes what
``pycocotools.mask.encode`` writes (compressed ``counts`` strings), without calling it.
"""

from __future__ import annotations

import numpy as np


def sizes(rng, n):
    """Image (width, height) around 640x480, either orientation."""
    short = rng.choice([480, 427, 426, 424, 428, 360, 512, 640, 478, 500], n,
                       p=[.46, .16, .05, .05, .04, .05, .04, .08, .03, .04])
    land = rng.random(n) < 0.72
    w = np.where(land, 640, short)
    h = np.where(land, short, 640)
    return w.astype(np.float64), h.astype(np.float64)


def boxes_in(rng, n, iw, ih, log_med, log_sd):
    """Random boxes [x, y, w, h] inside images of size (iw, ih); sqrt(area) log-normal."""
    side = np.exp(rng.normal(log_med, log_sd, n))
    aspect = np.exp(rng.normal(0.0, 0.55, n))
    bw = np.clip(side * np.sqrt(aspect), 1.0, iw)
    bh = np.clip(side / np.sqrt(aspect), 1.0, ih)
    x = rng.random(n) * (iw - bw)
    y = rng.random(n) * (ih - bh)
    return x, y, bw, bh


def clip_round(x, y, w, h, iw, ih):
    """Clip boxes to the image and round to 2 decimals, keeping w, h >= 0.01."""
    x1 = np.clip(x, 0, iw)
    y1 = np.clip(y, 0, ih)
    x2 = np.clip(x + w, 0, iw)
    y2 = np.clip(y + h, 0, ih)
    x1 = np.round(np.minimum(x1, iw - 0.01), 2)
    y1 = np.round(np.minimum(y1, ih - 0.01), 2)
    w = np.maximum(np.round(x2 - x1, 2), 0.01)
    h = np.maximum(np.round(y2 - y1, 2), 0.01)
    return np.stack([x1, y1, w, h], axis=1)


def polygons(rng, box, npts, points=False):
    """One star-shaped polygon of npts[i] points inside each box, as lists of 2-dp floats.

    With ``points``, also the (n, 16) vertex arrays ``px, py`` (only the first npts[i] are used).
    """
    n, k = len(box), 16
    ang = np.sort(rng.random((n, k)), axis=1) * 2 * np.pi
    rad = rng.uniform(0.55, 1.0, (n, k))
    cx = box[:, 0:1] + box[:, 2:3] / 2
    cy = box[:, 1:2] + box[:, 3:4] / 2
    px = np.round(cx + np.cos(ang) * rad * box[:, 2:3] / 2, 2)
    py = np.round(cy + np.sin(ang) * rad * box[:, 3:4] / 2, 2)
    xy = np.empty((n, 2 * k))
    xy[:, 0::2] = px
    xy[:, 1::2] = py
    rows = xy.tolist()
    segs = [[r[: 2 * m]] for r, m in zip(rows, npts.tolist())]
    return (segs, px, py) if points else segs


def crowd_rle(box_int, iw, ih):
    """Uncompressed column-major RLE of the integer box region (what COCO crowd GT carry)."""
    out = []
    for (x0, y0, bw, bh), w, h in zip(box_int.tolist(), iw.tolist(), ih.tolist()):
        w, h = int(w), int(h)
        counts = [x0 * h + y0]
        for _ in range(bw - 1):
            counts += [bh, h - bh]
        counts.append(bh)
        counts.append(w * h - sum(counts))
        out.append(counts)
    return out


# Detection masks: polygons rasterised at pixel centres straight into column-major runs, then
# written as COCO compressed RLE strings, the bytes pycocotools.mask.encode gives for that mask.
RLE_CHUNK_COLUMNS = 1_000_000  # image columns rasterised at once (~2 edge crossings each)


def star(rng, box, npts, k=16):
    """Star-shaped polygons of npts[i] vertices around each box's centre: (n, k) x and y, NaN past npts."""
    n = len(box)
    j = np.arange(k)
    ang = np.where(j < npts[:, None], rng.random((n, k)), 2.0)  # unused vertices sort last
    ang = np.sort(ang, axis=1) * 2 * np.pi
    rad = rng.uniform(0.55, 1.0, (n, k))
    px = box[:, 0:1] + box[:, 2:3] / 2 * (1 + np.cos(ang) * rad)
    py = box[:, 1:2] + box[:, 3:4] / 2 * (1 + np.sin(ang) * rad)
    unused = j >= npts[:, None]
    px[unused] = np.nan
    py[unused] = np.nan
    return px, py


def rle_runs(px, py, h, w):
    """Column-major runs (0s first) of each polygon's mask on its h x w image, for a chunk.

    Pixel (column c, row r) is in the mask when its centre (c + 0.5, r + 0.5) is inside the
    polygon (even-odd rule): every edge is crossed by the vertical lines through the centres of
    the columns it spans (half-open, so a vertex on a line counts once); sorted by (mask, column,
    y), consecutive crossings pair up, and each pair covers the rows whose centres lie between
    them. px, py: (n, K) vertices, NaN past a polygon's last. Returns (runs int64, number of
    runs per mask).
    """
    n, k = px.shape
    last = np.isfinite(px).sum(axis=1)
    valid = np.arange(k) < last[:, None]
    nxt = np.where(np.arange(k) + 1 < last[:, None], np.arange(k) + 1, 0)
    ed = np.broadcast_to(np.arange(n)[:, None], (n, k))[valid]  # each edge's mask
    xa, ya = px[valid], py[valid]
    xb, yb = np.take_along_axis(px, nxt, 1)[valid], np.take_along_axis(py, nxt, 1)[valid]
    lo = np.clip(np.ceil(np.minimum(xa, xb) - 0.5), 0, w[ed]).astype(np.int64)
    hi = np.clip(np.ceil(np.maximum(xa, xb) - 0.5), 0, w[ed]).astype(np.int64)
    cnt = np.maximum(hi - lo, 0)  # columns whose centre x is in [min(xa, xb), max(xa, xb))
    e = np.repeat(np.arange(len(ed)), cnt)
    col = lo[e] + np.arange(len(e)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    y = ya[e] + (col + 0.5 - xa[e]) * (yb[e] - ya[e]) / (xb[e] - xa[e])
    key = ed[e] * (int(w.max()) + 1) + col
    o = np.argsort(key, kind="stable")  # timsort: each edge's crossings are an ascending run
    key, y = key[o], y[o]
    # a column crossed more than twice needs its y's sorted; twice, a min / max below does it
    grp = np.cumsum(np.append(True, key[1:] != key[:-1])) - 1
    many = np.flatnonzero(np.bincount(grp)[grp] > 2)
    y[many] = y[many][np.lexsort((y[many], key[many]))]
    col = key[0::2] % (int(w.max()) + 1)  # every column has an even number of crossings
    d = key[0::2] // (int(w.max()) + 1)
    r0 = np.clip(np.ceil(np.minimum(y[0::2], y[1::2]) - 0.5), 0, h[d]).astype(np.int64)
    r1 = np.clip(np.ceil(np.maximum(y[0::2], y[1::2]) - 0.5), 0, h[d]).astype(np.int64)
    ok = r1 > r0
    base = col * h[d]
    start, stop, di = (base + r0)[ok], (base + r1)[ok], d[ok]
    # join intervals that touch (across a column boundary or a zero-width gap)
    new = np.ones(len(di), bool)
    new[1:] = (di[1:] != di[:-1]) | (start[1:] != stop[:-1])
    end = np.append(new[1:], True)
    rs, re, rd = start[new], stop[end], di[new]
    nr = np.bincount(rd, minlength=n)
    first = np.append(True, rd[1:] != rd[:-1]) if len(rd) else np.zeros(0, bool)
    prev = np.append(0, re[:-1])
    prev[first] = 0
    last_end = np.zeros(n, np.int64)
    final = np.append(rd[1:] != rd[:-1], True) if len(rd) else np.zeros(0, bool)
    last_end[rd[final]] = re[final]
    tail = h * w - last_end
    has_tail = tail > 0  # a mask ending on the last pixel has no trailing 0s
    length = 2 * nr + has_tail
    off = np.cumsum(length) - length
    runs = np.empty(int(length.sum()), np.int64)
    j = np.arange(len(rd)) - np.repeat(np.cumsum(nr) - nr, nr)
    runs[off[rd] + 2 * j] = rs - prev
    runs[off[rd] + 2 * j + 1] = re - rs
    runs[(off + 2 * nr)[has_tail]] = tail[has_tail]
    return runs, length


_POW2 = np.left_shift(1, np.arange(62, dtype=np.int64))


def rle_strings(runs, length):
    """COCO compressed RLE strings: from the fourth run on each is stored as its difference to
    the run two before; each value is written in 5-bit groups, low first, as chr(48 + group),
    with 0x20 on every group but the last and the last one's 0x10 giving the sign."""
    n = len(length)
    off = np.cumsum(length) - length
    owner = np.repeat(np.arange(n), length)
    idx = np.arange(len(runs)) - off[owner]
    x = runs.copy()
    later = np.flatnonzero(idx > 2)
    x[later] -= runs[later - 2]
    mag = np.where(x < 0, ~x, x)
    groups = (np.searchsorted(_POW2, mag, side="right") + 5) // 5  # bits incl. the sign, / 5
    rep = np.repeat(np.arange(len(x)), groups)
    g = np.arange(len(rep)) - np.repeat(np.cumsum(groups) - groups, groups)
    ch = (x[rep] >> (5 * g)) & 0x1F
    ch |= np.where(g < groups[rep] - 1, 0x20, 0)
    buf = (ch + 48).astype(np.uint8).tobytes().decode("ascii")
    ends = np.cumsum(np.bincount(owner, weights=groups, minlength=n).astype(np.int64)).tolist()
    return [buf[a:b] for a, b in zip([0] + ends[:-1], ends)]


def mask_rles(px, py, h, w):
    """Compressed RLE strings of polygon masks, rasterised in chunks of about RLE_CHUNK_COLUMNS columns."""
    h, w = h.astype(np.int64), w.astype(np.int64)
    cols = np.nan_to_num(np.nanmax(px, axis=1) - np.nanmin(px, axis=1)) + 2
    bounds = np.searchsorted(np.cumsum(cols), np.arange(1, int(cols.sum() // RLE_CHUNK_COLUMNS) + 1)
                             * RLE_CHUNK_COLUMNS)
    out = []
    for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(px)]):
        if b > a:
            out += rle_strings(*rle_runs(px[a:b], py[a:b], h[a:b], w[a:b]))
    return out



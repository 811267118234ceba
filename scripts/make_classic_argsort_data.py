"""Writes tests/data/argsort_classic/: permutations of ``np.argsort(-x)`` made by numpy < 1.25 (its introsort).

Run it under numpy 1.24 (``python3.11 -m venv v && v/bin/pip install "numpy==1.24.*"``; numpy alone, no
deteval): ``v/bin/python scripts/make_classic_argsort_data.py``. It refuses numpy 1.25 and later, whose
argsort is another algorithm.

Each case's input is rebuilt by the test from its recipe (``inputs()`` below, legacy ``RandomState``, whose
streams numpy keeps fixed), so ``cases.json`` stores the recipe and a SHA-256 of the int64 permutation. The
adversarial inputs (McIlroy's adversary against this introsort's median-of-3 quicksort, which drives it to
its heapsort fallback) are stored in ``killers.npz``: making them needs a model of the sort (``_Model``
below), and the script checks on that model that each one does reach the heapsort.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "argsort_classic"
SIZES = (0, 1, 2, 3, 5, 15, 16, 17, 18, 31, 32, 33, 64, 100, 257, 1000, 4096, 10_000, 100_000)
KINDS = ("random", "ties2", "ties7", "ties100", "six_decimals", "ascending", "descending", "equal",
         "nan", "signed_zero", "organ_pipe", "sawtooth")  # fmt: skip
KILLER_SIZES = (100, 300, 1000, 10_000, 100_000)


def inputs(kind: str, n: int, seed: int) -> np.ndarray:
    """The scores of one case (the test's ``np.argsort(-scores)``): float64 (n,). Shared with the test."""
    rs = np.random.RandomState(seed)
    if kind == "random":
        return rs.random_sample(n)
    if kind.startswith("ties"):  # a few distinct values
        return rs.randint(0, int(kind[4:]), n) / 8.0
    if kind == "six_decimals":  # detector output written with 6 decimals, then read back: heavy ties
        return np.round(rs.random_sample(n) ** 6, 6)
    if kind == "ascending":
        return np.sort(rs.randint(0, max(n // 4, 1), n) / 3.0)
    if kind == "descending":
        return np.sort(rs.randint(0, max(n // 4, 1), n) / 3.0)[::-1].copy()
    if kind == "equal":
        return np.full(n, 0.5)
    if kind == "nan":
        x = rs.randint(0, 5, n) / 4.0
        x[rs.random_sample(n) < 0.2] = np.nan
        return x
    if kind == "signed_zero":
        x = rs.randint(-2, 3, n) * 0.0  # -0.0 and 0.0
        x[rs.random_sample(n) < 0.3] = 1.0
        return x
    if kind == "organ_pipe":
        half = np.arange(n // 2, dtype=np.float64)
        return np.concatenate([half, half[::-1], [0.0] * (n % 2)])
    if kind == "sawtooth":
        return (np.arange(n) % 17).astype(np.float64)
    raise ValueError(kind)


def digest(perm: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(perm, np.int64).tobytes()).hexdigest()


class _Model:
    """The argsort's introsort over indices with a comparison callback, to build adversarial inputs."""

    def __init__(self, less):
        self.less = less
        self.heapsorted = 0

    def heap(self, a, lo, n):
        self.heapsorted += 1
        less, b = self.less, lo - 1
        def sift(i, n, tmp):  # noqa: E306
            j = 2 * i
            while j <= n:
                if j < n and less(a[b + j], a[b + j + 1]):
                    j += 1
                if less(tmp, a[b + j]):
                    a[b + i] = a[b + j]
                    i, j = j, 2 * j
                else:
                    break
            a[b + i] = tmp
        for top in range(n >> 1, 0, -1):
            sift(top, n, a[b + top])
        while n > 1:
            tmp = a[b + n]
            a[b + n] = a[b + 1]
            n -= 1
            sift(1, n, tmp)

    def sort(self, a):
        less, stack = self.less, []
        pl, pr = 0, len(a) - 1
        depth = 2 * (len(a).bit_length() - 1) if len(a) else 0
        while True:
            if depth < 0:
                self.heap(a, pl, pr - pl + 1)
            else:
                while pr - pl > 15:
                    pm = pl + ((pr - pl) >> 1)
                    if less(a[pm], a[pl]):
                        a[pm], a[pl] = a[pl], a[pm]
                    if less(a[pr], a[pm]):
                        a[pr], a[pm] = a[pm], a[pr]
                    if less(a[pm], a[pl]):
                        a[pm], a[pl] = a[pl], a[pm]
                    vp = a[pm]
                    pi, pj = pl, pr - 1
                    a[pm], a[pj] = a[pj], a[pm]
                    while True:
                        pi += 1
                        while less(a[pi], vp):
                            pi += 1
                        pj -= 1
                        while less(vp, a[pj]):
                            pj -= 1
                        if pi >= pj:
                            break
                        a[pi], a[pj] = a[pj], a[pi]
                    a[pi], a[pr - 1] = a[pr - 1], a[pi]
                    depth -= 1
                    if pi - pl < pr - pi:
                        stack.append((pi + 1, pr, depth))
                        pr = pi - 1
                    else:
                        stack.append((pl, pi - 1, depth))
                        pl = pi + 1
                for p in range(pl + 1, pr + 1):
                    vi, q = a[p], p
                    while q > pl and less(vi, a[q - 1]):
                        a[q] = a[q - 1]
                        q -= 1
                    a[q] = vi
            if not stack:
                return
            pl, pr, depth = stack.pop()


def killer(n: int) -> np.ndarray:
    """McIlroy's adversary ("A killer adversary for quicksort", 1999): values fixed lazily, as the sort
    compares them, so that every pivot is nearly the smallest of its range. Returns the keys (int64)."""
    gas = n
    val = np.full(n, gas, np.int64)
    state = {"solid": 0, "candidate": -1}

    def less(x, y):
        if val[x] == gas and val[y] == gas:
            z = x if x == state["candidate"] else y
            val[z] = state["solid"]
            state["solid"] += 1
        if val[x] == gas:
            state["candidate"] = x
        elif val[y] == gas:
            state["candidate"] = y
        return val[x] < val[y]

    _Model(less).sort(list(range(n)))
    check = _Model(lambda x, y: val[x] < val[y])
    check.sort(list(range(n)))
    if n > 16 and not check.heapsorted:
        raise SystemExit(f"the adversary of size {n} does not reach the heapsort")
    return val


def main() -> None:
    major, minor = (int(p) for p in np.__version__.split(".")[:2])
    if (major, minor) >= (1, 25):
        sys.exit(f"needs numpy < 1.25 (its classic introsort), this is numpy {np.__version__}")
    OUT.mkdir(parents=True, exist_ok=True)
    cases = []
    for kind in KINDS:
        for n in SIZES:
            seed = 1000 + len(cases)
            cases.append({"kind": kind, "n": n, "seed": seed, "sha256": digest(np.argsort(-inputs(kind, n, seed)))})
    killers = {}
    for n in KILLER_SIZES:
        keys = killer(n)
        score = -keys.astype(np.float64)  # the test sorts -score: the killer's keys exactly
        # the model of the sort must agree with numpy itself on its own adversary
        if digest(np.argsort(-score)) != digest(_model_argsort(keys)):
            raise SystemExit(f"the model of the introsort disagrees with numpy {np.__version__} at n={n}")
        killers[f"n{n}"] = keys.astype(np.int32)
        cases.append({"kind": "killer", "n": n, "seed": None, "sha256": digest(np.argsort(-score))})
    np.savez_compressed(OUT / "killers.npz", **killers)
    doc = {"made_by": "scripts/make_classic_argsort_data.py", "numpy": np.__version__, "cases": cases}
    (OUT / "cases.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(cases)} cases, numpy {np.__version__} -> {OUT}")


def _model_argsort(keys: np.ndarray) -> np.ndarray:
    a = list(range(len(keys)))
    k = keys.tolist()
    _Model(lambda x, y: k[x] < k[y]).sort(a)
    return np.array(a, np.int64)


if __name__ == "__main__":
    main()

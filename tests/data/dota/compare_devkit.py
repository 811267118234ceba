"""Random DOTA datasets (bow-ties, darts, near-touching boxes): DOTA_devkit's voc_eval vs deteval, AP per class.

Not a test (it needs the devkit):
    DEVKIT=<folder with dota_evaluation_task1.py and polyiou> python compare_devkit.py SEED N
"""

import contextlib
import io
import os
import shutil
import sys
import warnings

import numpy as np

sys.path.insert(0, os.environ["DEVKIT"])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
warnings.simplefilter("ignore")
import dota_evaluation_task1 as dk  # noqa: E402

import deteval  # noqa: E402

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
root = os.environ.get("SCRATCH", "/tmp") + "/dota_compare"
CL = ["a", "b"]
worst, n_cmp, n_ap = 0.0, 0, 0
for it in range(int(sys.argv[2]) if len(sys.argv) > 2 else 100):
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(f"{root}/gt")
    os.makedirs(f"{root}/dets")
    imgs = [f"i{k}" for k in range(rng.integers(1, 4))]
    gts = []
    for im in imgs:
        rows = []
        for _ in range(rng.integers(1, 7)):
            c = rng.uniform(0, 40, 2)
            q = c + rng.uniform(-8, 8, (4, 2))  # any quadrilateral: bow-ties too
            if rng.random() < 0.5:
                q = np.round(q)
            rows.append((q, CL[rng.integers(0, 2)], int(rng.random() < 0.2)))
        gts.append(rows)
        with open(f"{root}/gt/{im}.txt", "w") as f:
            f.write(
                "gsd:1\n" + "".join(" ".join(f"{v!r}" for v in q.ravel().tolist()) + f" {c} {d}\n" for q, c, d in rows)
            )
    dets = {c: [] for c in CL}
    scores = rng.permutation(200) / 200 + 0.001
    k = 0
    for i, im in enumerate(imgs):
        for q, c, _ in gts[i]:
            for _ in range(rng.integers(0, 3)):
                dets[c if rng.random() < 0.8 else CL[rng.integers(0, 2)]].append(
                    (im, scores[k], q + rng.normal(0, rng.choice([0.3, 1.5, 4]), (4, 2)))
                )
                k += 1
        for _ in range(rng.integers(0, 3)):
            c = rng.uniform(0, 40, 2)
            dets[CL[rng.integers(0, 2)]].append((im, scores[k], c + rng.uniform(-8, 8, (4, 2))))
            k += 1
    named = sorted({c for rows in gts for _, c, _ in rows})
    if any(not dets[c] for c in named):
        continue  # the devkit crashes on an empty detection file
    for c in CL:
        with open(f"{root}/dets/Task1_{c}.txt", "w") as f:
            f.write(
                "".join(
                    f"{im} {float(s)!r} " + " ".join(f"{v!r}" for v in q.ravel().tolist()) + "\n"
                    for im, s, q in dets[c]
                )
            )
    with open(f"{root}/set.txt", "w") as f:
        f.write("\n".join(imgs) + "\n")
    for use07 in (True, False):
        r = deteval.evaluate(
            f"{root}/dets", f"{root}/gt", protocol="dota", integrator="voc11" if use07 else "all_points"
        )
        got = {row["name"]: row["AP"] for row in r.per_class}
        for c in named:
            with contextlib.redirect_stdout(io.StringIO()):
                _, _, ap = dk.voc_eval(
                    f"{root}/dets/Task1_{{:s}}.txt", f"{root}/gt/{{:s}}.txt", f"{root}/set.txt", c, 0.5, use07
                )
            if np.isnan(ap):
                assert got[c] == 0.0, (it, c, ap, got[c])
                continue
            n_cmp += 1
            n_ap += ap > 0
            if abs(ap - got[c]) > 1e-12:
                print("DIFF", it, c, use07, ap, got[c])
                worst = max(worst, abs(ap - got[c]))
print("compared", n_cmp, "nonzero", n_ap, "worst", worst)

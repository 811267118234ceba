"""Runs DOTA_devkit's dota_evaluation_task1.voc_eval on this fixture; writes devkit_ap.json.

Usage (DEVKIT: a folder with the devkit's dota_evaluation_task1.py and its built polyiou, see README.md):
    PYTHONPATH=$DEVKIT python run_devkit.py
"""

import contextlib
import io
import json
import os
import warnings

import dota_evaluation_task1 as dk

here = os.path.dirname(os.path.abspath(__file__))
images = sorted(f[:-4] for f in os.listdir(os.path.join(here, "gt")) if f.endswith(".txt"))
with open(os.path.join(here, "imageset.tmp"), "w") as f:
    f.write("\n".join(images) + "\n")
classes = sorted({line.split()[8] for im in images for line in open(os.path.join(here, "gt", im + ".txt"))
                  if len(line.split()) >= 9})
out = {}
for metric, use07 in (("voc11", True), ("all_points", False)):
    aps = {}
    for cls in classes:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the class without positives divides by npos = 0
            _, _, ap = dk.voc_eval(os.path.join(here, "dets", "Task1_{:s}.txt"), os.path.join(here, "gt", "{:s}.txt"),
                                   os.path.join(here, "imageset.tmp"), cls, ovthresh=0.5, use_07_metric=use07)
        aps[cls] = float(ap)
    out[metric] = {"AP": aps, "mAP": sum(aps.values()) / len(aps)}
os.remove(os.path.join(here, "imageset.tmp"))
with open(os.path.join(here, "devkit_ap.json"), "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")

"""``--protocol coco`` on YOLO folders against pycocotools on their COCO conversion, and ``deteval convert``.

The conversion here is the test's own, written from the documented rules (docs/yolo.md): one image per
label file (ids from 1 by sorted stem), ``bbox = [W*(cx - w/2), H*(cy - h/2), W*w, H*h]`` in float64,
``area = (W*w)*(H*h)``, ``iscrowd 0``, category id = class index, annotation ids from 1 in file order,
results with ``score = conf``. pycocotools 2.0.11 evaluates that JSON; deteval's figures on the folders
must be equal (``==``) on every stat and on the precision, recall and scores arrays, with areas exactly
32² and 96² (the area ranges' bounds) among the labels.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.oracle import assert_same, run_pycocotools
from support.yolo_folders import generate, write_rows

import deteval
from deteval.cli import main

pytest.importorskip("pycocotools")
# predictions of classes without labels: pycocotools skips them, deteval too, with one warning
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")


def oracle_conversion(preds: Path, labels: Path, sizes: Path) -> tuple[list, dict]:
    """The COCO results and ground truth of the folders, from the rules alone."""
    wh = json.loads(sizes.read_text())
    stems = sorted(p.name[:-4] for p in labels.glob("*.txt"))
    images, anns, results, cats = [], [], [], set()
    for i, stem in enumerate(stems, 1):
        W, H = (float(v) for v in wh[stem])
        images.append({"id": i, "file_name": stem})
        for line in (labels / f"{stem}.txt").read_text().split("\n"):
            if line.strip():
                c, cx, cy, w, h = (float(v) for v in line.split())
                box = [W * (cx - w / 2), H * (cy - h / 2), W * w, H * h]
                anns.append({"id": len(anns) + 1, "image_id": i, "category_id": int(c), "bbox": box,
                             "area": (W * w) * (H * h), "iscrowd": 0})  # fmt: skip
                cats.add(int(c))
        pf = preds / f"{stem}.txt"
        if pf.exists():
            for line in pf.read_text().split("\n"):
                if line.strip():
                    c, cx, cy, w, h, conf = (float(v) for v in line.split())
                    results.append({"image_id": i, "category_id": int(c), "score": conf,
                                    "bbox": [W * (cx - w / 2), H * (cy - h / 2), W * w, H * h]})  # fmt: skip
    gt = {"images": images, "annotations": anns, "categories": [{"id": c, "name": str(c)} for c in sorted(cats)]}
    return results, gt


def with_area_bounds(root: Path, seed: int) -> tuple[Path, Path, Path]:
    preds, labels, sizes = generate(root, seed)
    wh = json.loads(sizes.read_text())
    c = 0
    # 640 * 0.05 and 960 * 0.1 are 32 and 96 exactly in float64: areas on the ranges' bounds
    write_rows(labels, "zz32", [(c, 0.5, 0.5, 0.05, 0.05), (c, 0.2, 0.2, 0.05, 0.05)])
    write_rows(preds, "zz32", [(c, 0.5, 0.5, 0.05, 0.05, 0.4242), (c, 0.21, 0.2, 0.05, 0.05, 0.0101)])
    write_rows(labels, "zz96", [(c, 0.5, 0.5, 0.1, 0.1)])
    write_rows(preds, "zz96", [(c, 0.5, 0.5, 0.1, 0.1, 0.3131)])
    wh["zz32"], wh["zz96"] = [640, 640], [960, 960]
    sizes.write_text(json.dumps(wh))
    return preds, labels, sizes


@pytest.mark.parametrize("seed", range(4))
def test_coco_on_yolo_folders_is_pycocotools_on_the_conversion(tmp_path: Path, seed: int) -> None:
    preds, labels, sizes = with_area_bounds(tmp_path, seed)
    results, gt = oracle_conversion(preds, labels, sizes)
    areas = {a["area"] for a in gt["annotations"]}
    assert 32.0**2 in areas and 96.0**2 in areas
    result = deteval.evaluate(str(preds), str(labels), protocol="coco", image_sizes=str(sizes))
    assert_same(result, run_pycocotools(results, gt))


def test_convert_writes_the_conversion(tmp_path: Path) -> None:
    preds, labels, sizes = with_area_bounds(tmp_path, 11)
    out_gt, out_res = tmp_path / "gt.json", tmp_path / "res.json"
    argv = ["convert", "--from", "yolo", "--to", "coco", "--image-sizes", str(sizes), "--preds", str(preds),
            "--out-preds", str(out_res), str(labels), str(out_gt)]  # fmt: skip
    assert main(argv) == 0
    results, gt = oracle_conversion(preds, labels, sizes)
    got_gt = json.loads(out_gt.read_text())
    assert got_gt["annotations"] == gt["annotations"]
    assert [i["id"] for i in got_gt["images"]] == [i["id"] for i in gt["images"]]
    assert [c["id"] for c in got_gt["categories"]] == [c["id"] for c in gt["categories"]]
    assert json.loads(out_res.read_text()) == results
    # and the files score as the folders do
    a = deteval.evaluate(str(out_res), str(out_gt))
    b = deteval.evaluate(str(preds), str(labels), protocol="coco", image_sizes=str(sizes))
    assert a.stats == b.stats
    assert np.array_equal(a.precision, b.precision)


def test_yolo_folders_need_sizes_for_coco(tmp_path: Path, capsys) -> None:
    preds, labels, _ = generate(tmp_path, 3, n_images=3)
    assert main(["--protocol", "coco", str(preds), str(labels)]) == 2
    assert "--image-sizes" in capsys.readouterr().err

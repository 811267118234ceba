"""``deteval convert --from voc --to coco``: the COCO JSON of a VOC XML folder, against the documented rules
read with ElementTree (images by sorted stem, classes in names order, boxes as written, difficult as crowd)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import DATA_DIR

from deteval.cli import main

VOC = DATA_DIR / "voc100_native"


def test_voc_to_coco(tmp_path: Path) -> None:
    out = tmp_path / "gt.json"
    assert main(["convert", "--from", "voc", "--to", "coco", "--names", str(VOC / "voc.names"),
                 str(VOC / "gt_xml"), str(out)]) == 0  # fmt: skip
    got = json.loads(out.read_text())
    names = (VOC / "voc.names").read_text().split()
    assert [c["name"] for c in got["categories"]] == names
    anns = []
    files = sorted((VOC / "gt_xml").glob("*.xml"), key=lambda p: p.stem)
    assert [i["file_name"] for i in got["images"]] == [p.stem for p in files]
    for i, path in enumerate(files, 1):
        for obj in ET.parse(path).getroot().findall("object"):
            x1, y1, x2, y2 = (float(obj.find("bndbox").find(k).text) for k in ("xmin", "ymin", "xmax", "ymax"))
            difficult = int(obj.findtext("difficult") or 0)
            ann = {"image_id": i, "category_id": names.index(obj.findtext("name").strip()) + 1,
                   "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1), "iscrowd": difficult}  # fmt: skip
            anns.append(ann | ({"difficult": 1} if difficult else {}))
    assert [{k: v for k, v in a.items() if k != "id"} for a in got["annotations"]] == anns
    assert [a["id"] for a in got["annotations"]] == list(range(1, len(anns) + 1))
    assert any(a["iscrowd"] for a in got["annotations"])

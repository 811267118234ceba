"""``deteval convert``: write one format's files as another's, exactly as deteval reads them (docs/yolo.md).

* ``--from yolo --to coco LABEL_DIR GT.json``: COCO's instances JSON of a YOLO label folder
  (:func:`deteval.io.yolo.coco_records`: ``bbox = [W*(cx - w/2), H*(cy - h/2), W*w, H*h]``,
  ``area = (W*w)*(H*h)``, ids from 1); with ``--preds PRED_DIR --out-preds RESULTS.json`` the predictions
  as a results list (``score = conf``). ``--image-sizes`` gives pixels (without it the boxes stay normalised).
* ``--from coco --to yolo GT.json LABEL_DIR``: one ``<file stem>.txt`` per image, ``class cx cy w h`` with
  ``cx = (x + w/2) / W``, ``cy = (y + h/2) / H``, ``w / W``, ``h / H`` (float64, written as ``repr``), the class
  index the category's position among the sorted category ids; the class names and image sizes go beside the
  folder, to ``LABEL_DIR.names.txt`` and ``LABEL_DIR.sizes.json``; crowd annotations are left out (YOLO has none).
* ``--from voc --to coco XML_DIR GT.json``: COCO's instances JSON of a VOC annotation folder as deteval's VOC
  reader reads it (``--names`` fixes the classes and their order, else the names found, sorted): image ids
  from 1 by sorted file stem, category ids from 1 in class order, ``bbox = [xmin, ymin, xmax - xmin,
  ymax - ymin]`` as written (COCO's continuous coordinates: no +1), ``area = w * h``; a difficult object
  becomes ``iscrowd 1`` (COCO's only way to leave a box out of the positives and ignore the detections
  matched to it; its crowd IoU is the overlap over the detection's area) and keeps ``difficult: 1``.
  With ``--preds RESULTS.json --out-preds PRED_DIR``: ``class cx cy w h conf`` per image.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deteval.errors import InputError

PAIRS = (("yolo", "coco"), ("coco", "yolo"), ("voc", "coco"))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="deteval convert",
        description="Convert detection files between formats, exactly as deteval reads them: "
        + ", ".join(f"{a} -> {b}" for a, b in PAIRS),
    )
    p.add_argument("src", help="the ground truth: a YOLO label folder, a COCO JSON file or a VOC XML folder")
    p.add_argument("dest", help="where the converted ground truth goes (a JSON file or a folder)")
    p.add_argument("--from", dest="src_format", required=True, choices=("yolo", "coco", "voc"))
    p.add_argument("--to", dest="dest_format", required=True, choices=("coco", "yolo"))
    p.add_argument("--preds", metavar="PATH", help="predictions to convert too (a folder or a results JSON)")
    p.add_argument("--out-preds", metavar="PATH", help="where the converted predictions go")
    p.add_argument("--image-sizes", metavar="SIZES.json", help='YOLO input: {"<stem>": [width, height]}')
    p.add_argument("--names", metavar="FILE", help="class names (one per line, or a data.yaml)")
    return p


def convert_main(argv: Sequence[str]) -> int:
    """Run ``deteval convert``; the exit status (0 done, 2 bad input).

    Its outputs follow the command line's output rule (:mod:`deteval.cli.guard`): none may be or lie inside an
    input, and all are written to temporaries and renamed into place together once the conversion is done.
    """
    args = _parser().parse_args(list(argv))
    from deteval.cli.guard import Staging, check_outputs, input_files

    staging: Staging | None = None
    try:
        pair = (args.src_format, args.dest_format)
        if pair not in PAIRS:
            raise InputError("--to", None, f"converts {', '.join(f'{a} -> {b}' for a, b in PAIRS)}, not {pair}")
        if (args.preds is None) != (args.out_preds is None):
            raise InputError("--preds", None, "--preds and --out-preds go together")
        inputs = input_files(
            {"SRC": args.src, **{flag: path for flag, path in (("--preds", args.preds), ("--image-sizes",
             args.image_sizes), ("--names", args.names)) if path is not None}}
        )  # fmt: skip
        to_folder = pair == ("coco", "yolo")
        outputs = {"DEST": (args.dest, to_folder)}
        if to_folder:
            for side in ("names.txt", "sizes.json"):  # written beside the folder
                outputs[f"DEST's {side}"] = (f"{args.dest}.{side}", False)
        if args.out_preds is not None:
            outputs["--out-preds"] = (args.out_preds, to_folder)
        check_outputs(outputs, inputs)
        staging = Staging(inputs)
        if pair == ("yolo", "coco"):
            _yolo_to_coco(args, staging)
        elif pair == ("coco", "yolo"):
            _coco_to_yolo(args, staging)
        else:
            _voc_to_coco(args, staging)
        staging.commit()
    except (InputError, OSError) as exc:
        print(f"deteval: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if staging is not None:
            staging.discard()
    return 0


def _write_json(staging: Any, path: str, flag: str, value: Any) -> None:
    staging.file(Path(path), flag).write_text(json.dumps(value) + "\n", encoding="utf-8")


def _write_folder(staging: Any, path: str, flag: str, texts: dict[str, str]) -> None:
    folder = staging.directory(Path(path), flag)
    for stem, text in texts.items():
        (folder / f"{stem}.txt").write_text(text, encoding="utf-8")


def _yolo_to_coco(args: argparse.Namespace, staging: Any) -> None:
    from deteval.io.yolo import coco_records, read_yolo

    results, gt = coco_records(read_yolo(args.preds, args.src, args.image_sizes, args.names))
    _write_json(staging, args.dest, "DEST", gt)
    if args.out_preds is not None:
        _write_json(staging, args.out_preds, "--out-preds", results)


def _coco_to_yolo(args: argparse.Namespace, staging: Any) -> None:
    from deteval.io.yolo import yolo_files_of_coco

    files = yolo_files_of_coco(args.src, args.preds)
    _write_folder(staging, args.dest, "DEST", files.labels)
    staging.file(Path(f"{args.dest}.names.txt"), "DEST").write_text(files.names, encoding="utf-8")
    staging.file(Path(f"{args.dest}.sizes.json"), "DEST").write_text(files.sizes, encoding="utf-8")
    if files.preds is not None:
        _write_folder(staging, args.out_preds, "--out-preds", files.preds)


def _voc_to_coco(args: argparse.Namespace, staging: Any) -> None:
    from deteval.io.voc import load_voc_xml

    if args.preds is not None:
        raise InputError("--preds", None, "voc -> coco converts the ground truth only")
    gt = load_voc_xml(args.src, names=args.names)
    images = [{"id": i + 1, "file_name": str(gt.images.id_of(i))} for i in range(len(gt.images))]
    categories = [{"id": k + 1, "name": gt.categories.name_of(k)} for k in range(len(gt.categories))]
    annotations = []
    for r in range(len(gt)):
        x1, y1, x2, y2 = (float(v) for v in gt.boxes[r])
        w, h = x2 - x1, y2 - y1
        ann = {"id": r + 1, "image_id": int(gt.image[r]) + 1, "category_id": int(gt.category[r]) + 1,
               "bbox": [x1, y1, w, h], "area": w * h, "iscrowd": int(gt.difficult[r])}  # fmt: skip
        if gt.difficult[r]:
            ann["difficult"] = 1
        annotations.append(ann)
    _write_json(staging, args.dest, "DEST", {"images": images, "annotations": annotations, "categories": categories})

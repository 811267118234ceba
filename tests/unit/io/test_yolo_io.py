"""YOLO folders: the reader's rules (deteval.io.yolo), its errors naming file and line, and the conversions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main
from deteval.errors import InputError
from deteval.io.yolo import coco_records, read_names, read_yolo, yolo_containers


def _folders(tmp_path: Path, labels: dict[str, str], preds: dict[str, str] | None = None) -> tuple[Path, Path]:
    (tmp_path / "labels").mkdir()
    (tmp_path / "preds").mkdir()
    for stem, text in labels.items():
        (tmp_path / "labels" / f"{stem}.txt").write_text(text)
    for stem, text in (preds or {}).items():
        (tmp_path / "preds" / f"{stem}.txt").write_text(text)
    return tmp_path / "preds", tmp_path / "labels"


def test_denormalisation_is_ultralytics_formula(tmp_path: Path) -> None:
    preds, labels = _folders(tmp_path, {"a": "3 0.3 0.6 0.2 0.1\n", "b": ""}, {"a": "3 0.1 0.2 0.3 0.4 0.5\n"})
    ys = read_yolo(preds, labels, {"a": [640, 480], "b": [10, 10]})
    dets, gt = yolo_containers(ys)
    W, H, cx, cy, w, h = 640.0, 480.0, 0.3, 0.6, 0.2, 0.1
    assert gt.boxes.tolist() == [[W * (cx - w / 2), H * (cy - h / 2), W * (cx + w / 2), H * (cy + h / 2)]]
    assert gt.area.tolist() == [(W * w) * (H * h)]
    assert list(gt.images.ids) == ["a", "b"] and list(gt.categories.ids) == [3]
    assert dets.score.tolist() == [0.5]
    results, coco = coco_records(ys)
    assert coco["annotations"][0]["bbox"] == [W * (cx - w / 2), H * (cy - h / 2), W * w, H * h]
    assert coco["annotations"][0]["area"] == (W * w) * (H * h)
    assert [i["id"] for i in coco["images"]] == [1, 2]
    assert results[0]["score"] == 0.5 and results[0]["image_id"] == 1


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("0 0.5 0.5 0.2\n", 1, "4 fields"),
        ("0 0.5 0.5 0.2 0.2\n\n1 0.5 0.5 0.2 x\n", 3, "not a number"),
        ("0.5 0.5 0.5 0.2 0.2\n", 1, "non-negative integer"),
        ("-1 0.5 0.5 0.2 0.2\n", 1, "non-negative integer"),
        ("0 0.5 0.5 0.2 0.2\n0 120 40 30 30\n", 2, "normalised"),
        ("0 0.5 nan 0.2 0.2\n", 1, "not finite"),
        ("0 0.1 0.1 0.2 0.2 0.3 0.3\n", 1, "polygon"),
    ],
)
def test_bad_label_lines_name_file_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    preds, labels = _folders(tmp_path, {"a": "0 0.5 0.5 0.1 0.1\n", "b": text})
    with pytest.raises(InputError, match=words) as err:
        read_yolo(preds, labels)
    assert err.value.source == str(labels / "b.txt") and err.value.record == f"line {line}"


def test_prediction_rules(tmp_path: Path) -> None:
    preds, labels = _folders(tmp_path, {"a": "0 0.5 0.5 0.1 0.1\n"}, {"a": "0 0.5 0.5 0.1 0.1\n"})
    with pytest.raises(InputError, match="save_conf") as err:
        read_yolo(preds, labels)
    assert err.value.record == "line 1"
    (preds / "a.txt").write_text("0 0.5 0.5 0.1 0.1 0.9\n")
    (preds / "zz.txt").write_text("")
    with pytest.raises(InputError, match="no label file") as err:
        read_yolo(preds, labels)
    assert err.value.source == str(preds / "zz.txt")


def test_rounding_tolerance_and_integer_classes(tmp_path: Path) -> None:
    preds, labels = _folders(tmp_path, {"a": "2.0 0.5 0.5 1.000001 0.1\n"})
    _, gt = yolo_containers(read_yolo(preds, labels))
    assert list(gt.categories.ids) == [2]


def test_sizes_and_names(tmp_path: Path) -> None:
    preds, labels = _folders(tmp_path, {"a": "1 0.5 0.5 0.1 0.1\n"}, {"a": "4 0.5 0.5 0.1 0.1 0.9\n"})
    with pytest.raises(InputError, match="no size"):
        read_yolo(preds, labels, {"b": [1, 2]})
    with pytest.raises(InputError, match="finite and > 0"):
        read_yolo(preds, labels, {"a": [0, 2]})
    with pytest.raises(InputError, match="not among the 3 names") as err:
        read_yolo(preds, labels, names=["x", "y", "z"])
    assert err.value.source == str(preds / "a.txt")
    yaml = tmp_path / "data.yaml"
    for text in ("names: [a, b, 'c']\n", "names:\n  - a\n  - b\n  - c\n", "path: x\nnames:\n  0: a\n  1: b\n  2: c\n"):
        yaml.write_text(text)
        assert read_names(yaml) == ("a", "b", "c")
    dets, gt = yolo_containers(read_yolo(None, labels, names=["x", "y"]))
    assert list(gt.categories.ids) == [0, 1] and gt.categories.names == ["x", "y"] and len(dets) == 0


def test_predictions_of_unlabelled_classes_are_dropped_without_names(tmp_path: Path) -> None:
    preds, labels = _folders(tmp_path, {"a": "1 0.5 0.5 0.1 0.1\n"}, {"a": "4 0.5 0.5 0.1 0.1 0.9\n"})
    dets, _ = yolo_containers(read_yolo(preds, labels))
    assert len(dets) == 0


def test_coco_to_yolo(tmp_path: Path) -> None:
    gt = {
        "images": [{"id": 7, "file_name": "x/a.jpg", "width": 640, "height": 480},
                   {"id": 9, "file_name": "b.png", "width": 100, "height": 50}],
        "annotations": [{"id": 1, "image_id": 7, "category_id": 5, "bbox": [10, 20, 30, 40], "area": 1, "iscrowd": 0},
                        {"id": 2, "image_id": 7, "category_id": 2, "bbox": [0, 0, 1, 1], "area": 1, "iscrowd": 1}],
        "categories": [{"id": 5, "name": "cat"}, {"id": 2, "name": "dog"}],
    }  # fmt: skip
    res = [{"image_id": 9, "category_id": 2, "bbox": [1.5, 2, 3, 4], "score": 0.25}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "res.json").write_text(json.dumps(res))
    out = tmp_path / "labels"
    argv = ["convert", "--from", "coco", "--to", "yolo", str(tmp_path / "gt.json"), str(out),
            "--preds", str(tmp_path / "res.json"), "--out-preds", str(tmp_path / "preds")]  # fmt: skip
    assert main(argv) == 0
    assert (out / "a.txt").read_text() == f"1 {25 / 640!r} {40 / 480!r} {30 / 640!r} {40 / 480!r}\n"  # crowd left out
    assert (out / "b.txt").read_text() == ""
    assert (tmp_path / "labels.names.txt").read_text() == "dog\ncat\n"
    assert json.loads((tmp_path / "labels.sizes.json").read_text()) == {"a": [640, 480], "b": [100, 50]}
    assert (tmp_path / "preds" / "b.txt").read_text() == f"0 {3 / 100!r} {4 / 50!r} {3 / 100!r} {4 / 50!r} 0.25\n"
    back = read_yolo(tmp_path / "preds", out, tmp_path / "labels.sizes.json", tmp_path / "labels.names.txt")
    assert np.allclose(coco_records(back)[1]["annotations"][0]["bbox"], [10, 20, 30, 40], rtol=0, atol=1e-12)


def test_cli_errors_are_one_line(tmp_path: Path, capsys) -> None:
    preds, labels = _folders(tmp_path, {"a": "0 0.5 0.5 0.1\n"})
    assert main(["--protocol", "yolo", str(preds), str(labels)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a.txt: line 1: 4 fields" in err


def test_the_worked_example_of_the_docs_prints_what_they_show(capsys) -> None:
    root = Path(__file__).resolve().parents[3]
    data = root / "tests" / "data" / "yolo_example"
    argv = ["--protocol", "yolo", "--image-sizes", str(data / "sizes.json"), "--compare-coco",
            str(data / "preds"), str(data / "labels")]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out.rstrip("\n")
    doc = (root / "docs" / "yolo.md").read_text()
    shown = doc.split("$ deteval --protocol yolo --image-sizes sizes.json --compare-coco preds/ labels/\n")[1]
    assert shown.split("\n```")[0] == printed


def test_sizes_from_the_images_headers(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image", reason="Pillow writes the test's images")
    preds, labels = _folders(tmp_path, {s: "0 0.5 0.5 0.1 0.1\n" for s in ("a", "b", "c", "d", "e", "r")})
    images = tmp_path / "images"
    images.mkdir()
    for stem, fmt, ext in [("a", "JPEG", "jpg"), ("b", "PNG", "png"), ("c", "BMP", "bmp"), ("d", "GIF", "gif"),
                           ("e", "WEBP", "webp")]:  # fmt: skip
        pil.new("RGB", (123, 45)).save(images / f"{stem}.{ext}", fmt)
    rotated = pil.new("RGB", (123, 45))
    exif = rotated.getexif()
    exif[274] = 6  # a quarter turn: OpenCV's imread gives 45 x 123
    rotated.save(images / "r.JPG", "JPEG", exif=exif)
    ys = read_yolo(preds, labels, images)
    assert ys.width.tolist() == [123] * 5 + [45] and ys.height.tolist() == [45] * 5 + [123]
    (labels / "z.txt").write_text("")
    with pytest.raises(InputError, match="no image for this label file"):
        read_yolo(preds, labels, images)

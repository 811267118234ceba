"""VOC-family readers: formats, class names and indices, format detection, errors naming file and line."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA_DIR

from deteval.errors import InputError
from deteval.io import voc as voc_io

VOC = DATA_DIR / "voc100_native"

XML = """<annotation>
  <filename>{id}.jpg</filename>
  <object>
    <name>dog</name>
    <difficult>{diff}</difficult>
    <bndbox><xmin>1</xmin><ymin>2</ymin><xmax>30</xmax><ymax>40</ymax></bndbox>
    <part><name>head</name><bndbox><xmin>5</xmin><ymin>5</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></part>
  </object>
  <object>
    <name>cat</name>
    <bndbox><xmin>10.5</xmin><ymin>20</ymin><xmax>15</xmax><ymax>25</ymax></bndbox>
  </object>
</annotation>
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def xml_dir(tmp_path):
    write(tmp_path / "ann" / "b.xml", XML.format(id="b", diff=1))
    write(tmp_path / "ann" / "a.xml", XML.format(id="a", diff=0))
    return tmp_path / "ann"


def test_xml_folder(xml_dir):
    gt = voc_io.load_voc_xml(xml_dir)
    assert gt.images.ids.tolist() == ["a", "b"]
    assert gt.categories.names == ["cat", "dog"]  # sorted class names without a names file
    assert gt.box_format == "xyxy"
    # file order a.xml, b.xml; <part> boxes are not objects; a missing <difficult> is 0
    assert gt.image.tolist() == [0, 0, 1, 1]
    assert gt.category.tolist() == [1, 0, 1, 0]
    assert gt.difficult.tolist() == [False, False, True, False]
    assert gt.boxes[1].tolist() == [10.5, 20, 15, 25]


def test_xml_names_and_image_set(xml_dir, tmp_path):
    names = write(tmp_path / "n.names", "dog\ncat\nbird\n\n")
    gt = voc_io.load_voc_xml(xml_dir, names=names)
    assert gt.categories.ids.tolist() == [0, 1, 2] and gt.categories.names == ["dog", "cat", "bird"]
    assert gt.category.tolist() == [0, 1, 0, 1]
    # an image-set list restricts the folder, and can be given alone with annotations_dir
    lst = write(tmp_path / "set.txt", "b\n")
    assert voc_io.load_voc_xml(xml_dir, image_set=lst).images.ids.tolist() == ["b"]
    assert len(voc_io.load_voc_xml(lst, annotations_dir=xml_dir)) == 2


def test_image_set_in_voc_layout(tmp_path):
    root = tmp_path / "VOC2007"
    write(root / "Annotations" / "000005.xml", XML.format(id="000005", diff=0))
    lst = write(root / "ImageSets" / "Main" / "test.txt", "000005\n")
    gt = voc_io.load_voc_xml(lst)
    assert gt.images.ids.tolist() == ["000005"] and len(gt) == 2
    # class image sets carry a second column (1 / -1): the id is the first token
    write(root / "ImageSets" / "Main" / "dog_test.txt", "000005  1\n")
    assert voc_io.read_image_set(root / "ImageSets" / "Main" / "dog_test.txt") == ["000005"]


def test_text_files_with_names_and_indices(tmp_path):
    write(tmp_path / "gt" / "im1.txt", "dog 1 2 3 4\ncat 5 6 7 8 1\n")
    write(tmp_path / "gt" / "im2.txt", "")  # an image without objects
    write(tmp_path / "dt" / "im1.txt", "1 0.9 1 2 3 4\ndog 0.8 5 6 7 8\n")
    names = ["dog", "cat"]
    dt, gt = voc_io.load_voc(tmp_path / "dt", tmp_path / "gt", names=names)
    assert gt.images.ids.tolist() == ["im1", "im2"]
    assert gt.difficult.tolist() == [False, True]
    assert dt.category.tolist() == [1, 0] and dt.score.tolist() == [0.9, 0.8]
    assert dt.boxes.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]


def test_union_of_classes_without_names(tmp_path):
    write(tmp_path / "gt" / "im1.txt", "dog 1 2 3 4\n")
    write(tmp_path / "dt" / "im1.txt", "cat 0.9 1 2 3 4\n")
    dt, gt = voc_io.load_voc(tmp_path / "dt", tmp_path / "gt")
    assert gt.categories.names == ["cat", "dog"]  # cat has no positives but is evaluated
    assert dt.category.tolist() == [0]


def test_comp4(tmp_path, xml_dir):
    gt = voc_io.load_voc_xml(xml_dir)
    write(tmp_path / "res" / "comp4_det_test_dog.txt", "a 0.9 1 2 3 4\nb 0.5 1 2 30 40\n")
    write(tmp_path / "res" / "comp4_det_test_cat.txt", "b 0.7 1 2 3 4\n")
    write(tmp_path / "res" / "notes.txt", "not a results file\n")
    dt = voc_io.load_comp4(tmp_path / "res", gt)
    # files in name order (cat, dog), lines in file order
    assert dt.category.tolist() == [0, 1, 1] and dt.image.tolist() == [1, 0, 1]
    one = voc_io.load_comp4(tmp_path / "res" / "comp4_det_test_dog.txt", gt)
    assert len(one) == 2


def test_detect_format(tmp_path, xml_dir):
    write(tmp_path / "res" / "comp4_det_val_dog.txt", "")
    write(tmp_path / "txt" / "a.txt", "")
    write(tmp_path / "x.json", "{}")
    assert voc_io.detect_format(xml_dir, "gt") == "voc_xml"
    assert voc_io.detect_format(tmp_path / "res", "dets") == "comp4"
    assert voc_io.detect_format(tmp_path / "res" / "comp4_det_val_dog.txt", "dets") == "comp4"
    assert voc_io.detect_format(tmp_path / "txt", "dets") == "text"
    assert voc_io.detect_format(tmp_path / "txt", "gt") == "text"
    assert voc_io.detect_format(tmp_path / "x.json", "gt") == "coco"
    assert voc_io.detect_format(VOC / "reference" / "imageset.txt", "gt") == "voc_xml"
    with pytest.raises(InputError, match="no such file"):
        voc_io.detect_format(tmp_path / "missing", "gt")


# --------------------------------------------------------------------------------------
# errors: each names the file and the line (or object) and the rule


def check(exc_info, path, where, rule):
    e = exc_info.value
    assert e.source == str(path)
    assert e.record is not None and e.record.startswith(where)
    assert rule in e.rule


@pytest.mark.parametrize(
    "text,where,rule",
    [
        ("dog 0.9 1 2 3\n", "line 1", "expected 'class score x1 y1 x2 y2', got 5 fields"),
        ("dog 0.9 1 2 3 4\n\ndog 0.9 1 2 3 x\n", "line 3", "y2 must be a number, got 'x'"),
        ("dog 0.5 1 2 3 4\ndog nan 1 2 3 4\ndog -inf 1 2 3 4\n", "line 2", "score is NaN, and "),
        ("dog 0.9 1 2 3 4\ndog 0.9 1 2 3 0x1p3\n", "line 2", "y2 must be a number, got '0x1p3'"),
        ("horse 0.9 1 2 3 4\n", "line 1", "class 'horse' is not in the names file"),
        ("7 0.9 1 2 3 4\n", "line 1", "class index 7 is outside the names file (0..1)"),
    ],
)
def test_text_dets_errors(tmp_path, text, where, rule):
    write(tmp_path / "gt" / "im1.txt", "dog 1 2 3 4\n")
    f = write(tmp_path / "dt" / "im1.txt", text)
    with warnings.catch_warnings(record=True) as caught, pytest.raises(InputError) as e:
        warnings.simplefilter("always")
        voc_io.load_voc(tmp_path / "dt", tmp_path / "gt", names=["dog", "cat"])
    check(e, f, where, rule)
    # the -inf line is scored with its warning, before the NaN beside it is refused
    infinite = [w for w in caught if "have an infinite score" in str(w.message)]
    assert len(infinite) == len(caught) == ("-inf" in text)


def test_text_gt_errors(tmp_path):
    f = write(tmp_path / "gt" / "im1.txt", "dog 1 2 3 4 2\n")
    with pytest.raises(InputError) as e:
        voc_io.load_text_gt(tmp_path / "gt")
    check(e, f, "line 1", "difficult must be 0 or 1")
    write(f, "dog 1 2 3 4\ndog 1 2\n")
    with pytest.raises(InputError) as e:
        voc_io.load_text_gt(tmp_path / "gt")
    check(e, f, "line 2", "expected 'class x1 y1 x2 y2 [difficult]'")


def test_index_without_names_file(tmp_path):
    write(tmp_path / "gt" / "im1.txt", "dog 1 2 3 4\n")
    f = write(tmp_path / "dt" / "im1.txt", "0 0.9 1 2 3 4\n")
    with pytest.raises(InputError) as e:
        voc_io.load_voc(tmp_path / "dt", tmp_path / "gt")
    check(e, f, "line 1", "class index 0 needs a names file")


def test_unknown_image(tmp_path):
    write(tmp_path / "gt" / "im1.txt", "dog 1 2 3 4\n")
    f = write(tmp_path / "dt" / "im9.txt", "dog 0.9 1 2 3 4\n")
    with pytest.raises(InputError) as e:
        voc_io.load_voc(tmp_path / "dt", tmp_path / "gt")
    check(e, f, "line 1", "image 'im9' is not an image of the ground truth")


def test_comp4_errors(tmp_path, xml_dir):
    gt = voc_io.load_voc_xml(xml_dir)
    f = write(tmp_path / "res" / "comp4_det_test_dog.txt", "a 0.9 1 2 3 4\nzz 0.5 1 2 3 4\n")
    with pytest.raises(InputError) as e:
        voc_io.load_comp4(tmp_path / "res", gt)
    check(e, f, "line 2", "image 'zz' is not an image")
    f2 = write(tmp_path / "res2" / "comp4_det_test_horse.txt", "a 0.9 1 2 3 4\n")
    with pytest.raises(InputError) as e:
        voc_io.load_comp4(tmp_path / "res2", gt)
    check(e, f2, "line 1", "class 'horse' is not a class of the ground truth")
    with pytest.raises(InputError, match="must be named"):
        voc_io.load_comp4(write(tmp_path / "dets.txt", ""), gt)


@pytest.mark.parametrize(
    "body,where,rule",
    [
        ("<annotation><object><name>dog</name></object>", "line 1", "malformed XML"),
        (
            "<annotation>\n<object>\n<name>dog</name>\n</object>\n</annotation>",
            "line 2 (object 0)",
            "no <bndbox>/<xmin>",
        ),
        (
            "<annotation>\n<object>\n<bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox>\n"
            "</object>\n</annotation>",
            "line 2 (object 0)",
            "object has no <name>",
        ),
        (
            "<annotation>\n<object><name>dog</name>\n<bndbox><xmin>1</xmin><ymin>a</ymin><xmax>2</xmax>"
            "<ymax>2</ymax></bndbox></object></annotation>",
            "line 3 (object 0)",
            "<ymin> must be a finite number, got 'a'",
        ),
        (
            "<annotation><object><name>dog</name><difficult>yes</difficult>\n<bndbox><xmin>1</xmin><ymin>1</ymin>"
            "<xmax>2</xmax><ymax>2</ymax></bndbox></object></annotation>",
            "line 1 (object 0)",
            "<difficult> must be an integer (0 or 1), got 'yes'",
        ),
    ],
)
def test_xml_errors(tmp_path, body, where, rule):
    f = write(tmp_path / "ann" / "x.xml", body)
    with pytest.raises(InputError) as e:
        voc_io.load_voc_xml(tmp_path / "ann")
    check(e, f, where, rule)


def test_xml_class_not_in_names(tmp_path, xml_dir):
    with pytest.raises(InputError) as e:
        voc_io.load_voc_xml(xml_dir, names=["dog"])
    check(e, xml_dir / "a.xml", "line 9 (object 1)", "class 'cat' is not in the names file")


def test_image_set_errors(tmp_path, xml_dir):
    lst = write(tmp_path / "set.txt", "a\nq\n")
    with pytest.raises(InputError) as e:
        voc_io.load_voc_xml(xml_dir, image_set=lst)
    check(e, lst, "image 'q' (entry 2)", "no annotation file")
    write(lst, "a\na\n")
    with pytest.raises(InputError) as e:
        voc_io.read_image_set(lst)
    check(e, lst, "line 2", "duplicate image id 'a'")


def test_names_errors(tmp_path):
    f = write(tmp_path / "n.names", "dog\n\ncat\n")
    with pytest.raises(InputError) as e:
        voc_io.load_names(f)
    check(e, f, "line 2", "blank line")
    write(f, "dog\ncat\ndog\n")
    with pytest.raises(InputError) as e:
        voc_io.load_names(f)
    check(e, f, "line 3", "duplicate class name 'dog' (also line 1)")


def test_voc100_files_load():
    gt = voc_io.load_voc_xml(VOC / "gt_xml", names=VOC / "voc.names")
    assert len(gt) == 273 and int(gt.difficult.sum()) == 38
    assert np.all(gt.boxes[:, 2] >= gt.boxes[:, 0])


# --------------------------------------------------------------------------------------
# an unreadable folder: the OS error, not "holds no ..." (tests run as root: os.scandir is made to refuse)


@pytest.fixture
def unreadable(monkeypatch):
    """``os.scandir`` refusing the folders it is given, as it does without read permission."""
    refused, real = set(), os.scandir

    def scandir(path="."):
        if Path(path) in refused:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return refused


def test_unreadable_xml_folder_says_the_os_error(xml_dir, unreadable):
    unreadable.add(xml_dir)
    with pytest.raises(InputError) as exc:
        voc_io.load_voc_xml(xml_dir)
    assert str(exc.value) == f"{xml_dir}: cannot list the folder: Permission denied"
    with pytest.raises(InputError, match="^.*: cannot list the folder: Permission denied$"):
        voc_io.detect_format(xml_dir, "gt")


def test_unreadable_text_and_comp4_folders_say_the_os_error(tmp_path, xml_dir, unreadable):
    folder = write(tmp_path / "res" / "comp4_det_test_dog.txt", "a 0.9 1 2 3 4\n").parent
    unreadable.add(folder)
    gt = voc_io.load_voc_xml(xml_dir)
    loads = (lambda: voc_io.load_comp4(folder, gt), lambda: voc_io.load_text_gt(folder),
             lambda: voc_io.detect_format(folder, "dets"))  # fmt: skip
    for load in loads:
        with pytest.raises(InputError) as exc:
            load()
        assert str(exc.value) == f"{folder}: cannot list the folder: Permission denied"


def test_unreadable_folder_through_the_cli(xml_dir, unreadable, capsys):
    from deteval.cli import main

    unreadable.add(xml_dir)
    assert main(["--protocol", "voc10", "--quiet", str(VOC / "reference" / "comp4_det_files"), str(xml_dir)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{xml_dir}: cannot list the folder: Permission denied")

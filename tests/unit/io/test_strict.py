"""``strict``: ground-truth image records repeating an id, a warning by default (scored as one image, as
pycocotools does), an error naming the file and both records with ``strict=True`` / ``--strict``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import deteval
from deteval import DetevalWarning, InputError
from deteval.cli import main
from deteval.io.coco import load_coco_gt, load_coco_pair
from deteval.tuning import TUNING

_IMAGES = [{"id": 1, "height": 100, "width": 100}, {"id": 2, "height": 100, "width": 100},
           {"id": 1, "height": 100, "width": 100}]  # fmt: skip
_ANNS = [
    {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "area": 400, "iscrowd": 0},
    {"id": 2, "image_id": 2, "category_id": 2, "bbox": [0, 0, 50, 40], "area": 2000, "iscrowd": 0},
]
_DETS = [
    {"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9},
    {"image_id": 2, "category_id": 2, "bbox": [0, 0, 40, 40], "score": 0.8},
]
_RULE = "images[2]: repeats the id of images[0] (id=1); pycocotools scores them as one image"


def _gt(images=_IMAGES) -> dict:
    return {"images": images, "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}], "annotations": _ANNS}


@pytest.fixture
def files(tmp_path):
    gt, dt = tmp_path / "gt.json", tmp_path / "dt.json"
    gt.write_text(json.dumps(_gt()))
    dt.write_text(json.dumps(_DETS))
    return str(dt), str(gt)


@pytest.fixture(params=["general", "scanner"])
def reader(request, monkeypatch):
    """Either COCO reader: the general one, or every file through the byte scanner."""
    monkeypatch.setattr(TUNING, "fast_path_bytes", 0 if request.param == "scanner" else 1 << 62)
    return request.param


def test_default_warns_and_scores_the_repeat_as_one_image(files, reader):
    dt, gt = files
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = deteval.evaluate(dt, gt)
    msgs = [str(w.message) for w in caught if issubclass(w.category, DetevalWarning)]
    assert len(msgs) == 1 and "images[2] repeats images[0], id=1" in msgs[0]
    images = [im for im in _IMAGES if im is not _IMAGES[2]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same data without the repeat: no warning, same numbers
        clean = deteval.evaluate(_DETS, _gt(images))
    assert np.array_equal(list(result.stats.values()), list(clean.stats.values()), equal_nan=True)


@pytest.mark.parametrize(
    "load",
    [
        lambda dt, gt: load_coco_gt(gt, strict=True),
        lambda dt, gt: load_coco_pair(dt, gt, strict=True),
        lambda dt, gt: deteval.load(dt, gt, strict=True),
        lambda dt, gt: deteval.evaluate(dt, gt, strict=True),
        lambda dt, gt: deteval.protocols.get("coco").evaluate(dt, gt, strict=True),
    ],
    ids=["load_coco_gt", "load_coco_pair", "load", "evaluate", "Protocol.evaluate"],
)
def test_strict_raises_naming_the_file_and_both_records(files, reader, load):
    dt, gt = files
    with pytest.raises(InputError) as exc:
        load(dt, gt)
    assert (exc.value.source, exc.value.record) == (gt, "images[2]")
    assert str(exc.value) == f"{gt}: {_RULE}"


def test_strict_on_a_loaded_dict_names_the_ground_truth():
    with pytest.raises(InputError, match=r"^<ground truth>: images\[2\]: repeats the id of images\[0\]"):
        load_coco_gt(_gt(), strict=True)


def test_params_hold_strict():
    coco = deteval.protocols.get("coco")
    assert coco.params("bbox").strict is False
    assert coco.params("bbox", strict=True).strict is True
    assert "strict" not in coco.params("bbox", strict=True).to_dict()  # a loading choice: the JSON is unchanged


def test_cli_strict_exits_2_with_the_message(files, capsys):
    dt, gt = files
    assert main(["--quiet", "--strict", dt, gt]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{gt}: {_RULE}")


def test_cli_without_strict_warns_and_succeeds(files, capsys):
    dt, gt = files
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetevalWarning)
        assert main(["--quiet", dt, gt]) == 0


def test_strict_on_a_clean_file_gives_the_default_stats():
    preds, gt = deteval.cli.sample_pair()
    default, strict = deteval.evaluate(preds, gt), deteval.evaluate(preds, gt, strict=True)
    assert np.array_equal(list(default.stats.values()), list(strict.stats.values()))
    assert np.array_equal(default.precision, strict.precision)


def test_voc_ignores_strict():
    from conftest import DATA_DIR

    voc = DATA_DIR / "voc100_native"
    args = (str(voc / "dets_txt"), str(voc / "gt_xml"))
    default = deteval.evaluate(*args, protocol="voc10", names=str(voc / "voc.names"))
    strict = deteval.evaluate(*args, protocol="voc10", names=str(voc / "voc.names"), strict=True)
    assert default.stats == strict.stats

"""The protocol interface: registry, options as data, presets and user configs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import deteval
from deteval import protocols
from deteval.errors import InputError
from deteval.protocols.base import Option, Protocol
from deteval.protocols.presets import read_config
from deteval.result import CocoResult, VocResult

SAMPLE = "deteval/sample_data/"
DT, GT = SAMPLE + "instances_val2014_fakebbox100_results.json", SAMPLE + "instances_val2014_100.json"


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch, request):
    monkeypatch.chdir(request.config.rootpath)


@pytest.mark.parametrize("name", protocols.available())
def test_registry_gives_protocol_objects_with_data_options(name):
    proto = protocols.get(name)
    assert isinstance(proto, Protocol) and proto.name == name
    names = [o.name for o in proto.options]
    flags = [f for o in proto.options for f in (o.flag, *o.aliases)]
    assert len(set(names)) == len(names) and len(set(flags)) == len(flags)
    assert all(isinstance(o, Option) and o.flag.startswith("--") for o in proto.options)
    # the built-in preset alone gives valid parameters for every iou type
    for iou_type in proto.iou_types:
        params = proto.params(iou_type)
        assert dataclasses.is_dataclass(params) and params.__dataclass_params__.frozen


def test_unknown_protocol_option_and_iou_type_are_input_errors():
    with pytest.raises(InputError, match="unknown protocol 'nope'"):
        protocols.get("nope")
    with pytest.raises(InputError, match="not an option of protocol 'coco'"):
        deteval.evaluate(DT, GT, integrator="voc11")
    with pytest.raises(InputError, match="iou_type"):
        deteval.evaluate(DT, GT, protocol="voc10", iou_type="segm")


def test_option_parse_kinds():
    coco = {o.name: o for o in protocols.get("coco").options}
    assert coco["max_dets"].parse(["1,10", "300"]) == [1, 10, 300]
    assert coco["iou_thrs"].parse(["0.5", "0.75"]) == [0.5, 0.75]
    assert coco["area_ranges"].parse(["tiny:0:16", "all:0:1e10"]) == {"tiny": (0.0, 16.0), "all": (0.0, 1e10)}
    assert coco["use_cats"].parse(None) is False
    with pytest.raises(ValueError, match="LABEL:LO:HI"):
        coco["area_ranges"].parse(["tiny"])
    with pytest.raises(ValueError, match="ints"):
        coco["max_dets"].parse(["ten"])
    voc = {o.name: o for o in protocols.get("voc10").options}
    assert voc["iou_thrs"].parse(["0.5:0.95"]) == [k / 100 for k in range(50, 100, 5)]
    with pytest.raises(ValueError, match="choose from"):
        voc["iou_test"].parse(">")
    assert voc["integrator"].parse(["voc11,all_points"]) == ["voc11", "all_points"]
    with pytest.raises(ValueError, match="'nope'"):
        voc["integrator"].parse(["voc11", "nope"])


def test_results_are_typed():
    res = deteval.evaluate(DT, GT)
    assert isinstance(res, CocoResult) and res.precision.shape == (10, 101, 80, 4, 3)
    assert set(res.arrays) == set(CocoResult.ARRAYS)
    voc = deteval.evaluate(DT, GT, protocol="voc10")
    assert isinstance(voc, VocResult) and voc.ap.shape == (1, 80, 1)
    assert not hasattr(voc, "precision")


def test_config_file_equals_the_same_options(tmp_path):
    cfg = tmp_path / "mine.toml"
    cfg.write_text("iou_thrs = [0.5, 0.75]\nmax_dets = [1, 10, 300]\n[area_ranges]\nall = [0, 1e10]\ntiny = [0, 256]\n")
    got = deteval.evaluate(DT, GT, config=cfg, compat=False)
    ranges = {"all": (0, 1e10), "tiny": (0, 256)}
    want = deteval.evaluate(DT, GT, compat=False, iou_thrs=[0.5, 0.75], max_dets=[1, 10, 300], area_ranges=ranges)
    assert got.stats == want.stats
    assert np.array_equal(got.precision, want.precision) and np.array_equal(got.recall, want.recall)
    # keyword options override the file
    assert deteval.evaluate(DT, GT, config=cfg, compat=False, max_dets=[1, 10, 100]).params["max_dets"] == [1, 10, 100]


def test_config_sections_per_iou_type(tmp_path):
    cfg = tmp_path / "sections.toml"
    cfg.write_text("[bbox]\nmax_dets = [1, 5, 10]\n[keypoints]\nmax_dets = [5]\n")
    assert protocols.get("coco").params("bbox", preset=read_config(cfg)).max_dets == (1, 5, 10)
    assert protocols.get("coco").params("keypoints", preset=read_config(cfg)).max_dets == (5,)


@pytest.mark.parametrize(
    "text, record, rule",
    [
        ("max_dets = [1, 10, 100]\nmaxdets = 3\n", "maxdets", "unknown parameter"),
        ("max_dets = [0, 10, 100]\n", "max_dets", "positive integers"),
        ("iou_thrs = [0.5, 2.0]\n", "iou_thrs", r"\[0, 1\]"),
        ("area_ranges = 3\n", "area_ranges", "area ranges"),
    ],
)
def test_bad_config_names_the_file_and_key(tmp_path, text, record, rule):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    with pytest.raises(InputError, match=rule) as e:
        deteval.evaluate(DT, GT, config=cfg)
    assert e.value.source == str(cfg) and e.value.record == record


def test_unreadable_or_malformed_config(tmp_path):
    with pytest.raises(InputError, match="config file not found"):
        read_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("iou_thrs = [0.5,\n")
    with pytest.raises(InputError, match="not valid TOML") as e:
        read_config(bad)
    assert e.value.source == str(bad)


def test_voc_config_and_keyword_alias(tmp_path):
    cfg = tmp_path / "voc.toml"
    cfg.write_text('iou_thrs = ["0.5:0.95"]\nintegrator = ["voc11", "all_points"]\n')
    res = deteval.evaluate(DT, GT, protocol="voc10", config=cfg)
    want = deteval.evaluate(DT, GT, protocol="voc10", iou_thrs="0.5:0.95", integrator=["voc11", "all_points"])
    assert res.stats == want.stats
    with pytest.warns(DeprecationWarning, match="iou_thrs"):
        old = deteval.evaluate(DT, GT, protocol="voc10", iou="0.5:0.95", integrator=["voc11", "all_points"])
    assert old.stats == want.stats


def test_builtin_presets_reproduce_pycocotools_params():
    from pycocotools.cocoeval import Params

    for iou_type in ("bbox", "segm", "keypoints"):
        ours, ref = protocols.get("coco").params(iou_type), Params(iouType=iou_type)
        assert np.array_equal(ours.iou_thrs, ref.iouThrs) and np.array_equal(ours.rec_thrs, ref.recThrs)
        assert list(ours.max_dets) == ref.maxDets
        assert ours.area_ranges.tolist() == [list(map(float, r)) for r in ref.areaRng]
        assert list(ours.area_labels) == ref.areaRngLbl

"""Random JSON documents through both readers: the same accept/refuse decision and the same containers.

The documents are written as text (so a key may repeat, a number take any form JSON allows: exponents,
``-0``, 20-digit integers, ``1.0``; ids of every type: integers, integral floats, booleans, strings,
integers past 64 bits), COCO-shaped with odd values or nested anywhere. Two pairs of readers must agree:

- the two JSON parsers (orjson, and the standard library's where orjson declines): the same document
  or the same refusal (``parse_json`` with and without orjson);
- the byte scanner and the general reader: where the scanner takes a file, the general reader gives the
  same containers and warnings, or the same refusal.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deteval.errors import InputError
from deteval.io import coco as coco_io
from deteval.io import json_source
from deteval.io.coco_json import ground_truth_of_json, results_of_json

# numbers as JSON text, in every form the grammar allows
_INT_TEXT = st.one_of(
    st.integers(-5, 5).map(str),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["0", "-0", "9223372036854775807", "9223372036854775808", "18446744073709551616"]),
)
_FLOAT_TEXT = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1.0", "-0.0", "1e2", "1E+2", "2.5e-3", "1e400", "-1e400", "4.9e-324", "1.00000000000000000001"]),
)
_NUMBER = st.one_of(_INT_TEXT, _FLOAT_TEXT)
_ID = st.one_of(
    st.integers(0, 6).map(str), st.integers(0, 6).map(lambda i: f"{i}.0"), st.sampled_from(["true", "false"]),
    st.sampled_from(['"a"', '"b"', '"7"']), st.sampled_from(["9223372036854775808", "1.5", "null"]),
)  # fmt: skip
_LEAF = st.one_of(_NUMBER, st.sampled_from(['"x"', "true", "null", "NaN", "[]", "{}"]))


def _mostly_plain(odd: st.SearchStrategy[str], plain: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """``plain`` four times in five: the scanner takes the plain documents, and the odd values reach it one
    at a time."""
    return st.tuples(st.integers(0, 4), odd, plain).map(lambda t: t[1] if t[0] == 0 else t[2])


_PLAIN_ID = st.integers(1, 4).map(str)
_SOME_ID = _mostly_plain(_ID, _PLAIN_ID)


def _nested(depth: int) -> st.SearchStrategy[str]:
    return st.recursive(
        _LEAF,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]"),
            st.lists(st.tuples(st.sampled_from(["k", "id", "bbox"]), inner), max_size=3).map(
                lambda kv: "{" + ",".join(f'"{k}":{v}' for k, v in kv) + "}"
            ),
        ),
        max_leaves=depth,
    )


def _obj(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f'"{k}":{v}' for k, v in pairs) + "}"


@st.composite
def gt_documents(draw) -> str:
    n_img = draw(st.integers(1, 4))
    images = [
        _obj([("id", draw(_SOME_ID) if k else str(k + 1)), ("width", draw(_mostly_plain(_NUMBER, st.just("100")))),
              ("height", "100")] + ([("extra", draw(_nested(6)))] if draw(st.integers(0, 4)) == 0 else []))
        for k in range(n_img)
    ]  # fmt: skip
    cats = [
        _obj([("id", draw(_SOME_ID) if k else "1"), ("name", draw(st.sampled_from(['"c"', '"d"', '"=x"'])))])
        for k in range(2)
    ]
    anns = []
    for k in range(draw(st.integers(0, 5))):
        box = "[" + ",".join(draw(_NUMBER) if draw(st.integers(0, 9)) == 0 else str(v) for v in (1, 2, 30, 40)) + "]"
        pairs = [("id", str(k + 1)), ("image_id", draw(_SOME_ID)), ("category_id", draw(_SOME_ID)), ("bbox", box),
                 ("area", draw(st.sampled_from(["1200", "1200.0", "1e3"]))), ("iscrowd", "0")]  # fmt: skip
        if draw(st.integers(0, 4)) == 0:  # a key written twice: both parsers keep the last
            pairs.append(("area", draw(_NUMBER)))
        anns.append(_obj(pairs))
    return _obj([("images", "[" + ",".join(images) + "]"), ("categories", "[" + ",".join(cats) + "]"),
                 ("annotations", "[" + ",".join(anns) + "]")])  # fmt: skip


def _outcome(fn):
    """("ok", value, warnings) or ("refused", message)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
        except InputError as exc:
            return ("refused", str(exc))
    return ("ok", value, sorted(str(w.message) for w in caught))


def _same_json(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    return a == b


def _same_containers(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8)), f.name
        elif isinstance(x, coco_io.IdTable):
            assert x.ids.dtype == y.ids.dtype and np.array_equal(x.ids, y.ids) and x.names == y.names, f.name
            for attr in ("height", "width"):
                assert np.array_equal(getattr(x, attr), getattr(y, attr)), f"{f.name}.{attr}"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=gt_documents())
def test_both_json_parsers_agree(doc):
    raw = doc.encode()
    fast = _outcome(lambda: json_source.parse_json(raw, "x"))
    saved = json_source._orjson
    json_source._orjson = None
    try:
        plain = _outcome(lambda: json_source.parse_json(raw, "x"))
    finally:
        json_source._orjson = saved
    assert fast[0] == plain[0], (fast, plain)
    if fast[0] == "ok":
        assert _same_json(fast[1], plain[1])
        assert _same_json(fast[1], json.loads(raw))  # what pycocotools reads
    else:
        assert fast[1] == plain[1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=gt_documents())
def test_scanner_and_general_reader_agree(doc):
    raw = doc.encode()
    scanned = _outcome(lambda: coco_io.gt_from_scan(raw, "x"))
    if scanned[0] == "ok" and scanned[1] is None:
        return  # declined: the general reader's alone, by design
    general = _outcome(lambda: ground_truth_of_json(json_source.parse_json(raw, "x"), "x"))
    assert scanned[0] == general[0], (scanned, general)
    if scanned[0] == "refused":
        assert scanned[1] == general[1]
        return
    assert scanned[2] == general[2]
    _same_containers(scanned[1], general[1])


def _results_text(gt_ids: list[int], draw) -> str:
    rows = []
    for _ in range(draw(st.integers(0, 5))):
        rows.append(_obj([
            ("image_id", draw(_mostly_plain(_ID, st.sampled_from([str(i) for i in gt_ids])))),
            ("category_id", draw(_mostly_plain(_ID, st.sampled_from(["1", "2"])))),
            ("bbox", "[" + ",".join(draw(_NUMBER) if draw(st.integers(0, 4)) == 0 else str(v) for v in range(4)) + "]"),
            ("score", draw(_mostly_plain(st.one_of(_NUMBER, st.just("NaN")), st.sampled_from(["0.5", "1", "0.25"])))),
        ]))  # fmt: skip
    return "[" + ",".join(rows) + "]"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_results_scanner_and_general_reader_agree(data):
    gt = coco_io.load_coco_gt({
        "images": [{"id": i, "width": 100, "height": 100} for i in (1, 2, 3)],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], "annotations": [],
    })  # fmt: skip
    raw = _results_text([1, 2, 3], data.draw).encode()
    scanned = _outcome(lambda: coco_io.results_from_scan(coco_io.scan_results(raw, "bbox"), "x", gt))
    if scanned[0] == "ok" and scanned[1] is None:
        return
    general = _outcome(lambda: results_of_json(json_source.parse_json(raw, "x"), "x", gt))
    assert scanned[0] == general[0], (scanned, general)
    if scanned[0] == "ok":
        assert scanned[2] == general[2]
        _same_containers(scanned[1], general[1])


@pytest.mark.parametrize("doc", ['{"a": 1, "a": 2}', "[1e400]", "[18446744073709551616]", "[-0]", '"\\ud800"'])
def test_edge_documents_parse_alike(doc):
    test_both_json_parsers_agree.hypothesis.inner_test(doc=doc)

"""The numba results scanner (deteval.io.scan) against Python's json and float.

Whenever ``parse_results_columns`` returns columns they must be bit-identical to what the
general loader reads (``json.loads``/orjson, ``float(token)``, ``np.array``); whenever the
text is malformed or outside the common case it must return ``None``.
"""

from __future__ import annotations

import json
import math
import random
import struct
from decimal import Decimal
from fractions import Fraction

import numpy as np
import orjson
import pytest
from conftest import DATA_DIR
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.strategies import mutate_bytes

from deteval.io.scan.gt import parse_gt_columns
from deteval.io.scan.numbers import Q_MAX, Q_MIN, wide
from deteval.io.scan.results import parse_results_columns

DATA = DATA_DIR
REQUIRED = ("image_id", "category_id", "bbox", "score")
GEOMETRY = ("segmentation", "keypoints")


# ---------------------------------------------------------------------------------------------
# the reference: what the general loader reads, or None where the fast path must decline
# ---------------------------------------------------------------------------------------------
def _is_num(v) -> bool:
    """A number the loader reads as float64 (an integer beyond int64 is numpy's object: an error)."""
    return type(v) is float or (type(v) is int and -(2**63) <= v < 2**63)


def reference_columns(data) -> dict | None:
    """Columns of loaded results, or None when they are not plain bbox results."""
    if not isinstance(data, list) or not all(type(r) is dict for r in data):
        return None
    for r in data:
        if any(k not in r for k in REQUIRED) or any(k in r for k in GEOMETRY):
            return None
        if type(r["image_id"]) is not int or type(r["category_id"]) is not int:
            return None
        if not all(-(2**63) <= r[k] < 2**63 for k in ("image_id", "category_id")):
            return None
        b = r["bbox"]
        if type(b) is not list or len(b) != 4 or not all(_is_num(x) for x in b) or not _is_num(r["score"]):
            return None
        if not all(math.isfinite(float(x)) for x in [*b, r["score"]]):
            return None
    return {
        "image_id": np.array([r["image_id"] for r in data], dtype=np.int64).reshape(-1),
        "category_id": np.array([r["category_id"] for r in data], dtype=np.int64).reshape(-1),
        "bbox": np.array([[float(x) for x in r["bbox"]] for r in data], dtype=np.float64).reshape(-1, 4),
        "score": np.array([float(r["score"]) for r in data], dtype=np.float64).reshape(-1),
    }


def reference(raw: bytes) -> dict | None:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return reference_columns(data)


def assert_same(cols: dict, ref: dict) -> None:
    assert cols["n"] == len(ref["score"])
    for key in ("image_id", "category_id"):
        assert cols[key].dtype == np.int64
        np.testing.assert_array_equal(cols[key], ref[key])
    for key in ("bbox", "score"):
        assert cols[key].dtype == np.float64 and cols[key].shape == ref[key].shape
        bad = np.flatnonzero(cols[key].view(np.int64).reshape(-1) != ref[key].view(np.int64).reshape(-1))
        assert bad.size == 0, (key, cols[key].reshape(-1)[bad[:5]], ref[key].reshape(-1)[bad[:5]])
    assert cols["has_bbox"] is True


def check(raw: bytes, must_parse: bool = False) -> dict | None:
    """The fast path's answer is the reference's, or None; None whenever the reference is None."""
    cols = parse_results_columns(raw)
    ref = reference(raw)
    if ref is None:
        assert cols is None, raw[:300]
    elif cols is not None:
        assert_same(cols, ref)
    if must_parse:
        assert cols is not None, raw[:300]
    return cols


# ---------------------------------------------------------------------------------------------
# data files
# ---------------------------------------------------------------------------------------------
RESULT_FILES = [
    "coco_fake100/instances_val2014_fakebbox100_results.json",
    "coco_fake100/instances_val2014_fakesegm100_results.json",
    "coco_fake100_nocrowd/sampled_bbox_results.json",
    "tm4/tm_inputs_dets.json",
    "toy7/detections_coco.json",
    "voc100/coco_results_from_dets.json",
    "polygons3/dt_dataset.json",
    "keypoints1/dt_dataset.json",
]


@pytest.mark.parametrize("name", RESULT_FILES)
def test_data_files(name):
    raw = (DATA / name).read_bytes()
    data = orjson.loads(raw)  # the general loader's parser
    ref = reference_columns(data)
    cols = parse_results_columns(raw)
    if ref is None:  # masks, keypoints, a dataset dict: the general path
        assert cols is None
        return
    assert cols is not None
    assert_same(cols, ref)
    assert_same(cols, reference(raw))  # and the standard library's reading


def test_data_files_parsed():
    """The plain bbox result files are read by the fast path, not declined."""
    for name in ("coco_fake100/instances_val2014_fakebbox100_results.json", "tm4/tm_inputs_dets.json"):
        assert parse_results_columns((DATA / name).read_bytes()) is not None
    assert parse_results_columns((DATA / "voc100/coco_results_from_dets.json").read_bytes())["n"] == 452


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["small", "coco-sparse"])
def test_benchmark_files(preset, bench_preset):
    path = bench_preset(preset) / "dets.json"
    raw = path.read_bytes()
    cols = parse_results_columns(raw)
    assert cols is not None
    assert_same(cols, reference_columns(orjson.loads(raw)))


# ---------------------------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------------------------
def _doc(tokens: list[str], ws: str = "") -> bytes:
    """Results with the tokens as bbox and score values, five per record."""
    tokens = tokens + ["0"] * (-len(tokens) % 5)
    recs = []
    for i in range(0, len(tokens), 5):
        t = tokens[i : i + 5]
        recs.append(
            f'{{"image_id":{i},"category_id":1,"bbox":[{t[0]},{ws}{t[1]},{t[2]},{t[3]}],{ws}"score":{ws}{t[4]}{ws}}}'
        )
    return ("[" + ",".join(recs) + "]").encode()


def _values(tokens: list[str]) -> np.ndarray:
    cols = parse_results_columns(_doc(tokens))
    assert cols is not None
    return np.concatenate([cols["bbox"], cols["score"][:, None]], axis=1).reshape(-1)[: len(tokens)]


def _assert_floats(tokens: list[str]) -> None:
    tokens = [t for t in tokens if math.isfinite(float(t))]
    got = _values(tokens)
    want = np.array([float(t) if any(c in t for c in ".eE") else float(int(t)) for t in tokens], dtype=np.float64)
    bad = np.flatnonzero(got.view(np.int64) != want.view(np.int64))
    assert bad.size == 0, [(tokens[i], got[i], want[i]) for i in bad[:10]]


HARD = [
    "0", "-0", "0.0", "-0.0", "-0e0", "0e-5", "-0.000e+12", "1", "-1", "1e5", "1E-3", "1e+005", "1.5E+2",
    "0.1", "0.2", "0.30000000000000004", "0.1e1", "1.7976931348623157e308", "-1.7976931348623157E+308",
    "2.2250738585072014e-308", "2.2250738585072011e-308", "2.225073858507201e-308", "4.9406564584124654e-324",
    "5e-324", "2.4703282292062328e-324", "1e-320", "123456789e-330", "9007199254740992", "9007199254740993",
    "9007199254740994", "9007199254740995", "18014398509481986", "18014398509481987", "4503599627370496.5",
    "4503599627370497.5", "2251799813685248.25", "2251799813685248.75", "4503599627370497.0",
    "9007199254740993e0", "900719925474099.3e1", "0.9007199254740993e16", "123456789012345678",
    "999999999999999999", "999999999999999999e-18", "1.00000000000000011102230246251565404236316680908203125",
    "1.00000000000000011102230246251565404236316680908203124",
    "0.1000000000000000055511151231257827021181583404541015625",
    "7.038531e-26", "1448997445238699", "3.0e-44", "1e23", "8.98846567431158e307", "1e-22", "1e22", "1e-23",
    "9007199254740991e22", "9007199254740993e-22", "0.000001", "1e-7", "268.59999999999997", "0.9591444134712219",
    "0.06612017750740051", "123.456e-2", "1.0000000000000002", "0.99999999999999989", "4.35e-320",
    "1e-310", "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587"
    "207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475"
    "730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497"
    "7919.5", "1" + "0" * 30 + ".0", "-" + "9" * 25 + ".5", "0." + "0" * 30 + "1234567890123456789012",
]  # fmt: skip


def test_hard_numbers():
    _assert_floats(HARD)


def test_number_forms_exact():
    """Random numbers written every way JSON allows, against float(token)."""
    rng = random.Random(20240611)
    tokens = []
    for _ in range(30000):
        kind = rng.randrange(7)
        if kind == 0:  # repr of a random double (17 significant digits, any exponent)
            x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if not math.isfinite(x):
                continue
            tokens.append(repr(x))
        elif kind == 1:  # repr of a float32 widened: what json.dump writes for model outputs
            x = float(np.float32(rng.uniform(-1000, 1000)))
            tokens.append(repr(x))
        elif kind == 2:  # fixed notation, 0..18 decimals
            tokens.append(f"{rng.uniform(-2000, 2000):.{rng.randrange(19)}f}")
        elif kind == 3:  # random digit strings with an exponent near the table's ends
            digits = str(rng.randrange(1, 10 ** rng.randrange(1, 19)))
            e = rng.choice([rng.randrange(-30, 30), rng.randrange(Q_MIN - 20, Q_MAX + 20)])
            tokens.append(f"{'-' if rng.random() < 0.3 else ''}{digits}{rng.choice('eE')}{e:+d}")
        elif kind == 4:  # integer part and fraction of random lengths
            ip = rng.choice(["0", str(rng.randrange(1, 10**8))])
            fp = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 20)))
            tokens.append(f"{ip}.{fp}")
        elif kind == 5:  # exactly half-way between two doubles (17-18 digits above 2**51)
            big = 2 ** rng.randrange(51, 53)
            tokens.append(str(Decimal(big + rng.randrange(10**6)) + Decimal(rng.choice([0.25, 0.5, 0.75]))))
        else:  # integers around 2**53 .. 10**18
            tokens.append(str(rng.randrange(2**52, 10**18)))
    tokens = [t for t in tokens if math.isfinite(float(t))]
    _assert_floats(tokens)


def test_wide_step_against_python():
    """The 128-bit step alone: whenever it answers, it is float(f"{m}e{q}")."""
    rng = random.Random(7)
    answered = 0
    for _ in range(20000):
        m = rng.randrange(1, 10 ** rng.randrange(1, 19))
        q = rng.choice([rng.randrange(-25, 25), rng.randrange(Q_MIN, Q_MAX + 1)])
        v, ok = wide(m, q)
        if ok:
            answered += 1
            want = float(f"{m}e{q}")
            assert struct.pack("<d", v) == struct.pack("<d", want), (m, q, v, want)
    assert answered > 15000  # only subnormal, huge and (near) exact or half-way cases decline


def test_wide_declines_half_way_and_exact():
    for m, q in [(9007199254740993, 0), (45035996273704965, -1), (45035996273704970, -1), (2**59, 0)]:
        v, ok = wide(m, q)
        if ok:
            assert v == float(Fraction(m) * Fraction(10) ** q)
    assert not wide(9007199254740993, 0)[1]


def test_integer_tokens_in_float_columns():
    """Integers are Python ints: -0 is 0.0; above 2**53 they round as float(int) does."""
    toks = ["-0", "0", "7", str(2**53 + 1), str(2**53 + 3), str(10**18 - 1), str(-(2**59) - 1)]
    _assert_floats(toks)
    assert np.signbit(_values(["-0"])[0]) == np.False_
    assert np.signbit(_values(["-0.0"])[0]) == np.True_


def test_ids():
    big = 10**18 - 1
    raw = f'[{{"image_id":{big},"category_id":-{big},"bbox":[0,0,1,1],"score":1}}, '.encode()
    raw += b'{"image_id":-0,"category_id":0,"bbox":[0,0,1,1],"score":1}]'
    cols = check(raw, must_parse=True)
    assert cols["image_id"].tolist() == [big, 0] and cols["category_id"].tolist() == [-big, 0]
    # 19 digits and more, floats, strings, booleans: the general path
    for v in [str(2**63 - 1), str(2**63), "1e3", "1.0", '"12"', "true", "null", "[1]", "-"]:
        raw = f'[{{"image_id":{v},"category_id":1,"bbox":[0,0,1,1],"score":1}}]'.encode()
        assert parse_results_columns(raw) is None, v


# ---------------------------------------------------------------------------------------------
# declined and malformed input
# ---------------------------------------------------------------------------------------------
GOOD = '{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5}'
DECLINED = [
    "", " ", "{}", "[", "]", "[,]", f"[{GOOD},]", f"[{GOOD}", f"[{GOOD}]x", f"[{GOOD}] ]", f"[{GOOD}{GOOD}]",
    f"\ufeff[{GOOD}]", "[1]", "[[]]", "[null]", '["a"]', "[{}]", '{"annotations": []}',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4]}]',
    '[{"image_id":1,"category_id":2,"score":0.5}]',
    '[{"image_id":1,"bbox":[1,2,3,4],"score":0.5}]',
    '[{"category_id":2,"bbox":[1,2,3,4],"score":0.5}]',
    '[{"image_id":1,"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"bbox":[1,2,3,4],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"segmentation":[[1,2,3,4,5,6]]}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"keypoints":[1,2,2]}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"segm\\u0065ntation":[]}]',
    '[{"image_\\u0069d":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5}]',
    '[{"image_id":"1","category_id":2,"bbox":[1,2,3,4],"score":0.5}]',
    '[{"image_id":true,"category_id":2,"bbox":[1,2,3,4],"score":0.5}]',
    '[{"image_id":1,"category_id":null,"bbox":[1,2,3,4],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4,5],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[[1],2,3,4],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":[0.5]}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,true],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,"4"],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":NaN}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,Infinity],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,-Infinity],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":1e400}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,-1e309],"score":0.5}]',
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,' + "9" * 400 + "],\"score\":0.5}]",
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":1' + "0" * 25 + "}]",
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":x}]',
] + [
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":' + tok + "}]"
    for tok in ["1.", ".5", "01", "-01", "00", "+1", "1e", "1e+", "1E-", "--1", "-", "0x10", "1.e5", "1..2", "1e5.0",
                "1_0", "0.5.", "- 1", "1 2", "tru", "nul", "1,"]
] + [
    '[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"x":' + val + "}]"
    for val in ['"\\x"', '"\\u12G4"', '"\\u12"', '"a\tb"', '"a\nb"', '"\x00"', '"unterminated', "[1,]", "{,}",
                '{"a" 1}', '{"a":}', '{1:2}', "[1 2]", "NaN", "-Infinity", "tru", "falsy", "nil", "[}", "{]",
                "[" * 300 + "]" * 300, "'single'", "undefined"]
]  # fmt: skip


@pytest.mark.parametrize("text", DECLINED, ids=range(len(DECLINED)))
def test_declined(text):
    assert parse_results_columns(text.encode()) is None


@pytest.mark.parametrize(
    "raw",
    [
        b'[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"x":"\xff"}]',  # not UTF-8
        b'[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"x":"\xc0\xaf"}]',  # overlong
        b'[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"x":"\xed\xa0\x80"}]',  # a surrogate
        b'[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"x":"\xf4\x90\x80\x80"}]',  # > U+10FFFF
        b'[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"x":"\xe2\x82"}]',  # truncated
        b'[{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":0.5,"\xe9":1}]',
        "[]".encode("utf-16"),
        f"[{GOOD}]".encode("utf-16-le"),
        f"[{GOOD}]".encode("utf-32"),
    ],
)
def test_declined_bytes(raw):
    assert parse_results_columns(raw) is None


def test_accepted_variants():
    assert parse_results_columns(b"[]")["n"] == 0
    assert parse_results_columns(b" \r\n\t[ \n ] \n")["bbox"].shape == (0, 4)
    extra = (
        '"id":7,"area":12.5,"iscrowd":0,"meta":{"a":[1,{"b":null}],"s":"x\\"y\\\\z\\/\\u00e9\\ud83d\\ude00\\n",'
        '"t":true,"f":false,"e":[],"o":{}},"name":"caf\u00e9 \U0001f600","neg":-1.5e-3'
    )
    text = f' [ {{ {extra}, "score" : 0.25 ,"bbox": [ 1 , 2.5,3e1 , 4E-1 ] , "category_id":3,"image_id":-4}} ] '
    cols = check(text.encode(), must_parse=True)
    assert cols["bbox"].tolist() == [[1.0, 2.5, 30.0, 0.4]] and cols["image_id"].tolist() == [-4]
    deep = '"deep":' + "[" * 150 + "]" * 150 + ","
    check(f"[{{{deep}{GOOD[1:]}]".encode(), must_parse=True)


# ---------------------------------------------------------------------------------------------
# hypothesis: adversarial results text
# ---------------------------------------------------------------------------------------------
WS = st.sampled_from(["", "", " ", "  ", "\n", "\t", "\r\n ", " \n\t\r"])


@st.composite
def float_tokens(draw) -> str:
    kind = draw(st.integers(0, 7))
    if kind == 0:
        return repr(draw(st.floats(allow_nan=False, allow_infinity=False)))
    if kind == 1:
        x = draw(st.floats(-1e6, 1e6))
        spec = draw(st.sampled_from("fegEG"))
        text = f"{x:.{draw(st.integers(0, 20))}{spec}}"
        return text
    if kind == 2:
        return repr(float(np.float32(draw(st.floats(-2000, 2000, width=32)))))
    if kind == 3:
        ip = draw(st.sampled_from(["0", "1", "9"])) if draw(st.booleans()) else str(draw(st.integers(1, 10**20)))
        frac = draw(st.text(alphabet="0123456789", min_size=1, max_size=24)) if draw(st.booleans()) else None
        exp = None
        if draw(st.booleans()):
            e = draw(st.one_of(st.integers(-30, 30), st.integers(-400, 400)))
            exp = f"{draw(st.sampled_from('eE'))}{draw(st.sampled_from(['', '+'])) if e >= 0 else '-'}"
            exp += f"{'0' * draw(st.integers(0, 2))}{abs(e)}"
        return f"{draw(st.sampled_from(['', '-']))}{ip}{'' if frac is None else '.' + frac}{exp or ''}"
    if kind == 4:
        return draw(st.sampled_from(HARD))
    if kind == 5:
        a, b = draw(st.floats(0, 1)), draw(st.floats(0, 1))
        return repr(a + b)
    if kind == 6:
        return str(draw(st.integers(-(10**18) + 1, 10**18 - 1)))
    return draw(st.sampled_from(["0", "-0", "0.0", "-0.0", "1", "-1", "0.5", "1e0", "-0e-0"]))


def id_tokens():
    return st.one_of(st.integers(-1000, 10**6).map(str), st.integers(-(10**18) + 1, 10**18 - 1).map(str), st.just("-0"))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=6,
)
any_keys = st.one_of(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_ABC019", max_size=12), st.text(max_size=6))
extra_keys = any_keys.filter(lambda k: k not in REQUIRED + GEOMETRY)


def _long_int(token: str) -> bool:
    """An integer token of 19+ digits: the fast path leaves it to the general one."""
    return len(token.lstrip("-")) > 18 and not any(c in token for c in ".eE")


@st.composite
def records(draw) -> tuple[str, bool]:
    """One record's text, and whether it is in the fast path's scope."""
    w = lambda: draw(WS)  # noqa: E731
    numbers = [draw(float_tokens()) for _ in range(5)]
    pairs = [
        ("image_id", draw(id_tokens())),
        ("category_id", draw(id_tokens())),
        ("bbox", "[" + ",".join(f"{w()}{t}{w()}" for t in numbers[:4]) + "]"),
        ("score", numbers[4]),
    ]
    in_scope = not any(_long_int(t) for t in numbers)
    for _ in range(draw(st.integers(0, 2))):
        key = draw(extra_keys)
        value = json.dumps(draw(json_values), ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1])))
        key_text = json.dumps(key, ensure_ascii=draw(st.booleans()))
        in_scope &= "\\" not in key_text
        pairs.append((key_text[1:-1], value))
    pairs = draw(st.permutations(pairs))
    body = ",".join(f'{w()}"{k}"{w()}:{w()}{v}{w()}' for k, v in pairs)
    return "{" + body + "}", in_scope


@st.composite
def documents(draw) -> tuple[bytes, bool]:
    recs = draw(st.lists(records(), max_size=4))
    text = draw(WS) + "[" + draw(WS) + ",".join(r + draw(WS) for r, _ in recs) + "]" + draw(WS)
    raw = text.encode("utf-8")
    in_scope = all(s for _, s in recs) and reference(raw) is not None
    return raw, in_scope


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_hypothesis_documents(doc):
    raw, in_scope = doc
    check(raw, must_parse=in_scope)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data())
def test_hypothesis_mutations(doc, data):
    """One byte deleted, inserted or replaced, or the text cut: the reference's answer, or None."""
    raw, _ = doc
    check(mutate_bytes(raw, data))


@settings(max_examples=examples(300))
@given(st.lists(float_tokens(), min_size=1, max_size=20))
def test_hypothesis_numbers(tokens):
    tokens = [t for t in tokens if math.isfinite(float(t))]
    raw = _doc(tokens, ws=" ")
    cols = check(raw)
    if cols is None:  # declined only for integers of 19+ digits
        assert any(_long_int(t) for t in tokens)


# ---------------------------------------------------------------------------------------------
# masks="skip" (box evaluation): segmentation and keypoints are validated, not read
# ---------------------------------------------------------------------------------------------
def reference_skip(raw: bytes) -> dict | None:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, list) and all(type(r) is dict for r in data):
        data = [{k: v for k, v in r.items() if k not in GEOMETRY} for r in data]
    return reference_columns(data)


def reference_skip_data(raw: bytes):
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def check_skip(raw: bytes, must_parse: bool = False) -> None:
    cols = parse_results_columns(raw, masks="skip")
    ref = reference_skip(raw)
    if ref is None:
        assert cols is None, raw[:300]
    elif cols is not None:
        assert_same(cols, ref)
    if must_parse:
        assert cols is not None, raw[:300]


@st.composite
def documents_with_geometry(draw) -> tuple[bytes, bool]:
    raw, in_scope = draw(documents())
    text = raw.decode("utf-8")
    for key in draw(st.lists(st.sampled_from(GEOMETRY), max_size=3)):
        value = json.dumps(draw(json_values))
        at = [i for i, c in enumerate(text) if c == "{" and text[i + 1 : i + 2] in ('"', " ", "\n", "\t", "\r")]
        if at:
            i = draw(st.sampled_from(at))
            text = text[: i + 1] + f'"{key}":{value},' + text[i + 1 :]
    return text.encode("utf-8"), in_scope


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(documents_with_geometry())
def test_hypothesis_skip_geometry(doc):
    raw, in_scope = doc
    check_skip(raw, must_parse=in_scope and reference_skip(raw) is not None)  # an insertion may break the text
    data = reference_skip_data(raw)
    if isinstance(data, list) and any(isinstance(r, dict) and any(k in r for k in GEOMETRY) for r in data):
        assert parse_results_columns(raw) is None  # the default declines them


def test_skip_geometry_files():
    for name in RESULT_FILES:
        check_skip((DATA / name).read_bytes())
    segm = orjson.loads((DATA / "coco_fake100/instances_val2014_fakesegm100_results.json").read_bytes())
    for i, r in enumerate(segm):  # Mask R-CNN's results carry boxes
        r["bbox"] = [i, 1.5, 2, 3]
    check_skip(json.dumps(segm).encode(), must_parse=True)
    check_skip((DATA / "keypoints1/dt_dataset.json").read_bytes())


# ---------------------------------------------------------------------------------------------
# ground truth
# ---------------------------------------------------------------------------------------------
def _int64(v) -> bool:
    return type(v) is int and -(2**63) <= v < 2**63


def _finite(v) -> bool:
    return _is_num(v) and math.isfinite(float(v))


def reference_gt(raw: bytes) -> dict | None:
    """What the general loader reads from a ground truth file (for boxes), with its defaults."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if type(data) is not dict:
        return None
    lists = [data.get(k) for k in ("images", "annotations", "categories")]
    if not all(type(x) is list and all(type(r) is dict for r in x) for x in lists):
        return None
    images, anns, cats = lists
    for r in images:
        if not _int64(r.get("id")) or not all(_finite(r[k]) for k in ("height", "width") if k in r):
            return None
    for r in anns:
        if not all(_int64(r.get(k)) for k in ("id", "image_id", "category_id")):
            return None
        b = r.get("bbox")
        if type(b) is not list or len(b) != 4 or not all(_finite(x) for x in b):
            return None
        if "area" in r and not _finite(r["area"]):
            return None
        if not all(type(r[k]) is bool or _int64(r[k]) for k in ("iscrowd", "ignore") if k in r):
            return None
    for r in cats:
        if not _int64(r.get("id")) or ("name" in r and type(r["name"]) is not str):
            return None
    box = np.array([[float(x) for x in r["bbox"]] for r in anns], dtype=np.float64).reshape(-1, 4)
    with np.errstate(over="ignore"):  # w*h of huge boxes: inf, as the loader computes it
        area = [float(r["area"]) if "area" in r else b[2] * b[3] for r, b in zip(anns, box)]
    return {
        "images": {
            "id": np.array([r["id"] for r in images], dtype=np.int64),
            "height": np.array([float(r.get("height", -1)) for r in images], dtype=np.float64),
            "width": np.array([float(r.get("width", -1)) for r in images], dtype=np.float64),
        },
        "annotations": {
            "id": np.array([r["id"] for r in anns], dtype=np.int64),
            "image_id": np.array([r["image_id"] for r in anns], dtype=np.int64),
            "category_id": np.array([r["category_id"] for r in anns], dtype=np.int64),
            "bbox": box,
            "area": np.array(area, dtype=np.float64),
            "iscrowd": np.array([int(r.get("iscrowd", 0)) for r in anns], dtype=np.int64),
            "ignore": np.array([int(r.get("ignore", 0)) for r in anns], dtype=np.int64),
        },
        "categories": {
            "id": np.array([r["id"] for r in cats], dtype=np.int64),
            "name": [str(r.get("name", r["id"])) for r in cats],
        },
    }


def assert_same_gt(cols: dict, ref: dict) -> None:
    for part, columns in ref.items():
        for key, want in columns.items():
            got = cols[part][key]
            if key == "name":
                assert got == want
                continue
            assert got.dtype == want.dtype and got.shape == want.shape, (part, key, got.dtype, got.shape)
            assert (got.view(np.uint8) == want.view(np.uint8)).all(), (part, key, got, want)


def check_gt(raw: bytes, must_parse: bool = False) -> dict | None:
    cols = parse_gt_columns(raw)
    ref = reference_gt(raw)
    if ref is None:
        assert cols is None, raw[:300]
    elif cols is not None:
        assert_same_gt(cols, ref)
    if must_parse:
        assert cols is not None, raw[:300]
    return cols


GT_FILES = [
    "coco_fake100/instances_val2014_100.json",
    "coco_fake100_nocrowd/sampled_gts_bbox_area.json",
    "keypoints1/gt_dataset.json",
    "polygons3/gt_dataset.json",
    "tm4/tm_inputs_gt.json",
    "toy7/groundtruths_coco.json",
    "voc100/coco_gt_from_voc.json",
    "voc100/coco_gt_from_voc_difficult_as_crowd.json",
]


@pytest.mark.parametrize("name", GT_FILES)
def test_gt_data_files(name):
    raw = (DATA / name).read_bytes()
    cols = check_gt(raw, must_parse=True)
    assert len(cols["annotations"]["id"]) == len(orjson.loads(raw)["annotations"])


@pytest.mark.parametrize("preset", ["small", "small-segm"])
def test_gt_benchmark_files(preset, bench_preset):
    path = bench_preset(preset) / "gt.json"
    check_gt(path.read_bytes(), must_parse=True)


ANN = '{"id":1,"image_id":1,"category_id":1,"bbox":[1,2,3,4]}'
GT_DECLINED = [
    "[]", "{}", '{"images":[],"annotations":[]}', '{"images":[],"categories":[]}',
    '{"images":[],"annotations":[],"categories":[],"images":[]}', '{"images":{},"annotations":[],"categories":[]}',
    '{"images":[1],"annotations":[],"categories":[]}', '{"images":[{}],"annotations":[],"categories":[]}',
    '{"images":[{"id":"a"}],"annotations":[],"categories":[]}',
    '{"images":[{"id":1,"id":1}],"annotations":[],"categories":[]}',
    '{"images":[{"id":1,"height":null}],"annotations":[],"categories":[]}',
    '{"images":[{"id":1,"width":"640"}],"annotations":[],"categories":[]}',
    '{"images":[{"id":1.0}],"annotations":[],"categories":[]}',
    '{"images":[],"annotations":[],"categories":[{"id":1,"name":7}]}',
    '{"images":[],"annotations":[],"categories":[{"id":1,"name":null}]}',
    '{"images":[],"annotations":[],"categories":[{"name":"a"}]}',
    '{"images":[],"annotations":[{"id":1,"image_id":1,"bbox":[1,2,3,4]}],"categories":[]}',
    '{"images":[],"annotations":[{"id":1,"image_id":1,"category_id":1}],"categories":[]}',
    '{"images":[],"annotations":[{"id":1,"image_id":1,"category_id":1,"bbox":[1,2,3]}],"categories":[]}',
    '{"images":[],"annotations":[{"id":1,"image_id":1,"category_id":1,"bbox":[1,2,3,4],"area":null}],"categories":[]}',
    '{"images":[],"annotations":[{"id":1,"image_id":1,"category_id":1,"bbox":[1,2,3,4],"iscrowd":0.0}],'
    '"categories":[]}',
    '{"images":[],"annotations":[{"id":1,"image_id":1,"category_id":1,"bbox":[1,2,3,4],"iscrowd":null}],'
    '"categories":[]}',
    '{"images":[],"annotations":[{"id":1,"image_id":1,"category_id":1,"bbox":[1,2,3,4],"area":1e999}],'
    '"categories":[]}',
    f'{{"images":[],"annotations":[{ANN},],"categories":[]}}',
    f'{{"images":[],"annotations":[{ANN}],"categories":[]}} x',
    f'{{"images":[],"annotations":[{ANN}],"categories":[],}}', f'{{"images":[],"annotations":[{ANN}],"categories":[]',
    f'{{"images":[],"annotations":[{ANN[:-1]},"segmentation":[[1,2,3,]]}}],"categories":[]}}',
    f'{{"images":[],"annotations":[{ANN}],"categories":[],"info":NaN}}',
    f'{{"images":[],"annotations":[{ANN}],"categories":[],"im\u0061ges":[]}}',
]  # fmt: skip


@pytest.mark.parametrize("text", GT_DECLINED, ids=range(len(GT_DECLINED)))
def test_gt_declined(text):
    assert parse_gt_columns(text.encode()) is None


def test_gt_defaults_and_names():
    text = (
        r'{"info":{"v":[1,{"x":"\\"}]},"categories":[{"id":3},{"id":1,"name":"caf\u00e9 \"q\""},'
        r'{"name":"über","id":2,"supercategory":"x"}],"annotations":[{"id":5,"image_id":9,"category_id":1,'
        r'"bbox":[0.5,1,2.5,4],"segmentation":[[1,2,3,4,5,6]],"iscrowd":true,"ignore":2},'
        r'{"segmentation":{"counts":"a\\b","size":[2,3]},"bbox":[1,1,1,1],"area":7,"category_id":3,"image_id":9,'
        r'"id":-6,"iscrowd":false}],"images":[{"id":9,"height":480.0},{"width":10,"id":-1}]}'
    )
    cols = check_gt(text.encode(), must_parse=True)
    assert cols["categories"]["name"] == ["3", 'café "q"', "über"]
    assert cols["annotations"]["area"].tolist() == [10.0, 7.0]
    assert cols["annotations"]["iscrowd"].tolist() == [1, 0] and cols["annotations"]["ignore"].tolist() == [2, 0]
    assert cols["images"]["height"].tolist() == [480.0, -1.0] and cols["images"]["width"].tolist() == [-1.0, 10.0]
    empty = parse_gt_columns(b'{"images":[],"annotations":[],"categories":[]}')
    assert empty["annotations"]["bbox"].shape == (0, 4) and empty["categories"]["name"] == []


def _obj(draw, pairs: list[tuple[str, str]]) -> str:
    pairs = draw(st.permutations(pairs))
    return "{" + ",".join(f'{draw(WS)}"{k}"{draw(WS)}:{draw(WS)}{v}{draw(WS)}' for k, v in pairs) + "}"


GT_KEYS = ("images", "annotations", "categories", "id", "image_id", "category_id", "bbox", "area", "iscrowd", "ignore")
gt_extra_keys = any_keys.filter(lambda k: k not in GT_KEYS + ("height", "width", "name"))


def _extras(draw, n_max: int = 2) -> tuple[list[tuple[str, str]], bool]:
    """Unknown keys (duplicates of known ones are declined: not drawn here) with any values."""
    pairs, in_scope = [], True
    for _ in range(draw(st.integers(0, n_max))):
        key_text = json.dumps(draw(gt_extra_keys), ensure_ascii=draw(st.booleans()))
        in_scope &= "\\" not in key_text
        pairs.append((key_text[1:-1], json.dumps(draw(json_values), ensure_ascii=draw(st.booleans()))))
    return pairs, in_scope


FLAGS = st.sampled_from(["0", "1", "2", "-1", "true", "false", "-0"])
RLE_SIZE = st.just([4, 5])
POLYGONS = st.lists(st.lists(st.floats(-1e4, 1e4), min_size=6, max_size=10), min_size=1, max_size=3)


@st.composite
def gt_documents(draw) -> tuple[bytes, bool]:
    in_scope = True
    numbers = []
    images = []
    for _ in range(draw(st.integers(0, 3))):
        pairs = [("id", draw(id_tokens()))]
        for key in ("height", "width"):
            if draw(st.booleans()):
                numbers.append(draw(float_tokens()))
                pairs.append((key, numbers[-1]))
        extra, ok = _extras(draw)
        in_scope &= ok
        images.append(_obj(draw, pairs + extra))
    anns = []
    for _ in range(draw(st.integers(0, 3))):
        box = [draw(float_tokens()) for _ in range(4)]
        numbers += box
        pairs = [(k, draw(id_tokens())) for k in ("id", "image_id", "category_id")]
        pairs.append(("bbox", "[" + ",".join(f"{draw(WS)}{t}" for t in box) + "]"))
        if draw(st.booleans()):
            numbers.append(draw(float_tokens()))
            pairs.append(("area", numbers[-1]))
        pairs += [(k, draw(FLAGS)) for k in ("iscrowd", "ignore") if draw(st.booleans())]
        if draw(st.booleans()):
            seg = draw(st.one_of(POLYGONS, st.fixed_dictionaries({"counts": st.text(max_size=6), "size": RLE_SIZE})))
            pairs.append(("segmentation", json.dumps(seg)))
        extra, ok = _extras(draw, 1)
        in_scope &= ok
        anns.append(_obj(draw, pairs + extra))
    cats = []
    for _ in range(draw(st.integers(0, 3))):
        pairs = [("id", draw(id_tokens()))]
        if draw(st.booleans()):
            pairs.append(("name", json.dumps(draw(st.text(max_size=6)), ensure_ascii=draw(st.booleans()))))
        extra, ok = _extras(draw, 1)
        in_scope &= ok
        cats.append(_obj(draw, pairs + extra))
    top = [(k, "[" + ",".join(v) + "]") for k, v in (("images", images), ("annotations", anns), ("categories", cats))]
    extra, ok = _extras(draw)
    raw = (draw(WS) + _obj(draw, top + extra) + draw(WS)).encode()
    in_scope &= ok and not any(_long_int(t) for t in numbers) and reference_gt(raw) is not None
    return raw, in_scope


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(gt_documents())
def test_hypothesis_gt_documents(doc):
    raw, in_scope = doc
    check_gt(raw, must_parse=in_scope)


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(gt_documents(), st.data())
def test_hypothesis_gt_mutations(doc, data):
    raw, _ = doc
    pos = data.draw(st.integers(0, len(raw)))
    byte = data.draw(st.sampled_from(list(b'{}[],:"\\-.e0 x\x00\xff')))
    op = data.draw(st.sampled_from(["delete", "insert", "replace"]))
    if op == "delete":
        raw = raw[:pos] + raw[pos + 1 :]
    elif op == "insert":
        raw = raw[:pos] + bytes([byte]) + raw[pos:]
    else:
        raw = raw[:pos] + bytes([byte]) + raw[pos + 1 :]
    check_gt(raw)

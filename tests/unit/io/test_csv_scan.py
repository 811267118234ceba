"""The CSV scanner: numbers bit for bit as Python's float (the tokens its converter declines too), text codes,
the dialect (BOM, CRLF, blank lines, quoted fields) and errors naming the line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples

from deteval.errors import InputError
from deteval.io.csv_scan import read_csv


def test_dialect_and_declined_tokens(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes(b'\xef\xbb\xbfA,"B",C\r\nx,.5,"q,1"\r\n\r\ny,+1e3,z\n\nx,12345678901234567890.5,"w"\n')
    t = read_csv(p, numbers=["B"], texts=["A", "C"])
    assert t.lines.tolist() == [2, 4, 6]
    assert t.floats("B").tolist() == [0.5, 1000.0, float("12345678901234567890.5")]
    codes, values = t.codes("A")
    assert values.tolist() == ["x", "y"] and codes.tolist() == [0, 1, 0]
    codes, values = t.codes("C")
    assert values[codes].tolist() == ["q,1", "z", "w"]


@settings(max_examples=examples(100))
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=20), st.booleans())
def test_numbers_are_pythons_float(tmp_path_factory, values, exponent_style):
    p = tmp_path_factory.mktemp("csv") / "n.csv"
    texts = [f"{v:.17e}" if exponent_style else repr(v) for v in values]
    p.write_text("V,W\n" + "".join(f"{t},k{i % 3}\n" for i, t in enumerate(texts)))
    got = read_csv(p, numbers=["V"], texts=["W"]).floats("V")
    assert [g.hex() for g in got] == [float(t).hex() for t in texts]


@pytest.mark.parametrize(
    ("text", "line", "rule"),
    [
        ("A,B\n1,2\n3\n", "line 3", "wrong number of fields: 1, the header has 2"),
        ('A,B\n1,"2\n', "line 2", "a quoted field has no closing quote"),
        ('A,B\n1,"2""3"\n', "line 2", "doubled quote"),
        ('A,B\n1,"2"x\n', "line 2", "text follows a closing quote"),
        ("A,B\n1,2\n1,two\n", "line 3", "B must be a number, got 'two'"),
        ("A,B\n1,inf\n", "line 2", "B must be a finite number, got 'inf'"),
        ("A,C\n1,2\n", "line 1", "missing column B"),
    ],
)
def test_errors_name_the_line(tmp_path, text, line, rule):
    p = tmp_path / "e.csv"
    p.write_text(text)
    with pytest.raises(InputError, match=rule) as info:
        read_csv(p, numbers=["A", "B"]).floats("B")
    assert f"e.csv: {line}: " in str(info.value)


def test_empty_text_is_an_error(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("A,B\nx,1\n,2\n")
    with pytest.raises(InputError, match="e.csv: line 3: A is empty"):
        read_csv(p, texts=["A"]).codes("A")

"""Class names with wide characters (CJK, emoji: two terminal columns each) keep the tables aligned."""

from __future__ import annotations

import json

import pytest

import deteval
from deteval.analysis.report import per_class_table
from deteval.text import display_width, pad

NAMES = ["猫", "dog", "🐶 puppy", "ｆｕｌｌ"]  # wide, narrow, emoji, full-width
_NOTE = "  (no positives)"


def _files(tmp_path) -> tuple[str, str]:
    cats = [{"id": i + 1, "name": n} for i, n in enumerate(NAMES)]
    anns = [{"id": i + 1, "image_id": 1, "category_id": i + 1, "bbox": [10 * i, 0, 8, 8], "area": 64, "iscrowd": 0}
            for i in range(3)]  # fmt: skip
    dets = [{"image_id": 1, "category_id": i + 1, "bbox": [10 * i, 0, 8, 8], "score": 0.9} for i in range(3)]
    gt, dt = tmp_path / "gt.json", tmp_path / "dt.json"
    gt.write_text(
        json.dumps({"images": [{"id": 1, "height": 50, "width": 50}], "categories": cats, "annotations": anns})
    )
    dt.write_text(json.dumps(dets))
    return str(dt), str(gt)


@pytest.mark.parametrize(
    ("text", "width"), [("abc", 3), ("猫", 2), ("🐶", 2), ("ｆ", 2), ("e\u0301", 1), ("é", 1), ("", 0)]
)
def test_display_width(text, width):
    assert display_width(text) == width


def test_pad_by_display_width():
    assert pad("猫", 4) == "猫  " and pad("猫", 4, right=True) == "  猫" and pad("toolong", 3) == "toolong"


def test_per_class_table_aligns_wide_names(tmp_path):
    result = deteval.evaluate(*_files(tmp_path))
    lines = per_class_table(result).splitlines()
    assert len(lines) == 2 + len(NAMES)
    assert len({display_width(line) for line in lines}) == 1, "\n".join(lines)  # the last column is right-aligned


def test_voc_summary_aligns_wide_names(tmp_path):
    result = deteval.evaluate(*_files(tmp_path), protocol="voc10")
    lines = result.summary_lines[1:]  # the column heads, one row per class, the mAP row
    assert len(lines) == 2 + len(NAMES)
    rows = [line.removesuffix(_NOTE) for line in lines]
    assert len({display_width(row) for row in rows}) == 1, "\n".join(lines)

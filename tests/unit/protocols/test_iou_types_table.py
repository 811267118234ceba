"""The iou types' table (``deteval.vocabulary.IOU_TYPES``) is what the COCO family reads: each entry's
overlap is bound to a kernel, its kernel groups exist, and the protocols offer exactly its names."""

from __future__ import annotations

import importlib

import pytest

from deteval import protocols
from deteval._startup.kernel_signatures import GROUPS
from deteval.protocols.coco_matching import OVERLAPS
from deteval.vocabulary import IOU_TYPES


@pytest.mark.parametrize("name", list(IOU_TYPES))
def test_each_entry_is_bound(name):
    t = IOU_TYPES[name]
    assert t.name == name
    assert t.overlap in OVERLAPS
    assert t.scan_group in GROUPS
    if t.overlap_kernels is not None:  # jit.warm loads them
        assert importlib.import_module(t.overlap_kernels).KERNELS


def test_the_protocols_offer_the_tables_names():
    assert protocols.get("coco").iou_types == tuple(IOU_TYPES)
    for name in ("lvis", "crowdpose"):
        assert set(protocols.get(name).iou_types) <= set(IOU_TYPES)


def test_an_unknown_iou_type_is_refused_naming_the_table():
    from deteval.errors import InputError

    with pytest.raises(InputError, match="'contour'") as e:
        protocols.get("coco").params("contour")
    assert all(name in e.value.rule for name in IOU_TYPES)

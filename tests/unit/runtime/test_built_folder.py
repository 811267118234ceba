"""A source tree without compiled kernels (Python started in a clone's root) uses an installed copy's, found
further along sys.path; a package with its own uses those; none anywhere: its own path, absent."""

from __future__ import annotations

import sys

import deteval._runtime.built as runtime


def test_built_folder(tmp_path, monkeypatch):
    source = tmp_path / "clone" / "deteval"
    installed = tmp_path / "site-packages" / "deteval"
    (installed / "_aot").mkdir(parents=True)
    source.mkdir(parents=True)
    monkeypatch.setattr(runtime, "_PACKAGE", str(source))
    monkeypatch.setattr(sys, "path", [str(source.parent), str(tmp_path / "elsewhere"), str(installed.parent)])
    assert runtime.built_folder("_aot") == str(installed / "_aot")
    assert runtime.built_folder("_kernels") == str(source / "_kernels")  # none anywhere
    (source / "_aot").mkdir()
    assert runtime.built_folder("_aot") == str(source / "_aot")  # its own first

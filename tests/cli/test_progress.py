"""The CLI's stage indicator: drawn only on a terminal, after a delay, never with --quiet."""

from __future__ import annotations

import io

import pytest

import deteval.progress as progress_mod
from deteval.cli import main
from deteval.progress import Progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_draws_stages_on_a_terminal_and_erases_the_line():
    tty = FakeTTY()
    with Progress(3, delay=0.0, stream=tty, interval=10) as p:
        p.stage("loading")
        p.stage("evaluating")
        assert "2/3 evaluating" in p.line()
    out = tty.getvalue()
    assert "\rdeteval [" in out and "1/3 loading" in out and "2/3 evaluating" in out
    last = out.rsplit("\r", 2)
    assert last[-1] == "" and set(last[-2]) == {" "}  # the line is blanked, cursor back at column 0


@pytest.mark.parametrize("stream", [io.StringIO(), FakeTTY()], ids=["pipe", "tty-before-delay"])
def test_silent_on_a_pipe_and_before_the_delay(stream):
    with Progress(2, delay=60.0 if isinstance(stream, FakeTTY) else 0.0, stream=stream) as p:
        p.stage("loading")
        p.stage("evaluating")
    assert stream.getvalue() == ""


def test_disabled_draws_nothing_even_on_a_terminal():
    tty = FakeTTY()
    with Progress(2, enabled=False, delay=0.0, stream=tty) as p:
        p.stage("loading")
    assert tty.getvalue() == ""


def test_the_bar_fills_with_stages_done():
    p = Progress(4, enabled=False)
    p.stage("a")
    assert "[" + "-" * 20 + "] 1/4 a" in p.line()
    p.stage("b")
    p.stage("c")
    assert "[" + "#" * 10 + "-" * 10 + "] 3/4 c" in p.line()


@pytest.mark.parametrize("quiet", [False, True])
def test_cli_shows_it_on_a_terminal_unless_quiet(monkeypatch, capsys, quiet):
    tty = FakeTTY()
    monkeypatch.setattr("sys.stderr", tty)
    original = progress_mod.Progress.__init__

    def no_delay(self, total, enabled=True, delay=2.0, stream=None, interval=0.2):
        original(self, total, enabled=enabled, delay=0.0, stream=stream, interval=interval)

    monkeypatch.setattr(progress_mod.Progress, "__init__", no_delay)
    assert main(["--sample"] + (["--quiet"] if quiet else [])) == 0
    drawn = tty.getvalue()
    if quiet:
        assert drawn == ""
        assert capsys.readouterr().out == ""
    else:
        assert "1/2 loading" in drawn and "2/2 evaluating" in drawn
        assert "Average Precision" in capsys.readouterr().out


def test_cli_draws_nothing_when_stderr_is_not_a_terminal(capsys):
    assert main(["--sample"]) == 0
    assert "deteval [" not in capsys.readouterr().err

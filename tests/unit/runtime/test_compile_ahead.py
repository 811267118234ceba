"""deteval._startup.compile_ahead: with a cold kernel cache, helper processes compile what the run needs, once, and
change nothing in what it computes. (What it saves is time: measured in benchmarks/README.md, not here.)"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import deteval._startup.compile_ahead as ca
from deteval._runtime import PLAIN
from deteval._startup.kernel_signatures import GROUPS, ORDER

# tests of what a cold cache does: the kernels an installed package ships are ignored
pytestmark = pytest.mark.usefixtures("no_shipped_kernels")

patched = pytest.mark.skipif(PLAIN, reason="DETEVAL_PLAIN_NUMBA=1: no kernel cache of deteval's, no helpers")

# the sample through the CLI, then the number of deteval kernels this process compiled
_CLI = (
    "import sys\n"
    "from numba.core import event\n"
    "import deteval.jit\n"
    "n = []\n"
    "class L(event.Listener):\n"
    "    def on_start(self, ev):\n"
    "        f = getattr(ev.data.get('dispatcher'), 'py_func', None)\n"
    "        if f is not None and f.__module__.startswith('deteval.'):\n"
    "            n.append(f.__qualname__)\n"
    "    def on_end(self, ev):\n"
    "        pass\n"
    "event.register('numba:compile', L())\n"
    "from deteval.cli import main\n"
    "rc = main(['--protocol', 'coco', '--sample'])\n"
    "print('compiled:', len(n), file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def _sample(cache: Path, helpers: str | None, tmp: Path) -> tuple[str, int]:
    """(stdout, deteval kernels compiled in the run's own process) of the sample CLI run."""
    env = {k: v for k, v in os.environ.items() if k != ca.ENV}
    env.update(NUMBA_CACHE_DIR=str(cache), TMPDIR=str(tmp))
    if helpers is not None:
        env[ca.ENV] = helpers
    p = subprocess.run([sys.executable, "-c", _CLI], env=env, capture_output=True, text=True, check=True)
    line = [x for x in p.stderr.splitlines() if x.startswith("compiled:")][-1]
    return p.stdout, int(line.split()[1])


def test_recorded_signatures_name_kernels_and_parse():
    """Every recorded kernel exists, and its types parse back to what numba writes (the claim files' keys)."""
    assert ORDER == list(GROUPS)
    for entries in GROUPS.values():
        for name, texts in entries:
            module, _, qualname = name.rpartition(".")
            kernel = getattr(importlib.import_module(module), qualname)
            assert hasattr(kernel, "compile"), name
            sig = ca.parse_signature(texts)
            assert tuple(repr(t) for t in sig) == texts
            assert ca.kernel_key(name, sig) == ca.kernel_key(name, ca.parse_signature(texts))


def test_compile_ahead_notes_only_known_groups(monkeypatch):
    monkeypatch.setattr(ca, "_noted", [])
    monkeypatch.setattr(ca, "_started", False)
    ca.compile_ahead("coco-bbox", "no-such-group", "coco-bbox")
    assert ca._noted == ["coco-bbox"]


def test_a_miss_waits_for_the_helper_that_claimed_the_kernel(tmp_path, monkeypatch):
    """A kernel claimed by a live helper is waited for (True: load it again); one nobody claimed is claimed here."""
    key = ca.kernel_key("k", ())
    (tmp_path / f"{key}.claim").touch()
    done = str(tmp_path / f"{key}.done")
    helper = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(0.3); open({done!r}, 'w')"])
    monkeypatch.setattr(ca, "_started", True)
    monkeypatch.setattr(ca, "_claims", str(tmp_path))
    monkeypatch.setattr(ca, "_helpers", [helper])
    monkeypatch.setattr(ca, "_noted", [])
    monkeypatch.delenv(ca.ENV, raising=False)
    assert ca.on_miss("k", ()) is True
    helper.wait()
    # nobody's: claimed by this process, which compiles it (False), and a helper would now skip it
    assert ca.on_miss("other", ()) is False
    assert (tmp_path / f"{ca.kernel_key('other', ())}.claim").exists()
    # claimed by a helper that died without finishing: no wait, compiled here
    (tmp_path / f"{ca.kernel_key('third', ())}.claim").touch()
    t0 = time.monotonic()
    assert ca.on_miss("third", ()) is False
    assert time.monotonic() - t0 < ca.WAIT_S


@patched
def test_a_helper_skips_claimed_kernels(tmp_path):
    """Kernels claimed already are not compiled by a helper: it writes nothing into the cache."""
    claims, cache = tmp_path / "claims", tmp_path / "cache"
    claims.mkdir()
    for name, texts in GROUPS["coco-bbox"]:
        (claims / f"{ca.kernel_key(name, ca.parse_signature(texts))}.claim").touch()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), **{ca.ENV: "0"})
    helper = [sys.executable, "-m", "deteval._startup.compile_ahead", str(claims), "coco-bbox"]
    subprocess.run(helper, env=env, check=True)
    assert not list(cache.rglob("*.nbi"))
    assert not list(claims.glob("*.done"))


@pytest.mark.slow
@patched
def test_helpers_fill_the_cache_with_what_the_sample_needs_and_change_nothing(tmp_path):
    """The recorded coco-bbox group is what the sample run compiles: after a helper compiled it, the run
    compiles nothing. A cold run with helpers prints what one without prints, leaves no claim folder,
    and fills the cache so that the next run compiles nothing."""
    claims, filled = tmp_path / "claims", tmp_path / "filled"
    claims.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(filled), **{ca.ENV: "0"})
    helper = [sys.executable, "-m", "deteval._startup.compile_ahead", str(claims), "coco-bbox"]
    subprocess.run(helper, env=env, check=True)
    assert len(list(claims.glob("*.done"))) == len(GROUPS["coco-bbox"])
    out_filled, n = _sample(filled, "0", tmp_path)
    assert n == 0

    temp = tmp_path / "temp"
    temp.mkdir()
    cold = tmp_path / "cold"
    out_helpers, n_cold = _sample(cold, "1", temp)
    assert n_cold > 0  # this process compiled some kernels, the helper others
    assert not list(temp.iterdir())  # the claim folder is gone
    out_warm, n_warm = _sample(cold, "0", temp)
    assert n_warm == 0
    out_plain, _ = _sample(tmp_path / "cold-plain", "0", temp)
    assert out_helpers == out_plain == out_filled == out_warm
    assert "Average Precision" in out_plain


def test_recorded_signatures_fit_the_kernels():
    """Each recorded signature has as many types as its kernel has parameters: a kernel whose arguments
    changed needs ``scripts/record_kernel_signatures.py`` run again."""
    import importlib
    import inspect

    for group, kernels in GROUPS.items():
        for name, texts in kernels:
            module, _, qualname = name.rpartition(".")
            kernel = getattr(importlib.import_module(module), qualname)
            n_params = len(inspect.signature(kernel.py_func).parameters)
            assert len(ca.parse_signature(texts)) == n_params, (group, name)


def test_helpers_import_this_deteval_not_the_working_directorys(tmp_path):
    """Run from a checkout of deteval with deteval installed, helpers must compile the installed kernels
    (the ones the run loads): ``python -m`` would import the checkout's."""
    checkout = tmp_path / "deteval"
    checkout.mkdir()
    (checkout / "__init__.py").write_text("raise ImportError('the checkout in the working directory')\n")
    (tmp_path / "claims").mkdir()
    env = dict(os.environ, **{ca.ENV: "0"})
    run = [sys.executable, "-c", ca.helper_command(), str(tmp_path / "claims")]  # no group: import only
    subprocess.run(run, env=env, cwd=tmp_path, check=True)

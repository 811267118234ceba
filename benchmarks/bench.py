"""Speed, memory and parity of deteval against other COCO evaluators on the same files.

    python benchmarks/bench.py --preset coco [--iou-type bbox|segm|keypoints] [--runs 3]
                               [--tool-runs pycocotools=1] [--tools deteval,pycocotools,...]
                               [--json out.json] [--cold] [--profile]

Every measurement runs in a fresh subprocess (imports, caches and page faults as a user sees
them). The child times its own stages with perf_counter; the parent takes the child's wall
time; the child reports its own peak RSS (VmHWM, see PEAK_FN). Each tool's 12 summary stats must equal
(==, bit for bit) the reference tool's: pycocotools when it is in the run, else deteval.
See benchmarks/README.md for what every column means.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


# --------------------------------------------------------------------------------------------
# The tools. Each is: the module to look for, the distribution for its version, and straight-
# line code per stage run in the child with GT / DT bound to the file paths and IOU to the iou
# type. `stats` is an expression giving the summary numbers (12; 10 for keypoints). Stages not
# listed are reported as missing. `unsupported` maps an iou type the tool cannot evaluate to the
# reason (the tool is then skipped with that reason printed).
# --------------------------------------------------------------------------------------------
IOU_TYPES = ("bbox", "segm", "keypoints", "obb")


def _cocoapi(module, dist, imports, evaluator, unsupported=None, pip=None):
    """A tool with pycocotools' COCO / loadRes / COCOeval(...).evaluate/accumulate/summarize."""
    return {
        "module": module,
        "dist": dist,
        "pip": pip or dist,
        "stages": {
            "import": imports,
            "load": "gt = COCO(GT)\ndt = gt.loadRes(DT)",
            "evaluate": f"E = {evaluator}(gt, dt, IOU)\nE.evaluate()",
            "accumulate": "E.accumulate()",
            "summarize": "E.summarize()",
        },
        "stats": "[float(x) for x in E.stats]",
        "unsupported": unsupported or {},
    }


TOOLS = {
    "deteval": {
        "module": "deteval",
        "dist": "deteval",
        "stages": {
            "import": "import deteval",
            # what deteval.evaluate(DT, GT) does first: the results scanned while the ground truth loads
            "load": "dt, gt = deteval.load(DT, GT, iou_type=IOU)",
            "eval": "res = deteval.evaluate(dt, gt, iou_type=IOU)",
        },
        "stats": "[float(x) for x in res.stats.values()]",
        "cli": ["-m", "deteval", "--protocol", "coco", "--iou-type", "{IOU}", "{DT}", "{GT}"],
        "protocol": "coco",  # what --profile's stage clock wraps
        "unsupported": {},
    },
    # deteval's pycocotools objects (deteval.pycocotools): pycocotools' API on deteval's kernels
    "deteval-shim": _cocoapi("deteval", "deteval", "from deteval.pycocotools import COCO, COCOeval", "COCOeval"),
    "pycocotools": _cocoapi("pycocotools", "pycocotools",
                            "from pycocotools.coco import COCO\n"
                            "from pycocotools.cocoeval import COCOeval", "COCOeval"),
    "faster-coco-eval": _cocoapi("faster_coco_eval", "faster-coco-eval",
                                 "from faster_coco_eval import COCO, COCOeval_faster",
                                 "COCOeval_faster"),
    "hotcoco": _cocoapi("hotcoco", "hotcoco", "from hotcoco import COCO, COCOeval", "COCOeval"),
    "ultrafast": _cocoapi("ultrafast_pycocotools", "ultrafast-pycocotools",
                          "from ultrafast_pycocotools import COCO, COCOeval", "COCOeval"),
    # vernier's own path: the two files' bytes straight to its Rust reader (which parses them inside
    # the call, so `load` is only the file reads). Its thread count is an argument, default 1.
    "vernier": {
        "module": "vernier",
        "dist": "vernier",
        "pip": "vernier pyarrow",
        "stages": {
            "import": "import os\nimport vernier.instance as VI",
            "load": "gtb = open(GT, 'rb').read()\ndtb = open(DT, 'rb').read()",
            "eval": "S = getattr(VI, f'evaluate_{IOU}_summary')(gtb, dtb, parity_mode='strict', "
                    "max_dets=[1, 10, 100], use_cats=True, num_threads=int(os.environ['VERNIER_NUM_THREADS']))",
        },
        "stats": "[float(x) for x in S.stats]",
        "unsupported": {"keypoints": "its JSON reader requires `bbox` on every result (json: missing field "
                                     "`bbox`), which keypoint results as pose estimators write them lack; "
                                     "see vernier-cocoeval"},
    },
    # vernier's drop-in for pycocotools' COCOeval over pycocotools' COCO / loadRes (which fills in the
    # boxes of keypoint results): the one vernier route that reads the keypoint presets
    "vernier-cocoeval": _cocoapi("vernier", "vernier",
                                 "from pycocotools.coco import COCO\nfrom vernier import COCOeval",
                                 "COCOeval", pip="vernier pyarrow pycocotools"),
}
for _name, _tool in TOOLS.items():  # oriented boxes (hotcoco's "obb" IoU type): deteval and hotcoco only
    if _name not in ("deteval", "hotcoco"):
        _tool["unsupported"].setdefault("obb", "no oriented-box IoU type")
# deteval's competitors in the issue-21 targets: each ratio is taken against the fastest of these
RUST_TOOLS = ("hotcoco", "ultrafast", "vernier", "vernier-cocoeval")
ALL_TOOLS = list(TOOLS)
# pycocotools and faster-coco-eval take many minutes / run out of memory on Objects365 scale
# (vernier-cocoeval loads with pycocotools' COCO, as slow there)
DEFAULT_EXCLUDE = {"o365": {"pycocotools", "faster-coco-eval", "vernier-cocoeval"}}

STAGES = ["import", "load", "evaluate", "accumulate", "summarize", "eval", "total"]
COLUMNS = STAGES + ["process", "rss_mb"]  # what the tables show, per tool


def child_script(tool: dict, profile: str | None = None) -> str:
    """Python source for one timed run: stages in order, then a JSON line to argv[3].

    ``profile`` (deteval's protocol name, with ``--profile``): profile_deteval's stage clock is
    installed after the import stage (its own set-up time left out of the total) and its split written."""
    lines = [
        "import time as _time, json as _json, sys as _sys",
        "GT, DT, _OUT, IOU = _sys.argv[1:5]",
        "_T = {}",
        "_P = None",
        "_c0 = _c = _time.perf_counter()",
    ]
    for i, (name, code) in enumerate(tool["stages"].items()):
        lines += [code, "_n = _time.perf_counter()", f"_T[{name!r}] = _n - _c", "_c = _n"]
        if profile and i == 0:
            lines += [f"_sys.path.insert(0, {str(HERE)!r})", "import profile_deteval as _PD",
                      f"_P = _PD.install({profile!r})", "_n = _time.perf_counter()",
                      "_c0 += _n - _c", "_c = _n"]
    lines += [
        "_T['total'] = _c - _c0",
        f"_S = {tool['stats']}",
        PEAK_FN,
        "_R = {'times': _T, 'stats': _S, 'peak_kb': _peak_kb(), 'numba': 'numba' in _sys.modules}",
        "if _P is not None:",
        "    _R['profile'] = dict(import_=_T['import'], **_PD.split(_P))",
        "open(_OUT, 'w').write(_json.dumps(_R))",
    ]
    return "\n".join(lines) + "\n"


# A process's own peak resident memory: Linux's VmHWM (the high-water mark of this address space,
# which exec starts afresh), None elsewhere. Not ru_maxrss: Linux carries a parent's RSS at the fork
# across exec into the child's ru_maxrss, so a child of a 300 MB parent reports at least 300 MB.
PEAK_FN = """def _peak_kb():
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None"""

# `python -c PEAK_LAUNCHER PEAK_FILE MODULE ARGS...` runs `python -m MODULE ARGS...` and, at exit
# (sys.exit included), writes its own peak in kB to PEAK_FILE (nothing where VmHWM is unknown)
PEAK_LAUNCHER = PEAK_FN + """
import atexit as _atexit, runpy as _runpy, sys as _sys
_peak_out = _sys.argv.pop(1)
def _write_peak():
    kb = _peak_kb()
    if kb is not None:
        with open(_peak_out, 'w') as f:
            f.write(str(kb))
_atexit.register(_write_peak)
del _sys.argv[0]
_runpy.run_module(_sys.argv[0], run_name='__main__', alter_sys=True)
"""


def run_child(argv, env, timeout):
    """Run argv; return (exit code, wall seconds, ``ru_maxrss`` in MiB, output tail).

    ``ru_maxrss`` is floored at this process's RSS when it forked the child (see PEAK_FN): the
    tables use the child's own VmHWM, this figure is kept in the JSON as ``rss_wait4_mb``."""
    with tempfile.TemporaryFile() as log:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                             start_new_session=True)
        killer = threading.Timer(timeout, lambda: os.killpg(p.pid, signal.SIGKILL))
        killer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        tail = log.read()[-3000:].decode("utf-8", "replace")
    return p.returncode, wall, ru.ru_maxrss / 1024.0, tail


def measure(tool_name, gt, dt, iou, env, timeout, profile=False):
    """One fresh-process run of a tool's stages; the parent adds wall time.

    ``profile``: deteval's run also records its per-stage split (``profile`` in the record)."""
    tool = TOOLS[tool_name]
    proto = tool.get("protocol") if profile else None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        rc, wall, rss, tail = run_child(
            [sys.executable, "-c", child_script(tool, proto), str(gt), str(dt), str(out), iou], env,
            timeout)
        if rc != 0 or not out.exists():
            return {"error": f"exit {rc}: {tail.strip()[-1500:]}"}
        res = json.loads(out.read_text())
    t = res["times"]
    if "eval" not in t:
        t["eval"] = sum(t[s] for s in ("evaluate", "accumulate", "summarize"))
    peak = res.get("peak_kb")
    rec = {"times": t, "stats": res["stats"], "wall": wall,
           "rss_mb": rss if peak is None else peak / 1024.0, "rss_wait4_mb": rss, "numba": res.get("numba")}
    if "profile" in res:
        rec["profile"] = res["profile"]
    if "cli" in tool:
        rc, cwall, crss, tail = run_cli(tool, gt, dt, iou, env, timeout)
        rec["cli"] = ({"wall": cwall, "rss_mb": crss} if rc == 0
                      else {"error": f"exit {rc}: {tail.strip()[-1500:]}"})
    return rec


def run_cli(tool, gt, dt, iou, env, timeout):
    """The tool's command line; (exit code, wall s, peak RSS MiB: its own VmHWM, else ru_maxrss, output tail)."""
    args = [a.format(GT=gt, DT=dt, IOU=iou) for a in tool["cli"]]
    if args[0] != "-m":
        return run_child([sys.executable, *args], env, timeout)
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak_kb"
        rc, wall, rss, tail = run_child([sys.executable, "-c", PEAK_LAUNCHER, str(peak_file), *args[1:]],
                                        env, timeout)
        if peak_file.exists():
            rss = int(peak_file.read_text()) / 1024.0
    return rc, wall, rss, tail


def summarise_runs(runs):
    """Median over successful runs of every column; first run's stats."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[-1]["error"]}
    med = {}
    for s in STAGES:
        vals = [r["times"][s] for r in ok if s in r["times"]]
        if vals:
            med[s] = statistics.median(vals)
    clis = [r["cli"] for r in ok if "cli" in r and "error" not in r["cli"]]
    if clis:
        med["process"] = statistics.median(c["wall"] for c in clis)
        med["cli_rss_mb"] = statistics.median(c["rss_mb"] for c in clis)
    elif any("cli" in r for r in ok):
        med["process"] = None
    else:
        med["process"] = statistics.median(r["wall"] for r in ok)
    med["rss_mb"] = statistics.median(r["rss_mb"] for r in ok)
    profiles = [r["profile"] for r in ok if "profile" in r]
    if profiles:
        med["profile"] = {k: statistics.median(p[k] for p in profiles) for k in profiles[0]}
    if all("rss_wait4_mb" in r for r in ok):
        med["rss_wait4_mb"] = statistics.median(r["rss_wait4_mb"] for r in ok)
    stats = ok[0]["stats"]
    return {"median": med, "stats": stats, "n_ok": len(ok),
            "stable": all(r["stats"] == stats for r in ok),
            "errors": [r["error"] for r in runs if "error" in r]
            + [r["cli"]["error"] for r in ok if "error" in r.get("cli", {})]}


def _fmt(x, unit=""):
    if x is None:
        return "—"
    if unit == "mb":
        return f"{x:.0f}"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _ratio(a, b):
    if a is None or b is None or b <= 0:
        return "—"
    return f"{a / b:.2f}"


def tables(summary, tools):
    head = ["tool", "import s", "load s", "evaluate s", "accumulate s", "summarize s",
            "eval s", "total s", "process s", "peak RSS MB", "stats"]
    rows = []
    for t in tools:
        s = summary[t]
        if "error" in s:
            rows.append([t] + ["error"] * (len(head) - 2) + ["✗"])
            continue
        m = s["median"]
        rows.append([t] + [_fmt(m.get(c), "mb" if c == "rss_mb" else "") for c in COLUMNS]
                    + [s.get("match_mark", "?")])
    out = [_md(head, rows)]
    d = summary.get("deteval", {}).get("median")
    if d:
        rhead = ["deteval / tool", "import", "load", "eval", "total", "process", "peak RSS"]
        rrows = []
        for t in tools:
            m = summary[t].get("median")
            if t == "deteval" or not m:
                continue
            rrows.append([t] + [_ratio(d.get(c), m.get(c)) for c in RATIO_COLUMNS])
        best = fastest(summary, tools)
        if best:
            rrows.append(["**fastest (RSS: leanest) of " + ", ".join(t for t in RUST_TOOLS if t in tools) + "**"]
                         + [f"**{_ratio(d.get(c), best[c][1])}** ({best[c][0]})" if c in best else "—"
                            for c in RATIO_COLUMNS])
        if rrows:
            out.append(_md(rhead, rrows))
    return "\n\n".join(out)


RATIO_COLUMNS = ("import", "load", "eval", "total", "process", "rss_mb")
# the columns the targets name; stage columns split differently per tool (vernier parses inside its
# eval call), so a per-stage minimum across tools would compare unlike things
TARGET_COLUMNS = ("total", "process", "rss_mb")


def fastest(summary, tools):
    """Per target column, (tool, value) of the lowest median among RUST_TOOLS that ran with stats
    not shown unequal: what deteval's targets are set against."""
    best = {}
    for t in tools:
        s = summary[t]
        if t not in RUST_TOOLS or "median" not in s or s.get("match") is False:
            continue
        for c in TARGET_COLUMNS:
            v = s["median"].get(c)
            if v is not None and (c not in best or v < best[c][1]):
                best[c] = (t, v)
    return best


def profile_table(summary, tools):
    """deteval's per-stage split (medians) and every tool's total, one column of seconds."""
    d = summary.get("deteval", {}).get("median", {})
    prof = d.get("profile")
    if not prof:
        return None
    total = d["total"]
    rows = [[f"deteval: {k.rstrip('_')}", _fmt(v), f"{100 * v / total:.0f}%"] for k, v in prof.items()]
    rows.append(["**deteval: total**", f"**{_fmt(total)}**", "100%"])
    rows += [[f"{t}: total", _fmt(summary[t]["median"]["total"]), f"{100 * summary[t]['median']['total'] / total:.0f}%"]
             for t in tools if t != "deteval" and "median" in summary[t]]
    return _md(["stage", "s", "of deteval's total"], rows)


def _md(head, rows):
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def cold_vs_warm(gt, dt, iou, env, runs, timeout):
    """deteval's CLI with an empty numba cache each run vs with a cache filled beforehand."""
    tool = TOOLS["deteval"]
    res = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as warm_dir:
        wenv = dict(env, NUMBA_CACHE_DIR=warm_dir)
        run_cli(tool, gt, dt, iou, wenv, timeout)  # fill the warm cache
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as cold_dir:
                rc, wall, rss, tail = run_cli(tool, gt, dt, iou,
                                              dict(env, NUMBA_CACHE_DIR=cold_dir), timeout)
                res["cold"].append({"wall": wall, "rss_mb": rss} if rc == 0 else {"error": tail})
            rc, wall, rss, tail = run_cli(tool, gt, dt, iou, wenv, timeout)
            res["warm"].append({"wall": wall, "rss_mb": rss} if rc == 0 else {"error": tail})
    out = {}
    for k, v in res.items():
        ok = [r for r in v if "error" not in r]
        out[k] = ({"wall": statistics.median(r["wall"] for r in ok),
                   "rss_mb": statistics.median(r["rss_mb"] for r in ok)} if ok
                  else {"error": v[-1]["error"][-1500:]})
    return out


def missing(tool, env):
    """None when the tool's import stage runs in a child with the bench's env, else why not.

    A module that is found but fails to import (vernier without pyarrow) counts as missing, so
    the run reports it up front instead of as an error row."""
    mod = TOOLS[tool]["module"]
    if tool == "deteval" and str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    if importlib.util.find_spec(mod) is None:
        return f"not installed (no module {mod!r}; pip install {TOOLS[tool].get('pip', TOOLS[tool]['dist'])})"
    p = subprocess.run([sys.executable, "-c", TOOLS[tool]["stages"]["import"]], env=env, cwd=REPO,
                       capture_output=True, text=True)
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        return f"not installed: its import fails ({why})"
    return None


def version(tool):
    try:
        return importlib.metadata.version(TOOLS[tool]["dist"])
    except importlib.metadata.PackageNotFoundError:
        return "source tree" if tool == "deteval" else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="coco",
                    help="small, coco, coco-sparse, o365 (bbox), small-segm, coco-segm, coco-segm-sparse (masks), "
                         "small-kp, person-kp, person-kp-dense (keypoints), small-lvis, medium-lvis, lvis (LVIS: "
                         "other tools, bench_lvis.py), dota-obb (oriented boxes: deteval, hotcoco); see make_data.py")
    ap.add_argument("--data", type=Path,
                    help="dir with gt.json and dets.json (default benchmarks/data/<preset>)")
    ap.add_argument("--iou-type", choices=IOU_TYPES,
                    help="what every tool evaluates (default: the preset's: segm for *-segm, "
                         "keypoints for *-kp, obb for dota-obb, else bbox)")
    ap.add_argument("--runs", type=int, default=3, help="runs per tool; medians are reported")
    ap.add_argument("--tool-runs", default="",
                    help="per-tool run counts overriding --runs, e.g. pycocotools=1 (the slow "
                         "reference on segm); a tool's runs are still interleaved with the others'")
    ap.add_argument("--tools", help=f"comma-separated subset of {','.join(ALL_TOOLS)} "
                                    "(default: all installed; o365 leaves out the slow ones)")
    ap.add_argument("--json", type=Path,
                    help="write results here (default benchmarks/results/<preset>.json)")
    ap.add_argument("--cold", action="store_true",
                    help="also time deteval's CLI with an empty numba cache vs a warm one")
    ap.add_argument("--profile", action="store_true",
                    help="also print deteval's per-stage split (import, read, parse, kernel import, group, "
                         "IoU, match, accumulate, summarise) beside the others' totals (profile_deteval.py)")
    ap.add_argument("--threads", type=int, default=2,
                    help="thread count for tools that take one (numba, rayon, OpenMP)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per subprocess")
    a = ap.parse_args(argv)

    sys.path.insert(0, str(HERE))
    import make_data

    preset = make_data.PRESETS.get(a.preset)
    iou = a.iou_type or (preset.iou_type if preset is not None else "obb" if a.preset == "dota-obb" else "bbox")
    data = a.data or HERE / "data" / a.preset
    gt, dt = data / "gt.json", data / "dets.json"
    if not (gt.exists() and dt.exists()) and a.preset == "dota-obb":
        from make_dota import make_dota_obb

        make_dota_obb(data)
    if not (gt.exists() and dt.exists()):
        if preset is None:
            ap.error(f"no {gt} / {dt}, and {a.preset!r} is not a preset of make_data.py")
        make_data.make(a.preset, data)
    references, default_runs = ("pycocotools", "deteval"), {}
    if isinstance(preset, make_data.make_lvis.LvisPreset):  # LVIS: lvis-api and the tools' LVIS modes
        import bench_lvis

        TOOLS.clear()
        TOOLS.update(bench_lvis.TOOLS)  # measure(), missing() and version() read TOOLS
        references, default_runs = bench_lvis.REFERENCES, bench_lvis.TOOL_RUNS
    all_tools = list(TOOLS)

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    n = str(a.threads)
    env.update(RAYON_NUM_THREADS=n, NUMBA_NUM_THREADS=n, OMP_NUM_THREADS=n, VERNIER_NUM_THREADS=n)

    if a.tools:
        wanted = [t.strip() for t in a.tools.split(",") if t.strip()]
        unknown = [t for t in wanted if t not in TOOLS]
        if unknown:
            ap.error(f"unknown tools {unknown}; choose from {all_tools}")
    else:
        wanted = [t for t in all_tools if t not in DEFAULT_EXCLUDE.get(a.preset, ())]
    tools, skipped = [], {}
    for t in wanted:
        why = missing(t, env)
        if why is None and iou in TOOLS[t]["unsupported"]:
            why = f"no iou_type {iou!r}: {TOOLS[t]['unsupported'][iou]}"
        if why is None:
            tools.append(t)
        else:
            skipped[t] = why
            print(f"skipping {t}: {why}", file=sys.stderr)
    if not tools:
        ap.error("no tool to run")
    n_runs = {t: default_runs.get(t, a.runs) for t in tools}
    for item in filter(None, (x.strip() for x in a.tool_runs.split(","))):
        name, _, count = item.partition("=")
        if name not in TOOLS or not count.isdigit() or int(count) < 1:
            ap.error(f"--tool-runs wants TOOL=N with N >= 1 and TOOL one of {all_tools}, got {item!r}")
        if name in n_runs:
            n_runs[name] = int(count)

    if any(TOOLS[t]["module"] == "deteval" for t in tools):
        # deteval runs from this source tree: its bytecode compiled once, as `pip install` compiles every other
        # tool's (with PYTHONDONTWRITEBYTECODE set each child would compile ~0.15 s of deteval's sources anew)
        import compileall

        compileall.compile_dir(str(REPO / "deteval"), quiet=1)
    if "deteval" in tools:  # fill the numba cache once, so runs measure the warm path
        measure("deteval", gt, dt, iou, env, a.timeout)

    runs = {t: [] for t in tools}
    for r in range(max(n_runs.values())):
        for t in tools:  # interleaved, so drift hits every tool alike
            if r >= n_runs[t]:
                continue
            rec = measure(t, gt, dt, iou, env, a.timeout, profile=a.profile)
            runs[t].append(rec)
            if "error" in rec:
                what = rec["error"].strip().splitlines()[-1]
            else:
                what = (f"total {rec['times']['total']:.3f} s, wall {rec['wall']:.3f} s, "
                        f"rss {rec['rss_mb']:.0f} MB")
            print(f"run {r + 1}/{n_runs[t]} {t}: {what}", file=sys.stderr, flush=True)

    summary = {t: summarise_runs(runs[t]) for t in tools}
    ref = next((t for t in references if t in tools
                and "error" not in summary[t]), None)
    for t in tools:
        s = summary[t]
        if "error" in s:
            continue
        s["reference"] = ref
        s["match"] = None if ref is None else (s["stats"] == summary[ref]["stats"] and s["stable"])
        s["match_mark"] = "?" if s["match"] is None else ("✓" if s["match"] else "✗")

    with open(gt, "rb") as f:
        g = json.load(f)
    with open(dt, "rb") as f:
        n_dets = len(json.load(f))
    meta = {
        "preset": a.preset, "iou_type": iou, "data": str(data), "runs": n_runs,
        "threads": a.threads, "load_average": os.getloadavg(),
        "images": len(g["images"]), "gt": len(g["annotations"]), "detections": n_dets,
        "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "reference": ref,
        "versions": {t: version(t) for t in tools}, "not_run": skipped,
    }
    del g
    best = fastest(summary, tools)
    result = {"meta": meta, "tools": summary, "raw": runs,
              "fastest_other": {c: {"tool": t, "value": v} for c, (t, v) in best.items()}}

    counts = sorted(set(n_runs.values()))
    how_many = (f"{counts[0]}" if len(counts) == 1
                else ", ".join(f"{t} {n_runs[t]}" for t in tools))
    print(f"\n## {a.preset}, {iou}: {meta['images']} images, {meta['gt']} GT, {n_dets} detections; "
          f"median of {how_many} run(s), {a.threads} threads; stats checked against {ref}\n")
    print("versions: " + ", ".join(f"{t} {v}" for t, v in meta["versions"].items()))
    if "deteval" in tools and runs["deteval"] and "error" not in summary["deteval"]:
        # a stale or missing deteval/_aot (deteval/_runtime/aot.py) is numba's path: correct, and slower
        took = {bool(rec.get("numba")) for rec in runs["deteval"]}
        print("deteval: " + ("imported numba" if took == {True} else "compiled modules only (numba not imported)"
                             if took == {False} else "imported numba in some runs"))
    for t, why in skipped.items():
        print(f"not run: {t}: {why}")
    print("load average at the end (1, 5, 15 min): "
          + ", ".join(f"{x:.2f}" for x in meta["load_average"]) + f" on {os.cpu_count()} CPUs\n")
    print(tables(summary, tools))
    if a.profile:
        pt = profile_table(summary, tools)
        print("\n" + (pt or "--profile: no per-stage split (deteval not run, or its protocol has no stage clock)"))
    for t in tools:
        for e in summary[t].get("errors", []) or [summary[t].get("error")]:
            if e:
                print(f"\n{t} error: {e.strip().splitlines()[-1]}")
        if summary[t].get("match") is False:
            print(f"\n{t} stats differ from {ref}:\n  {summary[t]['stats']}\n"
                  f"  {summary[ref]['stats']}")

    if a.cold:
        if "deteval" in tools:
            cw = cold_vs_warm(gt, dt, iou, env, a.runs, a.timeout)
            result["deteval_cli_cold_vs_warm"] = cw
            print("\n" + _md(["deteval CLI", "wall s", "peak RSS MB"],
                             [[k, _fmt(v.get("wall")), _fmt(v.get("rss_mb"), "mb")]
                              if "error" not in v else [k, "error", "error"]
                              for k, v in cw.items()]))
        else:
            print("--cold needs deteval in --tools", file=sys.stderr)

    default_iou = preset.iou_type if preset is not None else "obb" if a.preset == "dota-obb" else "bbox"
    name = a.preset if iou == default_iou else f"{a.preset}-{iou}"
    out = a.json or HERE / "results" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()

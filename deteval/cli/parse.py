"""The ``deteval`` command line, parsed: common flags, and every protocol's flags built from its ``options``.

Protocols declare their options as data (:class:`~deteval.protocols.base.Option`);
this module turns the declarations into argparse arguments, one argument group per
protocol family, all shown in ``--help``. A flag declared by several protocols
(``--iou-thrs``) is registered once; what it took is kept as text and converted by
the *chosen* protocol's declaration, so each protocol keeps its own reading of it.

Every usage error becomes an :class:`~deteval.errors.InputError`.
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

from deteval import __version__, protocols
from deteval.errors import InputError
from deteval.protocols.base import Option, split_list

# what a list flag's value looks like (numbers, ranges such as 0.5:0.95): anything else after
# a space-separated list was most likely PREDS or GT, taken by the flag (see _take_back_positionals)
_VALUE_LIKE = re.compile(r"[-+0-9.eE:,]+")
_NARGS = {"value": None, "list": "+", "repeat": None, "switch": 0}
CURVE_POINTS = 500  # --curves: points per curve and class, unless --curves-raw


def sample_pair() -> tuple[str, str]:
    """The bundled 100-image COCO sample: ``(results, ground truth)`` paths."""
    from importlib import resources

    root = resources.files("deteval") / "sample_data"
    return (
        str(root / "instances_val2014_fakebbox100_results.json"),
        str(root / "instances_val2014_100.json"),
    )


@dataclass(frozen=True)
class Given:
    """One protocol flag as it appeared on the command line."""

    key: str  # the flag the argument is registered under (the declarations' ``flag``)
    spelling: str  # the flag as typed: the key or one of its aliases
    kind: str  # the declaration's kind
    values: tuple[str, ...]  # the texts it took (none for a switch)


@dataclass(frozen=True)
class Invocation:
    """A parsed command line: argparse's namespace plus what the CLI derived from it."""

    args: argparse.Namespace
    options: dict[str, Any]  # the chosen protocol's keyword options the user gave, converted
    confusion_thrs: tuple[float, float] | None  # (IoU, score) of --confusion, when given


class Parser(argparse.ArgumentParser):
    """argparse, with its usage errors raised as :class:`InputError` (one line, exit 2, like the others).

    Abbreviations are off (``--per-clas`` is no flag: a typo must not pick a flag); an unknown flag is
    named with the nearest known one.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, allow_abbrev=False, **kwargs)

    def error(self, message: str) -> NoReturn:
        match = re.match(r"argument ([^/:\s]+)[^:]*: (.*)", message, re.S)
        if match:  # "argument --beta: ..." -> "--beta: ..."
            raise InputError(match[1], None, match[2])
        raise InputError("command line", None, message)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.unknown(extras, parsed)
        return parsed

    def unknown(self, extras: Sequence[str], parsed: argparse.Namespace) -> NoReturn:
        """The first unknown flag with the nearest known one, else the words left over."""
        for word in extras:
            if word.startswith("-") and len(word) > 1 and not _VALUE_LIKE.fullmatch(word):
                flag = word.split("=", 1)[0]
                raise InputError(flag, None, "unknown flag" + _nearest(flag, self._option_string_actions, self.prog))
        positionals = [a.dest.upper() for a in self._actions if not a.option_strings and a.nargs != 0]
        got = ", ".join(f"{name} {getattr(parsed, name.lower(), None)!r}" for name in positionals)
        raise InputError("command line", None, f"unexpected argument {extras[0]!r} (after {got})")


def _nearest(flag: str, known: Any, prog: str) -> str:
    """``; did you mean --json?`` for ``--jsn``, or where the flags are listed when none is near."""
    near = difflib.get_close_matches(flag, [k for k in known if k.startswith("--")], n=1, cutoff=0.6)
    return f"; did you mean {near[0]}?" if near else f" ({prog} --help lists the flags)"


class _ProtocolFlag(argparse.Action):
    """Records each occurrence of a protocol flag as a :class:`Given`; conversion waits for the protocol."""

    def __init__(self, option_strings: list[str], dest: str, *, key: str, kind: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.key, self.kind = key, kind

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        texts = () if values is None else (values,) if isinstance(values, str) else tuple(values)
        given = Given(self.key, option_string or self.key, self.kind, texts)
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), given])


def _positive_float(text: str) -> float:
    v = _finite_float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return v


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return v


def interval_level(text: str) -> float:
    v = _finite_float(text)
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {text!r}")
    return v


def _finite_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return v


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("preds", nargs="?", help="detections (COCO results JSON, or a protocol's own format)")
    p.add_argument("gt", nargs="?", help="ground truth (COCO JSON, or a protocol's own format)")
    p.add_argument("--version", action="version", version=f"deteval {__version__}")
    p.add_argument(
        "--protocol", default="coco", choices=protocols.available(), help="evaluation protocol (default: coco)"
    )
    p.add_argument(
        "--iou-type",
        help="what is compared: bbox, segm, keypoints, obb (oriented boxes), boundary (boundary IoU of masks, "
        "coco and lvis); default bbox, or the protocol's only one (crowdpose: keypoints)",
    )
    p.add_argument(
        "--config",
        metavar="FILE.toml",
        help="a preset of the protocol's parameters (the keys of its options, e.g. iou_thrs = [0.5, 0.75], "
        "max_dets = [1, 10, 300]); flags override it",
    )
    p.add_argument(
        "--fixed", action="store_true", help="correct the reference tool's quirks instead of reproducing them"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse input the reference tool accepts and deteval warns about (COCO: negative or non-finite "
        "boxes, repeated image or annotation ids, a missing iscrowd, polygons on images of height 0, box-only "
        "results for masks, LVIS fields); ignored by voc07/voc10",
    )
    p.add_argument("--json", metavar="PATH", help="write stats and per-class results as JSON (- for stdout: see below)")
    p.add_argument(
        "--arrays",
        metavar="PATH.npz",
        help="write the raw arrays (precision, recall, scores ...) as compressed .npz, to exactly PATH",
    )
    p.add_argument(
        "--arrays-uncompressed", action="store_true", help="write --arrays uncompressed (np.savez: larger, faster)"
    )
    p.add_argument(
        "--per-class",
        action="store_true",
        help="print a per-class table after the summary: the categories with ground truth or detections",
    )
    p.add_argument(
        "--all-classes", action="store_true", help="with --per-class: every category, the empty ones too"
    )
    # per-class exports, curves and plots (deteval.analysis.report, deteval.analysis.curves, deteval.analysis.plots)
    p.add_argument(
        "--sort-by", metavar="COLUMN", help="sort per-class rows (--per-class, --csv, --markdown) by COLUMN, e.g. AP"
    )
    p.add_argument("--csv", metavar="PATH", help="write the per-class results as CSV (- for stdout)")
    p.add_argument("--markdown", metavar="PATH", help="write the per-class results as a Markdown table (- for stdout)")
    p.add_argument(
        "--curves",
        metavar="PATH.json",
        help="write PR curves at IoU .50 as JSON: COCO's 101-point curves, the raw step curves, "
        f"P/R/F-beta vs score (at most {CURVE_POINTS:,} points each per class, first, last and best-F "
        "among them) and the operating points; widerface and kitti: their own fixed-threshold curves",
    )
    p.add_argument(
        "--curves-raw",
        action="store_true",
        help="with --curves: every point of the raw and score curves (one per detection: large files)",
    )
    p.add_argument(
        "--matches",
        metavar="PATH.json|PATH.csv",
        help="write every evaluated detection's match per IoU threshold (area all) and each ground truth left "
        "unmatched, as pycocotools' evalImgs holds them (coco); the format from the extension",
    )
    p.add_argument(
        "--per-image",
        metavar="PATH.json|PATH.csv",
        help="write one row per ground-truth image: num_gt, num_dt, tp, fp, fn at IoU .50 (coco); the format "
        "from the extension",
    )
    p.add_argument(
        "--plot",
        metavar="DIR",
        help="write plots (needs matplotlib): pr_curves.png, per_class_ap.png (COCO), pr_per_class.png, "
        "f1_confidence.png, confusion_matrix.png (with --confusion); kitti: pr_curves_<class>.png",
    )
    p.add_argument(
        "--report",
        metavar="DIR",
        help="write DIR/report.html: one self-contained page (no network; charts inline) with the summary, the "
        "per-class table (sorted by a click), PR curves, TIDE and calibration when asked, and the worst images",
    )
    p.add_argument(
        "--beta", type=_positive_float, default=1.0, metavar="B", help="F-beta weight of recall (default: 1, F1)"
    )
    p.add_argument(
        "--at-iou",
        type=_positive_float,
        metavar="T",
        help="the IoU threshold of the curves, plots and operating points (one that was evaluated; default .50)",
    )
    p.add_argument(
        "--at-area", metavar="LABEL", help="the area range of the curves, plots and operating points (default: all)"
    )
    p.add_argument(
        "--score-thr",
        type=_finite_float,
        metavar="S",
        help="print precision, recall and F-beta per class, micro and macro, keeping detections with score >= S",
    )
    p.add_argument(
        "--confusion",
        nargs="?",
        const="0.5:0.25",
        metavar="IOU:SCORE",
        help="print a class-agnostic confusion matrix (boxes; default 0.5:0.25: IoU >= 0.5, score >= 0.25; "
        "over 20 classes present: a per-class summary and the top confusions); "
        "put it after PREDS GT or write --confusion=IOU:SCORE",
    )
    p.add_argument(
        "--tide",
        action="store_true",
        help="TIDE error breakdown (Cls, Loc, Both, Dupe, Bkg, Miss and their dAP), as tidecv 1.0.1 computes it "
        "(coco protocol; boxes, or masks with --iou-type segm); printed, and under 'tide' in --json",
    )
    p.add_argument(
        "--calibration",
        action="store_true",
        help="confidence calibration (ECE, MCE, per bin and class) as hotcoco 1.3.0's COCOeval.calibration() "
        "(checked for the coco protocol); printed, under 'calibration' in --json, reliability.png with --plot",
    )
    p.add_argument("--cal-bins", type=int, default=10, metavar="B", help="calibration bins over [0, 1] (default 10)")
    p.add_argument(
        "--cal-iou-thr",
        type=_finite_float,
        default=0.5,
        metavar="T",
        help="the IoU of a correct detection in --calibration: one of the evaluated thresholds (default .50)",
    )
    p.add_argument(
        "--lrp",
        action="store_true",
        help="optimal LRP (oLRP, its Loc/FP/FN components and each class's optimal score threshold) as vernier "
        "0.5.4 computes it, at IoU .50 (coco protocol); printed, and under 'lrp' in --json",
    )
    p.add_argument(
        "--bootstrap",
        type=positive_int,
        metavar="N",
        help="bootstrap percentile intervals of every stat from N resamples of the images (every protocol but "
        "lvis --fixed-ap; printed, and under 'bootstrap' in --json)",
    )
    p.add_argument("--seed", type=int, default=0, metavar="S", help="the bootstrap's seed (default 0)")
    p.add_argument(
        "--level", type=interval_level, default=0.95, metavar="L", help="the bootstrap intervals' level (default 0.95)"
    )
    p.add_argument(
        "--bootstrap-replicates", action="store_true", help="also write every replicate's stats into --json"
    )
    p.add_argument(
        "--slices",
        metavar="FILE",
        help='every stat per slice of the images: a JSON file {"name": [image ids], ...} (not lvis --fixed-ap)',
    )
    p.add_argument(
        "--slice-by", metavar="KEY", help="every stat per value of a field of the ground truth's image records"
    )
    p.add_argument(
        "--max-input-bytes",
        type=positive_int,
        metavar="N",
        help="the most bytes read from a stream (stdin, a pipe) or decompressed from a .gz input "
        "(default 2147483648, 2 GiB); regular files are read whatever their size",
    )
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.add_argument(
        "--sample", action="store_true", help="evaluate the bundled 100-image COCO sample (takes no PREDS GT)"
    )


# ---------------------------------------------------------------- protocol flags from declarations


def _declarations() -> dict[str, tuple[Option, ...]]:
    """Every registered protocol's options, by protocol name."""
    return {name: tuple(protocols.get(name).options) for name in protocols.available()}


def _owners(spelling: str, declared: dict[str, tuple[Option, ...]]) -> list[str]:
    """The protocols that declare ``spelling`` (a flag or an alias)."""
    return [name for name, opts in declared.items() if any(spelling in (o.flag, *o.aliases) for o in opts)]


def _help(option: Option) -> str:
    if option.choices and option.metavar:  # otherwise the metavar shows the choices
        return f"{option.help} (one of {', '.join(option.choices)})"
    return option.help


def _note(option: Option, where: str) -> str:
    """A group description's entry for a flag registered in another group."""
    spellings = ", ".join((option.flag, *option.aliases))
    return textwrap.fill(_help(option), 78, initial_indent="    ", subsequent_indent="    ").join(
        (f"{spellings} (listed under {where}):\n", "")
    )


def _metavar(option: Option) -> str | None:
    if option.metavar or not option.choices:
        return option.metavar
    return "{" + ",".join(option.choices) + "}"


def _add_protocol_groups(p: argparse.ArgumentParser, declared: dict[str, tuple[Option, ...]]) -> None:
    """One argument group per family of protocols with the same declarations (voc07 and voc10 share one).

    A flag declared by several families is shown where it first appears; the later groups'
    descriptions list it with their own help. An alias that the first declaration lacks is
    registered hidden (``--iou`` is VOC's, so coco's entry does not show it). The kind of a
    shared flag must agree everywhere (it decides how argparse reads the text).
    """
    families: list[tuple[tuple[Option, ...], list[str]]] = []  # a list: declarations need not be hashable
    for name, opts in declared.items():
        family = next((f for f in families if f[0] == opts), None)
        if family is None:
            families.append((opts, [name]))
        else:
            family[1].append(name)
    first: dict[str, tuple[Option, str]] = {}  # flag -> its first declaration and that group's title
    registered: set[str] = set()
    for opts, names in families:
        title = f"{', '.join(names)} options"
        notes = []
        for o in opts:
            if o.flag in first:
                if first[o.flag][0].kind != o.kind:
                    raise TypeError(f"{o.flag} is declared as {first[o.flag][0].kind!r} and {o.kind!r}")
                notes.append(_note(o, first[o.flag][1]))
        description = textwrap.fill("; ".join(dict.fromkeys(protocols.get(n).title for n in names)), 78)
        if notes:
            description += "\nalso takes\n" + "\n".join(notes)
        group = p.add_argument_group(title, description.replace("%", "%%"))
        for o in opts:
            spellings = [s for s in (o.flag, *o.aliases) if s not in registered]
            registered.update(spellings)
            if o.flag in first:  # shown in an earlier group: only its new aliases, hidden
                help_text = argparse.SUPPRESS
            else:
                first[o.flag] = (o, title)
                others = [n for n in _owners(o.flag, declared) if n not in names]
                help_text = (_help(o) + (f" [also {', '.join(others)}]" if others else "")).replace("%", "%%")
            if not spellings:
                continue
            group.add_argument(
                *spellings,
                action=_ProtocolFlag,
                key=o.flag,
                kind=o.kind,
                nargs=_NARGS[o.kind],
                dest="protocol_flags",
                metavar=_metavar(o) if o.kind != "switch" else None,
                help=help_text,
            )


def build_parser() -> argparse.ArgumentParser:
    """The full parser: common flags, then one group per protocol family."""
    p = Parser(
        prog="deteval",
        usage="deteval [options] PREDS GT\n       deteval compare PREDS_A PREDS_B GT [options]",
        description="Evaluate object detections against ground truth (COCO, bit-identical to pycocotools).\n\n"
        "commands:\n"
        "  deteval [options] PREDS GT              evaluate PREDS against GT (this page)\n"
        "  deteval compare PREDS_A PREDS_B GT ...  compare two models: paired bootstrap of every stat\n"
        "                                          (deteval compare --help)",
        epilog="example: deteval --protocol coco results.json instances_val2017.json\n\n"
        "Output files: their directories must exist; each file is written to a temporary file and renamed\n"
        "into place once every output is written, so a failed run changes none. --json, --csv or\n"
        "--markdown - writes that output to stdout, and the summary and tables go to stderr.\n"
        "Exit status: 0 done; 2 bad input or usage; 130 interrupted (Ctrl-C); 141 stdout closed early\n"
        "(e.g. | head), with the files already written.",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # keeps the groups' line breaks
    )
    _add_common(p)
    _add_protocol_groups(p, _declarations())
    return p


# ---------------------------------------------------------------- after argparse


def protocol_options(protocol: str, given: Sequence[Given]) -> dict[str, Any]:
    """The keyword options of ``protocol`` from its flags as given; a flag it does not declare is an error.

    "list" flags collect every occurrence in order, "repeat" flags one value per occurrence,
    "value" flags keep the last; options not given are left out (the preset supplies them).
    """
    declared = _declarations()
    by_spelling = {s: o for o in declared[protocol] for s in (o.flag, *o.aliases)}
    collected: dict[str, tuple[Option, str, list[str]]] = {}
    for g in given:
        option = by_spelling.get(g.spelling)
        if option is None:
            owners = ", ".join(_owners(g.spelling, declared))
            raise InputError(g.spelling, None, f"belongs to protocol {owners}, not {protocol}")
        _, _, texts = collected.get(option.name, (option, g.spelling, []))
        texts = [g.values[0]] if option.kind == "value" else [*texts, *g.values]
        collected[option.name] = (option, g.spelling, texts)
    options: dict[str, Any] = {}
    for name, (option, spelling, texts) in collected.items():
        raw: Any = {"value": texts[-1] if texts else None, "list": split_list(texts), "repeat": texts}.get(option.kind)
        try:
            options[name] = option.parse(raw)
        except InputError:
            raise
        except (ValueError, TypeError) as exc:
            raise InputError(spelling, None, str(exc)) from None
    return options


def _take_back_positionals(args: argparse.Namespace) -> None:
    """PREDS/GT taken by a space-separated list flag (``--iou 0.5 DETS GT``) go back to their places.

    argparse lets ``--max-dets 1 10 300`` take every word up to the next flag; when PREDS or GT
    is then missing and the last such flag ended with words that are no list values, those words
    were the files.
    """
    slots = [s for s in ("preds", "gt") if getattr(args, s) is None]
    given: list[Given] = args.protocol_flags or []
    if not slots or args.sample:
        return
    for i in range(len(given) - 1, -1, -1):
        g = given[i]
        tail = g.values[-len(slots) :]
        if g.kind == "list" and len(g.values) > len(slots) and not any(_VALUE_LIKE.fullmatch(v) for v in tail):
            given[i] = replace(g, values=g.values[: -len(slots)])
            for slot, value in zip(slots, tail):
                setattr(args, slot, value)
            return


def _confusion_thrs(args: argparse.Namespace) -> tuple[float, float] | None:
    if args.confusion is None:
        return None
    from deteval.analysis.confusion import parse_confusion_spec

    try:
        return parse_confusion_spec(args.confusion)
    except ValueError as exc:
        if args.preds is not None and args.gt is None and not re.fullmatch(r"[-+0-9.eE:]*", args.confusion):
            # `--confusion PREDS GT`: the flag's optional value took PREDS
            args.preds, args.gt = args.confusion, args.preds
            return (0.5, 0.25)
        raise InputError("--confusion", None, str(exc)) from None


def iou_type_of(protocol: str, given: str | None) -> str:
    """``--iou-type`` checked against the protocol's; not given, the protocol's default."""
    proto = protocols.get(protocol)
    if given is None:
        return proto.default_iou_type
    if given not in proto.iou_types:
        raise InputError("--iou-type", None, proto.iou_type_rule(given))
    return given


def parse_command_line(argv: Sequence[str]) -> Invocation:
    """Parse ``argv`` into an :class:`Invocation`; :class:`InputError` for any usage error."""
    args = build_parser().parse_args(list(argv))
    confusion_thrs = _confusion_thrs(args)
    if args.sample and (args.preds is not None or args.gt is not None):
        raise InputError("command line", None, "--sample takes no PREDS GT (it evaluates the bundled sample)")
    _take_back_positionals(args)
    if args.sample:
        args.preds, args.gt = sample_pair()
    if args.preds is None or args.gt is None:
        rule = "PREDS and GT are required (or --sample)"
        for flag in ("plot", "report"):
            value = getattr(args, flag)
            if value is not None and args.preds is not None and Path(value).is_file():
                rule += f"; --{flag} takes a folder (--{flag} DIR) and took the file {value!r}"
        raise InputError("command line", None, rule)
    args.iou_type = iou_type_of(args.protocol, args.iou_type)
    options = protocol_options(args.protocol, args.protocol_flags or [])
    return Invocation(args, options, confusion_thrs)

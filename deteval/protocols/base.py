"""What a protocol is: parameters from a preset, load, match, reduce, summarise; its CLI options as data.

A protocol is one object (a :class:`Protocol` subclass instance) registered by
name in :mod:`deteval.protocols`. Its evaluation is a fixed sequence::

    params  = protocol.params(iou_type, compat=..., preset=..., strict=..., **options)  # frozen dataclass
    preds, gt = protocol.load(preds, gt, params)                   # through deteval.io
    matches = protocol.match(preds, gt, params)                    # geometry + matching kernels
    result  = protocol.reduce(matches, gt, params)                 # ranking/accumulation + AP
    result.summary_lines = protocol.summarize(result, params)

The command line builds its parser from :attr:`Protocol.options` (no argparse
here), so adding a protocol is one module plus its preset in ``configs/``.

Beyond evaluation, a protocol provides capabilities, each asked of the object (never of its name):

- streaming (:meth:`Protocol.streaming` and the ``stream_*`` methods, data in :mod:`.streaming`): the
  training-loop Evaluator and Dask;
- replay (:meth:`Protocol.replay`, :mod:`.replay`): bootstrap, compare and slices;
- analyses of its inputs (:attr:`Protocol.analyses`, :meth:`Protocol.supports`): the CLI's ``--lrp``, ``--tide``.

A protocol without one refuses it with :meth:`Protocol.unsupported`: one InputError naming both.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from deteval.errors import InputError
from deteval.protocols.replay import REPLAY_CAPABILITY, Replay
from deteval.protocols.streaming import STREAMING, StreamPart, StreamRows, StreamSpec
from deteval.result import EvalResult
from deteval.types import Detections, GroundTruth, IdTable


@dataclass(frozen=True)
class Option:
    """A protocol option: a keyword of :meth:`Protocol.params` and the CLI flag that sets it.

    ``kind`` says how the flag takes its text:

    - ``"value"``: one value (``--iou-test ge``);
    - ``"list"``: values separated by commas or spaces, the flag repeatable, all collected
      in order (``--max-dets 1,10,300``);
    - ``"repeat"``: one value per occurrence, collected in order (``--area-range small:0:1024``);
    - ``"switch"``: no value; present means ``name=value`` (``--no-cats`` is ``use_cats=False``).

    ``choices`` (checked before ``convert``) apply to each value of a list or repeated option.
    ``convert`` turns the collected text (a string for ``"value"``, a list of strings for
    ``"list"`` and ``"repeat"``) into the keyword's value; it raises ``ValueError`` with a
    message saying what is wrong, which the CLI reports naming the flag.
    """

    name: str
    flag: str
    help: str
    kind: Literal["value", "list", "repeat", "switch"] = "value"
    convert: Callable[[Any], Any] | None = None
    value: Any = True  # the keyword's value when a switch is given
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    aliases: tuple[str, ...] = ()  # older flags kept working for scripts

    def parse(self, raw: Any) -> Any:
        """The keyword's value from the CLI's collected text (``raw``), or ``ValueError``."""
        if self.kind == "switch":
            return self.value
        if self.choices is not None:  # each item of a list or repeated option is one choice
            items = [raw] if self.kind == "value" else (split_list(raw) if self.kind == "list" else raw)
            bad = [v for v in items if v not in self.choices]
            if bad:
                raise ValueError(f"choose from {', '.join(self.choices)}, not {', '.join(map(repr, bad))}")
        return raw if self.convert is None else self.convert(raw)


def or_list(items: Sequence[str]) -> str:
    """``a, b or c``: choices as text."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def split_list(values: Sequence[str]) -> list[str]:
    """A list option's text, flattened: ``["1,10", "300"]`` -> ``["1", "10", "300"]`` (empty items dropped)."""
    return [part for v in values for part in v.split(",") if part.strip()]


class Protocol(ABC):
    """One evaluation protocol. Subclasses set the class attributes and implement the stages.

    ``preset_name`` names its preset file in ``configs/``; :meth:`params` gives a frozen parameter dataclass
    and :meth:`reduce` an :class:`~deteval.result.EvalResult`.
    """

    name: str
    title: ClassVar[str]
    iou_types: ClassVar[tuple[str, ...]]
    options: ClassVar[tuple[Option, ...]]
    preset_name: ClassVar[str]

    # option keywords renamed since, old -> new: still accepted, with a DeprecationWarning
    renamed_options: ClassVar[dict[str, str]] = {}
    # the analyses of the loaded inputs or matches the protocol defines (the CLI's --lrp, --tide), by name,
    # with the iou types each is defined for
    analyses: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    @property
    def default_iou_type(self) -> str:
        """The iou type evaluated when none is named: ``bbox`` where the protocol has it, else its only one."""
        return "bbox" if "bbox" in self.iou_types else self.iou_types[0]

    def params(
        self,
        iou_type: str | None = None,
        *,
        compat: bool = True,
        preset: Mapping[str, Any] | None = None,
        strict: bool = False,
        **options: Any,
    ) -> Any:
        """The parameters: the built-in preset, then ``preset`` (a user's, e.g. ``--config``), then ``options``.

        ``strict`` turns what ``compat`` accepts with a warning, as the reference tool does, into an
        :class:`InputError` at :meth:`load` (COCO: a repeated image id, a negative box ...); a protocol with no
        such input ignores it.
        """
        iou_type = self.default_iou_type if iou_type is None else iou_type
        self.check_iou_type(iou_type)
        for old, new in self.renamed_options.items():
            if old in options:
                warnings.warn(f"{old}= is now {new}=", DeprecationWarning, stacklevel=3)
                options[new] = options.pop(old)
        self.check_options(options)
        return self.make_params(iou_type, compat, preset, strict, options)

    @abstractmethod
    def make_params(
        self, iou_type: str, compat: bool, preset: Mapping[str, Any] | None, strict: bool, options: dict[str, Any]
    ) -> Any:
        """:meth:`params` once the iou type and the option names are checked: build and check the values."""

    @abstractmethod
    def load(self, preds: Any, gt: Any, params: Any) -> tuple[Detections, GroundTruth]:
        """Containers from paths, loaded objects or containers (containers pass through)."""

    @abstractmethod
    def match(self, preds: Detections, gt: GroundTruth, params: Any) -> Any:
        """Every detection's outcome at every threshold: the flat arrays :meth:`reduce` needs."""

    @abstractmethod
    def reduce(self, matches: Any, gt: GroundTruth, params: Any) -> EvalResult:
        """Rank, accumulate and reduce matches to the result (stats, per-class rows, arrays)."""

    @abstractmethod
    def summarize(self, result: EvalResult, params: Any) -> list[str]:
        """The printed summary, one string per line."""

    def check_iou_type(self, iou_type: str) -> None:
        if iou_type not in self.iou_types:
            raise InputError("iou_type", None, self.iou_type_rule(iou_type))

    def iou_type_rule(self, iou_type: str) -> str:
        """What is wrong with ``iou_type``, the choices as text (the CLI prefixes ``--iou-type``)."""
        return f"protocol {self.name!r} evaluates {or_list(self.iou_types)}, not {iou_type!r}"

    def check_options(self, options: Mapping[str, Any]) -> None:
        known = [o.name for o in self.options]
        for name in options:
            if name not in known:
                rule = f"not an option of protocol {self.name!r}; its options are {', '.join(known)}"
                raise InputError(name, None, rule)

    def keeping_tables(self, params: Any, matches: bool = False, per_image: bool = False) -> Any:
        """``params`` whose evaluation also keeps every detection's match (``result.matches``) and the per-image
        counts (``result.per_image``); an error where the protocol keeps neither."""
        raise self.unsupported("per-detection matches and per-image tables")

    def unsupported(self, capability: str) -> InputError:
        """The error for a capability this protocol does not provide (raised by the caller)."""
        return InputError("protocol", None, f"protocol {self.name!r} does not support {capability}")

    # ---- streaming: the Evaluator (deteval.evaluator) and Dask (deteval.evaluator.dask); see StreamSpec

    stream_spec: ClassVar[StreamSpec | None] = None  # None: no streaming evaluation

    def streaming(self) -> StreamSpec:
        """What this protocol's streaming evaluation reads from a batch; an error where it has none."""
        if self.stream_spec is None:
            raise self.unsupported(STREAMING)
        return self.stream_spec

    def stream_params(self, iou_type: str, compat: bool, options: dict[str, Any]) -> Any:
        """The parameters of a streaming evaluation from the Evaluator's keywords (``options``: those given)."""
        raise self.unsupported(STREAMING)

    def stream_config(self, params: Any) -> tuple:
        """``(name, value)`` pairs that states must share to merge (with the protocol's name and the categories)."""
        values = {"iou_type": params.iou_type, **params.to_dict()}
        return tuple((k, repr(v)) for k, v in values.items() if k != "protocol")

    def stream_shape(self, params: Any) -> tuple[int, int, int, int]:
        """The widths of a :class:`StreamPart`: area ranges A, thresholds T, count columns C, image values F."""
        raise self.unsupported(STREAMING)

    def stream_outcome_columns(self, config: tuple) -> int | None:
        """How many leading columns of a state's ``det_state`` (of this :meth:`stream_config`) hold outcomes
        (0 FP, 1 TP, 2 ignored), the rest being the protocol's own bytes; None: every column."""
        return None

    def stream_match(self, preds: Detections, gt: GroundTruth, params: Any, extra: Mapping[str, Any]) -> StreamPart:
        """Match one shard (a batch, a Dask partition) whose images appear in no other shard.

        ``extra`` holds what a batch carried beyond the containers, as :class:`StreamSpec` asked
        (``"federated"``: the LVIS lists; each of ``image_keys``: float64 (I,), per image); it is empty for a
        ground truth loaded by :meth:`load` (deteval.evaluator.dask), which carries the same in its container.
        """
        raise self.unsupported(STREAMING)

    def stream_result(self, rows: StreamRows, categories: IdTable, params: Any, extra: Mapping[str, Any]) -> EvalResult:
        """The result of every shard's rows, merged: :meth:`evaluate`'s (see the protocol for its row order)."""
        raise self.unsupported(STREAMING)

    def miss_rate_curves(self, result: EvalResult, max_points: int | None = None) -> dict[str, Any] | None:
        """Miss rate against false positives per image (the pedestrian protocols' curves, what ``--curves``
        writes and ``--plot`` draws for them); None where the protocol has none."""
        return None

    def supports(self, analysis: str, iou_type: str) -> bool:
        """Whether ``analysis`` (a key of :attr:`analyses`) is defined for this protocol and ``iou_type``."""
        return iou_type in self.analyses.get(analysis, ())

    def replay(self, result: EvalResult) -> Replay:
        """What bootstrap, compare and slices re-rank of ``result`` (:class:`Replay`); InputError where the
        protocol or the result has none."""
        raise self.unsupported(REPLAY_CAPABILITY)

    def evaluate(
        self,
        preds: Any,
        gt: Any,
        *,
        iou_type: str | None = None,
        compat: bool = True,
        preset: Mapping[str, Any] | None = None,
        strict: bool = False,
        **options: Any,
    ) -> EvalResult:
        """Load, match and reduce: the whole evaluation."""
        params = self.params(iou_type, compat=compat, preset=preset, strict=strict, **options)
        preds, gt = self.load(preds, gt, params)
        return self.evaluate_loaded(preds, gt, params)

    def evaluate_loaded(self, preds: Detections, gt: GroundTruth, params: Any) -> EvalResult:
        """:meth:`evaluate` on containers already loaded by :meth:`load`."""
        result = self.reduce(self.match(preds, gt, params), gt, params)
        result.summary_lines = self.summarize(result, params)
        return result

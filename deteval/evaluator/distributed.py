"""Gathering evaluator states (:class:`~deteval.evaluator.state.EvaluatorState`) over ``torch.distributed``.

Every rank sends its own state (flat NumPy arrays, pickled into one uint8 tensor) to every
other rank with two ``all_gather`` calls (sizes, then the padded bytes), and merges all of
them. Every rank ends up with the whole dataset and computes the same numbers; the order of
the ranks never changes them (accumulation sorts rows by a key unique per row).

Torch is imported only when :func:`sync` is called. This module works on states; it never
imports the Evaluator class (which imports it for :meth:`~deteval.evaluator.Evaluator.sync`):
:func:`sync` takes anything with ``state()`` and ``adopt_state()``.
"""

from __future__ import annotations

import pickle
from typing import Any, Protocol, TypeVar

from deteval.evaluator.state import EvaluatorState, merge_states

__all__ = ["StateHolder", "all_gather_states", "sync"]


class StateHolder(Protocol):
    """What :func:`sync` needs of an evaluator (:class:`deteval.evaluator.Evaluator` is one)."""

    def state(self) -> EvaluatorState: ...

    def adopt_state(self, state: EvaluatorState) -> None: ...


_Holder = TypeVar("_Holder", bound=StateHolder)


def _device_for(dist: Any, group: Any) -> Any:
    import torch

    backend = str(dist.get_backend(group)).lower()
    if "nccl" in backend:
        # NCCL only moves CUDA tensors; use the device this rank set with torch.cuda.set_device
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_gather_states(state: EvaluatorState, group: Any = None, device: Any = None) -> list[EvaluatorState]:
    """Every rank's state, in rank order, on every rank of ``group``.

    ``device`` is where the bytes travel: by default the CPU for gloo and the current CUDA
    device for NCCL.
    """
    import torch
    import torch.distributed as dist

    world = dist.get_world_size(group)
    if world == 1:
        return [state]
    device = _device_for(dist, group) if device is None else torch.device(device)
    payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    local = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(device)
    size = torch.tensor([local.numel()], dtype=torch.int64, device=device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    sizes_list = [int(s.item()) for s in sizes]
    longest = max(sizes_list)
    padded = torch.zeros(longest, dtype=torch.uint8, device=device)
    padded[: local.numel()] = local
    gathered = [torch.empty(longest, dtype=torch.uint8, device=device) for _ in range(world)]
    dist.all_gather(gathered, padded, group=group)
    return [pickle.loads(g[:n].cpu().numpy().tobytes()) for g, n in zip(gathered, sizes_list)]


def sync(evaluator: _Holder, group: Any = None, device: Any = None) -> _Holder:
    """Give ``evaluator`` the states of every rank of ``group`` (collective: call it on every rank).

    Each rank keeps its own state apart: a later :meth:`~deteval.evaluator.Evaluator.update`
    drops what was gathered, and calling ``sync()`` again gathers afresh, so nothing is
    counted twice. Without an initialised process group (one process) it does nothing.

    Raises
    ------
    InputError
        States of different parameters or categories on different ranks.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        evaluator.adopt_state(evaluator.state())
        return evaluator
    states = all_gather_states(evaluator.state(), group=group, device=device)
    evaluator.adopt_state(merge_states(states))
    return evaluator

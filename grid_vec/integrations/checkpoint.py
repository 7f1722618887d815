"""The checkpoint file of a task network (:mod:`grid_vec.integrations.torch_policy`), and
its bounded reading.

A checkpoint (:func:`save_checkpoint`) holds tensors, numbers and strings only: it is read
with ``torch.load(weights_only=True)``, which unpickles no object, so a checkpoint from
elsewhere cannot run code (:func:`load_policy`). A checkpoint is untrusted input: what it
declares is checked before anything is allocated (the file's size capped, every declared
size in range, the weights' shapes those of the declared network, the statistics finite),
and the policy read is checked against the env's spaces before the first step
(:meth:`~grid_vec.integrations.torch_policy.TorchPolicy.check_spaces`).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from grid_vec._untrusted import quote
from grid_vec.env.graph import EDGE_FEATURES, GLOBAL_FEATURES, NODE_FEATURES
from grid_vec.integrations.action_heads import HEADS
from grid_vec.integrations.torch_policy import (
    NETWORKS,
    Architecture,
    CheckpointError,
    ObservationNorm,
    TorchPolicy,
    build_network,
)

# the format every checkpoint names (named when the networks held their checkpoints: the
# files written since carry it)
CHECKPOINT_FORMAT = "grid_vec.torch_policy/1"
MAX_CHECKPOINT_BYTES = 512 * 2**20
# The float32 weights the largest checkpoint read can hold: a declared network bigger than
# this cannot be in the file, and the memory a real build takes is bounded by it.
MAX_WEIGHTS = MAX_CHECKPOINT_BYTES // 4
# The observation form each network kind is trained on.
OBSERVATION_OF_KIND = {"mlp": "flat", "gnn": "graph"}


def save_checkpoint(
    path: str | os.PathLike,
    network: nn.Module,
    arch: Architecture,
    norm: ObservationNorm,
    *,
    task: str,
    observation: str,
) -> Path:
    """Write a trained network, its architecture and its observation statistics.

    Args:
        path: the file to write (its folder must exist).
        network: the trained network.
        arch: its architecture.
        norm: its observation statistics.
        task: the task it was trained on (``grid-vec eval`` refuses another one).
        observation: ``"flat"`` or ``"graph"``.

    Returns:
        The path written.
    """
    path = Path(path)
    torch.save(
        {
            "format": CHECKPOINT_FORMAT,
            "task": task,
            "observation": observation,
            "architecture": asdict(arch),
            "network": network.state_dict(),
            "norm": norm.state(),
        },
        path,
    )
    return path


@dataclass(frozen=True)
class LoadedPolicy:
    """A trained agent read back: the agent and what it was trained for (the architecture:
    None for an agent not of this module's networks)."""

    policy: Any
    task: str
    observation: str
    architecture: Architecture | None


def load_policy(path: str | os.PathLike, name: str = "ppo") -> LoadedPolicy:
    """Read a checkpoint of :func:`save_checkpoint` without unpickling any object
    (``torch.load(weights_only=True)``: tensors, numbers, strings, lists and dicts only).

    Args:
        path: the checkpoint file.
        name: the name the agent's scores carry.

    Returns:
        The agent and the task and observation form it was trained with; the agent checks
        itself against the env's spaces when the Runner binds it (:meth:`TorchPolicy.bind`).

    Raises:
        CheckpointError: the file is missing, too large, not a torch file, holds objects
            other than tensors and plain values, or is not a checkpoint of this format; its
            architecture declares a size out of range (checked before anything is built) or
            an observation form not its network's; its weights are not exactly the tensors
            of that architecture (keys and shapes, checked before the network is built for
            real) or not finite; its observation statistics are not finite, with positive
            variances and a non-negative count, of the network's sizes (the message names the
            file and what is wrong).
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise CheckpointError(f"{path}: {exc.strerror}") from exc
    if size > MAX_CHECKPOINT_BYTES:
        raise CheckpointError(
            f"{path}: {size} bytes, over the {MAX_CHECKPOINT_BYTES} a checkpoint may have"
        )
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch's unpickler refuses objects: the reason, one line
        reason = _reason(exc)
        raise CheckpointError(
            f"{path}: not a grid_vec checkpoint torch can read without running code ({reason})"
        ) from exc
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{path}: not a checkpoint of {CHECKPOINT_FORMAT} (written by "
            "grid_vec.integrations.checkpoint.save_checkpoint, e.g. examples/ppo_task.py)"
        )
    try:
        arch = _declared_architecture(data.get("architecture"))
        task, observation = data.get("task"), data.get("observation")
        if not isinstance(task, str):
            raise ValueError("no task name")
        if observation != OBSERVATION_OF_KIND.get(arch.kind):
            raise ValueError(f"observation {quote(observation)} for a {arch.kind} network")
        network = _checked_network(arch, data.get("network"))
        norm = ObservationNorm.from_state(data.get("norm"), _norm_sizes(arch))
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
        reason = _reason(exc)
        raise CheckpointError(f"{path}: a damaged checkpoint ({reason})") from exc
    policy = TorchPolicy(network, norm, name, source=path)
    return LoadedPolicy(policy, task, observation, arch)


# The fields of an architecture a checkpoint declares, by the type its value must have (no
# conversion: a float hidden size or a string is a damaged file, not something to round).
_SIZE_FIELDS = ("n_actions", "hidden", "n_obs", "rounds", "n_discrete")
_FLOAT_FIELDS = ("noop_bias", "log_std_init", "deadband")


def _declared_architecture(raw: Any) -> Architecture:
    """The architecture a checkpoint declares, its values of the types :func:`asdict` wrote
    and every size in range (:class:`Architecture`), before anything is built.

    Raises:
        ValueError: what is not so.
    """
    if not isinstance(raw, dict):
        raise ValueError("no architecture")
    unknown = set(raw) - {f.name for f in fields(Architecture)}
    if unknown:
        raise ValueError(f"architecture: unknown fields {quote(sorted(map(str, unknown)))}")
    for name, value in raw.items():
        if name == "kind":
            ok = isinstance(value, str) and value in NETWORKS
        elif name == "head":  # the action head; absent from the checkpoints before it
            ok = isinstance(value, str) and (value in HEADS or not value)
        elif name in _SIZE_FIELDS:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif name in _FLOAT_FIELDS:
            ok = _is_number(value)
        else:  # action_low, action_high
            ok = isinstance(value, (tuple, list)) and all(map(_is_number, value))
        if not ok:
            raise ValueError(f"architecture: {name} is {quote(value)}")
    try:
        return Architecture(**raw)
    except (TypeError, ValueError) as exc:  # a size out of range, a required field missing
        raise ValueError(f"architecture: {_reason(exc)}") from exc


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _norm_sizes(arch: Architecture) -> dict[str, int]:
    """The feature count of each key of the observation statistics ``arch``'s network takes."""
    if arch.kind == "gnn":
        return {
            "nodes": len(NODE_FEATURES),
            "edges": len(EDGE_FEATURES),
            "globals": len(GLOBAL_FEATURES),
        }
    return {"flat": arch.n_obs}


def _checked_network(arch: Architecture, state: Any) -> nn.Module:
    """The network of ``arch`` holding ``state``'s weights, built for real only once they are
    checked against it: the same keys, each of the exact shape, contiguous (a tensor of zero
    strides may claim more elements than the file holds), floating and finite.

    Raises:
        ValueError: weights that are not so, or more than :data:`MAX_WEIGHTS` declared.
    """
    # the shapes of the declared network, from a build on the meta device: no memory, no
    # initialisation, and quick whatever the sizes (each is capped)
    with torch.device("meta"):
        skeleton = build_network(arch)
    expected = {key: tuple(t.shape) for key, t in skeleton.state_dict().items()}
    total = sum(math.prod(shape) for shape in expected.values())
    if total > MAX_WEIGHTS:
        raise ValueError(f"the architecture has {total} weights, over the {MAX_WEIGHTS} allowed")
    if not isinstance(state, dict):
        raise ValueError("no network weights")
    extra = [key for key in state if key not in expected]
    if extra:
        raise ValueError(f"weights the architecture has not: {quote(sorted(map(str, extra)))}")
    for key, shape in expected.items():
        if key not in state:
            raise ValueError(f"no weights {key} {shape}")
        tensor = state[key]
        if not isinstance(tensor, torch.Tensor) or tuple(tensor.shape) != shape:
            found = tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor)
            raise ValueError(f"weights {key} of shape {found}, the architecture's are {shape}")
        if not (
            tensor.is_floating_point() and tensor.layout == torch.strided and tensor.is_contiguous()
        ):
            raise ValueError(f"weights {key} are not a dense floating tensor")
        if not torch.isfinite(tensor).all():
            raise ValueError(f"weights {key} are not finite")
    # every parameter is overwritten by load_state_dict: no initialisation needed
    network = skeleton.to_empty(device="cpu")
    network.load_state_dict(state)
    return network


def _reason(exc: BaseException) -> str:
    """One line of an exception's message (torch's unpickler: the global it refused)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    refused = [line for line in lines if "Unsupported global" in line]
    line = refused[0] if refused else (lines[0] if lines else type(exc).__name__)
    return line.split("WeightsUnpickler error: ")[-1][:200]

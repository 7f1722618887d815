"""The action heads of the task networks (:mod:`grid_vec.integrations.torch_policy`): what
the actor's output means over each kind of action space, as one registry, :data:`HEADS`.

* ``"categorical"``: a ``Discrete`` space; the output is one logit per action, illegal
  actions masked out with the env's ``info["action_mask"]``;
* ``"gaussian"``: a 1-d ``Box``; the output is the mean of a diagonal Gaussian in unit scale
  (``u`` in ``[-1, 1]`` is the action ``centre + u * half-width``, clipped to the bounds; a
  ``u`` inside the architecture's ``deadband`` plays the env's 0: no new redispatch), its
  log standard deviations a learnt parameter;
* ``"moves"``: a combined space played as one categorical over its topology set and the
  expert's redispatch moves (each generator's ramp times ``± f``), one or the other per
  decision, as the expert acts;
* ``"hybrid"``: a task's ``combined`` space, ``Dict(topology=Discrete(n),
  continuous=Box(d))``; the output is the ``n`` (masked) logits of the topology part then
  the ``d`` means of the continuous part, one action both: the log-probability and the
  entropy of the joint action are the sums of the two parts' (independent given the
  observation).

A network's action is one tensor per decision: ``(k,)`` int64 indices (categorical), ``(k,
d)`` unit-scale floats (gaussian), ``(k, 1 + d)`` floats whose first column is the topology
index (hybrid), so that a rollout stores and batches every kind alike. Each head maps the
network's actions onto the env's (:meth:`ActionHead.env_actions`), reads an expert's
recorded actions back into the network's (:meth:`ActionHead.network_actions`, for
behaviour cloning) and says what differs between an architecture and an env's action space
(:meth:`ActionHead.mismatch`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import numpy as np
import torch
from gymnasium import spaces
from torch.distributions import Categorical, Normal


class Architecture(Protocol):
    """What a head reads of a network's architecture
    (:class:`grid_vec.integrations.torch_policy.Architecture`, which imports this module:
    the heads name its fields here instead of importing it back)."""

    head: str
    n_actions: int
    n_discrete: int
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    deadband: float
    move_fractions: tuple[float, ...]


__all__ = [
    "HEADS",
    "ActionHead",
    "DiagGaussian",
    "HybridDistribution",
    "action_masks",
    "head_of",
    "policy_and_value",
    "policy_distribution",
]

TOPOLOGY = "topology"  # the parts of a combined action (grid_vec.env.action_types)
CONTINUOUS = "continuous"
# the redispatch moves of the expert (ExpertAgent's default ramp_fractions): a moves policy's
EXPERT_FRACTIONS = (0.5, 1.0)
DO_NOTHING = 0  # a grid_vec Discrete space's do-nothing (the catalog's and every task set's first)


def action_masks(infos: dict[str, Any], n: int, n_actions: int) -> np.ndarray:
    """The ``(n, n_actions)`` action masks of a vector env's infos (all legal for a sub-env
    that gives none, and for every sub-env when the infos hold no ``action_mask``)."""
    mask = np.ones((n, n_actions), dtype=bool)
    if "action_mask" in infos:
        present = infos.get("_action_mask", np.ones(n, dtype=bool))
        if present.any():
            mask[present] = np.stack(list(infos["action_mask"][present]))
    return mask


class DiagGaussian:
    """A Box policy's distribution: independent normals in unit scale (the actions before
    :meth:`ActionHead.env_actions` maps them onto the bounds), ``log_prob`` and ``entropy``
    summed over the dimensions.

    Args:
        mean: ``(k, d)`` the means.
        log_std: ``(d,)`` the log standard deviations.
    """

    def __init__(self, mean: torch.Tensor, log_std: torch.Tensor) -> None:
        self.normal = Normal(mean, log_std.exp().expand_as(mean))

    def sample(self) -> torch.Tensor:
        return self.normal.sample()

    def log_prob(self, u: torch.Tensor) -> torch.Tensor:
        return self.normal.log_prob(u).sum(-1)

    def entropy(self) -> torch.Tensor:
        return self.normal.entropy().sum(-1)


class HybridDistribution:
    """A combined action's distribution: a categorical over the topology part and a
    :class:`DiagGaussian` over the continuous part, independent given the observation, so
    the joint log-probability and entropy are the sums of the parts'.

    Args:
        logits: ``(k, n)`` the topology part's logits (illegal ones already masked).
        mean: ``(k, d)`` the continuous part's means (unit scale).
        log_std: ``(d,)`` its log standard deviations.
    """

    def __init__(self, logits: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> None:
        self.categorical = Categorical(logits=logits)
        self.gaussian = DiagGaussian(mean, log_std)

    def sample(self) -> torch.Tensor:
        """``(k, 1 + d)``: the topology index (as a float) then the continuous part."""
        index = self.categorical.sample().to(self.gaussian.normal.mean.dtype)
        return torch.cat([index.unsqueeze(-1), self.gaussian.sample()], -1)

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        index = action[..., 0].round().long()
        return self.categorical.log_prob(index) + self.gaussian.log_prob(action[..., 1:])

    def entropy(self) -> torch.Tensor:
        return self.categorical.entropy() + self.gaussian.entropy()


def _bounds(arch: Architecture) -> tuple[np.ndarray, np.ndarray]:
    """The centre and half-width of a Box part's bounds."""
    low, high = np.array(arch.action_low), np.array(arch.action_high)
    return (low + high) / 2, (high - low) / 2


def _onto_bounds(arch: Architecture, u: np.ndarray) -> np.ndarray:
    """Unit-scale values mapped onto the Box part's bounds, clipped to them; those inside
    the deadband play the env's 0 (where the bounds hold it)."""
    centre, half = _bounds(arch)
    actions = np.clip(centre + u * half, arch.action_low, arch.action_high)
    zero = np.clip(0.0, arch.action_low, arch.action_high)
    return np.where(np.abs(u) < arch.deadband, zero, actions).astype(np.float32)


def _box_mismatch(arch: Architecture, box: Any) -> str | None:
    """What makes the policy's Box part unfit for the env's ``box`` (None: nothing)."""
    if not isinstance(box, spaces.Box) or len(box.shape) != 1:
        return f"the env's continuous actions {box} are not a 1-d Box"
    if box.shape[0] != arch.n_actions:
        return f"a policy over a Box of {arch.n_actions} dimensions, the env's has {box.shape[0]}"
    # the policy maps its actions onto its own bounds: inside the env's, every one is legal
    if (np.array(arch.action_low) < box.low).any() or (np.array(arch.action_high) > box.high).any():
        return "a policy whose action bounds reach outside the env's"
    return None


class ActionHead:
    """What the actor's output means over one kind of action space (the base of the
    registry's entries; see the module docstring). Every method takes the architecture, as
    the heads hold no state."""

    #: what a policy over this kind of space is called in messages
    describes: ClassVar[str] = ""
    #: whether the network has learnt log standard deviations (a Gaussian part)
    gaussian: ClassVar[bool] = False

    def fits(self, space: Any) -> bool:
        """Whether this head plays ``space``."""
        raise NotImplementedError

    def sizes(self, space: Any) -> dict[str, Any]:
        """The :class:`Architecture` fields ``space`` sets (``space`` fits)."""
        raise NotImplementedError

    def check(self, arch: Architecture) -> None:
        """Raises ValueError where ``arch``'s fields are not this head's."""
        raise NotImplementedError

    def outputs(self, arch: Architecture) -> int:
        """The width of the actor's last layer."""
        return arch.n_actions

    def mask_width(self, arch: Architecture) -> int:
        """The columns of the action mask (0: the policy takes none)."""
        return 0

    def masks(self, infos: dict[str, Any], k: int, arch: Architecture) -> np.ndarray:
        """``(k, mask_width)`` the legal actions of ``k`` envs' infos (their
        ``action_mask``, over the discrete part)."""
        return action_masks(infos, k, self.mask_width(arch))

    def distribution(self, out: torch.Tensor, log_std: Any, mask: Any, arch: Architecture) -> Any:
        """The action distribution of the actor's output ``out`` (``mask``: True = legal)."""
        raise NotImplementedError

    def mode(self, out: torch.Tensor, mask: Any, arch: Architecture) -> torch.Tensor:
        """The network's action an evaluation plays: the legal action of highest logit, the
        Gaussian's mean."""
        raise NotImplementedError

    def logits(self, out: torch.Tensor, arch: Architecture) -> torch.Tensor | None:
        """The logits of the discrete part a simulate-based check ranks (None: none)."""
        return None

    def with_choices(self, out: torch.Tensor, choices: torch.Tensor, arch: Architecture) -> Any:
        """``(k, K, ...)`` the network's actions of ``(k, K)`` discrete choices, the rest of
        each action the policy's mode (a head with :meth:`logits`)."""
        raise NotImplementedError

    def do_nothing(self, arch: Architecture) -> torch.Tensor:
        """The network's action that is the env's do-nothing (a head with :meth:`logits`)."""
        raise NotImplementedError

    def env_actions(self, action: torch.Tensor, arch: Architecture) -> Any:
        """The env's batched actions of ``(k, ...)`` network actions."""
        raise NotImplementedError

    def network_actions(self, recorded: Any, arch: Architecture) -> torch.Tensor:
        """Recorded env actions (:func:`~grid_vec.runner.imitation.load_pairs`'s) as the
        network's."""
        raise NotImplementedError

    def acting(self, recorded: Any) -> np.ndarray:
        """``(N,)`` bool: the recorded actions that are not do-nothing."""
        raise NotImplementedError

    def clone_loss(
        self, out: torch.Tensor, target: torch.Tensor, arch: Architecture
    ) -> torch.Tensor:
        """``(k,)`` the behaviour-cloning loss of each recorded decision ``target``:
        cross-entropy on a discrete part, the squared error of the mean (unit scale, summed
        over the dimensions) on a continuous one; the spread is left to PPO."""
        raise NotImplementedError

    def agrees(self, out: torch.Tensor, target: torch.Tensor, arch: Architecture) -> torch.Tensor:
        """``(k,)`` bool: whether the policy's mode plays the recorded decision (a
        continuous part within 0.1 of the unit scale, every dimension)."""
        raise NotImplementedError

    def mismatch(self, arch: Architecture, space: Any) -> str | None:
        """What makes the policy unfit for the env's action ``space`` (None: nothing)."""
        raise NotImplementedError


class CategoricalHead(ActionHead):
    """A ``Discrete`` space: logits, action 0's (do-nothing) biased by ``noop_bias``."""

    describes = "discrete actions"

    def fits(self, space: Any) -> bool:
        return isinstance(space, spaces.Discrete)

    def sizes(self, space: Any) -> dict[str, Any]:
        return {"n_actions": int(space.n)}

    def check(self, arch: Architecture) -> None:
        if arch.action_low or arch.n_discrete or arch.move_fractions:
            raise ValueError("a categorical policy has no Box bounds, n_discrete or moves")

    def mask_width(self, arch: Architecture) -> int:
        return arch.n_actions

    def distribution(self, out: torch.Tensor, log_std: Any, mask: Any, arch: Architecture) -> Any:
        return Categorical(logits=_masked(out, mask, -1e8))

    def mode(self, out: torch.Tensor, mask: Any, arch: Architecture) -> torch.Tensor:
        return _masked(out, mask, -torch.inf).argmax(-1)

    def logits(self, out: torch.Tensor, arch: Architecture) -> torch.Tensor | None:
        return out

    def with_choices(self, out: torch.Tensor, choices: torch.Tensor, arch: Architecture) -> Any:
        return choices

    def do_nothing(self, arch: Architecture) -> torch.Tensor:
        return torch.tensor(DO_NOTHING)

    def env_actions(self, action: torch.Tensor, arch: Architecture) -> Any:
        return action.numpy().astype(np.int64)

    def network_actions(self, recorded: Any, arch: Architecture) -> torch.Tensor:
        return torch.as_tensor(np.asarray(recorded), dtype=torch.int64)

    def acting(self, recorded: Any) -> np.ndarray:
        return np.asarray(recorded) != DO_NOTHING

    def clone_loss(
        self, out: torch.Tensor, target: torch.Tensor, arch: Architecture
    ) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(out, target, reduction="none")

    def agrees(self, out: torch.Tensor, target: torch.Tensor, arch: Architecture) -> torch.Tensor:
        return out.argmax(-1) == target

    def mismatch(self, arch: Architecture, space: Any) -> str | None:
        if not isinstance(space, spaces.Discrete):
            return f"a policy over {arch.n_actions} discrete actions, the env has {space}"
        if int(space.n) != arch.n_actions:
            return f"a policy over {arch.n_actions} actions, the env has {space.n}"
        return None


class GaussianHead(ActionHead):
    """A 1-d ``Box``: a diagonal Gaussian's mean, starting near 0 (the bounds' centre)."""

    describes = "a Box"
    gaussian = True

    def fits(self, space: Any) -> bool:
        return isinstance(space, spaces.Box) and len(space.shape) == 1

    def sizes(self, space: Any) -> dict[str, Any]:
        return {"n_actions": space.shape[0], "action_low": space.low, "action_high": space.high}

    def check(self, arch: Architecture) -> None:
        if not arch.action_low or arch.n_discrete or arch.move_fractions:
            raise ValueError("a Gaussian policy needs Box bounds, and no n_discrete or moves")

    def distribution(self, out: torch.Tensor, log_std: Any, mask: Any, arch: Architecture) -> Any:
        return DiagGaussian(out, log_std)

    def mode(self, out: torch.Tensor, mask: Any, arch: Architecture) -> torch.Tensor:
        return out

    def env_actions(self, action: torch.Tensor, arch: Architecture) -> Any:
        return _onto_bounds(arch, action.numpy())

    def network_actions(self, recorded: Any, arch: Architecture) -> torch.Tensor:
        centre, half = _bounds(arch)
        return torch.as_tensor((np.asarray(recorded) - centre) / half, dtype=torch.float32)

    def acting(self, recorded: Any) -> np.ndarray:
        return (np.asarray(recorded) != 0).any(-1)

    def clone_loss(
        self, out: torch.Tensor, target: torch.Tensor, arch: Architecture
    ) -> torch.Tensor:
        return (out - target).pow(2).sum(-1)

    def agrees(self, out: torch.Tensor, target: torch.Tensor, arch: Architecture) -> torch.Tensor:
        return ((out - target).abs() < 0.1).all(-1)

    def mismatch(self, arch: Architecture, space: Any) -> str | None:
        if isinstance(space, spaces.Discrete):
            return f"a policy over a Box of {arch.n_actions} dimensions, the env has {space}"
        if not self.fits(space):
            return f"the env's action space {space} is neither Discrete nor a 1-d Box"
        return _box_mismatch(arch, space)


class HybridHead(ActionHead):
    """A ``combined`` space, ``Dict(topology=Discrete(n_discrete), continuous=Box(n_actions))``:
    the topology part's logits (do-nothing's biased by ``noop_bias``) then the continuous
    part's means."""

    describes = "combined (topology and continuous) actions"
    gaussian = True

    def fits(self, space: Any) -> bool:
        return _combined(space)

    def sizes(self, space: Any) -> dict[str, Any]:
        return {**GaussianHead().sizes(space[CONTINUOUS]), "n_discrete": int(space[TOPOLOGY].n)}

    def check(self, arch: Architecture) -> None:
        if not arch.action_low or arch.n_discrete < 1 or arch.move_fractions:
            raise ValueError("a hybrid policy needs Box bounds, n_discrete >= 1 and no moves")

    def outputs(self, arch: Architecture) -> int:
        return arch.n_discrete + arch.n_actions

    def mask_width(self, arch: Architecture) -> int:
        return arch.n_discrete

    def _split(self, out: torch.Tensor, arch: Architecture) -> tuple[torch.Tensor, torch.Tensor]:
        return out[..., : arch.n_discrete], out[..., arch.n_discrete :]

    def distribution(self, out: torch.Tensor, log_std: Any, mask: Any, arch: Architecture) -> Any:
        logits, mean = self._split(out, arch)
        return HybridDistribution(_masked(logits, mask, -1e8), mean, log_std)

    def mode(self, out: torch.Tensor, mask: Any, arch: Architecture) -> torch.Tensor:
        logits, mean = self._split(out, arch)
        index = _masked(logits, mask, -torch.inf).argmax(-1, keepdim=True)
        return torch.cat([index.to(mean.dtype), mean], -1)

    def logits(self, out: torch.Tensor, arch: Architecture) -> torch.Tensor | None:
        return self._split(out, arch)[0]

    def with_choices(self, out: torch.Tensor, choices: torch.Tensor, arch: Architecture) -> Any:
        mean = self._split(out, arch)[1]
        k, K = choices.shape
        return torch.cat(
            [choices.to(mean.dtype).unsqueeze(-1), mean.unsqueeze(1).expand(k, K, -1)], -1
        )

    def do_nothing(self, arch: Architecture) -> torch.Tensor:
        # no topology change and no new redispatch: the env's value 0 in unit scale
        centre, half = _bounds(arch)
        return torch.cat([torch.zeros(1), torch.as_tensor(-centre / half, dtype=torch.float32)])

    def env_actions(self, action: torch.Tensor, arch: Architecture) -> Any:
        # the keys in the order the env's Dict space holds them (sorted)
        return {
            CONTINUOUS: _onto_bounds(arch, action[..., 1:].numpy()),
            TOPOLOGY: action[..., 0].round().numpy().astype(np.int64),
        }

    def network_actions(self, recorded: Any, arch: Architecture) -> torch.Tensor:
        index = CategoricalHead().network_actions(recorded[TOPOLOGY], arch).float()
        u = GaussianHead().network_actions(recorded[CONTINUOUS], arch)
        return torch.cat([index.unsqueeze(-1), u], -1)

    def acting(self, recorded: Any) -> np.ndarray:
        topology = CategoricalHead().acting(recorded[TOPOLOGY])
        return topology | GaussianHead().acting(recorded[CONTINUOUS])

    def clone_loss(
        self, out: torch.Tensor, target: torch.Tensor, arch: Architecture
    ) -> torch.Tensor:
        logits, mean = self._split(out, arch)
        index = target[:, 0].round().long()
        cross_entropy = torch.nn.functional.cross_entropy(logits, index, reduction="none")
        return cross_entropy + (mean - target[:, 1:]).pow(2).sum(-1)

    def agrees(self, out: torch.Tensor, target: torch.Tensor, arch: Architecture) -> torch.Tensor:
        logits, mean = self._split(out, arch)
        same = logits.argmax(-1) == target[:, 0].round().long()
        played = mean.masked_fill(mean.abs() < arch.deadband, 0.0)  # as the env gets it
        return same & ((played - target[:, 1:]).abs() < 0.1).all(-1)

    def mismatch(self, arch: Architecture, space: Any) -> str | None:
        if not self.fits(space):
            return (
                f"a policy over {self.describes} ({arch.n_discrete} topology actions, a Box "
                f"of {arch.n_actions}), the env has {space}"
            )
        topology = space[TOPOLOGY]
        if int(topology.n) != arch.n_discrete:
            return f"a policy over {arch.n_discrete} topology actions, the env has {topology.n}"
        return _box_mismatch(arch, space[CONTINUOUS])


def _combined(space: Any) -> bool:
    """Whether ``space`` is a combined ``Dict(topology=Discrete, continuous=1-d Box)``."""
    return (
        isinstance(space, spaces.Dict)
        and set(space.spaces) == {TOPOLOGY, CONTINUOUS}
        and CategoricalHead().fits(space[TOPOLOGY])
        and GaussianHead().fits(space[CONTINUOUS])
    )


class MovesHead(CategoricalHead):
    """A ``combined`` space played as one categorical over the topology set and a table of
    redispatch moves, the expert's (:class:`~grid_vec.runner.expert.ExpertAgent`): for each
    continuous column and each fraction ``f`` of ``move_fractions``, ``f`` times its upper
    bound then ``f`` times its lower bound, the other columns at 0. Action ``i`` below
    ``n_discrete`` is topology action ``i`` with no redispatch, action ``n_discrete + j``
    is move ``j`` with no topology change. The action mask covers the topology part; every
    move is legal (the env keeps a redispatch within its ramps). A categorical head over
    the table's indices, on the combined space (:class:`HybridHead`'s fit, sizes, recorded
    actions and mismatch)."""

    describes = "combined actions as topology actions and redispatch moves"

    def fits(self, space: Any) -> bool:
        return HybridHead.fits(self, space)

    def sizes(self, space: Any) -> dict[str, Any]:
        return {**HybridHead.sizes(self, space), "move_fractions": EXPERT_FRACTIONS}

    def check(self, arch: Architecture) -> None:
        if not arch.action_low or arch.n_discrete < 1 or not arch.move_fractions:
            raise ValueError("a moves policy needs Box bounds, n_discrete >= 1 and move_fractions")

    def table(self, arch: Architecture) -> np.ndarray:
        """``(M, d)`` the moves in the env's units (the expert's order)."""
        d = arch.n_actions
        moves = np.zeros((d, len(arch.move_fractions), 2, d), dtype=np.float32)
        for column in range(d):
            for i, f in enumerate(arch.move_fractions):
                moves[column, i, 0, column] = f * arch.action_high[column]
                moves[column, i, 1, column] = f * arch.action_low[column]
        return moves.reshape(-1, d)

    def outputs(self, arch: Architecture) -> int:
        return arch.n_discrete + 2 * len(arch.move_fractions) * arch.n_actions

    def masks(self, infos: dict[str, Any], k: int, arch: Architecture) -> np.ndarray:
        topology = action_masks(infos, k, arch.n_discrete)
        return np.concatenate(
            [topology, np.ones((k, self.outputs(arch) - arch.n_discrete), bool)], 1
        )

    def mask_width(self, arch: Architecture) -> int:
        return self.outputs(arch)

    def env_actions(self, action: torch.Tensor, arch: Architecture) -> Any:
        index = action.numpy().astype(np.int64)
        move = index - arch.n_discrete
        table = np.concatenate([np.zeros((1, arch.n_actions), np.float32), self.table(arch)])
        return {
            CONTINUOUS: table[np.where(move >= 0, move + 1, 0)],
            TOPOLOGY: np.where(move >= 0, DO_NOTHING, index),
        }

    def network_actions(self, recorded: Any, arch: Architecture) -> torch.Tensor:
        """The index of each recorded action: its topology action, or the move of the table
        nearest its continuous part (an expert's move is one of them exactly).

        Raises:
            ValueError: a recorded action that changes both the topology and the dispatch.
        """
        topology = np.asarray(recorded[TOPOLOGY], dtype=np.int64)
        continuous = np.asarray(recorded[CONTINUOUS], dtype=np.float32)
        moving = (continuous != 0).any(-1)
        if (moving & (topology != DO_NOTHING)).any():
            raise ValueError("a recorded action both changes the topology and redispatches")
        table = self.table(arch)
        nearest = np.zeros(len(continuous), dtype=np.int64)
        if moving.any():
            distance = ((continuous[moving, None, :] - table[None]) ** 2).sum(-1)
            nearest[moving] = distance.argmin(-1)
        return torch.as_tensor(np.where(moving, arch.n_discrete + nearest, topology))

    def acting(self, recorded: Any) -> np.ndarray:
        return HybridHead.acting(self, recorded)

    def mismatch(self, arch: Architecture, space: Any) -> str | None:
        return HybridHead.mismatch(self, arch, space)


HEADS: dict[str, ActionHead] = {
    "categorical": CategoricalHead(),
    "gaussian": GaussianHead(),
    "hybrid": HybridHead(),
    "moves": MovesHead(),
}


def head_of(arch: Architecture) -> ActionHead:
    """The head of ``arch`` (its ``head`` field is checked when it is built)."""
    return HEADS[arch.head]


def _masked(logits: torch.Tensor, mask: Any, fill: float) -> torch.Tensor:
    """``logits`` with the illegal ones (``mask`` False) at ``fill``; no mask: as they are."""
    if mask is None or mask.shape[-1] == 0:
        return logits
    return logits.masked_fill(~mask, fill)


def policy_distribution(network: torch.nn.Module, x: Any, mask: torch.Tensor | None = None) -> Any:
    """The policy's action distribution (its head's): a categorical over a ``Discrete``
    space, ``mask`` (bool, True = legal) ruling actions out; a :class:`DiagGaussian` over a
    ``Box`` (no mask); a :class:`HybridDistribution` over a combined space (``mask`` over
    its topology part).

    Args:
        network: a task network (its ``arch`` and, for a Gaussian part, ``log_std``).
        x: the normalised observations.
        mask: ``(k, n)`` the legal actions of the discrete part, or None.

    Returns:
        The distribution (``sample``, ``log_prob``, ``entropy``).
    """
    arch = network.arch
    return head_of(arch).distribution(network.logits(x), network.log_std, mask, arch)


def policy_and_value(
    network: torch.nn.Module, x: Any, mask: torch.Tensor | None = None
) -> tuple[Any, torch.Tensor]:
    """:func:`policy_distribution` and the critic's values of one batch, in one pass of the
    network (its ``logits_and_value``: a GNN embeds the graphs once for both).

    Args:
        network: a task network.
        x: the normalised observations.
        mask: ``(k, n)`` the legal actions of the discrete part, or None.

    Returns:
        The distribution and the ``(k,)`` values.
    """
    arch = network.arch
    logits, value = network.logits_and_value(x)
    return head_of(arch).distribution(logits, network.log_std, mask, arch), value

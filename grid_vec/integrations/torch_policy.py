"""Actor-critic networks for grid_vec's tasks, and a trained one as an agent of the Runner
(PyTorch, the ``sb3`` extra).

Two networks, chosen by the observation form:

* :class:`MlpActorCritic` on the flat observation (two hidden layers each for the actor and
  the critic);
* :class:`GnnActorCritic` on graph observations (:mod:`grid_vec.env.graph`): bus bars and
  branches encoded, a few rounds of message passing along the connected branches (a message
  is weighted by its branch's ``line_status``, so a disconnected branch carries none), then
  the bus bars pooled (mean and max) with the clock for the actor's logits and the critic's
  value. Plain torch: no graph library.

The actor's output is read by the architecture's action head (:mod:`~grid_vec.integrations.
action_heads`: logits over a ``Discrete`` space, a Gaussian over a ``Box``, both over a
combined ``Dict(topology, continuous)`` one). Observations are normalised by
:class:`~grid_vec.integrations.observation_norm.ObservationNorm` (running mean and variance
per feature, frozen for evaluation). An :class:`Architecture` declares only sizes in range (each
capped: a checkpoint's is untrusted), the statistics read back are checked
(:meth:`ObservationNorm.from_state`), and a policy is checked against the env's spaces
before the first step (:meth:`TorchPolicy.check_spaces`). The checkpoint file, and its
bounded reading, is :mod:`grid_vec.integrations.checkpoint`'s.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from grid_vec.env.graph import EDGE_FEATURES, GLOBAL_FEATURES, NODE_FEATURES
from grid_vec.integrations.action_heads import (  # re-exported: their home before the split
    HEADS,
    DiagGaussian,
    HybridDistribution,
    action_masks,
    head_of,
    policy_distribution,
)
from grid_vec.integrations.observation_norm import ObservationNorm

__all__ = [
    "Architecture",
    "CheckpointError",
    "DiagGaussian",
    "GnnActorCritic",
    "HybridDistribution",
    "MlpActorCritic",
    "ObservationNorm",
    "TorchPolicy",
    "action_masks",
    "build_network",
    "policy_distribution",
]

# The sizes an architecture may declare: a checkpoint is untrusted, and its sizes are read
# before its weights, so each is capped far above any agent of these grids yet low enough that
# building the network on the meta device (which allocates nothing) stays instant.
# Case118Topology's full catalogue has 11,604 actions; a million is room for any grid2op one.
MAX_ACTIONS = 2**20
# Case118Topology's flat observation has 3,767 entries.
MAX_OBS = 2**20
# examples/ppo_task.py trains 256 wide; a 4096-wide square layer is already 16 M weights.
MAX_HIDDEN = 4096
# Message passing crosses a grid in about its diameter in rounds (ppo_task's default is 3);
# each round is a Python loop step when the network is built and at every decision.
MAX_ROUNDS = 64
# A moves policy has 2 x fractions x generators redispatch moves; the expert tries 2 fractions.
MAX_FRACTIONS = 16


class CheckpointError(ValueError):
    """A checkpoint file that is not one
    :func:`~grid_vec.integrations.checkpoint.save_checkpoint` wrote (the message names it)."""


@dataclass(frozen=True)
class Architecture:
    """What builds a network again: its kind and sizes.

    Args:
        kind: ``"mlp"`` (flat observations) or ``"gnn"`` (graph observations).
        n_actions: the size of the ``Discrete`` action space, or the dimension of a ``Box``
            (of a combined space: its continuous part's).
        hidden: the width of the hidden layers.
        n_obs: (mlp) the size of the flat observation.
        rounds: (gnn) the rounds of message passing.
        noop_bias: (Discrete) the initial bias of action 0's logit (training only).
        action_low, action_high: (Box) the bounds of the action space; empty for a
            ``Discrete`` one. A Box policy is a diagonal Gaussian in unit scale: ``u`` in
            ``[-1, 1]`` is the action ``centre + u * half-width``, clipped to the bounds.
        log_std_init: (Box) the initial log standard deviation, in unit scale.
        head: the action head, a key of :data:`~grid_vec.integrations.action_heads.HEADS`:
            ``"categorical"`` (``Discrete``), ``"gaussian"`` (``Box``), ``"hybrid"``
            (``Dict(topology=Discrete, continuous=Box)``); empty: ``"gaussian"`` where
            bounds are given, else ``"categorical"`` (the checkpoints written before the
            field).
        n_discrete: (hybrid) the size of the topology part; 0 for the other heads.
        deadband: (Box, hybrid) the unit-scale values in ``(-deadband, deadband)`` play the
            env's 0 (no new redispatch): a redispatch stays in the target dispatch, so the
            small values of a mean near 0 or of the exploring noise would otherwise add up
            from decision to decision (in ``[0, 1)``; 0: none, every value as it is).
        move_fractions: (moves) the fractions of each generator's ramp its redispatch moves
            are (each in ``(0, 1]``, at most :data:`MAX_FRACTIONS`); empty for the other heads.

    Raises:
        ValueError: a size out of its range (``n_actions`` in [1, :data:`MAX_ACTIONS`],
            ``hidden`` in [1, :data:`MAX_HIDDEN`], ``n_obs`` in [0, :data:`MAX_OBS`],
            ``rounds`` in [0, :data:`MAX_ROUNDS`]); ``noop_bias`` or ``log_std_init`` not
            finite; Box bounds of another length than ``n_actions``, or not finite with
            ``low < high``; an unknown head, or fields that are not its own (bounds
            for a categorical one, none for a Gaussian or hybrid one, ``n_discrete`` outside
            [1, :data:`MAX_ACTIONS`] for a hybrid one, not 0 for the others); a deadband
            outside ``[0, 1)``.
    """

    kind: str
    n_actions: int
    hidden: int = 256
    n_obs: int = 0
    rounds: int = 3
    noop_bias: float = 0.0
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()
    log_std_init: float = 0.0
    head: str = ""
    n_discrete: int = 0
    deadband: float = 0.0
    move_fractions: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        # plain Python values: a checkpoint holds no numpy scalar (weights_only refuses them)
        for name in ("n_actions", "hidden", "n_obs", "rounds", "n_discrete"):
            object.__setattr__(self, name, int(getattr(self, name)))
        for name in ("noop_bias", "log_std_init", "deadband"):
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "kind", str(self.kind))
        for name, low_cap, high_cap in (
            ("n_actions", 1, MAX_ACTIONS),
            ("hidden", 1, MAX_HIDDEN),
            ("n_obs", 0, MAX_OBS),
            ("rounds", 0, MAX_ROUNDS),
            ("n_discrete", 0, MAX_ACTIONS),
        ):
            value = getattr(self, name)
            if not low_cap <= value <= high_cap:
                raise ValueError(f"{name} is {value}, outside [{low_cap}, {high_cap}]")
        if not (math.isfinite(self.noop_bias) and math.isfinite(self.log_std_init)):
            raise ValueError("noop_bias and log_std_init must be finite")
        if not 0 <= self.deadband < 1:
            raise ValueError(f"deadband is {self.deadband}, outside [0, 1)")
        fractions = tuple(float(f) for f in self.move_fractions)
        object.__setattr__(self, "move_fractions", fractions)
        if len(fractions) > MAX_FRACTIONS or not all(0 < f <= 1 for f in fractions):
            raise ValueError(f"move_fractions must be at most {MAX_FRACTIONS} in (0, 1]")
        low = tuple(float(v) for v in self.action_low)
        high = tuple(float(v) for v in self.action_high)
        object.__setattr__(self, "action_low", low)
        object.__setattr__(self, "action_high", high)
        if low or high:
            lo, hi = np.array(low), np.array(high)
            if len(lo) != self.n_actions or len(hi) != self.n_actions:
                raise ValueError(
                    f"a Box policy needs {self.n_actions} bounds each, got {len(lo)} and {len(hi)}"
                )
            if not (np.isfinite(lo).all() and np.isfinite(hi).all() and (lo < hi).all()):
                raise ValueError("a Box policy needs finite bounds with low < high")
        head = str(self.head) or ("gaussian" if low else "categorical")
        object.__setattr__(self, "head", head)
        if head not in HEADS:
            raise ValueError(f"head must be one of {tuple(HEADS)}, got {head!r}")
        HEADS[head].check(self)

    @property
    def continuous(self) -> bool:
        """Whether the policy has a Gaussian part (a ``Box`` or a combined space)."""
        return HEADS[self.head].gaussian

    @classmethod
    def for_space(cls, kind: str, space: Any, head: str = "", **sizes: Any) -> Architecture:
        """The architecture of a policy over ``space``: with ``head``'s, else the first
        head of :data:`~grid_vec.integrations.action_heads.HEADS` that plays it.

        Args:
            kind: the network kind (``"mlp"``, ``"gnn"``).
            space: the single action space.
            head: the action head (empty: the first that plays ``space``).
            **sizes: the other fields (``hidden``, ``n_obs``, ...).

        Returns:
            The architecture.

        Raises:
            ValueError: a space no head plays (a ``MultiDiscrete``, a Dict of other parts),
                or ``head`` unknown or not one that plays it.
        """
        if head:
            if head not in HEADS or not HEADS[head].fits(space):
                raise ValueError(f"no {head!r} head of the heads {tuple(HEADS)} plays {space}")
            return cls(kind, head=head, **HEADS[head].sizes(space), **sizes)
        for name, candidate in HEADS.items():
            if candidate.fits(space):
                return cls(kind, head=name, **candidate.sizes(space), **sizes)
        raise ValueError(
            "a policy over a Discrete, a 1-d Box or a Dict(topology=Discrete, "
            f"continuous=Box) action space, not {space}"
        )

    def env_actions(self, action: torch.Tensor) -> Any:
        """The env's actions of a batch of the network's (its head's mapping: a
        ``Discrete`` one's indices as they are, a Box's ``u`` (unit scale) mapped onto its
        bounds and clipped to them, a combined one's as a dict of both)."""
        return head_of(self).env_actions(action, self)

    @property
    def mask_width(self) -> int:
        """The columns of the policy's action mask (0: it takes none)."""
        return head_of(self).mask_width(self)

    def action_masks(self, infos: dict[str, Any], k: int) -> np.ndarray:
        """``(k, mask_width)`` the legal actions of ``k`` envs' infos (their head's
        reading of ``info["action_mask"]``)."""
        return head_of(self).masks(infos, k, self)


def _layer(n_in: int, n_out: int, std: float = float(np.sqrt(2))) -> nn.Linear:
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


def _head(n_in: int, arch: Architecture) -> nn.Linear:
    """The actor's last layer: logits (action 0's biased by ``noop_bias``) or a Gaussian's
    mean, starting near 0: the Box's centre."""
    head = _layer(n_in, head_of(arch).outputs(arch), 0.01)
    if head_of(arch).mask_width(arch):  # a discrete part: its do-nothing first
        with torch.no_grad():
            head.bias[0] = arch.noop_bias
    return head


def _add_log_std(network: nn.Module, arch: Architecture) -> None:
    """A Gaussian part's log standard deviations (state-independent, learnt); None
    otherwise."""
    value = nn.Parameter(torch.full((arch.n_actions,), arch.log_std_init))
    network.register_parameter("log_std", value if arch.continuous else None)


class MlpActorCritic(nn.Module):
    """Actor and critic on the flat observation (two tanh layers each)."""

    def __init__(self, arch: Architecture) -> None:
        super().__init__()
        h, self.arch = arch.hidden, arch
        _add_log_std(self, arch)
        self.critic = nn.Sequential(
            _layer(arch.n_obs, h), nn.Tanh(), _layer(h, h), nn.Tanh(), _layer(h, 1, 1.0)
        )
        self.actor = nn.Sequential(
            _layer(arch.n_obs, h),
            nn.Tanh(),
            _layer(h, h),
            nn.Tanh(),
            _head(h, arch),
        )

    def logits(self, x: Any) -> torch.Tensor:
        """The actor's output: the logits, or a Box policy's means (unit scale)."""
        return self.actor(x)

    def value(self, x: Any) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def logits_and_value(self, x: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`logits` and :meth:`value` of one batch (actor and critic share nothing)."""
        return self.logits(x), self.value(x)


class GnnActorCritic(nn.Module):
    """Actor and critic on graph observations (see the module docstring)."""

    def __init__(self, arch: Architecture) -> None:
        super().__init__()
        h, self.arch = arch.hidden, arch
        _add_log_std(self, arch)
        self.node_in = nn.Sequential(_layer(len(NODE_FEATURES), h), nn.Tanh())
        self.edge_in = nn.Sequential(_layer(len(EDGE_FEATURES), h), nn.Tanh())
        self.messages = nn.ModuleList(
            nn.Sequential(_layer(2 * h, h), nn.Tanh()) for _ in range(arch.rounds)
        )
        self.updates = nn.ModuleList(
            nn.Sequential(_layer(2 * h, h), nn.Tanh()) for _ in range(arch.rounds)
        )
        pooled = 2 * h + len(GLOBAL_FEATURES)
        self.actor = nn.Sequential(_layer(pooled, h), nn.Tanh(), _head(h, arch))
        self.critic = nn.Sequential(_layer(pooled, h), nn.Tanh(), _layer(h, 1, 1.0))
        self._status = EDGE_FEATURES.index("line_status")

    def embed(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
        """``(k, 2 h + 7)``: the pooled bus bars and the clock of ``k`` graphs."""
        nodes, edges = x["nodes"], x["edges"]
        k, n_node, _ = nodes.shape
        h = self.node_in(nodes).reshape(k * n_node, -1)
        e = self.edge_in(edges)  # (k, B, h)
        # the raw status (1 / 0) rides along un-normalised under "status"
        weight = x["status"].unsqueeze(-1)  # (k, B, 1)
        offset = (torch.arange(k) * n_node).reshape(k, 1)
        src = (x["edge_index"][:, 0] + offset).reshape(-1)
        dst = (x["edge_index"][:, 1] + offset).reshape(-1)
        e_flat, w_flat = e.reshape(k * e.shape[1], -1), weight.reshape(-1, 1)
        for message, update in zip(self.messages, self.updates, strict=True):
            # both directions of every branch, weighted by its status
            m_fwd = message(torch.cat([h[src], e_flat], -1)) * w_flat
            m_bwd = message(torch.cat([h[dst], e_flat], -1)) * w_flat
            agg = torch.zeros_like(h).index_add_(0, dst, m_fwd).index_add_(0, src, m_bwd)
            h = h + update(torch.cat([h, agg], -1))
        h = h.reshape(k, n_node, -1)
        return torch.cat([h.mean(1), h.amax(1), x["globals"]], -1)

    def logits(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
        """The actor's output: the logits, or a Box policy's means (unit scale)."""
        return self.actor(self.embed(x))

    def value(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.critic(self.embed(x)).squeeze(-1)

    def logits_and_value(self, x: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`logits` and :meth:`value` from one embedding of the graphs: the message
        passing is most of a pass, and actor and critic share it."""
        z = self.embed(x)
        return self.actor(z), self.critic(z).squeeze(-1)


NETWORKS: dict[str, type[nn.Module]] = {"mlp": MlpActorCritic, "gnn": GnnActorCritic}


def build_network(arch: Architecture) -> nn.Module:
    """The network of ``arch`` (freshly initialised).

    Raises:
        ValueError: an unknown kind.
    """
    if arch.kind not in NETWORKS:
        raise ValueError(f"network kind must be one of {tuple(NETWORKS)}, got {arch.kind!r}")
    return NETWORKS[arch.kind](arch)


class TorchPolicy:
    """A trained network as a batched agent of the Runner: the action of highest logit
    among the legal ones (the env's ``info["action_mask"]`` when it gives one); over a
    ``Box``, the Gaussian's mean mapped onto the bounds; over a combined space, both (the
    topology action of highest legal logit with the continuous part's mean).

    With ``check_top`` K > 1, the policy's K preferred legal actions are simulated first
    (one ``simulate_candidates`` call for every sub-env, on the forecast of the next step)
    and the most preferred one whose simulated step keeps every branch's rho below
    ``safe_rho`` is played; when none does, the one of lowest simulated maximum rho (a game
    over ranking last): the simulate-based check of the L2RPN winners around a learnt
    ranking. With ``never_worse``, do-nothing is simulated beside them and a candidate whose
    simulated maximum rho is above do-nothing's (or that ends the game or is illegal where
    do-nothing does not) is left out, do-nothing taking the last place: the policy then never
    plays an action simulated worse than doing nothing (with ``check_top`` 1: its first
    choice, or do-nothing). Both need grid_vec's vector envs (the Runner binds the agent to
    its env). Over a combined space the candidates are the K preferred topology actions,
    each with the policy's continuous part, and do-nothing is both parts' (no topology
    change, no new redispatch).

    Args:
        network: the network.
        norm: its observation statistics (frozen here).
        name: the name the scores carry.
        check_top: the actions simulated per decision (1: none, the policy alone).
        safe_rho: the maximum rho a simulated step must stay below to be taken as safe.
        never_worse: leave out the candidates simulated worse than do-nothing (action 0 of a
            grid_vec ``Discrete`` space or topology part), which is simulated too.
        source: the checkpoint file it was read from
            (:func:`~grid_vec.integrations.checkpoint.load_policy`), named when the policy
            does not fit an env.

    Raises:
        ValueError: ``check_top`` < 1 or ``safe_rho`` <= 0; ``check_top`` > 1 or
            ``never_worse`` for a Box policy (no discrete part to rank).
    """

    takes_infos = True  # the Runner hands it the infos: their action masks

    def __init__(
        self,
        network: nn.Module,
        norm: ObservationNorm,
        name: str = "ppo",
        *,
        check_top: int = 1,
        safe_rho: float = 1.0,
        never_worse: bool = False,
        source: str | os.PathLike | None = None,
    ) -> None:
        if isinstance(check_top, bool) or not isinstance(check_top, int) or check_top < 1:
            raise ValueError(f"check_top must be an int >= 1, got {check_top!r}")
        if not safe_rho > 0:
            raise ValueError(f"safe_rho must be > 0, got {safe_rho!r}")
        if (check_top > 1 or never_worse) and not head_of(network.arch).mask_width(network.arch):
            raise ValueError(
                "check_top > 1 and never_worse rank a Discrete policy's actions: not a Box policy's"
            )
        self.network, self.norm, self.name = network.eval(), norm, name
        self.check_top, self.safe_rho = check_top, float(safe_rho)
        self.never_worse = bool(never_worse)
        self.source = source
        norm.frozen = True
        self._env: Any = None

    def check_spaces(self, observation_space: Any, action_space: Any) -> None:
        """Check that the network and its statistics fit an env's (single) spaces: its
        observation form and sizes, its action count (a Box policy's bounds inside the
        env's), so that a policy of another shape is refused before the first step rather than
        failing in it.

        Raises:
            CheckpointError: a policy read from a file that does not fit (the message names
                the file and what differs).
            ValueError: another policy that does not fit.
        """
        problem = _space_mismatch(self.network.arch, self.norm, observation_space, action_space)
        if problem is None:
            return
        if self.source is not None:
            raise CheckpointError(f"{self.source}: {problem}")
        raise ValueError(f"the policy does not fit the env: {problem}")

    def bind(self, env: Any) -> None:
        """Check the policy against the vector env's spaces (:meth:`check_spaces`) and keep
        the env, whose sub-envs ``check_top`` simulates (the Runner calls it before the first
        step).

        Raises:
            CheckpointError: a policy read from a file that does not fit the env's spaces.
            ValueError: another policy that does not fit them.
            TypeError: ``check_top`` > 1 and the env has no ``simulate_candidates``.
        """
        observation_space = getattr(env, "single_observation_space", None)
        action_space = getattr(env, "single_action_space", None)
        if observation_space is not None and action_space is not None:
            self.check_spaces(observation_space, action_space)
        if self._simulates and not hasattr(env, "simulate_candidates"):
            raise TypeError(
                f"check_top={self.check_top}, never_worse={self.never_worse} needs a vector "
                "env with simulate_candidates (grid_vec's GridVecEnv or BatchedGridVecEnv)"
            )
        self._env = env

    def __call__(self, obs: Any, infos: dict[str, Any] | None = None) -> Any:
        """The batched env actions of a batch of observations (see the class docstring).

        Args:
            obs: the batched observations.
            infos: the vector env's infos (their ``action_mask``), or None.

        Returns:
            The batched actions, in the env's form.

        Raises:
            RuntimeError: a simulate-based check on a policy not bound to its env.
        """
        arch = self.network.arch
        head = head_of(arch)
        with torch.no_grad():
            out = self.network.logits(self.norm(obs))
        mask = None
        if infos and "action_mask" in infos and arch.mask_width:
            mask = torch.as_tensor(arch.action_masks(infos, len(out)))
        if not self._simulates:
            return arch.env_actions(head.mode(out, mask, arch))
        if self._env is None:
            raise RuntimeError("check_top > 1: bind the policy to its vector env first")
        logits = head.logits(out, arch)
        if mask is not None:
            logits = logits.masked_fill(~mask, -torch.inf)
        n = len(out)
        top = torch.topk(logits, min(self.check_top, logits.shape[-1]), dim=-1).indices
        candidates = head.with_choices(out, top, arch)  # (n, K, ...) the network's actions
        if self.never_worse:  # do-nothing last, the policy's preference kept
            nothing = head.do_nothing(arch).to(candidates.dtype)
            candidates = torch.cat([candidates, nothing.expand(n, 1, *nothing.shape)], 1)
        width = candidates.shape[1]
        flat = arch.env_actions(candidates.reshape(n * width, *candidates.shape[2:]))
        found = self._env.simulate_candidates(_per_env(flat, n, width))
        max_rho = np.where(found.terminated | found.illegal, np.inf, found.max_rho)
        if self.never_worse:
            worse = max_rho > max_rho[:, -1:]  # do-nothing's own column is never worse
            max_rho = np.where(worse, np.inf, max_rho)
        safe = max_rho < self.safe_rho
        # an illegal (masked) action is never safe: the preferred safe one, else the least
        # loaded, else (everything a game over) the policy's first choice
        choice = np.where(safe.any(1), safe.argmax(1), np.argmin(max_rho, axis=1))
        return arch.env_actions(candidates[torch.arange(n), torch.as_tensor(choice)])

    @property
    def _simulates(self) -> bool:
        """Whether a decision simulates candidates (a check around the policy)."""
        return self.check_top > 1 or self.never_worse


def _space_mismatch(
    arch: Architecture, norm: ObservationNorm, observation_space: Any, action_space: Any
) -> str | None:
    """What makes a network and its statistics unfit for an env's spaces (None: nothing)."""
    if isinstance(observation_space, spaces.Dict):
        if arch.kind != "gnn":
            return f"a network of flat observations ({arch.kind}), the env gives graphs"
        missing = {"nodes", "edges", "globals", "edge_index"} - set(observation_space.spaces)
        if missing:
            return f"the env's graph observations have no {sorted(missing)}"
        for key in ("nodes", "edges", "globals"):
            n, have = observation_space[key].shape[-1], len(norm.mean.get(key, ()))
            if have != n:
                return f"a network of {have} {key} features, the env gives {n}"
    else:
        if arch.kind != "mlp":
            return f"a network of graph observations ({arch.kind}), the env gives flat ones"
        n = int(np.prod(observation_space.shape or (0,)))
        if n != arch.n_obs or len(norm.mean.get("flat", ())) != n:
            return f"a network of {arch.n_obs} observation entries, the env gives {n}"
    return head_of(arch).mismatch(arch, action_space)


def _per_env(actions: Any, n: int, width: int) -> Any:
    """``(n * K, ...)`` env actions (a dict of them for a combined space) as ``(n, K, ...)``:
    ``simulate_candidates``'s form."""
    if isinstance(actions, dict):
        return {key: _per_env(value, n, width) for key, value in actions.items()}
    return actions.reshape(n, width, *actions.shape[1:])

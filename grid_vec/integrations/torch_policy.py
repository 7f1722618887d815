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

Observations are normalised by :class:`ObservationNorm` (running mean and variance per
feature, frozen for evaluation). An :class:`Architecture` declares only sizes in range (each
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
from torch.distributions import Categorical, Normal

from grid_vec._untrusted import quote
from grid_vec.env.graph import EDGE_FEATURES, GLOBAL_FEATURES, NODE_FEATURES

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


class CheckpointError(ValueError):
    """A checkpoint file that is not one
    :func:`~grid_vec.integrations.checkpoint.save_checkpoint` wrote (the message names it)."""


@dataclass(frozen=True)
class Architecture:
    """What builds a network again: its kind and sizes.

    Args:
        kind: ``"mlp"`` (flat observations) or ``"gnn"`` (graph observations).
        n_actions: the size of the ``Discrete`` action space, or the dimension of a ``Box``.
        hidden: the width of the hidden layers.
        n_obs: (mlp) the size of the flat observation.
        rounds: (gnn) the rounds of message passing.
        noop_bias: (Discrete) the initial bias of action 0's logit (training only).
        action_low, action_high: (Box) the bounds of the action space; empty for a
            ``Discrete`` one. A Box policy is a diagonal Gaussian in unit scale: ``u`` in
            ``[-1, 1]`` is the action ``centre + u * half-width``, clipped to the bounds.
        log_std_init: (Box) the initial log standard deviation, in unit scale.

    Raises:
        ValueError: a size out of its range (``n_actions`` in [1, :data:`MAX_ACTIONS`],
            ``hidden`` in [1, :data:`MAX_HIDDEN`], ``n_obs`` in [0, :data:`MAX_OBS`],
            ``rounds`` in [0, :data:`MAX_ROUNDS`]); ``noop_bias`` or ``log_std_init`` not
            finite; Box bounds of another length than ``n_actions``, or not finite with
            ``low < high``.
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

    def __post_init__(self) -> None:
        # plain Python values: a checkpoint holds no numpy scalar (weights_only refuses them)
        for name in ("n_actions", "hidden", "n_obs", "rounds"):
            object.__setattr__(self, name, int(getattr(self, name)))
        for name in ("noop_bias", "log_std_init"):
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "kind", str(self.kind))
        for name, low_cap, high_cap in (
            ("n_actions", 1, MAX_ACTIONS),
            ("hidden", 1, MAX_HIDDEN),
            ("n_obs", 0, MAX_OBS),
            ("rounds", 0, MAX_ROUNDS),
        ):
            value = getattr(self, name)
            if not low_cap <= value <= high_cap:
                raise ValueError(f"{name} is {value}, outside [{low_cap}, {high_cap}]")
        if not (math.isfinite(self.noop_bias) and math.isfinite(self.log_std_init)):
            raise ValueError("noop_bias and log_std_init must be finite")
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

    @property
    def continuous(self) -> bool:
        """Whether the policy is a Gaussian over a ``Box`` (else a categorical)."""
        return bool(self.action_low)

    @classmethod
    def for_space(cls, kind: str, space: Any, **sizes: Any) -> Architecture:
        """The architecture of a policy over ``space`` (``Discrete`` or a 1-d ``Box``).

        Raises:
            ValueError: another kind of action space.
        """
        if isinstance(space, spaces.Discrete):
            return cls(kind, int(space.n), **sizes)
        if not isinstance(space, spaces.Box) or len(space.shape) != 1:
            raise ValueError(f"a policy over a Discrete or a 1-d Box action space, not {space}")
        return cls(kind, space.shape[0], action_low=space.low, action_high=space.high, **sizes)

    def env_actions(self, u: torch.Tensor) -> np.ndarray:
        """The env's actions of a batch of the network's: a ``Discrete`` one's indices as
        they are, a Box's ``u`` (unit scale) mapped onto its bounds and clipped to them."""
        if not self.continuous:
            return u.numpy().astype(np.int64)
        low, high = np.array(self.action_low), np.array(self.action_high)
        centre, half = (low + high) / 2, (high - low) / 2
        actions = centre + u.numpy() * half
        return np.clip(actions, low, high).astype(np.float32)


def _layer(n_in: int, n_out: int, std: float = float(np.sqrt(2))) -> nn.Linear:
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


def _head(n_in: int, arch: Architecture) -> nn.Linear:
    """The actor's last layer: logits (action 0's biased by ``noop_bias``) or a Gaussian's
    mean, starting near 0: the Box's centre."""
    head = _layer(n_in, arch.n_actions, 0.01)
    if not arch.continuous:
        with torch.no_grad():
            head.bias[0] = arch.noop_bias
    return head


def _add_log_std(network: nn.Module, arch: Architecture) -> None:
    """A Box policy's log standard deviations (state-independent, learnt); None otherwise."""
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


NETWORKS: dict[str, type[nn.Module]] = {"mlp": MlpActorCritic, "gnn": GnnActorCritic}


def build_network(arch: Architecture) -> nn.Module:
    """The network of ``arch`` (freshly initialised).

    Raises:
        ValueError: an unknown kind.
    """
    if arch.kind not in NETWORKS:
        raise ValueError(f"network kind must be one of {tuple(NETWORKS)}, got {arch.kind!r}")
    return NETWORKS[arch.kind](arch)


class ObservationNorm:
    """Running mean and variance of observations, per feature (Welford, batched).

    A flat observation is normalised per entry; a graph's ``nodes``, ``edges`` and
    ``globals`` per feature (the statistics pooled over the bus bars or the branches), its
    ``edge_index`` kept, and its branches' raw ``line_status`` added under ``status``.

    Args:
        sizes: the feature count of each normalised key (``{"flat": n}`` for flat
            observations).
    """

    def __init__(self, sizes: dict[str, int]) -> None:
        self.mean = {key: np.zeros(n) for key, n in sizes.items()}
        self.var = {key: np.ones(n) for key, n in sizes.items()}
        self.count = 1e-4
        self.frozen = False

    @classmethod
    def for_space(cls, space: Any) -> ObservationNorm:
        """The statistics an observation space needs (a flat ``Box`` or a graph ``Dict``)."""
        if hasattr(space, "spaces"):
            return cls({key: space[key].shape[-1] for key in ("nodes", "edges", "globals")})
        return cls({"flat": int(np.prod(space.shape))})

    def _update(self, key: str, x: np.ndarray, count: float) -> None:
        mean, var, n = x.mean(0), x.var(0), x.shape[0]
        delta, total = mean - self.mean[key], count + n
        self.mean[key] = self.mean[key] + delta * n / total
        m2 = self.var[key] * count + var * n + delta**2 * count * n / total
        self.var[key] = m2 / total

    def _scaled(self, key: str, x: np.ndarray) -> torch.Tensor:
        z = (x - self.mean[key]) / np.sqrt(self.var[key] + 1e-8)
        return torch.as_tensor(np.clip(z, -10, 10).astype(np.float32))

    def __call__(self, obs: Any) -> Any:
        """The normalised tensors of a batch of observations (``(k, ...)``)."""
        if "flat" in self.mean:
            x = np.asarray(obs, dtype=np.float64)
            if not self.frozen:
                self._update("flat", x, self.count)
                self.count += len(x)
            return self._scaled("flat", x)
        arrays = {key: np.asarray(obs[key], dtype=np.float64) for key in self.mean}
        if not self.frozen:
            for key, x in arrays.items():
                self._update(key, x.reshape(-1, x.shape[-1]), self.count * x[0].size / x.shape[-1])
            self.count += len(arrays["globals"])
        out = {key: self._scaled(key, x) for key, x in arrays.items()}
        out["edge_index"] = torch.as_tensor(np.asarray(obs["edge_index"], dtype=np.int64))
        status = np.asarray(obs["edges"])[..., EDGE_FEATURES.index("line_status")]
        out["status"] = torch.as_tensor(status.astype(np.float32))
        return out

    def state(self) -> dict[str, Any]:
        """The statistics as tensors (for a checkpoint)."""
        return {
            "mean": {k: torch.as_tensor(v) for k, v in self.mean.items()},
            "var": {k: torch.as_tensor(v) for k, v in self.var.items()},
            "count": float(self.count),
        }

    @classmethod
    def from_state(cls, state: Any, sizes: dict[str, int] | None = None) -> ObservationNorm:
        """The frozen statistics of :meth:`state`, checked (they may come from a file): the
        keys and sizes expected, finite means, finite positive variances, a finite
        non-negative count.

        Args:
            state: what :meth:`state` gave.
            sizes: the feature count of each key the network takes (None: the state's own).

        Raises:
            ValueError: statistics that are not so (the message says which).
        """
        if not isinstance(state, dict):
            raise ValueError("observation statistics: not a dict")
        means, variances, count = state.get("mean"), state.get("var"), state.get("count")
        if not (isinstance(means, dict) and isinstance(variances, dict)):
            raise ValueError("observation statistics: no means and variances")
        if sizes is None:
            sizes = {k: v.numel() for k, v in means.items() if isinstance(v, torch.Tensor)}
        if set(means) != set(sizes) or set(variances) != set(sizes):
            raise ValueError(
                f"observation statistics of {quote(sorted(map(str, means)))}, the network "
                f"takes {sorted(sizes)}"
            )
        norm = cls({})
        for key, n in sizes.items():
            # shapes first: a tensor may claim more elements than the file holds (zero strides)
            arrays = {}
            for what, table in (("mean", means), ("variance", variances)):
                value = table[key]
                if not (
                    isinstance(value, torch.Tensor)
                    and value.is_floating_point()
                    and tuple(value.shape) == (n,)
                ):
                    raise ValueError(f"observation statistics: the {key} {what} is not {n} floats")
                arrays[what] = value.double().numpy()
            if not np.isfinite(arrays["mean"]).all():
                raise ValueError(f"observation statistics: a {key} mean is not finite")
            var = arrays["variance"]
            # a trained variance starts at 1 and stays > 0 (Welford's update keeps the prior)
            if not (np.isfinite(var) & (var > 0)).all():
                raise ValueError(
                    f"observation statistics: a {key} variance is not finite and positive"
                )
            norm.mean[key], norm.var[key] = arrays["mean"], var
        if isinstance(count, bool) or not isinstance(count, (int, float)):
            raise ValueError("observation statistics: the count is not a number")
        count = float(min(count, math.inf))  # an int too large for a float: inf, refused
        if not (math.isfinite(count) and count >= 0):
            raise ValueError(f"observation statistics: the count is {count}")
        norm.count, norm.frozen = count, True
        return norm


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
    :meth:`Architecture.env_actions` maps them onto the bounds), ``log_prob`` and ``entropy``
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


def policy_distribution(
    network: nn.Module, x: Any, mask: torch.Tensor | None = None
) -> Categorical | DiagGaussian:
    """The policy's action distribution: a categorical over a ``Discrete`` space, ``mask``
    (bool, True = legal) ruling actions out; a :class:`DiagGaussian` over a ``Box`` (no
    mask)."""
    out = network.logits(x)
    if network.arch.continuous:
        return DiagGaussian(out, network.log_std)
    if mask is not None:
        out = out.masked_fill(~mask, -1e8)
    return Categorical(logits=out)


DO_NOTHING = 0  # a grid_vec Discrete space's do-nothing (the catalog's and every task set's first)


class TorchPolicy:
    """A trained network as a batched agent of the Runner: the action of highest logit
    among the legal ones (the env's ``info["action_mask"]`` when it gives one); over a
    ``Box``, the Gaussian's mean mapped onto the bounds.

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
    its env).

    Args:
        network: the network.
        norm: its observation statistics (frozen here).
        name: the name the scores carry.
        check_top: the actions simulated per decision (1: none, the policy alone).
        safe_rho: the maximum rho a simulated step must stay below to be taken as safe.
        never_worse: leave out the candidates simulated worse than do-nothing (action 0 of a
            grid_vec ``Discrete`` space), which is simulated too.
        source: the checkpoint file it was read from
            (:func:`~grid_vec.integrations.checkpoint.load_policy`), named when the policy
            does not fit an env.

    Raises:
        ValueError: ``check_top`` < 1 or ``safe_rho`` <= 0; ``check_top`` > 1 or
            ``never_worse`` for a Box policy (no finite set of actions to rank).
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
        if (check_top > 1 or never_worse) and network.arch.continuous:
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

    def __call__(self, obs: Any, infos: dict[str, Any] | None = None) -> np.ndarray:
        with torch.no_grad():
            logits = self.network.logits(self.norm(obs))
        if self.network.arch.continuous:
            return self.network.arch.env_actions(logits)
        if infos and "action_mask" in infos:
            mask = action_masks(infos, *logits.shape)
            logits = logits.masked_fill(~torch.as_tensor(mask), -torch.inf)
        if not self._simulates:
            return logits.argmax(-1).numpy().astype(np.int64)
        if self._env is None:
            raise RuntimeError("check_top > 1: bind the policy to its vector env first")
        k = min(self.check_top, logits.shape[-1])
        top = torch.topk(logits, k, dim=-1).indices.numpy().astype(np.int64)
        if self.never_worse:  # do-nothing (action 0) last, the policy's preference kept
            top = np.concatenate([top, np.full((len(top), 1), DO_NOTHING)], axis=1)
        found = self._env.simulate_candidates(top)
        max_rho = np.where(found.terminated | found.illegal, np.inf, found.max_rho)
        if self.never_worse:
            worse = max_rho > max_rho[:, -1:]  # do-nothing's own column is never worse
            max_rho = np.where(worse, np.inf, max_rho)
        safe = max_rho < self.safe_rho
        # an illegal (masked) action is never safe: the preferred safe one, else the least
        # loaded, else (everything a game over) the policy's first choice
        choice = np.where(safe.any(1), safe.argmax(1), np.argmin(max_rho, axis=1))
        return top[np.arange(len(top)), choice]

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
    if isinstance(action_space, spaces.Discrete):
        if arch.continuous:
            return f"a policy over a Box of {arch.n_actions} dimensions, the env has {action_space}"
        if int(action_space.n) != arch.n_actions:
            return f"a policy over {arch.n_actions} actions, the env has {action_space.n}"
        return None
    if not isinstance(action_space, spaces.Box) or len(action_space.shape) != 1:
        return f"the env's action space {action_space} is neither Discrete nor a 1-d Box"
    if not arch.continuous:
        return f"a policy over {arch.n_actions} discrete actions, the env has {action_space}"
    if action_space.shape[0] != arch.n_actions:
        return (
            f"a policy over a Box of {arch.n_actions} dimensions, the env's has "
            f"{action_space.shape[0]}"
        )
    # the policy maps its actions onto its own bounds: inside the env's, every one is legal
    low, high = np.array(arch.action_low), np.array(arch.action_high)
    if (low < action_space.low).any() or (high > action_space.high).any():
        return "a policy whose action bounds reach outside the env's"
    return None

"""Agents the Runner can drive, and the baseline agents.

Two kinds of agents, told apart by their methods:

* **Batched policy**: any callable ``policy(obs_batch) -> actions_batch`` over the whole vector
  env (a neural network, say). Results stay independent of the number of sub-envs as long as
  the action of a row only depends on that row. A policy may also define ``bind(vec_env)``,
  called once by the Runner before any work, to read spaces or call the sub-envs. A policy
  whose ``takes_infos`` attribute is true is called ``policy(obs_batch, infos)`` with the
  batched infos that came with ``obs_batch`` (the step's, a reset's for the rows just
  reset): a maskable policy reads ``infos["action_mask"]`` there.
* **Per-episode agent**: ``act(obs, reward, done) -> action``, ``reset(obs)`` and ``seed(seed)``.
  The Runner deep-copies it once per sub-env and, at each episode start, calls ``seed`` then
  ``reset`` on that copy, so an agent whose state is set by these two calls gives results that
  do not depend on the schedule.

An agent with an ``action_space`` (or ``observation_space``) attribute is checked against the
vector env's single spaces.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array

from grid_vec.env.action_input import DECLARES_DO_NOTHING
from grid_vec.runner.candidates import (
    candidate_scores,
    has_batched_simulate,
    obs_segment,
    simulated_score,
    then_sequence,
    tiled,
    topology_candidates,
)

EPISODE_AGENT_METHODS = ("act", "reset", "seed")


def takes_infos(agent: Any) -> bool:
    """Whether a batched policy asks for the infos (its ``takes_infos`` attribute)."""
    return bool(getattr(agent, "takes_infos", False))


def merge_rows(infos: dict[str, Any], update: dict[str, Any], rows: Sequence[int]) -> dict:
    """The infos that go with the observations after a reset of sub-envs ``rows``: their
    entries from ``update`` (the reset's infos), the other sub-envs' from ``infos``, in
    gymnasium's batched layout (``key`` values, ``_key`` masks of the sub-envs that have the
    entry). An entry of ``infos`` the reset did not give is masked out for ``rows``.

    Args:
        infos: the batched infos so far (empty before the first reset).
        update: the batched infos of a reset.
        rows: the sub-envs that reset.

    Returns:
        A new dict (``infos`` and ``update`` are not modified).
    """
    merged = dict(infos)
    for key in {*infos, *update}:
        if key.startswith("_"):
            continue
        value, old = update.get(key), infos.get(key)
        if isinstance(value, dict) or (value is None and isinstance(old, dict)):
            merged[key] = merge_rows(old if isinstance(old, dict) else {}, value or {}, rows)
            continue
        batched = value if value is not None else old
        if not isinstance(batched, (np.ndarray, list, tuple)):  # not a batched entry
            merged[key] = batched
            continue
        n = len(batched)
        reset = np.zeros(n, dtype=bool)
        reset[list(rows)] = True
        had = np.asarray(infos.get(f"_{key}", np.full(n, old is not None)), dtype=bool)
        gets = np.asarray(update.get(f"_{key}", np.full(n, value is not None)), dtype=bool)
        if value is None:
            merged[key] = old
        elif (
            isinstance(old, np.ndarray)
            and isinstance(value, np.ndarray)
            and (old.shape == value.shape and old.dtype == value.dtype)
        ):
            merged[key] = np.where(reset.reshape(-1, *[1] * (value.ndim - 1)), value, old)
        else:  # nothing of the other sub-envs to keep in this layout
            merged[key], had = value, np.zeros(n, dtype=bool)
        merged[f"_{key}"] = np.where(reset, gets, had)
    return merged


def default_action(space: spaces.Space) -> Any:
    """A neutral, valid action of ``space``.

    Grid envs put do-nothing at action 0, so this is their do-nothing action.

    Args:
        space: a single (unbatched) action space.

    Returns:
        The first action of a discrete space, zeros clipped to the bounds of a box; for other
        spaces, a sample drawn with a fixed seed.
    """
    if isinstance(space, spaces.Discrete):
        return np.int64(space.start)
    if isinstance(space, spaces.MultiDiscrete):
        return np.asarray(space.start, dtype=space.dtype).copy()
    if isinstance(space, spaces.MultiBinary):
        return np.zeros(space.shape, dtype=space.dtype)
    if isinstance(space, spaces.Box):
        return np.clip(np.zeros(space.shape), space.low, space.high).astype(space.dtype)
    sampler = copy.deepcopy(space)
    sampler.seed(0)
    return sampler.sample()


def do_nothing_of(env: VectorEnv) -> Any:
    """The action that changes nothing in ``env``'s sub-envs: the ``do_nothing_action``
    they declare (a GridEnv's: on a continuous space a curtailment left unchanged, on a
    general topology space every element unchanged), else :func:`default_action` of the
    single action space (whose zeros would curtail every renewable generator to nothing,
    and whose sample of a ``Dict`` space is an action like any other).

    Args:
        env: the vector env.

    Returns:
        An action of ``env.single_action_space``.
    """
    space = env.single_action_space
    # asked only of envs that say they have it: gymnasium's AsyncVectorEnv closes a worker
    # whose env lacks an attribute it is asked for
    if env.metadata.get(DECLARES_DO_NOTHING) and callable(getattr(env, "get_attr", None)):
        declared = env.get_attr("do_nothing_action")[0]
        if space.contains(declared):
            return declared
    return default_action(space)


def batch_of(space: spaces.Space, action: Any, num_envs: int) -> Any:
    """The batched action holding ``action`` for each of ``num_envs`` sub-envs."""
    out = create_empty_array(space, num_envs)
    return concatenate(space, [action] * num_envs, out)


def agent_kind(agent: Any) -> str:
    """Which of the two agent kinds ``agent`` is.

    Args:
        agent: a per-episode agent (methods ``act``, ``reset``, ``seed``) or a batched
            policy (a callable ``obs_batch -> actions``).

    Returns:
        ``"episode"`` or ``"batch"``.

    Raises:
        TypeError: ``agent`` is neither; names the missing methods.
    """
    if hasattr(agent, "act"):
        missing = [m for m in EPISODE_AGENT_METHODS if not callable(getattr(agent, m, None))]
        if missing:
            raise TypeError(
                f"per-episode agent {type(agent).__name__} lacks method(s) {missing}; "
                f"it needs {list(EPISODE_AGENT_METHODS)}"
            )
        return "episode"
    if callable(agent):
        return "batch"
    raise TypeError(
        f"agent {type(agent).__name__} is neither a batched policy (a callable obs_batch -> "
        f"actions) nor a per-episode agent (methods {list(EPISODE_AGENT_METHODS)})"
    )


def check_spaces(agent: Any, env: VectorEnv) -> None:
    """Check the spaces an agent declares (if any) against the env's single spaces.

    Args:
        agent: any agent; its optional ``action_space`` / ``observation_space`` are checked.
        env: the vector env.

    Raises:
        ValueError: a declared space differs from the env's.
    """
    for name, env_space in (
        ("action_space", env.single_action_space),
        ("observation_space", env.single_observation_space),
    ):
        agent_space = getattr(agent, name, None)
        if agent_space is not None and agent_space != env_space:
            raise ValueError(
                f"agent {type(agent).__name__}.{name} is {agent_space}, but the vector env's "
                f"single_{name} is {env_space}"
            )


class DoNothingAgent:
    """Batched policy playing the same neutral action everywhere (action 0 on grid envs).

    Args:
        action: the action of every sub-env; None for the env's own do-nothing action
            (:func:`do_nothing_of`).
    """

    def __init__(self, action: Any = None) -> None:
        self.action = action
        self._batch: Any = None

    def bind(self, env: VectorEnv) -> None:
        """Build the constant action batch for ``env`` (the Runner calls it).

        Args:
            env: the vector env the agent will play on.

        Raises:
            ValueError: the action is not in the env's single action space.
        """
        space = env.single_action_space
        action = do_nothing_of(env) if self.action is None else self.action
        if not space.contains(action):
            raise ValueError(f"DoNothingAgent action {action!r} is not in {space}")
        self._batch = batch_of(space, action, env.num_envs)

    def __call__(self, obs_batch: Any) -> Any:
        """The constant action batch (the same array each call).

        Raises:
            RuntimeError: :meth:`bind` was not called.
        """
        if self._batch is None:
            raise RuntimeError("DoNothingAgent must be bound to a vector env first (bind(env))")
        return self._batch


class RandomAgent:
    """Per-episode agent sampling uniformly from ``action_space``, reproducible per seed.

    Args:
        action_space: the env's single action space (a copy samples).

    Raises:
        TypeError: ``action_space`` is not a gymnasium Space.
    """

    def __init__(self, action_space: spaces.Space) -> None:
        if not isinstance(action_space, spaces.Space):
            raise TypeError(f"action_space must be a gymnasium Space, got {action_space!r}")
        self.action_space = action_space
        self._sampler = copy.deepcopy(action_space)

    def seed(self, seed: int | None) -> None:
        """Seed the sampler with the episode's agent seed.

        Args:
            seed: the agent seed, or None for fresh entropy.
        """
        self._sampler.seed(seed)

    def reset(self, obs: Any) -> None:
        """Nothing to forget between episodes."""

    def act(self, obs: Any, reward: float, done: bool) -> Any:
        """A uniform sample of the action space.

        Args:
            obs: the observation (ignored).
            reward: the last reward (ignored).
            done: always False from the Runner (ignored).

        Returns:
            The action.
        """
        return self._sampler.sample()


class ReconnectAgent:
    """Per-episode agent reconnecting a disconnected branch when allowed, else doing nothing.

    Works on flat observations: ``line_status`` and ``cooldown`` index the branch status
    (connected when > 0.5) and the steps before the branch may be acted on (allowed when
    <= 0) in the observation vector; ``reconnect_actions[k]`` reconnects branch ``k``.
    The lowest-numbered reconnectable branch goes first. Use :meth:`from_view` to read the
    indices off a grid env's zero-copy observation view.

    Args:
        reconnect_actions: one action per branch of ``line_status``.
        line_status: indices of the branch statuses in the flat observation.
        cooldown: indices of the branch cooldowns in the flat observation, or None.
        do_nothing: the action when no branch can be reconnected.

    Raises:
        ValueError: ``reconnect_actions``, ``line_status`` and ``cooldown`` differ in length.
    """

    def __init__(
        self,
        reconnect_actions: Sequence[Any],
        line_status: Sequence[int] | np.ndarray,
        cooldown: Sequence[int] | np.ndarray | None = None,
        do_nothing: Any = 0,
    ) -> None:
        self.line_status = np.asarray(line_status, dtype=np.intp)
        self.cooldown = None if cooldown is None else np.asarray(cooldown, dtype=np.intp)
        if len(reconnect_actions) != self.line_status.size:
            raise ValueError(
                f"reconnect_actions has {len(reconnect_actions)} entries, line_status indexes "
                f"{self.line_status.size} branches; they must match"
            )
        if self.cooldown is not None and self.cooldown.size != self.line_status.size:
            raise ValueError(
                f"cooldown indexes {self.cooldown.size} branches, line_status "
                f"{self.line_status.size}; they must match"
            )
        self.reconnect_actions = list(reconnect_actions)
        self.do_nothing = do_nothing

    @classmethod
    def from_view(
        cls,
        view: Any,
        sample_obs: np.ndarray,
        reconnect_actions: Sequence[Any],
        do_nothing: Any = 0,
    ) -> ReconnectAgent:
        """Build from an observation view, locating its fields in a flat observation.

        Args:
            view: ``view(obs)`` gives zero-copy attributes ``line_status`` and optionally
                ``time_before_cooldown_line``.
            sample_obs: any observation of the env.
            reconnect_actions: one action per branch.
            do_nothing: the action when no branch can be reconnected.

        Returns:
            The agent.

        Raises:
            ValueError: a field is not a zero-copy view of the observation.
        """
        sample = np.ascontiguousarray(sample_obs).reshape(-1)
        fields = view(sample)
        status = _indices_in(sample, fields.line_status, "line_status")
        cooldown_field = getattr(fields, "time_before_cooldown_line", None)
        cooldown = None
        if cooldown_field is not None:
            cooldown = _indices_in(sample, cooldown_field, "time_before_cooldown_line")
        return cls(reconnect_actions, status, cooldown, do_nothing)

    def seed(self, seed: int | None) -> None:
        """Deterministic agent: nothing to seed."""

    def reset(self, obs: Any) -> None:
        """Stateless between steps: nothing to reset."""

    def act(self, obs: Any, reward: float, done: bool) -> Any:
        """Reconnect the lowest-numbered disconnected branch out of cooldown, if any.

        Args:
            obs: the flat observation.
            reward: the last reward (ignored).
            done: always False from the Runner (ignored).

        Returns:
            That branch's reconnect action, else ``do_nothing``.
        """
        flat = np.asarray(obs).reshape(-1)
        can = flat[self.line_status] <= 0.5
        if self.cooldown is not None:
            can &= flat[self.cooldown] <= 0
        hits = np.flatnonzero(can)
        return self.reconnect_actions[hits[0]] if hits.size else self.do_nothing


class GreedyAgent:
    """Batched policy trying each candidate action with the sub-envs' ``simulate(action)``
    and keeping, per sub-env, the one whose simulated step ranks best.

    The rank of a simulated step is its reward by default; ``rank="max_rho"`` ranks by the
    lowest maximum line loading (the simulated observation's ``rho`` segment, located once
    through the sub-envs' ``obs_layout``), the greedy baseline of the L2RPN competitions.
    Candidates that end the game or are flagged ``is_illegal`` in the simulated info rank
    last; ties go to the earliest candidate, so put do-nothing first. Default candidates: every
    action of a ``Discrete`` action space, or of the ``Discrete`` part of a ``"combined"``
    one (its continuous part left at do-nothing's). Deterministic, so episode results do not
    depend on the schedule. On grid_vec's vector envs all candidates of all sub-envs are
    simulated in one ``simulate_candidates`` call per step; on others, one
    ``call("simulate", a)`` round trip per candidate and step.

    With ``horizon`` H > 1 (grid_vec's vector envs only), each candidate is played, then
    do-nothing (the first candidate) for H - 1 steps, on the sub-env's forecasts
    (``simulate_candidates(..., horizon=H)``): a candidate ranks by its worst maximum rho
    along the H steps, or the sum of its rewards, and last if any step ends the game.

    Args:
        candidates: the actions to try, do-nothing first; None for every action of a
            ``Discrete`` space or of a ``"combined"`` space's ``Discrete`` part.
        rank: ``"reward"`` or ``"max_rho"``.
        horizon: the steps each candidate is looked ahead (an int >= 1).

    Raises:
        ValueError: ``candidates`` is empty; an unknown ``rank``; a horizon that is not an
            int >= 1.
    """

    def __init__(
        self, candidates: Sequence[Any] | None = None, rank: str = "reward", horizon: int = 1
    ) -> None:
        if candidates is not None and len(candidates) == 0:
            raise ValueError("GreedyAgent candidates must not be empty")
        if rank not in ("reward", "max_rho"):
            raise ValueError(f"GreedyAgent rank must be 'reward' or 'max_rho', got {rank!r}")
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ValueError(f"GreedyAgent horizon must be an int >= 1, got {horizon!r}")
        self.candidates = None if candidates is None else list(candidates)
        self.rank = rank
        self.horizon = horizon
        self._rho: slice | None = None
        self._env: VectorEnv | None = None
        self._batched: Any = None  # (num_envs, K, ...) candidates for simulate_candidates

    def bind(self, env: VectorEnv) -> None:
        """Check the sub-envs offer ``simulate`` and fix the candidate list (the Runner calls it).

        Args:
            env: the vector env the agent will play on.

        Raises:
            TypeError: the sub-envs have no ``simulate`` (or, for ``rank="max_rho"``, no
                ``obs_layout`` with a ``rho`` segment; or, for a ``horizon`` > 1, the
                vector env has no ``simulate_candidates``).
            ValueError: no candidates for a space without a Discrete part; a candidate is
                not in it.
        """
        if not all(env.call("has_wrapper_attr", "simulate")):
            raise TypeError(
                "GreedyAgent needs sub-envs with a simulate(action) method; this vector env's "
                "sub-envs have none"
            )
        space = env.single_action_space
        if self.candidates is None:
            self.candidates = topology_candidates(space, do_nothing_of(env))
            if self.candidates is None:
                raise ValueError(f"GreedyAgent needs explicit candidates for action space {space}")
        bad = [c for c in self.candidates if not space.contains(c)]
        if bad:
            raise ValueError(f"GreedyAgent candidates {bad[:5]} are not in {space}")
        if self.rank == "max_rho":
            self._rho = obs_segment(env, "rho", "GreedyAgent(rank='max_rho')")
        self._env = env
        self._batched = None
        if has_batched_simulate(env):
            tried = self.candidates
            if self.horizon > 1:  # each candidate, then do-nothing
                tried = [then_sequence(space, c, self.candidates[0], self.horizon) for c in tried]
            self._batched = tiled(space, tried, env.num_envs)
        elif self.horizon > 1:
            raise TypeError(
                f"GreedyAgent(horizon={self.horizon}) needs a vector env with "
                "simulate_candidates (grid_vec's GridVecEnv or BatchedGridVecEnv)"
            )

    def __call__(self, obs_batch: Any) -> Any:
        """The best simulated candidate of each sub-env.

        Args:
            obs_batch: the batched observations (unused: the sub-envs simulate from their
                own state).

        Returns:
            The batched actions.

        Raises:
            RuntimeError: :meth:`bind` was not called.
        """
        if self._env is None or self.candidates is None:
            raise RuntimeError("GreedyAgent must be bound to a vector env first (bind(env))")
        env = self._env
        space = env.single_action_space
        if self._batched is not None:  # every candidate of every sub-env in one call
            found = env.simulate_candidates(self._batched, horizon=self.horizon)
            best = np.argmax(candidate_scores(found, by_rho=self._rho is not None), axis=1)
            return concatenate(
                space,
                [self.candidates[k] for k in best.tolist()],
                create_empty_array(space, env.num_envs),
            )
        best = np.full(env.num_envs, -np.inf)
        choice = [self.candidates[0]] * env.num_envs
        for candidate in self.candidates:
            for i, simulated in enumerate(env.call("simulate", candidate)):
                score = simulated_score(*simulated, rho=self._rho)
                if score > best[i]:
                    best[i], choice[i] = score, candidate
        return concatenate(space, choice, create_empty_array(space, env.num_envs))


def _indices_in(base: np.ndarray, field: np.ndarray, name: str) -> np.ndarray:
    """Indices of the elements of ``field`` (a view into 1-D ``base``) within ``base``."""
    field = np.asarray(field)
    if not np.shares_memory(base, field):
        raise ValueError(f"view field {name} is not a zero-copy view of the observation")
    start = field.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    step = field.strides[0] if field.ndim == 1 else base.itemsize
    return (start + step * np.arange(field.size)) // base.itemsize


__all__ = [
    "DoNothingAgent",
    "GreedyAgent",
    "RandomAgent",
    "ReconnectAgent",
    "agent_kind",
    "candidate_scores",
    "check_spaces",
    "default_action",
    "do_nothing_of",
    "simulated_score",
]

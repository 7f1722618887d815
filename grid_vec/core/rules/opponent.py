"""grid2op's line attackers, as configurations (:class:`Opponent`) and batched state
(:class:`OpponentBatch`, one opponent per env of a batch).

The rules are grid2op's (its ``OpponentSpace`` with ``BaseActionBudget``), for every env at
once. An opponent has a budget, a maximum attack duration ``D``, a cooldown ``C`` and a cost
per attacked step (``attack_cost``: 1 per line in grid2op). Each step, before the agent's
action is applied:

1. the budget grows by ``budget_per_step``; the attack's remaining steps and the cooldown
   counter (``C`` at reset) each drop by one (not below 0);
2. an attack still running (remaining steps > 0) goes on: its branch is disconnected again;
3. otherwise, when the cooldown counter is at most ``C``, the opponent is asked for an
   attack (its class decides, below). A proposed attack fails when it would last longer than
   ``D`` or when the budget cannot pay its whole duration (``duration * attack_cost >
   budget``); else it starts: remaining steps = its duration, cooldown counter += ``C``;
4. every step attacked (the first one too) costs ``attack_cost``.

The attacked branch is disconnected after the agent's action (the attack wins), and its
status cannot be changed while the attack lasts: its cooldown is at least the attack's
remaining steps (grid2op's ``time_before_cooldown_line``). So an attack of ``d`` steps started
at step ``t`` keeps the branch out during steps ``t .. t+d-1``; the agent may reconnect it at
step ``t+d``. Attacks are only drawn among the branches connected when the step starts.

The classes (grid2op's names, same choice rules):

* :class:`RandomLineOpponent`: a connected target, uniformly, whenever asked; duration ``D``.
* :class:`WeightedRandomOpponent`: when first asked after an attack or a blocked step, it
  waits a number of steps drawn uniformly in ``[0, attack_period)``, then attacks a
  connected target drawn with probability proportional to ``rho / rho_normalization``;
  duration ``D``.
* :class:`GeometricOpponent`: at reset it draws the episode's schedule: waiting times from a
  geometric law (mean ``attack_every_xxx_hour - average_attack_duration_hour`` hours), each
  followed by an attack duration (the minimum plus a geometric part); when the scheduled time
  comes it attacks only if every target is connected, choosing by the rank of their ``rho``
  (see the class).

Each env draws from its own RNG, seeded from the env's RNG at reset, so an env's attacks
depend only on its seed and actions, never on the batch. The draws are not grid2op's
(another generator): attacks match grid2op's in distribution, not one by one. A target
draw that cannot lead to an attack (the budget cannot pay it) is skipped; it would not change
the distribution of the attacks. A GeometricOpponent draws its schedule over the steps the
episode may play (grid2op: over the scenario's length, fast-forwarded steps included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from grid_vec.core.rng_state import RngState

_UNSET = np.iinfo(np.int64).min  # Weighted/GeometricOpponent: no countdown running


def _count(name: str, value: object, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


class Opponent:
    """The configuration shared by grid2op's line attackers (see the module docstring).

    Args:
        branches: the branches it may attack, names or indices (``lines_attacked``).
        budget_per_step: budget earned each step (``opponent_budget_per_ts``).
        attack_cost: budget paid per step of attack (grid2op: 1 per attacked line).
        attack_duration: steps an attack lasts, ``D`` (``opponent_attack_duration``).
        attack_cooldown: ``C`` (``opponent_attack_cooldown``): an attack adds ``C`` to the
            cooldown counter, and the opponent only attacks while the counter is <= ``C``.
        initial_budget: the budget at reset (``opponent_init_budget``).

    Raises:
        ValueError: a value out of its range.
    """

    def __init__(
        self,
        branches: Sequence[int | str],
        *,
        budget_per_step: float = 0.5,
        attack_cost: float = 1.0,
        attack_duration: int = 48,
        attack_cooldown: int = 24,
        initial_budget: float = 0.0,
    ) -> None:
        if isinstance(branches, (str, bytes)) or len(branches) == 0:
            raise ValueError(
                f"branches must be a non-empty list of names or indices, got {branches!r}"
            )
        for name, value in (
            ("budget_per_step", budget_per_step),
            ("attack_cost", attack_cost),
            ("initial_budget", initial_budget),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
        if attack_cost == 0:
            raise ValueError("attack_cost must be > 0 (a free attack has no budget limit)")
        self.branches = list(branches)
        self.budget_per_step = float(budget_per_step)
        self.attack_cost = float(attack_cost)
        self.attack_duration = _count("attack_duration", attack_duration, minimum=1)
        self.attack_cooldown = _count("attack_cooldown", attack_cooldown, minimum=0)
        self.initial_budget = float(initial_budget)
        self.targets = np.zeros(0, dtype=np.int64)  # branch indices, set by bind()

    def bind(self, branch_names: np.ndarray) -> None:
        """Resolve branch names/indices against the grid, in the order given (ValueError
        naming a bad one)."""
        names = {str(n): i for i, n in enumerate(branch_names)}
        targets = []
        for b in self.branches:
            if isinstance(b, str):
                if b not in names:
                    raise ValueError(f"opponent: unknown branch {b!r}; known: {', '.join(names)}")
                targets.append(names[b])
            elif (
                isinstance(b, (int, np.integer)) and not isinstance(b, bool) and 0 <= b < len(names)
            ):
                targets.append(int(b))
            else:
                raise ValueError(
                    f"opponent: branch {b!r} is not a name nor an index in [0, {len(names) - 1}]"
                )
        self.targets = np.asarray(targets, dtype=np.int64)

    def choose(
        self,
        batch: OpponentBatch,
        rows: np.ndarray,
        budget: np.ndarray,
        line_status: np.ndarray,
        rho: RhoOf,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The attack each of ``rows`` (envs asked this step) proposes: (branch or -1,
        duration). ``budget`` is theirs after this step's income."""
        raise NotImplementedError

    def told_attack_goes_on(self, batch: OpponentBatch, rows: np.ndarray) -> None:
        """``rows`` were not asked this step (an attack runs, or the cooldown blocks)."""

    def new_state(self, n_envs: int) -> object:
        """State of its own for ``n_envs`` envs (``OpponentBatch.extra``), or None."""
        return None

    def reset_rows(self, batch: OpponentBatch, rows: np.ndarray, episode_steps: np.ndarray) -> None:
        """``rows`` start an episode of at most ``episode_steps`` steps (their RNGs are set)."""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.branches!r}, budget_per_step={self.budget_per_step}, "
            f"attack_cost={self.attack_cost}, attack_duration={self.attack_duration}, "
            f"attack_cooldown={self.attack_cooldown}, initial_budget={self.initial_budget})"
        )

    def _affordable(self, budget: np.ndarray) -> np.ndarray:
        return self.attack_duration * self.attack_cost <= budget


class RhoOf:
    """``rho`` (``a_or`` / thermal limit) of given rows and branches, computed on demand."""

    def __init__(self, a_or: np.ndarray, inv_limit: np.ndarray) -> None:
        self.a_or = a_or
        self.inv_limit = inv_limit

    def __call__(self, row: int, branches: np.ndarray) -> np.ndarray:
        return self.a_or[row, branches] * self.inv_limit[branches]


class RandomLineOpponent(Opponent):
    """grid2op's ``RandomLineOpponent``: whenever asked, a connected target drawn uniformly,
    attacked for ``attack_duration`` steps (see the module docstring for the rules)."""

    def choose(self, batch, rows, budget, line_status, rho):
        branch = np.full(len(rows), -1, dtype=np.int64)
        targets = self.targets
        for j in np.flatnonzero(self._affordable(budget)).tolist():
            row = int(rows[j])
            candidates = targets[line_status[row, targets]]
            if len(candidates):
                branch[j] = candidates[batch.rngs[row].integers(len(candidates))]
        return branch, np.full(len(rows), self.attack_duration, dtype=np.int64)


class WeightedRandomOpponent(Opponent):
    """grid2op's ``WeightedRandomOpponent``: when asked again after an attack (or a step the
    cooldown blocked), it waits ``U[0, attack_period)`` steps, then attacks a connected target
    with probability proportional to ``rho / rho_normalization``, for ``attack_duration``
    steps.

    Args:
        branches, budget_per_step, attack_cost, attack_duration, attack_cooldown,
            initial_budget: as :class:`Opponent`'s.
        rho_normalization: one positive number per branch (empty: all 1).
        attack_period: the waiting time's bound, >= 1 (grid2op's default: 12 * 24).
    """

    def __init__(
        self,
        branches: Sequence[int | str],
        *,
        rho_normalization: Sequence[float] = (),
        attack_period: int = 12 * 24,
        **kwargs,
    ) -> None:
        super().__init__(branches, **kwargs)
        norm = np.asarray(rho_normalization if len(rho_normalization) else [1.0] * len(branches))
        if norm.shape != (len(self.branches),) or norm.dtype.kind not in "iuf":
            raise ValueError(
                f"rho_normalization must hold one number per branch ({len(self.branches)}), "
                f"got {list(rho_normalization)!r}"
            )
        if not (np.isfinite(norm).all() and (norm > 0).all()):
            raise ValueError(f"rho_normalization must be finite and > 0, got {norm.tolist()!r}")
        self.rho_normalization = norm.astype(np.float64)
        self.attack_period = _count("attack_period", attack_period, minimum=1)

    def choose(self, batch, rows, budget, line_status, rho):
        wait = batch.next_time[rows]
        for j in np.flatnonzero(wait == _UNSET).tolist():
            wait[j] = 1 + batch.rngs[int(rows[j])].integers(self.attack_period)
        wait -= 1
        batch.next_time[rows] = wait
        branch = np.full(len(rows), -1, dtype=np.int64)
        targets = self.targets
        for j in np.flatnonzero((wait <= 0) & self._affordable(budget)).tolist():
            row = int(rows[j])
            up = line_status[row, targets]
            if not up.any():
                continue
            weights = rho(row, targets[up]) / self.rho_normalization[up]
            total = weights.sum()
            if not total > 0:
                continue
            branch[j] = targets[up][batch.rngs[row].choice(len(weights), p=weights / total)]
        return branch, np.full(len(rows), self.attack_duration, dtype=np.int64)

    def told_attack_goes_on(self, batch, rows):
        batch.next_time[rows] = _UNSET

    def __repr__(self) -> str:
        return (
            f"{super().__repr__()[:-1]}, rho_normalization={self.rho_normalization.tolist()}, "
            f"attack_period={self.attack_period})"
        )


def _positive(name: str, value: object, *, strict: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not np.isfinite(value) or value < 0 or (strict and value == 0):
        raise ValueError(f"{name} must be finite and {'>' if strict else '>='} 0, got {value!r}")
    return float(value)


class _Plan:
    """Each env's attack schedule: waiting times and durations (padded rows), how many
    attacks it holds and how many were launched."""

    def __init__(self, n_envs: int) -> None:
        self.waits = np.zeros((n_envs, 4), dtype=np.int64)
        self.durations = np.zeros((n_envs, 4), dtype=np.int64)
        self.count = np.zeros(n_envs, dtype=np.int64)
        self.counter = np.zeros(n_envs, dtype=np.int64)

    def put(self, row: int, waits: list[int], durations: list[int]) -> None:
        k = len(waits)
        if k > self.waits.shape[1]:
            grow = max(k, 2 * self.waits.shape[1]) - self.waits.shape[1]
            self.waits = np.pad(self.waits, ((0, 0), (0, grow)))
            self.durations = np.pad(self.durations, ((0, 0), (0, grow)))
        self.waits[row, :k] = waits
        self.durations[row, :k] = durations
        self.count[row] = k
        self.counter[row] = 0


class GeometricOpponent(Opponent):
    """grid2op's ``GeometricOpponent``: attacks at times drawn from a geometric law, for
    durations drawn per attack, on a target chosen by the rank of its ``rho``.

    With ``h`` steps per hour (``3600 / step_seconds``), at each reset the env draws its
    episode's schedule, over the episode's ``T`` steps: from ``t = 0``, a waiting time ``w``
    (geometric on 1, 2, ..., rate ``1 / (h * (attack_every_xxx_hour -
    average_attack_duration_hour))``); if ``t + w < T`` an attack is scheduled, with the
    duration ``int(h * minimum_attack_duration_hour)`` plus a geometric part (rate
    ``1 / (h * (average_attack_duration_hour - minimum_attack_duration_hour))``), and ``t``
    moves past it; until ``t >= T``.

    Each time the opponent is asked (module docstring, rule 3) and attacks remain, a countdown
    runs: set to ``1 + w`` of the next attack when it starts afresh (at reset, after an attack
    or a step the cooldown blocked), or to ``w`` plus the duration of the previous attack
    when that one failed (too long, or the budget short). It drops by one each time asked;
    at 0 the scheduled attack is launched, which uses it up, with its drawn duration (longer
    than ``attack_duration`` or more than the budget: it fails, as any attack). It only
    attacks if **every** target is connected; otherwise the attack is lost and, the
    countdown being spent, the next one is launched at the next step asked. The target: the
    one with the ``k``-th smallest ``rho`` (``k = 0 .. n-1``) with probability proportional
    to ``exp(k * log(pmax_pmin_ratio) / (n - 1))``, so the most loaded one is
    ``pmax_pmin_ratio`` times as likely as the least.

    Args:
        branches, budget_per_step, attack_cost, attack_duration, attack_cooldown,
            initial_budget: as :class:`Opponent`'s.
        attack_every_xxx_hour: mean hours from an attack's start to the next one's, greater
            than ``average_attack_duration_hour``.
        average_attack_duration_hour: mean duration, greater than the minimum.
        minimum_attack_duration_hour: the fixed part of every duration (>= 0).
        pmax_pmin_ratio: the most loaded target's probability over the least's (> 0).
        step_seconds: a step's duration (grid2op's ``delta_time_seconds``).

    Raises:
        ValueError: a value out of its range, or rates that are not at most one per step.
    """

    def __init__(
        self,
        branches: Sequence[int | str],
        *,
        attack_every_xxx_hour: float = 24,
        average_attack_duration_hour: float = 4,
        minimum_attack_duration_hour: float = 2,
        pmax_pmin_ratio: float = 4,
        step_seconds: float = 300.0,
        **kwargs,
    ) -> None:
        super().__init__(branches, **kwargs)
        every = _positive("attack_every_xxx_hour", attack_every_xxx_hour)
        average = _positive("average_attack_duration_hour", average_attack_duration_hour)
        minimum = _positive(
            "minimum_attack_duration_hour", minimum_attack_duration_hour, strict=False
        )
        self.pmax_pmin_ratio = _positive("pmax_pmin_ratio", pmax_pmin_ratio)
        self.step_seconds = _positive("step_seconds", step_seconds)
        if not average > minimum:
            raise ValueError(
                f"average_attack_duration_hour ({average}) must be greater than "
                f"minimum_attack_duration_hour ({minimum})"
            )
        if not every > average:
            raise ValueError(
                f"attack_every_xxx_hour ({every}) must be greater than "
                f"average_attack_duration_hour ({average})"
            )
        per_hour = 3600.0 / self.step_seconds
        for what, hours in (
            ("attack_every_xxx_hour - average_attack_duration_hour", every - average),
            ("average_attack_duration_hour - minimum_attack_duration_hour", average - minimum),
        ):
            if per_hour * hours < 1:
                raise ValueError(f"{what} must be at least one step, got {hours} hours")
        self.attack_every_xxx_hour = every
        self.average_attack_duration_hour = average
        self.minimum_attack_duration_hour = minimum
        self.attack_rate = 1.0 / (per_hour * (every - average))
        self.recovery_rate = 1.0 / (per_hour * (average - minimum))
        self.minimum_steps = int(minimum * per_hour)

    def new_state(self, n_envs: int) -> _Plan:
        return _Plan(n_envs)

    def reset_rows(self, batch, rows, episode_steps):
        plan: _Plan = batch.extra
        for row, horizon in zip(rows.tolist(), episode_steps.tolist(), strict=True):
            plan.put(row, *self.schedule(batch.rngs[row], horizon))

    def schedule(self, rng: np.random.Generator, horizon: int) -> tuple[list[int], list[int]]:
        """One episode's waiting times and durations, drawn from ``rng`` (class docstring)."""
        waits: list[int] = []
        durations: list[int] = []
        t = 0
        while t < horizon:
            wait = int(rng.geometric(self.attack_rate))
            t += wait
            if t < horizon:
                duration = self.minimum_steps + int(rng.geometric(self.recovery_rate))
                waits.append(wait)
                durations.append(duration)
                t += duration
        return waits, durations

    def choose(self, batch, rows, budget, line_status, rho):
        plan: _Plan = batch.extra
        branch = np.full(len(rows), -1, dtype=np.int64)
        duration = np.full(len(rows), self.attack_duration, dtype=np.int64)
        counter = plan.counter[rows]
        j = np.flatnonzero(counter < plan.count[rows])
        if not len(j):
            return branch, duration
        r, c = rows[j], counter[j]
        countdown = batch.next_time[r]
        after_fail = batch.previous_fails[r] & (c > 0)
        countdown[after_fail] = (
            plan.waits[r, c][after_fail] + plan.durations[r, np.maximum(c - 1, 0)][after_fail]
        )
        fresh = countdown == _UNSET
        countdown[fresh] = 1 + plan.waits[r, c][fresh]
        countdown -= 1
        batch.next_time[r] = countdown
        duration[j] = plan.durations[r, c]
        launched = countdown <= 0
        plan.counter[r[launched]] += 1
        targets = self.targets
        n = len(targets)
        for k in np.flatnonzero(launched).tolist():
            row = int(r[k])
            if not line_status[row, targets].all():
                continue  # grid2op's rule: every target connected, or no attack
            if n == 1:
                branch[j[k]] = targets[0]
                continue
            ranks = np.empty(n, dtype=np.int64)
            ranks[np.argsort(rho(row, targets), kind="stable")] = np.arange(n)
            weights = np.exp(np.log(self.pmax_pmin_ratio) / (n - 1) * ranks)
            branch[j[k]] = targets[batch.rngs[row].choice(n, p=weights / weights.sum())]
        return branch, duration

    def told_attack_goes_on(self, batch, rows):
        batch.next_time[rows] = _UNSET

    def __repr__(self) -> str:
        return (
            f"{super().__repr__()[:-1]}, attack_every_xxx_hour={self.attack_every_xxx_hour}, "
            f"average_attack_duration_hour={self.average_attack_duration_hour}, "
            f"minimum_attack_duration_hour={self.minimum_attack_duration_hour}, "
            f"pmax_pmin_ratio={self.pmax_pmin_ratio}, step_seconds={self.step_seconds})"
        )


class OpponentRow(NamedTuple):
    """One env's opponent (:class:`OpponentBatch`'s row), for snapshots: its counters, its
    RNG's state and, for a :class:`GeometricOpponent`, the episode's schedule (a named
    tuple, as the snapshot's other parts: cheap to build)."""

    budget: float
    attacked: int  # branch under attack, -1: none
    remaining: int
    cooldown: int
    previous_fails: bool
    next_time: int
    rng: RngState
    waits: np.ndarray | None = None  # the schedule's waiting times (None: no schedule)
    durations: np.ndarray | None = None
    counter: int = 0  # attacks of the schedule launched


class OpponentBatch:
    """The state of one opponent per env of a batch, stepped by the rules of the module
    docstring for every env at once."""

    def __init__(self, config: Opponent, n_envs: int) -> None:
        self.config = config
        self.budget = np.full(n_envs, config.initial_budget)
        self.attacked = np.full(n_envs, -1, dtype=np.int64)  # branch under attack, -1 = none
        self.remaining = np.zeros(n_envs, dtype=np.int64)  # steps it stays down, this one too
        self.cooldown = np.full(n_envs, config.attack_cooldown, dtype=np.int64)
        self.previous_fails = np.zeros(n_envs, dtype=bool)  # the last proposal failed
        self.next_time = np.full(n_envs, _UNSET, dtype=np.int64)  # a waiting opponent's
        self.rngs: list[np.random.Generator] = [np.random.default_rng(0)] * n_envs
        self.extra = config.new_state(n_envs)  # a class's own state (GeometricOpponent's plan)

    def reset(
        self,
        rows: np.ndarray,
        rngs: list[np.random.Generator],
        episode_steps: np.ndarray | None = None,
    ) -> None:
        """Start the episodes of ``rows``: initial budget, no attack, their RNGs.
        ``episode_steps``: the most steps each episode may play (GeometricOpponent needs it)."""
        c = self.config
        self.budget[rows] = c.initial_budget
        self.attacked[rows] = -1
        self.remaining[rows] = 0
        self.cooldown[rows] = c.attack_cooldown
        self.previous_fails[rows] = False
        self.next_time[rows] = _UNSET
        for row, rng in zip(rows.tolist(), rngs, strict=True):
            self.rngs[row] = rng
        if self.extra is not None:
            if episode_steps is None:
                raise ValueError(f"{type(c).__name__} needs each episode's length at reset")
            c.reset_rows(self, rows, np.asarray(episode_steps, dtype=np.int64))

    def step(
        self, rows: np.ndarray, line_status: np.ndarray, a_or: np.ndarray, inv_limit: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Advance ``rows`` one step, from the state the step starts from.

        Returns:
            Per row: the branch newly attacked (-1: none), the branch under attack this step
            (new or going on; -1: none) and the attack's remaining steps, this one included
            (0: none).
        """
        c = self.config
        budget = self.budget[rows] + c.budget_per_step
        remaining = self.remaining[rows]
        remaining = remaining - (remaining > 0)
        cooldown = self.cooldown[rows]
        cooldown = cooldown - (cooldown > 0)
        going_on = remaining > 0
        asked = ~going_on & (cooldown <= c.attack_cooldown)
        new = np.full(len(rows), -1, dtype=np.int64)
        if not asked.all():
            quiet = rows[~asked]
            self.previous_fails[quiet] = False
            c.told_attack_goes_on(self, quiet)
        if asked.any():
            j = np.flatnonzero(asked)
            branch, duration = c.choose(
                self, rows[j], budget[j], line_status, RhoOf(a_or, inv_limit)
            )
            proposed = branch >= 0
            fails = proposed & (
                (duration > c.attack_duration) | (duration * c.attack_cost > budget[j])
            )
            self.previous_fails[rows[j]] = fails
            ok = proposed & ~fails
            started = j[ok]
            new[started] = branch[ok]
            remaining[started] = duration[ok]
            cooldown[started] += c.attack_cooldown
        attacked = np.where(going_on, self.attacked[rows], new)
        budget -= c.attack_cost * (attacked >= 0)
        self.budget[rows] = budget
        self.remaining[rows] = remaining
        self.cooldown[rows] = cooldown
        self.attacked[rows] = attacked
        return new, attacked, np.where(attacked >= 0, remaining, 0)

    def row_state(self, row: int) -> OpponentRow:
        """Env ``row``'s opponent, as plain values (its schedule copied)."""
        plan = self.extra
        schedule = {}
        if isinstance(plan, _Plan):
            k = int(plan.count[row])
            schedule = {
                "waits": plan.waits[row, :k].copy(),
                "durations": plan.durations[row, :k].copy(),
                "counter": int(plan.counter[row]),
            }
        return OpponentRow(
            float(self.budget[row]), int(self.attacked[row]), int(self.remaining[row]),
            int(self.cooldown[row]), bool(self.previous_fails[row]), int(self.next_time[row]),
            RngState.of(self.rngs[row]), **schedule,
        )  # fmt: skip

    def restore_row(self, row: int, state: OpponentRow) -> None:
        """Env ``row``'s opponent becomes ``state`` (a :meth:`row_state`), with an RNG of
        its own (rows may share the one they start with).

        Raises:
            ValueError: a schedule given to an opponent without one, or none to one with one.
        """
        plan = self.extra
        if isinstance(plan, _Plan) != (state.waits is not None):
            raise ValueError(
                f"snapshot field 'opponent.waits': this env's {type(self.config).__name__} "
                f"{'draws' if isinstance(plan, _Plan) else 'has no'} attack schedule"
            )
        rng = np.random.Generator(np.random.PCG64(0))
        state.rng.put(rng)
        self.rngs[row] = rng
        self.budget[row], self.attacked[row] = state.budget, state.attacked
        self.remaining[row], self.cooldown[row] = state.remaining, state.cooldown
        self.previous_fails[row], self.next_time[row] = state.previous_fails, state.next_time
        if isinstance(plan, _Plan):
            plan.put(row, state.waits.tolist(), state.durations.tolist())
            plan.counter[row] = state.counter

    def info(self, row: int) -> dict:
        """One env's opponent: budget, branch under attack (-1: none), the attack's remaining
        steps (the last one played included) and the cooldown counter."""
        return {
            "budget": float(self.budget[row]),
            "attacked_branch": int(self.attacked[row]),
            "remaining_steps": int(self.remaining[row]),
            "cooldown": int(self.cooldown[row]),
        }

"""The opponents of grid2op's datasets, in grid_vec and in grid2op, side by side.

Both sides play do-nothing on the folder with its own opponent (``config.py``), without
maintenance (grid_vec has none: grid2op reads the scenarios with
``GridStateFromFileWithForecastsWithoutMaintenance``), restarting episodes as they end. The
draws differ (another generator), so the attacks are compared as statistics:

* the attack rate, ``k / n`` (attacks started per step played): a binomial proportion; the
  two rates may differ by at most ``Z`` standard errors of their difference,
  ``sqrt(p (1 - p) (1/n1 + 1/n2))`` with ``p`` the pooled rate;
* the mean attack duration (steps each attack kept its line out; an episode that ends cuts
  it short): a difference of means, within ``Z * sqrt(s1**2 / k1 + s2**2 / k2)`` (sample
  standard deviations ``s``; when no attack was cut short on either side, both are exact);
* the budget spent per step: a sum over attacks of their spends ``c_i`` (compound counts),
  whose standard error is ``sqrt(sum c_i**2) / n`` on each side; the two differ by at most
  ``Z`` times the root sum of squares. Each side also spends exactly one unit per attacked
  step (``BaseActionBudget``);
* which lines are attacked (the rho-weighted choice of ``WeightedRandomOpponent``, the
  uniform one of ``RandomLineOpponent``, the rho-rank one of ``GeometricOpponent``): for
  each target line, its share of the attacks on both sides, binomial proportions compared
  as the rates are;
* for ``GeometricOpponent`` (its schedule is drawn per episode), also when the attacks start:
  the mean step of the episode at which they start, a difference of means as above.

``Z = 4`` (a false alarm about once in 16,000 comparisons for normal errors). Seeds are fixed,
so the test is deterministic; grid_vec replays a seed exactly and another seed plays other
attacks.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from env_helpers import grid2op_env

import grid_vec

pytestmark = pytest.mark.grid2op

Z = 4.0


@pytest.fixture(scope="module")
def data():
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    pytest.importorskip("lightsim2grid")
    return Path(grid2op.__file__).parent / "data"


@dataclass
class Attacks:
    """What one side's opponent did over ``steps`` do-nothing steps."""

    steps: int = 0
    starts: list[tuple[int, str]] = field(default_factory=list)  # (step, line name)
    durations: list[int] = field(default_factory=list)  # steps each attack kept its line out
    spent: float = 0.0  # budget spent
    episodes: int = 1  # episodes begun
    in_episode: list[int] = field(default_factory=list)  # step of its episode each one starts
    _played: int = 0  # steps played in the episode

    def attacked(self, step: int, line: str | None, new: bool, spent: float) -> None:
        """Record a step: the line under attack (None: none), a new attack or not."""
        self.steps += 1
        self._played += 1
        self.spent += spent
        if line is None:
            return
        if new:
            self.starts.append((step, line))
            self.in_episode.append(self._played)
            self.durations.append(0)
        if self.durations:
            self.durations[-1] += 1

    def new_episode(self) -> None:
        self.episodes += 1
        self._played = 0


def _grid2op_attacks(path: Path, n_steps: int, seed: int) -> Attacks:
    env = grid2op_env(path, maintenance=False)  # the folder's opponent
    env.seed(seed)
    env.reset()
    space = env._oppSpace
    income = float(env._opponent_budget_per_ts)
    out = Attacks()
    do_nothing = env.action_space()
    last = 0  # the remaining steps of the attack of the step before (0: none)
    for step in range(n_steps):
        before = float(space.budget)
        _, _, done, info = env.step(do_nothing)
        lines = info["opponent_attack_line"]
        duration = info["opponent_attack_duration"]
        line = None
        if lines is not None and duration > 0:
            line = str(env.name_line[np.flatnonzero(lines)[0]])
        spent = round(before + income - float(space.budget), 3) if line is not None else 0.0
        # an attack going on has one step less left than the step before; a new one does not
        out.attacked(step, line, line is not None and duration != last - 1, spent)
        last = duration if line is not None else 0
        if done:
            env.reset()
            out.new_episode()
            last = 0
    env.close()
    return out


def _grid_vec_attacks(env, n_steps: int, seed: int) -> Attacks:
    names = [str(n) for n in env.unwrapped.model.branch_names]
    income = env.unwrapped.opponent.budget_per_step
    env.reset(seed=seed)
    out = Attacks()
    for step in range(n_steps):
        before = env.opponent_info()["budget"]
        _, _, term, trunc, info = env.step(0)
        state = env.opponent_info()
        under = state["attacked_branch"] if state["remaining_steps"] > 0 else -1
        line = names[under] if under >= 0 else None
        spent = round(before + income - state["budget"], 9) if line is not None else 0.0
        out.attacked(step, line, info["attacked_branch"] >= 0, spent)
        if term or trunc:
            env.reset()
            out.new_episode()
    return out


def _assert_rates_close(k1: int, n1: int, k2: int, n2: int, what: str) -> None:
    p = (k1 + k2) / (n1 + n2)
    se = math.sqrt(max(p * (1 - p), 1e-12) * (1 / n1 + 1 / n2))
    diff = abs(k1 / n1 - k2 / n2)
    assert diff <= Z * se, f"{what}: {k1}/{n1} against grid2op's {k2}/{n2} ({diff / se:.1f} se)"


def _assert_means_close(x1: list[int], x2: list[int], what: str) -> None:
    a, b = np.asarray(x1, float), np.asarray(x2, float)
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    diff = abs(a.mean() - b.mean())
    assert diff <= Z * se + 1e-9, f"{what}: {a.mean():.2f} against grid2op's {b.mean():.2f}"


def _compare(ours: Attacks, theirs: Attacks, targets: list[str]) -> None:
    k1, k2 = len(ours.starts), len(theirs.starts)
    assert k1 >= 10 and k2 >= 10, (k1, k2)  # enough attacks to compare anything
    _assert_rates_close(k1, ours.steps, k2, theirs.steps, "attacks per step")
    _assert_means_close(ours.durations, theirs.durations, "mean attack duration")
    for side in (ours, theirs):  # one unit of BaseActionBudget per attacked step
        assert side.spent == pytest.approx(sum(side.durations), abs=1e-3)
    se = math.sqrt(sum(d * d for d in ours.durations)) / ours.steps
    se_g = math.sqrt(sum(d * d for d in theirs.durations)) / theirs.steps
    diff = abs(ours.spent / ours.steps - theirs.spent / theirs.steps)
    assert diff <= Z * math.hypot(se, se_g), "budget spent per step"
    for line in targets:
        c1 = sum(name == line for _, name in ours.starts)
        c2 = sum(name == line for _, name in theirs.starts)
        _assert_rates_close(c1, k1, c2, k2, f"share of the attacks on {line}")
    assert {name for _, name in ours.starts} <= set(targets)


def _make(path: Path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return grid_vec.make(path, **kwargs)


def test_rte_case14_opponent_attacks_as_grid2op(data):
    """grid2op's RandomLineOpponent on rte_case14_opponent: ~6 attacks per 1,000 steps."""
    path = data / "rte_case14_opponent"
    env = _make(path)
    assert type(env.opponent).__name__ == "RandomLineOpponent"
    n = 8000
    ours = _grid_vec_attacks(env, n, seed=0)
    theirs = _grid2op_attacks(path, n, seed=0)
    _compare(ours, theirs, env.opponent.branches)


def test_neurips_track1_weighted_opponent_attacks_as_grid2op(data):
    """grid2op's WeightedRandomOpponent on l2rpn_neurips_2020_track1 (rho-weighted
    targets, a uniform wait after each cooldown)."""
    path = data / "l2rpn_neurips_2020_track1"
    env = _make(path)
    assert type(env.opponent).__name__ == "WeightedRandomOpponent"
    n = 12000
    ours = _grid_vec_attacks(env, n, seed=1)
    theirs = _grid2op_attacks(path, n, seed=1)
    _compare(ours, theirs, env.opponent.branches)


def test_icaps_2021_geometric_opponent_attacks_as_grid2op(data):
    """grid2op's GeometricOpponent on l2rpn_icaps_2021 (one-day scenarios of 287 steps): about
    0.75 attacks a day, each drawn to start after a geometric wait (mean 20 h) and to last
    1 h plus a geometric part (mean 3 h; one in ten is longer than the 8 h allowed and fails),
    only when all ten target lines are connected, on a target chosen by its rho rank."""
    path = data / "l2rpn_icaps_2021"
    env = _make(path)
    assert type(env.opponent).__name__ == "GeometricOpponent"
    n = 16000
    ours = _grid_vec_attacks(env, n, seed=2)
    theirs = _grid2op_attacks(path, n, seed=2)
    _compare(ours, theirs, env.opponent.branches)
    _assert_means_close(ours.in_episode, theirs.in_episode, "mean step of an attack's start")
    assert max(ours.durations) <= 96 and min(ours.durations) >= 1


@pytest.mark.parametrize(
    "name", ["rte_case14_opponent", "l2rpn_neurips_2020_track1", "l2rpn_icaps_2021"]
)
def test_a_seed_replays_its_attacks(data, name):
    env = _make(data / name)
    first = _grid_vec_attacks(env, 1500, seed=3)
    again = _grid_vec_attacks(env, 1500, seed=3)
    other = _grid_vec_attacks(env, 1500, seed=4)
    assert first.starts and first.starts == again.starts
    assert first.durations == again.durations and first.spent == again.spent
    assert other.starts != first.starts


def test_opponent_none_switches_the_folders_opponent_off(data):
    env = _make(data / "rte_case14_opponent", opponent=None)
    assert env.opponent is None and env.opponent_info() is None
    env.reset(seed=0)
    for _ in range(400):
        _, _, term, trunc, info = env.step(0)
        assert info["attacked_branch"] == -1
        if term or trunc:
            env.reset()


@pytest.mark.parametrize(
    ("income", "duration", "cooldown"),
    [(1.0, 3, 5), (2.0, 3, 10), (0.5, 48, 288), (1.0, 4, 2), (0.3, 2, 0), (0.16667, 48, 288)],
)
def test_budget_and_cooldown_rules_are_grid2op_opponent_spaces(data, income, duration, cooldown):
    """grid2op's own OpponentSpace (its budget, duration and cooldown accounting) with an
    opponent that always proposes an attack, against OpponentBatch with a target always
    connected: the same attacks, budgets and cooldown counters, step by step."""
    from grid2op.Opponent.opponentSpace import OpponentSpace

    from grid_vec.core.rules.opponent import OpponentBatch, RandomLineOpponent

    class Attack:
        def get_topological_impact(self, *args, **kwargs):
            return None

    class AlwaysAttacks:
        def reset(self, budget):
            pass

        def attack(self, *args):
            return Attack(), None

        def tell_attack_continues(self, *args):
            pass

    class OnePerAttack:  # BaseActionBudget's cost of a one-line attack
        action_space = type("ActionSpace", (), {})  # called once for a do-nothing

        def __call__(self, attack):
            return 0 if attack is None else 1

    space = OpponentSpace(OnePerAttack(), 0.0, AlwaysAttacks(), duration, cooldown, income)
    space.reset()
    config = RandomLineOpponent(
        ["a"], budget_per_step=income, attack_duration=duration, attack_cooldown=cooldown
    )
    config.bind(np.array(["a"]))
    ours = OpponentBatch(config, 1)
    ours.reset(np.array([0]), [np.random.default_rng(0)])
    row, up, a_or, inv = np.array([0]), np.ones((1, 1), bool), np.ones((1, 1)), np.ones(1)
    observation = SimpleNamespace(line_status=np.ones(1, bool))
    for _ in range(3000):
        attack, remaining = space.attack(observation, None, None)
        _, under, our_remaining = ours.step(row, up, a_or, inv)
        assert (under[0] >= 0) == (attack is not None)
        assert our_remaining[0] == remaining
        assert ours.budget[0] == pytest.approx(float(space.budget), abs=1e-6)
        assert ours.cooldown[0] == space.current_attack_cooldown


class _ScriptedDraws:
    """A generator whose geometric draws are given (and whose ``p`` are recorded)."""

    def __init__(self, values):
        self.values = list(values)
        self.rates = []

    def geometric(self, p):
        self.rates.append(p)
        return self.values.pop(0)


def _grid2op_geometric(names, targets, horizon, prng, **kwargs):
    """grid2op's GeometricOpponent initialised without an environment (fakes of what it
    reads: the line names, a step duration and the episode's length)."""
    from grid2op.Opponent import GeometricOpponent

    class Attack:
        def __init__(self, line):
            self.line = line

        def get_topological_impact(self, *args, **kwargs):
            return None

    class ActionSpace:
        name_line = np.asarray(names)

        def __call__(self, what=None):
            lines = (what or {}).get("set_line_status", [])
            return Attack(int(lines[0][0]) if lines else None)

    env = SimpleNamespace(delta_time_seconds=300.0, max_episode_duration=lambda: np.int32(horizon))
    opponent = GeometricOpponent(ActionSpace())
    opponent.space_prng = prng
    opponent.init(env, lines_attacked=[names[t] for t in targets], **kwargs)
    return opponent


GEOMETRIC_KWARGS = {
    "attack_every_xxx_hour": 3.0,
    "average_attack_duration_hour": 1.5,
    "minimum_attack_duration_hour": 1.0,
}


def test_geometric_schedule_is_grid2op_given_the_same_draws(data):
    """grid2op's GeometricOpponent and grid_vec's draw the same schedule (waits, durations,
    which attacks fit in the episode) from the same geometric draws, with the same rates."""
    from grid_vec.core.rules.opponent import GeometricOpponent

    names = [f"l{i}" for i in range(4)]
    draws = np.random.default_rng(0).integers(1, 40, 4000).tolist()
    for horizon in (1, 20, 287, 2000):
        theirs = _ScriptedDraws(draws)
        opponent = _grid2op_geometric(names, [1, 2], horizon, theirs, **GEOMETRIC_KWARGS)
        ours = _ScriptedDraws(draws)
        config = GeometricOpponent([1, 2], **GEOMETRIC_KWARGS)
        waits, durations = config.schedule(ours, horizon)
        assert waits == opponent._attack_waiting_times.tolist()
        assert durations == opponent._attack_durations.tolist()
        assert ours.rates == pytest.approx(theirs.rates, rel=1e-12)
        assert len(ours.values) == len(theirs.values)  # as many draws


@pytest.mark.parametrize(
    ("targets", "income", "duration", "cooldown", "seed"),
    [
        ([1], 1.0, 10**6, 0, 0),
        ([0, 1, 2], 1.0, 10**6, 0, 1),
        ([0, 1, 2], 1.0, 20, 0, 2),  # drawn durations over 20 fail
        ([0, 2], 1.0, 30, 100, 3),  # the cooldown counter blocks
        ([1, 3], 0.05, 40, 5, 4),  # the budget runs short
    ],
)
def test_geometric_rules_are_grid2op_step_by_step(data, targets, income, duration, cooldown, seed):
    """grid2op's GeometricOpponent inside its OpponentSpace against OpponentBatch, with the
    schedule grid2op drew copied into grid_vec's and targets going down and up at random:
    the same steps attacked (the same line when there is one target), remaining steps,
    budgets, cooldown counters and attacks used up, step by step."""
    from grid2op.Opponent.opponentSpace import OpponentSpace

    from grid_vec.core.rules.opponent import _UNSET, GeometricOpponent, OpponentBatch

    class OnePerAttack:  # BaseActionBudget's cost of a one-line attack
        action_space = type("ActionSpace", (), {})

        def __call__(self, attack):
            return 0 if attack is None else 1

    names = [f"l{i}" for i in range(4)]
    horizon = 3000
    opponent = _grid2op_geometric(
        names, targets, horizon, np.random.RandomState(seed), **GEOMETRIC_KWARGS
    )
    space = OpponentSpace(OnePerAttack(), 10.0, opponent, duration, cooldown, income)
    space.reset()  # grid2op draws the episode's schedule
    waits, durations = opponent._attack_waiting_times, opponent._attack_durations
    assert len(waits) > 20
    config = GeometricOpponent(
        targets, budget_per_step=income, attack_duration=duration, attack_cooldown=cooldown,
        initial_budget=10.0, **GEOMETRIC_KWARGS,
    )  # fmt: skip
    config.bind(np.array(names))
    ours = OpponentBatch(config, 1)
    ours.reset(np.array([0]), [np.random.default_rng(seed)], np.array([horizon]))
    ours.extra.put(0, waits.tolist(), durations.tolist())
    rng = np.random.default_rng(100 + seed)
    status = np.ones(4, dtype=bool)
    row, inv = np.array([0]), np.ones(4)
    attacked = lost = 0
    for _ in range(horizon):
        flip = rng.random(4) < 0.002  # a target goes down now and then, or comes back
        status = np.where(flip, ~status, status) | (rng.random(4) < 0.05)
        rho = rng.random(4)
        observation = SimpleNamespace(line_status=status.copy(), rho=rho)
        attack, remaining = space.attack(observation, None, None)
        _, under, our_remaining = ours.step(row, status[None], rho[None], inv)
        assert (under[0] >= 0) == (attack is not None)
        if attack is not None and len(targets) == 1:
            assert under[0] == attack.line
        assert our_remaining[0] == remaining
        assert ours.budget[0] == pytest.approx(float(space.budget), abs=1e-6)
        assert ours.cooldown[0] == space.current_attack_cooldown
        assert ours.extra.counter[0] == opponent._attack_counter
        countdown = opponent._next_attack_time
        assert ours.next_time[0] == (_UNSET if countdown is None else countdown)
        attacked += attack is not None
        lost += not status[targets].all()
    assert attacked > 0 and lost > 0

"""A batch of N envs plays exactly what N separate GridEnvs play with the same seeds and
actions: observations, rewards, terminations, truncations, infos and tripped branches, for
N = 1, 2, 7, 32, under do-nothing, random catalog actions, redispatch, the opponents and
cascades, with episodes ending at different steps (the reference: gymnasium's
SyncVectorEnv over GridEnvs). The same holds for GridVecEnv's workers hosting one batch for
their slice of envs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from batch_compare import OutageSource, assert_same, cascade_limits, compare, factory
from gymnasium.vector import AutoresetMode

from grid_vec.core.rules.opponent import (
    GeometricOpponent,
    RandomLineOpponent,
    WeightedRandomOpponent,
)
from grid_vec.env.embedded import embedded_model
from grid_vec.env.make import GridEnvFactory
from grid_vec.vector.batched import BatchedGridVecEnv


@pytest.fixture(scope="module")
def case14():
    return embedded_model("case14")


def _factory(case14, outages: bool = False, **kwargs) -> GridEnvFactory:
    """As ``make_vec`` builds them: one picklable factory, handed to every env."""
    source = OutageSource(case14, seed=0, length=40) if outages else None
    return factory(case14, source=source, **kwargs)


SETTINGS = {
    "do-nothing": ({}, "nothing"),
    "random catalog actions": ({}, "catalog"),
    "redispatch": ({"action_type": "redispatch"}, "box"),
    "opponent": (
        {
            "opponent": RandomLineOpponent(
                list(range(8)),
                budget_per_step=1.0,
                attack_cost=1.0,
                attack_duration=3,
                attack_cooldown=2,
            )
        },
        "catalog",
    ),
    "weighted opponent": (
        {
            "opponent": WeightedRandomOpponent(
                list(range(10)),
                rho_normalization=[0.5, 1, 2, 1, 0.5, 1, 2, 1, 0.5, 1],
                attack_period=4,
                budget_per_step=1.0,
                attack_duration=3,
                attack_cooldown=2,
            )
        },
        "catalog",
    ),
    # a schedule drawn per episode (waits of 3 steps on average, durations of 1 + 2; those
    # over 3 fail), attacks only while all 8 targets are up (random actions cut some)
    "geometric opponent": (
        {
            "opponent": GeometricOpponent(
                list(range(8)),
                attack_every_xxx_hour=0.5,
                average_attack_duration_hour=0.25,
                minimum_attack_duration_hour=1 / 12,
                budget_per_step=1.0,
                attack_duration=3,
                attack_cooldown=1,
            )
        },
        "catalog",
    ),
    "cascades": ({"cascade": True, "max_iter": 25}, "catalog"),
    # every grid2op reward (batched) and a custom one (called per env), under cascades
    "grid2op rewards": ({"cascade": True, "max_iter": 25, "grid2op_rewards": True}, "catalog"),
    "maintenance": ({"outages": True}, "catalog"),
}


def _refusals(inputs, terminated: bool) -> float:
    """A custom reward (per env): what it reads of the action, flags and position."""
    assert np.ndim(inputs.rho) == 1
    refused = 1.0 * inputs.is_illegal + 2.0 * inputs.is_ambiguous
    return refused - terminated + 0.01 * inputs.acted_line + 1e-4 * inputs.step


def _grid2op_rewards(model) -> dict:
    from grid_vec.core.rewards.grid2op import GRID2OP_REWARDS

    # the embedded grid has no generator costs, and an unbounded slack
    priced = {"gen_cost_per_MW": np.arange(1.0, model.n_gen + 1) * 10, "gen_pmax": [300.0] * 5}
    rewards = {
        name: cls(**priced) if name in ("RedispReward", "EconomicReward", "L2RPNSandBoxScore")
        else name
        for name, cls in GRID2OP_REWARDS.items()
    }  # fmt: skip
    return {"reward": "L2RPNReward", "other_rewards": {**rewards, "refusals": _refusals}}


def _play(
    case14,
    n: int,
    setting: str,
    mode=AutoresetMode.NEXT_STEP,
    steps: int = 45,
    kind: str = "batched",
) -> int:
    kwargs, policy = SETTINGS[setting]
    kwargs = dict(kwargs)
    if kwargs.pop("cascade", False):
        kwargs["thermal_limits"] = cascade_limits(case14)
    if kwargs.pop("grid2op_rewards", False):
        kwargs.update(_grid2op_rewards(case14))
    return _compare(_factory(case14, **kwargs), n, policy, mode, steps, kind)


def _actions(policy: str) -> Callable[..., Any]:
    """The actions of a named policy: ``(rng, n, vector env, step) -> actions``."""

    def act(rng: np.random.Generator, n: int, env: Any, t: int) -> Any:
        if policy == "nothing":
            return np.zeros(n, dtype=np.int64)
        if policy == "catalog":
            return rng.integers(0, env.single_action_space.n, n)
        if policy == "sample":  # any space: its own seeded draws
            if t == 0:
                env.action_space.seed(n)
            return env.action_space.sample()
        return rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32)

    return act


def _compare(
    env_factory: GridEnvFactory, n: int, policy: str, mode: AutoresetMode, steps: int, kind: str
) -> int:
    """Play the same actions on ``n`` envs of ``env_factory`` batched and on SyncVectorEnv;
    assert every output equal to 1e-6; return the episodes ended."""
    return compare(env_factory, n, kind, mode, steps, _actions(policy), atol=1e-6)[1]


@pytest.mark.parametrize("kind", ["batched", "workers"])
@pytest.mark.parametrize("n", [1, 2, 7])
def test_batch_matches_separate_envs_under_redispatch_and_curtailment(n, kind):
    """grid2op's dispatch rules on the sandbox (renewables to curtail): whole-box random
    redispatch and curtailment, alone and with topology actions (the combined ``Dict``
    space), infeasible dispatches ending episodes at different steps."""
    pytest.importorskip("grid2op")
    from grid_vec.bench.workloads import sandbox_path
    from grid_vec.env.make import env_factory

    for action_type, policy in (("continuous", "box"), ("combined", "sample")):
        built = env_factory(sandbox_path(), action_type=action_type, reward="flat", opponent=None)
        ends = _compare(built, n, policy, AutoresetMode.NEXT_STEP, 40, kind)
        assert ends > 0


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("n", [1, 2, 7])
def test_batch_matches_separate_envs(case14, n, setting):
    ends = _play(case14, n, setting)
    if setting in ("random catalog actions", "cascades", "grid2op rewards"):
        assert ends > 0  # episodes did end (at different steps) within the run


def test_outage_source_plays_outages(case14):
    """The maintenance setting's envs do meet maintenance and hazards."""
    env = _factory(case14, outages=True)()
    seen = set()
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        for _ in range(20):
            view = env.view(obs)
            seen.update(np.flatnonzero(view.time_next_maintenance == 0).tolist())
            obs, _, terminated, truncated, _ = env.step(0)
            if terminated or truncated:
                break
    assert seen


BATCH_OF_32 = (
    "random catalog actions", "cascades", "opponent", "weighted opponent",
    "geometric opponent", "grid2op rewards", "maintenance",
)  # fmt: skip


@pytest.mark.parametrize("setting", BATCH_OF_32)
def test_batch_of_32_matches_separate_envs(case14, setting):
    assert _play(case14, 32, setting, steps=30) > 0


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_batch_matches_separate_envs_in_each_autoreset_mode(case14, mode):
    assert _play(case14, 7, "cascades", mode=mode) > 0


def test_batch_trajectory_does_not_depend_on_the_batch(case14):
    """Env 3 of a batch of 7 plays what env 0 of a batch of 1 plays with the same seed."""
    factory = _factory(case14, thermal_limits=cascade_limits(case14))
    seven = BatchedGridVecEnv.from_factory(factory, 7)
    one = BatchedGridVecEnv.from_factory(factory, 1)
    obs7, _ = seven.reset(seed=[1, 2, 3, 11, 5, 6, 7])
    obs1, _ = one.reset(seed=11)
    rng = np.random.default_rng(0)
    for _ in range(40):
        a = rng.integers(0, seven.single_action_space.n, 7)
        obs7, r7, *_ = seven.step(a)
        obs1, r1, *_ = one.step(a[3:4])
        assert np.array_equal(obs7[3], obs1[0]) and r7[3] == r1[0]


def test_batched_actions_are_validated_before_any_env_steps(case14):
    envs = BatchedGridVecEnv.from_factory(_factory(case14), 3)
    envs.reset(seed=0)
    before = envs._batch.counts["steps"].copy()
    with pytest.raises(ValueError, match="actions must be"):
        envs.step(np.array([0, 1, 10_000]))
    with pytest.raises(ValueError, match="actions must be"):
        envs.step(np.zeros(2, dtype=np.int64))
    assert np.array_equal(envs._batch.counts["steps"], before)


def test_batched_grid_commands_match_each_env(case14):
    """simulate, set_scenario_id, set_parameters and timings act per env as on GridEnvs."""
    factory = _factory(case14, thermal_limits=cascade_limits(case14))
    batched = BatchedGridVecEnv.from_factory(factory, 3)
    singles = [factory() for _ in range(3)]
    batched.set_scenario_id([4, 5, "synthetic_0006"])
    for env, sid in zip(singles, (4, 5, 6), strict=True):
        env.set_scenario_id(sid)
    obs, info = batched.reset(seed=2)
    assert list(info["scenario_id"]) == [4, 5, 6]
    for i, env in enumerate(singles):
        assert_same(obs[i], env.reset(seed=2 + i)[0], "reset")
    actions = np.array([3, 40, 0])
    sim_obs, sim_rewards, sim_term, sim_infos = batched.simulate(actions)
    for i, env in enumerate(singles):
        o, r, term, info = env.simulate(int(actions[i]))
        assert_same(sim_obs[i], o, "simulate obs")
        assert sim_rewards[i] == r and sim_term[i] == term
        assert_same(sim_infos[i], info, "simulate info")
    after, *_ = batched.step(np.zeros(3, dtype=np.int64))  # simulate changed nothing
    for i, env in enumerate(singles):
        assert_same(after[i], env.step(0)[0], "step after simulate")
    assert [t["simulates"] for t in batched.timings()] == [1, 1, 1]
    rules = batched.get_parameters()[0].replace(max_simulate_per_step=0)
    batched.set_parameters(rules)
    with pytest.raises(RuntimeError, match="max_simulate_per_step"):
        batched.simulate(actions)
    with pytest.raises(ValueError, match="share one Parameters"):
        batched.set_parameters([rules, rules.replace(max_sub_changed=0), rules])


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_workers_hosting_a_batch_match_separate_envs(case14, setting):
    ends = _play(case14, 7, setting, kind="workers")
    if setting in ("random catalog actions", "cascades", "grid2op rewards"):
        assert ends > 0


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
def test_workers_hosting_a_batch_match_separate_envs_in_each_autoreset_mode(case14, mode):
    assert _play(case14, 5, "cascades", mode=mode, kind="workers") > 0


def test_a_worker_hosts_one_batch_only_for_one_shared_grid_env_factory(case14):
    """What a worker unpickles decides: one factory object for all its envs (as ``make_vec``
    hands it out) gives GridEnvs that are the rows of one batch; distinct factories, or a
    single env, give envs built one by one."""
    import cloudpickle

    from grid_vec.vector.worker import _shared_batch, sharing_one_batch

    factory = _factory(case14)
    shared = sharing_one_batch(pickle_roundtrip(cloudpickle, [factory] * 3))
    assert len(shared) == 3
    batch = _shared_batch(shared)
    assert batch is not None and batch.n == 3
    assert [env.batch_row for env in shared] == [(batch, 0), (batch, 1), (batch, 2)]
    assert shared[0].action_space is not shared[1].action_space  # own spaces, own RNGs
    assert sharing_one_batch(pickle_roundtrip(cloudpickle, [factory])) == []
    distinct = pickle_roundtrip(cloudpickle, [factory, _factory(case14)])
    assert sharing_one_batch(distinct) == []
    assert _shared_batch([factory(), factory()]) is None  # two batches of one


def pickle_roundtrip(cloudpickle, obj):
    return cloudpickle.loads(cloudpickle.dumps(obj))


def test_envs_sharing_a_batch_share_their_rules(case14):
    from grid_vec.core.parameters import Parameters

    first, second = _factory(case14).sharing_one_batch(2)
    rules = Parameters(nb_timestep_cooldown_line=3)
    first.set_parameters(rules)
    assert second.parameters == rules
    second.set_parameters(rules)  # the same rules again: accepted
    with pytest.raises(ValueError, match="share one Parameters"):
        second.set_parameters(Parameters(nb_timestep_cooldown_line=4))

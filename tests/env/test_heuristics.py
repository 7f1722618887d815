"""Heuristics in the batched core: a step with heuristics is the plain env stepped by hand
(the agent's action, then do-nothing or a reconnection while the maximum rho stays below
the threshold): the same last observation, the rewards summed, the steps skipped, the same
ends; a batch of N (BatchedGridVecEnv, GridVecEnv's workers) plays what N single envs
play; threshold 0 skips nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from batch_compare import compare, factory
from gymnasium.vector import AutoresetMode

from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.core.actions import KIND_LINE, KIND_SUB
from grid_vec.core.parameters import Parameters
from grid_vec.core.rules.heuristics import Heuristics
from grid_vec.env.grid_env import GridEnv

COOLDOWNS = Parameters(nb_timestep_cooldown_line=3, nb_timestep_cooldown_sub=3)
THRESHOLD = 0.9  # on case14's limits: long safe stretches, decision points, trips


def _env(case14, heuristics: Heuristics | None, length: int = 80, mask: bool = False) -> GridEnv:
    return GridEnv(
        case14,
        SyntheticSource(case14, seed=0, length=length),
        parameters=COOLDOWNS,
        other_rewards=["line_margin"],
        heuristics=heuristics,
        action_mask=mask,
    )


# toggles of branches whose loss leaves case14 safe (max rho below THRESHOLD): the grid
# idles with them out, and the heuristic reconnects them
SAFE_TOGGLES = np.array([1, 4, 5, 13]) + 1


def _agent(rng: np.random.Generator, n_actions: int) -> int:
    """Mostly do-nothing, else a safe toggle (some illegal: cooldowns), rarely any action."""
    draw = rng.random()
    if draw < 0.5:
        return 0
    return int(rng.choice(SAFE_TOGGLES) if draw < 0.97 else rng.integers(n_actions))


def _recovery(env: GridEnv, obs: np.ndarray, legal: np.ndarray) -> int:
    """The reference configuration (every element on bus bar 1: the catalog's first
    configuration of the substation) of the first substation with an element on bus bar 2,
    among those whose reference action is legal now; 0 if none."""
    topo = env.view(obs).topo_vect
    catalog, starts = env.catalog, env.topology.sub_start
    for sub in range(len(starts) - 1):
        if not (topo[starts[sub] : starts[sub + 1]] == 2).any():
            continue
        configs = np.flatnonzero((catalog.kind == KIND_SUB) & (catalog.target == sub))
        if len(configs) and legal[configs[0]]:
            assert (catalog.sub_buses[configs[0]] == 1).all()
            return int(configs[0])
    return 0


def _reconnection(env: GridEnv, obs: np.ndarray) -> int:
    """The catalog toggle of the disconnected branch of lowest index whose cooldown is
    over, read from the observation; 0 if none."""
    view = env.view(obs)
    ready = np.flatnonzero((view.line_status == 0) & (view.time_before_cooldown_line == 0))
    if not len(ready):
        return 0
    catalog = env.catalog
    return int(np.flatnonzero((catalog.kind == KIND_LINE) & (catalog.target == ready[0]))[0])


def _by_hand(env: GridEnv, obs: np.ndarray, action: int, h: Heuristics) -> dict[str, Any]:
    """What one step with heuristics ``h`` should give, played step by step on a plain env."""
    asked = action
    if h.reconnect_on_agent_steps and action == 0:
        action = _reconnection(env, obs)
    obs, reward, terminated, truncated, info = env.step(action)
    out = {
        "reward": reward,
        "skipped": 0,
        "is_illegal": info["is_illegal"],
        "tripped": info["tripped_branches"].copy(),
        "line_margin": info["other_rewards"]["line_margin"],
        "reconnections": int(action != asked),
        "recoveries": 0,
    }
    while (
        not (terminated or truncated)
        and h.idle_below_rho is not None
        and float(env.view(obs).rho.max()) < h.idle_below_rho
        and (h.max_skipped is None or out["skipped"] < h.max_skipped)
    ):
        own = _reconnection(env, obs) if h.reconnect_lines else 0
        if own == 0 and h.recover_topology:
            own = _recovery(env, obs, info["action_mask"])
            out["recoveries"] += int(own != 0)
        obs, reward, terminated, truncated, info = env.step(own)
        out["reward"] += reward
        out["line_margin"] += info["other_rewards"]["line_margin"]
        out["tripped"] |= info["tripped_branches"]
        out["skipped"] += 1
        out["reconnections"] += int(own != 0 and env.catalog.kind[own] == KIND_LINE)
    out.update(
        obs=obs,
        terminated=terminated,
        truncated=truncated,
        attacked=info["attacked_branch"],
        action_mask=info["action_mask"].copy(),
    )
    return out


SETTINGS = {
    "idle": Heuristics(idle_below_rho=THRESHOLD),
    "idle and reconnect": Heuristics(idle_below_rho=THRESHOLD, reconnect_lines=True),
    "capped, reconnect on agent steps": Heuristics(
        idle_below_rho=THRESHOLD,
        reconnect_lines=True,
        reconnect_on_agent_steps=True,
        max_skipped=7,
    ),
    "reconnect on agent steps only": Heuristics(reconnect_on_agent_steps=True),
    "idle, reconnect, recover": Heuristics(
        idle_below_rho=THRESHOLD, reconnect_lines=True, recover_topology=True
    ),
}


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_step_with_heuristics_is_the_plain_env_stepped_by_hand(case14, setting):
    h = SETTINGS[setting]
    ours, plain = _env(case14, h, mask=True), _env(case14, None, mask=True)
    rng = np.random.default_rng(0)
    n_actions = len(ours.catalog)
    sub_actions = np.flatnonzero(ours.catalog.kind == KIND_SUB)
    totals = dict.fromkeys(
        (
            "calls", "skipped", "decisions", "reconnections", "recoveries", "terminated",
            "truncated", "idle_end",
        ),
        0,
    )  # fmt: skip
    for seed in range(10):
        obs, info = ours.reset(seed=seed)
        plain_obs, plain_info = plain.reset(seed=seed)
        assert np.array_equal(info.pop("action_mask"), plain_info.pop("action_mask"))
        assert np.array_equal(obs, plain_obs) and info == plain_info
        for _ in range(200):
            action = _agent(rng, n_actions)
            if h.recover_topology and rng.random() < 0.3:  # a substation to set back later
                action = int(rng.choice(sub_actions))
            expected = _by_hand(plain, plain_obs, action, h)
            obs, reward, terminated, truncated, info = ours.step(action)
            plain_obs = expected["obs"]
            assert np.array_equal(obs, plain_obs)
            assert reward == expected["reward"]
            assert (terminated, truncated) == (expected["terminated"], expected["truncated"])
            assert info["skipped_steps"] == expected["skipped"]
            assert info["is_illegal"] == expected["is_illegal"]
            assert np.array_equal(info["tripped_branches"], expected["tripped"])
            assert info["attacked_branch"] == expected["attacked"]
            assert info["other_rewards"]["line_margin"] == expected["line_margin"]
            # the legal actions of the last state (the env's own steps compute none)
            assert np.array_equal(info["action_mask"], expected["action_mask"])
            totals["calls"] += 1
            totals["skipped"] += expected["skipped"]
            totals["reconnections"] += expected["reconnections"]
            totals["recoveries"] += expected["recoveries"]
            if terminated or truncated:
                totals["terminated"] += terminated
                totals["truncated"] += truncated
                totals["idle_end"] += expected["skipped"] > 0  # in a step the env played
                break
            totals["decisions"] += float(ours.view(obs).rho.max()) >= THRESHOLD
    # the run met what it tests: steps skipped and decision points, reconnections, ends
    assert totals["terminated"]
    if h.idle_below_rho is None:
        assert totals["skipped"] == 0
    else:
        assert totals["skipped"] > totals["calls"] and totals["decisions"] > 10
        assert totals["truncated"] and totals["idle_end"]
    if h.reconnect_lines or h.reconnect_on_agent_steps:
        assert totals["reconnections"] > 0
    if h.max_skipped is not None:
        assert totals["skipped"] <= h.max_skipped * totals["calls"]
    assert (totals["recoveries"] > 0) == h.recover_topology


def test_threshold_zero_skips_nothing(case14):
    """A maximum rho is never below 0: every step returns to the agent, as without
    heuristics (``skipped_steps`` 0)."""
    ours = _env(case14, Heuristics(idle_below_rho=0.0, reconnect_lines=True))
    plain = _env(case14, None)
    rng = np.random.default_rng(1)
    steps = 0
    for seed in range(3):
        assert np.array_equal(ours.reset(seed=seed)[0], plain.reset(seed=seed)[0])
        for _ in range(100):
            action = _agent(rng, len(ours.catalog))
            *out, info = ours.step(action)
            *ref, ref_info = plain.step(action)
            steps += 1
            assert np.array_equal(out[0], ref[0]) and out[1:] == ref[1:]
            assert info.pop("skipped_steps") == 0
            assert info.keys() == ref_info.keys()
            assert np.array_equal(info.pop("tripped_branches"), ref_info.pop("tripped_branches"))
            assert info == ref_info
            if out[2] or out[3]:
                break
    assert steps > 60


@pytest.mark.parametrize("kind", ["batched", "workers"])
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_a_batch_with_heuristics_plays_what_single_envs_play(case14, kind, mode):
    """N envs with heuristics in one batch (rows idle for different numbers of steps,
    stepped together) give what N single envs give under SyncVectorEnv: observations,
    summed rewards, ends, autoresets at the returned step, infos with ``skipped_steps``."""
    h = Heuristics(idle_below_rho=THRESHOLD, reconnect_lines=True, reconnect_on_agent_steps=True)
    f = factory(
        case14,
        length=80,
        parameters=COOLDOWNS,
        other_rewards=["line_margin"],
        action_mask=True,
        heuristics=h,
    )
    n_actions = len(f().catalog)
    infos, _ = compare(
        f,
        5,
        kind,
        mode,
        25,
        lambda rng, n, *_: np.array([_agent(rng, n_actions) for _ in range(n)]),
    )
    skipped = np.stack([info["skipped_steps"] for info in infos if "skipped_steps" in info])
    assert (skipped == 0).any() and len(np.unique(skipped)) > 3  # rows idle unequally
    assert any("scenario_id" in info for info in infos)  # autoresets among the steps


def test_heuristics_are_checked(case14):
    with pytest.raises(ValueError, match="idle_below_rho"):
        Heuristics(idle_below_rho=-0.1)
    with pytest.raises(ValueError, match="idle_below_rho"):
        Heuristics(idle_below_rho=float("nan"))
    with pytest.raises(TypeError, match="idle_below_rho"):
        Heuristics(idle_below_rho="0.9")
    with pytest.raises(TypeError, match="reconnect_lines"):
        Heuristics(reconnect_lines=1)
    with pytest.raises(ValueError, match="max_skipped"):
        Heuristics(max_skipped=-1)
    with pytest.raises(TypeError, match="heuristics must be"):
        GridEnv(case14, SyntheticSource(case14, seed=0, length=10), heuristics={"x": 1})


def test_make_and_make_vec_take_masks_and_heuristics():
    import grid_vec
    from grid_vec.env import Heuristics as exported

    h = exported(idle_below_rho=0.9, reconnect_lines=True)
    env = grid_vec.make("case14", heuristics=h, action_mask=True)
    assert env.reset(seed=0)[1]["action_mask"].all()
    *_, info = env.step(0)
    assert info["skipped_steps"] > 0 and info["action_mask"].shape == (len(env.catalog),)
    envs = grid_vec.make_vec("case14", 2, vectorization="batched", heuristics=h, action_mask=True)
    envs.reset(seed=0)
    *_, infos = envs.step(np.zeros(2, dtype=np.int64))
    assert infos["skipped_steps"].shape == (2,) and infos["action_mask"].shape == (2, 126)
    envs.close()


# case14 redispatched at random idles below this in stretches, between decision points
DISPATCH_THRESHOLD = 0.87


def _redispatch_env(case14, heuristics: Heuristics | None) -> GridEnv:
    return GridEnv(
        case14,
        SyntheticSource(case14, seed=0, length=200),
        action_type="redispatch",
        heuristics=heuristics,
    )


def test_the_dispatch_recovery_is_the_plain_env_redispatching_back_by_hand(case14):
    """With ``recover_dispatch`` each step the env plays on its own redispatches the target
    towards zero by at most the ramps: the plain env given those actions by hand reaches the
    same observations, rewards and ends, and the target is back at zero once the grid has
    idled long enough."""
    h = Heuristics(idle_below_rho=DISPATCH_THRESHOLD, recover_dispatch=True)
    ours, plain = _redispatch_env(case14, h), _redispatch_env(case14, None)
    columns = ours.continuous.columns_of("redispatch")
    limits = ours.continuous.low, ours.continuous.high
    rng = np.random.default_rng(0)
    recoveries, back_to_zero = 0, 0
    for seed in range(6):
        obs, _ = ours.reset(seed=seed)
        plain_obs, _ = plain.reset(seed=seed)
        for _ in range(60):
            action = np.zeros(len(columns), dtype=np.float32)
            if rng.random() < 0.5:  # a redispatch the env will take back
                action = (0.5 * rng.uniform(*limits)).astype(np.float32)
            obs, reward, terminated, truncated, info = ours.step(action)
            # by hand: the agent's step, then the env's own redispatches while idle
            plain_obs, expected, *ends, _ = plain.step(action)
            skipped = 0
            while not any(ends) and float(plain.view(plain_obs).rho.max()) < DISPATCH_THRESHOLD:
                # the core's state: the observation does not carry the target by default
                target = plain._batch.game.grid.target_dispatch[0][columns]
                own = np.clip(-target, *limits).astype(np.float32)
                recoveries += bool(target.any())
                plain_obs, r, *ends, _ = plain.step(own)
                expected += r
                skipped += 1
            assert np.array_equal(obs, plain_obs)
            assert reward == expected and [terminated, truncated] == ends
            assert info["skipped_steps"] == skipped
            if skipped > 3 and not any(ends):
                assert not ours._batch.game.grid.target_dispatch[0].any()
                back_to_zero += 1
            if terminated or truncated:
                break
    assert recoveries > 10 and back_to_zero > 3


def test_the_dispatch_recovery_needs_an_action_type_with_redispatch(case14):
    with pytest.raises(TypeError, match="recover_dispatch"):
        Heuristics(recover_dispatch=1)
    with pytest.raises(ValueError, match="recover_dispatch needs an action type with redispatch"):
        GridEnv(
            case14,
            SyntheticSource(case14, seed=0, length=10),
            heuristics=Heuristics(idle_below_rho=0.9, recover_dispatch=True),
        )

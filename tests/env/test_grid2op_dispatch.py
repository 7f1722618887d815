"""grid_vec's redispatch and curtailment beside grid2op + LightSimBackend (the reference):
seeded random continuous actions give the same dispatch, generation, flags and end steps;
the dispatch observation attributes read as grid2op's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from benchmark_scripts import load_benchmark

import grid_vec

grid2op = pytest.importorskip("grid2op")
pytest.importorskip("lightsim2grid")

SANDBOX = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"


@pytest.fixture(scope="module")
def parity():
    return load_benchmark("parity_continuous")


@pytest.mark.parametrize(
    "action_type", ["redispatch", "curtailment", "continuous", "combined", "set_bus_continuous"]
)
def test_random_continuous_actions_play_as_in_grid2op(parity, action_type):
    """Whole-box random actions (infeasible dispatches and failed redispatches included):
    every step's actual_dispatch and gen_p within 1e-3 MW, the same flags, the same end."""
    ours, theirs = parity.pair(SANDBOX, action_type)
    runs = [parity.run_once(ours, theirs, seed, 120, 0.3, 1.0) for seed in range(4)]
    for run in runs:
        assert run["end"] == run["grid2op_end"], run
        assert run["worst"]["actual_dispatch"] <= 1e-3, run
        assert run["worst"]["gen_p"] <= 1e-3, run
        assert run["flag_differences"] == 0, run
    if action_type != "redispatch":  # the draws do end episodes: the game-over path is played
        assert any(run["end"] is not None for run in runs)


def test_dispatch_observation_attributes_read_as_grid2ops(parity):
    names = [
        "gen_margin_up", "gen_margin_down", "gen_p_before_curtail", "curtailment",
        "curtailment_limit", "curtailment_limit_effective", "target_dispatch",
    ]  # fmt: skip
    ours, theirs = parity.pair(SANDBOX, "continuous")
    ours = grid_vec.make(
        SANDBOX, reward="flat", opponent=None, maintenance=False, action_type="continuous",
        observation_attributes=names,
    )  # fmt: skip
    theirs.set_id(0)
    theirs.reset()
    ours.reset(options={"scenario_id": 0})
    layout = ours.unwrapped._batch.continuous
    rng = np.random.default_rng(3)
    compared, curtailed = 0, 0.0
    for _ in range(40):
        action = parity.draw(ours, rng, 0.6)
        g_obs, _, g_done, _ = theirs.step(theirs.action_space(layout.grid2op_action(action)))
        obs, _, term, _, _ = ours.step(action)
        assert term == g_done
        if term:
            break
        view = ours.view(obs)
        for name in names:
            np.testing.assert_allclose(
                getattr(view, name), getattr(g_obs, name), atol=1e-4, err_msg=name
            )
        compared += 1
        curtailed = max(curtailed, float(np.abs(view.curtailment).max()))
    assert compared >= 10
    assert curtailed > 0.01  # curtailment did bite


def test_a_redispatch_target_beyond_pmax_minus_pmin_fails_and_is_given_back():
    env = grid_vec.make(SANDBOX, reward="flat", opponent=None, action_type="redispatch")
    env.reset(seed=0)
    high = env.action_space.high
    spread = env.dispatch_limits.pmax - env.dispatch_limits.pmin
    g = int(env.redispatchable[0])
    steps = int(np.ceil(spread[g] / high[0])) + 1
    flagged = 0
    for _ in range(steps):
        action = np.zeros_like(high)
        action[0] = high[0]
        _, _, term, _, info = env.step(action)
        assert not term
        flagged += "failed_redispatch_reason" in info
        target = env.unwrapped._batch.game.grid.target_dispatch[0, g]
        assert target <= spread[g] + 1e-4
    assert flagged >= 1
    assert "pmax - pmin" in info["failed_redispatch_reason"]


def test_a_curtailment_below_0_leaves_the_limit_as_grid2ops_minus_1(parity):
    """A curtailment column below 0 (down to -1, grid2op's own value for it) leaves the
    generator's limit as it is: the limits set once hold, and grid2op is given no
    ``curtail`` for it (an action leaving every limit unchanged is grid2op's do-nothing);
    the same limits, generation and dispatch as grid2op's at every step."""
    names = ["curtailment_limit", "gen_p", "actual_dispatch", "gen_p_before_curtail"]
    _, theirs = parity.pair(SANDBOX, "curtailment")
    ours = grid_vec.make(
        SANDBOX, reward="flat", opponent=None, maintenance=False, action_type="curtailment",
        observation_attributes=names,
    )  # fmt: skip
    layout = ours.unwrapped._batch.continuous
    gens, n = layout.curtail_gens, len(layout.curtail_gens)
    assert (ours.action_space.low == -1).all() and (ours.action_space.high == 1).all()
    unchanged = np.full(n, -1.0, dtype=np.float32)
    assert layout.grid2op_action(unchanged) == {}
    one = unchanged.copy()
    one[0] = 0.2  # the first generator's limit set; the others' left (-0.4: unchanged too)
    one[1:] = -0.4
    assert layout.grid2op_action(one) == {"curtail": [(int(gens[0]), pytest.approx(0.2))]}
    script = [np.full(n, 0.3, np.float32), unchanged, unchanged, one, unchanged]
    script += [np.ones(n, np.float32), unchanged]
    want_limits = [np.full(n, 0.3)] * 3 + [np.r_[0.2, np.full(n - 1, 0.3)]] * 2 + [np.ones(n)] * 2
    theirs.set_id(0)
    theirs.reset()
    ours.reset(options={"scenario_id": 0})
    for t, (action, limits) in enumerate(zip(script, want_limits, strict=True)):
        g_obs, _, g_done, g_info = theirs.step(theirs.action_space(layout.grid2op_action(action)))
        obs, _, term, _, info = ours.step(action)
        assert not (term or g_done or info["is_ambiguous"] or g_info["is_ambiguous"]), t
        view = ours.view(obs)
        np.testing.assert_allclose(view.curtailment_limit[gens], limits, atol=1e-6, err_msg=t)
        for name in names:
            np.testing.assert_allclose(
                getattr(view, name), getattr(g_obs, name), atol=1e-3, err_msg=f"{name} {t}"
            )


def test_leaving_every_curtailment_limit_unchanged_plays_bitwise_as_do_nothing(monkeypatch):
    """An agent that never curtails (every column -1) asks nothing of the dispatch rules: the
    env stays at rest (the dispatch rules never called) and plays step for step, bit for bit,
    as the catalog's do-nothing."""
    from grid_vec.core import turn

    calls = []
    dispatch_rows = turn.dispatch_rows

    def counted(*args, **kwargs):
        calls.append(1)
        return dispatch_rows(*args, **kwargs)

    monkeypatch.setattr(turn, "dispatch_rows", counted)
    kwargs = {"reward": "flat", "opponent": None, "maintenance": False}
    ours = grid_vec.make(SANDBOX, action_type="curtailment", **kwargs)
    plain = grid_vec.make(SANDBOX, **kwargs)
    unchanged = np.full(ours.action_space.shape, -1.0, dtype=np.float32)
    obs, _ = ours.reset(options={"scenario_id": 1})
    want, _ = plain.reset(options={"scenario_id": 1})
    for t in range(30):
        obs, reward, term, _, _ = ours.step(unchanged)
        want, reward_want, term_want, _, _ = plain.step(0)
        np.testing.assert_array_equal(obs, want, err_msg=f"step {t}")
        assert (reward, term) == (reward_want, term_want)
        assert not ours.unwrapped._batch.game.grid.dispatching.any(), t  # at rest all along
    assert not calls

"""grid2op's rewards, side by side with grid2op + LightSimBackend on ``l2rpn_case14_sandbox``.

Both tools play the same scenario with the same actions, every implemented reward in
``other_rewards``, and every reward must be grid2op's within 1e-5 relative (1e-6 absolute near
0) at every step, the game-over step and the episode's last step included.

* Topology run: do-nothing, a branch disconnection and reconnection, reconnections refused
  while a tripped branch waits (illegal), a substation configuration, then a game over (the
  only branch of substation 7 disconnected, its generator isolated). Every reward is compared.
* Truncated run (``max_steps``), its last action illegal: the end-of-episode values
  (``EpisodeDurationReward``, ``L2RPNReward``, ``RedispReward``'s ``min_reward``).
* Redispatch run (``action_type="redispatch"``): grid_vec's redispatch lets the slack absorb
  the imbalance where grid2op spreads it over the other generators, so flows, ``gen_p`` and
  ``actual_dispatch`` differ; only the rewards that read none of them are compared there
  (``SAME_UNDER_REDISPATCH``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import grid_vec
from grid_vec.core.actions import KIND_SUB
from grid_vec.core.parameters import Parameters
from grid_vec.core.rewards.grid2op import GRID2OP_REWARDS

pytestmark = pytest.mark.grid2op

NAMES = list(GRID2OP_REWARDS)
SAME_UNDER_REDISPATCH = [
    "FlatReward",
    "ConstantReward",
    "IncreasingFlatReward",
    "EpisodeDurationReward",
    "DistanceReward",
    "GameplayReward",
    "BridgeReward",
    "LinesReconnectedReward",
]
RADIAL = 18  # 6_7_18: the only branch of substation 7 (generator gen_7_4)
COOLDOWN = 2  # steps before a branch / substation acted on may be acted on again


@pytest.fixture(scope="module")
def sandbox():
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    return Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"


def _variants():
    """Rewards with constructor arguments, built alike on both sides (grid2op's own class,
    grid_vec's class of the same name): BridgeReward's defaults give 0 on this grid, which
    always has bridges."""
    import grid2op.Reward

    kwargs = {
        "BridgeReward_10": ("BridgeReward", {"max_pen_gte": 10.0}),
        "CloseToOverflowReward_2": ("CloseToOverflowReward", {"max_lines": 2}),
        "FlatReward_3": ("FlatReward", {"per_timestep": 3.0}),
        # a branch whose outage leaves the grid whole, and the radial one (its outage isolates
        # a generator: -1 on both sides)
        "N1Reward_3": ("N1Reward", {"l_id": 3}),
        "N1Reward_radial": ("N1Reward", {"l_id": RADIAL}),
    }
    ours = {k: GRID2OP_REWARDS[c](**kw) for k, (c, kw) in kwargs.items()}
    theirs = {k: getattr(grid2op.Reward, c)(**kw) for k, (c, kw) in kwargs.items()}
    return ours, theirs


def _pair(path: Path, names=NAMES, *, variants=True, **kwargs):
    """grid_vec's env and grid2op's (LightSimBackend, same limits, cooldowns of COOLDOWN
    steps, scenario 0), both reset, every reward of ``names`` in their ``other_rewards``."""
    import grid2op
    import grid2op.Reward
    from lightsim2grid import LightSimBackend

    ours_extra, theirs_extra = _variants() if variants else ({}, {})
    params = Parameters(nb_timestep_cooldown_line=COOLDOWN, nb_timestep_cooldown_sub=COOLDOWN)
    ours = grid_vec.make(
        path, parameters=params, other_rewards={**{n: n for n in names}, **ours_extra}, **kwargs
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = grid2op.make(
            str(path),
            backend=LightSimBackend(),
            other_rewards={**{n: getattr(grid2op.Reward, n) for n in names}, **theirs_extra},
        )
    p = theirs.parameters
    p.NB_TIMESTEP_COOLDOWN_LINE = p.NB_TIMESTEP_COOLDOWN_SUB = COOLDOWN
    theirs.change_parameters(p)
    theirs.set_thermal_limit(ours.thermal_limit)
    theirs.set_id(0)
    return ours, theirs


def _fit(path: Path, prefix: list[int], action: int) -> bool:
    """Whether catalog ``action``, after ``prefix`` on scenario 0, touches no disconnected
    branch and leaves a game that runs two more steps (grid_vec)."""
    params = Parameters(nb_timestep_cooldown_line=COOLDOWN, nb_timestep_cooldown_sub=COOLDOWN)
    env = grid_vec.make(path, parameters=params)
    obs, _ = env.reset(options={"scenario_id": 0})
    for a in prefix:
        obs, *_ = env.step(a)
    sub = env.catalog.target[action]
    m = env.model
    touching = (m.branch_or_sub == sub) | (m.branch_ex_sub == sub)
    if not env.view(obs).line_status[touching].all():
        return False
    for a in (action, 0, 0):
        _, _, term, _, _ = env.step(a)
        if term:
            return False
    return True


def _compare(ours: dict, theirs: dict, names, where) -> None:
    for name in names:
        a, b = ours[name], float(theirs[name])
        diff = abs(a - b)
        assert diff <= max(1e-5 * abs(b), 1e-6), f"{where}: {name} {a} != grid2op's {b}"


def test_every_reward_as_grid2op_through_topology_actions_and_a_game_over(sandbox):
    ours, theirs = _pair(sandbox)
    theirs.reset()
    ours.reset(options={"scenario_id": 0})
    catalog = ours.catalog
    prefix = [0, 1 + 3, 1 + 3, 0, 1 + 3]
    # at step 5: a substation configuration with two bus bars that keeps the grid whole (on
    # case14 many split a generator or a load off) and moves no disconnected branch end
    # (such a configuration would also reconnect the branch: a plain split is wanted here)
    candidates = [
        int(i)
        for i in np.flatnonzero(catalog.kind == KIND_SUB)
        if (np.asarray(catalog.sub_buses[i]) == 2).sum() >= 2
    ]
    sub = next(i for i in candidates if _fit(sandbox, prefix, i))
    g_sub = theirs.action_space(catalog.grid2op_action(sub))
    nothing = theirs.action_space()

    def line(b: int, status: int):
        return theirs.action_space({"set_line_status": [(b, status)]})

    plan = [
        *zip(prefix, [nothing, line(3, -1), line(3, 1), nothing, line(3, 1)], strict=True),
        (sub, g_sub),
        (sub, g_sub),  # cooldown: illegal
        (0, nothing),
        (1 + RADIAL, line(RADIAL, -1)),  # generator gen_7_4 isolated: game over
    ]
    names = [*NAMES, *_variants()[0]]
    seen = []
    for t, (action, g_action) in enumerate(plan):
        _, _, term, _, info = ours.step(action)
        _, _, g_done, g_info = theirs.step(g_action)
        assert term == g_done, t
        assert info["is_illegal"] == g_info["is_illegal"], t
        seen.append((info["is_illegal"], term))
        _compare(info["other_rewards"], g_info["rewards"], names, f"step {t}")
        if term:
            break
    assert len(seen) == len(plan) and term  # every step played, the last a game over
    assert seen.count((True, False)) == 2


def test_rewards_at_the_end_of_a_truncated_episode(sandbox):
    """The episode's last step, an illegal action: RedispReward gives its min_reward."""
    ours, theirs = _pair(sandbox)
    theirs.set_max_iter(6)
    theirs.reset()
    ours.reset(options={"scenario_id": 0, "max_steps": 6})
    plan = [(0, {}), (0, {}), (0, {}), (0, {}), (1 + 3, {"set_line_status": [(3, -1)]})]
    plan.append((1 + 3, {"set_line_status": [(3, 1)]}))  # cooldown: illegal
    names = [*NAMES, *_variants()[0]]
    for t, (action, g_action) in enumerate(plan):
        _, _, term, trunc, info = ours.step(action)
        _, _, g_done, g_info = theirs.step(theirs.action_space(g_action))
        assert (term or trunc) == g_done and not term, t
        assert info["is_illegal"] == g_info["is_illegal"], t
        _compare(info["other_rewards"], g_info["rewards"], names, f"step {t}")
    assert trunc and info["is_illegal"]
    assert info["other_rewards"]["RedispReward"] == -10.0
    assert info["other_rewards"]["EpisodeDurationReward"] == 1.0


def test_rewards_under_redispatch_where_the_inputs_agree(sandbox):
    ours, theirs = _pair(sandbox, variants=False, action_type="redispatch")
    theirs.reset()
    ours.reset(options={"scenario_id": 0})
    gens = ours.redispatchable
    for t in range(8):
        mw = np.zeros(len(gens), dtype=np.float32)
        if t in (1, 2, 5):
            mw[0] = 2.0 if t != 5 else -3.0  # gen_1_0, within its 5 MW ramp
        _, _, term, _, info = ours.step(mw)
        g_action = theirs.action_space({"redispatch": [(int(gens[0]), float(mw[0]))]})
        _, _, g_done, g_info = theirs.step(g_action)
        assert term == g_done == False, t  # noqa: E712
        assert info["is_illegal"] == g_info["is_illegal"], t
        _compare(info["other_rewards"], g_info["rewards"], SAME_UNDER_REDISPATCH, f"step {t}")


def test_the_dataset_reward_is_the_default(sandbox):
    """config.py names RedispReward: it is the reward of a folder env made without one."""
    ours, theirs = _pair(sandbox, names=[], variants=False)
    assert type(ours.reward_fn).__name__ == "RedispReward"
    assert grid_vec.make(sandbox, reward="flat").reward_fn is not ours.reward_fn
    theirs.reset()
    ours.reset(options={"scenario_id": 0})
    for t in range(3):
        _, reward, *_ = ours.step(0)
        _, g_reward, *_ = theirs.step(theirs.action_space())
        assert reward == pytest.approx(g_reward, rel=1e-5), t

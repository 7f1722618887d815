"""``info["action_mask"]``: True exactly where the catalog action is legal in the state
returned, by real steps (every catalog action played from the same state) and by the rules'
own verdict over long random runs under several rule sets; the vector envs carry the masks
single envs give."""

from __future__ import annotations

import numpy as np
import pytest
from batch_compare import compare, factory
from env_helpers import loose_limits
from gymnasium.vector import AutoresetMode

from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.core.actions import KIND_LINE, KIND_SUB
from grid_vec.core.parameters import Parameters
from grid_vec.env.grid_env import GridEnv
from grid_vec.vector.batched import BatchedGridVecEnv

COOLDOWNS = Parameters(nb_timestep_cooldown_line=3, nb_timestep_cooldown_sub=3)


def _pick(rng: np.random.Generator, mask: np.ndarray) -> int:
    """A history action: a legal one mostly (the grid changes, cooldowns run), any else."""
    if rng.random() < 0.7:
        return int(rng.choice(np.flatnonzero(mask)))
    return int(rng.integers(len(mask)))


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_mask_matches_the_legality_of_real_steps(case14, seed):
    """Envs that all replay one history of actions stand in the same state; then env i
    plays catalog action i: its ``is_illegal`` is the mask's verdict on action i."""
    f = factory(case14, thermal_limits=loose_limits(case14), parameters=COOLDOWNS, action_mask=True)
    n = len(f().catalog)
    envs = BatchedGridVecEnv.from_factory(f, n, autoreset_mode=AutoresetMode.DISABLED)
    every_action = np.arange(n)
    rng = np.random.default_rng(seed)
    history: list[int] = []
    _, info = envs.reset(seed=[seed] * n)
    mask = info["action_mask"][0]
    reasons: list[str] = []
    checked = 0
    for _ in range(25):
        _, _, _, _, tried = envs.step(every_action)
        assert np.array_equal(mask, ~tried["is_illegal"])
        reasons += [r for r in tried.get("illegal_reason", []) if r is not None]
        checked += 1
        for _ in range(20):  # one more history action that does not end the episode
            history.append(_pick(rng, mask))
            _, info = envs.reset(seed=[seed] * n)
            for action in history:
                _, _, terminated, truncated, info = envs.step(np.full(n, action))
            if not (terminated[0] or truncated[0]):
                break
            history.pop()
        else:
            break
        assert (info["action_mask"] == info["action_mask"][0]).all()  # one state for all
        mask = info["action_mask"][0]
    envs.close()
    assert checked == 25
    # every rule was met: line and substation cooldowns, a configuration reconnecting a
    # branch still in cooldown
    assert any("cannot change status for" in r for r in reasons)
    assert any("is in cooldown for" in r for r in reasons)
    assert any("would reconnect" in r for r in reasons)


RULES = {
    "cooldowns": COOLDOWNS,
    "no line change": COOLDOWNS.replace(max_line_status_changed=0),
    "no substation change": COOLDOWNS.replace(max_sub_changed=0),
    "two line changes": COOLDOWNS.replace(max_line_status_changed=2),
}


@pytest.mark.parametrize("rules", list(RULES))
def test_mask_is_the_rules_verdict_on_every_action(case14, rules):
    """Over random actions (those foreseen to end the episode played as do-nothing) with
    cooldowns and reconnections, at every step the mask is ``ActionRules.legalise``'s
    verdict on each catalog action in the state returned."""
    params = RULES[rules]
    env = GridEnv(
        case14,
        SyntheticSource(case14, seed=0, length=60),
        thermal_limits=loose_limits(case14),
        parameters=params,
        action_mask=True,
    )
    batch = env.unwrapped._batch
    n = len(env.catalog)
    every_action, row = np.arange(n), np.zeros(n, dtype=np.intp)
    kind = env.catalog.kind
    rng = np.random.default_rng(1)
    seen = {"line": set(), "sub": set()}
    steps = 0
    for episode in range(6):
        _, info = env.reset(seed=episode)
        for _ in range(60):
            mask = info["action_mask"]
            illegal = batch._rules.legalise(batch.game.grid, row, every_action, None, None, params)[
                0
            ]
            assert mask.dtype == bool and mask.shape == (n,)
            assert np.array_equal(mask, ~illegal)
            assert mask[0]
            seen["line"].update(mask[kind == KIND_LINE].tolist())
            seen["sub"].update(mask[kind == KIND_SUB].tolist())
            action = _pick(rng, mask)
            if env.simulate(action)[2]:  # a game over foreseen: keep the episode going
                action = 0
            _, _, terminated, truncated, info = env.step(action)
            steps += 1
            if terminated or truncated:
                break
    assert steps > 200
    # the masks are not all of one kind, except where the rules forbid every such action
    assert seen["line"] == ({False} if rules == "no line change" else {True, False})
    assert seen["sub"] == ({False} if rules == "no substation change" else {True, False})


@pytest.mark.parametrize("kind", ["batched", "workers"])
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector_envs_carry_the_masks_of_single_envs(case14, kind, mode):
    """BatchedGridVecEnv and GridVecEnv's workers (each hosting a batch) give the infos of
    single GridEnvs under SyncVectorEnv, masks included, through autoresets."""
    f = factory(
        case14,
        thermal_limits=0.9 * case14.thermal_limit_a,
        parameters=COOLDOWNS,
        action_mask=True,
        max_iter=12,
    )
    n_actions = len(f().catalog)
    infos, _ = compare(f, 5, kind, mode, 30, lambda rng, n, *_: rng.integers(0, n_actions, n))
    assert any("scenario_id" in info for info in infos)  # autoresets among the steps
    masks = np.stack([info["action_mask"] for info in infos])
    assert masks.shape[1:] == (5, n_actions)
    assert not masks.all() and masks[..., 0].all()


def test_mask_needs_a_catalog(case14):
    source = SyntheticSource(case14, seed=0, length=10)
    with pytest.raises(ValueError, match="action_mask needs a catalog"):
        GridEnv(case14, source, action_type="redispatch", action_mask=True)
    with pytest.raises(TypeError, match="action_mask must be a bool"):
        GridEnv(case14, source, action_mask=1)
    env = GridEnv(case14, source, action_type="combined", action_mask=True, parameters=COOLDOWNS)
    _, info = env.reset(seed=0)
    assert info["action_mask"].shape == (len(env.catalog),) and info["action_mask"].all()
    action = {"topology": 1, "continuous": env.action_space["continuous"].sample() * 0}
    _, _, _, _, info = env.step(action)
    assert not info["action_mask"][1]  # the branch just toggled is in cooldown
    plain = GridEnv(case14, source)
    assert "action_mask" not in plain.reset(seed=0)[1]
    assert "action_mask" not in plain.step(0)[4]


def test_a_simulate_info_carries_the_mask_of_the_state_it_foresees(case14):
    """``simulate``'s info has the mask a real step to the same state gives (candidates,
    which nobody reads the masks of, skip computing them)."""
    f = factory(case14, thermal_limits=loose_limits(case14), parameters=COOLDOWNS, action_mask=True)
    env = f()
    env.reset(seed=0)
    sub_action = int(np.flatnonzero(env.catalog.kind == KIND_SUB)[0])
    *_, info = env.simulate(sub_action)
    assert "action_mask" in info
    *_, stepped = env.step(sub_action)
    # the simulated forecast equals the next step's injections only approximately, but the
    # legality of each action depends on the cooldowns and statuses alone
    np.testing.assert_array_equal(info["action_mask"], stepped["action_mask"])
    # the substation just changed is in cooldown: none of its configurations is legal
    same_sub = (env.catalog.kind == KIND_SUB) & (
        env.catalog.target == env.catalog.target[sub_action]
    )
    assert not info["action_mask"][same_sub].any()

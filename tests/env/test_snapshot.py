"""Snapshots: an env's whole game state as plain arrays; an env restored from one (the same
env, a fresh env of the same make arguments, another row of a batch) replays the original's
trajectory bitwise; taking one changes nothing; one of another grid is refused."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import grid_vec
from grid_vec.core.rules.opponent import GeometricOpponent, RandomLineOpponent
from grid_vec.core.snapshot import STATE_FIELDS, GridSnapshot
from grid_vec.core.state import BatchState


def _opponent(kind: str):
    if kind == "random":
        return RandomLineOpponent([1, 2], budget_per_step=1.0, attack_duration=3, attack_cooldown=6)
    if kind == "geometric":
        return GeometricOpponent(
            [1, 2, 3], budget_per_step=1.0, attack_duration=24, attack_cooldown=6,
            attack_every_xxx_hour=1.0, average_attack_duration_hour=0.5,
            minimum_attack_duration_hour=0.25,
        )  # fmt: skip
    return None


def _make(name: str, opponent: str | None = None):
    return grid_vec.make(name, action_type="combined", opponent=_opponent(opponent))


# branches whose outage alone keeps each grid safe at its first steps
_SAFE = {"case14": (4, 13), "case118": (96, 66)}


def _maintenance(env) -> np.ndarray:
    """Two branches in maintenance for a few steps each, within the first 60 steps."""
    branches = _SAFE[env.unwrapped.model.name]
    schedule = np.zeros((200, env.unwrapped.model.n_branch), dtype=bool)
    schedule[25:29, branches[0]] = True
    schedule[34:37, branches[1]] = True
    return schedule


class Chooser:
    """Random combined actions (topology now and then, small redispatch), each kept only
    when its simulate keeps the grid safe, else do-nothing: long trajectories that act."""

    def __init__(self, env, seed: int) -> None:
        env.action_space.seed(seed)
        self.rng = np.random.default_rng(seed)

    def __call__(self, env) -> dict:
        action = env.action_space.sample()
        if self.rng.random() > 0.3:
            action["topology"] = 0
        action["continuous"] = (0.3 * action["continuous"]).astype(np.float32)
        trial = env.unwrapped.simulate_candidates(
            {"topology": np.array([action["topology"]]), "continuous": action["continuous"][None]}
        )
        if trial.terminated[0] or trial.max_rho[0] > 0.95:
            action = {"topology": 0, "continuous": np.zeros_like(action["continuous"])}
        return action


def _play(env, actions, chooser=None, n: int = 30):
    """``(observation, reward, terminated, truncated, info)`` of each step, and the actions
    played (drawn by ``chooser`` when ``actions`` is None)."""
    steps, played = [], []
    for i in range(n):
        action = chooser(env) if actions is None else actions[i]
        played.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((obs.copy(), reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return steps, played


def _assert_same_steps(expected, got) -> None:
    assert len(got) == len(expected)
    for t, (a, b) in enumerate(zip(expected, got, strict=True)):
        assert a[0].tobytes() == b[0].tobytes(), f"step {t}: observations differ"
        assert a[1:4] == b[1:4], f"step {t}: reward / terminated / truncated differ"
        assert a[4].keys() == b[4].keys(), f"step {t}: info keys differ"
        for key in a[4]:
            np.testing.assert_array_equal(a[4][key], b[4][key], err_msg=f"step {t}: {key}")


def _state_bytes(env) -> list[bytes]:
    """Every bit of the env's game state that a snapshot covers."""
    snap = env.unwrapped.snapshot()
    return [v.tobytes() for v in snap.to_arrays().values()]


@pytest.mark.parametrize(
    ("name", "opponent"),
    [("case14", None), ("case14", "random"), ("case14", "geometric"), ("case118", None)],
)
def test_a_restored_env_replays_bitwise(name, opponent):
    env = _make(name, opponent)
    env.reset(seed=3, options={"maintenance": _maintenance(env)})
    chooser = Chooser(env, seed=5)
    _, before = _play(env, None, chooser, n=2)
    snap = env.unwrapped.snapshot()
    # 30 steps, or fewer when they end the game (an attack may: the flags must replay too);
    # the maintenance starts at step 25, the first attacks soon after the snapshot
    expected, actions = _play(env, None, chooser)
    assert len(expected) >= 10
    assert any(int(a["topology"]) != 0 for a in before + actions)  # the game acts
    if opponent is not None:
        assert any(step[4]["attacked_branch"] >= 0 for step in expected)

    # the same env, back to the snapshot
    env.unwrapped.restore(snap)
    _assert_same_steps(expected, _play(env, actions)[0])
    # a fresh env of the same make arguments, elsewhere in another episode
    fresh = _make(name, opponent)
    fresh.reset(seed=11)
    _play(fresh, None, Chooser(fresh, seed=2), n=7)
    _, info = fresh.unwrapped.restore(snap)
    assert info["scenario_id"] == env.unwrapped.scenario_info.id
    _assert_same_steps(expected, _play(fresh, actions)[0])
    # reset(options={"state": ...}) of a never-reset env
    other = _make(name, opponent)
    other.reset(options={"state": snap})
    _assert_same_steps(expected, _play(other, actions)[0])


def test_the_restored_observation_is_the_one_returned_then():
    env = _make("case14")
    env.reset(seed=0)
    chooser = Chooser(env, seed=1)
    steps, _ = _play(env, None, chooser, n=10)
    snap = env.unwrapped.snapshot()
    fresh = _make("case14")
    obs, _ = fresh.unwrapped.restore(snap)
    assert obs.tobytes() == steps[-1][0].tobytes()


def test_taking_a_snapshot_changes_nothing():
    env = _make("case14", "geometric")
    env.reset(seed=4, options={"maintenance": _maintenance(env)})
    chooser = Chooser(env, seed=6)
    _play(env, None, chooser, n=27)  # in a maintenance
    twin = _make("case14", "geometric")
    twin.reset(options={"state": env.unwrapped.snapshot()})
    before = _state_bytes(env)
    for _ in range(5):
        env.unwrapped.snapshot()
    assert _state_bytes(env) == before
    # and the env plays on as its twin, which took none
    got, actions = _play(env, None, chooser, n=5)
    _assert_same_steps(_play(twin, actions, n=5)[0], got)


def test_the_snapshot_covers_every_array_of_the_state():
    views = {"timestep_overflow", "cooldown_line", "cooldown_sub", "protection_counter"}
    views |= {"a_or", "load_p", "gen_p"}  # column views into timers and flows
    arrays = {f.name for f in dataclasses.fields(BatchState) if "np.ndarray" in str(f.type)} - views
    assert arrays == set(STATE_FIELDS)


def test_a_snapshot_round_trips_through_npz_without_pickle():
    env = _make("case14", "random")
    env.reset(seed=2)
    chooser = Chooser(env, seed=3)
    _play(env, None, chooser, n=15)
    snap = env.unwrapped.snapshot()
    buffer = io.BytesIO()
    np.savez(buffer, **snap.to_arrays())
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as stored:
        loaded = GridSnapshot.from_arrays(stored)
    assert loaded.to_arrays().keys() == snap.to_arrays().keys()
    expected, actions = _play(env, None, chooser)
    fresh = _make("case14", "random")
    fresh.unwrapped.restore(loaded)
    _assert_same_steps(expected, _play(fresh, actions)[0])


def test_from_arrays_names_a_missing_or_unknown_key():
    env = _make("case14")
    env.reset(seed=0)
    arrays = env.unwrapped.snapshot().to_arrays()
    del arrays["state.topo"]
    with pytest.raises(ValueError, match=r"state\.topo"):
        GridSnapshot.from_arrays(arrays)
    arrays = env.unwrapped.snapshot().to_arrays()
    arrays["state.extra"] = np.zeros(3)
    with pytest.raises(ValueError, match=r"state\.extra"):
        GridSnapshot.from_arrays(arrays)


def test_a_snapshot_of_another_grid_or_shape_is_refused():
    small, large = _make("case14"), _make("case118")
    small.reset(seed=0)
    large.reset(seed=0)
    before = _state_bytes(small)
    with pytest.raises(ValueError, match="'grid'"):
        small.unwrapped.restore(large.unwrapped.snapshot())
    snap = small.unwrapped.snapshot()
    # a field of the wrong shape (a grid of the same name but another size)
    state = dict(snap.state, topo=snap.state["topo"][:-1])
    with pytest.raises(ValueError, match=r"'state\.topo'"):
        small.unwrapped.restore(dataclasses.replace(snap, state=state))
    with pytest.raises(ValueError, match="'solver'"):
        small.unwrapped.restore(dataclasses.replace(snap, solver=snap.solver[:-1]))
    with pytest.raises(ValueError, match="'opponent'"):
        _make("case14", "random").unwrapped.restore(snap)
    with pytest.raises(TypeError, match="GridSnapshot"):
        small.unwrapped.restore(snap.to_arrays())
    with pytest.raises(ValueError, match="alone"):
        small.reset(options={"state": snap, "scenario_id": 0})
    assert _state_bytes(small) == before  # nothing was restored


def test_a_batch_row_restored_from_another_plays_what_it_played():
    envs = grid_vec.make_vec("case14", 3, vectorization="batched", action_type="combined")
    try:
        envs.reset(seed=[1, 2, 3])
        # row 0 plays a while; rows 1 and 2 do nothing
        envs.single_action_space.seed(4)
        chooser_env = envs.envs[0]
        chooser = Chooser(chooser_env, seed=4)

        def batch_action(first):
            zeros = np.zeros_like(first["continuous"])
            return {
                "topology": np.array([first["topology"], 0, 0]),
                "continuous": np.stack([first["continuous"], zeros, zeros]),
            }

        for _ in range(12):
            envs.step(batch_action(chooser(chooser_env)))
        snap = envs.snapshot(0)
        actions, expected = [], []
        for _ in range(20):
            actions.append(chooser(chooser_env))
            obs, rewards, terminated, truncated, infos = envs.step(batch_action(actions[-1]))
            expected.append((obs[0].copy(), rewards[0], terminated[0], truncated[0]))
        _, infos = envs.restore(2, snap)
        assert infos["_scenario_id"].tolist() == [False, False, True]
        for t, action in enumerate(actions):
            zeros = np.zeros_like(action["continuous"])
            batched = {
                "topology": np.array([0, 0, action["topology"]]),
                "continuous": np.stack([zeros, zeros, action["continuous"]]),
            }
            obs, rewards, terminated, truncated, _ = envs.step(batched)
            assert obs[2].tobytes() == expected[t][0].tobytes(), f"step {t}"
            assert (rewards[2], terminated[2], truncated[2]) == expected[t][1:]
        with pytest.raises(IndexError):
            envs.snapshot(3)
    finally:
        envs.close()


def test_the_pandapower_backend_replays_bitwise_too(case14):
    pytest.importorskip("pandapower")
    from grid_vec.chronics.synthetic import SyntheticSource
    from grid_vec.env.grid_env import GridEnv

    def make():
        return GridEnv(case14, SyntheticSource(case14, length=40), backend="pandapower")

    env = make()
    env.reset(seed=4)
    actions = [0, 3, 0, 0, 1 + 20 + 2, 0, 0, 5, 0, 0]
    _play(env, actions, n=3)
    snap = env.snapshot()
    expected, _ = _play(env, actions[3:], n=7)
    fresh = make()
    fresh.reset(seed=1)
    _play(fresh, [7, 0], n=2)
    fresh.restore(snap)
    _assert_same_steps(expected, _play(fresh, actions[3:], n=7)[0])


@pytest.mark.parametrize("vectorization", ["batched", "multiprocess"])
def test_a_vector_env_row_continues_another_rows_trajectory(vectorization):
    """snapshot(i) / restore(j, s) on both vector envs (GridVecEnv's snapshots cross the
    worker pipes), and the snapshot restored into a GridEnv of this process plays the same."""
    envs = grid_vec.make_vec(
        "case14", 4, vectorization=vectorization, autoreset_mode=AutoresetMode.NEXT_STEP
    )
    try:
        envs.reset(seed=[7, 8, 9, 10])
        rng = np.random.default_rng(3)
        k = envs.single_action_space.n
        for _ in range(6):  # rows in states of their own (do-nothing ends no episode here)
            envs.step(np.zeros(4, dtype=np.int64))
        snap = envs.snapshot(0)
        actions = [0, *(int(rng.integers(k)) for _ in range(7))]  # ends where the game does
        expected = []
        for a in actions:
            obs, rewards, terminated, *_ = envs.step(np.array([a, 0, 0, 0]))
            expected.append((obs[0].copy(), rewards[0], terminated[0]))
            if terminated[0]:
                break
        assert len(expected) >= 2
        envs.restore(3, snap)
        alone = grid_vec.make("case14")
        alone.unwrapped.restore(snap)
        for t, (obs_0, reward_0, term_0) in enumerate(expected):
            obs, rewards, terminated, *_ = envs.step(np.array([0, 0, 0, actions[t]]))
            assert obs[3].tobytes() == obs_0.tobytes(), f"step {t}"
            assert (rewards[3], terminated[3]) == (reward_0, term_0)
            single_obs, single_reward, single_term, *_ = alone.step(actions[t])
            assert single_obs.tobytes() == obs_0.tobytes(), f"step {t}"
            assert (single_reward, single_term) == (reward_0, term_0)
    finally:
        envs.close()

"""Look-ahead over several steps: ``simulate_candidates(candidates, horizon=H)`` chains H
turns on copies of the env's state, each on the forecast made now of its step."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import grid_vec
from grid_vec.chronics.handler import ScenarioHandler
from grid_vec.chronics.outages import Events, outage_window
from grid_vec.chronics.scenario import Injections
from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.core.actions import KIND_SUB
from grid_vec.core.lookahead import MAX_HORIZON
from grid_vec.core.parameters import Parameters
from grid_vec.core.rules.opponent import RandomLineOpponent
from grid_vec.env.grid_env import GridEnv
from grid_vec.grid.networks import load_network

STEPS = 40


def _write_folder(root: Path, model, horizons: list[int] | None) -> Path:
    """A grid2op-format folder of case14 with one synthetic scenario and no forecast files,
    whose config gives ``horizons`` as ``h_forecast``: its forecasts are then the actual
    steps ahead (a perfect forecaster), so a chained look-ahead must play what the env plays."""
    import pandapower as pp

    root.mkdir(parents=True)
    pp.to_json(load_network("case14"), str(root / "grid.json"))
    limits = ", ".join(str(float(v)) for v in model.thermal_limit_a)
    feeding = "" if horizons is None else f', "data_feeding_kwargs": {{"h_forecast": {horizons}}}'
    (root / "config.py").write_text(
        f'config = {{"backend": None, "thermal_limits": [{limits}]{feeding}}}\n'
    )
    inj = SyntheticSource(model, seed=4, length=STEPS).read(0, 0, STEPS)
    folder = root / "chronics" / "0000"
    folder.mkdir(parents=True)
    for stem, names, rows in (
        ("load_p", model.load_names, inj.load_p),
        ("load_q", model.load_names, inj.load_q),
        ("prod_p", model.gen_names, inj.gen_p),
        ("prod_v", model.gen_names, inj.gen_v),
    ):
        lines = [";".join(names)] + [";".join(f"{v:.6f}" for v in r) for r in rows]
        (folder / f"{stem}.csv").write_text("\n".join(lines) + "\n")
    (folder / "start_datetime.info").write_text("2019-01-05 23:55\n")
    (folder / "time_interval.info").write_text("00:05\n")
    return root


@pytest.fixture(scope="module")
def perfect(tmp_path_factory, case14):
    """An env on a folder forecasting 3 steps ahead perfectly, a substation action played
    (its cooldown makes repeating it illegal)."""
    root = _write_folder(tmp_path_factory.mktemp("perfect") / "env", case14, [5, 10, 15])
    env = grid_vec.make(root, opponent=None, parameters=Parameters(nb_timestep_cooldown_sub=2))
    env.reset(seed=0, options={"scenario_id": 0})
    u = env.unwrapped
    env.step(int(np.flatnonzero(u.catalog.kind == KIND_SUB)[2]))  # in cooldown: see _sequences
    env.step(0)
    yield env
    env.close()


def _sequences(env, k: int, horizon: int) -> np.ndarray:
    catalog = env.unwrapped.catalog
    subs = np.flatnonzero(catalog.kind == KIND_SUB)
    free = subs[catalog.target[subs] != catalog.target[subs[2]]]  # not the one in cooldown
    rng = np.random.default_rng(3)
    seqs = rng.integers(len(catalog), size=(k, horizon))
    seqs[0] = 0  # do-nothing throughout
    seqs[1, :2] = free[0]  # the same substation twice: the second is in cooldown
    seqs[2] = free[-horizon:]
    return seqs


def test_a_chain_on_perfect_forecasts_plays_what_stepping_a_restored_snapshot_plays(perfect):
    env, u = perfect, perfect.unwrapped
    horizon = 3
    seqs = _sequences(env, 10, horizon)
    found = u.simulate_candidates(seqs, horizon=horizon)
    assert found.observations.shape == (10, horizon, *env.observation_space.shape)
    assert found.illegal[1, 1] and not found.illegal[1, 0]
    snapshot = u.snapshot()
    for j, seq in enumerate(seqs):
        u.restore(snapshot)
        for h, action in enumerate(seq.tolist()):
            obs, reward, terminated, truncated, info = env.step(action)
            np.testing.assert_allclose(found.observations[j, h], obs, atol=1e-6)
            assert found.rewards[j, h] == pytest.approx(reward, abs=1e-6)
            assert found.terminated[j, h] == terminated
            assert found.illegal[j, h] == info["is_illegal"]
            assert found.ambiguous[j, h] == info["is_ambiguous"]
            assert found.game_over_reason[j, h] == info.get("game_over_reason", "")
            if terminated or truncated:
                assert found.played[j] == h + 1
                break
        else:
            assert found.played[j] == horizon
    u.restore(snapshot)


class PerfectForecasts(SyntheticSource):
    """Synthetic scenarios whose forecasts are the actual steps ahead (``HORIZONS`` of them)
    and whose line 3 is in maintenance at steps [5, 9), known from the start: a look-ahead
    on them must play what stepping the env plays."""

    HORIZONS = 3

    def read(self, scenario_id, start, stop):
        whole = super().read(scenario_id, 0, self.length)
        ahead = np.minimum(
            np.arange(start, stop)[:, None] + np.arange(1, self.HORIZONS + 1), self.length - 1
        )
        time, duration, _ = outage_window(
            Events(np.array([3]), np.array([5]), np.array([9])),
            None,
            self.model.n_branch,
            start,
            stop,
        )
        fields = {}
        for name in ("load_p", "load_q", "gen_p", "gen_v"):
            actual = getattr(whole, name)
            fields[name] = actual[start:stop]
            fields[f"{name}_forecast"] = actual[ahead[:, 0]]
            fields[f"{name}_ahead"] = actual[ahead[:, 1:]]
        return Injections(**fields, maintenance_time=time, maintenance_duration=duration)


@pytest.mark.parametrize(
    ("action_type", "attacking"),
    [("discrete", False), ("redispatch", False), ("combined", False), ("discrete", True)],
)
def test_chains_from_random_states_play_what_stepping_restored_snapshots_plays(
    case14, action_type, attacking
):
    """From several states of a random trajectory (cooldowns, a maintenance starting and
    ending, dispatch under way; with an opponent, lines under attack), random chains of 3
    topology, redispatch or combined actions, on perfect forecasts, step for step as the env
    steps them from a snapshot (a look-ahead never attacks: with the opponent on, up to the
    step where the env's opponent starts a new attack)."""
    opponent = None
    if attacking:
        opponent = RandomLineOpponent(
            [0, 2, 5, 9],
            budget_per_step=1.0,
            attack_duration=5,
            attack_cooldown=2,
            initial_budget=20.0,
        )
    env = GridEnv(
        case14, PerfectForecasts(case14, seed=2, length=60), action_type=action_type,
        parameters=Parameters(nb_timestep_cooldown_sub=2, nb_timestep_cooldown_line=2),
        opponent=opponent,
    )  # fmt: skip
    u = env.unwrapped
    env.reset(seed=1, options={"scenario_id": 0})
    env.action_space.seed(4)
    rng = np.random.default_rng(5)
    checked = attacks = under_attack = 0
    for t in range(18 if attacking else 10):
        if t % 3 == 2:
            under_attack += int(attacking and u.opponent_info()["attacked_branch"] >= 0)
            sequences = [[_sample(env, rng) for _ in range(3)] for _ in range(6)]
            found = u.simulate_candidates(_batched(sequences), horizon=3)
            snapshot = u.snapshot()
            for j, sequence in enumerate(sequences):
                u.restore(snapshot)
                for h, action in enumerate(sequence):
                    obs, reward, terminated, _, info = env.step(action)
                    if info["attacked_branch"] >= 0:  # a new attack: the look-ahead had none
                        attacks += 1
                        break
                    np.testing.assert_allclose(found.observations[j, h], obs, atol=1e-6)
                    assert found.rewards[j, h] == pytest.approx(reward, abs=1e-6)
                    assert (found.terminated[j, h], found.illegal[j, h]) == (
                        terminated, info["is_illegal"],
                    )  # fmt: skip
                    checked += 1
                    if terminated:
                        break
            u.restore(snapshot)
        _, _, terminated, truncated, _ = env.step(_sample(env, rng))
        if terminated or truncated:
            env.reset(options={"scenario_id": 0, "fast_forward": t + 1})
    assert checked > 20
    if attacking:  # the case of the test: chains from states with a line under attack
        assert under_attack >= 1 and attacks >= 1, (under_attack, attacks)
    env.close()


def _sample(env, rng):
    """A random action, its topology part do-nothing half of the time (many are game overs)."""
    action = env.action_space.sample()
    if isinstance(action, dict) and rng.random() < 0.5:
        action["topology"] = 0
    elif not isinstance(action, dict | np.ndarray) and rng.random() < 0.5:
        action = 0
    return action


def _batched(sequences):
    """(K, H) candidates from K lists of H actions (dicts batched per key)."""
    first = sequences[0][0]
    if isinstance(first, dict):
        return {key: np.array([[a[key] for a in s] for s in sequences]) for key in first}
    return np.array(sequences)


def test_a_chain_leaves_the_env_bitwise_untouched(perfect):
    u = perfect.unwrapped
    before = u.snapshot()
    u.simulate_candidates(_sequences(perfect, 6, 3), horizon=3)
    after = u.snapshot()
    for name, value in dataclasses.asdict(before).items():
        other = dataclasses.asdict(after)[name]
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, other, err_msg=name)


def test_the_first_step_of_a_chain_is_the_one_step_simulate(perfect):
    seqs = _sequences(perfect, 8, 3)
    chained = perfect.unwrapped.simulate_candidates(seqs, horizon=3)
    one = perfect.unwrapped.simulate_candidates(seqs[:, 0])
    np.testing.assert_array_equal(chained.observations[:, 0], one.observations)
    np.testing.assert_array_equal(chained.max_rho[:, 0], one.max_rho)
    assert (one.played == 1).all()


def test_a_chain_stops_at_the_episode_end_and_repeats_its_last_outcome(tmp_path, case14):
    root = _write_folder(tmp_path / "env", case14, [5, 10, 15])
    env = grid_vec.make(root, opponent=None)
    env.reset(seed=0, options={"scenario_id": 0, "max_steps": 3})
    env.step(0)  # two steps left
    found = env.unwrapped.simulate_candidates(np.zeros((2, 3), dtype=np.int64), horizon=3)
    assert (found.played == 2).all()
    np.testing.assert_array_equal(found.observations[:, 2], found.observations[:, 1])
    assert (found.rewards[:, 2] == 0).all() and (found.rewards[:, 1] != 0).all()
    env.close()


def test_one_step_forecasts_refuse_a_longer_horizon_with_a_clear_error(tmp_path, case14):
    env = grid_vec.make(_write_folder(tmp_path / "env", case14, None), opponent=None)
    env.reset(seed=0)
    u = env.unwrapped
    with pytest.raises(ValueError, match=r"^horizon=2, but the scenario '0000' forecasts 1 step"):
        u.simulate_candidates(np.zeros((1, 2), dtype=np.int64), horizon=2)
    assert u.simulate_candidates(np.zeros(1, dtype=np.int64), horizon=1).played[0] == 1
    env.close()


def test_a_horizon_beyond_the_files_or_badly_shaped_candidates_are_refused(perfect):
    u = perfect.unwrapped
    with pytest.raises(ValueError, match="forecasts 3 step"):
        u.simulate_candidates(np.zeros((1, 4), dtype=np.int64), horizon=4)
    with pytest.raises(ValueError, match=r"shaped \(K, 3, \.\.\.\)"):
        u.simulate_candidates(np.zeros(2, dtype=np.int64), horizon=3)
    with pytest.raises(ValueError, match=r"step 2 of the horizon: actions must be ints"):
        u.simulate_candidates(np.array([[0, -1, 0]]), horizon=3)
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match="horizon must be an int >= 1"):
            u.simulate_candidates(np.zeros((1, 2), dtype=np.int64), horizon=bad)
    with pytest.raises(ValueError, match=f"horizon must be in \\[1, {MAX_HORIZON}\\]"):
        u.simulate_candidates(np.zeros((1, MAX_HORIZON + 1), dtype=np.int64), MAX_HORIZON + 1)


def test_each_step_of_a_chain_counts_as_one_simulate(make_env):
    env = make_env(parameters=Parameters(max_simulate_per_step=5))
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match="max_simulate_per_step=5"):
        env.simulate_candidates(np.zeros((2, 3), dtype=np.int64), horizon=3)
    env.simulate_candidates(np.zeros((1, 5), dtype=np.int64), horizon=5)  # nothing counted before
    with pytest.raises(RuntimeError, match="max_simulate_per_step=5"):
        env.simulate(0)


def test_synthetic_forecasts_chain_across_chunks(case14):
    """The synthetic scenarios' forecast h steps ahead is the one-step forecast made h - 1
    steps later, also past the chunk read."""
    source = SyntheticSource(case14, seed=1, length=100)
    here = ScenarioHandler(source, chunk_size=5)
    later = ScenarioHandler(source, chunk_size=5)
    here.reset(scenario_id=2, fast_forward=3)
    assert here.forecast_horizons is None  # any horizon, up to the scenario's end
    for h in (1, 2, 3, 4, 9):
        later.reset(scenario_id=2, fast_forward=3 + h - 1)
        for a, b in zip(here.rows_ahead(h), later.rows(forecast=True), strict=True):
            np.testing.assert_array_equal(a, b)
    here.reset(scenario_id=2, fast_forward=95)
    with pytest.raises(ValueError, match="no forecast 6 steps ahead of step 95"):
        here.rows_ahead(6)


def test_synthetic_envs_chain_their_forecasts(case14):
    env = grid_vec.make("case14")
    env.reset(seed=3)
    found = env.unwrapped.simulate_candidates(np.zeros((2, 6), dtype=np.int64), horizon=6)
    assert (found.played == 6).all() and not found.terminated.any()
    assert len(np.unique(found.observations[0], axis=0)) == 6  # a new forecast each step
    env.close()


def test_vector_envs_chain_each_sub_env_as_it_chains_alone():
    """The batched vector env's chain (all N * K candidates as rows of one turn per step),
    each sub-env's own, and GridVecEnv's workers' give the same arrays."""
    from grid_vec.vector.grid_commands import GridCommands

    vec = grid_vec.make_vec("case14", 3, vectorization="batched")
    candidates = np.random.default_rng(0).integers(vec.single_action_space.n, size=(3, 4, 3))
    candidates[:, 0] = 0
    vec.reset(seed=7)
    vec.step(np.array([0, 5, 9]))
    together = vec.simulate_candidates(candidates, horizon=3)
    assert together.rewards.shape == (3, 4, 3) and together.played.shape == (3, 4)
    one_by_one = GridCommands.simulate_candidates(vec, candidates, horizon=3)
    workers = grid_vec.make_vec("case14", 3, envs_per_worker=2)
    try:
        workers.reset(seed=7)
        workers.step(np.array([0, 5, 9]))
        in_workers = workers.simulate_candidates(candidates, horizon=3)
    finally:
        workers.close()
        vec.close()
    for other in (one_by_one, in_workers):
        for name in ("observations", "rewards", "terminated", "illegal", "max_rho", "played"):
            np.testing.assert_array_equal(getattr(other, name), getattr(together, name))


@pytest.mark.grid2op
def test_a_chain_matches_grid2op_chained_simulate_on_multi_horizon_forecasts():
    """On l2rpn_idf_2023 (12 forecasts per step): every step of a chain of 4, for
    sequences with substation actions, one in cooldown, and one ending the game, as
    grid2op's obs.simulate chained on the simulated observations: rho within 1e-3, the
    same illegal flags and game overs."""
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    from grid_vec.bench.grid2op_reference import grid2op_env

    folder = Path(grid2op.__file__).parent / "data" / "l2rpn_idf_2023"
    ours = grid_vec.make(folder, opponent=None, maintenance=False)
    horizons = [5 * (h + 1) for h in range(12)]
    theirs = grid2op_env(
        folder, maintenance=False, opponent=False, data_feeding_kwargs={"h_forecast": horizons}
    )
    try:
        u = ours.unwrapped
        theirs.set_id(0)
        obs = theirs.reset()
        ours.reset(seed=0, options={"scenario_id": 0})
        for _ in range(2):
            obs, *_ = theirs.step(theirs.action_space({}))
            ours.step(0)
        subs = np.flatnonzero(u.catalog.kind == KIND_SUB)
        rng = np.random.default_rng(0)
        seqs = np.zeros((6, 4), dtype=np.int64)
        seqs[1, 0], seqs[2, 1], seqs[3] = subs[3], subs[10], rng.choice(subs, 4)
        seqs[4, :2] = subs[3]  # the second in cooldown
        seqs[5] = rng.choice(len(u.catalog), 4)  # ends the game at the last step
        found = u.simulate_candidates(seqs, horizon=4)
        assert found.illegal[4, 1] and found.terminated[5].any()
        for j, seq in enumerate(seqs):
            simulated = obs
            for h, action in enumerate(seq.tolist()):
                grid2op_action = theirs.action_space(u.catalog.grid2op_action(action))
                simulated, _, done, info = simulated.simulate(grid2op_action)
                assert found.terminated[j, h] == done, (j, h)
                assert found.illegal[j, h] == bool(info["is_illegal"]), (j, h)
                if done:
                    assert found.played[j] == h + 1
                    break
                rho = u.view(found.observations[j, h]).rho
                np.testing.assert_allclose(rho, simulated.rho, atol=1e-3, err_msg=f"{j}, {h}")
    finally:
        theirs.close()
        ours.close()


@pytest.mark.parametrize("horizon", [1, 3])
def test_candidates_are_played_a_chunk_of_copies_at_a_time_with_the_same_results(
    monkeypatch, horizon
):
    """A look-ahead holds at most chunk_rows copies of the envs' states at once (a case118
    catalog at once would hold hundreds of MB); the results do not depend on the chunks."""
    from grid_vec.core import lookahead
    from grid_vec.core.state import BatchState

    vec = grid_vec.make_vec("case14", 3, vectorization="batched")
    vec.reset(seed=2)
    vec.step(np.array([0, 3, 8]))
    shape = (3, 10, horizon) if horizon > 1 else (3, 10)
    candidates = np.random.default_rng(1).integers(vec.single_action_space.n, size=shape)
    whole = vec.simulate_candidates(candidates, horizon=horizon)
    taken = []
    take = BatchState.take
    monkeypatch.setattr(
        BatchState, "take", lambda self, rows: taken.append(len(rows)) or take(self, rows)
    )
    n_flows = vec._batch.game.grid.flows.shape[1]
    monkeypatch.setattr(lookahead, "CHUNK_BYTES", 7 * 8 * n_flows)  # 7 copies a chunk
    chunked = vec.simulate_candidates(candidates, horizon=horizon)
    vec.close()
    assert taken == [7, 7, 7, 7, 2]
    for name in ("observations", "rewards", "terminated", "illegal", "max_rho", "played"):
        np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name), err_msg=name)
    assert (chunked.game_over_reason == whole.game_over_reason).all()


def test_vector_envs_refuse_a_horizon_their_folder_does_not_forecast_naming_the_sub_env(
    tmp_path, case14
):
    root = _write_folder(tmp_path / "env", case14, None)
    candidates = np.zeros((2, 1, 2), dtype=np.int64)
    for vectorization in ("batched", None):
        kwargs = {"vectorization": vectorization} if vectorization else {}
        envs = grid_vec.make_vec(root, 2, opponent=None, **kwargs)
        try:
            envs.reset(seed=0)
            with pytest.raises(ValueError, match="forecasts 1 step") as refused:
                envs.simulate_candidates(candidates, horizon=2)
            assert refused.value.env_index in (0, 1)  # the sub-env, as every sub-env error
            assert envs.simulate_candidates(candidates[:, :, 0]).played.shape == (2, 1)
        finally:
            envs.close()

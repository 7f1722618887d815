"""GridEnv API: spaces, observation view and physics, reset options, simulate, bad input."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import grid_vec
from grid_vec.core.parameters import Parameters
from grid_vec.core.rules.opponent import RandomLineOpponent


def test_check_env_passes(make_env):
    env = make_env()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    # Warnings left, explained: flows/injections are unbounded physical quantities, and
    # the env has no render mode.
    explained = ("infinity", "render modes")
    messages = [str(w.message) for w in caught if not any(e in str(w.message) for e in explained)]
    assert not [m for m in messages if "WARN" in m], messages


def test_gymnasium_make_and_registration():
    env = gym.make("grid_vec/Case14-v0", max_iter=5)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert {"scenario_id", "scenario_name"} <= set(info)
    assert "grid_vec/Case118-v0" in gym.registry
    env.close()


def test_action_catalog(make_env):
    env = make_env()
    counts = env.catalog.counts
    assert counts == {"do_nothing": 1, "line_status": 20, "substation": 105, "total": 126}
    assert env.describe_action(0) == "do nothing"
    assert env.describe_action(1).startswith("toggle status of branch")
    assert "bus bar 2" in env.describe_action(125)
    for index in range(1 + counts["line_status"], counts["total"]):
        buses = env.catalog.sub_buses[index]
        sub = env.catalog.target[index]
        lo, hi = env.topology.sub_start[sub], env.topology.sub_start[sub + 1]
        assert len(buses) == hi - lo and buses[0] == 1
        if (buses == 2).any():  # both bus bars hold >= 2 elements, >= 1 branch
            is_branch = np.isin(np.arange(lo, hi), np.r_[env.topology.pos_or, env.topology.pos_ex])
            for bar in (1, 2):
                assert (buses == bar).sum() >= 2 and ((buses == bar) & is_branch).any()
    with pytest.raises(ValueError, match=r"\[0, 125\]"):
        env.describe_action(126)


def test_view_and_physics_consistency(make_env, case14):
    limits = 3 * case14.thermal_limit_a
    env = make_env(thermal_limits=limits)
    obs, _ = env.reset(seed=0)
    for _ in range(3):
        obs, *_ = env.step(0)
        view = env.view(obs)
        res = env._batch.game.grid.solver.results(0)
        np.testing.assert_allclose(view.rho, res.a_or / limits, rtol=1e-6)
        np.testing.assert_allclose(view.rho, view.a_or / limits, rtol=1e-5)
        for name in ("p_or", "q_or", "v_or", "a_or", "p_ex", "load_p", "gen_p", "gen_q", "gen_v"):
            np.testing.assert_allclose(getattr(view, name), getattr(res, name), rtol=1e-6)
    assert np.shares_memory(view.rho, obs)
    assert view.line_status.tolist() == [1.0] * case14.n_branch
    assert (view.time_next_maintenance == -1).all()
    assert view.step[0] == 3 and view.year[0] == 2019
    with pytest.raises(AttributeError, match="segments"):
        _ = view.nope


@pytest.mark.slow
def test_pandapower_and_lightsim_agree(case14):
    from grid_vec.chronics.synthetic import SyntheticSource
    from grid_vec.env.grid_env import GridEnv

    envs = [
        GridEnv(
            case14,
            SyntheticSource(case14, length=20),
            backend=b,
            thermal_limits=case14.thermal_limit_a,
        )
        for b in ("lightsim2grid", "pandapower")
    ]
    obs = [e.reset(seed=4)[0] for e in envs]
    np.testing.assert_allclose(obs[0], obs[1], rtol=1e-4, atol=1e-4)
    for action in (0, 3, 0, 1 + 20 + 2, 0):
        obs = [e.step(action)[0] for e in envs]
        np.testing.assert_allclose(obs[0], obs[1], rtol=1e-4, atol=1e-4)


def test_same_seed_same_trajectory_another_seed_another(make_env):
    """The seed drives the opponent: same seed, same attacks and observations."""

    def play(seed: int) -> tuple[np.ndarray, list[int]]:
        opponent = RandomLineOpponent(
            [0, 5, 9], budget_per_step=1.0, attack_duration=3, attack_cooldown=2
        )
        env = make_env(opponent=opponent)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(0)  # the same actions whatever the seed
        out, attacked = [obs], []
        for _ in range(40):
            action = int(rng.integers(env.action_space.n)) if rng.random() < 0.2 else 0
            obs, _, term, trunc, info = env.step(action)
            out.append(obs)
            attacked.append(info["attacked_branch"])
            if term or trunc:
                break
        return np.array(out), [b for b in attacked if b >= 0]

    first, attacks = play(7)
    again, attacks_again = play(7)
    assert len(attacks) >= 2  # the seeded opponent acted within the compared steps
    np.testing.assert_array_equal(first, again)
    assert attacks == attacks_again
    other, _ = play(8)
    assert other.shape != first.shape or not np.array_equal(other, first)


def test_simulate_leaves_state_untouched(make_env):
    env, twin = make_env(), make_env()
    env.reset(seed=3)
    twin.reset(seed=3)
    sim_obs, reward, term, _ = env.simulate(5)
    assert reward == 1.0 and not term and env.view(sim_obs).line_status[4] == 0
    for action in (0, 7, 30):
        env.simulate(action)
    assert env.timings()["simulates"] == 4
    for action in (0, 2, 0):
        a, b = env.step(action), twin.step(action)
        np.testing.assert_array_equal(a[0], b[0])
    assert env.view(env.simulate(0)[0]).step[0] == env.view(a[0]).step[0] + 1


def test_max_simulate_per_step_is_enforced_and_renewed_each_step(make_env):
    env = make_env(parameters=Parameters(max_simulate_per_step=1))
    env.reset(seed=0)
    env.simulate(0)
    with pytest.raises(RuntimeError, match="max_simulate_per_step"):
        env.simulate(0)
    env.step(0)
    env.simulate(0)


def test_reset_options(make_env, case14):
    env = make_env()
    _, info = env.reset(options={"scenario_id": 3})
    assert info["scenario_id"] == 3 and env.scenario_info.id == 3
    _, info = env.reset(options={"scenario_id": info["scenario_name"], "fast_forward": 12})
    assert info["scenario_id"] == 3
    obs, _ = env.reset(options={"scenario_id": 3, "fast_forward": 12})
    assert env.view(obs).hour_of_day[0] == 1  # 12 steps of 5 minutes
    status = np.ones(case14.n_branch, dtype=bool)
    status[2] = False
    obs, _ = env.reset(options={"init_state": {"line_status": status}})
    assert env.view(obs).line_status[2] == 0
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"scenario": 1})
    with pytest.raises(ValueError, match="init_state"):
        env.reset(options={"init_state": {"bus": [3]}})
    env.set_scenario_id(5)
    assert env.reset()[1]["scenario_id"] == 5


@pytest.mark.parametrize("bad", [-1, 126, 1.5, "1", np.array([1, 2]), None, True])
def test_bad_discrete_action(make_env, bad):
    env = make_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"int in \[0, 125\]"):
        env.step(bad)
    assert not env.step(np.int64(0))[2]  # still usable


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (np.array([np.nan, 0, 0, 0, 0], dtype=np.float32), "finite"),
        (np.zeros(3, dtype=np.float32), "shape"),
        (np.zeros(5, dtype=np.int64), "float array"),
        (np.full(5, 100.0, dtype=np.float32), "ramp"),
        ([0.0, 0.0, 0.0, 0.0, 0.0], "float array"),
    ],
)
def test_bad_redispatch_action(make_env, bad, match):
    env = make_env(action_type="redispatch")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        env.step(bad)
    assert not env.step(np.zeros(5, dtype=np.float32))[2]


def test_redispatch_moves_generators_within_limits(make_env, case14):
    env = make_env(action_type="redispatch")
    obs, _ = env.reset(seed=0)
    action = env.action_space.high.copy()
    action[1:] = 0.0  # only the first dispatchable generator
    g, slack = env.redispatchable[0], env.redispatchable[-1]
    assert env.model.gen_kind[slack] == "slack"
    for _ in range(3):
        obs, _, _, _, info = env.step(action)
        assert not info["is_ambiguous"]
    view = env.view(obs)
    # the others at 0 MW do not move (grid2op's rule): the slack makes up for it
    assert view.actual_dispatch[g] == pytest.approx(3 * action[0], rel=1e-4)
    assert view.actual_dispatch[slack] == pytest.approx(-3 * action[0], rel=1e-4)
    assert case14.gen_pmin[g] <= view.gen_p[g] <= case14.gen_pmax[g] + 1e-6


def test_reward_and_other_rewards_follow_their_formulas(make_env, case14):
    env = make_env(
        thermal_limits=case14.thermal_limit_a,  # real limits: rho matters
        reward="line_margin",
        other_rewards=["flat", "redispatch_cost"],
    )
    env.reset(seed=0)
    obs, reward, _, _, info = env.step(3)  # branch 2 out: its margin counts 0
    view = env.view(obs)
    assert view.line_status[2] == 0 and view.rho.max() > 0.2
    margin = np.maximum(1.0 - view.rho, 0.0) * view.line_status
    assert reward == pytest.approx(margin.mean(), rel=1e-5)
    assert info["other_rewards"]["flat"] == 1.0
    load = view.load_p.sum()
    losses = view.gen_p.sum() - load  # no redispatch: the cost is the losses alone
    assert losses > 0
    assert info["other_rewards"]["redispatch_cost"] == pytest.approx(1 - losses / load, rel=1e-5)
    with pytest.raises(ValueError, match="reward: unknown reward 'nope'"):
        make_env(reward="nope")
    with pytest.raises(ValueError, match="other_rewards"):
        make_env(other_rewards=["nope"])


def test_opponent_attacks_when_its_budget_allows_and_blocks_reconnection(make_env):
    """An attack needs attack_cost * attack_duration = 8 of budget, earned at 1 per step: the
    attacks come every 8 steps (the cooldown alone would allow one every 4 + 2 steps)."""
    targets = [0, 5, 9]
    opponent = RandomLineOpponent(
        targets, budget_per_step=1.0, attack_cost=2.0, attack_duration=4, attack_cooldown=2
    )
    env = make_env(length=200, opponent=opponent)
    obs, _ = env.reset(seed=1)
    attack_steps, attacked = [], -1
    for step in range(1, 61):
        view = env.view(obs)
        ready = [b for b in targets if not view.line_status[b]]
        ready = [b for b in ready if view.time_before_cooldown_line[b] == 0]
        # right after an attack: try to reconnect its branch at once; else reconnect a branch
        # whose attack is over, so that the opponent keeps targets (-1: do nothing)
        target = attacked if attacked >= 0 else next(iter(ready), -1)
        obs, _, term, trunc, info = env.step(1 + target)
        assert not term and not trunc and env.opponent_info()["budget"] >= 0.0
        if target >= 0:
            status = env.view(obs).line_status[target]
            if attacked >= 0:  # blocked while the attack lasts
                assert info["is_illegal"] and status == 0
            else:
                assert not info["is_illegal"] and status == 1
        attacked = info["attacked_branch"]
        if attacked >= 0:
            assert env.view(obs).line_status[attacked] == 0
            attack_steps.append(step)
    assert attack_steps == list(range(8, 61, 8))
    with pytest.raises(ValueError, match="unknown branch"):
        make_env(opponent=RandomLineOpponent(["nope"]))


def test_make_argument_errors(case14):
    with pytest.raises(ValueError, match=r"thermal_limits.*\(20\)"):
        grid_vec.make("case14", thermal_limits=np.ones(3))
    with pytest.raises(ValueError, match=r"thermal_limits.*> 0"):
        grid_vec.make("case14", thermal_limits=-np.ones(20))
    with pytest.raises(ValueError, match="id_or_path"):
        grid_vec.make("case15")
    with pytest.raises(ValueError, match="action_type"):
        grid_vec.make("case14", action_type="both")
    with pytest.raises(ValueError, match="allow_negative_loads"):  # folder datasets only
        grid_vec.make("case14", allow_negative_loads=True)


def test_parameters_defaults_and_grid2op_dict():
    p = Parameters()
    assert (p.nb_timestep_overflow_allowed, p.hard_overflow_threshold) == (2, 2.0)
    assert (p.nb_timestep_reconnection, p.max_line_status_changed, p.max_sub_changed) == (10, 1, 1)
    q = Parameters.from_grid2op_dict(
        {"NB_TIMESTEP_COOLDOWN_LINE": "3", "NO_OVERFLOW_DISCONNECTION": "True", "ENV_DC": False}
    )
    assert q.nb_timestep_cooldown_line == 3 and q.no_overflow_disconnection
    assert Parameters.from_grid2op_dict(q.to_grid2op_dict()) == q
    with pytest.raises(ValueError, match="nb_timestep_overflow_allowed"):
        Parameters(nb_timestep_overflow_allowed=-1)
    with pytest.raises(ValueError, match="HARD_OVERFLOW_THRESHOLD"):
        Parameters.from_grid2op_dict({"HARD_OVERFLOW_THRESHOLD": "x"})


def test_import_grid_vec_is_light():
    code = (
        "import sys, grid_vec, gymnasium; "
        "assert 'grid_vec/Case14-v0' in gymnasium.registry; "
        "assert 'pandapower' not in sys.modules and 'grid_vec.env.grid_env' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_pickled_factory_runs_without_pandapower(case14):
    from grid_vec.chronics.synthetic import SyntheticSource
    from grid_vec.env.grid_env import GridEnv

    source = SyntheticSource(case14, length=30)
    factory = cloudpickle.dumps(lambda: GridEnv(case14, source))
    code = textwrap.dedent(
        """
        import sys, pickle
        env = pickle.loads(sys.stdin.buffer.read())()
        env.reset(seed=0)
        for a in range(10):
            env.step(0)
        env.simulate(0)
        assert "pandapower" not in sys.modules, "pandapower was imported"
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=factory, capture_output=True, timeout=120
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    assert out.stdout.strip() == b"ok"


def test_folder_env_from_grid2op_data():
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    from pathlib import Path

    path = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"
    env = grid_vec.make(path, max_iter=10)
    obs, info = env.reset(seed=0)
    assert info["scenario_name"] and env.observation_space.contains(obs)
    assert env.parameters == Parameters()
    for _ in range(10):
        obs, _, term, trunc, _ = env.step(0)
    assert trunc and not term


def test_scenario_info_is_none_before_the_first_reset(make_env):
    env = make_env()
    assert env.scenario_info is None
    env.reset(seed=0, options={"scenario_id": 2})
    assert env.scenario_info.id == 2


def test_make_gives_the_env_an_identity():
    env = grid_vec.make("case14", max_iter=7, scenario_seed=3)
    assert env.spec.id == "grid_vec/Case14-v0"
    again = gym.make(env.spec)  # the spec rebuilds the same env
    assert again.unwrapped.spec.kwargs["max_iter"] == 7
    first, _ = env.reset(seed=5)
    second, _ = again.reset(seed=5)
    np.testing.assert_array_equal(first, second)
    assert gym.make("grid_vec/Case118-v0").unwrapped.spec.id == "grid_vec/Case118-v0"


def _sandbox_copy(tmp_path):
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    import shutil
    from pathlib import Path

    folder = tmp_path / "my sandbox"
    shutil.copytree(Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox", folder)
    return folder


def test_folder_spec_and_negative_loads(tmp_path):
    import bz2

    folder = _sandbox_copy(tmp_path)
    load_p = folder / "chronics" / "0000" / "load_p.csv.bz2"
    header, first, *rest = bz2.decompress(load_p.read_bytes()).decode().splitlines()
    first = ";".join(["-3.5", *first.split(";")[1:]])  # the first load exports 3.5 MW
    load_p.write_bytes(bz2.compress("\n".join([header, first, *rest, ""]).encode()))
    env = grid_vec.make(folder, allow_negative_loads=False)
    assert env.spec.id == "grid_vec/my_sandbox" and env.spec.kwargs["id_or_path"] == str(folder)
    assert env.spec.kwargs["allow_negative_loads"] is False
    with pytest.raises(ValueError, match="allow_negative_loads"):
        env.reset(options={"scenario_id": 0})
    env = grid_vec.make(folder)  # grid2op's rule: loads may export power
    obs, _ = env.reset(options={"scenario_id": 0})
    assert env.view(obs).load_p[0] == pytest.approx(-3.5)
    assert "allow_negative_loads" not in env.spec.kwargs


def test_infos_batch_in_gymnasium_vector_envs(case14):
    """Every info entry has a fixed shape: SyncVectorEnv batches them over many steps while
    the sub-envs trip different branches."""
    from env_helpers import loose_limits

    # soft overflows from the start: both sub-envs trip on their 3rd step, 1 branch vs 2
    tight = [loose_limits(case14, b1=240.0), loose_limits(case14, b0=500.0, b3=180.0)]
    fns = [
        (lambda limits=limits: grid_vec.make("case14", thermal_limits=limits, max_iter=30))
        for limits in tight
    ]
    vec = gym.vector.SyncVectorEnv(fns)
    vec.reset(seed=0)
    tripped_counts = set()
    for _ in range(60):
        _, _, _, _, infos = vec.step(np.zeros(2, dtype=np.int64))
        if "tripped_branches" not in infos:  # both sub-envs were resetting
            continue
        assert infos["tripped_branches"].shape == (2, case14.n_branch)
        assert infos["tripped_branches"].dtype == bool
        tripped_counts.add(tuple(infos["tripped_branches"].sum(axis=1)))
    assert any(a != b for a, b in tripped_counts)  # different trips batched in one step
    vec.close()


@pytest.mark.slow
def test_building_envs_prints_no_warning_about_numba():
    """pandapower -> lightsim2grid -> grid2op warn about numba at import, and pandapower's
    runpp logs it: none of it reaches the grid_vec user (a fresh process imports them)."""
    code = textwrap.dedent(
        """
        import importlib.util, pathlib, grid_vec
        env = grid_vec.make("case14", backend="pandapower")
        env.reset(seed=0)
        env.step(0)
        spec = importlib.util.find_spec("grid2op")
        if spec is not None:
            root = pathlib.Path(next(iter(spec.submodule_search_locations)))
            grid_vec.make(root / "data" / "l2rpn_case14_sandbox").reset(seed=0)
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-c", code], capture_output=True, timeout=240
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    assert b"numba" not in out.stderr.lower() + out.stdout.lower(), out.stderr.decode()[-2000:]


def test_time_features_match_datetime():
    import datetime as dt

    from grid_vec.core.observation import time_features

    rng = np.random.default_rng(0)
    for _ in range(50):
        start = dt.datetime(2015, 1, 1) + dt.timedelta(minutes=int(rng.integers(0, 10**7)))
        step = dt.timedelta(minutes=int(rng.choice([5, 15, 60])))
        first = int(rng.integers(0, 5000))
        rows = time_features(start, step, first, 40)
        for k, row in enumerate(rows):
            when = start + step * (first + k)
            expected = (when.year, when.month, when.day, when.hour, when.minute, when.weekday())
            assert tuple(row) == expected, when


def test_make_again_reads_scenario_files_edited_since_the_last_make(tmp_path):
    # the compiled grid is cached per process; the scenario folders are read as they are now
    import bz2

    folder = _sandbox_copy(tmp_path)
    env = grid_vec.make(folder)
    env.reset(seed=0, options={"scenario_id": 0})
    before = env.scenario_info.length
    scenario = sorted((folder / "chronics").iterdir())[0]
    for csv in scenario.glob("*.csv.bz2"):  # keep the header and the first 100 rows
        lines = bz2.decompress(csv.read_bytes()).decode().splitlines(keepends=True)
        csv.write_bytes(bz2.compress("".join(lines[:101]).encode()))
    again = grid_vec.make(folder)
    again.reset(seed=0, options={"scenario_id": 0})
    assert before > 100 and again.scenario_info.length == 100
    assert again.unwrapped.model is env.unwrapped.model  # the grid was not compiled again


def test_catalog_actions_in_grid2ops_vocabulary(case14):
    """do-nothing is {}, a toggle change_line_status, a configuration set_bus on the whole
    substation in topo_vect order."""
    from grid_vec.core.actions import KIND_LINE, KIND_SUB, ActionCatalog
    from grid_vec.core.topology import layout_of

    layout = layout_of(case14)
    catalog = ActionCatalog.from_model(case14, layout)
    assert catalog.grid2op_action(0) == {}
    line = int(np.flatnonzero(catalog.kind == KIND_LINE)[3])
    assert catalog.grid2op_action(line) == {"change_line_status": [int(catalog.target[line])]}
    sub = int(np.flatnonzero(catalog.kind == KIND_SUB)[5])
    ((target, buses),) = catalog.grid2op_action(sub)["set_bus"]["substations_id"]
    assert target == catalog.target[sub]
    assert buses == list(catalog.sub_buses[sub])
    assert len(buses) == layout.sub_start[target + 1] - layout.sub_start[target]


def test_observed_time_features_follow_the_calendar_across_every_block():
    """A reset fills a short scenario window (time features), later steps refill longer ones:
    every step's observation (and a simulate's, one step ahead) holds its own step's
    calendar, before, at and after each refill."""
    import datetime as dt

    from grid_vec.core import scenario_rows
    from grid_vec.core.observation import time_features

    env = grid_vec.make("case14", reward="flat")
    obs, _ = env.reset(seed=0, options={"scenario_id": 1, "fast_forward": 7})
    info = env.unwrapped.scenario_info
    names = ["year", "month", "day", "hour_of_day", "minute_of_hour", "day_of_week"]

    def features(o) -> tuple:
        view = env.unwrapped.view(o)
        return tuple(float(np.asarray(getattr(view, n)).ravel()[0]) for n in names)

    def expected(step: int) -> tuple:
        return tuple(float(x) for x in time_features(info.start, info.step_duration, step, 1)[0])

    assert isinstance(info.start, dt.datetime)
    # past the reset's block and the first full block after it
    steps = scenario_rows.FIRST_WINDOW + scenario_rows.WINDOW + 5
    assert features(obs) == expected(7)
    for t in range(1, steps):
        sim_obs, *_ = env.unwrapped.simulate(0)
        assert features(sim_obs) == expected(7 + t), t
        obs, _, terminated, truncated, _ = env.step(0)
        assert not (terminated or truncated)
        assert features(obs) == expected(7 + t), t

"""Storage units in the env: grid2op's rules (grid_vec.core.rules.storage) by hand on case14
with two units, the action and observation spaces, batches against single envs, and side by side
with grid2op + LightSimBackend on its storage folders (do-nothing in test_grid2op_folders.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from env_helpers import grid2op_env

import grid_vec
from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.core.parameters import Parameters
from grid_vec.core.rules.storage import StorageUnits
from grid_vec.env.grid_env import GridEnv
from grid_vec.env.make import GridEnvFactory
from grid_vec.grid.compile import compile_net
from grid_vec.grid.networks import load_network

F32 = np.float32
HOURS = F32(5 / 60)  # the synthetic scenarios' 5-minute steps
# two units as educ_case14_storage's: Emax 15 / 7 MWh, 5 / 10 MW, loss 0.1 MW,
# charging efficiency 0.95 / 1, discharging 1 / 0.9
UNITS = StorageUnits(
    emax=np.array([15.0, 7.0], dtype=F32),
    emin=np.array([0.0, 0.0], dtype=F32),
    max_p_prod=np.array([5.0, 10.0], dtype=F32),
    max_p_absorb=np.array([5.0, 10.0], dtype=F32),
    loss=np.array([0.1, 0.1], dtype=F32),
    charging_efficiency=np.array([0.95, 1.0], dtype=F32),
    discharging_efficiency=np.array([1.0, 0.9], dtype=F32),
)
OBS = ("storage_charge", "storage_power_target", "storage_power", "storage_theta",
       "actual_dispatch", "gen_p")  # fmt: skip


@pytest.fixture(scope="module")
def model():
    import pandapower as pp

    net = load_network("case14")
    pp.create_storage(net, bus=4, p_mw=0.0, max_e_mwh=15.0)
    pp.create_storage(net, bus=8, p_mw=0.0, max_e_mwh=7.0)
    return compile_net(net, name="case14_storage")


def _env(model, action_type: str = "storage", **kwargs) -> GridEnv:
    kwargs.setdefault("observation_attributes", OBS)
    return GridEnv(
        model, SyntheticSource(model, seed=3), action_type=action_type, storage_units=UNITS,
        **kwargs,
    )  # fmt: skip


def _step(env, p: list[float]):
    obs, _, term, trunc, info = env.step(np.array(p, dtype=F32))
    assert not term and not trunc, info
    return env.view(obs), info


def test_charges_efficiencies_bounds_and_losses_by_hand(model):
    env = _env(model)
    view = env.view(env.reset(seed=0)[0])
    # the reset observation shows the initial charge: the loss added then drained
    np.testing.assert_allclose(view.storage_charge, [7.5, 3.5], atol=1e-6)
    loss = F32(0.1) * HOURS
    view, _ = _step(env, [5.0, -5.0])
    expected = [7.5 + 5 * HOURS * 0.95 - loss, 3.5 - 5 * HOURS / 0.9 - loss]
    np.testing.assert_allclose(view.storage_charge, expected, atol=1e-5)
    np.testing.assert_array_equal(view.storage_power, [5.0, -5.0])
    np.testing.assert_array_equal(view.storage_power_target, [5.0, -5.0])
    # the generators made up for the units' total (0 here)
    assert abs(float(view.actual_dispatch.sum())) < 1e-3
    # unit 1 charges at 10 MW until it is full: the last step takes only what fits
    charge = float(view.storage_charge[1])
    total_dispatch = []
    for _ in range(6):
        view, _ = _step(env, [0.0, 10.0])
        total_dispatch.append(float(view.actual_dispatch.sum()))
        room = 7.0 - charge
        taken = min(10.0, room / float(HOURS))
        assert view.storage_power[1] == pytest.approx(taken, abs=1e-4)
        assert view.storage_power[0] == 0.0  # setpoints do not persist
        charge = min(7.0, charge + 10.0 * float(HOURS)) - float(loss)
        assert view.storage_charge[1] == pytest.approx(charge, abs=1e-5)
        # the generators produce what the units absorb
        assert total_dispatch[-1] == pytest.approx(float(view.storage_power.sum()), abs=1e-3)
    assert view.storage_power[1] < 10.0  # it was clamped
    # nothing asked: no unit takes anything, the grid sees 0, the charges only lose
    view, _ = _step(env, [0.0, 0.0])
    np.testing.assert_array_equal(view.storage_power, [0.0, 0.0])
    results = env.batch_row[0].game.grid.solver.results(0)
    np.testing.assert_array_equal(results.storage_p, [0.0, 0.0])
    assert abs(float(view.actual_dispatch.sum())) < 1e-3
    np.testing.assert_allclose(view.storage_theta, np.degrees(results.storage_theta))


def test_discharging_stops_at_emin(model):
    env = _env(model)
    env.reset(seed=0)
    for _ in range(8):  # 3.5 MWh at 10 MW / 0.9: empty within 4 steps
        view, _ = _step(env, [0.0, -10.0])
    assert view.storage_charge[1] == 0.0  # Emin, then the loss floored at 0
    assert view.storage_power[1] == 0.0  # an empty unit gives nothing


def test_parameters_initial_capacity_and_no_loss(model):
    params = Parameters(init_storage_capacity=0.2, activate_storage_loss=False)
    env = _env(model, parameters=params)
    view = env.view(env.reset(seed=0)[0])
    np.testing.assert_allclose(view.storage_charge, [3.0, 1.4], atol=1e-6)
    view, _ = _step(env, [5.0, -5.0])  # efficiencies and losses off
    np.testing.assert_allclose(view.storage_charge, [3.0 + 5 * HOURS, 1.4 - 5 * HOURS], atol=1e-6)
    assert Parameters.from_grid2op_dict(params.to_grid2op_dict()) == params
    q = Parameters.from_grid2op_dict({"INIT_STORAGE_CAPACITY": "1", "ACTIVATE_STORAGE_LOSS": "0"})
    assert (q.init_storage_capacity, q.activate_storage_loss) == (1.0, False)
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match="init_storage_capacity"):
            Parameters(init_storage_capacity=bad)
    with pytest.raises(TypeError, match="init_storage_capacity"):
        Parameters(init_storage_capacity=True)
    with pytest.raises(TypeError, match="activate_storage_loss"):
        Parameters(activate_storage_loss=1)


def test_action_spaces_columns_and_refusals(model):
    env = _env(model)
    np.testing.assert_array_equal(env.action_space.low, [-5.0, -10.0])
    np.testing.assert_array_equal(env.action_space.high, [5.0, 10.0])
    env.reset(seed=0)
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(np.array([6.0, 0.0], dtype=F32))
    assert env.describe_action(np.array([3.0, -2.0], dtype=F32)) == (
        "charge storage_4_0 3.00 MW; discharge storage_8_1 2.00 MW"
    )
    # continuous: redispatch, curtailment, then storage columns
    both = _env(model, "continuous", observation_attributes=None)
    layout = both.batch_row[0].continuous
    n_r, n_c = len(layout.redispatch_gens), len(layout.curtail_gens)
    assert layout.controls == ("redispatch", "curtailment", "storage")
    assert both.action_space.shape == (n_r + n_c + 2,)
    np.testing.assert_array_equal(both.action_space.low[n_r + n_c :], [-5.0, -10.0])
    action = both.action_space.high.copy()
    action[: n_r + n_c] = [0.0] * n_r + [1.0] * n_c
    action[n_r + n_c :] = [0.0, 4.0]
    redispatch, curtail, storage = layout.split(action[None]).values()
    assert (
        not redispatch.any()
        and np.isnan(curtail[0, ~np.isin(np.arange(model.n_gen), layout.curtail_gens)]).all()
    )
    np.testing.assert_array_equal(storage, [[0.0, 4.0]])
    both.reset(seed=0)
    obs, _, term, _, info = both.step(action)
    assert not term and obs.shape == both.observation_space.shape, info
    # without storage units there are no storage columns, and no "storage" action type
    plain = grid_vec.make("case14", action_type="continuous")
    assert plain.unwrapped._batch.continuous.controls == ("redispatch", "curtailment")
    with pytest.raises(ValueError, match="storage units"):
        grid_vec.make("case14", action_type="storage")
    with pytest.raises(ValueError, match="storage_units"):
        GridEnv(model, SyntheticSource(model, seed=3))


def test_default_observation_leaves_storage_out(model):
    """The storage attributes are chosen ones: the default observation of a grid with storage
    is laid out as without."""
    env = _env(model, observation_attributes=None)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (env.obs_layout.size,)
    assert "storage_charge" not in env.obs_layout.names
    chosen = _env(model)
    assert chosen.obs_layout.size == 4 * 2 + 2 * model.n_gen


def test_simulate_plays_the_storage_action_on_a_copy(model):
    env = _env(model)
    env.reset(seed=0)
    before = env.batch_row[0].game.grid.storage_charge.copy()
    sim_obs, *_ = env.simulate(np.array([5.0, -5.0], dtype=F32))
    np.testing.assert_array_equal(env.batch_row[0].game.grid.storage_charge, before)
    view, _ = _step(env, [5.0, -5.0])
    # the charges do not depend on the injections: the forecast's step gives the same
    np.testing.assert_array_equal(env.view(sim_obs).storage_charge, view.storage_charge)


@pytest.mark.parametrize("n", [1, 3])
def test_a_batch_plays_what_single_envs_play(model, n):
    """N rows of one batch, stepped together, against N GridEnvs, under random storage,
    redispatch and curtailment actions (continuous)."""
    from grid_vec.vector.batched import BatchedGridVecEnv

    factory = GridEnvFactory(
        model, SyntheticSource(model, seed=3),
        {"action_type": "continuous", "storage_units": UNITS, "observation_attributes": OBS},
        None,
    )  # fmt: skip
    batched = BatchedGridVecEnv(factory.sharing_one_batch(n))
    singles = [factory() for _ in range(n)]
    space = singles[0].action_space
    rng = np.random.default_rng(7)
    obs, _ = batched.reset(seed=11)
    for i, env in enumerate(singles):
        single_obs, _ = env.reset(seed=11 + i)
        np.testing.assert_array_equal(obs[i], single_obs)
    low, high = 0.3 * space.low, 0.3 * space.high
    for _ in range(40):
        actions = rng.uniform(low, high, size=(n, space.shape[0])).astype(F32)
        obs, rewards, term, trunc, _ = batched.step(actions)
        for i, env in enumerate(singles):
            if term[i] or trunc[i]:
                continue
            single_obs, reward, s_term, s_trunc, _ = env.step(actions[i])
            np.testing.assert_array_equal(obs[i], single_obs)
            assert (reward, s_term, s_trunc) == (rewards[i], term[i], trunc[i])
    batched.close()


# --- side by side with grid2op ----------------------------------------------------------


@pytest.fixture(scope="module")
def data() -> Path:
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    pytest.importorskip("lightsim2grid")
    return Path(grid2op.__file__).parent / "data"


def _pair(data: Path, name: str, action_type: str):
    from grid2op.Action import PlayableAction

    ours = grid_vec.make(
        data / name, opponent=None, maintenance=False, action_type=action_type,
        reward="flat", observation_attributes=OBS,
    )  # fmt: skip
    theirs = grid2op_env(
        data / name, maintenance=False, opponent=False, action_class=PlayableAction
    )
    theirs.set_thermal_limit(ours.thermal_limit)
    return ours, theirs


def _grid2op_action(env, theirs, action: np.ndarray):
    layout = env.unwrapped._batch.continuous
    n_r, n_c = len(layout.redispatch_gens), len(layout.curtail_gens)
    act: dict = {"set_storage": [(u, float(v)) for u, v in enumerate(action[n_r + n_c :])]}
    if "redispatch" in layout.controls:
        act["redispatch"] = [
            (int(g), float(v)) for g, v in zip(layout.redispatch_gens, action[:n_r], strict=True)
        ]
    if "curtailment" in layout.controls:
        act["curtail"] = [
            (int(g), float(v))
            for g, v in zip(layout.curtail_gens, action[n_r : n_r + n_c], strict=True)
        ]
    return theirs.action_space(act)


def _side_by_side(ours, theirs, actions, scenario: int = 0) -> tuple[int, int]:
    """Play the same actions on both; compare each step; (steps played, failed redispatches)."""
    theirs.set_id(scenario)
    g_obs = theirs.reset()
    obs, _ = ours.reset(options={"scenario_id": scenario})
    np.testing.assert_allclose(ours.view(obs).storage_charge, g_obs.storage_charge, atol=1e-5)
    failed = 0
    for t, action in enumerate(actions, start=1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g_obs, _, g_done, g_info = theirs.step(_grid2op_action(ours, theirs, action))
        obs, _, term, trunc, info = ours.step(action)
        assert bool(g_info["failed_redispatching"]) == ("failed_redispatch_reason" in info), t
        failed += bool(g_info["failed_redispatching"])
        assert g_done == (term or trunc), (t, info.get("game_over_reason"), g_info["exception"])
        if g_done:
            return t, failed
        view = ours.view(obs)
        for name in ("storage_charge", "storage_power", "storage_power_target"):
            np.testing.assert_allclose(getattr(view, name), getattr(g_obs, name), atol=1e-3,
                                       err_msg=f"{name} step {t}")  # fmt: skip
        for name in ("actual_dispatch", "gen_p"):
            np.testing.assert_allclose(getattr(view, name), getattr(g_obs, name), atol=1e-3,
                                       err_msg=f"{name} step {t}")  # fmt: skip
        np.testing.assert_allclose(view.storage_theta, g_obs.storage_theta, atol=1e-3)
    return len(actions), failed


@pytest.mark.grid2op
@pytest.mark.parametrize("name", ["educ_case14_storage", "l2rpn_wcci_2022_dev"])
@pytest.mark.parametrize("action_type", ["storage", "continuous"])
def test_random_storage_actions_play_as_in_grid2op(data, name, action_type):
    """Seeded random actions (storage alone, then with redispatch and curtailment), held for
    a few steps each so that units fill and empty: same charges, powers, dispatch,
    generation and end step as grid2op's."""
    ours, theirs = _pair(data, name, action_type)
    space = ours.action_space
    rng = np.random.default_rng(5)
    layout = ours.unwrapped._batch.continuous
    n_r, n_c = len(layout.redispatch_gens), len(layout.curtail_gens)
    actions, action = [], np.zeros(space.shape, dtype=F32)
    action[n_r : n_r + n_c] = 1.0
    for t in range(150):
        if t % 6 == 0:
            action = rng.uniform(0.3 * space.low, 0.3 * space.high).astype(F32)
            action[n_r + n_c :] = rng.uniform(space.low, space.high)[n_r + n_c :]
            action[n_r : n_r + n_c] = rng.uniform(0.85, 1.0, n_c)
        actions.append(action.copy())
        action[:n_r] = 0.0  # a redispatch is asked once
    played, _ = _side_by_side(ours, theirs, actions)
    assert played >= 30, played  # enough steps to fill and empty units


@pytest.mark.grid2op
def test_failed_redispatch_rolls_the_charges_back_as_grid2op(data):
    """gen_2_1 (pmax 120 MW, ramp 10) redispatched +10 MW every step while the units act:
    its target passes pmax - pmin, and from then on each step's redispatch fails. grid2op
    takes the charges back (the units' power still reaches the grid): the same here."""
    ours, theirs = _pair(data, "educ_case14_storage", "continuous")
    layout = ours.unwrapped._batch.continuous
    n_r, n_c = len(layout.redispatch_gens), len(layout.curtail_gens)
    gen = int(np.flatnonzero(layout.redispatch_gens == 1)[0])
    actions = []
    for t in range(40):
        action = np.zeros(ours.action_space.shape, dtype=F32)
        action[gen] = 10.0
        action[n_r : n_r + n_c] = 1.0
        action[n_r + n_c :] = [3.0, -4.0] if t % 2 else [-2.0, 6.0]
        actions.append(action)
    played, failed = _side_by_side(ours, theirs, actions)
    assert played == 40 and failed >= 10


@pytest.mark.grid2op
@pytest.mark.parametrize("name", ["educ_case14_storage", "l2rpn_wcci_2022_dev"])
def test_infeasible_curtailment_storage_limiter_as_grid2op(data, name):
    """limit_infeasible_curtailment_storage_action on both sides, deep curtailments and storage
    actions the generators cannot follow within their ramps: the storage units' share of what
    is held back (their power on the grid, their charges) is grid2op's (on l2rpn_wcci_2022_dev
    the slack's output differed by up to 4.5 MW while the limited power was not the one sent
    to the grid)."""
    ours, theirs = _pair(data, name, "continuous")
    ours.unwrapped.set_parameters(
        ours.parameters.replace(limit_infeasible_curtailment_storage_action=True)
    )
    params = theirs.parameters
    params.LIMIT_INFEASIBLE_CURTAILMENT_STORAGE_ACTION = True
    theirs.change_parameters(params)
    layout = ours.unwrapped._batch.continuous
    n_r, n_c = len(layout.redispatch_gens), len(layout.curtail_gens)
    space = ours.action_space
    rng = np.random.default_rng(0)
    actions = []
    for t in range(120):
        if t % 5 == 0:
            action = np.zeros(space.shape, dtype=F32)
            action[n_r : n_r + n_c] = rng.uniform(0.0, 1.0, n_c)
            action[n_r + n_c :] = rng.uniform(space.low, space.high)[n_r + n_c :]
        actions.append(action.copy())
    assert _side_by_side(ours, theirs, actions) == (120, 0)

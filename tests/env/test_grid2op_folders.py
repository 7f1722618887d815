"""Every dataset folder bundled with grid2op loads with ``grid_vec.make(path)`` and plays,
do-nothing, what grid2op with LightSimBackend plays on it.

Both sides play without maintenance and hazards (``tests/env/test_grid2op_maintenance.py``
plays them): grid2op's scenarios are read by ``GridStateFromFileWithForecastsWithoutMaintenance``
(the folder's files, maintenance and hazards left out), grid_vec's with ``maintenance=False``
(which also leaves out the random maintenance of l2rpn_wcci_2020, whose draws differ from
grid2op's). Attacks are random, so both sides play without the folder's opponent (grid2op's is
``BaseOpponent`` with no budget, grid_vec's ``opponent=None``; ``test_grid2op_opponent.py``
compares the opponents). Both sides use grid_vec's thermal limits (the folder's).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from env_helpers import grid2op_env

import grid_vec
from grid_vec.chronics import FolderFormatError, load_folder
from grid_vec.core.parameters import _GRID2OP_KEYS

pytestmark = pytest.mark.grid2op

N_STEPS = 300  # do-nothing steps compared (fewer when the scenario ends first)
RHO_TOL = 1e-3
MULTIMIX = "l2rpn_neurips_2020_track2"
# every bundled folder but blank (no data) and the three with storage units (STORAGE)
FOLDERS = [
    "educ_case14_redisp",
    "l2rpn_case14_sandbox",
    "l2rpn_case14_sandbox_diff_grid",
    "l2rpn_icaps_2021",
    "l2rpn_neurips_2020_track1",
    f"{MULTIMIX}/x1",
    f"{MULTIMIX}/x2.5",
    "l2rpn_wcci_2020",
    "rte_case118_example",
    "rte_case14_opponent",
    "rte_case14_realistic",
    "rte_case14_redisp",
    "rte_case14_test",
    "rte_case5_example",
]
STORAGE = ["educ_case14_storage", "l2rpn_wcci_2022_dev", "l2rpn_idf_2023"]


@pytest.fixture(scope="module")
def data():
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    pytest.importorskip("lightsim2grid")
    return Path(grid2op.__file__).parent / "data"


def _grid2op(path: Path, *, maintenance: bool = False, **kwargs):
    """grid2op + LightSimBackend on ``path``, without opponent, and without maintenance and
    hazards unless ``maintenance``."""
    return grid2op_env(path, maintenance=maintenance, opponent=False, **kwargs)


def _assert_same_parameters(ours, theirs) -> None:
    """Field by field, for the rules grid_vec models."""
    for key, field in _GRID2OP_KEYS.items():
        assert getattr(ours, field) == getattr(theirs, key), key


def _side_by_side(
    ours, theirs, n_steps: int = N_STEPS, scenario: int = 0
) -> tuple[int | None, int | None, float]:
    """Play do-nothing on a scenario (the first by default) of both; (end step ours, end
    step grid2op, max |rho difference| over the steps both played)."""
    if scenario == 0:  # once (grid2op refuses new limits after a game over, before a reset)
        theirs.set_thermal_limit(ours.thermal_limit)
    theirs.set_id(scenario)
    g_obs = theirs.reset()
    obs, info = ours.reset(options={"scenario_id": scenario})
    assert info["scenario_name"] == theirs.chronics_handler.get_name()
    worst = float(np.abs(ours.view(obs).rho - g_obs.rho).max())
    for t in range(1, n_steps + 1):
        g_obs, _, g_done, _ = theirs.step(theirs.action_space())
        obs, _, term, trunc, _ = ours.step(0)
        if term or trunc or g_done:
            return (t if term or trunc else None), (t if g_done else None), worst
        worst = max(worst, float(np.abs(ours.view(obs).rho - g_obs.rho).max()))
    return None, None, worst


@pytest.mark.parametrize("name", FOLDERS)
def test_folder_plays_as_in_grid2op(data, name):
    """On rte_case118_example this also checks the transformers: converted with pandapower
    3's formulas, rho differed by ~0.017 from reset; they are converted as LightSimBackend
    converts them (pandapower 2's formulas)."""
    ours = grid_vec.make(data / name, opponent=None, maintenance=False)
    theirs = _grid2op(data / name)
    _assert_same_parameters(ours.parameters, theirs.parameters)
    end, g_end, worst = _side_by_side(ours, theirs)
    assert end == g_end
    assert worst <= RHO_TOL


# random maintenance: grid_vec draws its own (same law, other draws), so both play without
RANDOM_MAINTENANCE = {"l2rpn_wcci_2020"}


@pytest.mark.parametrize("name", FOLDERS)
def test_whole_episodes_with_maintenance_play_as_in_grid2op(data, name):
    """Do-nothing over the first three scenarios of the folder (all when it ships fewer),
    each to its end or 2,000 steps, maintenance and hazards on (except where they are
    random), no opponent: same end step, rho within 1e-3."""
    maintenance = name not in RANDOM_MAINTENANCE
    ours = grid_vec.make(data / name, opponent=None, maintenance=maintenance)
    theirs = _grid2op(data / name, maintenance=maintenance)
    for scenario in range(min(3, len(ours.scenario_order))):
        end, g_end, worst = _side_by_side(ours, theirs, n_steps=2000, scenario=scenario)
        assert end == g_end, scenario
        assert worst <= RHO_TOL, scenario


def test_multimix_folder_plays_grid2ops_mix_on_each_reset(data):
    """The top folder of a multi-mix env moves from mix to mix on reset as grid2op's
    MultiMixEnvironment does (the first reset plays the second mix), each mix playing what
    grid2op's plays."""
    ours = grid_vec.make(data / MULTIMIX, opponent=None, maintenance=False)
    theirs = _grid2op(data / MULTIMIX)
    assert ours.mix_names == tuple(theirs.all_names) == ("x1", "x2.5")
    assert ours.spec.kwargs["id_or_path"] == str(data / MULTIMIX)
    for name, mix in zip(ours.mix_names, ours.mixes, strict=True):
        theirs.mix_envs[name].set_thermal_limit(mix.thermal_limit)
    for _ in range(3):
        theirs.set_id(0)  # every mix (grid2op's set_id reaches them all, so does ours)
        ours.set_scenario_id(0)
        g_obs = theirs.reset()
        obs, info = ours.reset()
        assert info["mix"] == theirs.all_names[theirs.env_index]
        assert info["scenario_name"] == theirs.chronics_handler.get_name()
        worst = float(np.abs(ours.view(obs).rho - g_obs.rho).max())
        for _ in range(20):
            g_obs, _, g_done, _ = theirs.step(theirs.action_space())
            obs, _, term, trunc, _ = ours.step(0)
            assert not (g_done or term or trunc)
            worst = max(worst, float(np.abs(ours.view(obs).rho - g_obs.rho).max()))
        assert worst <= RHO_TOL
    obs, info = ours.reset(options={"mix": "x1"})
    assert info["mix"] == "x1" and ours.mix_name == "x1"
    with pytest.raises(ValueError, match="unknown mix"):
        ours.reset(options={"mix": "x3"})


def test_multimix_folder_runs_in_a_multiprocess_vector_env_not_in_a_batch(data):
    envs = grid_vec.make_vec(data / MULTIMIX, 2, envs_per_worker=1, opponent=None)
    try:
        _, infos = envs.reset(seed=0)
        assert list(infos["mix"]) == ["x2.5", "x2.5"]
        envs.step(np.zeros(2, dtype=np.int64))
    finally:
        envs.close()
    with pytest.raises(ValueError, match="multi-mix folder"):
        grid_vec.make_vec(data / MULTIMIX, 2, vectorization="batched")


@pytest.mark.parametrize("name", STORAGE)
def test_storage_folder_plays_do_nothing_as_in_grid2op(data, name):
    """The three folders with storage units (whose charges only lose their standing loss
    under do-nothing; l2rpn_idf_2023's forecasts hold 12 horizons per step): same end step,
    rho within 1e-3, the same charges."""
    ours = grid_vec.make(data / name, opponent=None, maintenance=False)
    theirs = _grid2op(data / name)
    _assert_same_parameters(ours.parameters, theirs.parameters)
    end, g_end, worst = _side_by_side(ours, theirs)
    assert end == g_end
    assert worst <= RHO_TOL
    if end is None:  # both still running (grid2op has no observation after a game over)
        charge = theirs.get_obs().storage_charge
        np.testing.assert_allclose(
            ours.unwrapped._batch.game.grid.storage_charge[0], charge, atol=1e-4
        )


def test_unsorted_bus_index_numbers_substations_as_grid2op(data):
    """rte_case14_redisp's bus table is in the order 0, 1, 10, 11, ...: bus i is still
    substation i, as in grid2op."""
    folder = load_folder(data / "rte_case14_redisp")
    assert not folder.net.bus.index.is_monotonic_increasing  # the case this test is about
    ours = grid_vec.make(data / "rte_case14_redisp")
    theirs = _grid2op(data / "rte_case14_redisp")
    m, n_line = ours.model, theirs.n_line
    np.testing.assert_array_equal(m.load_sub, theirs.load_to_subid)
    np.testing.assert_array_equal(m.gen_sub, theirs.gen_to_subid)
    np.testing.assert_array_equal(m.branch_or_sub[:n_line], theirs.line_or_to_subid)
    np.testing.assert_array_equal(m.branch_ex_sub[:n_line], theirs.line_ex_to_subid)
    np.testing.assert_array_equal(m.load_names, theirs.name_load)
    np.testing.assert_array_equal(m.branch_names, theirs.name_line)


# ---- small copies of grid2op's sandbox, edited -----------------------------------------


def _sandbox_copy(data: Path, dst: Path) -> Path:
    """l2rpn_case14_sandbox with its first scenario only."""
    src = data / "l2rpn_case14_sandbox"
    dst.mkdir()
    for name in ("grid.json", "config.py", "prods_charac.csv"):
        shutil.copy(src / name, dst / name)
    first = sorted(p.name for p in (src / "chronics").iterdir() if p.is_dir())[0]
    shutil.copytree(src / "chronics" / first, dst / "chronics" / first)
    return dst


def test_empty_ramp_cells_are_ramps_of_zero(data, tmp_path):
    """grid2op's 118-bus and L2RPN folders leave the ramps of wind and solar empty; a
    dispatchable generator's empty ramp is 0 too (it cannot be redispatched)."""
    folder = _sandbox_copy(data, tmp_path / "sandbox")
    lines = (folder / "prods_charac.csv").read_text().splitlines()
    lines = [line.replace(",wind,5,0,0,", ",wind,5,,,") for line in lines]
    lines = [line.replace(",thermal,2,10,10,", ",thermal,2,,,") for line in lines]
    (folder / "prods_charac.csv").write_text("\n".join(lines) + "\n")
    assert ",wind,5,,," in (folder / "prods_charac.csv").read_text()
    env = grid_vec.make(folder, action_type="redispatch")
    names = list(env.model.gen_names[env.redispatchable])
    assert "gen_5_2" not in names  # wind: curtailable, not dispatchable (grid2op's rule)
    assert env.action_space.high[names.index("gen_2_1")] == 0.0
    assert env.action_space.low[names.index("gen_2_1")] == 0.0
    assert env.action_space.high[names.index("gen_1_0")] == 5.0
    (folder / "prods_charac.csv").write_text(
        "\n".join([lines[0], lines[1].replace(",5,5,", ",fast,5,"), *lines[2:]]) + "\n"
    )
    with pytest.raises(FolderFormatError, match=r"line 2, column 'max_ramp_up': 'fast' is not"):
        grid_vec.make(folder)


def test_negative_loads_are_accepted_by_default(data, tmp_path):
    """grid2op plays loads that export power (interconnections in l2rpn_wcci_2020...)."""
    import bz2

    folder = _sandbox_copy(data, tmp_path / "sandbox")
    load_p = next((folder / "chronics").glob("*/load_p.csv.bz2"))
    header, first, *rest = bz2.decompress(load_p.read_bytes()).decode().splitlines()
    first = ";".join(["-3.5", *first.split(";")[1:]])
    load_p.write_bytes(bz2.compress("\n".join([header, first, *rest, ""]).encode()))
    grid_vec.make(folder).reset(options={"scenario_id": 0})
    with pytest.raises(FolderFormatError, match="negative load"):
        grid_vec.make(folder, allow_negative_loads=False).reset(options={"scenario_id": 0})


LEVELS = {
    "0": {"NB_TIMESTEP_OVERFLOW_ALLOWED": 9, "NO_OVERFLOW_DISCONNECTION": True},
    "9": {"NB_TIMESTEP_RECONNECTION": 3},
    "10": {"NB_TIMESTEP_COOLDOWN_LINE": 4, "HARD_OVERFLOW_THRESHOLD": 3.0},
    "easy": {"MAX_SUB_CHANGED": 5},
}


@pytest.mark.parametrize(
    ("files", "difficulty"),
    [
        ({}, None),  # neither file: grid2op's defaults
        ({"parameters.json": {"NB_TIMESTEP_COOLDOWN_SUB": 2}}, None),
        ({"params.json": {"NB_TIMESTEP_COOLDOWN_SUB": 2}}, None),  # not a rules file
        ({"difficulty_levels.json": LEVELS}, None),  # the highest numbered level: "10"
        ({"difficulty_levels.json": {**LEVELS, "competition": {"MAX_SUB_CHANGED": 3}}}, None),
        ({"difficulty_levels.json": LEVELS, "parameters.json": {"MAX_SUB_CHANGED": 7}}, None),
        ({"difficulty_levels.json": LEVELS}, "0"),
        ({"difficulty_levels.json": LEVELS}, "easy"),
    ],
)
def test_rules_come_from_where_grid2op_takes_them(data, tmp_path, files, difficulty):
    folder = _sandbox_copy(data, tmp_path / "sandbox")
    for name, value in files.items():
        (folder / name).write_text(json.dumps(value))
    kwargs = {} if difficulty is None else {"difficulty": difficulty}
    ours = grid_vec.make(folder, **kwargs)
    _assert_same_parameters(ours.parameters, _grid2op(folder, **kwargs).parameters)
    assert ours.spec.kwargs.get("difficulty") == difficulty


def test_unknown_difficulty_level_is_a_clear_error(data, tmp_path):
    folder = _sandbox_copy(data, tmp_path / "sandbox")
    (folder / "difficulty_levels.json").write_text(json.dumps(LEVELS))
    with pytest.raises(ValueError, match=r"difficulty='hard' is not a level of .*'0', '10'"):
        grid_vec.make(folder, difficulty="hard")
    with pytest.raises(TypeError, match="difficulty must be a str"):
        grid_vec.make(folder, difficulty=2)
    (folder / "difficulty_levels.json").unlink()
    with pytest.raises(ValueError, match=r"has no difficulty_levels\.json"):
        grid_vec.make(folder, difficulty="0")
    with pytest.raises(ValueError, match="difficulty only applies to grid2op-format folders"):
        grid_vec.make("case14", difficulty="0")


def test_a_reward_class_grid_vec_lacks_plays_flat_with_a_warning(data):
    with pytest.warns(UserWarning, match="reward_class AlarmReward .* plays 'flat'"):
        env = grid_vec.make(data / "l2rpn_icaps_2021", opponent=None)
    assert env.reward_fn.__name__ == "flat_reward"

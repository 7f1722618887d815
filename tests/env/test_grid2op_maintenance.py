"""Maintenance (and hazards) play as in grid2op + LightSimBackend, on every bundled folder
whose scenarios carry ``maintenance.csv`` / ``hazards.csv`` files.

Both sides play the first scenario of the folder with maintenance on (grid2op's default
scenario class reads the files), no opponent (grid2op's ``BaseOpponent`` with no budget)
and grid_vec's thermal limits, first with do-nothing, then with an agent that asks every
step to reconnect the first disconnected line (illegal while a maintenance holds it): same
end step and game over, the same lines disconnected at the same steps, the same illegal
steps, rho within 1e-3, and the observation's ``time_next_maintenance``,
``duration_next_maintenance`` and ``time_before_cooldown_line`` equal to grid2op's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from env_helpers import grid2op_env

import grid_vec
from grid_vec.core.actions import KIND_LINE

pytestmark = pytest.mark.grid2op

MAX_STEPS = 2000
RHO_TOL = 1e-3
# the bundled folders whose first scenario has maintenance or hazards files (checked below)
FOLDERS = [
    "l2rpn_icaps_2021",
    "l2rpn_neurips_2020_track1",
    "l2rpn_neurips_2020_track2/x1",
    "l2rpn_neurips_2020_track2/x2.5",
    "rte_case14_redisp",
    "rte_case14_test",
    "rte_case5_example",
]
# maintenance events in the first scenario of each (the others plan none: all zeros)
EVENTS = {"l2rpn_neurips_2020_track1": 4, "l2rpn_neurips_2020_track2/x1": 1}


@pytest.fixture(scope="module")
def data():
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    pytest.importorskip("lightsim2grid")
    return Path(grid2op.__file__).parent / "data"


def _grid2op(path: Path):
    """grid2op + LightSimBackend on ``path``: the folder's maintenance, no opponent."""
    return grid2op_env(path, opponent=False)


def test_the_folders_are_those_with_outage_files(data):
    found = set()
    for folder in data.glob("**/chronics"):
        scenarios = sorted(p for p in folder.iterdir() if p.is_dir())
        if not scenarios:  # blank
            continue
        first = scenarios[0]
        if any(first.glob("maintenance.csv*")) or any(first.glob("hazards.csv*")):
            name = str(folder.parent.relative_to(data))
            if name != "l2rpn_2019":  # pypownet's format: refused by grid_vec and grid2op
                found.add(name)
    assert found == set(FOLDERS)


def _play(ours, theirs, reconnect: bool) -> dict:
    """Play both side by side; return what the report compares."""
    theirs.set_id(0)
    g_obs = theirs.reset()
    obs, _ = ours.reset(options={"scenario_id": 0})
    view = ours.view
    toggle = {
        int(b): int(i)
        for i, b in enumerate(ours.catalog.target)
        if ours.catalog.kind[i] == KIND_LINE
    }
    worst = 0.0
    events = 0
    for t in range(MAX_STEPS + 1):
        o = view(obs)
        np.testing.assert_array_equal(o.line_status.astype(bool), g_obs.line_status, err_msg=f"{t}")
        np.testing.assert_array_equal(o.time_next_maintenance, g_obs.time_next_maintenance)
        np.testing.assert_array_equal(o.duration_next_maintenance, g_obs.duration_next_maintenance)
        np.testing.assert_array_equal(
            o.time_before_cooldown_line, g_obs.time_before_cooldown_line, err_msg=f"step {t}"
        )
        worst = max(worst, float(np.abs(o.rho - g_obs.rho).max()))
        events += int(np.count_nonzero(g_obs.time_next_maintenance == 1))
        if t == MAX_STEPS:
            return {"end": None, "worst": worst, "events": events}
        off = np.flatnonzero(~g_obs.line_status)
        if reconnect and len(off):
            line = int(off[0])
            action, g_action = toggle[line], theirs.action_space({"set_line_status": [(line, 1)]})
        else:
            action, g_action = 0, theirs.action_space()
        g_obs, _, g_done, g_info = theirs.step(g_action)
        obs, _, term, trunc, info = ours.step(action)
        assert info["is_illegal"] == g_info["is_illegal"], f"step {t + 1}"
        if term or trunc or g_done:
            assert (term or trunc) and g_done, f"step {t + 1}: ours {term, trunc}, grid2op {g_done}"
            assert term == bool(g_info["exception"]), f"step {t + 1}: game over differs"
            return {"end": t + 1, "worst": worst, "events": events}


@pytest.mark.parametrize("name", FOLDERS)
def test_maintenance_plays_as_in_grid2op(data, name):
    ours = grid_vec.make(data / name, opponent=None)
    theirs = _grid2op(data / name)
    theirs.set_thermal_limit(ours.thermal_limit)
    for reconnect in (False, True):
        result = _play(ours, theirs, reconnect)
        assert result["worst"] <= RHO_TOL, (reconnect, result)
        assert result["events"] >= EVENTS.get(name, 0), (reconnect, result)


def test_maintenance_off_matches_grid2op_without_maintenance(data):
    """``maintenance=False`` is grid2op's scenario class without maintenance."""
    path = data / "l2rpn_neurips_2020_track1"
    theirs = grid2op_env(path, maintenance=False, opponent=False)
    ours = grid_vec.make(path, maintenance=False, opponent=None)
    theirs.set_thermal_limit(ours.thermal_limit)
    result = _play(ours, theirs, reconnect=True)
    assert result["events"] == 0 and result["worst"] <= RHO_TOL


def test_an_explicit_schedule_replays_the_maintenance_grid2op_drew(data):
    """l2rpn_wcci_2020 draws its maintenance at random (grid_vec's draws are not grid2op's):
    handing grid2op's drawn schedule to reset plays grid2op's episode."""
    path = data / "l2rpn_wcci_2020"
    ours = grid_vec.make(path, opponent=None)
    theirs = _grid2op(path)
    theirs.set_thermal_limit(ours.thermal_limit)
    theirs.seed(3)
    theirs.set_id(0)
    g_obs = theirs.reset()
    schedule = np.asarray(theirs.chronics_handler.real_data.data.maintenance, dtype=bool)
    assert schedule.any()  # grid2op drew some maintenance
    obs, _ = ours.reset(options={"scenario_id": 0, "maintenance": schedule})
    seen = 0
    for t in range(MAX_STEPS):
        o = ours.view(obs)
        np.testing.assert_array_equal(o.time_next_maintenance, g_obs.time_next_maintenance)
        np.testing.assert_array_equal(o.duration_next_maintenance, g_obs.duration_next_maintenance)
        np.testing.assert_array_equal(o.line_status.astype(bool), g_obs.line_status, f"{t}")
        assert float(np.abs(o.rho - g_obs.rho).max()) <= RHO_TOL, t
        seen += int(np.count_nonzero(g_obs.time_next_maintenance == 0))
        g_obs, _, g_done, _ = theirs.step(theirs.action_space())
        obs, _, term, trunc, _ = ours.step(0)
        assert (term or trunc) == g_done, t
        if g_done:
            break
    assert seen > 0  # lines were in maintenance during the compared steps


def test_a_bad_schedule_is_refused(data):
    env = grid_vec.make(data / "l2rpn_case14_sandbox")
    for bad, match in (
        (np.zeros((5, 3)), "array"),
        (np.full((5, env.model.n_branch), 2), "only 0 and 1"),
    ):
        with pytest.raises(ValueError, match=match):
            env.reset(options={"maintenance": bad})

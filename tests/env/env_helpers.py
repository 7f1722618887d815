"""Helpers shared by the env tests (a module of its own: ``conftest`` names clash across
test folders)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest


def loose_limits(model, **tight: float) -> np.ndarray:
    """Limits that never bind, except the branches given as ``b<index>=amperes``."""
    limits = np.full(model.n_branch, 1e9)
    for key, value in tight.items():
        limits[int(key[1:])] = value
    return limits


def grid2op_env(path, *, maintenance: bool = True, opponent: bool = True, **kwargs):
    """grid2op + LightSimBackend on the folder ``path``
    (:func:`grid_vec.bench.grid2op_reference.grid2op_env`), for tests that already skipped
    without grid2op."""
    from grid_vec.bench.grid2op_reference import grid2op_env as reference

    return reference(path, maintenance=maintenance, opponent=opponent, **kwargs)


def grid2op_sample(name: str) -> Path:
    """The folder of the sample of dataset ``name`` that grid2op's package ships; the test is
    skipped without the grid2op extra or without that sample."""
    spec = importlib.util.find_spec("grid2op")
    if spec is None:
        pytest.skip("needs the grid2op extra (its dataset samples)")
    folder = Path(spec.origin).parent / "data" / name
    if not folder.is_dir():
        pytest.skip(f"grid2op ships no sample of {name}")
    return folder


def assert_same_topology_state(view, g_obs, where: str) -> None:
    """grid_vec's observation (``view``) shows the topology state and flows of grid2op's
    observation ``g_obs``: line status, topology vector and cooldowns exactly, rho to 1e-5."""
    np.testing.assert_array_equal(view.line_status.astype(bool), g_obs.line_status, where)
    np.testing.assert_array_equal(view.topo_vect, g_obs.topo_vect, where)
    np.testing.assert_array_equal(
        view.time_before_cooldown_line, g_obs.time_before_cooldown_line, where
    )
    np.testing.assert_array_equal(
        view.time_before_cooldown_sub, g_obs.time_before_cooldown_sub, where
    )
    np.testing.assert_allclose(view.rho, g_obs.rho, rtol=1e-5, atol=1e-6, err_msg=where)


def restart_both(ours, theirs, scenario: int = 0) -> np.ndarray:
    """Start ``scenario`` again on grid_vec's env and grid2op's; grid_vec's first
    observation."""
    theirs.set_id(scenario)
    theirs.reset()
    return ours.reset(options={"scenario_id": scenario})[0]

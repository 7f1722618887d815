"""A packaged L2RPN agent from PyPI (``l2rpn-baselines``' ``OptimCVXPY``: redispatch,
curtailment and reconnections from a DC optimal power flow), unchanged, through the grid2op
adapter: the same actions at every step as on grid2op + LightSimBackend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("grid2op", reason="needs the grid2op extra")
pytest.importorskip("l2rpn_baselines", reason="needs the l2rpn extra")
pytest.importorskip("cvxpy", reason="needs the l2rpn extra")

import grid2op
from benchmark_scripts import load_benchmark

from grid_vec.integrations.grid2op import make_env

pytestmark = pytest.mark.grid2op
SANDBOX = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"


@pytest.fixture(scope="module")
def harness():
    return load_benchmark("compare_l2rpn_baseline")


def test_optim_cvxpy_chooses_grid2ops_actions_at_every_step_on_grid_vec(harness):
    """Thermal limits at 80%: the agent is in danger from the start and redispatches and
    curtails; both sides play the same grid2op actions to the same end, rho within 1e-3."""
    limits = make_env(SANDBOX).thermal_limit * 0.8
    ours = harness.play_grid_vec(SANDBOX, 0, 12, limits)
    theirs = harness.play_grid2op(SANDBOX, 0, 12, limits)
    assert ours.steps == theirs.steps
    assert harness.differing_steps(ours, theirs) == []
    np.testing.assert_allclose(ours.rho_max, theirs.rho_max, atol=1e-3)
    continuous = [a for a in theirs.actions if a._modif_redispatch or a._modif_curtailment]
    assert len(continuous) >= 3  # the continuous controls were played, not only do-nothing

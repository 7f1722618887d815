"""The dispatch programme through SLSQP's compiled kernel (``dispatch_qp.solve``) against
scipy's own ``minimize(method="SLSQP")`` on grid2op's two ``LinearConstraint``: the same
point to the bit, the same status and message, on random programmes of the dispatch's form
(feasible, infeasible, optima at the bounds, generators without a target) and on those a
seeded redispatch run poses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import LinearConstraint, minimize

import grid_vec
from grid_vec.core.rules import dispatch, dispatch_qp
from grid_vec.core.rules.dispatch_qp import Programme, Solution


def reference(programme: Programme) -> Solution:
    """scipy's SLSQP on the programme as grid2op states it (public API only)."""
    n = len(programme.x0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns about some infeasible starts
        res = minimize(
            programme.objective,
            programme.x0,
            method="SLSQP",
            jac=programme.gradient,
            constraints=[
                LinearConstraint(np.ones((1, n)), programme.total, programme.total),
                LinearConstraint(np.eye(n), programme.low, programme.high),
            ],
            options={"eps": programme.precision, "ftol": programme.precision, "disp": False},
        )
    return Solution(res.x, bool(res.success), str(res.message))


def random_programme(rng: np.random.Generator, kind: str) -> Programme:
    """A programme shaped as ``dispatch._programme`` poses them; ``kind``: "feasible",
    "infeasible" (the box cannot make the sum) or "bounds" (targets beyond the box)."""
    n = int(rng.integers(1, 13))
    mine = rng.random(n) < 0.7 if rng.random() < 0.3 else np.ones(n, dtype=bool)
    if not mine.any():
        mine[:] = True
    weights = 1.0 / (rng.uniform(1.0, 30.0, n) + 1e-4)
    weights /= weights.sum()
    scale_x = float(max(rng.exponential(20.0), 1.0))
    width = rng.uniform(0.5, 20.0, n) / scale_x
    low = -rng.uniform(0.0, 1.0, n) * width
    high = low + width
    if kind == "infeasible":
        total = high.sum() * rng.uniform(1.05, 2.0) + 0.1
    else:
        total = rng.uniform(low.sum(), high.sum())
    spread = 3.0 if kind == "bounds" else 0.8
    goal = rng.uniform(low - spread * width, high + spread * width)[mine]
    x0 = rng.uniform(low - width, high + width) if rng.random() < 0.5 else np.zeros(n)
    half_eps = 0.5e-4 / scale_x
    return Programme(
        x0=x0,
        mine=mine,
        weights=weights[mine],
        goal=goal,
        scale_f=float(np.round(max(0.5 * np.abs(goal).sum() ** 2, 1.0), decimals=4)),
        total=np.full(1, total),
        low=low - half_eps,
        high=high + half_eps,
        precision=max(1e-4 / scale_x, 1e-6),
    )


def assert_same(ours: Solution, ref: Solution) -> None:
    np.testing.assert_array_equal(ours.x, ref.x)  # bitwise: same iterates, same point
    assert (ours.success, ours.message) == (ref.success, ref.message)


@pytest.mark.skipif(dispatch_qp._KERNEL is None, reason="this scipy takes minimize's path")
@pytest.mark.parametrize("kind", ["feasible", "infeasible", "bounds"])
def test_random_programmes_solve_as_scipys_slsqp(kind):
    rng = np.random.default_rng({"feasible": 0, "infeasible": 1, "bounds": 2}[kind])
    statuses = set()
    for _ in range(300):
        programme = random_programme(rng, kind)
        ours = dispatch_qp.solve(programme)
        assert_same(ours, reference(programme))
        statuses.add(ours.message)
    if kind == "infeasible":
        assert "Optimization terminated successfully" not in statuses
    else:
        assert "Optimization terminated successfully" in statuses


@pytest.mark.skipif(dispatch_qp._KERNEL is None, reason="this scipy takes minimize's path")
def test_optima_at_the_bounds_are_scipys():
    """Targets beyond the box: the optimum has generators on their limits."""
    rng = np.random.default_rng(5)
    at_bound = 0
    for _ in range(100):
        programme = random_programme(rng, "bounds")
        ours = dispatch_qp.solve(programme)
        assert_same(ours, reference(programme))
        on_limit = np.isclose(ours.x, programme.low) | np.isclose(ours.x, programme.high)
        at_bound += bool(ours.success and on_limit.any())
    assert at_bound > 10


@pytest.mark.skipif(dispatch_qp._KERNEL is None, reason="this scipy takes minimize's path")
def test_a_generator_pinned_by_its_bounds_is_an_equality_as_in_scipy():
    """low == high makes the identity's row an equality, laid out after the sum's."""
    rng = np.random.default_rng(11)
    for _ in range(50):
        programme = random_programme(rng, "feasible")
        low, high = programme.low.copy(), programme.high.copy()
        pinned = rng.random(len(low)) < 0.4
        high[pinned] = low[pinned]
        pinned_programme = Programme(**{**vars(programme), "low": low, "high": high})
        assert_same(dispatch_qp.solve(pinned_programme), reference(pinned_programme))


def test_programmes_of_a_redispatch_run_solve_as_scipys_slsqp(tmp_path):
    """The programmes seeded random redispatch poses on an embedded grid."""
    env = grid_vec.make("case14", action_type="redispatch", reward="flat")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    seen: list[Programme] = []
    solve = dispatch.solve

    def recording(programme: Programme) -> Solution:
        seen.append(programme)
        return solve(programme)

    dispatch.solve = recording
    try:
        for _ in range(60):
            action = rng.uniform(env.action_space.low, env.action_space.high) * 0.5
            _, _, term, trunc, _ = env.step(action.astype(np.float32))
            if term or trunc:
                env.reset()
    finally:
        dispatch.solve = solve
    assert len(seen) > 20
    for programme in seen:
        assert_same(dispatch_qp.solve(programme), reference(programme))


def test_an_unknown_scipy_takes_minimizes_path(monkeypatch):
    """The kernel's calling convention is scipy's private API: on a scipy this module does
    not know, the programme goes through ``minimize`` (the same answer)."""
    monkeypatch.setattr(dispatch_qp.scipy, "__version__", "99.0.0")
    assert dispatch_qp._load_kernel() is None
    monkeypatch.setattr(dispatch_qp, "_KERNEL", None)
    programme = random_programme(np.random.default_rng(7), "feasible")
    assert_same(dispatch_qp.solve(programme), reference(programme))

"""lightsim2grid agrees with the pandapower reference on pandapower's IEEE cases.

Per case: 30 random injection perturbations, 10 random single-branch outages and 10 random
valid bus-bar splits (each with its own perturbed injections). Convergence must agree too.
"""

from __future__ import annotations

import numpy as np
import pytest
from grid_helpers import (
    assert_results_close,
    base_topology,
    perturbed_injections,
    random_outage,
    random_split,
)

from grid_vec.grid import make_backend
from grid_vec.grid.compile import compile_net
from grid_vec.grid.networks import NETWORK_NAMES, load_network

N_INJECTIONS = 30
N_OUTAGES = 10
N_SPLITS = 10


def _compare(model, fast, ref, injections, topology, context: str) -> bool:
    for backend in (fast, ref):
        backend.set_topology(*topology)
        backend.set_injections(*injections)
    converged = fast.run_ac()
    assert converged == ref.run_ac(), f"convergence differs {context}"
    if converged:
        assert_results_close(fast.results(), ref.results(), context)
    return converged


# case14 in the quick suite, the other grids in the slow one
@pytest.mark.parametrize(
    "case", [c if c == "case14" else pytest.param(c, marks=pytest.mark.slow) for c in NETWORK_NAMES]
)
def test_backends_agree(case: str) -> None:
    model = compile_net(load_network(case), name=case)
    fast, ref = make_backend(model, "lightsim2grid"), make_backend(model, "pandapower")
    rng = np.random.default_rng(sum(map(ord, case)))
    scenarios = [("injections", base_topology(model)) for _ in range(N_INJECTIONS)]
    scenarios += [("outage", random_outage(model, rng)) for _ in range(N_OUTAGES)]
    scenarios += [("split", random_split(model, rng)) for _ in range(N_SPLITS)]
    n_converged = 0
    for i, (kind, topology) in enumerate(scenarios):
        injections = perturbed_injections(model, rng)
        n_converged += _compare(model, fast, ref, injections, topology, f"{case} {kind} #{i}")
    # the perturbations are mild: nearly every scenario must be solvable, so the
    # comparison above really compared results
    assert n_converged >= len(scenarios) - 2


def test_split_activates_bus_bar_two() -> None:
    """Moving elements of a substation to bus bar 2 gives two distinct, solved bus bars."""
    model = compile_net(load_network("case14"), name="case14")
    rng = np.random.default_rng(3)
    topology = random_split(model, rng)
    fast, ref = make_backend(model), make_backend(model, "pandapower")
    injections = [model.load_p0, model.load_q0, model.gen_p0, model.gen_v0]
    assert _compare(model, fast, ref, injections, topology, "case14 split")
    subs = [model.load_sub, model.gen_sub, model.branch_or_sub, model.branch_ex_sub]
    (split,) = {int(sub) for at, bars in zip(subs, topology, strict=True) for sub in at[bars == 2]}
    res = fast.results()
    bar1, bar2 = split, model.n_sub + split
    # bar 2 of the split substation is the only one energised, next to its bar 1
    np.testing.assert_array_equal(np.flatnonzero(res.bus_vm_pu[model.n_sub :] > 0), [split])
    assert res.bus_vm_pu[bar1] > 0.5 and res.bus_vm_pu[bar2] > 0.5
    # two electrical nodes, not one bus reported twice
    assert abs(res.bus_va_rad[bar1] - res.bus_va_rad[bar2]) > 1e-3


def test_divergence_is_reported_by_both() -> None:
    """Loads far beyond the grid's capacity: both solvers report divergence."""
    from grid_vec.grid import PowerFlowDivergedError

    model = compile_net(load_network("case14"), name="case14")
    for name in ("lightsim2grid", "pandapower"):
        backend = make_backend(model, name)
        backend.set_injections(model.load_p0 * 20, model.load_q0 * 20, model.gen_p0, model.gen_v0)
        assert backend.run_ac() is False, name
        with pytest.raises(PowerFlowDivergedError):
            backend.results()
        # back to the base case: it solves again
        backend.set_injections(model.load_p0, model.load_q0, model.gen_p0, model.gen_v0)
        assert backend.run_ac() is True, name


@pytest.mark.parametrize(
    ("cut", "what"),
    [([18], "generator at substation 7"), ([11, 14], "load at substation 13")],
)
def test_islands_are_reported_as_divergence_by_both(cut: list[int], what: str) -> None:
    """Cutting off a generator or a load: pandapower would solve the rest of the grid,
    lightsim2grid does not converge; both backends report a divergence."""
    model = compile_net(load_network("case14"), name="case14")
    topology = base_topology(model)
    topology[2][cut] = -1
    for name in ("lightsim2grid", "pandapower"):
        backend = make_backend(model, name)
        backend.set_topology(*topology)
        backend.set_injections(model.load_p0, model.load_q0, model.gen_p0, model.gen_v0)
        assert backend.run_ac() is False, f"{name}: isolated {what}"

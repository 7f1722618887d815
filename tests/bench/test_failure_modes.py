"""benchmarks/failure_modes.py: where do-nothing's losses start, and which corridors cut the
grid (checked against case118's own graph and a scenario played in the env)."""

from __future__ import annotations

from benchmark_scripts import load_benchmark

import grid_vec

failure_modes = load_benchmark("failure_modes")


def case118():
    return grid_vec.make("grid_vec/Case118Topology-v0", split="validation").unwrapped


def branch(model, name: str) -> int:
    return list(model.branch_names).index(name)


def test_corridor_holds_the_parallel_branches_and_only_a_cutting_one_has_an_island():
    model = case118().model
    pair = failure_modes.corridor(model, branch(model, "88_91_128"))
    assert [model.branch_names[b] for b in pair] == ["88_91_128", "88_91_129"]
    assert failure_modes.island_without(model, pair).size == 0  # meshed: 88 and 91 stay joined
    radial = failure_modes.corridor(model, branch(model, "7_8_6"))
    island = failure_modes.island_without(model, radial)
    assert [model.sub_names[s] for s in island] == ["sub_8", "sub_9"]
    # the generator there is joined to the grid by that corridor alone
    assert model.gen_sub[list(model.gen_names).index("gen_9_4")] in island


def test_do_nothing_loss_starts_at_the_overflow_of_the_branch_that_trips_first():
    env = case118()
    loss = failure_modes.play_do_nothing(env, 0, seed=0)
    assert loss is not None and loss.survival == 210 and loss.first_trip_step == 210
    assert loss.branch == "7_8_6" and loss.rho >= 1.0
    assert loss.cuts_grid and loss.island == ["sub_8", "sub_9"]
    assert loss.game_over_reason == "generator gen_9_4 isolated"


def test_no_catalog_action_relieves_a_cutting_corridor_and_some_relieve_a_meshed_one():
    env = case118()
    catalog = grid_vec.make(
        "grid_vec/Case118Topology-v0", split="validation", action_subset=None
    ).unwrapped
    radial = failure_modes.play_do_nothing(env, 0, seed=0, catalog_env=catalog)
    assert radial.cuts_grid and radial.decision_step < radial.first_trip_step
    assert radial.catalog_legal > 10_000  # the whole catalog was simulated
    assert radial.catalog_safe == 0 and radial.catalog_best_max_rho >= 1.0
    meshed = failure_modes.play_do_nothing(env, 1, seed=0, catalog_env=catalog)
    assert not meshed.cuts_grid and meshed.branch == "88_91_128"
    assert meshed.catalog_safe > 0
    assert meshed.catalog_best_max_rho < min(1.0, meshed.do_nothing_max_rho)


def test_a_scenario_do_nothing_survives_has_no_loss():
    env = case118()
    assert failure_modes.play_do_nothing(env, 3, seed=0) is None  # survived to its end

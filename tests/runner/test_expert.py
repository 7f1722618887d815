"""The expert search agent: idle below its threshold, one batched look-ahead for every
sub-env that acts, never a simulated max rho above do-nothing's, and reverts toward the
reference topology when safe."""

from __future__ import annotations

import numpy as np
import pytest

import grid_vec
from grid_vec.core.actions import KIND_SUB
from grid_vec.core.rules.heuristics import reference_actions
from grid_vec.runner.candidates import candidate_scores, tiled
from grid_vec.runner.evaluate import baseline_agent, evaluate_task
from grid_vec.runner.expert import ExpertAgent

COMBINED = "grid_vec/Case14Combined-v0"
N = 3


def _vec(task: str = COMBINED, n: int = N):
    """A batched vector env of a task without heuristics (the test sets every state), reset;
    its simulate_candidates counted in ``vec.calls``."""
    vec = grid_vec.make_vec(task, n, vectorization="batched", split="test", heuristics=None)
    obs, _ = vec.reset(seed=[0, 1, 2][:n])
    vec.calls = []
    simulate = vec.simulate_candidates

    def counted(candidates, horizon=1):
        vec.calls.append(candidates)
        return simulate(candidates, horizon=horizon)

    vec.simulate_candidates = counted
    return vec, obs


def _as_list(space, batch, n):
    from gymnasium.vector.utils import iterate

    if isinstance(batch, dict):
        return [{key: batch[key][i] for key in batch} for i in range(n)]
    return list(iterate(space, batch)) if not isinstance(batch, np.ndarray) else list(batch)


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return all(np.array_equal(a[key], b[key]) for key in a)
    return np.array_equal(a, b)


def test_the_expert_does_nothing_below_its_threshold_and_simulates_nothing():
    vec, obs = _vec()
    expert = ExpertAgent(threshold=10.0)
    expert.bind(vec)
    actions = expert(obs)
    nothing = vec.get_attr("do_nothing_action")[0]
    assert all(_same(a, nothing) for a in _as_list(vec.single_action_space, actions, N))
    assert vec.calls == []  # the reference topology: nothing to revert, nothing simulated


@pytest.mark.parametrize("redispatch_from", [1.0, 0.0])
def test_the_expert_acts_above_its_threshold_in_one_call_and_never_worse_than_do_nothing(
    redispatch_from,
):
    vec, obs = _vec()
    expert = ExpertAgent(threshold=0.01, redispatch_from=redispatch_from)  # every env acts
    expert.bind(vec)
    n_topology = vec.single_action_space["topology"].n
    assert len(expert.candidates) == n_topology + 5 * 2 * 2  # 5 generators, ±, 2 fractions
    actions = _as_list(vec.single_action_space, expert(obs), N)
    assert len(vec.calls) == 1  # all candidates of all envs in one look-ahead
    found = vec.simulate_candidates(tiled(vec.single_action_space, expert.candidates, N))
    rho = -candidate_scores(found, by_rho=True)
    for i, action in enumerate(actions):
        k = next(j for j, c in enumerate(expert.candidates) if _same(c, action))
        assert rho[i, k] <= rho[i, 0]  # never above do-nothing's simulated max rho
        ranked = rho[i] if redispatch_from == 0.0 else rho[i, :n_topology]
        assert rho[i, k] == ranked.min()
    assert any(not _same(a, expert.candidates[0]) for a in actions)  # it does act


def test_the_expert_keeps_do_nothing_when_no_candidate_beats_it():
    vec, obs = _vec(n=1)
    expert = ExpertAgent(threshold=0.01, ramp_fractions=())
    expert.bind(vec)
    vec.calls.clear()
    # only do-nothing and candidates that end the game: patch the look-ahead's verdicts
    real = vec.simulate_candidates

    def every_other_candidate_ends_the_game(candidates, horizon=1):
        found = real(candidates, horizon=horizon)
        found.terminated[:, 1:] = True
        return found

    vec.simulate_candidates = every_other_candidate_ends_the_game
    action = _as_list(vec.single_action_space, expert(obs), 1)[0]
    assert _same(action, expert.candidates[0])


def _split_then_expert(revert: bool, threshold: float, patch=None):
    """Envs of Case14Topology whose first env split a substation whose reference
    configuration is in the set; the expert's actions there (``patch`` edits the look-ahead's
    results first), and that reference's index."""
    vec, obs = _vec("grid_vec/Case14Topology-v0")
    catalog = vec.get_attr("catalog")[0]
    subset = list(vec.get_attr("config")[0].action_subset)
    references = reference_actions(catalog, len(vec.get_attr("topology")[0].sub_start) - 1)
    split = next(
        k
        for k, a in enumerate(subset)
        if catalog.kind[a] == KIND_SUB
        and (catalog.sub_buses[a] == 2).any()
        and references[catalog.target[a]] in subset
    )
    reference = subset.index(int(references[catalog.target[subset[split]]]))
    obs, *_ = vec.step(np.array([split, 0, 0]))
    expert = ExpertAgent(threshold=threshold, revert=revert)
    expert.bind(vec)
    vec.calls.clear()
    if patch is not None:
        real = vec.simulate_candidates

        def patched(candidates, horizon=1):
            found = real(candidates, horizon=horizon)
            patch(found)
            return found

        vec.simulate_candidates = patched
    return np.asarray(expert(obs)), reference, vec


def test_the_expert_reverts_a_split_substation_when_safe():
    actions, reference, vec = _split_then_expert(revert=True, threshold=10.0)
    assert actions.tolist() == [reference, 0, 0]  # only the split env reverts
    assert len(vec.calls) == 1


def test_the_expert_does_not_revert_when_told_not_to():
    actions, _, vec = _split_then_expert(revert=False, threshold=10.0)
    assert actions.tolist() == [0, 0, 0] and vec.calls == []


def _above_the_threshold(found):
    found.max_rho[:, 1:] = 20.0


def _illegal(found):
    found.illegal[:, 1:] = True


@pytest.mark.parametrize("patch", [_above_the_threshold, _illegal])
def test_the_expert_does_not_revert_when_unsafe(patch):
    actions, _, _ = _split_then_expert(revert=True, threshold=10.0, patch=patch)
    assert actions.tolist() == [0, 0, 0]


def test_the_expert_searches_topology_alone_or_redispatch_alone_as_the_space_offers():
    vec, _ = _vec("grid_vec/Case14Topology-v0")
    topology = ExpertAgent()
    topology.bind(vec)
    assert len(topology.candidates) == vec.single_action_space.n  # no redispatch part
    vec, _ = _vec("grid_vec/Case14Redispatch-v1")
    redispatch = ExpertAgent(ramp_fractions=(1.0,))
    redispatch.bind(vec)
    high, low = vec.single_action_space.high, vec.single_action_space.low
    moves = np.stack(redispatch.candidates[1:])
    assert len(redispatch.candidates) == 1 + 2 * len(high)  # do-nothing, then ± each ramp
    assert np.allclose(moves.sum(axis=0), high + low)


def test_the_expert_is_a_named_baseline_whose_score_does_not_depend_on_the_env_count():
    assert isinstance(baseline_agent("expert", None), ExpertAgent)
    one = evaluate_task(COMBINED, "expert", scenarios=2, num_envs=1)
    two = evaluate_task(COMBINED, "expert", scenarios=2, num_envs=2)
    assert one.survival.tolist() == two.survival.tolist()


def test_the_expert_refuses_bad_settings_and_unbound_calls():
    for bad in ({"threshold": 0}, {"threshold": float("nan")}, {"ramp_fractions": (1.5,)}):
        with pytest.raises(ValueError):
            ExpertAgent(**bad)
    with pytest.raises(ValueError):
        ExpertAgent(horizon=0)
    with pytest.raises(RuntimeError):
        ExpertAgent()(np.zeros((1, 3)))

"""The multi-agent view checks each agent's action as a single-agent GridEnv checks its own:
the ParallelEnv takes a substation agent's ``Discrete`` choice as an int only (no bool, str,
float, sequence or array but a 0-d int one) and a generator agent's ``Box(1,)`` redispatch
as a float array of shape ``(1,)``; the batched form takes one number per env and agent. A
type confusion is refused with one ValueError naming the env and the agent, before anything
is played."""

from __future__ import annotations

import numpy as np
import pytest

from grid_vec.marl import vector_env

GRID = "case14"  # the embedded grid: substation and generator agents, fast to make
SCOPE = "substations_and_generators"
SUB, GEN = "substation_2", "generator_0"  # Discrete(4); Box(1,) of [-7, 7] MW

# one agent's action given as something else than its space's: (agent, action)
CONFUSIONS = {
    "list of two": (SUB, [0, 1]),
    "str": (SUB, "1"),
    "bool": (SUB, True),
    "numpy bool": (SUB, np.bool_(True)),
    "array of strings": (SUB, np.array(["1"])),
    "empty array": (SUB, np.array([])),
    "int array of shape (1,)": (SUB, np.array([1])),
    "out-of-range int": (SUB, 4),
    "negative int": (SUB, -1),
    "float": (SUB, 1.0),
    "numpy float": (SUB, np.float32(1.0)),
    "redispatch as a str": (GEN, "1"),
    "redispatch as a bool": (GEN, True),
    "redispatch as a list of two": (GEN, [0.5, 0.5]),
    "redispatch as an array of strings": (GEN, np.array(["1.0"])),
    "redispatch as an empty array": (GEN, np.array([])),
    "redispatch as a bare float": (GEN, 1.0),
    "redispatch as an int array": (GEN, np.array([1])),
    "redispatch outside the ramps": (GEN, np.array([100.0])),
}


@pytest.fixture(scope="module")
def parallel():
    pytest.importorskip("pettingzoo", reason="needs the marl extra (pettingzoo)")
    from grid_vec.marl import parallel_env

    return parallel_env(GRID, SCOPE)


@pytest.mark.parametrize("case", CONFUSIONS, ids=list(CONFUSIONS))
def test_the_parallel_env_refuses_an_agents_action_of_another_type_naming_it(parallel, case):
    agent, action = CONFUSIONS[case]
    parallel.reset(seed=0)
    state = parallel.state()
    with pytest.raises(ValueError, match=rf"env 0, agent {agent}: action must be"):
        parallel.step({agent: action})
    np.testing.assert_array_equal(parallel.state(), state)  # nothing was played
    assert parallel.agents


def test_the_parallel_env_takes_the_forms_a_single_agent_env_takes(parallel):
    """A Python int, a numpy int, a 0-d int array for a substation agent; a float array of
    shape (1,), float32 (its space's sample) or float64, for a generator agent."""
    for sub, gen in [
        (1, np.array([0.5], dtype=np.float32)),
        (np.int64(1), np.array([0.5])),
        (np.array(1), parallel.action_space(GEN).sample()),
        (np.int32(0), np.zeros(1, dtype=np.float32)),
    ]:
        parallel.reset(seed=0)
        parallel.step({SUB: sub, GEN: gen})


def test_the_parallel_env_refuses_actions_that_are_not_a_dict(parallel):
    parallel.reset(seed=0)
    with pytest.raises(ValueError, match="actions must be a dict"):
        parallel.step([0, 1])


@pytest.fixture(scope="module")
def batched():
    vec = vector_env(GRID, 2, SCOPE)
    yield vec
    vec.close()


def _rows(vec, agent: str, value) -> list:
    """Every agent's action 0 (nested lists), but env 1's ``agent``: ``value``."""
    rows = np.zeros((vec.num_envs, vec.num_agents)).tolist()
    rows[1][vec.agents.index(agent)] = value
    return rows


# one entry of the batch given as something else than a number in the agent's space
BATCH_CONFUSIONS = {
    "list of two": (SUB, [0, 1]),
    "str": (SUB, "1"),
    "bool": (SUB, True),
    "empty array": (SUB, np.array([])),
    "array of strings": (SUB, np.array(["1"])),
    "out-of-range int": (SUB, 4),
    "float for a discrete agent": (SUB, 1.5),
    "redispatch as a str": (GEN, "1.0"),
    "redispatch as a bool": (GEN, True),
    "redispatch outside the ramps": (GEN, 100.0),
}


@pytest.mark.parametrize("case", BATCH_CONFUSIONS, ids=list(BATCH_CONFUSIONS))
def test_the_batched_form_refuses_an_entry_of_another_type_naming_env_and_agent(batched, case):
    agent, value = BATCH_CONFUSIONS[case]
    batched.reset(seed=0)
    with pytest.raises(ValueError, match=rf"env 1, agent {agent}: action must be"):
        batched.step(_rows(batched, agent, value))


@pytest.mark.parametrize(
    "actions",
    [
        np.full((2, 12), "0"),  # numeric strings, which np.asarray would read as numbers
        np.zeros((2, 12), dtype=bool),
        np.zeros((2, 12), dtype=complex),
    ],
    ids=["strings", "bools", "complex"],
)
def test_the_batched_form_refuses_an_array_of_no_numbers_naming_its_first_entry(batched, actions):
    batched.reset(seed=0)
    with pytest.raises(ValueError, match=rf"env 0, agent {batched.agents[0]}: action must be"):
        batched.step(actions)


def test_the_batched_form_takes_numbers_of_any_numeric_array_or_list(batched):
    """Int and float arrays (a substation's choice a whole number), nested lists of them:
    the same joint actions."""
    batched.reset(seed=0)
    ints = np.zeros((2, 12), dtype=np.int64)
    ints[:, batched.agents.index(SUB)] = 1
    floats = ints.astype(np.float64)
    floats[:, batched.agents.index(GEN)] = 0.5
    expected = batched.resolve(floats).env_actions()
    for actions in (floats, floats.tolist(), floats.astype(np.float32)):
        got = batched.resolve(actions).env_actions()
        for key in expected:
            np.testing.assert_array_equal(got[key], expected[key], err_msg=key)
    batched.resolve(ints)
    batched.step(floats.tolist())

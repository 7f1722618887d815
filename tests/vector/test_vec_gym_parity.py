"""GridVecEnv behaves as AsyncVectorEnv where gymnasium's own vector tests look closely:
the element each sub-env receives, custom spaces, the warnings, the constructor's arguments.

These are the behaviours behind gymnasium's ``tests/vector`` (not shipped with the package;
``tools/run_gymnasium_vector_suite.py`` runs it), encoded against AsyncVectorEnv here.
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv
from gymnasium.vector.utils import batch_space, iterate
from vec_compare import assert_same, both
from vec_toy_envs import CountEnv, EchoActionEnv, RaisingEnv, StrSpaceEnv

from grid_vec.vector import GridVecEnv, ProtocolError
from grid_vec.vector import protocol as p

BOX = spaces.Box(0.0, 1.0, (), np.float32)
BOX1 = spaces.Box(0.0, 1.0, (1,), np.float32)
BOX2 = spaces.Box(0.0, 1.0, (2,), np.float32)
HEADER = "Received the following error from Worker-{} - Shutting it down"  # Async's wording
ACTION_CASES = {
    "box-float64-array": (BOX, np.array([0.25, 0.5])),
    "box-own-dtype-array": (BOX, np.array([0.25, 0.5], np.float32)),
    "box-list": (BOX, [0.25, 0.5]),
    "box1-flat-batch": (BOX1, np.array([0.25, 0.5])),  # (n,) for (n, 1): scalars each
    "box1-own-dtype-flat-batch": (BOX1, np.array([0.25, 0.5], np.float32)),
    "box2-float64-array": (BOX2, np.full((2, 2), 0.5)),
    "box2-own-dtype-array": (BOX2, np.full((2, 2), 0.5, np.float32)),
    "discrete-list": (spaces.Discrete(3), [1, 2]),
    "discrete-int64-array": (spaces.Discrete(3), np.array([1, 2])),
    "discrete-int32-array": (spaces.Discrete(3), np.array([1, 2], np.int32)),
    "multidiscrete-int32-array": (spaces.MultiDiscrete([3, 3]), np.ones((2, 2), np.int32)),
    "dict-mixed": (
        spaces.Dict({"a": BOX, "b": spaces.Discrete(2)}),
        {"a": np.array([0.1, 0.2]), "b": np.array([0, 1])},
    ),
    "tuple-own-dtypes": (
        spaces.Tuple((BOX, spaces.Discrete(2))),
        (np.array([0.1, 0.2], np.float32), np.array([0, 1])),
    ),
}


def _received(vector_envs, actions) -> list[tuple]:
    """The action each sub-env of each vector env received for one step of ``actions``."""
    received = []
    for envs in vector_envs:
        envs.reset(seed=0)
        envs.step(actions)
        received.append(envs.get_attr("last_action"))
    return received


@pytest.mark.parametrize("case", list(ACTION_CASES))
def test_each_sub_env_receives_the_element_iterate_yields_as_under_async(case):
    space, actions = ACTION_CASES[case]
    with both([functools.partial(EchoActionEnv, space)] * 2) as (ref, ours):
        received = _received((ref, ours), actions)
    assert_same(received[0], received[1])  # types and dtypes too
    assert_same(received[1], tuple(iterate(batch_space(space, 2), actions)))


def test_box_values_beyond_the_bounds_reach_the_env_as_under_async_but_nan_is_refused():
    actions = np.array([[-0.5], [2.0]])
    with both([functools.partial(EchoActionEnv, BOX1)] * 2) as (ref, ours):
        received = _received((ref, ours), actions)
        assert_same(received[0], received[1])
        with pytest.raises(ValueError, match="no NaN"):
            ours.step(np.array([0.25, np.nan]))
        with pytest.raises(ValueError, match="must have shape"):
            ours.step(np.array([0.25, 0.5, 0.75]))


def test_pool_send_hands_over_the_element_iterate_yields():
    envs = GridVecEnv([EchoActionEnv] * 2, envs_per_worker=2, batch_size=1)
    try:
        envs.reset(seed=0)
        envs.send(np.array([0.75]), [1])
        envs.recv()
        received = envs.call_each("get_wrapper_attr", [1], args=[("last_action",)])[0]
        assert type(received) is np.float64 and received == 0.75
    finally:
        envs.close()


def test_an_env_that_sleeps_its_action_steps_as_under_async():
    with both([functools.partial(EchoActionEnv, sleep=True)] * 2) as (ref, ours):
        outs = [(envs.reset(seed=0), envs.step(np.array([0.0, 0.001]))) for envs in (ref, ours)]
    assert_same(*outs)


def test_custom_space_travels_pickled_and_is_checked_only_for_its_count_as_under_async():
    with both([StrSpaceEnv] * 3, shared_memory=False) as (ref, ours):
        assert type(ours.action_space) is type(ref.action_space) is spaces.Tuple
        outs = [(envs.reset(seed=0), envs.step(("a-1", "a-2", "a-3"))) for envs in (ref, ours)]
        assert_same(*outs)
        assert outs[1][1][0] == ("step(a-1)", "step(a-2)", "step(a-3)")
        for envs in (ref, ours):
            with pytest.raises(ValueError):
                envs.step(("a-1", "a-2"))


def test_custom_observation_space_with_shared_memory_is_a_value_error_as_under_async():
    for make in (functools.partial(AsyncVectorEnv, context="fork"), GridVecEnv):
        with pytest.raises(ValueError, match="shared_memory"):
            make([StrSpaceEnv] * 2, shared_memory=True)


def _messages(record: list[warnings.WarningMessage]) -> list[str]:
    assert all(issubclass(w.category, UserWarning) for w in record)
    return [str(w.message) for w in record]


def _raise_recording(fn, match):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match=match) as info:
            fn()
    return _messages(record), info.value


def test_sub_env_error_warns_as_async_does_and_keeps_the_index_note():
    """Per error, a header naming the sub-env and the worker's traceback; then one last line.
    (AsyncVectorEnv's headers come in the order its workers answered: compared as sets.)"""
    for call, match, failing in (
        (lambda envs: envs.reset(seed=[1, 0, 0]), "error in reset", [0]),
        (lambda envs: envs.step(np.array([0, 1, 2])), "error in step with [12]", [1, 2]),
    ):
        with both([RaisingEnv] * 3) as (ref, ours):
            for envs in (ref, ours):
                envs.reset(seed=[0, 0, 0])
            (ref_msgs, _), (our_msgs, error) = (
                _raise_recording(functools.partial(call, envs), match) for envs in (ref, ours)
            )
        assert len(our_msgs) == len(ref_msgs) == 2 * len(failing) + 1
        assert (
            set(our_msgs[0:-1:2])
            == set(ref_msgs[0:-1:2])
            == {f"\x1b[31mERROR: {HEADER.format(i)}\x1b[0m" for i in failing}
        )
        for trace in our_msgs[1:-1:2]:
            assert "Traceback (most recent call last)" in trace and "ValueError: error in" in trace
        assert our_msgs[-1] == ref_msgs[-1]
        assert error.env_index == failing[-1]  # the highest index: ours are in index order
        assert str(error).endswith(str(failing[-1]) if len(failing) > 1 else "reset")
        assert f"raised by sub-env {failing[-1]} of GridVecEnv" in error.__notes__[0]


@pytest.mark.parametrize("terminate", [True, False])
@pytest.mark.parametrize("pending", ["step", "reset"])
def test_close_with_a_pending_call_warns_as_async_does(pending, terminate):
    with both([CountEnv] * 2) as (ref, ours):
        messages = []
        for envs in (ref, ours):
            envs.reset(seed=0)
            if pending == "step":
                envs.step_async(np.zeros(2, np.int64))
            else:
                envs.reset_async()
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                envs.close(terminate=terminate)
            messages.append(_messages(record))
    assert messages[1] == messages[0]
    assert f"Calling `close` while waiting for a pending call to `{pending}`" in messages[1][0]


def test_unknown_command_is_answered_with_a_protocol_error_and_the_worker_keeps_serving():
    envs = GridVecEnv([CountEnv] * 2, envs_per_worker=2)
    try:
        envs.reset(seed=0)
        worker = envs._workers[0]
        envs._write(worker, p.encode(99))
        with pytest.warns(UserWarning), pytest.raises(ProtocolError) as info:
            envs._gather([worker], None)
        assert "unknown command 99" in str(info.value)
        assert "STEP=1" in str(info.value)  # names the commands it knows
        assert "raised by a worker of GridVecEnv" in info.value.__notes__[0]
        envs.step(np.zeros(2, np.int64))
    finally:
        envs.close()


def test_leading_arguments_are_positional_as_in_async():
    leading = ["self", "env_fns", "shared_memory", "copy", "context", "daemon"]
    for cls in (AsyncVectorEnv, GridVecEnv):
        params = list(inspect.signature(cls.__init__).parameters.values())[: len(leading)]
        assert [(q.name, q.kind) for q in params] == [
            (name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in leading
        ]
    envs = GridVecEnv([CountEnv], False, False)
    try:
        assert envs.shared_memory is False and envs.copy is False
    finally:
        envs.close()

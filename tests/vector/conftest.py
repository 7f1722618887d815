"""Vector tests: toy envs travel by value, so spawned workers need not import tests/."""

import cloudpickle
import pytest
import vec_toy_envs

cloudpickle.register_pickle_by_value(vec_toy_envs)


@pytest.fixture
def shm_and_children():
    """Assert a test leaves no new /dev/shm entry and no live child process behind."""
    import os

    from process_checks import live_children, shm_entries

    before = shm_entries()
    children_before = set(live_children(os.getpid()))
    yield
    leftover_children = set(live_children(os.getpid())) - children_before
    assert not leftover_children, leftover_children
    assert shm_entries() <= before

"""Integration tests: test envs travel to workers by value (each file skips itself when its
extra is missing)."""

import cloudpickle
import pytest
import sb3_envs

cloudpickle.register_pickle_by_value(sb3_envs)


@pytest.fixture
def no_leftovers():
    """Assert a test leaves no live child process and no new /dev/shm entry behind."""
    import os

    from process_checks import live_children, shm_entries

    before = shm_entries()
    children_before = set(live_children(os.getpid()))
    yield
    leftover_children = set(live_children(os.getpid())) - children_before
    assert not leftover_children, leftover_children
    assert shm_entries() <= before

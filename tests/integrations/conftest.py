"""Integration tests: test envs travel to workers by value (each file skips itself when its
extra is missing)."""

import cloudpickle
import pytest
import sb3_envs

cloudpickle.register_pickle_by_value(sb3_envs)


@pytest.fixture
def no_leftovers():
    """Assert a test leaves no live child process and no new /dev/shm entry behind."""
    import multiprocessing
    import os

    before = set(os.listdir("/dev/shm"))
    yield
    children = [p for p in multiprocessing.active_children() if p.is_alive()]
    assert not children, children
    assert set(os.listdir("/dev/shm")) <= before

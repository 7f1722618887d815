"""Integration tests: test envs travel to workers by value (each file skips itself when its
extra is missing)."""

import cloudpickle
import pytest
import sb3_envs
from process_checks import no_leftovers as leftover_check

cloudpickle.register_pickle_by_value(sb3_envs)


@pytest.fixture
def no_leftovers():
    """Assert a test leaves no live child process and no new /dev/shm entry behind."""
    with leftover_check():
        yield

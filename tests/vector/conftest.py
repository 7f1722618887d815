"""Vector tests: toy envs travel by value, so spawned workers need not import tests/."""

import cloudpickle
import pytest
import vec_toy_envs
from process_checks import no_leftovers as leftover_check

cloudpickle.register_pickle_by_value(vec_toy_envs)


@pytest.fixture
def shm_and_children():
    """Assert a test leaves no new /dev/shm entry and no live child process behind."""
    with leftover_check():
        yield

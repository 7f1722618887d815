"""Shared fixtures: the embedded case14 grid, compiled once per test session."""

from __future__ import annotations

import pytest
from env_helpers import loose_limits

from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.env.embedded import embedded_model
from grid_vec.env.grid_env import GridEnv


@pytest.fixture(scope="session")
def case14():
    return embedded_model("case14")


@pytest.fixture
def make_env(case14):
    """Build a case14 GridEnv over short synthetic scenarios; limits never bind by default."""

    def build(length: int = 60, **kwargs) -> GridEnv:
        kwargs.setdefault("thermal_limits", loose_limits(case14))
        return GridEnv(case14, SyntheticSource(case14, seed=0, length=length), **kwargs)

    return build

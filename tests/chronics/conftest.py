"""Shared fixtures: GridModels compiled from pandapower's test cases."""

from __future__ import annotations

import pytest

from grid_vec.grid.compile import compile_net
from grid_vec.grid.model import GridModel
from grid_vec.grid.networks import load_network


def _compiled(name: str) -> GridModel:
    return compile_net(load_network(name), name=name)


@pytest.fixture(scope="session")
def case14_model() -> GridModel:
    return _compiled("case14")


@pytest.fixture(scope="session")
def case118_model() -> GridModel:
    return _compiled("case118")


@pytest.fixture(scope="session")
def case5_model() -> GridModel:
    """case5 has one sgen, so renewables are exercised."""
    return _compiled("case5")

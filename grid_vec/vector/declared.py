"""What an env or a factory declares of itself, read without importing the batched core (a
worker of other envs never imports it): whether an env is a GridEnv itself, whether a
factory makes the rows of one batch."""

from __future__ import annotations

from typing import Any


def declares(cls: type, name: str) -> bool:
    """Whether ``cls`` itself (not a base class) sets the class attribute ``name`` to True."""
    return cls.__dict__.get(name) is True


def is_grid_env(env: Any) -> bool:
    """Whether ``env`` is a GridEnv itself (no wrapper, no subclass: its ``step`` is the
    GridEnv's), by what its class declares (``steps_as_batch_row``)."""
    return declares(type(env), "steps_as_batch_row")


def makes_batch_rows(factory: Any) -> bool:
    """Whether ``factory`` makes GridEnvs as the rows of one batch (``makes_batch_rows``: a
    ``GridEnvFactory``, as ``make_vec`` hands them out)."""
    return declares(type(factory), "makes_batch_rows")

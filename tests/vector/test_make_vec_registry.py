"""make_vec picks its vectorization by name in a registry (VECTORIZATIONS): builders, or
entry points imported on first use (``"ray"``: the integrations layer, an optional extra)."""

from __future__ import annotations

import pytest

import grid_vec
from grid_vec.vector.make_vec import VECTORIZATIONS


def test_make_vec_refuses_an_unknown_vectorization_naming_the_registered_ones():
    with pytest.raises(ValueError, match=r"one of \('multiprocess', 'batched', 'ray'\)"):
        grid_vec.make_vec("case14", 2, vectorization="threads")


def test_ray_is_registered_by_entry_point_not_imported_by_the_vector_layer():
    assert VECTORIZATIONS["ray"] == ("grid_vec.integrations.ray_vec_env:make_ray_vec")


def test_an_entry_point_whose_extra_is_missing_raises_import_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(VECTORIZATIONS, "ray", "grid_vec_no_such_module:build")
    with pytest.raises(ImportError, match=r"pip install 'grid_vec\[ray\]'"):
        grid_vec.make_vec("case14", 2, vectorization="ray")


def test_batched_vectorization_refuses_envs_per_worker():
    with pytest.raises(ValueError, match="envs_per_worker applies to"):
        grid_vec.make_vec("case14", 2, vectorization="batched", envs_per_worker=1)

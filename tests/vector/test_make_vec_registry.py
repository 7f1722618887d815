"""make_vec picks its vectorization by name: its own builders (VECTORIZATIONS), or a plugin's
entry point of the ``grid_vec.vectorizations`` group, loaded on first use (``"ray"``: the
integrations layer, an optional extra, which grid_vec.vector never names)."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
from pathlib import Path

import pytest

import grid_vec
from grid_vec.vector.make_vec import PLUGIN_GROUP, VECTORIZATIONS

# the module (grid_vec.vector's make_vec attribute is the function)
make_vec_module = importlib.import_module("grid_vec.vector.make_vec")


def test_make_vec_refuses_an_unknown_vectorization_naming_the_registered_ones():
    with pytest.raises(ValueError, match=r"one of \('multiprocess', 'batched', 'ray'\)"):
        grid_vec.make_vec("case14", 2, vectorization="threads")


def test_ray_is_a_plugin_entry_point_that_the_vector_layer_never_names():
    (ray,) = importlib.metadata.entry_points(group=PLUGIN_GROUP, name="ray")
    assert ray.value == "grid_vec.integrations.ray_vec_env:make_ray_vec"
    assert "ray" not in VECTORIZATIONS
    entry_point = re.compile(r"grid_vec\.integrations[\w.]*:\w+")
    for module in Path(make_vec_module.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module] if isinstance(node, ast.ImportFrom) else []
                names += [alias.name for alias in node.names]
                assert not any("integrations" in (n or "") for n in names), module
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not entry_point.search(node.value), module


def test_a_plugin_whose_extra_is_missing_raises_import_error_naming_the_extra(monkeypatch):
    missing = importlib.metadata.EntryPoint("ray", "grid_vec_no_such_module:build", PLUGIN_GROUP)
    monkeypatch.setattr(make_vec_module, "_plugins", lambda: {"ray": missing})
    with pytest.raises(ImportError, match=r"pip install 'grid_vec\[ray\]'"):
        grid_vec.make_vec("case14", 2, vectorization="ray")


def test_batched_vectorization_refuses_envs_per_worker():
    with pytest.raises(ValueError, match="envs_per_worker applies to"):
        grid_vec.make_vec("case14", 2, vectorization="batched", envs_per_worker=1)

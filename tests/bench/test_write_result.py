"""A benchmark's result JSON holds its arguments as given (``vars(args)``), paths included:
``--out`` itself is a path, and writing it made bench_vector.py fail after its whole run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grid_vec.bench import write_result


def test_write_result_writes_paths_as_their_text(tmp_path: Path):
    path = write_result({"args": {"out": tmp_path, "reps": 3}}, tmp_path, "result.json")
    assert path == tmp_path / "result.json"
    assert json.loads(path.read_text()) == {"args": {"out": str(tmp_path), "reps": 3}}


def test_write_result_refuses_what_json_cannot_write(tmp_path: Path):
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        write_result({"args": {1, 2}}, tmp_path, "result.json")

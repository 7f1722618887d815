"""Hostile dataset folders, third round: the JSON depth bound is linear and exact, and the
last bare errors of the folder readers (symlink loops, a date past year 9999, a thermal limit
of 1e-300) are one FolderFormatError naming the file."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_hostile_folders import _fails_naming, _open, folder, pristine  # noqa: F401 (fixtures)

import grid_vec
import grid_vec._untrusted as untrusted
from grid_vec._untrusted import MAX_JSON_DEPTH, UntrustedFileError, json_depth
from grid_vec.chronics.untrusted import MAX_SMALL_FILE_BYTES, load_json
from grid_vec.runner.bounded_io import read_json

MB = 2**20


# ---- one linear-time JSON bound ------------------------------------------------------------


def _fill(head: str, unit: str, tail: str = "") -> str:
    """``head``, then ``unit`` repeated, then ``tail``: MB bytes in all (ASCII)."""
    return head + unit * ((MB - len(head) - len(tail)) // len(unit)) + tail


# each 1 MB: the regex the bound used before backtracked on every one (hours of work)
HOSTILE_JSON = {
    "escaped quotes": _fill('"', '\\"', '"'),
    "backslash runs then a quote": _fill("[", '"\\\\\\\\\\\\\\"'),
    "unterminated string of escapes": _fill('["', '\\"a'),
    "quotes without end": _fill("", '"\\'),
    "brackets inside a string": _fill('"', "[{", '"'),
    "opening brackets": _fill("", "["),
}


@pytest.mark.timeout(30)  # the quadratic scan ran for hours: stop it, failing
@pytest.mark.parametrize("name", HOSTILE_JSON)
def test_a_hostile_megabyte_of_json_is_bounded_in_under_a_second(tmp_path, name):
    """Read as a dataset file and as a recorded run's file: both readers bound the depth."""
    layout, meta = tmp_path / "grid_layout.json", tmp_path / "meta.json"
    for path in (layout, meta):
        path.write_text(HOSTILE_JSON[name])
    assert layout.stat().st_size <= MAX_SMALL_FILE_BYTES
    began = time.perf_counter()
    for read, path in ((load_json, layout), (lambda p: read_json(p, "episode metadata"), meta)):
        try:
            read(path)
        except UntrustedFileError as exc:  # invalid or too deep: one error naming the file
            assert path.name in str(exc)
    assert time.perf_counter() - began < 1.0


def _reference_depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_reference_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_reference_depth, value.values()), default=0)
    return 0


_TRICKY_STRINGS = ("", "\\", '"', '\\"', "\\\\", '[{"', "]}", "\\u005c", "é[€", "\n]\t", "x" * 7)


def _document(rng: random.Random, depth: int = 0):
    """A random JSON value, its strings full of quotes, backslashes and brackets."""
    draw = rng.random()
    if depth >= 8 or draw < 0.3:
        return rng.choice([0, -1.5, None, True, *_TRICKY_STRINGS])
    if draw < 0.65:
        return [_document(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = [rng.choice(_TRICKY_STRINGS) + str(i) for i in range(rng.randint(0, 4))]
    return {key: _document(rng, depth + 1) for key in keys}


@pytest.mark.parametrize("block", [1, 2, 3, 7, None])
def test_json_depth_equals_the_depth_json_loads_finds_on_valid_documents(monkeypatch, block):
    if block is not None:  # tiny blocks: escapes and strings across block boundaries
        monkeypatch.setattr(untrusted, "_DEPTH_BLOCK", block)
    rng = random.Random(block)
    for _ in range(300 if block is None else 40):  # a tiny block scans byte by byte: fewer
        value = _document(rng)
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
        expected = _reference_depth(json.loads(text))
        assert json_depth(text) == expected, text
        assert json_depth(text.encode()) == expected, text


def test_json_depth_never_falls_below_the_depth_of_a_valid_beginning():
    """A parser reaches, before its first error, the depth of the valid text up to there:
    whatever follows, the bound counts at least that."""
    rng = random.Random(0)
    junk = ['"', "\\", "\\\\", "]", "}", "[", "x", '\\"']
    for _ in range(300):
        text = json.dumps([_document(rng)] * 2)
        prefix = text[: rng.randint(0, len(text))]
        tail = "".join(rng.choice(junk) for _ in range(rng.randint(0, 12)))
        assert json_depth(prefix + tail) >= json_depth(prefix), prefix + tail


def test_a_megabyte_of_brackets_is_refused_as_too_deep_naming_the_file(tmp_path):
    path = tmp_path / "grid_layout.json"
    path.write_text(HOSTILE_JSON["opening brackets"])
    err = _fails_naming(lambda: load_json(path), "grid_layout.json")
    assert f"limit {MAX_JSON_DEPTH}" in str(err)


# ---- the last bare errors of the folder readers --------------------------------------------


@pytest.fixture
def looping_multi_mix(folder, tmp_path) -> Path:  # noqa: F811 (the imported fixture)
    """A multi-mix folder: ``mix_a`` a valid folder, ``mix_b`` a symlink to the multi-mix
    folder itself."""
    root = tmp_path / "multimix"
    root.mkdir()
    (root / ".multimix").write_text("")
    folder.rename(root / "mix_a")
    (root / "mix_b").symlink_to(".", target_is_directory=True)
    return root


def test_a_mix_linked_to_its_own_multi_mix_folder_is_refused_naming_it(looping_multi_mix):
    err = _fails_naming(lambda: grid_vec.make(str(looping_multi_mix)), "mix_b")
    assert "points back to the dataset folder" in str(err)


def test_the_cli_prints_one_line_and_exits_2_on_a_mix_linked_to_itself(looping_multi_mix):
    argv = ["run", "--env", str(looping_multi_mix), "--no-save", "--episodes", "1"]
    proc = subprocess.run(
        [sys.executable, "-m", "grid_vec.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1, proc.stderr[-2000:]
    assert proc.stderr.startswith("grid-vec run: ") and "mix_b" in proc.stderr


@pytest.mark.parametrize("file", ["grid.json", "config.py"])
def test_a_file_that_is_a_symlink_loop_is_refused_naming_it(folder, case14_model, file):  # noqa: F811
    path = folder / file
    path.unlink()
    path.symlink_to(file)  # a link to itself
    err = _fails_naming(lambda: _open(folder, case14_model), path.name)
    assert "symlink loop" in str(err)


def test_a_start_date_whose_last_step_is_past_year_9999_is_refused_naming_it(folder, case14_model):  # noqa: F811
    (folder / "chronics" / "0000" / "start_datetime.info").write_text("9999-12-31 23:59\n")
    err = _fails_naming(lambda: _open(folder, case14_model), "start_datetime.info")
    assert "after year 9999" in str(err)


def test_a_thermal_limit_below_a_milliamp_is_refused_naming_config_py_and_the_index(
    folder,  # noqa: F811
    case14_model,
):
    limits = [float(v) for v in case14_model.thermal_limit_a]
    limits[3] = 1e-300
    (folder / "config.py").write_text(f"config = {{'thermal_limits': {limits!r}}}\n")
    err = _fails_naming(lambda: _open(folder, case14_model), "config.py")
    assert "config['thermal_limits'][3]" in str(err) and "minimum" in str(err)

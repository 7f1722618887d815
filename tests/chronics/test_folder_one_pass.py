"""A dataset folder is read in one pass: ``config.py`` parsed once per make (not at all while
the folder's compiled entry stands), each rules file read once, and every reader of
``config.py`` (the thermal limits, the renaming, the forecasts, the scenario class, the
reward, the opponent) served from that one record."""

from __future__ import annotations

import collections
import json

import pytest
from test_folder import net14, write_folder  # noqa: F401 (net14 is a fixture)

import grid_vec.chronics.config_file as config_file
import grid_vec.chronics.folder as folder_module
import grid_vec.chronics.folder_config as folder_config
from grid_vec.chronics.folder import FolderSource, load_folder
from grid_vec.chronics.folder_config import FolderConfig, read_folder_config
from grid_vec.env.make import clear_compiled_cache, make

OPPONENT = (
    '"opponent_class": RandomLineOpponent, "opponent_budget_class": BaseActionBudget, '
    '"opponent_action_class": PowerlineSetAction, "opponent_attack_cooldown": 12, '
    '"opponent_attack_duration": 4, "opponent_budget_per_ts": 0.5, '
    '"opponent_init_budget": 0.0, "kwargs_opponent": {"lines_attacked": ["1_3_3"]}'
)


@pytest.fixture
def full_folder(tmp_path, case14_model, net14):  # noqa: F811 (net14 is a fixture)
    """A case14 folder whose config.py names every entry the game reads, with rules files."""
    root = write_folder(tmp_path / "full14", case14_model, net14)
    text = (root / "config.py").read_text()
    extra = (
        '"reward_class": L2RPNReward, "grid_value_class": GridStateFromFileWithForecasts, '
        f"{OPPONENT}, "
    )
    (root / "config.py").write_text(text.replace("config = {", "config = {" + extra, 1))
    (root / "difficulty_levels.json").write_text(
        json.dumps({"0": {"NB_TIMESTEP_COOLDOWN_LINE": 2}})
    )
    (root / "parameters.json").write_text(json.dumps({"NB_TIMESTEP_COOLDOWN_SUB": 3}))
    return root


def _count_calls(monkeypatch, module, name: str, counter: collections.Counter) -> None:
    original = getattr(module, name)

    def counted(*args, **kwargs):
        counter[name] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


def test_make_parses_config_py_once_and_reads_each_rules_file_once(full_folder, monkeypatch):
    calls: collections.Counter = collections.Counter()
    _count_calls(monkeypatch, folder_config, "parse_config", calls)
    _count_calls(monkeypatch, config_file, "parse_config", calls)
    for name in ("read_levels", "read_params", "read_grid_json"):
        _count_calls(monkeypatch, folder_module, name, calls)
    clear_compiled_cache()
    env = make(full_folder)
    # one parse of config.py, each rules file once; grid.json at most once (a compile)
    assert calls["parse_config"] == 1
    assert calls["read_levels"] == 1 and calls["read_params"] == 1
    assert calls["read_grid_json"] <= 1
    # what the game took from config.py: the reward, the opponent, the limits
    assert type(env.unwrapped.config.reward_fn).__name__ == "L2RPNReward"
    assert type(env.unwrapped.config.opponent).__name__ == "RandomLineOpponent"
    env.close()
    calls.clear()
    make(full_folder).close()  # the folder's compiled entry stands: nothing parsed again
    assert calls["parse_config"] == 0 and calls["read_levels"] == 0
    clear_compiled_cache()


def test_the_folder_config_record_holds_every_entry_the_game_reads(full_folder, case14_model):
    config = read_folder_config(full_folder)
    assert config.path == full_folder.resolve() / "config.py"
    assert config.reward_class == "L2RPNReward"
    assert config.grid_value_class == "GridStateFromFileWithForecasts"
    assert not config.random_maintenance
    assert config.forecast_horizons == 1
    assert config.opponent.values["opponent_class"] == "RandomLineOpponent"
    assert config.opponent.values["kwargs_opponent"] == {"lines_attacked": ["1_3_3"]}
    assert len(config.thermal_limits) == case14_model.n_branch
    # the folder and the scenario source take the record handed to them, reading no config.py
    folder = load_folder(full_folder, case14_model, config)
    assert folder.config is config
    source = FolderSource(full_folder, case14_model, config=config)
    assert source.config is config


def test_a_folder_without_config_py_has_the_default_record(full_folder, case14_model):
    (full_folder / "config.py").unlink()
    assert read_folder_config(full_folder) == FolderConfig()
    source = FolderSource(full_folder, case14_model)
    assert source.config.forecast_horizons == 1 and source.config.renaming("loads") == {}

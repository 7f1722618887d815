"""An action type is one record in one registry (core/action_kinds.py, with its form in
env/action_types.py): every entry builds its space on a real env and plays its do-nothing
action, and no module between the user and the core picks by an action type's name."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces

import grid_vec
from grid_vec.core.action_kinds import ACTION_KINDS
from grid_vec.env.action_types import ACTION_TYPES, action_type

PACKAGE = Path(grid_vec.__file__).parent
# the modules that once chose spaces, parsing and categories by an action type's name
READERS = ["env/grid_env.py", "env/action_input.py", "core/config.py"]
_NAMES = "|".join(map(re.escape, ACTION_TYPES))
# a comparison with an action type's name, or a test of membership in a tuple of names
# (written out, or a module's private constant)
_PICKS_BY_NAME = re.compile(
    r"action_type\s*(==|!=)|action_type\s+(not\s+)?in\s*(\(|_[A-Z])"
    rf"""|(==|!=)\s*["']({_NAMES})["']"""
)


def _make(name: str):
    """An env of action type ``name`` (storage: a grid with storage units, from grid2op's
    bundled folders)."""
    if name == "storage":
        pytest.importorskip("grid2op", reason="the grid with storage ships with grid2op")
        return grid_vec.make("educ_case14_storage", action_type=name)
    return grid_vec.make("case14", action_type=name)


def test_the_registry_has_every_kind_of_the_core_in_its_order():
    assert list(ACTION_TYPES) == list(ACTION_KINDS)
    for name, record in ACTION_TYPES.items():
        assert record.name == name and record.kind is ACTION_KINDS[name]
        assert record.words and "\n" not in record.words
        assert action_type(name) is record
        assert name in ACTION_TYPES  # the names, as the tuple they replace gave them


def test_an_unknown_action_type_names_the_known_ones():
    with pytest.raises(ValueError, match=r"action_type must be one of \('discrete', "):
        action_type("teleport")
    with pytest.raises(ValueError, match="action_type must be one of"):
        grid_vec.make("case14", action_type="teleport")


@pytest.mark.parametrize("name", list(ACTION_TYPES))
def test_every_action_type_builds_its_space_and_plays_its_do_nothing_action(name):
    env = _make(name)
    unwrapped = env.unwrapped
    record = unwrapped.action_kind
    assert record is ACTION_TYPES[name] and unwrapped.action_type == name
    batch = unwrapped.batch_row[0]
    assert record.space(batch) == env.action_space
    nothing = unwrapped.do_nothing_action
    assert env.action_space.contains(nothing)
    index, buses, continuous = record.parts(batch, nothing)
    assert (index is not None) == record.kind.catalog
    assert (buses is not None) == record.kind.set_bus
    assert (continuous is not None) == record.kind.continuous
    env.reset(seed=0)
    _, _, terminated, _, info = env.step(nothing)
    assert not terminated and not info["is_illegal"] and not info["is_ambiguous"]
    # a batch of two do-nothing actions parses as two rows of one
    two = record.parse_batch(batch, _stacked(nothing, 2))
    one = record.parse_one(batch, nothing)
    np.testing.assert_array_equal(two.topology, np.repeat(one.topology, 2))
    env.close()


def _stacked(action, n: int):
    """``n`` copies of one env's action, as a batch (a leading axis on every leaf)."""
    if isinstance(action, dict):
        return {key: _stacked(leaf, n) for key, leaf in action.items()}
    return np.stack([np.asarray(action)] * n)


def test_the_form_follows_from_the_parts():
    env = grid_vec.make("case14", action_type="combined")
    space = env.action_space
    assert isinstance(space, spaces.Dict) and set(space) == {"topology", "continuous"}
    env.close()
    env = grid_vec.make("case14", action_type="set_bus_continuous")
    assert set(env.action_space) == {"set_bus", "set_line_status", "continuous"}
    env.close()


@pytest.mark.parametrize("module", READERS)
def test_no_module_picks_by_an_action_type_name(module):
    """Spaces, checks, parts and categories are read from the records: a comparison with a
    name (``action_type == "discrete"``, ``action_type in ("set_bus", ...)``) fails here."""
    found = [
        f"line {number}: {line.strip()}"
        for number, line in enumerate((PACKAGE / module).read_text().splitlines(), 1)
        if _PICKS_BY_NAME.search(line) and not line.lstrip().startswith("#")
    ]
    assert not found, f"{module} picks by an action type's name: {found}"


def test_the_name_check_finds_a_comparison():
    assert _PICKS_BY_NAME.search('if action_type == "discrete":')
    assert _PICKS_BY_NAME.search('elif action_type in ("set_bus", "set_bus_continuous"):')
    assert _PICKS_BY_NAME.search('alone = kind != "continuous"')
    assert _PICKS_BY_NAME.search("if action_mask and action_type not in _MASK_TYPES:")
    assert not _PICKS_BY_NAME.search("self.action_type = action_type")

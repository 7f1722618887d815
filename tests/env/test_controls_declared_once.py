"""A continuous control is declared once (its ActionBatch field and Control in
core/records.py); the layers between the agent and its rule read the declarations, never a
control by name (so that a new control takes its declaration, its rule and its phase)."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

import grid_vec
from grid_vec.core.action_kinds import ACTION_KINDS
from grid_vec.core.continuous import ContinuousLayout
from grid_vec.core.records import CONTROLS, ActionBatch

PACKAGE = Path(grid_vec.__file__).parent
# the layers between the agent and the rules: spaces, checks, split, parsing, vector envs
BETWEEN = [
    "core/continuous.py",
    "env/action_input.py",
    "vector/slice_engine.py",
    "vector/batched.py",
    "vector/vec_env.py",
    "vector/worker.py",
    "vector/actions.py",
]  # not core/batch.py: its ``storage`` is the grid's storage units, not the control


def test_every_control_field_is_declared_and_has_its_own_action_type():
    declared = [f.name for f in fields(ActionBatch) if "control" in f.metadata]
    assert list(CONTROLS) == declared == ["redispatch", "curtail", "storage"]
    singles = [c.action_type for c in CONTROLS.values()]
    assert ("discrete", *singles, "continuous", "combined", "set_bus", "set_bus_continuous") == (
        tuple(ACTION_KINDS)
    )
    assert [kind.controls for kind in ACTION_KINDS.values() if kind.alone] == [
        (control,) for control in CONTROLS.values()
    ]


@pytest.mark.parametrize("module", BETWEEN)
def test_no_layer_between_names_a_control(module):
    tree = ast.parse((PACKAGE / module).read_text())
    named = [
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in CONTROLS
    ]
    named += [
        f"line {node.value.lineno}: {node.arg}="
        for node in ast.walk(tree)
        if isinstance(node, ast.keyword) and node.arg in CONTROLS
    ]
    assert not named, f"{module} names a control: {named}"


def test_split_gives_each_control_of_the_layout_at_its_neutral_value_off_its_columns():
    """Off its columns, and on a column that leaves its entity unchanged (a curtailment
    below 0), a control is at its neutral value; elsewhere at the column's."""
    pytest.importorskip("grid2op", reason="needs the grid2op extra (a bundled grid with storage)")
    env = grid_vec.make("l2rpn_wcci_2022_dev", action_type="continuous")
    layout: ContinuousLayout = env.unwrapped.batch_row[0].continuous
    action = env.action_space.sample()[None]
    split = layout.split(action)
    assert list(split) == [p.name for p in layout.parts] == list(CONTROLS)
    unchanged = 0
    for part in layout.parts:
        values = split[part.name]
        assert values.dtype == np.float64 and values.shape == (1, part.entities)
        given = action[0, part.start : part.stop]
        asks = part.control.asks(given)
        np.testing.assert_array_equal(values[0, part.columns[asks]], given[asks])
        np.testing.assert_array_equal(values[0, part.columns[~asks]], part.control.neutral)
        unchanged += int((~asks).sum())
        off = np.setdiff1d(np.arange(part.entities), part.columns)
        np.testing.assert_array_equal(values[0, off], np.full(len(off), part.control.neutral))
    assert unchanged  # the sample left some curtailment limits unchanged (below 0)
    played = ActionBatch(np.zeros(1, dtype=np.int64), **split).neutralised(np.array([True]))
    for name, control in CONTROLS.items():
        np.testing.assert_array_equal(
            getattr(played, name), np.full_like(split[name], control.neutral)
        )
    env.close()

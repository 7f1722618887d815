"""docs/tasks.md's table of the PPO example's defaults per task is the example's own: each
row is what ``examples/ppo_task.py --task TASK`` resolves (the task's, then its action head's
defaults), and every task of an embedded grid has its row."""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs the sb3 extra (torch)")

import grid_vec
from grid_vec.env.datasets import DatasetNotFoundError
from grid_vec.env.tasks import TASKS
from grid_vec.integrations.torch_policy import Architecture

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ["head", "lr", "anneal_lr", "gamma", "ent_coef", "deadband", "noop_bias", "hard_below"]


def _example():
    spec = importlib.util.spec_from_file_location("ppo_task", ROOT / "examples" / "ppo_task.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _documented() -> dict[str, list[str]]:
    """The rows of the table under "Defaults per task": task id -> its cells."""
    text = (ROOT / "docs" / "tasks.md").read_text()
    section = text.split("#### Defaults per task", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        found = re.match(r"\| `(grid_vec/[\w-]+)` \|(.*)\|$", line)
        if found:
            rows[found[1]] = [cell.strip() for cell in found[2].split("|")]
    return rows


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:g}" if isinstance(value, float | int) else str(value)


def _resolved(example, task: str, space) -> list[str]:
    args = example.parse_args(["--task", task])
    arch = Architecture.for_space("mlp", space, head=args.head, hidden=8, n_obs=4)
    example.apply_head_defaults(args, arch.head)
    return [_cell(arch.head), *(_cell(getattr(args, name)) for name in COLUMNS[1:])]


def test_the_documented_defaults_per_task_are_what_the_ppo_example_resolves():
    example = _example()
    documented = _documented()
    embedded = []
    for task in TASKS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                space = grid_vec.make(task).action_space
        except DatasetNotFoundError:  # a dataset task whose dataset is a download
            continue
        embedded.append(task)
        assert task in documented, f"{task} has no row in docs/tasks.md's defaults per task"
        assert documented[task] == _resolved(example, task, space), task
    assert set(documented) == set(embedded)  # no row of a task that is not there
    assert len(embedded) >= 6  # the case14 and case118 tasks were all checked


def test_a_setting_on_the_command_line_wins_over_the_task_s_default():
    example = _example()
    task = "grid_vec/Case14Topology-v0"
    assert example.parse_args(["--task", task]).hard_below == 2016  # the task's
    assert example.parse_args(["--task", task, "--hard-below", "600"]).hard_below == 600
    combined = ["--task", "grid_vec/Case118Combined-v0"]
    assert example.parse_args(combined).head == "moves"
    assert example.parse_args([*combined, "--head", "hybrid"]).head == "hybrid"
    # a task with no difficulty file trains on every scenario unless told otherwise
    assert example.parse_args(["--task", "grid_vec/Case14Combined-v0"]).hard_below == 0

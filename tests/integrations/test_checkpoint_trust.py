"""A checkpoint is untrusted input, read in one bounded pass: what it declares is checked before
anything is allocated (sizes capped, the weights' shapes those of the declared network, the
observation statistics sound), and its spaces against the task's before the first step; every
refusal is one ``CheckpointError`` naming the file (one line and exit status 2 on the CLI)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the sb3 extra (torch)")

import torch

import grid_vec
from grid_vec.cli import main
from grid_vec.integrations.checkpoint import load_policy, save_checkpoint
from grid_vec.integrations.torch_policy import (
    Architecture,
    CheckpointError,
    ObservationNorm,
    build_network,
)
from grid_vec.runner import evaluate
from grid_vec.runner.evaluate import evaluate_task

TASK = "grid_vec/Case14Topology-v0"
OTHER_TASK = "grid_vec/Case118Topology-v0"


def _valid(path: Path, observation: str = "flat", task: str = TASK, **sizes: Any) -> dict:
    """Write a small valid checkpoint of ``task`` (random weights, statistics of one
    observation) at ``path``; return what it holds, to tamper with."""
    torch.manual_seed(0)
    env = grid_vec.make(task, observation=observation, **sizes.pop("env_kwargs", {}))
    graph = observation == "graph"
    n_obs = 0 if graph else env.observation_space.shape[0]
    sizes = {"hidden": 32, "rounds": 2, **sizes}
    arch = Architecture.for_space("gnn" if graph else "mlp", env.action_space, n_obs=n_obs, **sizes)
    norm = ObservationNorm.for_space(env.observation_space)
    obs, _ = env.reset(seed=0)
    norm({k: v[None] for k, v in obs.items()} if graph else obs[None])
    save_checkpoint(path, build_network(arch), arch, norm, task=task, observation=observation)
    return torch.load(path, weights_only=True)


# Loads each checkpoint named on its command line and prints, for each, the error, the seconds
# it took and how much the peak resident memory grew (ru_maxrss: KiB on Linux), which sees
# torch's allocations as tracemalloc does not.
_LOAD_IN_CHILD = r"""
import json, resource, sys, time
from grid_vec.integrations.checkpoint import load_policy
from grid_vec.integrations.torch_policy import CheckpointError
rows = []
for path in sys.argv[1:]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        load_policy(path)
        error = None
    except CheckpointError as exc:
        error = str(exc)
    seconds = time.perf_counter() - start
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    rows.append({"error": error, "seconds": seconds, "grown_mb": grown / 1024})
print(json.dumps(rows))
"""


def _load_in_child(*paths: Path) -> list[dict]:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _LOAD_IN_CHILD, *map(str, paths)],
            capture_output=True,
            text=True,
            timeout=90,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading the checkpoints took over 90 s")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_huge_declared_hidden_size_is_refused_at_once_without_allocating(tmp_path):
    data = _valid(tmp_path / "ok.pt")
    # over the cap, and under it but not the weights' size (a 4096-wide network would take
    # seconds and hundreds of MB to build): both refused before anything is built
    for name, hidden in (("huge.pt", 2**13), ("wide.pt", 4096)):
        declared = {**data["architecture"], "hidden": hidden}
        torch.save({**data, "architecture": declared}, tmp_path / name)
    assert (tmp_path / "huge.pt").stat().st_size < 200_000
    ok, huge, wide = _load_in_child(tmp_path / "ok.pt", tmp_path / "huge.pt", tmp_path / "wide.pt")
    assert ok["error"] is None
    for row in (huge, wide):
        assert row["seconds"] < 2.0 and row["grown_mb"] < 300, row
    assert (
        "huge.pt: a damaged checkpoint (architecture: hidden is 8192, outside [1, 4096])"
        in huge["error"]
    )
    assert "wide.pt: a damaged checkpoint (weights" in wide["error"]


def test_a_huge_number_of_gnn_rounds_is_refused_at_once(tmp_path):
    data = _valid(tmp_path / "ok.pt", observation="graph")
    for name, rounds in (("rounds.pt", 10**5), ("many.pt", 64)):
        declared = {**data["architecture"], "rounds": rounds}
        torch.save({**data, "architecture": declared}, tmp_path / name)
    ok, huge, many = _load_in_child(
        tmp_path / "ok.pt", tmp_path / "rounds.pt", tmp_path / "many.pt"
    )
    assert ok["error"] is None
    for row in (huge, many):
        assert row["seconds"] < 2.0 and row["grown_mb"] < 300, row
    assert (
        "rounds.pt: a damaged checkpoint (architecture: rounds is 100000, outside [0, 64])"
        in huge["error"]
    )
    assert "many.pt: a damaged checkpoint (no weights messages.2." in many["error"]


def test_grid_vec_eval_refuses_another_tasks_checkpoint_named_as_this_task_in_one_line(tmp_path):
    data = _valid(tmp_path / "case118.pt", task=OTHER_TASK)
    torch.save({**data, "task": TASK}, tmp_path / "case118.pt")  # relabelled: sizes are 118's
    argv = ["eval", TASK, "--agent", str(tmp_path / "case118.pt"), "--scenarios", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "grid_vec.cli", *argv, "--num-envs", "1", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert f"--agent {tmp_path / 'case118.pt'}: a network of 3767 observation entries" in (
        done.stderr
    )
    assert done.stdout == ""  # nothing scored


class _Played(Exception):
    """evaluate_task was reached: every check before the first step passed."""


@pytest.mark.parametrize(
    ("sizes", "wrong"),
    [
        ({"env_kwargs": {"action_subset": None}}, "a policy over 126 actions, the env has 31"),
        ({"n_actions_of": 36}, "a policy over 36 actions, the env has 31"),
        ({"n_obs_of": 400}, "a network of 400 observation entries, the env gives 410"),
        ({"box": True}, "a policy over a Box of 3 dimensions, the env has Discrete(31)"),
    ],
)
def test_a_checkpoint_of_other_spaces_is_refused_before_the_first_step(
    tmp_path, capsys, monkeypatch, sizes, wrong
):
    path = tmp_path / "shape.pt"
    if "env_kwargs" in sizes:  # trained on Case14's full catalogue (126 actions)
        _valid(path, **sizes)
    else:
        n_actions, n_obs = sizes.get("n_actions_of", 31), sizes.get("n_obs_of", 410)
        bounds = {"action_low": [-1.0] * 3, "action_high": [1.0] * 3} if "box" in sizes else {}
        arch = Architecture("mlp", 3 if bounds else n_actions, 16, n_obs, **bounds)
        norm = ObservationNorm({"flat": n_obs})
        save_checkpoint(path, build_network(arch), arch, norm, task=TASK, observation="flat")

    def played(*args: Any, **kwargs: Any) -> None:
        raise _Played

    monkeypatch.setattr(evaluate, "evaluate_task", played)
    assert main(["eval", TASK, "--agent", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--agent {path}: {wrong}" in err
    if "env_kwargs" in sizes:  # against the env it will play: the full catalogue fits
        with pytest.raises(_Played):
            main(["eval", TASK, "--agent", str(path), "--full-catalog", "--no-progress"])
    # the library's path: the Runner binds the policy, which refuses before the first step
    monkeypatch.undo()
    with pytest.raises(CheckpointError, match=rf"shape\.pt: {re.escape(wrong)}"):
        evaluate_task(TASK, load_policy(path).policy, scenarios=1, num_envs=1)


def _tamper_norm(data: dict, damage: str) -> None:
    mean, var = data["norm"]["mean"]["flat"], data["norm"]["var"]["flat"]
    if damage == "nan mean":
        mean[3] = float("nan")
    elif damage == "infinite mean":
        mean[0] = float("inf")
    elif damage == "negative variance":
        var[5] = -1.0
    elif damage == "zero variance":
        var[5] = 0.0
    elif damage == "nan variance":
        var[5] = float("nan")
    elif damage == "negative count":
        data["norm"]["count"] = -3.0
    elif damage == "nan count":
        data["norm"]["count"] = float("nan")
    elif damage == "short mean":
        data["norm"]["mean"]["flat"] = mean[:-1]
    elif damage == "no variance":
        del data["norm"]["var"]["flat"]
    elif damage == "extra key":
        data["norm"]["mean"]["nodes"] = torch.zeros(10)


@pytest.mark.parametrize(
    "damage",
    [
        "nan mean",
        "infinite mean",
        "negative variance",
        "zero variance",
        "nan variance",
        "negative count",
        "nan count",
        "short mean",
        "no variance",
        "extra key",
    ],
)
def test_damaged_observation_statistics_are_refused(tmp_path, damage):
    path = tmp_path / "norm.pt"
    data = _valid(path)
    _tamper_norm(data, damage)
    torch.save(data, path)
    with pytest.raises(CheckpointError, match=r"norm\.pt: a damaged checkpoint \(observation "):
        load_policy(path)


def _tamper_weights(data: dict, damage: str) -> str:
    """Damage the weights; return the key the refusal must name."""
    weights = data["network"]
    if damage == "narrower":  # the weights of a 16-wide network under a declared 32
        weights["actor.0.weight"] = weights["actor.0.weight"][:16].clone()
        return r"actor\.0\.weight of shape \(16, 410\), the architecture's are \(32, 410\)"
    if damage == "transposed":
        weights["critic.4.weight"] = weights["critic.4.weight"].T.clone()
        return r"critic\.4\.weight of shape \(32, 1\), the architecture's are \(1, 32\)"
    if damage == "extra":
        weights["actor.9.weight"] = torch.zeros(2, 2)
        return r"weights the architecture has not: \['actor\.9\.weight'\]"
    if damage == "nan":
        weights["critic.0.bias"][2] = float("nan")
        return r"weights critic\.0\.bias are not finite"
    if damage == "zero strides":  # the right shape over a single stored number
        weights["actor.0.weight"] = torch.zeros(1).expand(32, 410)
        return r"weights actor\.0\.weight are not a dense floating tensor"
    if damage == "integers":
        weights["actor.0.bias"] = torch.zeros(32, dtype=torch.int64)
        return r"weights actor\.0\.bias are not a dense floating tensor"
    raise AssertionError(damage)


@pytest.mark.parametrize(
    "damage", ["narrower", "transposed", "extra", "nan", "zero strides", "integers"]
)
def test_weights_unlike_the_declared_architecture_are_refused_naming_the_tensor(tmp_path, damage):
    path = tmp_path / "weights.pt"
    data = _valid(path)
    named = _tamper_weights(data, damage)
    torch.save(data, path)
    with pytest.raises(CheckpointError, match=rf"weights\.pt: a damaged checkpoint \(.*{named}"):
        load_policy(path)


def test_a_gnn_checkpoint_missing_a_rounds_weights_is_refused_naming_them(tmp_path):
    path = tmp_path / "gnn.pt"
    data = _valid(path, observation="graph")
    for key in [k for k in data["network"] if k.startswith("updates.1.")]:
        del data["network"][key]
    torch.save(data, path)
    with pytest.raises(CheckpointError, match=r"gnn\.pt: .*\(no weights updates\.1\.0\.weight"):
        load_policy(path)


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("hidden", 32.0, "hidden is 32.0"),
        ("n_actions", True, "n_actions is True"),
        ("kind", "transformer", "kind is 'transformer'"),
        ("noop_bias", float("nan"), "noop_bias and log_std_init must be finite"),
        ("n_obs", -1, r"n_obs is -1, outside \[0, 1048576\]"),
        ("layers", 3, r"unknown fields \['layers'\]"),
    ],
)
def test_an_architecture_of_wrong_types_ranges_or_fields_is_refused(tmp_path, field, value, named):
    path = tmp_path / "arch.pt"
    data = _valid(path)
    data["architecture"][field] = value
    torch.save(data, path)
    with pytest.raises(
        CheckpointError, match=rf"arch\.pt: a damaged checkpoint \(architecture: {named}"
    ):
        load_policy(path)


def test_a_checkpoint_whose_observation_form_is_not_its_networks_is_refused(tmp_path):
    path = tmp_path / "form.pt"
    data = _valid(path)
    torch.save({**data, "observation": "graph"}, path)
    with pytest.raises(CheckpointError, match=r"form\.pt: .*observation 'graph' for a mlp"):
        load_policy(path)


def test_a_sound_checkpoint_still_reads_back_into_the_same_actions(tmp_path):
    path = tmp_path / "ok.pt"
    data = _valid(path)
    loaded = load_policy(path)
    obs = np.stack([grid_vec.make(TASK).reset(seed=s)[0] for s in range(2)])
    network = build_network(loaded.architecture)
    network.load_state_dict(data["network"])
    norm = ObservationNorm.from_state(data["norm"])
    with torch.no_grad():
        expected = network.logits(norm(obs)).argmax(-1).numpy()
    np.testing.assert_array_equal(loaded.policy(obs), expected)

"""The hybrid policy over a combined ``Dict(topology=Discrete, continuous=Box)`` action space
(:mod:`grid_vec.integrations.action_heads`): its distribution against torch's, a checkpoint
read back, the simulate-based checks around it, and behaviour cloning of the expert's
recorded decisions in the PPO example."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the sb3 extra (torch)")

import grid_vec  # noqa: E402
from grid_vec.cli import main  # noqa: E402
from grid_vec.integrations.action_heads import (  # noqa: E402
    HybridDistribution,
    head_of,
    policy_distribution,
)
from grid_vec.integrations.checkpoint import load_policy, save_checkpoint  # noqa: E402
from grid_vec.integrations.observation_norm import ObservationNorm  # noqa: E402
from grid_vec.integrations.torch_policy import Architecture, TorchPolicy, build_network  # noqa: E402
from grid_vec.runner.imitation import load_pairs  # noqa: E402

TASK = "grid_vec/Case14Combined-v0"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ppo_task.py"


def _hybrid(seed: int = 0, act: bool = True):
    """A hybrid network of the task's sizes, random weights, statistics from a few
    observations; with ``act`` its topology head no longer biased to do-nothing."""
    torch.manual_seed(seed)
    env = grid_vec.make(TASK)
    arch = Architecture.for_space(
        "mlp", env.action_space, hidden=32, n_obs=env.observation_space.shape[0], noop_bias=3.0
    )
    network = build_network(arch)
    if act:
        with torch.no_grad():
            network.actor[-1].bias[0] -= 100.0
            network.actor[-1].bias[arch.n_discrete :] += 0.05  # a redispatch in every action
    norm = ObservationNorm.for_space(env.observation_space)
    obs = np.stack([env.reset(seed=s)[0] for s in range(4)])
    norm(obs)
    return env, network, arch, norm, obs


def test_the_hybrid_distribution_is_the_sum_of_torch_s_categorical_and_normals():
    torch.manual_seed(0)
    k, n, d = 6, 5, 3
    logits, mean, log_std = torch.randn(k, n), torch.randn(k, d), torch.randn(d)
    mask = torch.rand(k, n) > 0.4
    mask[:, 0] = True
    dist = HybridDistribution(logits.masked_fill(~mask, -1e8), mean, log_std)
    action = dist.sample()
    assert action.shape == (k, 1 + d)
    index = action[:, 0].long()
    assert mask[torch.arange(k), index].all()  # a masked topology action is never drawn
    categorical = torch.distributions.Categorical(logits=logits.masked_fill(~mask, -torch.inf))
    normal = torch.distributions.Independent(
        torch.distributions.Normal(mean, log_std.exp().expand(k, d)), 1
    )
    expected = categorical.log_prob(index) + normal.log_prob(action[:, 1:])
    torch.testing.assert_close(dist.log_prob(action), expected)
    torch.testing.assert_close(dist.entropy(), categorical.entropy() + normal.entropy())
    # a gradient reaches both parts
    logits.requires_grad_(True)
    mean.requires_grad_(True)
    HybridDistribution(logits, mean, log_std).log_prob(action).sum().backward()
    assert logits.grad.abs().sum() > 0 and mean.grad.abs().sum() > 0


def test_the_network_s_distribution_over_a_combined_space_masks_its_topology_part():
    env, network, arch, norm, obs = _hybrid()
    x = norm(obs)
    mask = torch.zeros(len(obs), arch.n_discrete, dtype=torch.bool)
    mask[:, 2] = True
    dist = policy_distribution(network, x, mask)
    assert isinstance(dist, HybridDistribution)
    assert (dist.sample()[:, 0] == 2).all()
    actions = arch.env_actions(dist.sample())
    assert set(actions) == {"topology", "continuous"}
    assert env.action_space.contains({k: v[0] for k, v in actions.items()})


def test_a_hybrid_checkpoint_read_back_gives_the_same_actions(tmp_path):
    _, network, arch, norm, obs = _hybrid()
    path = save_checkpoint(tmp_path / "ppo.pt", network, arch, norm, task=TASK, observation="flat")
    assert torch.load(path, weights_only=True)["architecture"]["head"] == "hybrid"
    loaded = load_policy(path)
    assert loaded.architecture == arch
    expected = TorchPolicy(network, norm)(obs)
    got = loaded.policy(obs)
    assert got.keys() == expected.keys() == {"topology", "continuous"}
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])
    assert (got["topology"] != 0).any() and (got["continuous"] != 0).any()


def test_the_deadband_plays_no_redispatch_for_the_small_values_and_is_saved(tmp_path):
    """Inside the deadband a continuous value plays the env's 0 (a redispatch stays in the
    target dispatch: small values would add up); outside it, the value mapped as ever."""
    _, network, arch, norm, _ = _hybrid()
    banded = dataclasses.replace(arch, deadband=0.25)
    u = torch.tensor([[0.0, 0.2, -0.24, 0.3, -1.5] + [0.0] * (arch.n_actions - 4)])
    actions = banded.env_actions(u)
    half = np.array(arch.action_high[:4])
    np.testing.assert_allclose(actions["continuous"][0, :4], [0.0, 0.0, 0.3 * half[2], -half[3]])
    assert actions["topology"][0] == 0
    unbanded = arch.env_actions(u)["continuous"][0, :2]
    np.testing.assert_allclose(unbanded, [0.2 * half[0], -0.24 * half[1]], rtol=1e-6)
    path = save_checkpoint(
        tmp_path / "ppo.pt", network, banded, norm, task=TASK, observation="flat"
    )
    assert load_policy(path).architecture.deadband == 0.25
    with pytest.raises(ValueError, match="deadband"):
        dataclasses.replace(arch, deadband=1.0)


def test_a_hybrid_checkpoint_is_refused_by_a_task_of_another_action_space(tmp_path):
    _, network, arch, norm, _ = _hybrid()
    path = save_checkpoint(tmp_path / "ppo.pt", network, arch, norm, task=TASK, observation="flat")
    policy = load_policy(path).policy
    topology = grid_vec.make("grid_vec/Case14Topology-v0")
    with pytest.raises(ValueError, match="combined"):
        policy.check_spaces(topology.observation_space, topology.action_space)


def test_never_worse_around_a_hybrid_policy_plays_nothing_simulated_worse_than_do_nothing():
    _, network, _, norm, _ = _hybrid()
    env = grid_vec.make_vec(
        TASK, 4, vectorization="batched", heuristics=None, autoreset_mode="SameStep"
    )
    policy = TorchPolicy(network, norm, check_top=2, never_worse=True)
    policy.bind(env)
    obs, _ = env.reset(seed=0)
    nothing = {
        "topology": np.zeros((4, 1), np.int64),
        "continuous": np.zeros((4, 1, env.single_action_space["continuous"].shape[0]), np.float32),
    }
    for _ in range(6):
        played = policy(obs)
        pair = {key: np.concatenate([played[key][:, None], nothing[key]], 1) for key in played}
        found = env.simulate_candidates(pair)
        rho = np.where(found.terminated | found.illegal, np.inf, found.max_rho)
        assert (rho[:, 0] <= rho[:, 1]).all()
        obs, *_ = env.step(played)
    env.close()


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory) -> Path:
    """The expert's decisions on a few training episodes of the combined case14 task."""
    run = tmp_path_factory.mktemp("expert") / "run"
    argv = ["run", "--env", TASK, "--agent", "expert", "--episodes", "4", "--num-envs", "2"]
    assert main([*argv, "--max-iter", "600", "--no-progress", "--save", str(run)]) == 0
    return run


def _example():
    spec = importlib.util.spec_from_file_location("ppo_task_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cloning_moves_the_hybrid_policy_toward_the_expert_s_actions(expert_run, capsys):
    env, network, arch, norm, _ = _hybrid(act=False)
    pairs = load_pairs(expert_run, env.action_space)
    head = head_of(arch)
    acting = head.acting(pairs.actions)
    assert acting.any()
    targets = head.network_actions(pairs.actions, arch)

    def distance() -> tuple[float, float]:
        """The weighted cloning loss and the agreement on the acting decisions."""
        x = ObservationNorm.from_state(norm.state())(pairs.observations).float()
        with torch.no_grad():
            out = network.logits(x)
            loss = head.clone_loss(out, targets, arch)[acting].mean()
            return float(loss), float(head.agrees(out, targets, arch)[acting].float().mean())

    args = argparse.Namespace(bc_from=str(expert_run), bc_epochs=30, seed=0, task=TASK)
    before = distance()
    _example().clone(network, norm, arch, env.action_space, args)
    after = distance()
    assert after[0] < 0.5 * before[0], (before, after)
    assert after[1] > before[1], (before, after)
    assert capsys.readouterr().out.startswith(f"cloned {len(pairs)} decisions of {expert_run} (")


def run_example(out: Path, *args: str) -> subprocess.CompletedProcess:
    tiny = ["--num-envs", "4", "--pool", "2", "--num-steps", "4", "--eval-split", "validation"]
    return subprocess.run(
        [sys.executable, str(EXAMPLE), "--task", TASK, *tiny, "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_example_refuses_a_run_of_another_action_space_in_one_line(tmp_path, expert_run):
    task = ["--task", "grid_vec/Case14Topology-v0", "--minutes", "0"]
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *task, "--bc-from", str(expert_run), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("--bc-from: ") and "recorded with action space Dict(" in line


def test_the_example_refuses_a_run_without_a_decision_in_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_example(tmp_path / "bc", "--bc-from", str(empty), "--minutes", "0")
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("--bc-from: ") and "empty" in line


@pytest.mark.slow
def test_the_example_clones_then_trains_a_hybrid_policy_scored_by_grid_vec_eval(
    tmp_path, expert_run, capsys
):
    """``--bc-from`` then PPO over the combined space, end to end: the checkpoint records
    the hybrid head and ``grid-vec eval`` scores it, with and without the checks."""
    done = run_example(tmp_path / "bc", "--bc-from", str(expert_run), "--decisions", "64")
    assert done.returncode == 0, done.stderr[-2000:]
    assert any(line.startswith("cloned ") for line in done.stdout.splitlines())
    path = tmp_path / "bc" / "ppo.pt"
    assert load_policy(path).architecture.head == "hybrid"
    argv = ["eval", TASK, "--agent", str(path), "--scenarios", "2", "--num-envs", "2"]
    assert main([*argv, "--no-progress", "--split", "validation"]) == 0
    assert main([*argv, "--no-progress", "--split", "validation", "--check-top", "2"]) == 0
    assert main([*argv, "--no-progress", "--split", "validation", "--never-worse"]) == 0
    assert capsys.readouterr().out.count(f"| validation | {path} | 2 |") == 3


def test_a_moves_policy_reads_the_expert_s_actions_back_exactly(expert_run, tmp_path):
    """The ``moves`` head plays the expert's own candidates: every recorded action is one
    index of its categorical, mapped back onto the same env action; its checkpoint reads
    back to the same actions."""
    env = grid_vec.make(TASK)
    arch = Architecture.for_space("mlp", env.action_space, head="moves", n_obs=4, hidden=8)
    head = head_of(arch)
    d = arch.n_actions
    assert head.outputs(arch) == arch.n_discrete + 4 * d  # 2 fractions x 2 signs
    pairs = load_pairs(expert_run, env.action_space)
    index = head.network_actions(pairs.actions, arch)
    back = arch.env_actions(index)
    np.testing.assert_array_equal(back["topology"], pairs.actions["topology"])
    np.testing.assert_array_equal(back["continuous"], pairs.actions["continuous"])
    moves = arch.env_actions(torch.arange(arch.n_discrete, head.outputs(arch)))
    assert (moves["topology"] == 0).all() and ((moves["continuous"] != 0).sum(1) == 1).all()
    mask = arch.action_masks({"action_mask": np.zeros((1, arch.n_discrete), bool)}, 1)
    assert mask.shape == (1, head.outputs(arch)) and mask[0, arch.n_discrete :].all()
    network = build_network(arch)
    norm = ObservationNorm({"flat": 4})
    path = save_checkpoint(tmp_path / "ppo.pt", network, arch, norm, task=TASK, observation="flat")
    loaded = load_policy(path)
    assert loaded.architecture == arch
    obs = np.random.default_rng(0).normal(size=(3, 4))
    for key, value in TorchPolicy(network, norm)(obs).items():
        np.testing.assert_array_equal(loaded.policy(obs)[key], value)

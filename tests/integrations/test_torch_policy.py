"""The task networks (MLP, GNN), their checkpoints read without unpickling, and ``grid-vec eval
TASK --agent FILE`` scoring a checkpoint."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the sb3 extra (torch)")

import torch

import grid_vec
from grid_vec.cli import main
from grid_vec.env.graph import EDGE_FEATURES
from grid_vec.integrations.checkpoint import load_policy, save_checkpoint
from grid_vec.integrations.torch_policy import (
    Architecture,
    CheckpointError,
    ObservationNorm,
    TorchPolicy,
    build_network,
    policy_distribution,
)
from grid_vec.runner.evaluate import evaluate_task

TASK = "grid_vec/Case14Topology-v0"


def _trained_like(observation: str, *, seed: int = 0):
    """A network of the task's sizes with random weights and statistics from a few
    observations (what a training run saves, minus the training)."""
    torch.manual_seed(seed)
    env = grid_vec.make(TASK, observation=observation)
    n_actions = env.action_space.n
    n_obs = 0 if observation == "graph" else env.observation_space.shape[0]
    arch = Architecture("gnn" if observation == "graph" else "mlp", n_actions, 32, n_obs, 2, 1.0)
    network = build_network(arch)
    norm = ObservationNorm.for_space(env.observation_space)
    obs = [env.reset(seed=s)[0] for s in range(3)]
    batch = {k: np.stack([o[k] for o in obs]) for k in obs[0]} if observation == "graph" else obs
    norm(batch if observation == "graph" else np.stack(obs))
    return network, arch, norm, batch


@pytest.mark.parametrize("observation", ["flat", "graph"])
def test_a_checkpoint_read_back_gives_the_same_actions(tmp_path, observation):
    network, arch, norm, batch = _trained_like(observation)
    path = save_checkpoint(
        tmp_path / "ppo.pt", network, arch, norm, task=TASK, observation=observation
    )
    loaded = load_policy(path)
    assert (loaded.task, loaded.observation, loaded.architecture) == (TASK, observation, arch)
    obs = batch if observation == "graph" else np.stack(batch)
    expected = TorchPolicy(network, norm)(obs)
    np.testing.assert_array_equal(loaded.policy(obs), expected)


def test_the_policy_takes_the_best_legal_action_of_the_masks():
    network, _, norm, batch = _trained_like("flat")
    policy = TorchPolicy(network, norm)
    obs = np.stack(batch)
    first = policy(obs)
    mask = np.ones((len(obs), network.actor[-1].out_features), dtype=bool)
    mask[np.arange(len(obs)), first] = False
    second = policy(obs, {"action_mask": mask, "_action_mask": np.ones(len(obs), bool)})
    assert (second != first).all()
    assert mask[np.arange(len(obs)), second].all()


@pytest.mark.parametrize("observation", ["flat", "graph"])
def test_one_pass_gives_the_logits_and_values_of_the_actor_and_critic_apart(observation):
    """PPO's rollouts and updates take both from ``logits_and_value`` (a GNN embeds the
    graphs once for both): the same values as the actor and the critic asked apart, and the
    same gradients."""
    network, _, norm, batch = _trained_like(observation)
    norm.frozen = True
    x = norm(batch if observation == "graph" else np.stack(batch))
    logits, value = network.logits_and_value(x)
    torch.testing.assert_close(logits, network.logits(x), rtol=0, atol=0)
    torch.testing.assert_close(value, network.value(x), rtol=0, atol=0)
    assert value.shape == (len(logits),)
    (logits.sum() + value.sum()).backward()
    together = [p.grad.clone() for p in network.parameters() if p.grad is not None]
    network.zero_grad()
    (network.logits(x).sum() + network.value(x).sum()).backward()
    apart = [p.grad for p in network.parameters() if p.grad is not None]
    assert len(together) == len(apart) > 0
    for a, b in zip(together, apart, strict=True):
        torch.testing.assert_close(a, b)


def test_a_disconnected_branch_sends_no_message_in_the_gnn():
    network, _, norm, batch = _trained_like("graph")
    norm.frozen = True
    one = {k: v[:1].copy() for k, v in batch.items()}
    status = EDGE_FEATURES.index("line_status")
    one["edges"][0, 4, status] = 0.0
    before = network.embed(norm(one))
    one["edges"][0, 4, :status] += 50.0  # the flows of a branch that carries none
    one["edges"][0, 4, status + 1 :] += 3.0
    after = network.embed(norm(one))
    torch.testing.assert_close(before, after)
    one["edges"][0, 4, status] = 1.0  # connected again: its values count
    assert not torch.allclose(network.embed(norm(one)), after)


def test_a_checkpoint_holding_code_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    path = tmp_path / "evil.pt"
    torch.save({"format": "grid_vec.torch_policy/1", "x": Payload()}, path)
    with pytest.raises(CheckpointError, match=r"evil\.pt: not a grid_vec checkpoint"):
        load_policy(path)
    assert not marker.exists()
    raw = tmp_path / "raw.pt"
    raw.write_bytes(pickle.dumps(Payload()))
    with pytest.raises(CheckpointError, match=r"raw\.pt"):
        load_policy(raw)
    assert not marker.exists()


def test_a_file_that_is_not_a_checkpoint_is_one_error_naming_it(tmp_path):
    torch.save({"weights": torch.zeros(3)}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match=r"other\.pt: not a checkpoint of"):
        load_policy(tmp_path / "other.pt")
    network, arch, norm, _ = _trained_like("flat")
    path = save_checkpoint(tmp_path / "cut.pt", network, arch, norm, task=TASK, observation="flat")
    data = torch.load(path, weights_only=True)
    del data["network"]["actor.0.weight"]
    torch.save(data, path)
    with pytest.raises(CheckpointError, match=r"cut\.pt: a damaged checkpoint"):
        load_policy(path)
    (tmp_path / "text.pt").write_text("hello")
    with pytest.raises(CheckpointError, match=r"text\.pt"):
        load_policy(tmp_path / "text.pt")
    with pytest.raises(CheckpointError, match=r"missing\.pt"):
        load_policy(tmp_path / "missing.pt")


@pytest.mark.parametrize("observation", ["flat", "graph"])
def test_grid_vec_eval_scores_a_checkpoint_as_evaluate_task_does(tmp_path, capsys, observation):
    network, arch, norm, _ = _trained_like(observation)
    path = save_checkpoint(
        tmp_path / "ppo.pt", network, arch, norm, task=TASK, observation=observation
    )
    argv = ["eval", TASK, "--agent", str(path), "--scenarios", "2", "--num-envs", "2"]
    assert main([*argv, "--no-progress", "--json", str(tmp_path / "rows.json")]) == 0
    out = capsys.readouterr().out
    assert f"| {path} |" in out
    direct = evaluate_task(
        TASK,
        TorchPolicy(network, norm),
        scenarios=2,
        num_envs=2,
        env_kwargs={"observation": observation},
    )
    assert f"| {direct.row()['mean_survival']:.1f} |" in out


def test_grid_vec_eval_refuses_a_checkpoint_in_one_line(tmp_path, capsys):
    network, arch, norm, _ = _trained_like("flat")
    other = save_checkpoint(
        tmp_path / "other.pt", network, arch, norm, task="grid_vec/Case118Topology-v0",
        observation="flat",
    )  # fmt: skip
    (tmp_path / "junk.pt").write_bytes(b"\x80\x04junk")
    assert main(["eval", TASK, "--agent", str(other)]) == 2
    assert main(["eval", TASK, "--agent", str(tmp_path / "junk.pt")]) == 2
    assert main(["eval", TASK, "--agent", str(tmp_path / "nothing.pt")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 3
    assert "trained on grid_vec/Case118Topology-v0" in err and "junk.pt" in err
    assert "nothing.pt: no such checkpoint file" in err


REDISPATCH = "grid_vec/Case14Redispatch-v0"


def _box_arch(**extra) -> Architecture:
    return Architecture("mlp", 2, 16, 4, action_low=[-7.0, -5.0], action_high=[7.0, 5.0], **extra)


def test_a_box_policy_maps_unit_actions_onto_the_bounds_and_clips_them():
    arch = _box_arch()
    u = torch.tensor([[0.0, 0.0], [1.0, -1.0], [3.0, 0.5]])
    np.testing.assert_allclose(arch.env_actions(u), [[0, 0], [7, -5], [7, 2.5]])
    assert arch.env_actions(u).dtype == np.float32


def test_a_box_policy_starts_at_the_centre_with_the_spread_asked():
    torch.manual_seed(0)
    network = build_network(_box_arch(log_std_init=-2.0))
    dist = policy_distribution(network, torch.randn(5, 4))
    assert dist.normal.mean.abs().max() < 0.1
    np.testing.assert_allclose(dist.normal.stddev.detach(), np.exp(-2.0), rtol=1e-6)
    u = dist.sample()
    by_hand = torch.distributions.Normal(dist.normal.mean, np.exp(-2.0)).log_prob(u).sum(-1)
    torch.testing.assert_close(dist.log_prob(u), by_hand)
    assert dist.entropy().shape == (5,)


def test_a_box_checkpoint_read_back_is_scored_by_grid_vec_eval_as_evaluate_task_does(
    tmp_path, capsys
):
    torch.manual_seed(0)
    env = grid_vec.make(REDISPATCH)
    arch = Architecture.for_space(
        "mlp", env.action_space, hidden=16, n_obs=env.observation_space.shape[0],
        log_std_init=-1.0,
    )  # fmt: skip
    network = build_network(arch)
    with torch.no_grad():  # a policy that redispatches: its mean far from the centre
        network.actor[-1].bias.copy_(torch.linspace(-0.8, 0.8, arch.n_actions))
    norm = ObservationNorm.for_space(env.observation_space)
    obs = np.stack([env.reset(seed=s)[0] for s in range(3)])
    norm(obs)
    path = save_checkpoint(
        tmp_path / "ppo.pt", network, arch, norm, task=REDISPATCH, observation="flat"
    )
    loaded = load_policy(path)
    assert loaded.architecture == arch and loaded.architecture.continuous
    actions = loaded.policy(obs)
    np.testing.assert_array_equal(actions, TorchPolicy(network, norm)(obs))
    assert env.action_space.contains(actions[0]) and np.abs(actions).max() > 1.0
    argv = ["eval", REDISPATCH, "--agent", str(path), "--scenarios", "2", "--num-envs", "2"]
    assert main([*argv, "--no-progress"]) == 0
    direct = evaluate_task(REDISPATCH, TorchPolicy(network, norm), scenarios=2, num_envs=2)
    assert f"| {direct.row()['mean_survival']:.1f} |" in capsys.readouterr().out
    nothing = evaluate_task(REDISPATCH, "do_nothing", scenarios=2)
    assert direct.row()["cost_per_step_mwh"] > nothing.row()["cost_per_step_mwh"]


def test_the_simulate_check_is_refused_for_a_box_policy():
    network = build_network(_box_arch())
    with pytest.raises(ValueError, match="not a Box policy"):
        TorchPolicy(network, ObservationNorm({"flat": 4}), check_top=3)


def test_a_policy_is_refused_for_an_action_space_no_head_plays():
    from gymnasium import spaces

    assert Architecture.for_space("mlp", spaces.Discrete(4), n_obs=3).n_actions == 4
    box = Architecture.for_space("mlp", spaces.Box(-2.0, 2.0, (3,)), n_obs=3)
    assert box.continuous and box.action_high == (2.0, 2.0, 2.0) and box.head == "gaussian"
    combined = spaces.Dict(topology=spaces.Discrete(5), continuous=spaces.Box(-1.0, 1.0, (2,)))
    hybrid = Architecture.for_space("mlp", combined, n_obs=3)
    assert (hybrid.head, hybrid.n_discrete, hybrid.n_actions) == ("hybrid", 5, 2)
    refused = [
        spaces.MultiDiscrete([3, 3]),
        spaces.Box(-1.0, 1.0, (2, 2)),
        spaces.Dict(topology=spaces.Discrete(5), other=spaces.Box(-1.0, 1.0, (2,))),
    ]
    for space in refused:
        with pytest.raises(ValueError, match="Discrete, a 1-d Box or a Dict"):
            Architecture.for_space("mlp", space, n_obs=3)


@pytest.mark.parametrize("check_top", [1, 3])
def test_never_worse_plays_no_action_simulated_worse_than_doing_nothing(check_top):
    """With ``never_worse`` the policy's choice is checked against do-nothing in the same
    simulation: what it plays is simulated no worse than do-nothing (max rho, a game over
    worst), and with ``check_top`` 1 it is the policy's own first choice whenever that one is
    no worse."""
    network, _, norm, _ = _trained_like("flat")
    with torch.no_grad():  # random weights that act (the head starts biased to do-nothing)
        network.actor[-1].bias[0] -= 100.0
    env = grid_vec.make_vec(
        TASK, 8, vectorization="batched", heuristics=None, autoreset_mode="SameStep"
    )  # an episode that ends is reset at once: every state can be simulated
    policy = TorchPolicy(network, norm, check_top=check_top, never_worse=True)
    policy.bind(env)
    alone = TorchPolicy(network, norm)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    overruled = kept = 0
    for _ in range(12):
        played, first = policy(obs), alone(obs)
        found = env.simulate_candidates(np.stack([played, first, np.zeros(8, np.int64)], axis=1))
        rho = np.where(found.terminated | found.illegal, np.inf, found.max_rho)
        assert (rho[:, 0] <= rho[:, 2]).all()  # never simulated worse than do-nothing
        if check_top == 1:
            no_worse = rho[:, 1] <= rho[:, 2]
            np.testing.assert_array_equal(played, np.where(no_worse, first, 0))
            overruled += int((~no_worse).sum())
            kept += int((no_worse & (first != 0)).sum())
        obs, *_ = env.step(rng.integers(0, env.single_action_space.n, 8))
    if check_top == 1:  # the random weights both act and get overruled in these states
        assert overruled and kept, (overruled, kept)
    env.close()


def test_never_worse_is_refused_for_a_box_policy():
    network = build_network(_box_arch())
    with pytest.raises(ValueError, match="not a Box policy"):
        TorchPolicy(network, ObservationNorm({"flat": 4}), never_worse=True)


def test_grid_vec_eval_checks_a_checkpoint_as_the_checked_policy_scores(tmp_path, capsys):
    """``--check-top`` and ``--never-worse`` score the checkpoint's policy with the checks
    around it (as ``TorchPolicy(check_top=..., never_worse=...)`` scores through
    evaluate_task); a Box policy refuses them in one line."""
    network, arch, norm, _ = _trained_like("flat")
    with torch.no_grad():  # random weights that act (the head starts biased to do-nothing)
        network.actor[-1].bias[0] -= 100.0
    path = save_checkpoint(tmp_path / "ppo.pt", network, arch, norm, task=TASK, observation="flat")
    argv = ["eval", TASK, "--agent", str(path), "--scenarios", "2", "--num-envs", "2"]
    assert main([*argv, "--no-progress", "--check-top", "2", "--never-worse"]) == 0
    out = capsys.readouterr().out
    checked = TorchPolicy(network, norm, check_top=2, never_worse=True)
    direct = evaluate_task(TASK, checked, scenarios=2, num_envs=2)
    alone = evaluate_task(TASK, TorchPolicy(network, norm), scenarios=2, num_envs=2)
    assert f"| {direct.row()['mean_survival']:.1f} |" in out
    assert direct.row()["mean_survival"] != alone.row()["mean_survival"]  # the checks acted

    env = grid_vec.make(REDISPATCH)
    box_arch = Architecture.for_space(
        "mlp", env.action_space, hidden=16, n_obs=env.observation_space.shape[0]
    )
    box_norm = ObservationNorm.for_space(env.observation_space)
    box_norm(np.stack([env.reset(seed=s)[0] for s in range(2)]))
    box_path = save_checkpoint(
        tmp_path / "box.pt", build_network(box_arch), box_arch, box_norm, task=REDISPATCH,
        observation="flat",
    )  # fmt: skip
    assert main(["eval", REDISPATCH, "--agent", str(box_path), "--never-worse"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--never-worse" in err and "Traceback" not in err

"""``grid-vec eval TASK --agent model.zip``: an SB3 model as examples/sb3_task.py saves it, loaded
only when the user vouches for the file (SB3's loader unpickles)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="needs the sb3 extra")

from gymnasium.vector import AutoresetMode
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecNormalize

import grid_vec
from grid_vec.cli import main
from grid_vec.integrations.sb3 import GymnasiumToSB3VecEnv
from grid_vec.integrations.sb3_policy import Sb3Policy
from grid_vec.integrations.torch_policy import CheckpointError
from grid_vec.runner.evaluate import evaluate_task

TASK = "grid_vec/Case14Topology-v0"


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    """A model trained for a few steps and saved as the SB3 example saves it."""
    out = tmp_path_factory.mktemp("sb3")
    envs = grid_vec.make_vec(
        TASK, 2, vectorization="batched", autoreset_mode=AutoresetMode.SAME_STEP
    )
    venv = VecNormalize(GymnasiumToSB3VecEnv(envs))
    model = PPO("MlpPolicy", venv, n_steps=8, batch_size=16, seed=0, device="cpu")
    model.learn(16)
    venv.training = False
    model.save(out / "model.zip")
    venv.save(str(out / "vecnormalize.pkl"))
    policy = Sb3Policy(model, venv)
    yield out / "model.zip", policy
    venv.close()


def test_an_sb3_model_is_scored_as_the_example_scores_it_when_trusted(saved_model, capsys):
    path, policy = saved_model
    argv = ["eval", TASK, "--agent", str(path), "--scenarios", "2", "--num-envs", "2"]
    assert main([*argv, "--trust-pickle", "--no-progress"]) == 0
    out = capsys.readouterr().out
    direct = evaluate_task(TASK, policy, scenarios=2, num_envs=2)
    assert f"| {path} |" in out
    assert f"| {direct.row()['mean_survival']:.1f} |" in out


def test_an_sb3_model_is_not_loaded_without_trust(saved_model, capsys):
    path, _ = saved_model
    assert main(["eval", TASK, "--agent", str(path), "--scenarios", "1"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert "--trust-pickle" in err and str(path) in err


def test_an_sb3_model_of_other_observations_is_refused(saved_model, tmp_path):
    from grid_vec.integrations.sb3_policy import load_sb3_policy

    path, _ = saved_model
    space = grid_vec.make("case118").observation_space
    with pytest.raises(CheckpointError, match="trained on observations of shape"):
        load_sb3_policy(path, trust_pickle=True, observation_space=space)
    (tmp_path / "model.zip").write_bytes(b"PK not a zip")
    with pytest.raises(CheckpointError, match="SB3 cannot load it"):
        load_sb3_policy(tmp_path / "model.zip", trust_pickle=True)
    policy = load_sb3_policy(path, trust_pickle=True)
    obs = np.stack([grid_vec.make(TASK).reset(seed=s)[0] for s in range(2)])
    assert policy(obs).shape == (2,)


def test_an_sb3_model_of_other_actions_is_refused_before_the_first_step(saved_model, capsys):
    """The model plays the task's 31 reduced actions; with --full-catalog the env has 126."""
    path, _ = saved_model
    argv = ["eval", TASK, "--agent", str(path), "--scenarios", "1", "--full-catalog"]
    assert main([*argv, "--trust-pickle", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert str(path) in err and "trained on actions Discrete(31)" in err
    assert "Discrete(126)" in err

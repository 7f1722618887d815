"""A Stable-Baselines3 model saved by ``examples/sb3_task.py`` as an agent of the Runner (the
``sb3`` extra).

SB3's own loader (``PPO.load``) unpickles parts of a ``model.zip`` (the spaces, the schedules)
and its observation statistics are a pickle (``vecnormalize.pkl``): loading either can run code
the file names. So :func:`load_sb3_policy` loads them only when told the file is trusted
(``trust_pickle=True``; ``grid-vec eval --trust-pickle``), and says so otherwise. The PPO
example's checkpoints need no such trust (:mod:`grid_vec.integrations.checkpoint`).
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec.integrations.checkpoint import MAX_CHECKPOINT_BYTES
from grid_vec.integrations.torch_policy import CheckpointError

NORMALIZATION_FILE = "vecnormalize.pkl"  # beside model.zip, as examples/sb3_task.py writes it


class Sb3Policy:
    """A trained SB3 model as a batched agent of the Runner: its deterministic action on the
    observations normalised as in training.

    Args:
        model: the SB3 model (``PPO``, ...).
        normalize: the ``VecNormalize`` whose statistics normalise the observations (None:
            none).
    """

    def __init__(self, model: Any, normalize: Any = None) -> None:
        self.model, self.normalize = model, normalize

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        if self.normalize is not None:
            obs = self.normalize.normalize_obs(obs)
        actions, _ = self.model.predict(obs, deterministic=True)
        return np.asarray(actions, dtype=self.model.action_space.dtype)


def load_sb3_policy(
    path: str | os.PathLike,
    *,
    trust_pickle: bool,
    observation_space: Any = None,
    action_space: Any = None,
) -> Sb3Policy:
    """Load an SB3 PPO model (``model.zip``) and the ``vecnormalize.pkl`` beside it.

    Args:
        path: the model's zip file.
        trust_pickle: the caller vouches for the files (SB3's loader and the statistics
            unpickle); False refuses to load them.
        observation_space: the task's; a model of another shape is refused.
        action_space: the task's; a model of other actions (another number of them, another
            kind or shape) is refused before the first step.

    Returns:
        The agent.

    Raises:
        CheckpointError: not trusted, missing, too large, not loadable by SB3, or trained on
            other observations or actions (the message names the file).
    """
    path = Path(path)
    if not trust_pickle:
        raise CheckpointError(
            f"{path}: an SB3 model is read by SB3's loader, which unpickles parts of it (a "
            "file from elsewhere could run code): pass --trust-pickle if you trust it"
        )
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise CheckpointError(f"{path}: {exc.strerror}") from exc
    if size > MAX_CHECKPOINT_BYTES:
        raise CheckpointError(f"{path}: {size} bytes, over the {MAX_CHECKPOINT_BYTES} allowed")
    from stable_baselines3 import PPO

    try:
        model = PPO.load(path, device="cpu")
    except Exception as exc:  # SB3's loader: a damaged zip, another algorithm, ...
        raise CheckpointError(f"{path}: SB3 cannot load it as a PPO model ({exc})") from exc
    shape = getattr(observation_space, "shape", None)
    if shape is not None and model.observation_space.shape != shape:
        raise CheckpointError(
            f"{path}: trained on observations of shape {model.observation_space.shape}, the "
            f"task's are {shape}"
        )
    if action_space is not None and not _same_kind(model.action_space, action_space):
        raise CheckpointError(
            f"{path}: trained on actions {model.action_space}, the task's are {action_space}"
        )
    normalize = None
    stats = path.with_name(NORMALIZATION_FILE)
    if stats.is_file():
        try:
            with stats.open("rb") as f:
                normalize = pickle.load(f)  # trusted: the caller said so
            normalize.training = False
        except Exception as exc:
            raise CheckpointError(f"{stats}: not SB3's VecNormalize statistics ({exc})") from exc
    return Sb3Policy(model, normalize)


def _same_kind(trained: Any, task: Any) -> bool:
    """Whether a model's action space gives actions of the task's: the same type, the same
    number of actions (``Discrete``) or the same shape (others)."""
    if type(trained) is not type(task):
        return False
    if hasattr(task, "n") and not hasattr(task, "nvec"):
        return int(trained.n) == int(task.n) and int(trained.start) == int(task.start)
    return getattr(trained, "shape", None) == getattr(task, "shape", None)

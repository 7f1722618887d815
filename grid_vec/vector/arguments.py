"""Checks of GridVecEnv's arguments: worker sizes, seeds, reset masks, env ids.

Each returns the value to use or raises the error AsyncVectorEnv raises for the same mistake.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np


def usable_cpus() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def envs_per_worker(num_envs: int, value: int | None) -> int:
    """``value`` checked, or by default ``ceil(num_envs / usable cores)``."""
    if value is None:
        return max(1, math.ceil(num_envs / usable_cpus()))
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"envs_per_worker must be a positive integer or None, got {value!r}")
    return int(value)


def batch_size(num_envs: int, value: int | None) -> int:
    """``value`` checked (an int in ``[1, num_envs]``), or ``num_envs`` by default."""
    if value is None:
        return num_envs
    if not isinstance(value, (int, np.integer)) or not 1 <= value <= num_envs:
        raise ValueError(f"batch_size must be an integer in [1, {num_envs}], got {value!r}")
    return int(value)


def seed_list(num_envs: int, seed: Any) -> list[int | None]:
    """One seed (or None) per sub-env, from ``reset``'s ``seed`` argument."""
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return [int(seed) + i for i in range(num_envs)]
    if not isinstance(seed, Sequence) and not isinstance(seed, np.ndarray):
        raise TypeError(f"seed must be an int, a list of ints/None or None, got {seed!r}")
    if len(seed) != num_envs:
        raise ValueError(
            f"If seeds are passed as a list the length must match num_envs={num_envs} "
            f"but got length={len(seed)}."
        )
    return [None if s is None else int(s) for s in seed]


def reset_mask(num_envs: int, mask: Any) -> np.ndarray:
    """``options["reset_mask"]`` checked: a bool array of shape ``(num_envs,)``, not all False."""
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
    if mask.shape != (num_envs,):
        raise ValueError(
            f"`options['reset_mask']` must have shape `({num_envs},)`, got {mask.shape}"
        )
    if mask.dtype != np.bool_:
        raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
    if not np.any(mask):
        raise ValueError(
            "`options['reset_mask']` must contain a boolean array with at least one True "
            f"value, got reset_mask={mask}"
        )
    return mask


def env_ids(num_envs: int, env_ids: Sequence[int] | None) -> list[int]:
    """Distinct sub-env indices as a list; all of them when ``env_ids`` is None."""
    if env_ids is None:
        return list(range(num_envs))
    ids = np.asarray(env_ids)
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
        raise ValueError(f"env_ids must be a non-empty 1-D sequence of ints, got {env_ids!r}")
    if ids.min() < 0 or ids.max() >= num_envs or len(set(ids.tolist())) != ids.size:
        raise ValueError(f"env_ids must be distinct integers in [0, {num_envs}), got {env_ids!r}")
    return ids.tolist()

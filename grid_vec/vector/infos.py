"""Batched info dicts built in the workers, placed into the vector env's infos by the parent.

gymnasium merges sub-env infos one env at a time in the parent (``VectorEnv._add_info``):
with many envs that serial work dominates. A worker instead merges the infos of its own
contiguous slice of envs (the same ``_add_info`` rules, so the result is identical) and the
parent only copies each slice's arrays into place.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector.vector_env import VectorEnv


class BatchedInfo(dict):
    """Infos of a worker's whole slice, already in gymnasium's batched form."""


class _SliceBatch:
    """An object ``VectorEnv._add_info`` can work on, sized to one worker's slice."""

    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def batch_infos(infos: dict[int, dict[str, Any]], num_envs: int) -> BatchedInfo:
    """Merge per-env infos (local index -> info) of a slice of ``num_envs`` envs."""
    batch = _SliceBatch(num_envs)
    merged: dict[str, Any] = {}
    for k in sorted(infos):
        merged = batch._add_info(merged, infos[k], k)
    return BatchedInfo(merged)


def place_infos(
    dst: dict[str, Any], src: dict[str, Any], start: int, num_envs: int
) -> dict[str, Any]:
    """Copy a slice's batched infos ``src`` into ``dst`` (``num_envs`` rows) at ``start``."""
    for key, value in src.items():
        if key.startswith("_") and key[1:] in src:
            continue  # a mask: copied with its key below
        if isinstance(value, dict):
            dst[key] = place_infos(dst.get(key, {}), value, start, num_envs)
        else:
            array = dst.get(key)
            if array is None:
                fill = None if value.dtype == object else 0
                array = np.full((num_envs, *value.shape[1:]), fill, dtype=value.dtype)
            array[start : start + len(value)] = value
            dst[key] = array
        mask = dst.get(f"_{key}")
        if mask is None:
            mask = np.zeros(num_envs, dtype=np.bool_)
        mask[start : start + len(src[f"_{key}"])] = src[f"_{key}"]
        dst[f"_{key}"] = mask
    return dst


def unbatch_info(src: dict[str, Any], index: int) -> dict[str, Any]:
    """The info of row ``index`` of batched infos (entries whose mask is set)."""
    info: dict[str, Any] = {}
    for key, value in src.items():
        if key.startswith("_") and key[1:] in src:
            continue
        if src[f"_{key}"][index]:
            info[key] = unbatch_info(value, index) if isinstance(value, dict) else value[index]
    return info

"""Running statistics of observations for the task networks
(:mod:`grid_vec.integrations.torch_policy`): the normalisation a policy is trained and
evaluated with, saved in its checkpoint and checked when read back.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from grid_vec._untrusted import quote
from grid_vec.env.graph import EDGE_FEATURES

__all__ = ["ObservationNorm"]


class ObservationNorm:
    """Running mean and variance of observations, per feature (Welford, batched).

    A flat observation is normalised per entry; a graph's ``nodes``, ``edges`` and
    ``globals`` per feature (the statistics pooled over the bus bars or the branches), its
    ``edge_index`` kept, and its branches' raw ``line_status`` added under ``status``.

    Args:
        sizes: the feature count of each normalised key (``{"flat": n}`` for flat
            observations).
    """

    def __init__(self, sizes: dict[str, int]) -> None:
        self.mean = {key: np.zeros(n) for key, n in sizes.items()}
        self.var = {key: np.ones(n) for key, n in sizes.items()}
        self.count = 1e-4
        self.frozen = False

    @classmethod
    def for_space(cls, space: Any) -> ObservationNorm:
        """The statistics an observation space needs (a flat ``Box`` or a graph ``Dict``)."""
        if hasattr(space, "spaces"):
            return cls({key: space[key].shape[-1] for key in ("nodes", "edges", "globals")})
        return cls({"flat": int(np.prod(space.shape))})

    def _update(self, key: str, x: np.ndarray, count: float) -> None:
        mean, var, n = x.mean(0), x.var(0), x.shape[0]
        delta, total = mean - self.mean[key], count + n
        self.mean[key] = self.mean[key] + delta * n / total
        m2 = self.var[key] * count + var * n + delta**2 * count * n / total
        self.var[key] = m2 / total

    def _scaled(self, key: str, x: np.ndarray) -> torch.Tensor:
        z = (x - self.mean[key]) / np.sqrt(self.var[key] + 1e-8)
        return torch.as_tensor(np.clip(z, -10, 10).astype(np.float32))

    def __call__(self, obs: Any) -> Any:
        """The normalised tensors of a batch of observations (``(k, ...)``)."""
        if "flat" in self.mean:
            x = np.asarray(obs, dtype=np.float64)
            if not self.frozen:
                self._update("flat", x, self.count)
                self.count += len(x)
            return self._scaled("flat", x)
        arrays = {key: np.asarray(obs[key], dtype=np.float64) for key in self.mean}
        if not self.frozen:
            for key, x in arrays.items():
                self._update(key, x.reshape(-1, x.shape[-1]), self.count * x[0].size / x.shape[-1])
            self.count += len(arrays["globals"])
        out = {key: self._scaled(key, x) for key, x in arrays.items()}
        out["edge_index"] = torch.as_tensor(np.asarray(obs["edge_index"], dtype=np.int64))
        status = np.asarray(obs["edges"])[..., EDGE_FEATURES.index("line_status")]
        out["status"] = torch.as_tensor(status.astype(np.float32))
        return out

    def state(self) -> dict[str, Any]:
        """The statistics as tensors (for a checkpoint)."""
        return {
            "mean": {k: torch.as_tensor(v) for k, v in self.mean.items()},
            "var": {k: torch.as_tensor(v) for k, v in self.var.items()},
            "count": float(self.count),
        }

    @classmethod
    def from_state(cls, state: Any, sizes: dict[str, int] | None = None) -> ObservationNorm:
        """The frozen statistics of :meth:`state`, checked (they may come from a file): the
        keys and sizes expected, finite means, finite positive variances, a finite
        non-negative count.

        Args:
            state: what :meth:`state` gave.
            sizes: the feature count of each key the network takes (None: the state's own).

        Raises:
            ValueError: statistics that are not so (the message says which).
        """
        if not isinstance(state, dict):
            raise ValueError("observation statistics: not a dict")
        means, variances, count = state.get("mean"), state.get("var"), state.get("count")
        if not (isinstance(means, dict) and isinstance(variances, dict)):
            raise ValueError("observation statistics: no means and variances")
        if sizes is None:
            sizes = {k: v.numel() for k, v in means.items() if isinstance(v, torch.Tensor)}
        if set(means) != set(sizes) or set(variances) != set(sizes):
            raise ValueError(
                f"observation statistics of {quote(sorted(map(str, means)))}, the network "
                f"takes {sorted(sizes)}"
            )
        norm = cls({})
        for key, n in sizes.items():
            # shapes first: a tensor may claim more elements than the file holds (zero strides)
            arrays = {}
            for what, table in (("mean", means), ("variance", variances)):
                value = table[key]
                if not (
                    isinstance(value, torch.Tensor)
                    and value.is_floating_point()
                    and tuple(value.shape) == (n,)
                ):
                    raise ValueError(f"observation statistics: the {key} {what} is not {n} floats")
                arrays[what] = value.double().numpy()
            if not np.isfinite(arrays["mean"]).all():
                raise ValueError(f"observation statistics: a {key} mean is not finite")
            var = arrays["variance"]
            # a trained variance starts at 1 and stays > 0 (Welford's update keeps the prior)
            if not (np.isfinite(var) & (var > 0)).all():
                raise ValueError(
                    f"observation statistics: a {key} variance is not finite and positive"
                )
            norm.mean[key], norm.var[key] = arrays["mean"], var
        if isinstance(count, bool) or not isinstance(count, (int, float)):
            raise ValueError("observation statistics: the count is not a number")
        count = float(min(count, math.inf))  # an int too large for a float: inf, refused
        if not (math.isfinite(count) and count >= 0):
            raise ValueError(f"observation statistics: the count is {count}")
        norm.count, norm.frozen = count, True
        return norm

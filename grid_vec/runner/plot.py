"""Plot of a recorded episode: rho per branch and reward over time (matplotlib, optional).

What a reader of the plot asks first is why the episode ended: the most loaded branches are
named in a legend (the rest are drawn thin and grey), every step where a branch tripped on
overflow is marked, and the title says how the episode ended (the game-over reason recorded
in its infos, or "truncated" / "scenario played to the end").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from grid_vec.runner.episode_data import EpisodeData

LEGEND_BRANCHES = 5
"""How many of the most loaded branches the legend names."""


def plot_episode(
    episode: EpisodeData,
    view: Callable[[Any], Any] | None = None,
    path: str | os.PathLike[str] | None = None,
    branch_names: Sequence[str] | None = None,
) -> Any:
    """Draw rho per branch above the reward per step of a recorded episode (its running
    sum when every step pays the same, which would draw a flat line).

    Args:
        episode: the episode.
        view: a grid env's observation view; rho is drawn when ``view(observations)`` gives
            ``.rho``.
        path: the image file to save the figure to, or None.
        branch_names: the branches' names, for the legend (else ``branch <index>``).

    Returns:
        The matplotlib figure.

    Raises:
        ImportError: matplotlib is missing (``pip install matplotlib``).
    """
    try:
        import matplotlib

        if path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plot_episode needs matplotlib: pip install matplotlib") from exc
    rho = None if view is None else getattr(episode.views(view), "rho", None)
    trips = episode.trips()
    rows = 2 if rho is not None else 1
    fig, axes = plt.subplots(rows, 1, sharex=True, figsize=(9, 3 * rows), squeeze=False)
    if rho is not None:
        _draw_rho(axes[0, 0], np.asarray(rho), branch_names)
    ax = axes[-1, 0]
    rewards = np.asarray(episode.rewards, dtype=float)
    if rewards.size and np.all(rewards == rewards[0]):
        # a reward that pays the same every step (the default one pays survival) draws a flat
        # line: its sum over the steps shows the episode instead
        ax.plot(range(1, len(episode) + 1), np.cumsum(rewards))
        ax.set_ylabel(f"reward summed\n({rewards[0]:g} a step)")
    else:
        ax.plot(range(1, len(episode) + 1), rewards)
        ax.set_ylabel("reward")
    ax.set_xlabel("step")
    for row, (step, branches) in enumerate(trips):
        for axis in axes[:, 0]:
            axis.axvline(step, color="black", linestyle=":", linewidth=0.8)
        axes[0, 0].annotate(
            "trip " + ", ".join(_name(b, branch_names) for b in branches[:3]),
            (step, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(2, -10 - 10 * (row % 3)),
            textcoords="offset points",
            fontsize=7,
        )
    result = episode.result
    fig.suptitle(
        f"episode {result.episode} ({result.scenario_name or result.scenario_id}): "
        f"{result.steps} steps, reward {result.cum_reward:.2f}\nended: {episode.ending}"
    )
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def _draw_rho(ax: Any, rho: np.ndarray, branch_names: Sequence[str] | None) -> None:
    """rho per branch: the most loaded named in the legend, the others thin and grey."""
    steps = np.arange(rho.shape[0])
    peak = rho.max(axis=0) if rho.size else np.zeros(rho.shape[1])
    named = set(np.argsort(-peak, kind="stable")[:LEGEND_BRANCHES].tolist())
    for b in range(rho.shape[1]):  # in branch order: line b is branch b
        if b in named:
            label = f"{_name(b, branch_names)} (max {peak[b]:.2f})"
            ax.plot(steps, rho[:, b], linewidth=1.0, label=label, zorder=3)
        else:
            ax.plot(steps, rho[:, b], color="0.75", linewidth=0.5, zorder=2)
    ax.axhline(1.0, color="red", linestyle="--", linewidth=0.8)
    ax.set_ylabel("rho per branch")
    ax.legend(loc="upper left", fontsize=7, title="most loaded", title_fontsize=7)


def _name(branch: int, branch_names: Sequence[str] | None) -> str:
    if branch_names is not None and 0 <= branch < len(branch_names):
        return str(branch_names[branch])
    return f"branch {branch}"

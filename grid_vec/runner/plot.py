"""Plot of a recorded episode: rho per branch and reward over time (matplotlib, optional)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from grid_vec.runner.episode_data import EpisodeData


def plot_episode(
    episode: EpisodeData,
    view: Callable[[Any], Any] | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Any:
    """Draw rho per branch above the reward per step of a recorded episode.

    Args:
        episode: the episode.
        view: a grid env's observation view; rho is drawn when ``view(observations)`` gives
            ``.rho``.
        path: the image file to save the figure to, or None.

    Returns:
        The matplotlib figure.

    Raises:
        ImportError: matplotlib is missing (an optional extra: ``pip install grid_vec[bench]``).
    """
    try:
        import matplotlib

        if path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "plot_episode needs matplotlib: pip install 'grid_vec[bench]' or pip install matplotlib"
        ) from exc
    rho = None if view is None else getattr(episode.views(view), "rho", None)
    rows = 2 if rho is not None else 1
    fig, axes = plt.subplots(rows, 1, sharex=True, figsize=(9, 3 * rows), squeeze=False)
    if rho is not None:
        ax = axes[0, 0]
        ax.plot(rho, linewidth=0.8)
        ax.axhline(1.0, color="red", linestyle="--", linewidth=0.8)
        ax.set_ylabel("rho per branch")
    ax = axes[-1, 0]
    ax.plot(range(1, len(episode) + 1), episode.rewards)
    ax.set_ylabel("reward")
    ax.set_xlabel("step")
    result = episode.result
    fig.suptitle(
        f"episode {result.episode} ({result.scenario_name or result.scenario_id}): "
        f"{result.steps} steps, reward {result.cum_reward:.2f}"
    )
    if path is not None:
        fig.savefig(path)
    return fig

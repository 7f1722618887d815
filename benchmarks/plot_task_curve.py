"""Plot a task's learning curves beside its baselines (the figures of docs/tasks.md and
docs/marl.md): one ``curve.csv`` of a training example per ``--curve``, named by ``--labels``.

    cd benchmarks/results/tasks && python ../../plot_task_curve.py \
        --curve ppo_case14topology_curve.csv --baselines baselines_case14topology.json \
        --out ../../../docs/ppo_case14topology.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

COLORS = {"do-nothing": "k", "do_nothing": "k", "greedy": "g", "random": "r"}  # both spellings


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--curve", required=True, nargs="+")
    p.add_argument("--labels", nargs="+", default=["PPO"])
    p.add_argument("--baselines", required=True)
    p.add_argument(
        "--agents",
        nargs="+",
        default=None,
        help="the rows of --baselines to draw, by agent (default: every row)",
    )
    p.add_argument("--title", default="grid_vec/Case14Topology-v0")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if len(args.labels) != len(args.curve):
        p.error("give one label per curve")
    fig, ax = plt.subplots(figsize=(10, 3.5))
    for curve, label in zip(args.curve, args.labels, strict=True):
        rows = np.genfromtxt(curve, delimiter=",", names=True)
        ok = ~np.isnan(rows["mean_survival"])
        minutes, survival, episodes = (
            rows["seconds"][ok] / 60,
            rows["mean_survival"][ok],
            rows["episodes"][ok],
        )
        window = 20  # updates; weighted by the episodes each one saw
        kernel = np.ones(window)
        smooth = np.convolve(survival * episodes, kernel, "valid") / np.convolve(
            episodes, kernel, "valid"
        )
        if len(args.curve) == 1:
            ax.plot(
                minutes, survival, ".", alpha=0.15, label=f"{label}: training episodes per update"
            )
        ax.plot(minutes[window - 1 :], smooth, label=f"{label}: mean over {window} updates")
    for row in json.loads(Path(args.baselines).read_text()):
        if args.agents is not None and row["agent"] not in args.agents:
            continue
        ax.axhline(
            row["mean_survival"],
            ls="--",
            lw=1,
            color=COLORS.get(row["agent"], "b"),
            label=f"{row['agent']} on the test scenarios",
        )
    ax.set_xlabel("training minutes (2-core machine)")
    ax.set_ylabel("time steps survived")
    ax.set_title(args.title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the curves
    fig.tight_layout()
    fig.savefig(args.out, dpi=80)


if __name__ == "__main__":
    main()

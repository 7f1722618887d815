"""The ``grid-vec eval`` and ``grid-vec actions`` commands: the named tasks on the CLI.

``eval`` scores baseline agents on a task's split (:mod:`grid_vec.runner.evaluate`) and
prints a Markdown table (``--json`` also writes the rows); ``actions`` writes a task's reduced
action set (:mod:`grid_vec.runner.action_sets`). Mistakes (an unknown task, split or agent)
are found before anything is played and reported by ``grid_vec.cli`` as one line, exit
status 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from grid_vec._argtypes import positive_int


def add_task_commands(commands: Any) -> None:
    """Add ``eval`` and ``actions`` to the CLI's sub-commands."""
    from grid_vec.env.tasks import TASKS
    from grid_vec.runner.evaluate import BASELINES

    evaluate = commands.add_parser(
        "eval",
        help="score baseline agents on a named task's test split",
        description="Play every scenario of a task's split once per agent and print the "
        "mean survival (time steps), the score (100 x mean survival fraction) and the "
        "operational cost per step.",
    )
    evaluate.add_argument("task", choices=list(TASKS), metavar="TASK", help=", ".join(TASKS))
    evaluate.add_argument(
        "--agent",
        action="append",
        choices=BASELINES,
        help=f"baseline to score (repeatable; default: every one of {', '.join(BASELINES)} "
        "the task's action space allows)",
    )
    evaluate.add_argument("--split", default="test", choices=["test", "validation", "train"])
    evaluate.add_argument("--num-envs", type=positive_int, default=8)
    evaluate.add_argument("--scenarios", type=positive_int, default=None)
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument(
        "--full-catalog",
        action="store_true",
        help="play the whole catalog instead of the task's reduced action set",
    )
    evaluate.add_argument("--json", type=Path, default=None, help="also write the rows here")
    evaluate.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="a dataset task's grid2op dataset folder (default: $GRID_VEC_DATA_DIR/<dataset>, "
        "else ~/data_grid2op/<dataset>)",
    )

    actions = commands.add_parser(
        "actions",
        help="write a task's reduced action set (greedy-by-simulate picks)",
        description="Play greedy-by-simulate on the first training scenarios of a task with "
        "the whole catalog, count its picks and write do-nothing plus the most picked actions "
        "as the task's action-set file.",
    )
    embedded = [t for t, task in TASKS.items() if not task.dataset]
    actions.add_argument("task", choices=embedded, metavar="TASK", help=", ".join(embedded))
    actions.add_argument("--scenarios", type=positive_int, default=64)
    actions.add_argument("--size", type=positive_int, default=30)
    actions.add_argument("--workers", type=positive_int, default=2)
    actions.add_argument("--out", type=Path, default=None, help="directory (default: package)")
    actions.add_argument(
        "--max-steps",
        type=positive_int,
        default=None,
        help="decisions per scenario at most (default: every scenario to its end)",
    )


def run_task_command(args: argparse.Namespace) -> int:
    """Run ``eval`` or ``actions``; returns the exit status."""
    if args.command == "actions":
        from grid_vec.runner.action_sets import write_action_set

        path = write_action_set(
            args.task, args.scenarios, args.size, args.workers, args.out, args.max_steps
        )
        print(f"wrote {path}")
        return 0
    from grid_vec.cli import UsageError
    from grid_vec.env.tasks import TASKS
    from grid_vec.runner.evaluate import BASELINES, evaluate_task, format_scores

    kwargs: dict[str, Any] = {"action_subset": None} if args.full_catalog else {}
    if args.data_dir is not None:
        if not TASKS[args.task].dataset:
            raise UsageError("grid-vec eval", f"--data-dir: {args.task} plays no dataset")
        kwargs["data_dir"] = args.data_dir
    try:
        from grid_vec.env.make import env_factory

        n_split = len(env_factory(args.task, split=args.split, **kwargs).source)
    except ValueError as exc:  # a dataset missing or too small: one line, no traceback
        raise UsageError("grid-vec eval", str(exc)) from exc
    if args.scenarios is not None and args.scenarios > n_split:
        raise UsageError(
            "grid-vec eval", f"--scenarios: the {args.split} split has {n_split} scenarios"
        )
    agents = args.agent or [
        name
        for name in BASELINES
        if name != "greedy" or TASKS[args.task].settings.get("action_type") == "discrete"
    ]
    if "greedy" in agents and TASKS[args.task].settings.get("action_type") != "discrete":
        raise UsageError("grid-vec eval", "--agent greedy needs a task with discrete actions")
    scores = [
        evaluate_task(
            args.task,
            name,
            split=args.split,
            num_envs=args.num_envs,
            seed=args.seed,
            scenarios=args.scenarios,
            env_kwargs=kwargs,
        )
        for name in agents
    ]
    print(format_scores(scores))
    if args.json is not None:
        args.json.write_text(json.dumps([s.row() for s in scores], indent=1) + "\n")
    return 0

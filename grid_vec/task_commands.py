"""The ``grid-vec eval`` and ``grid-vec actions`` commands: the named tasks on the CLI.

``eval`` scores baseline agents, and trained ones from their checkpoint files, on a task's
split (:mod:`grid_vec.runner.evaluate`) and prints a Markdown table (``--json`` also writes the
rows); a checkpoint is read without unpickling anything
(:func:`grid_vec.integrations.checkpoint.load_policy`); ``actions`` writes a task's reduced
action set (:mod:`grid_vec.runner.action_sets`) into the working directory or ``--out``,
never into the package. Mistakes (an unknown task, split or agent, an output that cannot be
written, too many scenarios, a damaged dataset file met mid-run) are one line and exit
status 2, found before anything is played where they can be.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from grid_vec._argtypes import (
    UsageError,
    cli_name,
    non_empty_path,
    non_negative_int,
    positive_int,
    writable_dir,
    writable_file,
)
from grid_vec._untrusted import UntrustedFileError
from grid_vec.runner.progress import NO_PROGRESS_HELP, cli_pbar

ACTION_SET_HELP = (
    "play the action set in this file (written by `grid-vec actions TASK --out DIR`) "
    "instead of the task's shipped one"
)


def add_task_commands(commands: Any) -> None:
    """Add ``eval`` and ``actions`` to the CLI's sub-commands."""
    from grid_vec.env.tasks import TASKS
    from grid_vec.runner.evaluate import BASELINES

    agents = [cli_name(name) for name in BASELINES]
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
        type=agent_argument,
        metavar="AGENT",
        help=f"a baseline ({', '.join(agents)}; do_nothing is accepted for do-nothing) or a "
        "trained policy's file: ppo.pt (examples/ppo_task.py; read without unpickling) or "
        "model.zip (examples/sb3_task.py; needs --trust-pickle); repeatable; default: every "
        "baseline the task's action space allows but expert (a search per decision)",
    )
    evaluate.add_argument(
        "--trust-pickle",
        action="store_true",
        help="load an SB3 model.zip (and the vecnormalize.pkl beside it): SB3's loader "
        "unpickles, which can run code the file names; only for files you trust",
    )
    evaluate.add_argument("--split", default="test", choices=["test", "validation", "train"])
    evaluate.add_argument("--num-envs", type=positive_int, default=8)
    evaluate.add_argument("--scenarios", type=positive_int, default=None)
    evaluate.add_argument("--seed", type=non_negative_int, default=0)
    evaluate.add_argument(
        "--full-catalog",
        action="store_true",
        help="play the whole catalog instead of the task's reduced action set",
    )
    evaluate.add_argument("--action-set", type=non_empty_path, default=None, help=ACTION_SET_HELP)
    evaluate.add_argument(
        "--json", type=writable_file, default=None, help="also write the rows to this file"
    )
    evaluate.add_argument(
        "--by-scenario",
        action="store_true",
        help="also print the time steps each agent survived per scenario and the scenarios "
        "none survived (the rows in --json then carry each agent's per-scenario survival)",
    )
    evaluate.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="a dataset task's grid2op dataset folder (default: $GRID_VEC_DATA_DIR/<dataset>, "
        "else ~/data_grid2op/<dataset>)",
    )

    evaluate.add_argument(
        "--check-top",
        type=positive_int,
        default=1,
        help="a trained torch policy simulates its K preferred legal actions and plays the "
        "first whose simulated step keeps every rho below 1.0, else the least loaded "
        "(default 1: the policy alone)",
    )
    evaluate.add_argument(
        "--never-worse",
        action="store_true",
        help="a trained torch policy never plays an action simulated worse than do-nothing "
        "(do-nothing is simulated beside its choices and takes the place of a worse one)",
    )
    evaluate.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)

    actions = commands.add_parser(
        "actions",
        help="write a task's reduced action set (greedy-by-simulate picks)",
        description="Play greedy-by-simulate on the first training scenarios of a task with "
        "the whole catalog, count its picks and write do-nothing plus the most picked actions "
        "as an action-set file under --out (the package's shipped sets are never touched); "
        "play it with `grid-vec eval TASK --action-set FILE` or "
        "grid_vec.make(TASK, action_set=FILE).",
    )
    # a task playing another task's set (the Combined tasks) has none of its own to write
    embedded = [t for t, task in TASKS.items() if not task.dataset and task.action_set_of is None]
    actions.add_argument("task", choices=embedded, metavar="TASK", help=", ".join(embedded))
    actions.add_argument("--scenarios", type=positive_int, default=64)
    actions.add_argument("--size", type=positive_int, default=30)
    actions.add_argument("--workers", type=positive_int, default=2)
    actions.add_argument(
        "--out",
        type=writable_dir,
        default=Path("."),
        help="directory to write the set in (created if needed; default: the working "
        "directory); the file name is printed",
    )
    actions.add_argument(
        "--max-steps",
        type=positive_int,
        default=None,
        help="decisions per scenario at most (default: every scenario to its end)",
    )
    actions.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)


def agent_argument(text: str) -> str | Path:
    """``--agent``: a baseline's name (as the CLI spells it) or a checkpoint file.

    Raises:
        argparse.ArgumentTypeError: neither.
    """
    from grid_vec.runner.evaluate import BASELINES

    name = cli_name(text)
    if name in [cli_name(b) for b in BASELINES]:
        return name
    path = Path(text)
    if path.suffix or "/" in text or path.exists():  # read (and refused) before any episode
        return path
    baselines = ", ".join(cli_name(b) for b in BASELINES)
    raise argparse.ArgumentTypeError(
        f"{text!r} is neither a baseline ({baselines}) nor a checkpoint file"
    )


def run_task_command(args: argparse.Namespace) -> int:
    """Run ``eval`` or ``actions``; returns the exit status.

    Raises:
        UsageError: a mistake of the user, or a damaged dataset file met while playing.
    """
    prog = f"grid-vec {args.command}"
    try:
        return _actions(args) if args.command == "actions" else _eval(args)
    except UntrustedFileError as exc:  # a dataset or action-set file, named in the message
        raise UsageError(prog, str(exc)) from exc


def _actions(args: argparse.Namespace) -> int:
    from grid_vec.env.tasks import TASKS
    from grid_vec.runner.action_sets import action_set_output, write_action_set

    n_train = len(TASKS[args.task].splits["train"])
    if args.scenarios > n_train:
        raise UsageError(
            "grid-vec actions", f"--scenarios: the train split has {n_train} scenarios"
        )
    try:
        action_set_output(args.task, args.out)
    except ValueError as exc:
        raise UsageError("grid-vec actions", f"--out: {exc}") from exc
    path = write_action_set(
        args.task,
        args.scenarios,
        args.size,
        args.workers,
        args.out,
        args.max_steps,
        pbar=cli_pbar(args.no_progress),
    )
    print(f"wrote {path}  (play it with --action-set {path})")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from grid_vec.core.action_kinds import action_kind
    from grid_vec.env.datasets import DatasetNotFoundError
    from grid_vec.env.make import env_factory
    from grid_vec.env.tasks import TASKS
    from grid_vec.runner.evaluate import (
        BASELINES,
        evaluate_task,
        format_by_scenario,
        format_scores,
    )

    task = TASKS[args.task]
    catalog = action_kind(task.settings.get("action_type", "discrete")).catalog
    kwargs: dict[str, Any] = {}
    if args.full_catalog and args.action_set is not None:
        raise UsageError("grid-vec eval", "--full-catalog contradicts --action-set")
    if args.full_catalog:
        kwargs["action_subset"] = None
    if args.action_set is not None:
        if not catalog:
            raise UsageError("grid-vec eval", f"--action-set: {args.task} has no catalog actions")
        kwargs["action_set"] = str(args.action_set)
    if args.data_dir is not None:
        if not task.dataset:
            raise UsageError("grid-vec eval", f"--data-dir: {args.task} plays no dataset")
        kwargs["data_dir"] = args.data_dir
    try:
        n_split = len(env_factory(args.task, split=args.split, **kwargs).source)
    except DatasetNotFoundError as exc:  # worded with the option the user types
        raise UsageError("grid-vec eval", exc.message("--data-dir FOLDER")) from exc
    except ValueError as exc:  # a dataset too small, a damaged file (named): one line
        raise UsageError("grid-vec eval", str(exc)) from exc
    if args.scenarios is not None and args.scenarios > n_split:
        raise UsageError(
            "grid-vec eval", f"--scenarios: the {args.split} split has {n_split} scenarios"
        )
    # the baselines the task's action space allows, unless asked for by name
    playable = {cli_name(name): catalog or not b.needs_catalog for name, b in BASELINES.items()}
    defaults = [cli_name(name) for name, b in BASELINES.items() if b.default]
    agents = list(dict.fromkeys(args.agent or [name for name in defaults if playable[name]]))
    refused = [a for a in agents if isinstance(a, str) and not playable[a]]
    if refused:
        raise UsageError("grid-vec eval", f"--agent {refused[0]} needs a task with catalog actions")
    # every checkpoint read (and refused) before anything is played, checked against the
    # spaces of the env it will play (the split and the action set asked)
    checked_kwargs = {**kwargs, "split": args.split}
    trained = {
        a: _checked(_trained_policy(a, args.task, args.trust_pickle, checked_kwargs), a, args)
        for a in agents
        if isinstance(a, Path)
    }
    scores = []
    for agent in agents:
        if isinstance(agent, Path):
            loaded = trained[agent]
            played: Any = loaded.policy
            env_kwargs = {**kwargs, "observation": loaded.observation}
        else:
            # evaluate_task names its baselines as Python does (do_nothing); the CLI's
            # spelling is the one printed and written
            played, env_kwargs = agent.replace("-", "_"), kwargs
        score = evaluate_task(
            args.task,
            played,
            agent_name=str(agent),
            split=args.split,
            num_envs=args.num_envs,
            seed=args.seed,
            scenarios=args.scenarios,
            env_kwargs=env_kwargs,
            pbar=cli_pbar(args.no_progress),
        )
        scores.append(dataclasses.replace(score, agent=str(agent)))
    print(format_scores(scores))
    if args.by_scenario:
        print()
        print(format_by_scenario(scores))
    if args.json is not None:
        rows = [s.row(by_scenario=args.by_scenario) for s in scores]
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
        except OSError as exc:  # checked writable before the run; changed since
            raise UsageError("grid-vec eval", f"--json {args.json}: {exc.strerror}") from exc
    return 0


def _checked(loaded: Any, path: Path, args: argparse.Namespace) -> Any:
    """A trained agent with the simulate-based checks ``--check-top`` and ``--never-worse``
    asked around it (a torch checkpoint's policy of discrete actions only).

    Raises:
        UsageError: a check asked for an SB3 model or a policy of continuous actions.
    """
    if args.check_top == 1 and not args.never_worse:
        return loaded
    from grid_vec.integrations.torch_policy import TorchPolicy

    policy = loaded.policy
    if not isinstance(policy, TorchPolicy):
        raise UsageError(
            "grid-vec eval", f"--check-top / --never-worse: {path} is not a torch checkpoint"
        )
    try:
        checked = TorchPolicy(
            policy.network, policy.norm, policy.name, check_top=args.check_top,
            safe_rho=policy.safe_rho, never_worse=args.never_worse, source=policy.source,
        )  # fmt: skip
    except ValueError as exc:
        raise UsageError("grid-vec eval", f"--check-top / --never-worse: {path}: {exc}") from exc
    return dataclasses.replace(loaded, policy=checked)


def _trained_policy(
    path: Path, task: str, trust_pickle: bool, env_kwargs: dict[str, Any] | None = None
) -> Any:
    """The policy of a trained agent's file (one line for a mistake): a torch checkpoint read
    without unpickling, or an SB3 zip when trusted.

    Args:
        path: the file.
        task: the task it will play.
        trust_pickle: whether an SB3 zip may be unpickled.
        env_kwargs: the settings of the task's env it will play (its action set, split): a
            torch checkpoint is checked against that env's spaces.

    Raises:
        UsageError: torch (or SB3) is missing, the file is not a checkpoint, is an SB3 zip
            not trusted, was trained on another task, or does not fit the task's observation
            or action space.
    """
    try:
        from grid_vec.integrations.checkpoint import LoadedPolicy, load_policy
        from grid_vec.integrations.torch_policy import CheckpointError
    except ImportError as exc:
        raise UsageError(
            "grid-vec eval",
            f"--agent {path}: a trained agent needs torch (pip install -e '.[sb3]')",
        ) from exc
    if not path.is_file():
        raise UsageError("grid-vec eval", f"--agent {path}: no such checkpoint file")
    try:
        if path.suffix == ".zip":
            from grid_vec.env.make import make
            from grid_vec.integrations.sb3_policy import load_sb3_policy

            env = make(task, **(env_kwargs or {}))  # the spaces it will play: --action-set...
            try:
                policy = load_sb3_policy(
                    path,
                    trust_pickle=trust_pickle,
                    observation_space=env.observation_space,
                    action_space=env.action_space,
                )
            finally:
                env.close()
            return LoadedPolicy(policy, task, "flat", None)
        loaded = load_policy(path, name=str(path))
    except ImportError as exc:
        raise UsageError(
            "grid-vec eval", f"--agent {path}: an SB3 model needs stable-baselines3 "
            "(pip install -e '.[sb3]')",
        ) from exc  # fmt: skip
    except CheckpointError as exc:
        raise UsageError("grid-vec eval", f"--agent {exc}") from exc
    if loaded.task != task:
        raise UsageError(
            "grid-vec eval", f"--agent {path}: trained on {loaded.task}, not on {task}"
        )
    from grid_vec.env.make import make

    # its spaces against the env's before the first step: a policy of another shape would
    # fail in the middle of the run, with a traceback
    env = make(task, observation=loaded.observation, **(env_kwargs or {}))
    try:
        loaded.policy.check_spaces(env.observation_space, env.action_space)
    except CheckpointError as exc:
        raise UsageError("grid-vec eval", f"--agent {exc}") from exc
    finally:
        env.close()
    return loaded

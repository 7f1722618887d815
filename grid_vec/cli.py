"""The ``grid-vec`` command line: ``run`` evaluates an agent, ``replay`` summarises a saved run."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grid_vec import __version__
from grid_vec._argtypes import non_negative_int, positive_int

AGENTS = ("do-nothing", "random", "reconnect", "greedy")


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level argument parser with one sub-command per job."""
    parser = argparse.ArgumentParser(
        prog="grid-vec",
        description="Fast Gymnasium environments and vector environments for power grids.",
    )
    parser.add_argument("--version", action="version", version=f"grid-vec {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="evaluate an agent over several episodes in parallel and save them",
        description="Evaluate an agent over several episodes in parallel (GridVecEnv workers) "
        "and record every episode under --save.",
    )
    run.add_argument(
        "--env",
        default="case14",
        help="case14, case118, a gymnasium id or a grid2op-format folder (default: case14)",
    )
    run.add_argument("--agent", choices=AGENTS, default="do-nothing")
    run.add_argument("--episodes", type=positive_int, default=4)
    run.add_argument("--num-envs", type=positive_int, default=2)
    run.add_argument(
        "--max-iter",
        type=positive_int,
        default=288,
        help="steps per episode at most (default 288: one day)",
    )
    run.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="master seed of the episodes' env and agent seeds",
    )
    run.add_argument(
        "--save",
        type=Path,
        default=None,
        help="directory of the recorded run (default: ./runs/<timestamp>)",
    )
    run.add_argument("--no-save", action="store_true", help="do not record the episodes")
    run.add_argument(
        "--resume", action="store_true", help="skip the episodes already recorded under --save"
    )
    run.add_argument("--backend", choices=("lightsim2grid", "pandapower"), default="lightsim2grid")
    run.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    run.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="play the episodes on Ray actors (one env each): on the cluster at ADDRESS "
        "('auto', 'ray://host:10001'), or on a local Ray instance without ADDRESS; "
        "--num-envs is then ignored (needs the ray extra)",
    )
    run.add_argument(
        "--num-actors",
        type=positive_int,
        default=None,
        help="with --ray: number of actors (default: one per CPU of the cluster)",
    )

    replay = commands.add_parser(
        "replay",
        help="summarise a saved run (and plot it when matplotlib is installed)",
        description="Summarise a run saved by `grid-vec run`; with matplotlib, also write "
        "one PNG per episode next to it.",
    )
    replay.add_argument("path", type=Path, help="directory of a saved run")
    replay.add_argument("--no-plot", action="store_true", help="do not write PNG plots")

    from grid_vec.bench import add_arguments as add_bench_arguments

    bench = commands.add_parser(
        "bench",
        help="standard throughput benchmark: env-steps/s side by side with other tools",
        description="Time env-steps/s of GridEnv and GridVecEnv side by side with gymnasium's "
        "vector envs, SB3's SubprocVecEnv and grid2op (each skipped when not installed), on "
        "the same workloads, in one run; print the table and write the JSON (and a PNG).",
    )
    add_bench_arguments(bench)
    return parser


def _make_agent(name: str, action_space: Any, env_factory: Any) -> Any:
    from grid_vec.runner import DoNothingAgent, GreedyAgent, RandomAgent, ReconnectAgent

    if name == "do-nothing":
        return DoNothingAgent()
    if name == "random":
        return RandomAgent(action_space)
    probe = env_factory()  # a local env, for the observation layout and the action catalog
    try:
        toggles = [k + 1 for k in range(probe.model.n_branch)]  # action k+1 toggles branch k
        if name == "reconnect":
            sample, _ = probe.reset(seed=0)
            return ReconnectAgent.from_view(probe.view, sample, toggles)
        return GreedyAgent([0, *toggles])
    finally:
        probe.close()


def _run(args: argparse.Namespace) -> int:
    from gymnasium.vector import AutoresetMode

    from grid_vec.env.make import env_factory
    from grid_vec.runner import Runner, format_results_table
    from grid_vec.vector import GridVecEnv

    if args.resume and args.save is None:
        print("grid-vec run: --resume needs --save PATH (the run to resume)", file=sys.stderr)
        return 2
    path = None
    if not args.no_save:
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = args.save if args.save is not None else Path("runs") / stamp
    if args.num_actors is not None and args.ray is None:
        print("grid-vec run: --num-actors needs --ray", file=sys.stderr)
        return 2
    factory = env_factory(args.env, backend=args.backend)
    if args.ray is None:
        envs = GridVecEnv([factory] * args.num_envs, autoreset_mode=AutoresetMode.DISABLED)
        try:
            agent = _make_agent(args.agent, envs.single_action_space, factory)
            results = _play(args, Runner(envs, agent, seed=args.seed), path)
        finally:
            envs.close()
    else:
        probe = factory()
        space = probe.action_space
        probe.close()
        runner = Runner(
            [factory],
            _make_agent(args.agent, space, factory),
            seed=args.seed,
            executor="ray",
            ray_address=args.ray or None,
            num_actors=args.num_actors,
        )
        try:
            results = _play(args, runner, path)
        finally:
            runner.close()
    print(format_results_table(results))
    if path is not None:
        print(f"\nsaved {len(results)} episodes under {path}  (grid-vec replay {path})")
    return 0


def _play(args: argparse.Namespace, runner: Any, path: Path | None) -> list[Any]:
    return runner.run(
        args.episodes,
        max_iter=args.max_iter,
        pbar=not args.no_progress,
        path_save=path,
        resume=args.resume,
    )


def _replay(args: argparse.Namespace) -> int:
    from grid_vec.runner import EpisodeDataError, format_results_table, load_run, plot_episode

    try:
        episodes = load_run(args.path)
    except (EpisodeDataError, FileNotFoundError) as exc:
        print(f"grid-vec replay: {exc}", file=sys.stderr)
        return 2
    if not episodes:
        print(f"grid-vec replay: no recorded episode under {args.path}", file=sys.stderr)
        return 2
    print(format_results_table([e.result for e in episodes]))
    if args.no_plot:
        return 0
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("\n(matplotlib is not installed: no plots; pip install 'grid_vec[bench]')")
        return 0
    view = _view_of(episodes[0].meta.get("env_id"))
    for episode in episodes:
        png = episode.path / "episode.png"
        plot_episode(episode, view=view, path=png)
        print(f"wrote {png}")
    return 0


def _view_of(env_id: str | None) -> Any:
    """The observation view of the recorded env, when it can be rebuilt by id."""
    if not env_id:
        return None
    import grid_vec

    try:
        return grid_vec.make(env_id).view
    except ValueError:
        return None


def _bench(args: argparse.Namespace) -> int:
    from grid_vec.bench import run_from_args

    return run_from_args(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``grid-vec`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "replay":
        return _replay(args)
    if args.command == "bench":
        return _bench(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())

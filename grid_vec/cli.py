"""The ``grid-vec`` command line: ``run`` evaluates an agent, ``replay`` summarises a saved run,
``bench`` times, ``eval`` and ``actions`` work on the named tasks (:mod:`grid_vec.task_commands`).

Every mistake of the user (arguments, ``--env``, ``--save``, a resume with other settings or
that can never complete, a missing or damaged run to replay, a damaged dataset file met
mid-run) ends in one line on stderr and exit status 2, found before any worker is built where
it can be; Ctrl-C, at any moment from the first line of :func:`main` (the sub-commands'
modules are imported inside it), ends with exit status 130 and one line, saying how to resume
for ``run``. Agent names are spelled ``do-nothing`` (``do_nothing`` is accepted too).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from grid_vec import __version__
from grid_vec._argtypes import (
    UsageError,
    cli_name,
    non_empty_path,
    non_empty_text,
    non_negative_int,
    positive_int,
    positive_int_up_to,
)
from grid_vec._signals import sigint_ignored
from grid_vec._untrusted import UntrustedFileError, quote

if TYPE_CHECKING:
    from grid_vec.runner import ResumeError

# CLI name -> class name recorded in each episode's meta.json ("agent").
AGENTS = {
    "do-nothing": "DoNothingAgent",
    "random": "RandomAgent",
    "reconnect": "ReconnectAgent",
    "greedy": "GreedyAgent",
    "expert": "ExpertAgent",
    # grid2op's own agents, unchanged, through grid_vec.integrations.grid2op (on a grid2op
    # folder, with the grid2op extra); recorded as Grid2opBatchPolicy names them
    "grid2op-reco-powerline": "grid2op.RecoPowerlineAgent",
    "grid2op-powerline-switch": "grid2op.PowerLineSwitch",
    "grid2op-topology-greedy": "grid2op.TopologyGreedy",
}
_GRID2OP_PREFIX = "grid2op."
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a Ctrl-C
# Episodes of one run at most: the episodes are planned up front (and each is a directory),
# so a typo such as 10**21 would hang before the first step.
MAX_EPISODES = 100_000

# Recorded metadata entry -> the option that sets it (to name a resume's difference).
_OPTION_OF = {
    "env_id": "--env",
    "observation_space": "--env",
    "action_space": "--env",
    "env_kwargs": "--backend",  # recorded before grid_vec recorded env_kwargs
    "env_kwargs.backend": "--backend",
    "env_kwargs.action_subset": "--action-set",
    "agent": "--agent",
    "max_iter": "--max-iter",
    "reset_options": "--max-iter",  # the only reset option a run sets (_reset_options)
    "env_seed": "--seed",
    "agent_seed": "--seed",
}


__all__ = ["AGENTS", "EXIT_INTERRUPTED", "EXIT_USAGE", "MAX_EPISODES", "UsageError", "main"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage block) and leave ``main``
    returning 2 instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level argument parser with one sub-command per job.

    Returns:
        The parser; its errors (and its sub-commands') raise :class:`UsageError`.
    """
    parser = _Parser(
        prog="grid-vec",
        description="Fast Gymnasium environments and vector environments for power grids.",
    )
    parser.add_argument("--version", action="version", version=f"grid-vec {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    # imported here, not at the top: main's Ctrl-C guard must be in place before any import
    # of the package's heavy modules
    from grid_vec.runner.progress import NO_PROGRESS_HELP
    from grid_vec.runner.results import table_legend

    run = commands.add_parser(
        "run",
        help="evaluate an agent over several episodes in parallel and save them",
        description="Evaluate an agent over several episodes in parallel (GridVecEnv workers)\n"
        "and record every episode under --save; then print one row per episode.",
        epilog=table_legend(),
        # the epilog is a table of columns: kept as written (argparse would refill its lines)
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--env",
        type=non_empty_text,
        default="case14",
        help="case14, case118, a gymnasium id or a grid2op-format folder (default: case14)",
    )
    run.add_argument(
        "--agent",
        type=cli_name,
        choices=tuple(AGENTS),
        default="do-nothing",
        help="do_nothing is accepted for do-nothing (default: do-nothing)",
    )
    run.add_argument(
        "--episodes",
        type=positive_int_up_to(MAX_EPISODES),
        default=4,
        help=f"episodes to play (default 4, at most {MAX_EPISODES})",
    )
    run.add_argument("--num-envs", type=positive_int, default=2)
    run.add_argument(
        "--max-iter",
        type=positive_int,
        default=288,
        help="time steps per episode at most, those a task's heuristics play included "
        "(default 288: one day of 5-minute steps)",
    )
    run.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="master seed of the episodes' env and agent seeds",
    )
    run.add_argument(
        "--save",
        type=non_empty_path,
        default=None,
        help="directory of the recorded run (default: ./runs/<timestamp>)",
    )
    run.add_argument("--no-save", action="store_true", help="do not record the episodes")
    run.add_argument(
        "--resume",
        action="store_true",
        help="continue the run under --save: keep its recorded episodes (it must have been "
        "recorded with the same --env, --agent, --backend, --max-iter and --seed), play the "
        "missing or damaged ones",
    )
    run.add_argument("--backend", choices=("lightsim2grid", "pandapower"), default="lightsim2grid")
    run.add_argument(
        "--action-set",
        type=non_empty_path,
        default=None,
        help="with --env TASK (a named task with discrete actions): play the action set in this "
        "file (written by `grid-vec actions TASK --out DIR`) instead of the task's shipped one",
    )
    run.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    run.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="play the episodes on Ray actors: on the cluster at ADDRESS "
        "('auto', 'ray://host:10001'), or on a local Ray instance without ADDRESS; each "
        "actor plays --num-envs episodes at a time, as one batch (needs the ray extra)",
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
        description="Summarise a run saved by `grid-vec run` (its results table, then how each\n"
        "episode ended); with matplotlib, also write one PNG per episode next to it.",
        epilog=table_legend(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument("path", type=non_empty_path, help="directory of a saved run")
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

    from grid_vec.task_commands import add_task_commands

    add_task_commands(commands)
    from grid_vec.export_command import add_export_command

    add_export_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``grid-vec`` console script.

    Args:
        argv: the arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for a mistake of the user (one line on stderr),
        130 when interrupted by Ctrl-C.
    """
    # The guard comes first: building the parser and running a command import the heavy
    # modules, and a Ctrl-C during an import must not end in a traceback. A Ctrl-C does not
    # always surface as a KeyboardInterrupt: one that lands in a C extension's import leaves
    # it half-built, and the next import of it fails with an ImportError. So the handler
    # notes each Ctrl-C, and whatever error a command ends with after one is the interruption.
    _INTERRUPTED.clear()
    with _noting_interrupts():
        try:
            return _main(list(sys.argv[1:] if argv is None else argv))
        except KeyboardInterrupt:
            _interrupt_handled()
        except BaseException:
            if not _INTERRUPTED.is_set():
                raise
            _interrupt_handled()
    print("grid-vec: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


_INTERRUPTED = threading.Event()
"""Set by the SIGINT handler of :func:`main` at each Ctrl-C."""


REPEAT_INTERRUPT_S = 2.0
"""After a Ctrl-C, seconds until it is raised again should the first KeyboardInterrupt have
been swallowed (raised inside a finalizer or a fork hook, it is printed as "Exception
ignored" and the command goes on); while SIGINT is ignored (workers being closed), later."""


@contextlib.contextmanager
def _noting_interrupts() -> Iterator[None]:
    """For the duration of the block (main thread only; the previous handlers are put back):
    a SIGINT handler that sets :data:`_INTERRUPTED` before raising KeyboardInterrupt, and
    raises it again every :data:`REPEAT_INTERRUPT_S` until :func:`_interrupt_handled` (at once
    when Python reports it swallowed, instead of printing "Exception ignored")."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(signum: int, frame: Any) -> None:
        _INTERRUPTED.set()
        signal.setitimer(signal.ITIMER_REAL, REPEAT_INTERRUPT_S)
        raise KeyboardInterrupt

    def on_alarm(signum: int, frame: Any) -> None:
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.setitimer(signal.ITIMER_REAL, REPEAT_INTERRUPT_S)
            return
        on_sigint(signal.SIGINT, frame)

    previous_hook = sys.unraisablehook

    def on_unraisable(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):  # swallowed: raise it again
            signal.setitimer(signal.ITIMER_REAL, 0.001)
            return
        previous_hook(unraisable)

    previous = signal.signal(signal.SIGINT, on_sigint)
    previous_alarm = signal.signal(signal.SIGALRM, on_alarm)
    sys.unraisablehook = on_unraisable
    try:
        yield
    finally:
        _interrupt_handled()
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGALRM, previous_alarm)
        signal.signal(signal.SIGINT, previous)


def _interrupt_handled() -> None:
    """A KeyboardInterrupt was caught where it is answered: it is not raised again."""
    if threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)


def _main(argv: list[str]) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command == "run":
            return _run(args, argv)
        if args.command == "replay":
            return _replay(args)
        if args.command == "bench":
            from grid_vec.bench import run_from_args

            return run_from_args(args)
        if args.command == "export":
            from grid_vec.export_command import run_export_command

            return run_export_command(args, argv)
        if args.command in ("eval", "actions"):
            from grid_vec.task_commands import run_task_command

            return run_task_command(args)
        parser.print_help()
        return 0
    except UsageError as exc:
        if _INTERRUPTED.is_set():  # an error the Ctrl-C caused (a half-built import)
            raise KeyboardInterrupt from exc
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0


def _run(args: argparse.Namespace, argv: list[str]) -> int:
    """``grid-vec run``: every check first, then the workers, then the episodes."""
    from grid_vec.runner import ResumeError, format_results_table
    from grid_vec.runner.recording import prepare_run_dir

    path = _run_path(args)
    try:
        factory = _env_factory(args)
        if path is not None and args.resume:
            _check_resumable(args, path, factory)
        if path is not None:
            try:
                prepare_run_dir(path)
            except ValueError as exc:
                raise UsageError("grid-vec run", f"--save: {exc}") from exc
        reuse = _scenario_reuse(args, factory)
        if reuse is not None:
            print(reuse, file=sys.stderr, flush=True)
        results = _evaluate(args, factory, path)
    except KeyboardInterrupt:
        _interrupt_handled()
        print(_interrupted(args, argv, path), file=sys.stderr)
        return EXIT_INTERRUPTED
    except ResumeError as exc:  # settings only the built env tells (its spaces)
        raise UsageError("grid-vec run", _resume_mismatch(exc, args)) from exc
    except UntrustedFileError as exc:  # a damaged dataset file met mid-run, named
        raise UsageError("grid-vec run", str(exc)) from exc
    print(format_results_table(results))
    if path is not None:
        print(f"\nsaved {len(results)} episodes under {path}  (grid-vec replay {path})")
    return 0


def _run_path(args: argparse.Namespace) -> Path | None:
    """The run directory, after checking the options against what is on disk (nothing is
    created yet)."""
    from grid_vec.runner.recording import finished_episodes

    def fail(message: str) -> NoReturn:
        raise UsageError("grid-vec run", message)

    if args.no_save and (args.save is not None or args.resume):
        fail("--no-save contradicts --save and --resume")
    if args.resume and args.save is None:
        fail("--resume needs --save PATH (the run to resume)")
    if args.num_actors is not None and args.ray is None:
        fail("--num-actors needs --ray")
    if args.no_save:
        return None
    if args.save is None:
        return Path("runs") / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = args.save
    try:
        if path.exists() and not path.is_dir():
            fail(f"--save {path} is not a directory")
        recorded = len(finished_episodes(path))
        others = path.is_dir() and any(not p.name.startswith(".episode_") for p in path.iterdir())
    except OSError as exc:  # e.g. a directory we may not list
        fail(f"--save {path}: {exc.strerror or exc}")
    if recorded and not args.resume:
        fail(
            f"--save {path} already holds a recorded run ({recorded} episodes): add "
            f"--resume to continue it, or choose another --save"
        )
    if others and not recorded:
        fail(f"--save {path} is a directory holding other files than a recorded run")
    return path


def _env_factory(args: argparse.Namespace) -> Any:
    """The env factory of ``--env`` (compiles the grid here, in this process, once)."""
    from grid_vec.env.datasets import DatasetNotFoundError
    from grid_vec.env.make import env_factory
    from grid_vec.env.tasks import TASKS

    kwargs: dict[str, Any] = {}
    if args.action_set is not None:
        if args.env not in TASKS:
            raise UsageError("grid-vec run", "--action-set needs --env TASK (a named task)")
        kwargs["action_set"] = str(args.action_set)
    if AGENTS[args.agent].startswith(_GRID2OP_PREFIX):
        kwargs.update(_grid2op_env_kwargs(args))
    try:
        return env_factory(args.env, backend=args.backend, **kwargs)
    except DatasetNotFoundError as exc:  # worded with the option the user types
        raise UsageError("grid-vec run", f"--env: {exc.message('--env FOLDER', lead='')}") from exc
    except (ValueError, TypeError, OSError, ImportError) as exc:
        # FolderFormatError (a ValueError) names the file and the place in it.
        raise UsageError("grid-vec run", f"--env {quote(args.env, 120)}: {exc}") from exc


def _check_resumable(args: argparse.Namespace, path: Path, factory: Any) -> None:
    """Refuse, before anything is built, a run under ``path`` recorded with other options
    (reads only the episodes' ``meta.json``; the Runner checks their arrays when it starts)."""
    from grid_vec.runner import EpisodeDataError, ResumeError
    from grid_vec.runner.episodes import episode_identity
    from grid_vec.runner.resume import plan_resume

    run = {
        "env_id": factory.spec.id,
        # the content of --action-set's file is in the spec (make reads it): a file changed
        # since the run was recorded, or another file, is another run
        "env_kwargs": {
            "backend": args.backend,
            "action_subset": factory.spec.kwargs.get("action_subset"),
        },
        "agent": AGENTS[args.agent],
        "max_iter": args.max_iter,  # compared before the seeds, as the Runner does
    }
    specs = _planned_episodes(args)
    expected = {s.index: {**run, **episode_identity(s, args.max_iter)} for s in specs}
    try:
        plan_resume(path, expected, load_arrays=False)
    except ResumeError as exc:
        raise UsageError("grid-vec run", _resume_mismatch(exc, args)) from exc
    except EpisodeDataError as exc:  # an entry no resume can replace (a file, a symlink)
        raise UsageError("grid-vec run", f"--resume: {exc}") from exc


def _resume_mismatch(exc: ResumeError, args: argparse.Namespace) -> str:
    """One line naming the option a resume differs in, and both values."""

    option = _OPTION_OF.get(exc.key)
    if option is None:
        return f"--resume: {exc}"
    where = f"--resume: {exc.path} was recorded with another {option}"
    if option == "--seed":
        return f"{where} (its episode seeds are not those of --seed {args.seed})"
    if option == "--action-set":
        now = "the task's own" if args.action_set is None else f"the one {args.action_set} holds"
        return f"{where}: the action set recorded is not {now} (the file changed since?)"
    recorded, asked = exc.recorded, exc.asked
    if option == "--agent":
        names = {v: k for k, v in AGENTS.items()}
        recorded, asked = names.get(recorded, recorded), names.get(asked, asked)
    return f"{where}: recorded {quote(recorded)}, this run asks {quote(asked)}"


def _evaluate(args: argparse.Namespace, factory: Any, path: Path | None) -> list[Any]:
    """Build the workers (or Ray actors), play the episodes, close the workers."""
    from gymnasium.vector import AutoresetMode

    from grid_vec.runner import Runner
    from grid_vec.vector import GridVecEnv

    if args.ray is None:
        envs = GridVecEnv([factory] * args.num_envs, autoreset_mode=AutoresetMode.DISABLED)
        with _shutting_down(envs.close):
            agent = _make_agent(args.agent, envs.single_action_space, factory, args.env)
            return _play(args, Runner(envs, agent, seed=args.seed), path)
    try:
        from grid_vec.integrations.ray import RayExecutor
    except ImportError as exc:
        raise UsageError("grid-vec run", "--ray needs Ray: pip install 'grid_vec[ray]'") from exc
    executor = RayExecutor(address=args.ray or None, num_actors=args.num_actors)
    probe = factory()
    space = probe.action_space
    probe.close()
    agent = _make_agent(args.agent, space, factory)
    # each actor hosts --num-envs envs of the one factory: one batch, as a local worker does
    runner = Runner([factory] * args.num_envs, agent, seed=args.seed, executor=executor)
    with _shutting_down(runner.close):
        return _play(args, runner, path)


@contextlib.contextmanager
def _shutting_down(close: Callable[[], None]) -> Iterator[None]:
    """Run the block, then ``close`` the workers with Ctrl-C ignored: a second Ctrl-C must not
    leave them running. After a Ctrl-C, the warning that a step was still pending is expected
    and not shown (the one line saying how to resume is)."""
    interrupted = False
    try:
        yield
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        with sigint_ignored(), warnings.catch_warnings():
            if interrupted:
                warnings.simplefilter("ignore")
            close()


def _grid2op_env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The env a grid2op agent plays on: a grid2op folder's, with grid2op's actions and
    observation attributes."""
    where = f"--agent {args.agent}"
    if args.ray is not None or args.action_set is not None:
        raise UsageError("grid-vec run", f"{where} plays without --ray and --action-set")
    if not Path(args.env).is_dir():
        raise UsageError("grid-vec run", f"{where} plays on a grid2op dataset folder: --env FOLDER")
    try:
        with warnings.catch_warnings():  # grid2op's import warns of optional packages
            warnings.simplefilter("ignore")
            from grid_vec.integrations.grid2op import AGENT_ACTION_TYPES, GRID2OP_OBSERVATION
    except ModuleNotFoundError as exc:
        raise UsageError(
            "grid-vec run", f"{where} needs grid2op: pip install 'grid_vec[grid2op]'"
        ) from exc
    return {"action_type": AGENT_ACTION_TYPES[0], "observation_attributes": GRID2OP_OBSERVATION}


def _make_agent(name: str, action_space: Any, env_factory: Any, folder: str = "") -> Any:
    from gymnasium.spaces import Discrete

    from grid_vec.runner import GreedyAgent, ReconnectAgent
    from grid_vec.runner.evaluate import BASELINES, baseline_agent

    if AGENTS[name].startswith(_GRID2OP_PREFIX):
        with warnings.catch_warnings():  # grid2op's import warns of optional packages
            warnings.simplefilter("ignore")
            import grid2op.Agent

            from grid_vec.integrations.grid2op import Grid2opBatchPolicy, reference_env

        try:  # grid2op opens a copy of the folder, its config.py never run
            reference = reference_env(folder)
        except ValueError as exc:  # what cannot be read as data, one line naming the file
            raise UsageError("grid-vec run", f"--agent {name}: {exc}") from exc
        agent_class = getattr(grid2op.Agent, AGENTS[name][len(_GRID2OP_PREFIX) :])
        return Grid2opBatchPolicy(agent_class(reference.action_space), reference)
    if name != "greedy" and name.replace("-", "_") in BASELINES:  # the tasks' baselines
        return baseline_agent(name.replace("-", "_"), action_space)
    probe = env_factory()  # a local env, for the observation layout and the action catalog
    try:
        if probe.config.action_subset is not None or not isinstance(action_space, Discrete):
            # a task's reduced set or a combined action: action k + 1 is not branch k's toggle
            if name == "reconnect":
                raise UsageError(
                    "grid-vec run",
                    "--agent reconnect plays the catalog's branch toggles; this env plays a "
                    "reduced action set or a combined action (a task's heuristics reconnect "
                    "lines themselves)",
                )
            try:  # greedy over the env's own topology actions, as grid-vec eval's greedy
                return baseline_agent("greedy", action_space)
            except ValueError as exc:
                raise UsageError("grid-vec run", f"--agent greedy: {exc}") from exc
        toggles = [k + 1 for k in range(probe.model.n_branch)]  # action k+1 toggles branch k
        if name == "reconnect":
            sample, _ = probe.reset(seed=0)
            return ReconnectAgent.from_view(probe.view, sample, toggles)
        return GreedyAgent([0, *toggles])
    finally:
        probe.close()


def _reset_options(args: argparse.Namespace) -> dict[str, Any]:
    """Every episode's reset options: ``--max-iter`` is a number of time steps, and the env
    itself stops there (under a task's heuristics a decision may play many steps, which the
    Runner's own cap, counted in time steps too, would only see once they are played)."""
    return {"max_steps": args.max_iter}


def _planned_episodes(args: argparse.Namespace) -> list[Any]:
    """The episodes of the run (their seeds and reset options), planned as its Runner plans
    them from ``--episodes``, ``--seed`` and ``--max-iter``."""
    from grid_vec.runner.episodes import plan_episodes

    return plan_episodes(args.episodes, None, None, None, _reset_options(args), args.seed)


_REUSED_SHOWN = 5  # scenarios named in the line saying which ones are played again


def _scenario_reuse(args: argparse.Namespace, factory: Any) -> str | None:
    """The line saying which scenarios the run plays more than once, or None when it plays
    none twice (or the env has no list of scenarios: a gymnasium id, a multi-mix folder).

    The run passes no scenario ids: a reset seeded with the episode's env seed shuffles the
    env's scenario order with it and plays the first, so the scenarios are drawn, not dealt,
    and repeat for sure once the episodes outnumber them (by chance before). The draw is
    replayed here with the env's own scenario handler, before anything is played, so that a
    table showing a scenario twice is no surprise.
    """
    from collections import Counter

    from grid_vec.chronics.handler import ScenarioHandler
    from grid_vec.chronics.scenario import ScenarioSource

    source = getattr(factory, "source", None)
    if not isinstance(source, ScenarioSource):
        return None
    handler = ScenarioHandler(source)
    played: Counter[int] = Counter()
    for spec in _planned_episodes(args):
        handler.seed(spec.env_seed)
        played[int(handler.order[0])] += 1
    again = sorted((-n, sid) for sid, n in played.items() if n > 1)
    if not again:
        return None
    names = source.names
    lead = (
        f"grid-vec run: the {args.episodes} episodes play {len(played)} of the {len(source)} "
        f"scenarios (each episode's env seed draws one): "
    )
    if len(again) == 1:
        count, sid = again[0]
        return f"{lead}scenario {names[sid]} is played {-count} times"
    shown = ", ".join(f"{names[sid]} ({-n} times)" for n, sid in again[:_REUSED_SHOWN])
    more = f" and {len(again) - _REUSED_SHOWN} more" if len(again) > _REUSED_SHOWN else ""
    return f"{lead}scenarios {shown}{more} are played more than once"


def _play(args: argparse.Namespace, runner: Any, path: Path | None) -> list[Any]:
    from grid_vec.runner.progress import cli_pbar

    return runner.run(
        args.episodes,
        max_iter=args.max_iter,
        reset_options=_reset_options(args),
        # as grid-vec eval's: tqdm's bars on a terminal, plain lines in a log (never silent)
        pbar=cli_pbar(args.no_progress),
        path_save=path,
        resume=args.resume,
    )


def _interrupted(args: argparse.Namespace, argv: list[str], path: Path | None) -> str:
    """The one line printed on Ctrl-C: what was saved and the command that resumes."""
    from grid_vec.runner.recording import finished_episodes

    if path is None:
        return "grid-vec run: interrupted (nothing saved: --no-save)"
    command = ["grid-vec", *argv]
    if args.save is None:
        command += ["--save", str(path)]
    if not args.resume:
        command.append("--resume")
    saved = len(finished_episodes(path))
    return (
        f"grid-vec run: interrupted, {saved} of {args.episodes} episodes saved under {path}; "
        f"resume with: {shlex.join(command)}"
    )


def _replay(args: argparse.Namespace) -> int:
    from grid_vec.runner import EpisodeDataError, format_results_table, load_run, plot_episode

    try:
        episodes = load_run(args.path)
    except EpisodeDataError as exc:
        raise UsageError("grid-vec replay", str(exc)) from exc
    if not episodes:
        raise UsageError("grid-vec replay", f"no recorded episode under {args.path}")
    view, branch_names = _recorded_grid(episodes[0].meta)
    print(format_results_table([_with_reason(e) for e in episodes]))
    print()
    for episode in episodes:
        print(_ending_line(episode, branch_names))
    if args.no_plot:
        return 0
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("\n(matplotlib is not installed: no plots; pip install matplotlib)")
        return 0
    for episode in episodes:
        png = episode.path / "episode.png"
        try:
            plot_episode(episode, view=view, path=png, branch_names=branch_names)
        except OSError as exc:
            raise UsageError("grid-vec replay", f"cannot write {png}: {exc}") from exc
        print(f"wrote {png}")
    return 0


_TRIPS_SHOWN = 8  # tripped branches named per episode; the rest are counted


def _with_reason(episode: Any) -> Any:
    """The episode's result, with the game-over reason of its arrays when its metadata has
    none (runs recorded before results kept it)."""
    result = episode.result
    if result.terminated and result.game_over_reason is None:
        return dataclasses.replace(result, game_over_reason=episode.ending)
    return result


def _ending_line(episode: Any, branch_names: Any) -> str:
    """``episode 3: load load_9_6 isolated after 183 steps; tripped: L1 (step 181), ...``"""
    result = episode.result
    line = f"episode {result.episode}: {episode.ending} after {result.steps} steps"
    trips = [(step, b) for step, branches in episode.trips() for b in branches]
    if not trips:
        return line
    named = [
        f"{branch_names[b] if branch_names is not None and b < len(branch_names) else b} "
        f"(step {step})"
        for step, b in trips[:_TRIPS_SHOWN]
    ]
    more = f" and {len(trips) - _TRIPS_SHOWN} more" if len(trips) > _TRIPS_SHOWN else ""
    return f"{line}; tripped: {', '.join(named)}{more}"


def _recorded_grid(meta: dict[str, Any]) -> tuple[Any, Any]:
    """The observation view and the branch names of the recorded env when it is an embedded
    grid whose observations have the recorded layout; ``(None, None)`` otherwise. Only known
    ids are built: a recorded run is untrusted, and its env id must not name a path to load."""
    import grid_vec
    from grid_vec.env.registration import GYM_IDS

    env_id = meta.get("env_id")
    if not isinstance(env_id, str) or env_id not in GYM_IDS:
        return None, None
    env = grid_vec.make(env_id)
    try:
        if repr(env.observation_space) != meta.get("observation_space"):
            return None, None
        return env.view, env.model.branch_names
    finally:
        env.close()


if __name__ == "__main__":
    sys.exit(main())

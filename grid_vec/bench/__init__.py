"""Standard throughput benchmark (``grid-vec bench``): env-steps/s of grid_vec's GridEnv and
GridVecEnv side by side with gymnasium's vector envs, SB3's SubprocVecEnv and grid2op, on the
same workloads, same machine, one run, medians.

    grid-vec bench --quick            # about 13 s: 1 and 2 envs, do-nothing
    grid-vec bench                    # full: 1..32 envs within --budget seconds
    grid-vec bench --markdown         # also print the README table
    grid-vec bench --out t.json       # also write the JSON (and t.png)

Results are written only where ``--out`` says (nothing is written without it): the record
kept in the repository, ``benchmarks/results/``, changes only when asked to. The scripts of
``benchmarks/`` follow the same rule with :func:`add_out_argument` and :func:`write_result`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path, PurePath

from grid_vec._argtypes import positive_float, positive_int, writable_dir, writable_file
from grid_vec.bench.protocol import Machine, Measurement, Protocol, describe_machine, measure
from grid_vec.bench.report import format_markdown, format_table, plot, write_json
from grid_vec.bench.subjects import SUBJECTS
from grid_vec.bench.suite import QUICK, SCHEMA, SCHEMA_VERSION, BenchConfig, run_suite
from grid_vec.bench.workloads import ACTIONS, WORKLOADS

__all__ = [
    "QUICK",
    "SCHEMA",
    "SCHEMA_VERSION",
    "BenchConfig",
    "Machine",
    "Measurement",
    "Protocol",
    "add_arguments",
    "add_out_argument",
    "config_from_args",
    "describe_machine",
    "format_markdown",
    "format_table",
    "main",
    "measure",
    "plot",
    "run_from_args",
    "run_suite",
    "write_json",
    "write_result",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the benchmark's options to ``parser`` (shared by the CLI and benchmarks/)."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1 and 2 envs, do-nothing actions, no GridVecEnv variants, short repetitions "
        "(about 1 minute)",
    )
    parser.add_argument(
        "--budget",
        type=positive_float,
        default=None,
        help="seconds the measurements may take, shared among the env counts; cells that "
        "would not fit in their share are skipped (default: 560, quick: 50)",
    )
    parser.add_argument(
        "--num-envs", type=positive_int, nargs="+", default=None, help="env counts to time"
    )
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=None)
    parser.add_argument("--subjects", nargs="+", choices=list(SUBJECTS), default=None)
    parser.add_argument("--actions", nargs="+", choices=list(ACTIONS), default=None)
    parser.add_argument("--reps", type=positive_int, default=None, help="timed repetitions")
    parser.add_argument("--seed", type=int, default=0, help="seed of resets and random actions")
    parser.add_argument(
        "--out",
        type=writable_file,
        default=None,
        metavar="FILE",
        help="write the result JSON here, and its PNG plot next to it (default: nothing is "
        "written; benchmarks/results/throughput.json updates the repository's record)",
    )
    parser.add_argument("--markdown", action="store_true", help="also print the README table")
    parser.add_argument(
        "--no-plot", action="store_true", help="do not write the PNG plot next to the JSON"
    )


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """The run configuration the parsed options describe (quick or full defaults + overrides)."""
    base = QUICK if args.quick else BenchConfig()
    changes: dict = {"seed": args.seed}
    for option, name in (
        ("num_envs", "num_envs"),
        ("workloads", "workloads"),
        ("subjects", "subjects"),
        ("actions", "actions"),
        ("budget", "budget_s"),
    ):
        value = getattr(args, option)
        if value is not None:
            changes[name] = tuple(value) if isinstance(value, list) else value
    if args.reps is not None:
        changes["protocol"] = dataclasses.replace(base.protocol, reps=args.reps)
    return dataclasses.replace(base, **changes)


def run_from_args(args: argparse.Namespace) -> int:
    """Run the benchmark the options describe; print the tables, write JSON (and PNG)."""
    try:
        config = config_from_args(args)
    except ValueError as exc:
        print(f"grid-vec bench: {exc}", file=sys.stderr)
        return 2
    print(
        f"grid-vec bench ({config.mode}): envs {list(config.num_envs)}, "
        f"budget {config.budget_s:.0f} s"
    )
    doc = run_suite(config)
    doc["command"] = _command_line()
    print()
    print(format_table(doc))
    if args.markdown:
        print()
        print(format_markdown(doc))
    if args.out is None:
        print(f"\n({doc['duration_s']:.0f} s; not written: pass --out FILE to keep the JSON)")
        return 0
    out = write_json(doc, args.out)
    print(f"\nwrote {out} ({doc['duration_s']:.0f} s)")
    if not args.no_plot and doc["results"]:
        try:
            print(f"wrote {plot(doc, out.with_suffix('.png'))}")
        except ImportError as exc:
            print(f"no plot: {exc}")
    return 0


def add_out_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--out DIR`` to a benchmark script: where it writes its JSON (nothing without it;
    ``--out benchmarks/results`` updates the repository's record)."""
    parser.add_argument(
        "--out",
        type=writable_dir,
        default=None,
        metavar="DIR",
        help="directory to write the result JSON in (created if needed; default: nothing is "
        "written; benchmarks/results updates the repository's record)",
    )


def write_result(doc: object, out: Path | None, name: str, **dumps: object) -> Path | None:
    """Write a benchmark script's result ``doc`` as ``out / name`` (JSON, ``dumps`` passed
    to ``json.dumps``) and say so; without ``out``, say that nothing was written.

    Returns:
        The file written, or None.
    """
    if out is None:
        print(f"({name} not written: pass --out DIR to keep it)")
        return None
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    # a script's arguments (``vars(args)``) hold paths: ``--out`` itself is one
    path.write_text(json.dumps(doc, **{"indent": 1, "default": _plain, **dumps}) + "\n")
    print(f"wrote {path}")
    return path


def _plain(value: object) -> str:
    """A path as its text in a result's JSON (anything else JSON cannot write: TypeError)."""
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _command_line() -> str:
    """This process's command line, as ``grid-vec ...`` when run by the console script."""
    if Path(sys.argv[0]).name == "grid-vec":
        return shlex.join(["grid-vec", *sys.argv[1:]])
    return shlex.join(["python", *sys.argv])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_throughput.py``: same options as ``grid-vec bench``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))

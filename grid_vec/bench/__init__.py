"""Standard throughput benchmark (``grid-vec bench``): env-steps/s of grid_vec's GridEnv and
GridVecEnv side by side with gymnasium's vector envs, SB3's SubprocVecEnv and grid2op, on the
same workloads, same machine, one run, medians.

    grid-vec bench --quick            # about a minute: 1 and 2 envs, do-nothing
    grid-vec bench                    # full: 1..32 envs within --budget seconds
    grid-vec bench --markdown         # also print the README table
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from grid_vec._argtypes import positive_float, positive_int
from grid_vec.bench.protocol import Machine, Measurement, Protocol, describe_machine, measure
from grid_vec.bench.report import format_markdown, format_table, plot, write_json
from grid_vec.bench.subjects import ACTIONS, SUBJECTS
from grid_vec.bench.suite import QUICK, SCHEMA, SCHEMA_VERSION, BenchConfig, run_suite
from grid_vec.bench.workloads import WORKLOADS

__all__ = [
    "QUICK",
    "SCHEMA",
    "SCHEMA_VERSION",
    "BenchConfig",
    "Machine",
    "Measurement",
    "Protocol",
    "add_arguments",
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
]

RESULTS = Path("benchmarks") / "results"


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
        type=Path,
        default=None,
        help="result JSON (default: benchmarks/results/throughput.json, "
        "throughput_quick.json with --quick)",
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
    name = "throughput_quick.json" if config.mode == "quick" else "throughput.json"
    out = write_json(doc, args.out if args.out is not None else RESULTS / name)
    print(f"\nwrote {out} ({doc['duration_s']:.0f} s)")
    if not args.no_plot and doc["results"]:
        try:
            print(f"wrote {plot(doc, out.with_suffix('.png'))}")
        except ImportError as exc:
            print(f"no plot: {exc}")
    return 0


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

"""The ``grid-vec export`` command: a recorded run in grid2op's layout, for grid2op's tools
(:mod:`grid_vec.integrations.grid2op_export`; needs the ``grid2op`` extra).

Mistakes (no run there, a damaged or foreign recording, an episode that does not play again
as recorded, an output that holds other episodes) are one line and exit status 2. Each
episode is written whole or not at all; after a Ctrl-C, ``--skip-existing`` exports the rest.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import warnings
from pathlib import Path
from typing import Any

from grid_vec._argtypes import UsageError, non_empty_path

PROG = "grid-vec export"


def add_export_command(commands: Any) -> None:
    """Add ``export`` to the CLI's sub-commands."""
    export = commands.add_parser(
        "export",
        help="write a saved run in grid2op's layout (EpisodeData, grid2viz)",
        description="Play each episode of a run saved by `grid-vec run` again, checked "
        "step by step against the recording, and write it as grid2op's Runner writes an "
        "episode: one folder per episode under --grid2op DIR, which grid2op's "
        "EpisodeData.from_disk(DIR, name) loads and grid2viz shows (--agents_path: DIR's "
        "parent). Needs the grid2op extra: pip install 'grid_vec[grid2op]'.",
    )
    export.add_argument("run", type=non_empty_path, help="directory of a saved run")
    export.add_argument(
        "--grid2op",
        type=non_empty_path,
        required=True,
        metavar="DIR",
        help="the export's directory (one agent's folder of grid2op's layout)",
    )
    export.add_argument(
        "--data",
        type=non_empty_path,
        default=None,
        metavar="FOLDER",
        help="the grid2op dataset folder the run was played on (default: the one its "
        "meta.json names)",
    )
    export.add_argument(
        "--skip-existing",
        action="store_true",
        help="leave the episodes already exported under DIR as they are (after an interruption)",
    )


def run_export_command(args: argparse.Namespace, argv: list[str]) -> int:
    """Run ``export``; returns the exit status.

    Raises:
        UsageError: a mistake of the user (see the module docstring).
        KeyboardInterrupt: after the line saying how to export the rest.
    """
    if not Path(args.run).is_dir():
        raise UsageError(PROG, f"{args.run} is not a directory of a saved run")
    try:
        with warnings.catch_warnings():  # grid2op's import warns of optional packages
            warnings.simplefilter("ignore")
            from grid_vec.integrations.grid2op_export import ExportError, export_run
    except ModuleNotFoundError as exc:
        raise UsageError(PROG, "needs grid2op: pip install 'grid_vec[grid2op]'") from exc
    written = []
    try:
        export_run(
            args.run,
            args.grid2op,
            folder=args.data,
            skip_existing=args.skip_existing,
            progress=written.append,
        )
    except ExportError as exc:
        raise UsageError(PROG, str(exc)) from exc
    except KeyboardInterrupt:
        command = ["grid-vec", "export", *argv[1:]]
        if not args.skip_existing:
            command.append("--skip-existing")
        print(
            f"{PROG}: interrupted, {len(written)} episodes written under {args.grid2op}; "
            f"export the rest with: {shlex.join(command)}",
            file=sys.stderr,
        )
        raise
    for episode in written:
        print(f"episode {episode.episode}: {episode.steps} steps -> {episode.path}")
    print(
        f"\nwrote {len(written)} episodes under {args.grid2op}; load one with "
        f"grid2op.Episode.EpisodeData.from_disk({str(args.grid2op)!r}, name)"
    )
    return 0

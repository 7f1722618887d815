"""The ``grid-vec`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from grid_vec import __version__


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level argument parser with one sub-command per job."""
    parser = argparse.ArgumentParser(
        prog="grid-vec",
        description="Fast Gymnasium environments and vector environments for power grids.",
    )
    parser.add_argument("--version", action="version", version=f"grid-vec {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``grid-vec`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

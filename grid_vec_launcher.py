"""The ``grid-vec`` console script, kept outside the ``grid_vec`` package on purpose.

Importing anything of ``grid_vec`` first runs the package's ``__init__`` (gymnasium, numpy:
0.1-0.5 s), and a Ctrl-C during that import would end in a traceback before
:func:`grid_vec.cli.main` could catch it. This module imports nothing but :mod:`sys` before
its guard, so that the command exits 130 with one line from the moment Python runs it.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def main() -> int:
    """Run :func:`grid_vec.cli.main`; a Ctrl-C while it is imported exits 130.

    Returns:
        The exit status of the command.
    """
    try:
        from grid_vec.cli import main as cli_main
    except KeyboardInterrupt:
        print("grid-vec: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())

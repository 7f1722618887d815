"""The ``grid-vec`` console script, kept outside the ``grid_vec`` package on purpose.

Importing anything of ``grid_vec`` first runs the package's ``__init__`` (gymnasium, numpy:
0.1-0.5 s), and a Ctrl-C during that import would end in a traceback before
:func:`grid_vec.cli.main` could catch it. This module imports nothing but :mod:`os`, :mod:`signal`
and :mod:`sys` before its guard, so that the command exits 130 with one line from the moment
Python runs it. A Ctrl-C in an import does not always surface as a KeyboardInterrupt (one in a
C extension's import leaves it half-built: the next import of it fails otherwise, or an
optional import catches the failure and goes on), so the handler notes it, and an import that
saw one is an interruption whatever it ended with.
"""

from __future__ import annotations

import os
import signal
import sys

EXIT_INTERRUPTED = 130


def main() -> int:
    """Run :func:`grid_vec.cli.main`; a Ctrl-C while it is imported exits 130.

    Returns:
        The exit status of the command.
    """
    seen = []

    def on_sigint(signum: int, frame: object) -> None:
        seen.append(signum)
        raise KeyboardInterrupt

    def on_unraisable(unraisable: object) -> None:  # a Ctrl-C swallowed in a finalizer
        if not isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
            previous_hook(unraisable)

    # kept for the whole process: cli.main puts its own in place for the command and these
    # back after it
    previous_hook = sys.unraisablehook
    sys.unraisablehook = on_unraisable
    signal.signal(signal.SIGINT, on_sigint)
    try:
        from grid_vec.cli import main as cli_main

        if not seen:
            code = cli_main()
            if code != EXIT_INTERRUPTED:
                return code
            _exit_interrupted(announce=False)
    except BaseException:
        if not seen:
            raise
    _exit_interrupted(announce=True)
    return EXIT_INTERRUPTED  # not reached


def _exit_interrupted(*, announce: bool) -> None:
    """Leave with status 130 at once. CPython 3.11 notes a KeyboardInterrupt raised in code a
    C extension runs (PyRun_String) as unhandled even once it is caught, and then ends the
    process by SIGINT instead of with the status returned: the command has closed what it
    opened by now, so the streams are flushed and the process leaves with os._exit."""
    if announce:
        print("grid-vec: interrupted", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())

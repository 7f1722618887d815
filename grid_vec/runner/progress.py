"""Progress bars of a run: one counting episodes, one counting env steps.

Long jobs (an evaluation, a greedy search) must not be silent: ``pbar="auto"`` shows tqdm's
bars on a terminal and, off a terminal (a log file, CI, a notebook's captured stream), one
plain line at most every :data:`LINE_PERIOD_S` seconds, so that a log says how far a job got.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

LINE_PERIOD_S = 30.0
"""Seconds between two progress lines off a terminal."""

NO_PROGRESS_HELP = (
    f"show no progress (by default: bars on a terminal, elsewhere a line at most every "
    f"{LINE_PERIOD_S:.0f} s as episodes end, and one at the end)"
)
"""The help of the ``--no-progress`` option of every command that plays episodes."""


def cli_pbar(no_progress: bool) -> bool | str:
    """The ``pbar`` (see :func:`make_bars`) of a command's ``--no-progress`` option: none when
    given, else ``"auto"``; every command that plays episodes (``grid-vec run``, ``eval``,
    ``actions``) takes it from here, so that none of them is silent in a log."""
    return False if no_progress else "auto"


class NoBar:
    """A progress bar that shows nothing."""

    def update(self, n: int = 1) -> None:
        """Ignore progress."""

    def close(self) -> None:
        """Nothing to close."""


class LineBar:
    """Progress as a plain line (``desc: 12/32 (38%), 41 s``) written at most every
    ``period`` seconds, and once more when closed: for streams that are not terminals.

    Args:
        total: the count at which the job is done, or None when unknown.
        desc: what is counted.
        stream: where lines go (default: ``sys.stderr`` at the time of writing).
        period: the least seconds between two lines.
    """

    def __init__(
        self,
        total: int | None = None,
        desc: str = "progress",
        stream: TextIO | None = None,
        period: float = LINE_PERIOD_S,
    ) -> None:
        self.total, self.desc, self.stream, self.period = total, desc, stream, period
        self.n = 0
        self._start = self._last = time.monotonic()
        self._closed = False

    def update(self, n: int = 1) -> None:
        """Count ``n`` more; write a line when ``period`` has passed since the last one."""
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.period:
            self._last = now
            self._write(now)

    def close(self) -> None:
        """Write the final count (once)."""
        if not self._closed:
            self._closed = True
            self._write(time.monotonic())

    def _write(self, now: float) -> None:
        done = f"{self.n}" if self.total is None else f"{self.n}/{self.total}"
        if self.total:
            done += f" ({100 * self.n / self.total:.0f}%)"
        stream = self.stream if self.stream is not None else sys.stderr
        print(f"{self.desc}: {done}, {now - self._start:.0f} s", file=stream, flush=True)


def is_terminal(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default ``sys.stderr``) is a terminal."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def make_bars(pbar: Any, nb_episode: int, desc: str = "episodes") -> tuple[Any, Any, bool]:
    """The progress bars a Runner's ``pbar`` argument asks for.

    Args:
        pbar: False/None (no bars), True (tqdm), ``"auto"`` (tqdm when stderr is a terminal,
            else a :class:`LineBar` of episodes), a bar class called with ``total`` and
            ``desc`` (used for both bars), or a bar instance with ``update`` (episodes only).
        nb_episode: the total of the episode bar.
        desc: what the first bar counts.

    Returns:
        ``(episode bar, step bar, whether the Runner owns and must close them)``.
    """
    if pbar is None or pbar is False:
        return NoBar(), NoBar(), False
    if isinstance(pbar, str) and pbar == "auto":
        if is_terminal():
            pbar = True
        else:
            return LineBar(total=nb_episode, desc=desc), NoBar(), True
    if pbar is True:
        from tqdm.auto import tqdm

        return (
            tqdm(total=nb_episode, desc=desc, unit="ep"),
            tqdm(desc="steps", unit="step", leave=False),
            True,
        )
    if isinstance(pbar, type):
        return pbar(total=nb_episode, desc=desc), pbar(total=None, desc="steps"), True
    if callable(getattr(pbar, "update", None)):
        return pbar, NoBar(), False
    raise TypeError(
        f"pbar must be a bool, 'auto', a progress-bar class or an object with update(), "
        f"got {pbar!r}"
    )

"""Progress bars of a run: one counting episodes, one counting env steps."""

from __future__ import annotations

from typing import Any


class NoBar:
    """A progress bar that shows nothing."""

    def update(self, n: int = 1) -> None:
        """Ignore progress."""

    def close(self) -> None:
        """Nothing to close."""


def make_bars(pbar: Any, nb_episode: int) -> tuple[Any, Any, bool]:
    """The progress bars a Runner's ``pbar`` argument asks for.

    Args:
        pbar: False/None (no bars), True (tqdm), a bar class called with ``total`` and
            ``desc`` (used for both bars), or a bar instance with ``update`` (episodes only).
        nb_episode: the total of the episode bar.

    Returns:
        ``(episode bar, step bar, whether the Runner owns and must close them)``.
    """
    if pbar is None or pbar is False:
        return NoBar(), NoBar(), False
    if pbar is True:
        from tqdm.auto import tqdm

        return (
            tqdm(total=nb_episode, desc="episodes", unit="ep"),
            tqdm(desc="steps", unit="step", leave=False),
            True,
        )
    if isinstance(pbar, type):
        return pbar(total=nb_episode, desc="episodes"), pbar(total=None, desc="steps"), True
    if callable(getattr(pbar, "update", None)):
        return pbar, NoBar(), False
    raise TypeError(
        f"pbar must be a bool, a progress-bar class or an object with update(), got {pbar!r}"
    )

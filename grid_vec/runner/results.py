"""What a run returns per episode, its JSON form, and a printable table."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class EpisodeTimings:
    """Seconds spent on one episode.

    ``agent`` and ``env`` are the wall times of the batched agent and ``step`` calls the
    episode took part in (shared with the other sub-envs stepping at the same time);
    ``powerflow`` comes from the sub-env's ``timings()["powerflow"]`` when it has one;
    ``env_detail`` holds the episode's share of every numeric entry of ``timings()``.
    """

    agent: float
    env: float
    total: float
    powerflow: float | None = None
    env_detail: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class EpisodeResult:
    """Outcome of one episode; equality ignores timings (they vary run to run).

    ``steps`` counts the agent's steps (calls of ``step``); ``env_steps`` the time steps the
    env played, those it played on its own included (``1 + info["skipped_steps"]`` per call
    under grid_vec's heuristics; equal to ``steps`` for other envs; None in results recorded
    before it existed). ``other_rewards``: the episode's sum of each of the env's
    ``info["other_rewards"]`` (empty when the env gives none). ``game_over_reason``: why a
    terminated episode ended, from its last step's ``info["game_over_reason"]`` (None when
    the env gives none, or the episode was not terminated); ``trips``: how many branches the
    protections tripped over the episode (``info["tripped_branches"]``; None when the env
    does not report them).
    """

    episode: int
    scenario_id: Any
    scenario_name: str | None
    cum_reward: float
    steps: int
    max_steps: int | None
    terminated: bool
    truncated: bool
    env_seed: int | None
    agent_seed: int | None
    timings: EpisodeTimings = field(compare=False)
    env_steps: int | None = None
    other_rewards: dict[str, float] = field(default_factory=dict)
    game_over_reason: str | None = None
    trips: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (see :meth:`from_dict`)."""
        return jsonable(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, data: Any) -> EpisodeResult:
        """Rebuild a result written by :meth:`to_dict`.

        Args:
            data: the dictionary, e.g. read back from an untrusted ``meta.json``.

        Returns:
            The result.

        Raises:
            ValueError: naming the first entry that is missing, unknown or of the wrong type.
        """
        if isinstance(data, dict):  # results recorded before these entries existed
            data = {
                "env_steps": None,
                "other_rewards": {},
                "game_over_reason": None,
                "trips": None,
                **data,
            }
        values = _checked(data, _RESULT_TYPES, "result")
        bad = [k for k, v in values["other_rewards"].items() if not _is_number(v)]
        if bad:
            raise ValueError(f"other_rewards[{bad[0][:40]!r}] is not a number")
        values["timings"] = EpisodeTimings(**_checked(values["timings"], _TIMING_TYPES, "timings"))
        detail = values["timings"].env_detail
        bad = [k for k, v in detail.items() if not _is_number(v)]
        if bad:
            raise ValueError(f"timings.env_detail[{bad[0][:40]!r}] is not a number")
        return cls(**values)


_INT, _NUMBER, _OPT_INT, _OPT_NUMBER = "int", "number", "int or null", "number or null"
_RESULT_TYPES = {
    "episode": _INT,
    "scenario_id": "any",
    "scenario_name": "str or null",
    "cum_reward": _NUMBER,
    "steps": _INT,
    "max_steps": _OPT_INT,
    "terminated": "bool",
    "truncated": "bool",
    "env_seed": _OPT_INT,
    "agent_seed": _OPT_INT,
    "timings": "dict",
    "env_steps": _OPT_INT,
    "other_rewards": "dict",
    "game_over_reason": "str or null",
    "trips": _OPT_INT,
}
_TIMING_TYPES = {
    "agent": _NUMBER,
    "env": _NUMBER,
    "total": _NUMBER,
    "powerflow": _OPT_NUMBER,
    "env_detail": "dict",
}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fits(value: Any, kind: str) -> bool:
    if value is None and kind.endswith("or null"):
        return True
    base = kind.removesuffix(" or null")
    if base == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if base == "number":
        return _is_number(value)
    return base == "any" or isinstance(value, {"str": str, "bool": bool, "dict": dict}[base])


def _checked(data: Any, types: dict[str, str], what: str) -> dict[str, Any]:
    """``data`` as a dict holding exactly the keys of ``types``, each of its type."""
    if not isinstance(data, dict):
        raise ValueError(f"{what} is not an object")
    missing, unknown = sorted(set(types) - set(data)), sorted(set(data) - set(types))
    if missing:
        raise ValueError(f"{what} lacks entries {missing}")
    if unknown:
        raise ValueError(f"{what} has unknown entries {[k[:40] for k in unknown[:5]]}")
    for key, kind in types.items():
        if not _fits(data[key], kind):
            raise ValueError(f"{what}.{key} must be {kind}, got {type(data[key]).__name__}")
    return dict(data)


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars/arrays, tuples and dataclasses turned into JSON types;
    anything else JSON cannot hold becomes its ``repr``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def ending(result: EpisodeResult) -> str:
    """How an episode ended, for tables: its game-over reason (cut to 48 characters), else
    ``"game over"`` or ``"truncated"``."""
    if result.terminated:
        reason = " ".join((result.game_over_reason or "").split())
        return (reason[:45] + "...") if len(reason) > 48 else (reason or "game over")
    return "truncated" if result.truncated else "-"


TABLE_COLUMNS = {
    "episode": "the episode's number, from 0",
    "scenario": "the scenario it played (its name, else its id); grid_vec's envs draw it from "
    "the episode's env seed, so a scenario may come more than once",
    "reward": "the rewards summed over the episode",
    "steps": "the agent's steps (calls of step); under a task's heuristics one step may "
    "cover several time steps",
    "max": "the time steps the episode could last at most: the run's cap (max_iter, "
    "grid-vec run --max-iter) or the scenario's length when shorter; '-': neither is known",
    "env seed": "the seed of the episode's env reset (derived from the run's seed)",
    "agent s": "wall seconds of the agent's calls the episode took part in (a batched agent "
    "decides for every sub-env at once: the episodes played side by side share that time)",
    "env s": "wall seconds of the vector env's step calls the episode took part in (shared "
    "in the same way)",
    "pf s": "seconds its env spent solving power flows, a part of env s ('-': the env does "
    "not time them)",
    "trips": "branches the protections tripped over the episode ('-': the env does not "
    "report them)",
    "ended": "how it ended: the game-over reason, 'game over' when the env gives none, or "
    "'truncated' (cut at max, or by the env)",
}
"""The columns of :func:`format_results_table`, in order, and what each holds."""


def table_legend(width: int = 79) -> str:
    """What each column of :func:`format_results_table` holds, one paragraph per column
    (the help of ``grid-vec run`` and ``replay`` prints it: "max" or "agent s" alone do not
    say what they count).

    Args:
        width: the line width to wrap at.

    Returns:
        The legend, lines of at most ``width`` characters.
    """
    indent = 2 + max(map(len, TABLE_COLUMNS)) + 2
    lines = ["the results table: one row per episode, then the mean reward and steps"]
    for name, text in TABLE_COLUMNS.items():
        lines += textwrap.wrap(
            text,
            width,
            initial_indent=f"  {name:<{indent - 4}}  ",
            subsequent_indent=" " * indent,
        )
    return "\n".join(lines)


def format_results_table(results: Sequence[EpisodeResult]) -> str:
    """Format results as a plain-text table.

    Args:
        results: the Runner's results (any order).

    Returns:
        The table: one row per episode (how it ended last: the game-over reason, or
        ``truncated``), plus a mean row.
    """
    header = tuple(TABLE_COLUMNS)
    rows = [
        (
            str(r.episode),
            str(r.scenario_name if r.scenario_name is not None else r.scenario_id),
            f"{r.cum_reward:.2f}",
            str(r.steps),
            "-" if r.max_steps is None else str(r.max_steps),
            str(r.env_seed),
            f"{r.timings.agent:.3f}",
            f"{r.timings.env:.3f}",
            "-" if r.timings.powerflow is None else f"{r.timings.powerflow:.3f}",
            "-" if r.trips is None else str(r.trips),
            ending(r),
        )
        for r in results
    ]
    if results:
        mean_row = [""] * len(header)
        mean_row[0] = "mean"
        mean_row[2] = f"{np.mean([r.cum_reward for r in results]):.2f}"
        mean_row[3] = f"{np.mean([r.steps for r in results]):.1f}"
        rows.append(tuple(mean_row))
    widths = [max(len(row[c]) for row in [header, *rows]) for c in range(len(header))]
    last = len(header) - 1  # the ending is text: left-aligned
    lines = [
        "  ".join(
            cell.ljust(w) if c == last else cell.rjust(w)
            for c, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)

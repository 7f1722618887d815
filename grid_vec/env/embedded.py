"""The embedded environments: pandapower's case14 / case118 with synthetic scenarios.

pandapower's own branch ratings are far above any flow of these cases (case14's lines carry
``max_i_ka = 9999``), so the thermal limits here were calibrated by
``benchmarks/calibrate.py`` (its output is recorded in ``benchmarks/results``): with
grid2op's default rules, a do-nothing agent survives a median 35-65% of the synthetic week
(case14: about 57%, case118: about 55%),
and some scenarios end in an overflow cascade.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grid_vec.grid.model import GridModel


@dataclass(frozen=True)
class EmbeddedSpec:
    """How to build one embedded environment."""

    network: str  # name for grid_vec.grid.networks.load_network
    scenario_seed: int  # seed of its SyntheticSource
    thermal_limits: tuple[float, ...] | None  # amperes per branch (None: pandapower's)


EMBEDDED: dict[str, EmbeddedSpec] = {
    "case14": EmbeddedSpec(
        "case14",
        0,
        (
            19473.4,
            19473.4,
            19473.4,
            19473.4,
            19473.4,
            19473.4,
            19473.4,
            29016.4,
            27130.0,
            64911.5,
            25096.4,
            35284.6,
            19473.4,
            19473.4,
            23277.8,
            19473.4,
            19473.4,
            19473.4,
            19473.4,
            19473.4,
        ),
    ),
    "case118": EmbeddedSpec(
        "case118",
        0,
        (
            300.9,
            300.9,
            529.4,
            384.4,
            455.9,
            300.9,
            870.1,
            857.5,
            340.0,
            403.4,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            543.6,
            300.9,
            438.4,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            827.2,
            724.1,
            300.9,
            300.9,
            300.9,
            449.4,
            300.9,
            300.9,
            498.7,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            517.3,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            358.0,
            358.0,
            300.9,
            300.9,
            300.9,
            355.1,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            311.2,
            593.2,
            300.9,
            300.9,
            388.0,
            423.5,
            460.9,
            664.6,
            664.6,
            300.9,
            300.9,
            300.9,
            310.7,
            300.9,
            593.5,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            609.3,
            300.9,
            353.8,
            459.2,
            300.9,
            323.5,
            300.9,
            493.5,
            300.9,
            351.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            373.5,
            516.0,
            329.6,
            626.3,
            300.9,
            1003.2,
            317.5,
            300.9,
            314.6,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            679.7,
            302.6,
            300.9,
            300.9,
            318.6,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            345.5,
            300.9,
            300.9,
            442.3,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            300.9,
            724.3,
            300.9,
            505.3,
            553.6,
            388.0,
            300.9,
            300.9,
            300.9,
            796.8,
            300.9,
            300.9,
            300.9,
            525.9,
        ),
    ),
}


def embedded_model(name: str, *, calibrated: bool = True) -> GridModel:
    """Compile an embedded grid (imports pandapower, unless the cache of compiled grids,
    :mod:`grid_vec.grid.model_cache`, has it); ``calibrated=False`` keeps its ratings."""
    from grid_vec.grid.model_cache import cached_model

    if name not in EMBEDDED:
        raise ValueError(f"unknown embedded grid {name!r}; allowed: {', '.join(EMBEDDED)}")
    spec = EMBEDDED[name]
    limits = spec.thermal_limits if calibrated else None
    # a module-level function: a model from the cache keeps it to compile its pandapower
    # state again, and ships to worker processes
    return cached_model(
        ("embedded", name, spec.network, repr(limits)),
        functools.partial(_compile_embedded, name, limits),
    )


def _compile_embedded(name: str, limits: tuple[float, ...] | None) -> GridModel:
    """Compile the embedded grid ``name`` with ``limits`` (None: the network's ratings)."""
    from grid_vec.grid.compile import compile_net
    from grid_vec.grid.networks import load_network

    return compile_net(
        load_network(EMBEDDED[name].network),
        name=name,
        thermal_limits=None if limits is None else np.asarray(limits, dtype=np.float64),
    )


@dataclass(frozen=True)
class DoNothingRun:
    """How one scenario went for a do-nothing agent (the calibration's measure)."""

    scenario_id: int
    fraction: float  # of the scenario survived (1.0: played to the end)
    game_over_reason: str | None  # None when the scenario was played to the end
    tripped: bool  # some branch tripped on overflow during the episode


def do_nothing_survival(env: Any, scenario_ids: Iterable[int]) -> list[DoNothingRun]:
    """Play action 0 (do nothing) on ``env`` over each scenario until the episode ends."""
    runs = []
    for sid in scenario_ids:
        env.reset(options={"scenario_id": sid})
        played, tripped = 0, False
        while True:
            _, _, terminated, truncated, info = env.step(0)
            played += 1
            tripped |= bool(info["tripped_branches"].any())
            if terminated or truncated:
                break
        length = env.unwrapped.scenario_info.length
        fraction = played / length if terminated else 1.0
        reason = info.get("game_over_reason") if terminated else None
        runs.append(DoNothingRun(int(sid), fraction, reason, tripped))
    return runs

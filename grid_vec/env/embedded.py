"""The embedded environments: pandapower's case14 / case118 with synthetic scenarios.

pandapower's own branch ratings are far above any flow of these cases (case14's lines carry
``max_i_ka = 9999``), so the thermal limits here were calibrated by
``benchmarks/calibrate.py`` (its output is recorded in ``benchmarks/results``): with
grid2op's default rules, a do-nothing agent survives a median 35-65% of the synthetic week
(case14: about 50%, case118: about 63%),
and some scenarios end in an overflow cascade.
"""

from __future__ import annotations

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
            304.0,
            304.0,
            533.6,
            381.6,
            461.1,
            304.0,
            874.2,
            861.4,
            340.5,
            403.7,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            555.0,
            304.0,
            442.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            828.7,
            735.2,
            304.0,
            304.0,
            304.0,
            456.9,
            304.0,
            304.0,
            500.6,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            518.2,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            354.7,
            354.7,
            304.0,
            304.0,
            304.0,
            354.1,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.7,
            595.3,
            304.0,
            304.0,
            382.5,
            420.9,
            456.8,
            673.4,
            673.4,
            304.0,
            304.0,
            304.0,
            320.2,
            304.0,
            600.7,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            613.7,
            306.7,
            353.4,
            458.5,
            304.0,
            319.5,
            304.0,
            497.7,
            304.0,
            353.2,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            371.6,
            514.1,
            332.6,
            632.1,
            304.0,
            1013.3,
            320.7,
            304.0,
            315.7,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            678.4,
            304.0,
            304.0,
            304.0,
            322.2,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            339.1,
            304.0,
            304.0,
            457.5,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            304.0,
            722.8,
            304.0,
            508.9,
            554.3,
            382.5,
            304.0,
            304.0,
            304.0,
            810.0,
            304.0,
            304.0,
            304.0,
            533.8,
        ),
    ),
}


def embedded_model(name: str, *, calibrated: bool = True) -> GridModel:
    """Compile an embedded grid (imports pandapower); ``calibrated=False`` keeps its ratings."""
    from grid_vec.grid.compile import compile_net
    from grid_vec.grid.networks import load_network

    if name not in EMBEDDED:
        raise ValueError(f"unknown embedded grid {name!r}; allowed: {', '.join(EMBEDDED)}")
    spec = EMBEDDED[name]
    limits = spec.thermal_limits if calibrated else None
    return compile_net(
        load_network(spec.network),
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

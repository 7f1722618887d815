"""The embedded environments: pandapower's case14 / case118 with synthetic scenarios.

pandapower's own branch ratings are far above any flow of these cases (case14's lines carry
``max_i_ka = 9999``), so the thermal limits here were calibrated by
``benchmarks/calibrate.py`` (its output is recorded in ``benchmarks/results``): with
grid2op's default rules, a do-nothing agent survives a median 35-65% of the synthetic week,
and some scenarios end in an overflow cascade.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    "case118": EmbeddedSpec("case118", 0, None),
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

"""A pandapower network compiled once into plain arrays (the grid's static description).

Element orders, used by every layer above:

* substations: one per pandapower bus, in ``net.bus`` order; each has two bus bars
  (bus bar 1 = the original pandapower bus, bus bar 2 = an added out-of-service bus);
* branches: ``net.line`` rows then ``net.trafo`` rows, in table order;
* loads: ``net.load`` rows;
* generators: ``net.gen`` rows, then ``net.sgen`` rows (not voltage-controlling), then
  ``net.ext_grid`` rows (the slack). A ``net.gen`` row with ``slack=True`` (grid2op's
  own grids have one and no ext_grid) is the slack too: its ``gen_kind`` is ``"slack"``;
* storage units: ``net.storage`` rows. Their power is in load convention, as in grid2op and
  pandapower: ``p > 0`` is a unit absorbing (charging), in MW.

A ``GridModel`` holds only numpy arrays, strings and the serialised solver states, so it
pickles in a few KB and can be shipped to worker processes that never import pandapower.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class GridModel:
    """Static description of a grid: sizes, names, element maps, limits and base injections."""

    name: str
    sub_names: np.ndarray  # (n_sub,) str
    sub_vn_kv: np.ndarray  # (n_sub,) nominal voltage of each substation
    branch_names: np.ndarray  # (n_branch,) str, lines then transformers
    branch_or_sub: np.ndarray  # (n_branch,) int, origin substation (line from / trafo hv side)
    branch_ex_sub: np.ndarray  # (n_branch,) int, extremity substation (line to / trafo lv side)
    n_line: int  # the first n_line branches are lines, the rest transformers
    thermal_limit_a: np.ndarray  # (n_branch,) float, amperes, at the origin side
    load_names: np.ndarray  # (n_load,) str
    load_sub: np.ndarray  # (n_load,) int
    load_p0: np.ndarray  # (n_load,) MW in the net
    load_q0: np.ndarray  # (n_load,) MVAr in the net
    gen_names: np.ndarray  # (n_gen,) str
    gen_sub: np.ndarray  # (n_gen,) int
    gen_kind: np.ndarray  # (n_gen,) str: "gen", "sgen" or "slack"
    gen_p0: np.ndarray  # (n_gen,) MW in the net (slack: its p from a base-case power flow)
    gen_v0: np.ndarray  # (n_gen,) kV voltage setpoint (sgen: nominal voltage, unused)
    gen_pmin: np.ndarray  # (n_gen,) MW
    gen_pmax: np.ndarray  # (n_gen,) MW
    # storage units (none by default, for the grids and callers that have none): names,
    # substations, and MW setpoints in the net (load convention; 0 in grid2op's grids)
    storage_names: np.ndarray = field(default_factory=lambda: np.array([], dtype=str))
    storage_sub: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int64))
    storage_p0: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.float64))
    solver_states: dict = field(default_factory=dict, repr=False)  # backend name -> state

    @property
    def n_sub(self) -> int:
        return len(self.sub_names)

    @property
    def n_branch(self) -> int:
        return len(self.branch_names)

    @property
    def n_trafo(self) -> int:
        return self.n_branch - self.n_line

    @property
    def n_load(self) -> int:
        return len(self.load_names)

    @property
    def n_gen(self) -> int:
        return len(self.gen_names)

    @property
    def n_storage(self) -> int:
        return len(self.storage_names)

    @property
    def gen_is_slack(self) -> np.ndarray:
        return self.gen_kind == "slack"

    @property
    def gen_controls_voltage(self) -> np.ndarray:
        return self.gen_kind != "sgen"

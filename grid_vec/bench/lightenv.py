"""lightsim2grid's ``LightEnv`` (its C++ env) set up to play what a GridEnv plays, for the
benchmarks (the ``LightEnv`` subject of ``grid-vec bench`` and ``benchmarks/bench_batched.py``).

It is built from the same compiled grid (grid_vec's ``LSGrid``), the time series of the
scenario the GridEnv plays first, GridEnv's thermal limits and rules, and GridEnv's discrete
action catalog registered as ``TopoAction`` s in catalog order, so that action ``i`` means
the same in both. Only the compiled extension is used, never the ``lightsim2grid`` package
(which imports grid2op and pandapower). Importing this module raises ImportError when the
installed lightsim2grid has no LightEnv.

Where LightEnv's rules differ from GridEnv's (the work is comparable, not identical):

* protections: a branch trips once it has been at or above its limit for more than
  ``nb_timestep_overflow_allowed`` steps, as in GridEnv, but there is no hard overflow
  threshold (GridEnv trips a branch above ``hard_overflow_threshold`` x its limit at once).
  The limit is set on the origin side only (infinite on the extremity side), as GridEnv's;
* every power flow starts cold, from a DC power flow and then the AC one (GridEnv starts
  from the previous step's solution);
* a branch toggle is registered as ``set_line_status(branch, -1)`` (LightEnv has no
  ``change_line_status``): toggling a disconnected branch leaves it disconnected, where
  GridEnv reconnects it;
* a substation configuration is grid2op's ``set_bus`` on every element of the substation
  (GridEnv plays it alike, reconnecting a disconnected branch end, but also checks the
  branch's cooldown and ``max_line_status_changed``, as grid2op does);
* game over is a diverged power flow only (GridEnv also ends an episode on an isolated load
  or generator, or a disconnected slack);
* a reset replays the same time series from its first row (GridEnv moves on to the next
  scenario of its order) and does not trip the first state's hard overflows; LightEnv
  builds no observation vector (its observation is views of its flows) and no reward but
  the fraction of the episode survived;
* grids with static generators are refused: LightEnv does not replay their injections.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any

import numpy as np

from grid_vec.bench.workloads import ACTION_ROWS, action_table
from grid_vec.core.actions import KIND_LINE, KIND_SUB
from grid_vec.grid._lightsim_cpp import lightsim_cpp
from grid_vec.grid.lightsim_batch import LightSimGrid

_cpp = lightsim_cpp()
if not hasattr(_cpp, "LightEnv"):
    raise ImportError(
        f"lightsim2grid {metadata.version('lightsim2grid')} has no LightEnv "
        "(lightsim2grid_cpp.LightEnv)"
    )

_NEVER = np.iinfo(np.int32).max  # overflow steps allowed when overflows never trip


def catalog_actions(env: Any) -> list:
    """GridEnv ``env``'s discrete catalog as LightEnv ``TopoAction`` s, in catalog order."""
    model, layout, catalog = env.model, env.topology, env.catalog
    kind = _cpp.ElementType
    ls_gen = np.full(model.n_gen, -1)
    ls_gen[model.gen_kind != "sgen"] = np.arange(np.count_nonzero(model.gen_kind != "sgen"))
    owner: dict[int, tuple[Any, int]] = {}  # topology position -> (element type, id)
    for el_type, positions, ids in (
        (kind.load, layout.pos_load, range(model.n_load)),
        (kind.gen, layout.pos_gen, ls_gen),
        (kind.line_or, layout.pos_or, range(model.n_branch)),  # lines then trafos, as grid2op
        (kind.line_ex, layout.pos_ex, range(model.n_branch)),
    ):
        for pos, el_id in zip(positions, ids, strict=True):
            owner[int(pos)] = (el_type, int(el_id))
    actions = []
    for k, target, buses in zip(catalog.kind, catalog.target, catalog.sub_buses, strict=True):
        act = _cpp.TopoAction()
        if k == KIND_LINE:
            act.set_line_status(int(target), -1)
        elif k == KIND_SUB:
            lo = int(layout.sub_start[target])
            for offset, bus in enumerate(buses):
                el_type, el_id = owner[lo + offset]
                act.add_element(el_type, el_id, int(bus))
        actions.append(act)
    return actions


def build_light_env(env: Any, scenario_id: int) -> Any:
    """A LightEnv (not reset yet) on GridEnv ``env``'s grid, playing scenario ``scenario_id``
    of its source whole, with its thermal limits, rules and action catalog."""
    model = env.model
    is_sgen = model.gen_kind == "sgen"
    if is_sgen.any():
        raise ValueError(f"{model.name!r} has static generators: LightEnv does not replay them")
    grid = LightSimGrid(model).new_grid()
    source = env._handler.source
    inj = source.read(scenario_id, 0, source.info(scenario_id).length)
    gen_v_pu = inj.gen_v / model.sub_vn_kv[model.gen_sub]  # LightEnv wants p.u.

    def empty(n: int) -> np.ndarray:
        return np.zeros((len(inj), n))

    light = _cpp.LightEnv(grid)
    n_shunt, n_sgen = len(grid.get_shunts()), len(grid.get_static_generators())
    light.assign_time_series(
        *(np.ascontiguousarray(a, dtype=np.float64) for a in (inj.load_p, inj.load_q)),
        *(np.ascontiguousarray(a[:, ~is_sgen], dtype=np.float64) for a in (inj.gen_p, gen_v_pu)),
        empty(len(grid.get_storages())),
        empty(n_shunt),
        empty(n_shunt),
        empty(n_sgen),
        empty(n_sgen),
    )
    p = env.parameters
    protections = _cpp.Protections()
    # kA; LightEnv counts an overflow at rho >= 1, GridEnv above soft_overflow_threshold
    protections.set_thermal_limit_or(env.thermal_limit * p.soft_overflow_threshold / 1000.0)
    protections.set_thermal_limit_ex(np.full(model.n_branch, np.inf))
    allowed = _NEVER if p.no_overflow_disconnection else p.nb_timestep_overflow_allowed
    protections.set_max_line_time_step_overflow(np.full(model.n_branch, allowed, np.int32))
    light.protections = protections
    light.nb_timestep_reconnection = p.nb_timestep_reconnection
    light.nb_timestep_cooldown_line = p.nb_timestep_cooldown_line
    light.nb_timestep_cooldown_sub = p.nb_timestep_cooldown_sub
    light.init_actions(catalog_actions(env))
    return light


class LightEnvSession:
    """One LightEnv playing the scenario GridEnv ``env`` plays first after ``reset(seed)``;
    an episode that ends is reset within the timed steps (``episodes`` counts them)."""

    def __init__(self, env: Any, seed: int) -> None:
        env.reset(seed=seed)
        self.light = build_light_env(env, env.scenario_info.id)
        self.light.reset()
        self.num_envs, self.seed, self.n_actions = 1, seed, len(env.catalog)
        self.episodes = 0

    def runner(self, mode: str) -> Callable[[int], int]:
        table = action_table(self.n_actions, 1, mode, self.seed)[:, 0].tolist()
        step, reset, turn = self.light.step, self.light.reset, [0]

        def run(k: int) -> int:
            t = turn[0]
            for i in range(t, t + k):
                if step(table[i % ACTION_ROWS])[2]:
                    reset()
                    self.episodes += 1
            turn[0] = t + k
            return k

        return run

    def close(self) -> None:
        pass

"""Graph observations: the grid as buses (nodes) joined by branches (edges).

``make(..., observation="graph")`` and ``make_vec(..., observation="graph")`` give observations
of this form instead of the flat vector. They are a view of the flat observation
(:mod:`grid_vec.core.observation`), computed from it batch-wise with numpy: every value of the
graph is a value of the flat observation, summed per bus where several elements share one.

Nodes are bus bars: ``2 * S`` of them for ``S`` substations, node ``s`` the bus bar 1 of
substation ``s`` and node ``S + s`` its bus bar 2 (lightsim2grid's and grid2op's bus
numbering). A bus bar nothing is connected to is a node of zeros but for ``bus_bar_2`` and
``time_before_cooldown_sub``: the node count never changes, so vector envs batch the arrays.

==================== ==========================================================================
``nodes[:, f]``      feature ``f`` of :data:`NODE_FEATURES`, per bus bar
==================== ==========================================================================
connected            1 when an element end is on the bus bar
load_p, load_q       MW, MVAr drawn by the loads on it (summed)
gen_p, gen_q         MW, MVAr of the generators on it (summed)
actual_dispatch      MW of redispatch of the generators on it (summed)
v                    kV of the bus bar (the voltage its elements read; 0 when nothing is on it)
bus_bar_2            1 for the second bus bar of a substation
time_before_cooldown_sub  steps before the substation can be reconfigured
elements             element ends on the bus bar
==================== ==========================================================================

Edges are the branches (lines, then transformers), one per branch whether connected or not:
``edges[b, f]`` is feature ``f`` of :data:`EDGE_FEATURES` (the flat observation's branch
segments of the same names) and ``edge_index[:, b]`` the bus bars of its origin and extremity.
A disconnected end is put on bus bar 1 of its substation: a model that wants only the
connected branches drops the edges whose ``line_status`` is 0 (see
:func:`connected_edges`). ``globals`` holds the clock (:data:`GLOBAL_FEATURES`).

PyTorch Geometric: ``Data(x=nodes, edge_index=edge_index, edge_attr=edges)`` of one
observation (``torch.as_tensor`` of each array; a batch of ``k`` is ``k`` such ``Data``, or
one graph with the edge indices of row ``i`` offset by ``i * n_node``);
``connected_edges(obs)`` gives the connected branches' arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import RecordConstructorArgs
from gymnasium.vector import VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space

from grid_vec.core.observation import TIME_SEGMENTS, ObservationLayout
from grid_vec.core.topology import TopologyLayout
from grid_vec.grid.model import GridModel

OBSERVATIONS = ("flat", "graph")
NODE_FEATURES = (
    "connected", "load_p", "load_q", "gen_p", "gen_q", "actual_dispatch", "v", "bus_bar_2",
    "time_before_cooldown_sub", "elements",
)  # fmt: skip
EDGE_FEATURES = (
    "rho", "line_status", "p_or", "q_or", "v_or", "a_or", "p_ex", "q_ex", "v_ex", "a_ex",
    "timestep_overflow", "time_before_cooldown_line", "time_next_maintenance",
    "duration_next_maintenance",
)  # fmt: skip
GLOBAL_FEATURES = TIME_SEGMENTS
_NONNEGATIVE_NODE = {"connected", "v", "bus_bar_2", "time_before_cooldown_sub", "elements"}


@dataclass(frozen=True, eq=False)
class GraphLayout:
    """How a grid's flat observations become graphs (see the module docstring).

    Args:
        obs: the flat observation's layout (the default one: every segment the graph reads).
        topology: the topology vector's positions.
        model: the compiled grid.
    """

    obs: ObservationLayout
    topology: TopologyLayout
    model: GridModel

    def __post_init__(self) -> None:
        missing = [
            name
            for name in (*EDGE_FEATURES, *GLOBAL_FEATURES, "topo_vect", "load_p", "gen_p")
            if name not in self.obs.slices
        ]
        if missing:
            raise ValueError(
                "observation='graph' reads the default observation; observation_attributes "
                f"leaves out {', '.join(missing)}"
            )

    @property
    def n_node(self) -> int:
        return 2 * self.model.n_sub

    @property
    def n_edge(self) -> int:
        return self.model.n_branch

    def space(self) -> spaces.Dict:
        """The observation space of one graph: ``nodes``, ``edges``, ``edge_index``, ``globals``."""
        low, high = self.obs.bounds()
        node_low = np.array(
            [0.0 if f in _NONNEGATIVE_NODE else -np.inf for f in NODE_FEATURES], np.float32
        )
        node_high = np.full(len(NODE_FEATURES), np.inf, np.float32)
        node_high[[NODE_FEATURES.index("connected"), NODE_FEATURES.index("bus_bar_2")]] = 1.0
        edge_low = np.array([low[self.obs.slices[f].start] for f in EDGE_FEATURES], np.float32)
        edge_high = np.array([high[self.obs.slices[f].start] for f in EDGE_FEATURES], np.float32)
        time_low = np.array([low[self.obs.slices[f].start] for f in GLOBAL_FEATURES], np.float32)
        n, b = self.n_node, self.n_edge
        return spaces.Dict(
            {
                "nodes": spaces.Box(
                    np.tile(node_low, (n, 1)), np.tile(node_high, (n, 1)), dtype=np.float32
                ),
                "edges": spaces.Box(
                    np.tile(edge_low, (b, 1)), np.tile(edge_high, (b, 1)), dtype=np.float32
                ),
                "edge_index": spaces.Box(0, n - 1, shape=(2, b), dtype=np.int64),
                "globals": spaces.Box(
                    time_low, np.full(len(GLOBAL_FEATURES), np.inf, np.float32), dtype=np.float32
                ),
            }
        )

    def encode(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """The graphs of a batch of flat observations.

        Args:
            flat: ``(k, size)`` flat observations (or one, ``(size,)``).

        Returns:
            ``nodes`` ``(k, n_node, F_node)``, ``edges`` ``(k, n_edge, F_edge)``,
            ``edge_index`` ``(k, 2, n_edge)`` int64, ``globals`` ``(k, 7)`` (without the
            leading axis for one observation).
        """
        flat = np.asarray(flat, dtype=np.float32)
        if flat.ndim == 1:
            return {key: value[0] for key, value in self.encode(flat[None]).items()}
        k, n_sub, n_node = len(flat), self.model.n_sub, self.n_node
        seg = self.obs.slices
        topo = flat[:, seg["topo_vect"]].astype(np.int64)
        # every element end: (its position in topo_vect, its substation, values summed on
        # its bus per node feature); the voltage is averaged over the ends on the bus
        model, layout = self.model, self.topology
        ends = [
            (layout.pos_load, model.load_sub, {"load_p": "load_p", "load_q": "load_q"}, "load_v"),
            (
                layout.pos_gen,
                model.gen_sub,
                {"gen_p": "gen_p", "gen_q": "gen_q", "actual_dispatch": "actual_dispatch"},
                "gen_v",
            ),
            (layout.pos_or, model.branch_or_sub, {}, "v_or"),
            (layout.pos_ex, model.branch_ex_sub, {}, "v_ex"),
        ]
        nodes = np.zeros((k, n_node, len(NODE_FEATURES)), dtype=np.float64)
        flat_nodes = nodes.reshape(k * n_node, -1)
        rows = np.arange(k)[:, None] * n_node
        v_sum = np.zeros(k * n_node)
        column = {name: j for j, name in enumerate(NODE_FEATURES)}
        for positions, subs, summed, voltage in ends:
            bars = topo[:, positions]
            on = bars > 0
            index = (rows + subs + (bars - 1) * n_sub)[on]
            flat_nodes[:, column["elements"]] += np.bincount(index, minlength=k * n_node)
            for feature, segment in summed.items():
                values = flat[:, seg[segment]][on]
                flat_nodes[:, column[feature]] += np.bincount(
                    index, weights=values, minlength=k * n_node
                )
            v_sum += np.bincount(index, weights=flat[:, seg[voltage]][on], minlength=k * n_node)
        count = flat_nodes[:, column["elements"]]
        flat_nodes[:, column["v"]] = np.divide(
            v_sum, count, out=np.zeros_like(v_sum), where=count > 0
        )
        flat_nodes[:, column["connected"]] = count > 0
        nodes[:, n_sub:, column["bus_bar_2"]] = 1.0
        cooldown = flat[:, seg["time_before_cooldown_sub"]]
        nodes[:, :, column["time_before_cooldown_sub"]] = np.concatenate([cooldown, cooldown], 1)
        edges = np.stack([flat[:, seg[f]] for f in EDGE_FEATURES], axis=-1)
        bar_or = np.maximum(topo[:, layout.pos_or], 1) - 1
        bar_ex = np.maximum(topo[:, layout.pos_ex], 1) - 1
        edge_index = np.stack(
            [model.branch_or_sub + bar_or * n_sub, model.branch_ex_sub + bar_ex * n_sub], axis=1
        ).astype(np.int64)
        return {
            "nodes": nodes.astype(np.float32),
            "edges": edges.astype(np.float32),
            "edge_index": edge_index,
            "globals": np.stack([flat[:, seg[f]][:, 0] for f in GLOBAL_FEATURES], axis=-1),
        }


def graph_layout(env: Any) -> GraphLayout:
    """The graph layout of a GridEnv (its flat observation, topology and grid)."""
    return GraphLayout(env.obs_layout, env.topology, env.model)


def connected_edges(obs: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The ``edge_index`` and ``edges`` of the connected branches of one graph observation
    (those whose ``line_status`` is 1), as a graph library takes them."""
    keep = obs["edges"][:, EDGE_FEATURES.index("line_status")] > 0.5
    return obs["edge_index"][:, keep], obs["edges"][keep]


class GraphObservation(gymnasium.ObservationWrapper, RecordConstructorArgs):
    """A GridEnv whose observations are graphs (see the module docstring).

    The GridEnv's attributes stay reachable (``env.unwrapped``, ``env.get_wrapper_attr``);
    ``simulate`` and the recorded runs keep the flat observation.

    Args:
        env: a GridEnv with the default flat observation.

    Raises:
        ValueError: the env's observation leaves out a segment the graph reads.
    """

    def __init__(self, env: gymnasium.Env) -> None:
        RecordConstructorArgs.__init__(self)  # env.spec names the wrapper: make rebuilds it
        gymnasium.ObservationWrapper.__init__(self, env)
        self.graph = graph_layout(env.unwrapped)
        self.observation_space = self.graph.space()

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        return self.graph.encode(observation)


class GraphVectorObservation(VectorWrapper):
    """A vector env of GridEnvs whose observations are graphs, batched: every array gets the
    sub-envs' leading axis (``nodes``: ``(num_envs, n_node, F_node)``, ...). The sub-envs
    send their flat observations (through the workers' shared memory for a GridVecEnv) and the
    graphs are computed here, for the whole batch at once. A ``SAME_STEP`` autoreset's
    ``infos["final_obs"]`` are graphs too. The vector env's grid commands
    (``simulate_candidates``, ``get_state``, ...) are reachable through the wrapper and answer
    as the wrapped env does (flat observations).

    Args:
        env: a vector env of GridEnvs (``make_vec``'s).
        layout: the sub-envs' graph layout.
    """

    def __init__(self, env: VectorEnv, layout: GraphLayout) -> None:
        super().__init__(env)
        self.graph = layout
        self.single_observation_space = layout.space()
        self.observation_space = batch_space(self.single_observation_space, env.num_envs)

    def __getattr__(self, name: str) -> Any:
        # the grid commands of grid_vec's vector envs (gymnasium's VectorWrapper forwards
        # only its own API)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return self.graph.encode(obs), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return self.graph.encode(obs), rewards, terminated, truncated, self._final_graphs(infos)

    def recv(self) -> Any:
        """Pool mode (the wrapped env's ``recv``), the observations as graphs.

        Returns:
            The wrapped env's ``PoolBatch``, its observations (and ``final_obs``) graphs.
        """
        batch = self.env.recv()
        return batch._replace(
            observations=self.graph.encode(batch.observations),
            infos=self._final_graphs(batch.infos),
        )

    def _final_graphs(self, infos: dict[str, Any]) -> dict[str, Any]:
        """``infos`` with a ``SAME_STEP`` autoreset's ``final_obs`` (the ended episodes' last
        observations) as graphs."""
        if "final_obs" not in infos:
            return infos
        infos = dict(infos)
        flat = infos["final_obs"]
        ended = np.flatnonzero(infos.get("_final_obs", np.zeros(len(flat), bool)))
        final = np.empty(len(flat), dtype=object)
        for i in ended.tolist():
            final[i] = self.graph.encode(np.asarray(flat[i], np.float32))
        infos["final_obs"] = final
        return infos

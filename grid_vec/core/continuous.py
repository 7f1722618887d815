"""The continuous part of an action: where each control (redispatch, curtailment, storage)
lies in the flat float vector an agent gives, its bounds, its check and its split into what
the batched core plays (MW of redispatch per generator, curtailment limits per generator, MW
of storage per unit). The gymnasium spaces built on these bounds are in
:mod:`grid_vec.env.action_input`.

Action types (``GridEnv(action_type=...)``, :data:`ACTION_TYPES`):

* ``"discrete"``: ``Discrete`` over the topology catalog
  (:class:`~grid_vec.core.actions.ActionCatalog`);
* ``"redispatch"``: ``Box`` of the MW asked of each dispatchable generator this step, within
  ``[-max_ramp_down, max_ramp_up]`` (grid2op's ``redispatch``: it adds to the target);
* ``"curtailment"``: ``Box`` of each renewable generator's curtailment limit in ``[0, 1]``
  (a ratio of its pmax; 1 lifts it), set every step;
* ``"storage"``: ``Box`` of the MW asked of each storage unit this step, within
  ``[-max_p_prod, max_p_absorb]`` (load convention: ``> 0`` charges; grid2op's
  ``set_storage``: 0, or a unit not asked, takes nothing that step);
* ``"continuous"``: all of them in one flat ``Box``, in this column order: redispatch (one
  column per dispatchable generator), curtailment (one per renewable generator), storage
  (one per storage unit, only on a grid with storage units).
* ``"combined"``: ``Dict(topology=Discrete, continuous=Box)``, a catalog action and a
  ``"continuous"`` one in the same step (grid2op plays both parts of one action).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from grid_vec.core.rules.dispatch import GeneratorLimits
from grid_vec.core.rules.storage import StorageUnits

ACTION_TYPES = ("discrete", "redispatch", "curtailment", "storage", "continuous", "combined")
_CONTROLS = {
    "redispatch": ("redispatch",),
    "curtailment": ("curtailment",),
    "storage": ("storage",),
    "continuous": ("redispatch", "curtailment", "storage"),
    "combined": ("redispatch", "curtailment", "storage"),
}
_TOL = 1e-5  # actions this far outside the box are accepted (float32 rounding)


class RefusedActions(ValueError):
    """Actions outside the action space; ``rows`` holds the positions, in the batch, of the
    envs whose action is refused (``(0,)`` for one env's action), so that a vector env can
    name them.

    Args:
        message: what is refused and why.
        refused: a bool array, True where a value is refused: ``(k, ...)`` for a batch of
            ``k`` actions, one dimension less for one action.
    """

    def __init__(self, message: str, refused: np.ndarray) -> None:
        super().__init__(message)
        rows = np.atleast_2d(refused)
        self.rows = tuple(np.flatnonzero(rows.reshape(len(rows), -1).any(axis=1)).tolist())


@dataclass(frozen=True, eq=False)
class ContinuousLayout:
    """Where each control lies in a continuous action, and its bounds."""

    controls: tuple[str, ...]  # among "redispatch", "curtailment", "storage", in this order
    n_gen: int
    redispatch_gens: np.ndarray  # generators of the redispatch columns
    curtail_gens: np.ndarray  # generators of the curtailment columns
    low: np.ndarray  # (size,) float32
    high: np.ndarray  # (size,) float32
    n_storage: int = 0  # storage columns (the last ones), one per unit

    @classmethod
    def of(
        cls, action_type: str, limits: GeneratorLimits, storage: StorageUnits | None = None
    ) -> ContinuousLayout | None:
        """The layout of a continuous ``action_type`` (None for ``"discrete"``) on a grid
        with these generators and storage units (None: none).

        Raises:
            ValueError: an unknown action type, a redispatch or curtailment on a grid
                without the generators' characteristics (a folder without
                ``prods_charac.csv``), or ``"storage"`` on a grid without storage units.
        """
        if action_type not in ACTION_TYPES:
            raise ValueError(f"action_type must be one of {ACTION_TYPES}, got {action_type!r}")
        if action_type == "discrete":
            return None
        has_storage = storage is not None and storage.n > 0
        if action_type == "storage" and not has_storage:
            raise ValueError("action_type='storage' needs storage units, this grid has none")
        controls = tuple(c for c in _CONTROLS[action_type] if c != "storage" or has_storage)
        if not limits.available and controls != ("storage",):
            raise ValueError(
                f"action_type={action_type!r} needs the generators' characteristics "
                "(prods_charac.csv), which this grid does not have"
            )
        redisp = np.flatnonzero(limits.redispatchable) if "redispatch" in controls else []
        curtail = np.flatnonzero(limits.renewable) if "curtailment" in controls else []
        redisp, curtail = np.asarray(redisp, dtype=np.intp), np.asarray(curtail, dtype=np.intp)
        n_storage = storage.n if "storage" in controls else 0
        low = [-limits.ramp_down[redisp], np.zeros(len(curtail))]
        high = [limits.ramp_up[redisp], np.ones(len(curtail))]
        if n_storage:
            low.append(-storage.max_p_prod)
            high.append(storage.max_p_absorb)
        return cls(
            controls,
            len(limits.pmax),
            redisp,
            curtail,
            np.concatenate(low).astype(np.float32),
            np.concatenate(high).astype(np.float32),
            n_storage,
        )

    @property
    def size(self) -> int:
        return len(self.low)

    # the bounds with their tolerance, finite (an infinite bound becomes the largest float):
    # then values within them are finite too, and one test of the bounds makes the check
    @cached_property
    def _low_tol(self) -> np.ndarray:
        return np.maximum(self.low - _TOL, np.finfo(self.low.dtype).min)

    @cached_property
    def _high_tol(self) -> np.ndarray:
        return np.minimum(self.high + _TOL, np.finfo(self.high.dtype).max)

    def split(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """(k, size) checked actions -> (k, n_gen) redispatch MW, (k, n_gen) curtailment
        limits (NaN off the renewables) and (k, n_storage) storage MW, None for a control
        this layout does not have."""
        k, n_r, n_c = len(actions), len(self.redispatch_gens), len(self.curtail_gens)
        redispatch = curtail = storage = None
        if "redispatch" in self.controls:
            redispatch = np.zeros((k, self.n_gen))
            redispatch[:, self.redispatch_gens] = actions[:, :n_r]
        if "curtailment" in self.controls:
            curtail = np.full((k, self.n_gen), np.nan)
            curtail[:, self.curtail_gens] = actions[:, n_r : n_r + n_c]
        if "storage" in self.controls:
            storage = actions[:, n_r + n_c :].astype(np.float64)
        return redispatch, curtail, storage

    def check(self, actions: np.ndarray, what: str) -> None:
        """Raise :class:`RefusedActions` (naming ``what``) unless ``actions`` (one, or a
        batch) are finite and within the bounds, give or take 1e-5."""
        if ((actions >= self._low_tol) & (actions <= self._high_tol)).all():  # NaN, inf fail
            return
        finite = np.isfinite(actions)
        if not finite.all():
            raise RefusedActions(f"{what} must be finite, got {actions}", ~finite)
        outside = (actions < self._low_tol) | (actions > self._high_tol)
        if outside.any():  # always, past the checks above
            raise RefusedActions(
                f"{what} outside the action space (ramp limits, curtailment in [0, 1], "
                "storage in [-max_p_prod, max_p_absorb]): "
                f"low {self.low}, high {self.high}, got {actions}",
                outside,
            )

    def grid2op_action(self, action: np.ndarray) -> dict[str, list[tuple[int, float]]]:
        """One continuous action in grid2op's vocabulary (the dict its ``action_space``
        takes): ``redispatch``, ``curtail`` and ``set_storage`` on every generator / unit of
        the box."""
        n_r, n_c = len(self.redispatch_gens), len(self.curtail_gens)
        out: dict[str, list[tuple[int, float]]] = {}
        if "redispatch" in self.controls:
            pairs = zip(self.redispatch_gens, action[:n_r], strict=True)
            out["redispatch"] = [(int(g), float(v)) for g, v in pairs]
        if "curtailment" in self.controls:
            pairs = zip(self.curtail_gens, action[n_r : n_r + n_c], strict=True)
            out["curtail"] = [(int(g), float(v)) for g, v in pairs]
        if "storage" in self.controls and len(action) > n_r + n_c:
            out["set_storage"] = [(i, float(v)) for i, v in enumerate(action[n_r + n_c :])]
        return out

    def describe(
        self, action: np.ndarray, gen_names: np.ndarray, storage_names: np.ndarray = ()
    ) -> str:
        """One continuous action in words: the generators it moves or curtails, the storage
        units it charges or discharges."""
        n_r, n_c = len(self.redispatch_gens), len(self.curtail_gens)
        parts = [
            f"redispatch {gen_names[g]} {float(mw):+.2f} MW"
            for g, mw in zip(self.redispatch_gens, action[:n_r], strict=True)
            if mw != 0
        ]
        parts += [
            f"curtail {gen_names[g]} to {float(r):.0%} of pmax"
            for g, r in zip(self.curtail_gens, action[n_r : n_r + n_c], strict=True)
            if r < 1
        ]
        parts += [
            f"{'charge' if mw > 0 else 'discharge'} {storage_names[u]} {abs(float(mw)):.2f} MW"
            for u, mw in enumerate(action[n_r + n_c :].tolist())
            if mw != 0
        ]
        return "; ".join(parts) or "do nothing"

"""The named records at the batched core's seams: what a step is given
(:class:`ActionBatch`), what it gives (:class:`StepBatch`), and the layout of its infos,
defined once here for every reader (one env's info dict, the batched vector env's info
columns, the heuristics' folding of the env's own steps into the agent's).

The info of a step (:func:`env_info` for one env; the vector envs lay the same keys out as
columns, gymnasium's ``_add_info`` way):

* the fixed columns (:data:`INFO_COLUMNS`), on every step: ``is_illegal``, ``is_ambiguous``,
  ``tripped_branches`` (a mask per branch), ``attacked_branch`` (-1: none);
* the reasons (:data:`REASONS`), text only on the steps they explain: ``illegal_reason``,
  ``ambiguous_reason``, ``game_over_reason``, ``failed_redispatch_reason`` (grid2op's
  ``failed_redispatching``: the action was played as do-nothing);
* ``other_rewards`` (a dict of floats) when some are configured, ``action_mask`` (the legal
  catalog actions now) when the env gives it, ``skipped_steps`` (the steps the env played on
  its own) under heuristics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Literal

import numpy as np


@dataclass(frozen=True)
class Control:
    """What the layers between an agent and a control's rule know of a continuous control,
    declared once with its field of :class:`ActionBatch`: the layout of its columns in a
    flat continuous action (:mod:`grid_vec.core.continuous` reads these to build the
    ``Box``, check actions and split them), its do-nothing value and its words.

    Args:
        action_type: the action type of this control alone (``GridEnv(action_type=...)``).
        on: what it acts on, one value per entity: ``"generator"`` (the core's array is
            ``(k, n_gen)``; the characteristics are a ``GeneratorLimits``) or
            ``"storage"`` (``(k, n_storage)``; a ``StorageUnits``).
        columns: characteristics -> the entities with a column (indices, in order).
        bounds: (characteristics, columns) -> the (low, high) bounds of the columns.
        neutral: the value of an entity without a column, and of a refused action.
        grid2op_key: its key in grid2op's action dict (``action_space({...})``).
        limits: its bounds in words, for the error refusing an action outside them.
        words: (entity name, value) -> the value in words, None where it does nothing.
        unchanged_below: a column's value below it leaves its entity as it is (played as
            ``neutral``, given to grid2op as nothing asked); None: every value in the bounds
            acts.
        do_nothing: the column value that changes nothing (a do-nothing agent's).
    """

    action_type: str
    on: Literal["generator", "storage"]
    columns: Callable[[Any], np.ndarray]
    bounds: Callable[[Any, np.ndarray], tuple[np.ndarray, np.ndarray]]
    neutral: float
    grid2op_key: str
    limits: str
    words: Callable[[str, float], str | None]
    unchanged_below: float | None = None
    do_nothing: float = 0.0

    def asks(self, values: np.ndarray) -> np.ndarray:
        """Where column ``values`` ask something of their entity (bool, the same shape): all
        of them, but those below :attr:`unchanged_below`."""
        if self.unchanged_below is None:
            return np.ones(np.shape(values), dtype=bool)
        return np.asarray(values) >= self.unchanged_below


def _redispatch_bounds(limits: Any, gens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return -limits.ramp_down[gens], limits.ramp_up[gens]


def _redispatch_words(name: str, mw: float) -> str | None:
    return f"redispatch {name} {mw:+.2f} MW" if mw != 0 else None


# a curtailment column below this leaves the limit as it is (see CURTAILMENT): 0, less the
# float32 rounding every box accepts beyond its bounds (continuous._TOL)
_CURTAIL_UNCHANGED_BELOW = -1e-5


def _curtail_words(name: str, ratio: float) -> str | None:
    # unchanged: the limit left as it is; 1: lifted (no curtailment, nothing to say either)
    if not _CURTAIL_UNCHANGED_BELOW <= ratio < 1:
        return None
    return f"curtail {name} to {max(ratio, 0.0):.0%} of pmax"


def _storage_words(name: str, mw: float) -> str | None:
    if mw == 0:
        return None
    return f"{'charge' if mw > 0 else 'discharge'} {name} {abs(mw):.2f} MW"


REDISPATCH = Control(
    action_type="redispatch",
    on="generator",
    columns=lambda limits: np.flatnonzero(limits.redispatchable),
    bounds=_redispatch_bounds,
    neutral=0.0,
    grid2op_key="redispatch",
    limits="ramp limits",
    words=_redispatch_words,
)
# A curtailment column is a limit in [0, 1] (a ratio of pmax; 1 lifts it) or, below 0 (down
# to -1, grid2op's own "unchanged"), the limit left as it is, as grid2op's ``curtail`` leaves
# the generators it gives -1. Not an exact sentinel: a continuous policy (a Gaussian, a
# uniform sample of the space) never hits one value but by clipping at a bound, and grid2op
# finds any other negative value ambiguous (the whole action dropped), so the half of the box
# below 0 would be refused or do nothing at all, to a random agent and to training alike.
# Below 0 all reads "unchanged"; a value in [0, 1] plays as it always did (a policy trained
# on [0, 1], which maps its actions onto its own bounds, plays as before), and so does one
# within the float32 rounding below 0 that the [0, 1] box accepted: "unchanged" starts past
# it (_CURTAIL_UNCHANGED_BELOW). grid2op is given nothing for such a column
# (ContinuousLayout.grid2op_action): its -1, never a value of (-1, 0) it would refuse.
CURTAILMENT = Control(
    action_type="curtailment",
    on="generator",
    columns=lambda limits: np.flatnonzero(limits.renewable),
    bounds=lambda limits, gens: (-np.ones(len(gens)), np.ones(len(gens))),
    neutral=np.nan,  # NaN: the limit unchanged
    grid2op_key="curtail",
    limits="curtailment in [0, 1], or < 0 (down to -1) for unchanged",
    words=_curtail_words,
    unchanged_below=_CURTAIL_UNCHANGED_BELOW,
    do_nothing=-1.0,  # unchanged (0 would curtail every renewable generator to nothing)
)
STORAGE = Control(
    action_type="storage",
    on="storage",
    columns=lambda units: np.arange(units.n),
    bounds=lambda units, _: (-units.max_p_prod, units.max_p_absorb),
    neutral=0.0,
    grid2op_key="set_storage",
    limits="storage in [-max_p_prod, max_p_absorb]",
    words=_storage_words,
)


@dataclass(slots=True, eq=False)  # not frozen: a frozen record costs 3 times as much to build
class ActionBatch:
    """The agents' actions of ``k`` envs, as the core plays them: a catalog action per env
    and the continuous controls the action type has (None: not in the action). Never
    written once built: a rule that changes an action builds a new record.

    A control is a field with its :class:`Control` (in the field's metadata); adding one
    (an action type that acts on something new) is its field and declaration here, its rule
    (a module of :mod:`grid_vec.core.rules`) and the rule's call in its phase of
    :mod:`grid_vec.core.turn`. Everything in between (the spaces, the checks, the split of a
    flat action, refusal, slicing by env, the vector envs) reads the declarations.

    A general topology action (action type ``"set_bus"``, grid2op's ``set_bus`` and
    ``set_line_status``) is the pair ``set_bus`` / ``set_line_status``, both given or both
    None; its rules are :mod:`grid_vec.core.rules.set_bus`'s.
    """

    topology: np.ndarray  # (k,) int64: agent action indices (catalog ones past the subset)
    # (k, n_elem) int8 bus bar asked of each element end of the topology vector: -1
    # disconnects, 0 leaves it, 1 or 2 puts it there (None: no general topology action)
    set_bus: np.ndarray | None = None
    # (k, n_branch) int8: -1 disconnects the branch, +1 reconnects it, 0 leaves it
    set_line_status: np.ndarray | None = None
    # (k, n_gen) MW asked per generator
    redispatch: np.ndarray | None = field(default=None, metadata={"control": REDISPATCH})
    # (k, n_gen) curtailment limits, ratio of pmax (NaN: unchanged)
    curtail: np.ndarray | None = field(default=None, metadata={"control": CURTAILMENT})
    # (k, n_storage) MW asked per unit (> 0 charges)
    storage: np.ndarray | None = field(default=None, metadata={"control": STORAGE})

    def rows(self, sel: slice | np.ndarray) -> ActionBatch:
        """The actions of some of the envs (``sel``: a slice or positions)."""
        buses = None if self.set_bus is None else (self.set_bus[sel], self.set_line_status[sel])
        return ActionBatch(
            self.topology[sel],
            *(buses or (None, None)),
            **{name: None if v is None else v[sel] for name, v in self.controls().items()},
        )

    def controls(self) -> dict[str, np.ndarray | None]:
        """The continuous controls by field name (None: not in the action)."""
        return {name: getattr(self, name) for name in CONTROLS}

    def neutralised(self, refused: np.ndarray) -> ActionBatch:
        """The same actions with the ``refused`` (k,) rows played as do-nothing: no catalog
        action, each control at its neutral value."""
        column = refused[:, None]
        played = {}
        for name, control in CONTROLS.items():
            value = getattr(self, name)
            played[name] = None if value is None else np.where(column, control.neutral, value)
        return ActionBatch(
            np.where(refused, 0, self.topology), *self._buses_without(refused), **played
        )

    def setting_buses(self) -> np.ndarray:
        """(k,) bool: the rows whose general topology action asks something (all False
        without one)."""
        if self.set_bus is None:
            return np.zeros(len(self.topology), dtype=bool)
        return self.set_bus.any(axis=1) | self.set_line_status.any(axis=1)

    def without_topology(self, undone: np.ndarray) -> ActionBatch:
        """The same actions with the topology part of the ``undone`` (k,) rows played as
        do-nothing (the catalog action and the general topology action; the controls kept)."""
        return ActionBatch(
            np.where(undone, 0, self.topology),
            *self._buses_without(undone),
            **self.controls(),
        )

    def _buses_without(self, rows: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The general topology action with ``rows`` asking nothing (None: there is none)."""
        if self.set_bus is None:
            return None, None
        column = rows[:, None]
        return (
            np.where(column, 0, self.set_bus).astype(np.int8),
            np.where(column, 0, self.set_line_status).astype(np.int8),
        )


# every continuous control by its ActionBatch field, in the columns' order
CONTROLS: dict[str, Control] = {
    f.name: f.metadata["control"] for f in fields(ActionBatch) if "control" in f.metadata
}


@dataclass(kw_only=True)  # built by name: fourteen fields, several of one type
class StepBatch:
    """What a step (or reset, or simulate) of some envs gives, one row per env played."""

    obs: np.ndarray  # (k, obs size) float32
    reward: np.ndarray  # (k,) float64
    terminated: np.ndarray  # (k,) bool
    truncated: np.ndarray  # (k,) bool
    is_illegal: np.ndarray  # (k,) bool
    is_ambiguous: np.ndarray  # (k,) bool
    tripped: np.ndarray  # (k, n_branch) bool: branches the protections tripped
    attacked: np.ndarray  # (k,) int64: branch the opponent attacked this step, -1: none
    other_rewards: dict[str, np.ndarray] = field(default_factory=dict)
    # the reasons, only for the rows they explain: row -> text
    illegal_reason: dict[int, str] = field(default_factory=dict)
    ambiguous_reason: dict[int, str] = field(default_factory=dict)
    game_over_reason: dict[int, str] = field(default_factory=dict)
    failed_redispatch_reason: dict[int, str] = field(default_factory=dict)  # action undone
    action_mask: np.ndarray | None = None  # (k, n_catalog) bool: legal now (if asked for)
    # (k, n_actions) bool: the agent actions whose simulated next step is safe (if asked for)
    safe_mask: np.ndarray | None = None
    skipped: np.ndarray | None = None  # (k,) int64: steps the heuristics played (if any)

    @classmethod
    def quiet(
        cls,
        obs: np.ndarray,
        n_branch: int,
        *,
        other_rewards: tuple[str, ...] = (),
        action_mask: np.ndarray | None = None,
        safe_mask: np.ndarray | None = None,
        skipped: bool = False,
    ) -> StepBatch:
        """The record of ``len(obs)`` envs with nothing to report: rewards 0, nothing
        flagged, tripped or attacked (a reset's, or the layout of every step's info).

        Args:
            obs: the (k, obs size) observations.
            n_branch: branches of the grid (the width of ``tripped``).
            other_rewards: the names of the other rewards (each 0).
            action_mask: the legal catalog actions, when the env gives them.
            safe_mask: the safe agent actions, when the env gives them.
            skipped: give ``skipped`` (0), as an env with heuristics does.
        """
        k = len(obs)
        zeros = np.zeros(k, dtype=bool)
        return cls(
            obs=obs,
            reward=np.zeros(k),
            terminated=zeros,
            truncated=zeros.copy(),
            is_illegal=zeros.copy(),
            is_ambiguous=zeros.copy(),
            tripped=np.zeros((k, n_branch), dtype=bool),
            attacked=np.full(k, -1, dtype=np.int64),
            other_rewards={name: np.zeros(k) for name in other_rewards},
            action_mask=action_mask,
            safe_mask=safe_mask,
            skipped=np.zeros(k, dtype=np.int64) if skipped else None,
        )


# How an env's own step (heuristics) folds into the agent's step it follows: "keep" the
# agent's step's value (the legality of the agent's action), "set" the later step's, "or"
# (the branches either step tripped).
Merge = Literal["keep", "set", "or"]


@dataclass(frozen=True)
class InfoColumn:
    """One fixed-layout entry of a step's info, present on every step.

    Args:
        key: the info key.
        field: the :class:`StepBatch` attribute holding it, one row per env.
        dtype: the type of one env's value (``bool`` or ``int``) and of the vector envs'
            column.
        per_branch: one value per branch (an array per env) instead of a scalar.
        merge: how an env's own step folds into the agent's (see :data:`Merge`).
    """

    key: str
    field: str
    dtype: type
    per_branch: bool = False
    merge: Merge = "set"


INFO_COLUMNS: tuple[InfoColumn, ...] = (
    InfoColumn("is_illegal", "is_illegal", bool, merge="keep"),
    InfoColumn("is_ambiguous", "is_ambiguous", bool, merge="keep"),
    InfoColumn("tripped_branches", "tripped", bool, per_branch=True, merge="or"),
    InfoColumn("attacked_branch", "attacked", int),
)

# INFO_COLUMNS as plain tuples and one reader of their fields, for env_info (run at every
# step of every GridEnv)
_COLUMN_READS = tuple((c.key, c.dtype, c.per_branch) for c in INFO_COLUMNS)
_read_columns = attrgetter(*(c.field for c in INFO_COLUMNS))

# the reasons (info key = StepBatch attribute: row -> text) and how they fold, as above
REASONS: dict[str, Merge] = {
    "illegal_reason": "keep",
    "ambiguous_reason": "keep",
    "game_over_reason": "set",
    "failed_redispatch_reason": "set",
}
_read_reasons = attrgetter(*REASONS)


def has_reasons(result: StepBatch) -> bool:
    """Whether some env's info holds a reason (an entry beyond the fixed layout)."""
    return any(_read_reasons(result))


def env_info(result: StepBatch, j: int) -> dict[str, Any]:
    """The info dict of row ``j`` of a step, as a single env gives it (see the module
    docstring): fixed-shape entries only, so that vector envs batch it cheaply.

    Args:
        result: the step of some envs.
        j: the row (position in ``result``) of the env.

    Returns:
        The env's info: the fixed columns, then what is present of the rest.
    """
    info: dict[str, Any] = {}
    for (key, dtype, per_branch), values in zip(_COLUMN_READS, _read_columns(result), strict=True):
        info[key] = values[j].copy() if per_branch else dtype(values[j])
    if result.other_rewards:
        info["other_rewards"] = {k: float(v[j]) for k, v in result.other_rewards.items()}
    reasons = _read_reasons(result)
    if any(reasons):  # usually all empty: test that first
        for key, texts in zip(REASONS, reasons, strict=True):
            if j in texts:
                info[key] = texts[j]
    if result.action_mask is not None:
        info["action_mask"] = result.action_mask[j].copy()
    if result.safe_mask is not None:
        info["safe_mask"] = result.safe_mask[j].copy()
    if result.skipped is not None:
        info["skipped_steps"] = int(result.skipped[j])
    return info


@dataclass(kw_only=True)
class CandidateResults:
    """What simulating ``K`` candidate actions of each of ``N`` envs gives: one row per env,
    one column per candidate, in the order given (a GridEnv's: ``N`` = 1 dropped, so
    arrays start with ``K``). Each candidate is one step on the forecast of the env's next
    step, from the env's state, which is untouched; with a horizon ``H`` > 1, a sequence of
    ``H`` actions played on the forecasts of the next ``H`` steps, and every array but
    ``played`` has a horizon axis after ``K``: ``[..., h]`` is the outcome after step
    ``h + 1``. A candidate whose game ended, or whose episode had no step left, plays no
    further: its later columns repeat its last step's outcome (``terminated``, ``max_rho``,
    ``overloaded``, ``game_over_reason``, the observation), with reward 0 and no refusal.

    Attributes:
        observations: (N, K, obs size) float32, the observation after each candidate.
        rewards: (N, K) float64.
        terminated: (N, K) bool, a game over.
        illegal: (N, K) bool, refused by the rules (played as do-nothing).
        ambiguous: (N, K) bool, refused as ambiguous (played as do-nothing).
        max_rho: (N, K) float64, the highest flow over thermal limit after the candidate
            (``inf`` where it ends the game: ranking by it puts game overs last).
        overloaded: (N, K) int64, branches with rho > 1 after the candidate.
        game_over_reason: (N, K) object array of str, why the game is over ("" where not).
        played: (N, K) int64, the steps each candidate played (``H`` unless it stopped).
    """

    observations: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    illegal: np.ndarray
    ambiguous: np.ndarray
    max_rho: np.ndarray
    overloaded: np.ndarray
    game_over_reason: np.ndarray
    played: np.ndarray

    @classmethod
    def of(cls, step: StepBatch, rho: np.ndarray, n: int, k: int) -> CandidateResults:
        """The results of ``n * k`` simulated rows (env after env, its ``k`` candidates in a
        row) and their (n * k, n_branch) rho, as (n, k) arrays."""
        terminated = step.terminated
        max_rho = rho.max(axis=1, initial=0.0)
        max_rho[terminated] = np.inf
        overloaded = np.where(terminated, 0, (rho > 1.0).sum(axis=1))
        reasons = np.full(n * k, "", dtype=object)
        for j, text in step.game_over_reason.items():
            reasons[j] = text
        return cls(
            observations=step.obs.reshape(n, k, -1),
            rewards=step.reward.reshape(n, k),
            terminated=terminated.reshape(n, k),
            illegal=step.is_illegal.reshape(n, k),
            ambiguous=step.is_ambiguous.reshape(n, k),
            max_rho=max_rho.reshape(n, k),
            overloaded=overloaded.astype(np.int64).reshape(n, k),
            game_over_reason=reasons.reshape(n, k),
            played=np.ones((n, k), dtype=np.int64),
        )

    @classmethod
    def of_chain(
        cls, chain: Sequence[tuple[StepBatch, np.ndarray, np.ndarray]], n: int, k: int, horizon: int
    ) -> CandidateResults:
        """The results of ``n * k`` candidates chained over ``horizon`` steps, as
        (n, k, horizon, ...) arrays; ``chain``: per step played, the step of the candidates
        still playing, their rho and their positions (sorted) among the ``n * k``."""
        m = n * k
        played = np.zeros(m, dtype=np.int64)
        out: dict[str, np.ndarray] = {}  # every field but played, (m, horizon, ...), in place
        for h in range(horizon):
            if h < len(chain):
                step, rho, playing = chain[h]
                now = cls.of(step, rho, len(playing), 1)
                played[playing] = h + 1
            if h == 0:  # every candidate plays the first step
                for f in _RESULT_FIELDS:
                    first = getattr(now, f)[:, 0]
                    out[f] = np.empty((m, horizon, *first.shape[1:]), dtype=first.dtype)
                    out[f][:, 0] = first
                continue
            # the stopped ones carry their last outcome, reward 0 and no refusal
            for f in _RESULT_FIELDS:
                out[f][:, h] = out[f][:, h - 1]
            out["rewards"][:, h] = 0.0
            out["illegal"][:, h] = out["ambiguous"][:, h] = False
            if h < len(chain):
                for f in _RESULT_FIELDS:
                    out[f][playing, h] = getattr(now, f)[:, 0]
        return cls(
            **{f: a.reshape(n, k, *a.shape[1:]) for f, a in out.items()},
            played=played.reshape(n, k),
        )

    @classmethod
    def joined(cls, parts: Sequence[CandidateResults], n: int, k: int) -> CandidateResults:
        """The results of ``n * k`` candidates given in consecutive parts (each of one env
        row: ``(1, m, ...)`` arrays, the ``m`` summing to ``n * k``), as (n, k, ...) arrays."""

        def whole(name: str) -> np.ndarray:
            joined = np.concatenate([getattr(p, name)[0] for p in parts])
            return joined.reshape(n, k, *joined.shape[1:])

        return cls(**{f.name: whole(f.name) for f in fields(cls)})

    def env(self, i: int) -> CandidateResults:
        """Env ``i``'s results (arrays starting with ``K``)."""
        return CandidateResults(**{f.name: getattr(self, f.name)[i] for f in fields(self)})

    @classmethod
    def stack(cls, per_env: list[CandidateResults]) -> CandidateResults:
        """The results of several envs (each a GridEnv's, arrays starting with ``K``) as
        one record of ``(N, K, ...)`` arrays."""
        return cls(**{f.name: np.stack([getattr(r, f.name) for r in per_env]) for f in fields(cls)})


# the fields of CandidateResults with one value per step played (all but ``played``)
_RESULT_FIELDS = tuple(f.name for f in fields(CandidateResults) if f.name != "played")

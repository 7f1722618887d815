"""The action types (``GridEnv(action_type=...)``): one record per type in one registry,
:data:`ACTION_KINDS`, of what the batched core knows of it: its name, its words, and which
parts its actions have (a catalog index, the general topology action, a continuous part
and its controls). The core reads these parts, never a type's name: the continuous layout
(:mod:`grid_vec.core.continuous`) its controls, the settings' checks
(:mod:`grid_vec.core.config`) whether it has a catalog or redispatch.

The gymnasium face of each type (its space, the check of its actions, their parts, its
do-nothing action) is built on these records by :mod:`grid_vec.env.action_types`, from the
parts alone: a new action type whose actions combine these parts is one entry here (and
its rule in :mod:`grid_vec.core.rules` if it plays something new).

The types, in this order:

* ``"discrete"``: ``Discrete`` over the topology catalog
  (:class:`~grid_vec.core.actions.ActionCatalog`);
* one per continuous control, of that control alone (:data:`~grid_vec.core.records.CONTROLS`,
  each control's own ``action_type``): ``"redispatch"``, ``Box`` of the MW asked of each
  dispatchable generator this step, within ``[-max_ramp_down, max_ramp_up]`` (grid2op's
  ``redispatch``: it adds to the target); ``"curtailment"``, ``Box`` of each renewable
  generator's curtailment limit in ``[0, 1]`` (a ratio of its pmax; 1 lifts it), or a value
  below 0 (the box goes down to -1, grid2op's ``curtail`` value for it) that leaves the
  generator's limit as it is (see :data:`~grid_vec.core.records.CURTAILMENT`): a limit stays
  until set again; ``"storage"``, ``Box`` of the MW asked of each storage unit this step,
  within ``[-max_p_prod, max_p_absorb]`` (load convention: ``> 0`` charges; grid2op's
  ``set_storage``: 0, or a unit not asked, takes nothing that step);
* ``"continuous"``: all of them in one flat ``Box``, in this column order: redispatch (one
  column per dispatchable generator), curtailment (one per renewable generator), storage
  (one per storage unit, only on a grid with storage units);
* ``"combined"``: ``Dict(topology=Discrete, continuous=Box)``, a catalog action and a
  ``"continuous"`` one in the same step (grid2op plays both parts of one action);
* ``"set_bus"``: ``Dict(set_bus=MultiDiscrete, set_line_status=MultiDiscrete)``, grid2op's
  general topology action: a bus bar per element end of the topology vector (-1 off, 0
  unchanged, 1, 2) and a status per branch (-1 off, 0 unchanged, +1 on), played by
  :mod:`grid_vec.core.rules.set_bus`; it has no continuous part;
* ``"set_bus_continuous"``: the general topology action and a ``"continuous"`` one in the
  same step (``Dict(set_bus=..., set_line_status=..., continuous=Box)``): every part of a
  grid2op action grid_vec plays (grid2op's agents play through it).
"""

from __future__ import annotations

from dataclasses import dataclass

from grid_vec.core.records import CONTROLS, Control

__all__ = ["ACTION_KINDS", "ActionKind", "action_kind", "names_of"]


@dataclass(frozen=True)
class ActionKind:
    """What the core knows of an action type: its name and the parts its actions have.

    Args:
        name: the ``action_type`` a user gives.
        words: what an action of it is, in one line (docs, errors).
        catalog: its agent picks a catalog action by its index (a ``Discrete`` part).
        set_bus: its actions hold the general topology action (``set_bus``,
            ``set_line_status``).
        controls: the continuous controls of its continuous part, in the columns' order
            (empty: it has none).
    """

    name: str
    words: str
    catalog: bool = False
    set_bus: bool = False
    controls: tuple[Control, ...] = ()

    @property
    def continuous(self) -> bool:
        """Whether its actions have a continuous part (a ``Box``)."""
        return bool(self.controls)

    @property
    def alone(self) -> bool:
        """Whether its continuous part is one control alone: that control is required of
        the grid (``"storage"`` of a grid without storage units is refused), whereas a part
        of several controls leaves out those the grid has nothing for."""
        return len(self.controls) == 1

    @property
    def topology(self) -> bool:
        """Whether its agent can play every catalog action (through the catalog, or as a
        general topology action), so that the catalog's legal mask tells it something."""
        return self.catalog or self.set_bus


def _alone(control: Control) -> ActionKind:
    """The action type of one control alone (declared with the control, in records.py)."""
    return ActionKind(
        control.action_type,
        f"Box of the {control.action_type} columns alone ({control.limits})",
        controls=(control,),
    )


_EVERY_CONTROL = tuple(CONTROLS.values())

# the registry: one entry per action type, the core's order (the order of every list of them)
ACTION_KINDS: dict[str, ActionKind] = {
    kind.name: kind
    for kind in (
        ActionKind(
            "discrete",
            "Discrete over the topology catalog: do-nothing, branch toggles, substation "
            "configurations",
            catalog=True,
        ),
        *(_alone(control) for control in _EVERY_CONTROL),
        ActionKind(
            "continuous",
            "Box of every control: the redispatch columns, then the curtailment ones, then "
            "the storage ones",
            controls=_EVERY_CONTROL,
        ),
        ActionKind(
            "combined",
            "Dict(topology=Discrete, continuous=Box): a catalog action and a continuous one, "
            "played as one grid2op action",
            catalog=True,
            controls=_EVERY_CONTROL,
        ),
        ActionKind(
            "set_bus",
            "Dict(set_bus=MultiDiscrete, set_line_status=MultiDiscrete): grid2op's general "
            "topology action",
            set_bus=True,
        ),
        ActionKind(
            "set_bus_continuous",
            "Dict(set_bus=..., set_line_status=..., continuous=Box): the general topology "
            "action and a continuous one, played as one grid2op action",
            set_bus=True,
            controls=_EVERY_CONTROL,
        ),
    )
}


def action_kind(name: str) -> ActionKind:
    """The record of the action type ``name``.

    Args:
        name: an ``action_type``.

    Returns:
        Its :class:`ActionKind`.

    Raises:
        ValueError: an unknown action type (naming the known ones).
    """
    kind = ACTION_KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ValueError(f"action_type must be one of {tuple(ACTION_KINDS)}, got {name!r}")
    return kind


def names_of(kinds: list[ActionKind] | tuple[ActionKind, ...]) -> str:
    """The names of ``kinds`` in words, for an error: ``'a'``, ``'a' or 'b'``, ``'a', 'b'
    or 'c'``."""
    names = [repr(kind.name) for kind in kinds]
    return " or ".join(filter(None, (", ".join(names[:-1]), *names[-1:])))

"""What a dataset folder's ``config.py`` tells the game, read once into one record.

grid2op's ``config.py`` is Python code; :mod:`grid_vec.chronics.config_file` reads it as data
(bounded, parsed with :mod:`ast`, never run). Every reader of the game takes its part from
:class:`FolderConfig`, which parses the file once and reads every entry the game uses: the
thermal limits and the CSV columns' renaming (:func:`~grid_vec.chronics.folder.load_folder`,
:class:`~grid_vec.chronics.folder.FolderSource`), the forecasts per step, the scenario class
(random maintenance: :mod:`grid_vec.chronics.outages`), the reward class
(:mod:`grid_vec.core.rewards.registry`) and the opponent's entries
(:mod:`grid_vec.chronics.opponent_config`, mapped by :mod:`grid_vec.env.folder_opponent`).
A fault anywhere in the file is one :class:`FolderFormatError` naming it, when the folder is
read, whichever part the caller wanted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grid_vec.chronics.config_file import (
    config_name,
    config_values,
    folder_config,
    forecast_horizons,
    parse_config,
)
from grid_vec.chronics.opponent_config import OpponentConfig, opponent_entries
from grid_vec.chronics.outages import RANDOM_MAINTENANCE_CLASS, grid_value_class


@dataclass(frozen=True)
class FolderConfig:
    """The entries of a folder's ``config.py`` the game reads, checked (plain values: it
    pickles small, with the scenario source that holds it).

    Attributes:
        path: the file; None when the folder has none (then every entry is its default).
        thermal_limits: amperes per branch, a list in branch order or a dict by branch name
            (checked positive numbers; checked against the grid by ``load_folder``), or None.
        names_chronics_to_grid: the CSV columns' renaming, by kind (``loads``, ``prods``,
            ``lines``), or None.
        forecast_horizons: forecasts per step in the ``*_forecasted`` files (grid2op's
            ``h_forecast``), 1 without it.
        grid_value_class: the name of grid2op's scenario class it gives, or None.
        reward_class: the name of the reward class it gives, or None.
        opponent: the opponent's entries (class names as strings, the rest as values).
    """

    path: Path | None = None
    thermal_limits: list[float] | dict[str, float] | None = None
    names_chronics_to_grid: dict[str, dict[str, str]] | None = None
    forecast_horizons: int = 1
    grid_value_class: str | None = None
    reward_class: str | None = None
    opponent: OpponentConfig | None = None

    @property
    def random_maintenance(self) -> bool:
        """Whether the scenarios draw their maintenance from ``maintenance_meta.json``
        (grid2op's ``GridStateFromFileWithForecastsWithMaintenance``)."""
        return self.grid_value_class == RANDOM_MAINTENANCE_CLASS

    def renaming(self, kind: str) -> dict[str, str]:
        """The renaming of the CSV columns of one kind (``loads``, ``prods``, ``lines``)."""
        return (self.names_chronics_to_grid or {}).get(kind) or {}


def read_folder_config(root: Path) -> FolderConfig:
    """The ``config.py`` of the dataset folder ``root``, read and parsed once.

    Args:
        root: the dataset folder.

    Returns:
        Its record (every entry at its default when the folder has no ``config.py``).

    Raises:
        FolderFormatError: naming the file: it resolves outside the folder, is too large, is
            not Python, has no module-level ``config = {...}`` dict, or an entry the game
            reads is refused or out of its domain.
    """
    path = folder_config(root)
    if path is None:
        return FolderConfig()
    tree = parse_config(path)
    values = config_values(tree, path, ("thermal_limits", "names_chronics_to_grid"))
    return FolderConfig(
        path=path,
        thermal_limits=values.get("thermal_limits"),
        names_chronics_to_grid=values.get("names_chronics_to_grid") or None,
        forecast_horizons=forecast_horizons(tree, path),
        grid_value_class=grid_value_class(tree, path),
        reward_class=config_name(tree, path, "reward_class"),
        opponent=opponent_entries(tree, path),
    )

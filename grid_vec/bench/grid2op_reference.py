"""grid2op + LightSimBackend, the reference the parity benchmarks and tests play beside
grid_vec (the ``grid2op`` extra; imported only when called)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any


def grid2op_env(
    path: str | Path, *, maintenance: bool = True, opponent: bool = True, **kwargs: Any
):
    """grid2op + LightSimBackend on the folder ``path`` (its warnings silenced): without
    maintenance and hazards unless ``maintenance`` (then the folder's own scenario class
    reads them), without opponent unless ``opponent`` (then the folder's own plays); further
    keyword arguments go to ``grid2op.make`` (without maintenance, ``data_feeding_kwargs``
    replaces the folder's own: give its ``h_forecast`` for multi-horizon forecasts).

    Raises:
        ImportError: grid2op or lightsim2grid is not installed.
    """
    import grid2op
    from grid2op.Chronics import GridStateFromFileWithForecastsWithoutMaintenance
    from grid2op.Opponent import BaseOpponent
    from lightsim2grid import LightSimBackend

    if not maintenance:  # the other scenario settings (h_forecast) as given
        kwargs["data_feeding_kwargs"] = {
            **kwargs.get("data_feeding_kwargs", {}),
            "gridvalueClass": GridStateFromFileWithForecastsWithoutMaintenance,
        }
    if not opponent:
        kwargs.update(
            opponent_class=BaseOpponent, opponent_init_budget=0.0, opponent_budget_per_ts=0.0
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return grid2op.make(str(path), backend=LightSimBackend(), **kwargs)


def bundled_folder(name: str) -> Path:
    """The folder of grid2op's bundled dataset ``name`` (in grid2op's own ``data``), for the
    benchmark scripts that play it side by side with grid2op.

    Raises:
        SystemExit: grid2op is not installed (the message names the extra to install).
    """
    try:
        import grid2op
    except ImportError:
        raise SystemExit("needs the grid2op extra: pip install -e '.[grid2op]'") from None
    return Path(grid2op.__file__).parent / "data" / name

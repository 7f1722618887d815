"""The standard IEEE test grids shipped with pandapower, by short name."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandapower

NETWORK_NAMES: tuple[str, ...] = ("case5", "case14", "case30", "case57", "case118")


def load_network(name: str) -> pandapower.pandapowerNet:
    """A fresh pandapower net for one of :data:`NETWORK_NAMES` (from ``pandapower.networks``)."""
    if name not in NETWORK_NAMES:
        raise ValueError(f"unknown network {name!r}; allowed names: {', '.join(NETWORK_NAMES)}")
    from grid_vec.grid._pandapower import import_pandapower

    return getattr(import_pandapower("pandapower.networks"), name)()

"""Distinct rows of a 2-D array, for work done once per distinct row rather than per row
(a plan per topology, a connectivity check per topology): a batch of envs that share a
topology pays for it once."""

from __future__ import annotations

import numpy as np


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``rows`` (2-D) and, per row, the index of its own among them.

    Each row is compared as its bytes (one opaque item per row, sorted once by numpy), so
    the order of the distinct rows is their bytes' order; a single row is its own.
    """
    rows = np.ascontiguousarray(rows)
    if len(rows) == 1:
        return rows, np.zeros(1, dtype=np.intp)
    items = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(items, return_index=True, return_inverse=True)
    return rows[first], inverse.ravel()

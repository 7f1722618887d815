"""Reading the files of a recorded run, which may come from anyone: every read is bounded,
nothing is unpickled, and every failure is an :class:`EpisodeDataError` naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from grid_vec._untrusted import MAX_JSON_DEPTH, UntrustedFileError
from grid_vec._untrusted import read_json as _read_json
from grid_vec._untrusted_npz import read_npz as _read_npz

# Bounds on what one episode's files may ask of memory. Recorded metadata is a few kB and a
# month of case118 observations about 120 MB, so these only stop hostile or broken files.
MAX_META_BYTES = 4 * 2**20
MAX_NPZ_FILE_BYTES = 2 * 2**30
MAX_NPZ_MEMBERS = 4096
MAX_NPZ_ARRAY_BYTES = 2 * 2**30  # decompressed, all members together


class EpisodeDataError(UntrustedFileError):
    """A recorded episode is missing, truncated or malformed; the message names the file."""


def read_json(path: Path, what: str) -> Any:
    """The JSON document in the regular file ``path`` (at most ``MAX_META_BYTES``, UTF-8,
    nested at most ``MAX_JSON_DEPTH`` deep). ``what`` names the file's role in errors."""
    return _read_json(path, MAX_META_BYTES, MAX_JSON_DEPTH, error=EpisodeDataError, what=what)


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file ``path``, read by :func:`grid_vec._untrusted_npz.read_npz`
    within this module's bounds: no object arrays, no member inflated past them."""
    return _read_npz(
        path,
        error=EpisodeDataError,
        max_file_bytes=MAX_NPZ_FILE_BYTES,
        max_array_bytes=MAX_NPZ_ARRAY_BYTES,
        max_members=MAX_NPZ_MEMBERS,
        what="episode arrays",
    )

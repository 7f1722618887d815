"""Reading the files of a recorded run, which may come from anyone: every read is bounded,
nothing is unpickled, and every failure is an :class:`EpisodeDataError` naming the file."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec._untrusted import (
    MAX_JSON_DEPTH,
    UntrustedFileError,
    json_depth,
    read_bytes,
    regular_file_size,
    shorten,
)

# Bounds on what one episode's files may ask of memory. Recorded metadata is a few kB and a
# month of case118 observations about 120 MB, so these only stop hostile or broken files.
MAX_META_BYTES = 4 * 2**20
MAX_NPZ_FILE_BYTES = 2 * 2**30
MAX_NPZ_MEMBERS = 4096
MAX_NPZ_ARRAY_BYTES = 2 * 2**30  # decompressed, all members together

_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


class EpisodeDataError(UntrustedFileError):
    """A recorded episode is missing, truncated or malformed; the message names the file."""


def read_json(path: Path, what: str) -> Any:
    """The JSON document in the regular file ``path`` (at most ``MAX_META_BYTES``, UTF-8,
    nested at most ``MAX_JSON_DEPTH`` deep). ``what`` names the file's role in errors."""
    raw = read_bytes(path, MAX_META_BYTES, error=EpisodeDataError, what=what)
    depth = json_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise EpisodeDataError(f"{path}: {what} nests {depth} levels deep (limit {MAX_JSON_DEPTH})")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise EpisodeDataError(f"{path}: {what} is not UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise EpisodeDataError(
            f"{path}: {what} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file ``path``, read with ``allow_pickle=False`` after
    checking each member's header: no object arrays, sizes within the file's bounds."""
    if regular_file_size(path, error=EpisodeDataError, what="episode arrays") > MAX_NPZ_FILE_BYTES:
        raise EpisodeDataError(f"{path}: episode arrays exceed {MAX_NPZ_FILE_BYTES} bytes")
    try:
        with zipfile.ZipFile(path) as zf:
            members = _checked_members(path, zf)
            return {name[: -len(".npy")]: _read_member(path, zf, name) for name in members}
    except EpisodeDataError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise EpisodeDataError(f"{path}: cannot read episode arrays: {shorten(str(exc))}") from exc


def _checked_members(path: Path, zf: zipfile.ZipFile) -> list[str]:
    infos = zf.infolist()
    if len(infos) > MAX_NPZ_MEMBERS:
        raise EpisodeDataError(f"{path}: {len(infos)} members (limit {MAX_NPZ_MEMBERS})")
    names = [info.filename for info in infos]
    if len(set(names)) != len(names):
        raise EpisodeDataError(f"{path}: a member name appears twice")
    total = 0
    for info in infos:
        where = f"{path}: member {info.filename[:80]!r}"
        if not info.filename.endswith(".npy"):
            raise EpisodeDataError(f"{where} is not a .npy array")
        # Deflate output is capped at the declared size; bz2/lzma would decompress unbounded.
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise EpisodeDataError(f"{where} uses compression method {info.compress_type}")
        if info.flag_bits & 0x1:
            raise EpisodeDataError(f"{where} is encrypted")
        total += info.file_size
    if total > MAX_NPZ_ARRAY_BYTES:
        raise EpisodeDataError(f"{path}: arrays of {total} bytes (limit {MAX_NPZ_ARRAY_BYTES})")
    return names


def _read_member(path: Path, zf: zipfile.ZipFile, name: str) -> np.ndarray:
    where = f"{path}: member {name[:80]!r}"
    size = zf.getinfo(name).file_size
    with zf.open(name) as member:
        try:
            version = np.lib.format.read_magic(member)
            if version not in _HEADER_READERS:
                raise ValueError(f".npy format version {version} is not supported")
            shape, _, dtype = _HEADER_READERS[version](member)
        except ValueError as exc:
            raise EpisodeDataError(f"{where}: bad array header: {shorten(str(exc))}") from exc
    if dtype.hasobject:
        raise EpisodeDataError(f"{where} holds Python objects (reading them would unpickle)")
    # The data must fit in the member's declared size: a header claiming a huge shape must not
    # make numpy allocate it.
    if int(np.prod(shape, dtype=object)) * dtype.itemsize > size:
        raise EpisodeDataError(f"{where}: header shape {shape} does not fit in {size} bytes")
    with zf.open(name) as member:
        try:
            return np.lib.format.read_array(member, allow_pickle=False)
        except ValueError as exc:
            raise EpisodeDataError(f"{where}: {shorten(str(exc))}") from exc

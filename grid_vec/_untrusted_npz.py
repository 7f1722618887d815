"""Bounded reading of ``.npz`` archives that may come from anyone: recorded runs and the disk
caches of compiled grids and parsed scenarios.

``numpy.load`` trusts an archive: it inflates a member as far as the member says, allocates
whatever shape a header declares, hands back the raw bytes of a member that is not an array,
and (unless told otherwise) unpickles object arrays. Here every member is checked before any
of it is inflated: an ``.npy`` name, stored or deflate compression (whose output
:mod:`zipfile` caps at the member's declared size; bz2 and lzma would not be capped), not
encrypted, declared sizes that add up to at most the caller's bound, a header whose dtype
holds no Python object and whose shape fits in the member's declared size. Each caller passes
its own error type (a subclass of :class:`~grid_vec._untrusted.UntrustedFileError`), as for
:func:`grid_vec._untrusted.read_bytes`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from grid_vec._untrusted import UntrustedFileError, regular_file_size, shorten

DEFAULT_MAX_MEMBERS = 4096

_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def read_npz(
    path: Path,
    *,
    error: type[UntrustedFileError],
    max_file_bytes: int,
    max_array_bytes: int,
    max_members: int = DEFAULT_MAX_MEMBERS,
    what: str = "arrays",
) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file ``path``, by member name without ``.npy``.

    Args:
        path: the archive; it must be a regular file.
        error: the error type raised, naming ``path``.
        max_file_bytes: the largest archive accepted.
        max_array_bytes: the most bytes its members may inflate to, all together (checked on
            their declared sizes before any is inflated).
        max_members: the most members accepted.
        what: the archive's role, for messages (``"episode arrays"``).

    Returns:
        The arrays (never of object dtype).

    Raises:
        UntrustedFileError: (as ``error``, naming ``path`` and, where it is one, the member) a
            missing or non-regular file, a file or its arrays beyond the bounds, something
            other than a zip archive of ``.npy`` members, a compression other than stored or
            deflate, an encrypted member, a bad header, an object dtype, a shape that does
            not fit in its member, truncated data.
    """
    if regular_file_size(path, error=error, what=what) > max_file_bytes:
        raise error(f"{path}: {what} exceed {max_file_bytes} bytes")
    try:
        with zipfile.ZipFile(path) as zf:
            members = _checked_members(path, zf, error, max_array_bytes, max_members)
            return {name[: -len(".npy")]: _read_member(path, zf, name, error) for name in members}
    except UntrustedFileError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise error(f"{path}: cannot read {what}: {shorten(str(exc))}") from exc


def _checked_members(
    path: Path,
    zf: zipfile.ZipFile,
    error: type[UntrustedFileError],
    max_array_bytes: int,
    max_members: int,
) -> list[str]:
    infos = zf.infolist()
    if len(infos) > max_members:
        raise error(f"{path}: {len(infos)} members (limit {max_members})")
    names = [info.filename for info in infos]
    if len(set(names)) != len(names):
        raise error(f"{path}: a member name appears twice")
    total = 0
    for info in infos:
        where = f"{path}: member {info.filename[:80]!r}"
        if not info.filename.endswith(".npy"):
            raise error(f"{where} is not a .npy array")
        # Deflate output is capped at the declared size; bz2/lzma would decompress unbounded.
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise error(f"{where} uses compression method {info.compress_type}")
        if info.flag_bits & 0x1:
            raise error(f"{where} is encrypted")
        total += info.file_size
    if total > max_array_bytes:
        raise error(f"{path}: arrays of {total} bytes (limit {max_array_bytes})")
    return names


def _read_member(
    path: Path, zf: zipfile.ZipFile, name: str, error: type[UntrustedFileError]
) -> np.ndarray:
    where = f"{path}: member {name[:80]!r}"
    size = zf.getinfo(name).file_size
    with zf.open(name) as member:
        try:
            version = np.lib.format.read_magic(member)
            if version not in _HEADER_READERS:
                raise ValueError(f".npy format version {version} is not supported")
            shape, _, dtype = _HEADER_READERS[version](member)
        except ValueError as exc:
            raise error(f"{where}: bad array header: {shorten(str(exc))}") from exc
    if dtype.hasobject:
        raise error(f"{where} holds Python objects (reading them would unpickle)")
    # The data must fit in the member's declared size: a header claiming a huge shape must not
    # make numpy allocate it.
    if any(d < 0 for d in shape) or int(np.prod(shape, dtype=object)) * dtype.itemsize > size:
        raise error(f"{where}: header shape {shape} does not fit in {size} bytes")
    with zf.open(name) as member:
        try:
            return np.lib.format.read_array(member, allow_pickle=False)
        except ValueError as exc:
            raise error(f"{where}: {shorten(str(exc))}") from exc

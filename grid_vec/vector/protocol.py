"""Wire format between GridVecEnv and its workers: a 5-byte header, then an optional payload.

Header = opcode or status (1 byte) + payload length (uint32, little endian). A step of flat
spaces is the bare header both ways; payloads (infos, call arguments, errors) are pickles and
travel only when there is something to say. Raw ``os.read``/``os.write`` on pipe descriptors
cost about half of ``Connection.send_bytes`` on this kind of machine.
"""

from __future__ import annotations

import math
import os
import pickle
import select
import struct
from typing import Any

import cloudpickle

HEADER = struct.Struct("<BI")

# Commands (parent -> worker).
STEP = 1  # payload: None (all envs, actions in shared memory) or (local ids, pickled actions)
RESET = 2  # payload: per local env, None (no-op) or (seed, options)
CALL = 3  # payload: (name, local ids, per-env args, per-env kwargs)
SET_ATTR = 4  # payload: (name, local ids, per-env values)
CLOSE = 5
BUILD = 6  # payload: the cloudpickled env factories of the worker (first command)
# as STEP, its actions checked by the parent as GridEnvs check them: a worker hosting GridEnvs
# plays them unchecked (the protocol is internal: a forged one can only make the step raise,
# which the worker answers as any sub-env error)
STEP_CHECKED = 7
COMMANDS = {
    "STEP": STEP,
    "RESET": RESET,
    "CALL": CALL,
    "SET_ATTR": SET_ATTR,
    "CLOSE": CLOSE,
    "STEP_CHECKED": STEP_CHECKED,
}
"""The commands a worker serves after BUILD; any other code is answered with a ProtocolError."""

# Replies (worker -> parent); no code means two things.
OK = 10
OK_DATA = 11
ERROR = 12
READY = 13
OK_COLUMNS = 14  # payload: raw info records of the whole slice, in the last schema sent
OK_SCHEMA = 15  # payload: (InfoSchema, raw info records): the slice's infos in a new schema
OK_BLOCK = 17  # no payload: the slice's infos are records in the shared block (its schema)

# Either way: the message is in the shared doorbell (:mod:`doorbell`), and the reader sleeps.
WAKE = 16

_RAW = frozenset({OK_COLUMNS})  # codes whose payload is bytes as they are, not a pickle

POLL_IN = select.POLLIN | select.POLLHUP | select.POLLERR

_FAST = {
    op: HEADER.pack(op, 0)
    for op in (STEP, STEP_CHECKED, RESET, CALL, SET_ATTR, CLOSE, OK, OK_BLOCK)
}
WAKE_MESSAGE = HEADER.pack(WAKE, 0)


class PeerGone(EOFError):
    """The process at the other end of a pipe closed it (exited or was killed)."""


def encode(code: int, payload: Any = None, *, by_value: bool = False) -> bytes:
    """One message: ``code`` plus the pickled ``payload`` (nothing when payload is None)."""
    if payload is None:
        return _FAST.get(code) or HEADER.pack(code, 0)
    if code in _RAW:
        body = payload
    elif by_value:
        body = cloudpickle.dumps(payload)
    else:
        try:
            body = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            body = cloudpickle.dumps(payload)
    return HEADER.pack(code, len(body)) + body


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (pipes may accept large writes in pieces)."""
    written = os.write(fd, data)
    if written == len(data):
        return
    view = memoryview(data)[written:]
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Stalled(TimeoutError):
    """The process at the other end of a pipe moved no byte of a message within the limit."""


def _await(fd: int, events: int, sentinel: int | None, timeout: float | None) -> bool:
    """Sleep until ``fd`` has ``events``: False if the ``sentinel`` process dies first.

    Raises:
        Stalled: nothing happened within ``timeout`` seconds (None: no limit).
    """
    poller = select.poll()
    poller.register(fd, events)
    if sentinel is not None:
        poller.register(sentinel, select.POLLIN)
    ready = poller.poll(-1 if timeout is None else max(0, math.ceil(timeout * 1000)))
    if not ready:
        raise Stalled(f"pipe {fd}: no progress within {timeout} s")
    return sentinel is None or all(event_fd != sentinel for event_fd, _ in ready)


def send(fd: int, data: bytes, sentinel: int, timeout: float | None) -> bool:
    """Write all of ``data`` to the non-blocking pipe ``fd``; False if its reader (the process
    of ``sentinel``) is gone.

    A write that fits the pipe costs one ``os.write``, as a blocking one would. Only when the
    pipe is full (a large payload, or a reader that stopped reading) does it sleep in
    ``poll``, for at most ``timeout`` seconds without progress (None: no limit).

    Raises:
        Stalled: the reader took no byte for ``timeout`` seconds.
    """
    try:
        written = os.write(fd, data)
    except BlockingIOError:
        written = 0
    except BrokenPipeError:
        return False
    if written == len(data):
        return True
    view = memoryview(data)[written:]
    while view:
        if not _await(fd, select.POLLOUT, sentinel, timeout):
            return False
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            continue
        except BrokenPipeError:
            return False
    return True


def _read_exact(fd: int, size: int, stall: float | None) -> bytes:
    try:
        data = os.read(fd, size)
    except BlockingIOError:  # a non-blocking pipe in the middle of a message
        data = None
    if data is not None and len(data) == size:
        return data
    if data == b"":
        raise PeerGone(f"pipe {fd} closed")
    data = data or b""
    while len(data) < size:
        try:
            more = os.read(fd, size - len(data))
        except BlockingIOError:
            _await(fd, POLL_IN, None, stall)
            continue
        if not more:
            raise PeerGone(f"pipe {fd} closed mid-message")
        data += more
    return data


def read_message(fd: int, stall: float | None = None) -> tuple[int, Any]:
    """Read one whole message from ``fd``; returns (code, payload or None).

    On a non-blocking pipe, the rest of a message that arrives in pieces is awaited for at
    most ``stall`` seconds without progress (None: no limit).

    Raises:
        PeerGone: the writer closed the pipe.
        Stalled: a non-blocking pipe stayed empty for ``stall`` seconds mid-message.
    """
    code, size = HEADER.unpack(_read_exact(fd, HEADER.size, stall))
    if size == 0:
        return code, None
    body = _read_exact(fd, size, stall)
    return code, body if code in _RAW else pickle.loads(body)


def decode(message: bytes) -> tuple[int, Any]:
    """One whole message already in memory (as :func:`encode` made it): (code, payload or
    None)."""
    code, size = HEADER.unpack_from(message)
    if size == 0:
        return code, None
    body = message[HEADER.size :]
    return code, body if code in _RAW else pickle.loads(body)

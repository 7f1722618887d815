"""Wire format between GridVecEnv and its workers: a 5-byte header, then an optional payload.

Header = opcode or status (1 byte) + payload length (uint32, little endian). A step of flat
spaces is the bare header both ways; payloads (infos, call arguments, errors) are pickles and
travel only when there is something to say. Raw ``os.read``/``os.write`` on pipe descriptors
cost about half of ``Connection.send_bytes`` on this kind of machine.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import time
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

# Replies (worker -> parent); no code means two things.
OK = 10
OK_DATA = 11
ERROR = 12
READY = 13
OK_COLUMNS = 14  # payload: raw info records of the whole slice, in the last schema sent
OK_SCHEMA = 15  # payload: (InfoSchema, raw info records): the slice's infos in a new schema

_RAW = frozenset({OK_COLUMNS})  # codes whose payload is bytes as they are, not a pickle

POLL_IN = select.POLLIN | select.POLLHUP | select.POLLERR

_FAST = {op: HEADER.pack(op, 0) for op in (STEP, RESET, CALL, SET_ATTR, CLOSE, OK)}


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


def write_unless_gone(fd: int, data: bytes, sentinel: int) -> bool:
    """Write all of ``data`` to ``fd`` unless the reading process (its ``sentinel``) dies
    first: then return False instead of blocking forever on a full pipe."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    poller.register(sentinel, select.POLLIN)
    view = memoryview(data)
    os.set_blocking(fd, False)
    try:
        while view:
            ready = {event_fd for event_fd, _ in poller.poll()}
            if sentinel in ready:
                return False
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                return False
        return True
    finally:
        os.set_blocking(fd, True)


def _read_exact(fd: int, size: int) -> bytes:
    data = os.read(fd, size)
    if not data:
        raise PeerGone(f"pipe {fd} closed")
    while len(data) < size:
        more = os.read(fd, size - len(data))
        if not more:
            raise PeerGone(f"pipe {fd} closed mid-message")
        data += more
    return data


def read_message(fd: int) -> tuple[int, Any]:
    """Block until one whole message is read from ``fd``; returns (code, payload or None)."""
    code, size = HEADER.unpack(_read_exact(fd, HEADER.size))
    if size == 0:
        return code, None
    body = _read_exact(fd, size)
    return code, body if code in _RAW else pickle.loads(body)


def spin(poller: select.poll, seconds: float) -> bool:
    """Poll without sleeping for up to ``seconds``; True as soon as ``poller`` has an event.

    A sleeping reader costs a scheduler wake-up (several microseconds) per message; a short
    bounded spin avoids it when a core is free. Each turn yields the core (to the sender when
    it shares it): on a busy machine back-to-back polling without yielding was measured
    slower, the spinner keeping a core that the sender or other processes needed.
    """
    deadline = time.perf_counter() + seconds
    while not poller.poll(0):
        if time.perf_counter() > deadline:
            return False
        os.sched_yield()
    return True

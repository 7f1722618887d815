"""Doorbells: the signal of the hot path between GridVecEnv and one worker, in shared memory.

A command or a reply is a pipe message (:mod:`protocol`); on the hot path it is instead a
*ring*: an opcode and a counter bumped in a small shared area, that the other side sees
without a system call while it spins. A side that stops spinning announces that it sleeps
(a flag) and blocks on its pipe; only then does the ringer also write a ``WAKE`` message to
the pipe. So a batch step costs no system call when both sides spin, and no more than a
pipe round trip when they sleep (cores oversubscribed, ``spin_us=0``, a long step).

Rules that keep the order of messages (each side reads its commands or replies in order):

- The parent rings only a worker that owes no reply: a ring is then always the oldest
  command pending, and the worker answers it with a ring (one outstanding ring per
  direction, so one opcode slot suffices). Other commands (pool mode, ``CLOSE`` while a step
  is pending) go by pipe, and so do their replies.
- A command or reply with a payload rings with the opcode :data:`IN_PIPE`, then writes the
  message to the pipe; the reader then reads it from there.
- Every command bumps ``TOTAL`` (pipe commands too, before their bytes are written), so a
  spinning worker sees pipe commands without polling its pipe.
- ``WAKE`` messages carry nothing and may be stale (the ringer saw the flag just as the
  sleeper woke up): readers skip them.

Memory ordering. A side writes its data (actions; observations, rewards, flags), then the
opcode, then the counter; the reader loads the counter, then the opcode and the data. On
x86-64 stores are not reordered with stores nor loads with loads, and each value is one
aligned 8-byte access (``memoryview`` of ``q``), so that is enough. The sleep handshake
(sleeper: store flag, load counter; ringer: store counter, load flag) also needs the
store-load order that x86 does not give: :func:`_fence` takes and releases an uncontended
lock, a locked instruction, hence a full barrier. Elsewhere (no such guarantees) nothing
rings: :class:`ParentBell` sends every command by pipe, so every reply comes back by pipe,
and GridVecEnv spins on neither side; the pipe's system calls order the memory.
"""

from __future__ import annotations

import mmap
import os
import platform
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from grid_vec.vector import protocol as p
from grid_vec.vector.shared_buffers import anonymous_file, local_descriptor

IN_PIPE = 0
"""Opcode of a ring whose message (with its payload) follows on the pipe."""

STRONG_ORDER = platform.machine().lower() in ("x86_64", "amd64")
"""Whether rings may skip the ``WAKE`` and readers may spin (see the module docstring)."""

# int64 slots; each side writes only its own 64-byte line (no false sharing)
_LINE = 8
P_TOTAL, P_BELLS, P_CODE, P_SLEEPING = 0, 1, 2, 3  # parent line: commands, its sleep
W_BELLS, W_CODE, W_SLEEPING = _LINE + 0, _LINE + 1, _LINE + 2  # worker line: replies, its sleep

_FENCE_LOCK = threading.Lock()


def _fence() -> None:
    """Full memory barrier (x86-64): an uncontended lock is taken with a locked instruction."""
    _FENCE_LOCK.acquire()
    _FENCE_LOCK.release()


class Doorbell:
    """The shared slots of one worker (two cache lines) in a file no path names.

    Like :class:`~grid_vec.vector.shared_buffers.SharedBlock`, it pickles as its descriptor
    ``fd``: it unpickles only in a worker that inherited ``fd`` under the same number, or
    received it and said under which (:func:`~grid_vec.vector.shared_buffers.adopt_descriptors`).
    """

    def __init__(self) -> None:
        self.fd = anonymous_file(2 * _LINE * 8)
        self._attach()

    def _attach(self) -> None:
        weakref.finalize(self, os.close, self.fd)
        self._map = mmap.mmap(self.fd, 2 * _LINE * 8)
        self.slots = memoryview(self._map).cast("q")

    def clear(self) -> None:
        """Zero every slot (the worker on the other side is not running)."""
        for i in range(2 * _LINE):
            self.slots[i] = 0

    def __getstate__(self) -> dict[str, Any]:
        return {"fd": self.fd}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.fd = local_descriptor(state["fd"])
        self._attach()


class ParentBell:
    """The parent's side of one worker's doorbell: which channel each message takes."""

    def __init__(self, bell: Doorbell) -> None:
        self.bell = bell
        self.slots = bell.slots
        self.owed = 0  # replies not yet read
        self.ringing = False  # the oldest reply owed answers a ring
        self.replies_rung = 0

    def started(self) -> None:
        """A fresh worker: it owes the READY that answers its BUILD (both by pipe)."""
        self.bell.clear()
        self.owed, self.ringing, self.replies_rung = 1, False, 0

    def command(self, message: bytes) -> bytes | None:
        """Publish ``message``; returns the bytes to write to the command pipe (the message
        itself, a ``WAKE``, or None when the ring suffices)."""
        s = self.slots
        self.owed += 1
        # by pipe when the worker has older commands to read first, and wherever reading a
        # ring from memory would not be ordered (see the module docstring)
        if self.owed > 1 or not STRONG_ORDER:
            s[P_TOTAL] += 1
            return message
        bare = len(message) == p.HEADER.size
        s[P_CODE] = message[0] if bare else IN_PIPE
        s[P_BELLS] += 1
        s[P_TOTAL] += 1
        self.ringing = True
        if not bare:
            return message
        _fence()
        return None if not s[W_SLEEPING] else p.WAKE_MESSAGE

    def rang(self) -> bool:
        """Whether the ring that answers the oldest command came (not consumed yet)."""
        return self.ringing and self.slots[W_BELLS] != self.replies_rung

    def rung_code(self) -> int | None:
        """The opcode of the ring that answers the oldest command, if it came (not consumed:
        :meth:`rung_reply` takes it); None if it has not."""
        return self.slots[W_CODE] if self.rang() else None

    def rung_reply(self) -> int | None:
        """The opcode of the ring that answers the oldest command, if it came; None if the
        reply is not there yet, or travels by pipe (not a ring)."""
        if not self.ringing or self.slots[W_BELLS] == self.replies_rung:
            return None
        self.replies_rung += 1
        self.ringing = False
        self.owed -= 1
        return self.slots[W_CODE]

    def piped_reply(self) -> None:
        """Account for a reply message read from the pipe (not the one of a ring)."""
        self.owed -= 1

    def sleep(self) -> bool:
        """Announce a sleep on the reply pipe; False if the ring came meanwhile (no sleep)."""
        if not self.ringing:
            return True
        self.slots[P_SLEEPING] = 1
        if STRONG_ORDER:
            _fence()
        return self.slots[W_BELLS] == self.replies_rung

    def woke(self) -> None:
        self.slots[P_SLEEPING] = 0


class WorkerBell:
    """The worker's side of its doorbell: commands in, replies out."""

    def __init__(self, bell: Doorbell, fd_in: int, fd_out: int) -> None:
        self.slots = bell.slots
        self.fd_in, self.fd_out = fd_in, fd_out
        self.commands_seen = 0
        self.rings_seen = 0
        self.ringing = False  # the command being served came by ring: answer by ring

    def pending(self) -> bool:
        """Whether a command is waiting (a ring, or a message announced on the pipe)."""
        return self.slots[P_TOTAL] != self.commands_seen

    def take(self) -> tuple[int, Any]:
        """The oldest pending command: (opcode, payload or None). Blocks on the pipe for a
        message announced but not fully written yet.

        Raises:
            PeerGone: the parent closed the pipe.
        """
        s = self.slots
        self.commands_seen += 1
        self.ringing = s[P_BELLS] != self.rings_seen  # loaded after TOTAL: order of stores
        if self.ringing:
            self.rings_seen += 1
            code = s[P_CODE]
            if code != IN_PIPE:
                return code, None
        return read_skipping_wakes(self.fd_in)

    def sleep(self) -> bool:
        """Announce a sleep on the command pipe; False if a command came meanwhile."""
        self.slots[W_SLEEPING] = 1
        if STRONG_ORDER:
            _fence()
        return not self.pending()

    def woke(self) -> None:
        self.slots[W_SLEEPING] = 0

    def reply(self, message: bytes) -> None:
        """Answer the command being served: by ring when it came by ring, else by pipe."""
        if not self.ringing:
            p.write_all(self.fd_out, message)
            return
        s = self.slots
        bare = len(message) == p.HEADER.size
        s[W_CODE] = message[0] if bare else IN_PIPE
        s[W_BELLS] += 1
        if not bare:
            p.write_all(self.fd_out, message)
            return
        _fence()  # a ring, hence STRONG_ORDER (rings are made nowhere else)
        if s[P_SLEEPING]:
            p.write_all(self.fd_out, p.WAKE_MESSAGE)


def spin(ready: Callable[[], bool], seconds: float) -> bool:
    """Call ``ready`` until it is true, for up to ``seconds``; True if it became true.

    Each turn yields the core: when the other side waits for this core (more processes than
    cores), it runs at once instead of at the end of this process's time slice.
    """
    deadline = time.perf_counter() + seconds
    while not ready():
        if time.perf_counter() > deadline:
            return False
        os.sched_yield()
    return True


def read_skipping_wakes(fd: int, stall: float | None = None) -> tuple[int, Any]:
    """The next message of ``fd`` that is not a ``WAKE``.

    Raises:
        PeerGone: the writer closed the pipe.
        Stalled: see :func:`protocol.read_message`.
    """
    while True:
        code, payload = p.read_message(fd, stall)
        if code != p.WAKE:
            return code, payload

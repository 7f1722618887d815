"""The parent's own slice: sub-envs that GridVecEnv steps in its own process, with the
worker's engine, while its worker processes step theirs (``step_in_parent=True``).

Why: in lockstep the parent has nothing to do while its workers step; on a machine with as
many workers as cores it only spins on the doorbells, beside them. Stepping a slice itself
(PufferLib's serial-in-parent idea) puts that core to work, and saves one process: with
``n`` cores, ``n - 1`` workers and the parent step ``n`` slices.

The slice speaks the workers' protocol, in memory: each command message (the bytes a pipe
would carry) is handled at once by a :class:`~grid_vec.vector.worker.Server` built here,
and its reply message is queued for the wait that reads replies. Replies travel pickled as
through a pipe, so a call's result is a copy exactly as a worker's is. One exception, the
hot path: the step of a slice of GridEnvs that are rows of one batch replies with what the
slice engine built for this step alone (fresh arrays of numbers and strings, which always
pickle), so its reply is queued as it is, saving a pickling and an unpickling per step
(about 80 µs when the step's infos are not the fixed layout, e.g. after a game over).
GridVecEnv writes to its workers first and to this slice last, so the parent steps its
slice while the workers step theirs.

What a process gives and this slice cannot: a hung env here hangs the parent (no
``step_timeout`` kill), a crash here is the parent's; it is never restarted.
"""

from __future__ import annotations

import pickle
from collections import deque
from typing import Any

from grid_vec.vector import protocol as p
from grid_vec.vector.worker import Server, WorkerSpec, build_envs, close_envs

_STEPS = (p.STEP, p.STEP_CHECKED)


class ParentSlice:
    """The envs of one slice, built and served in this process.

    Args:
        spec: the slice's spec, as a worker gets it (``doorbell`` None).
        blob: the cloudpickled env factories, unpickled here as a worker unpickles them
            (each slice gets factories of its own).
    """

    def __init__(self, spec: WorkerSpec, blob: bytes) -> None:
        # reply messages, or (status, result) of a step of the slice engine (not encoded)
        self.replies: deque[bytes | tuple[int, Any]] = deque()
        self.envs, error = build_envs(spec, pickle.loads(blob))
        self.server: Server | None = None
        if error:
            self.replies.append(error)
            return
        self.server = Server(spec, self.envs)
        self.replies.append(p.encode(p.READY, self.server.check_spaces()))

    def command(self, message: bytes) -> None:
        """Handle one command message now; its reply waits in :attr:`replies`."""
        code, payload = p.decode(message)
        if self.server is None:  # not built: the READY wait reported it
            raise RuntimeError("the parent's slice of sub-envs was not built")
        server = self.server
        if code in _STEPS and payload is None and server.engine is not None:
            self.replies.append(server.respond(code, payload))
        else:
            self.replies.append(server.handle(code, payload))

    def has_reply(self) -> bool:
        return bool(self.replies)

    def next_code(self) -> int:
        """The code of the oldest reply, left in the queue."""
        return self.replies[0][0]  # a message's first byte is its code (p.HEADER)

    def reply(self) -> tuple[int, Any]:
        """The oldest reply: (code, payload or None)."""
        reply = self.replies.popleft()
        return p.decode(reply) if isinstance(reply, bytes) else reply

    def close(self) -> None:
        """Close the envs and drop the replies owed."""
        self.replies.clear()
        envs, self.envs, self.server = self.envs, [], None
        close_envs(envs)


def parent_last(item: tuple[Any, Any]) -> bool:
    """Sort key of (worker, ...) pairs: commands reach the processes before the parent
    handles those of its own slice (a stable sort keeps the workers' order)."""
    return item[0].in_parent

"""GridVecEnv's workers started as Ray actors on this node: the workers' own shared memory.

A :class:`~grid_vec.integrations.ray_vec_env.RayVecEnv` reaches actors on any node through a
socket link, whose every step pickles the slice's results, crosses the loopback and merges
them (on the 2-core VM, 0.30-0.78x GridVecEnv's throughput, docs/scaling.md). On the
driver's own node none of that is needed: :class:`RayWorkerLauncher` makes Ray place one
actor per GridVecEnv worker on this node (Ray reserves its CPUs, sees it in its dashboard and
kills it with the job), and the actor runs GridVecEnv's worker itself
(:func:`grid_vec.vector.worker.main`) on the pipes, the shared block and the doorbell of a
worker this process would have forked: GridVecEnv's protocol, supervision and speed, with
Ray as the launcher (``GridVecEnv(..., worker_launcher=RayWorkerLauncher())``, or
``grid_vec.make_vec(..., vectorization="ray", vector_kwargs={"transport": "node"})``).

How the descriptors travel: the driver listens on a Unix socket in a private directory
(mode 0700) and hands the actor its path and a one-time token through Ray; the actor
connects and sends the token and its pid; the driver checks the token, then sends the
worker's two pipe ends, the shared block and the doorbell with ``SCM_RIGHTS``. The actor
records under which numbers it received the block and the doorbell
(:func:`~grid_vec.vector.shared_buffers.adopt_descriptors`) and serves. The driver watches
the actor's process through a pidfd (:class:`~grid_vec.vector.launch.ForeignProcess`), so a
killed actor is a crashed worker, named as any other. Linux only (pidfds, ``SCM_RIGHTS``).
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import shutil
import socket
import struct
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from grid_vec.integrations.ray import connect
from grid_vec.vector import worker
from grid_vec.vector.launch import ForeignProcess, WorkerProcess
from grid_vec.vector.shared_buffers import adopt_descriptors

TOKEN_BYTES = 32
_HELLO = struct.Struct(f"{TOKEN_BYTES}sq")  # the token, then the actor's pid
_HANDED = b"fds"  # the message the descriptors ride on
_WATCH_S = 0.2  # seconds between looks at the actor's task while waiting for its connection


class _WorkerHost:
    """The actor: receives a worker's descriptors, then runs the worker until CLOSE."""

    def serve(self, path: str, token: bytes, parent_fds: list[int]) -> None:
        """Connect to ``path``, prove the token, receive the descriptors and serve.

        Args:
            path: the driver's Unix socket.
            token: the one-time token the driver handed over through Ray.
            parent_fds: the driver's numbers of the shared block and the doorbell (what
                the worker's pickled spec names).
        """
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as link:
            link.connect(path)
            link.sendall(_HELLO.pack(token, os.getpid()))
            message, fds, _, _ = socket.recv_fds(link, len(_HANDED), 2 + len(parent_fds))
        if message != _HANDED or len(fds) != 2 + len(parent_fds):
            for fd in fds:
                os.close(fd)
            raise RuntimeError("the driver handed over no worker descriptors")
        cmd_fd, reply_fd, *shared = fds
        adopt_descriptors(dict(zip(parent_fds, shared, strict=True)))
        try:
            worker.main(cmd_fd, reply_fd)
        finally:
            ray.actor.exit_actor()  # the process ends: the driver's pidfd sees it


class RayWorkerLauncher:
    """Starts each GridVecEnv worker as a Ray actor on this node (see the module docstring).

    Args:
        ray_address: the Ray to join when none is running here (None: a new local instance;
            one joined or started here is shut down by :meth:`close`). The actors are placed
            on this process's node whatever the cluster.
        num_cpus: the CPUs Ray reserves for each actor.
        start_timeout: seconds to wait for an actor to connect (Ray may have to start a
            worker process for it).

    Raises:
        TypeError: ``ray_address`` is not a str or None.
    """

    def __init__(
        self, ray_address: str | None = None, num_cpus: float = 1.0, start_timeout: float = 60.0
    ) -> None:
        self._owns_ray = connect(ray_address)
        self.num_cpus = float(num_cpus)
        self.start_timeout = float(start_timeout)
        self._host = ray.remote(_WorkerHost)
        self._actors: list[Any] = []  # kept: an actor whose handle is dropped is killed

    def start(self, cmd_fd: int, reply_fd: int, other_fds: Sequence[int]) -> WorkerProcess:
        """Start one worker as an actor pinned to this node (see
        :class:`~grid_vec.vector.launch.WorkerLauncher`).

        Raises:
            OSError: the actor did not connect in time, or proved a wrong token.
        """
        folder = tempfile.mkdtemp(prefix="grid_vec_ray_")  # mode 0700: only this user
        path = os.path.join(folder, "link")
        token = secrets.token_bytes(TOKEN_BYTES)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                listener.bind(path)
                listener.listen(1)
                here = ray.get_runtime_context().get_node_id()
                actor = self._host.options(
                    num_cpus=self.num_cpus,
                    max_restarts=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
                ).remote()
                self._actors.append(actor)
                served = actor.serve.remote(path, token, list(other_fds))
                link = self._accept(listener, actor, served)
                with link:
                    link.settimeout(self.start_timeout)
                    hello = _receive(link, _HELLO.size)
                    sent, pid = _HELLO.unpack(hello)
                    if not hmac.compare_digest(sent, token):
                        ray.kill(actor)
                        raise OSError("a process proved a wrong token on a worker's link")
                    process = ForeignProcess(pid)
                    socket.send_fds(link, [_HANDED], [cmd_fd, reply_fd, *other_fds])
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return WorkerProcess(process, os.pidfd_open(pid))

    def _accept(self, listener: socket.socket, actor: Any, served: Any) -> socket.socket:
        """The actor's connection to ``listener``; an actor whose ``serve`` task ended before
        it connected (it failed to start, or to connect) is reported at once, not after the
        whole ``start_timeout``.

        Raises:
            OSError: the actor's task ended first (its error in the message), or no
                connection came within ``start_timeout``.
        """
        deadline = time.monotonic() + self.start_timeout
        while True:
            listener.settimeout(min(_WATCH_S, max(0.0, deadline - time.monotonic())))
            try:
                return listener.accept()[0]
            except TimeoutError:
                pass
            done, _ = ray.wait([served], timeout=0)
            if done:
                try:
                    ray.get(done[0])
                    reason = "it ended without connecting"
                except Exception as exc:  # the actor's own error, whatever its type
                    reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
                raise OSError(f"a Ray actor for a worker failed to start ({reason})")
            if time.monotonic() >= deadline:
                ray.kill(actor)
                raise OSError(
                    f"a Ray actor for a worker did not connect within {self.start_timeout} s"
                )

    def close(self) -> None:
        """Kill the actors still alive (GridVecEnv's close has ended its workers already) and
        shut down the Ray this launcher started or joined."""
        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._actors.clear()
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False


def _receive(link: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = link.recv(size - len(data))
        if not chunk:
            raise OSError("a worker's link closed before it said hello")
        data += chunk
    return data

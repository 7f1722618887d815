"""The actors of :class:`~grid_vec.integrations.ray_vec_env.RayVecEnv` and the links to them.

An actor hosts one slice of the sub-envs as a GridVecEnv worker hosts its slice
(:func:`~grid_vec.vector.local_slice.slice_vector_env`: one batch of the engine for GridEnvs
of one factory, else a SyncVectorEnv) and answers the commands of the workers' wire format
(:mod:`grid_vec.vector.protocol`): ``STEP`` (the slice's actions), ``CALL`` (a method of the
slice's vector env: ``reset``, ``call``, ``get_attr``, ``set_attr``) and ``CLOSE``; a
sub-env's error comes back as an ``ERROR`` entry (:func:`~grid_vec.vector.errors.error_entry`).

Three links carry the messages:

* ``"socket"`` (default): a TCP connection from the driver to the actor, opened once. Ray
  places and supervises the actor; the steps bypass Ray's task path, whose fixed cost (about
  0.6 ms per actor call on a 2-core VM, measured 2026-12-07: a no-op call to each of two
  actors took 1.2 ms) is several times a step of 16 sandbox envs (about 0.15 ms). The
  connection is authenticated (``multiprocessing.connection``'s HMAC challenge with a key
  drawn by the driver and handed to the actor through Ray) and then accepts no one else:
  the messages are pickles, which only the driver may send. It needs the actor's node to
  accept a TCP connection from the driver on an ephemeral port, as Ray's own nodes do.
* ``"ray"``: an actor method call per message, for clusters whose nodes the driver cannot
  reach directly (a ``ray://`` client): the same messages, answered by the same code.
* :class:`DriverLink`: the driver's own slice (``RayVecEnv(step_in_driver=True)``), hosted by
  a :class:`SliceHost` in the driver's process as GridVecEnv's parent steps a slice of its
  own: the driver steps it while the actors step theirs, and its replies are not pickled.
"""

from __future__ import annotations

import os
import select
import socket
import threading
from collections.abc import Callable, Sequence
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

import gymnasium as gym
import ray
from gymnasium.vector import AutoresetMode
from ray.exceptions import GetTimeoutError, RayActorError

from grid_vec.vector import protocol as p
from grid_vec.vector.doorbell import spin
from grid_vec.vector.errors import ProtocolError, error_entry
from grid_vec.vector.local_slice import slice_vector_env

METHODS = frozenset({"reset", "call", "get_attr", "set_attr"})
"""The methods of the slice's vector env a ``CALL`` message may name."""

LIVENESS_S = 5.0
"""Seconds a socket link waits for a reply before asking Ray whether the actor still lives (a
node lost without closing its connections would otherwise leave the driver waiting)."""


class SliceHost:
    """A Ray actor hosting one slice of a RayVecEnv's sub-envs.

    Args:
        env_fns: the slice's env factories (one Ray argument, one pickle: a factory repeated
            stays one object, which makes the envs one batch).
        autoreset_mode: gymnasium's autoreset mode.
        first_id: the RayVecEnv index of the slice's first sub-env (names its errors).
        authkey: the key the driver's socket link authenticates with (unused by the
            ``"ray"`` link, which opens no socket).
        spin_s: seconds the socket link's thread spins for the next command before it
            sleeps (see :class:`SocketLink`).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        autoreset_mode: AutoresetMode,
        first_id: int,
        authkey: bytes,
        spin_s: float = 0.0,
    ) -> None:
        # the replies are pickled at once: the env's own buffers need no copy
        self.env = slice_vector_env(env_fns, autoreset_mode, copy=False)
        self.first_id = first_id
        env = self.env
        # read once, here: the actor's Ray methods must not touch the envs that the socket
        # link's thread steps
        self._spaces = (
            env.single_observation_space,
            env.single_action_space,
            env.get_attr("spec")[0],
            not isinstance(env, gym.vector.SyncVectorEnv),
        )
        self._authkey = authkey
        self._spin_s = spin_s
        self._listener: Listener | None = None
        self._handlers: dict[int, Callable[[Any], bytes]] = {
            p.STEP: self._step,
            p.CALL: self._call,
            p.CLOSE: self._close,
        }

    def spaces(self) -> tuple[gym.Space, gym.Space, Any, bool]:
        """The single observation and action spaces, the sub-envs' spec, and whether the
        slice is one batch of the engine."""
        return self._spaces

    def ping(self) -> bool:
        """True: the actor lives (asked by a socket link waiting long for a reply)."""
        return True

    def pid(self) -> int:
        """The actor's process id (tests kill it)."""
        return os.getpid()

    def open(self) -> tuple[str, int]:
        """Listen for the driver's socket link on this node and serve it in a thread of its
        own (the actor's Ray methods stay free: the driver asks ``ping`` whether the actor
        lives); its address."""
        address = (ray.util.get_node_ip_address(), 0)
        self._listener = Listener(address, authkey=self._authkey)
        threading.Thread(target=self._serve, name="grid_vec-slice", daemon=True).start()
        return self._listener.address

    def handle(self, message: bytes) -> bytes:
        """The reply to one command message (the ``"ray"`` link)."""
        code, payload = p.decode(message)
        return self._respond(code, payload)

    def answer(self, code: int, payload: Any) -> tuple[int, Any]:
        """The reply to the command ``code`` with its ``payload``, as ``(code, payload)``
        (a sub-env's error as an ``ERROR`` entry): what the links send, before encoding."""
        handler = self._handlers.get(code)
        try:
            if handler is None:
                raise ProtocolError(f"RayVecEnv actor: unknown command {code}")
            return handler(payload)
        except Exception as exc:
            # a batch names the sub-env that raised by its row, here a row of this slice:
            # the entry (hence ``env_index`` in the driver) carries its RayVecEnv index
            row = getattr(exc, "env_index", None)
            env_id = None
            if isinstance(row, int):
                env_id = self.first_id + row
                exc.add_note(f"sub-env {row} of its slice is RayVecEnv sub-env {env_id}")
            return p.ERROR, [error_entry(env_id, exc)]

    def _serve(self) -> None:
        """Accept the driver's connection, then answer its commands until CLOSE or its end."""
        assert self._listener is not None
        try:
            while True:
                try:
                    conn = self._listener.accept()  # the peer proves it has the key
                    break
                except AuthenticationError:
                    continue  # not the driver: wait on for it
        except OSError:
            return  # the driver's connect fails too, and says so
        finally:
            self._listener.close()  # one connection only: nobody else gets in
        with conn:
            no_delay(conn)
            fd = conn.fileno()
            poller = select.poll()
            poller.register(fd, p.POLL_IN)
            while True:
                spin(lambda: bool(poller.poll(0)), self._spin_s)
                try:
                    code, payload = p.read_message(fd)
                except (EOFError, OSError):
                    return  # the driver is gone
                except Exception as exc:  # read whole, but not unpicklable here: no crash
                    p.write_all(fd, p.encode(p.ERROR, [error_entry(None, exc)]))
                    continue
                p.write_all(fd, self._respond(code, payload))
                if code == p.CLOSE:
                    return

    def _respond(self, code: int, payload: Any) -> bytes:
        """The reply message to the command ``code`` with its ``payload``."""
        return p.encode(*self.answer(code, payload))

    def _step(self, actions: Any) -> tuple[int, Any]:
        return p.OK_DATA, self.env.step(actions)

    def _call(self, payload: tuple[str, tuple, dict]) -> tuple[int, Any]:
        method, args, kwargs = payload
        if method not in METHODS:
            raise ProtocolError(f"RayVecEnv actor: no method {method!r}")
        return p.OK_DATA, getattr(self.env, method)(*args, **kwargs)

    def _close(self, _payload: None) -> tuple[int, Any]:
        self.env.close()
        return p.OK, None


RemoteSliceHost = ray.remote(num_cpus=1)(SliceHost)


def no_delay(conn: Connection) -> None:
    """Send each message at once: without it, a reply written after the previous one was
    acknowledged late (Nagle's algorithm with delayed acks) waits 40 ms."""
    with socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def alive(actor: Any) -> bool:
    """Whether Ray still reaches ``actor`` (a dead one, or one silent for 5 s, is not)."""
    try:
        ray.get(actor.ping.remote(), timeout=5)
    except (RayActorError, GetTimeoutError):
        return False
    return True


class SocketLink:
    """The driver's end of a socket link to one actor.

    Raises:
        p.PeerGone: (``send``, ``recv``) the actor is gone.
    """

    def __init__(
        self, actor: Any, address: tuple[str, int], authkey: bytes, spin_s: float = 0.0
    ) -> None:
        self.actor = actor
        self.spin_s = spin_s
        self.conn = Client(tuple(address), authkey=authkey)
        no_delay(self.conn)
        self.fd = self.conn.fileno()
        self._poller = select.poll()
        self._poller.register(self.fd, p.POLL_IN)

    def send(self, message: bytes) -> None:
        try:
            p.write_all(self.fd, message)
        except OSError as exc:
            raise p.PeerGone(f"the connection to the actor closed: {exc}") from exc

    def recv(self, timeout: float | None = None) -> tuple[int, Any]:
        """The next reply; ``timeout`` seconds at most (None: as long as the actor lives).

        Raises:
            TimeoutError: no reply within ``timeout``.
        """
        poll = self._poller.poll
        spin(lambda: bool(poll(0)), self.spin_s)
        waited = 0.0
        while not poll(int(LIVENESS_S * 1000)):
            waited += LIVENESS_S
            if timeout is not None and waited >= timeout:
                raise TimeoutError(f"no reply from the actor within {timeout} s")
            if not alive(self.actor):
                raise p.PeerGone("the actor died")
        try:
            return p.read_message(self.fd)
        except OSError as exc:
            raise p.PeerGone(f"the connection to the actor closed: {exc}") from exc

    def close(self) -> None:
        self.conn.close()


class RayLink:
    """The driver's end of the ``"ray"`` link: one actor call per message.

    Raises:
        p.PeerGone: (``recv``) the actor is gone.
    """

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self._pending: Any = None

    def send(self, message: bytes) -> None:
        self._pending = self.actor.handle.remote(message)

    def recv(self, timeout: float | None = None) -> tuple[int, Any]:
        ref, self._pending = self._pending, None
        try:
            return p.decode(ray.get(ref, timeout=timeout))
        except GetTimeoutError as exc:
            raise TimeoutError(f"no reply from the actor within {timeout} s") from exc
        except RayActorError as exc:
            raise p.PeerGone(f"the actor died: {exc}") from exc

    def close(self) -> None:
        pass


class DriverLink:
    """The driver's own slice, behind the links' interface: ``send`` keeps the command,
    ``recv`` answers it here. RayVecEnv sends every actor its command before it reads the
    first reply, so this slice steps while the actors step theirs; its replies are the slice's
    own objects, not pickles (the driver copies the observations when it joins them).
    """

    def __init__(self, host: SliceHost) -> None:
        self.host = host
        self._pending: tuple[int, Any] | None = None

    def send(self, message: bytes) -> None:
        self._pending = p.decode(message)

    def recv(self, timeout: float | None = None) -> tuple[int, Any]:
        """The reply to the command sent last (``timeout``: unused, the step runs here)."""
        assert self._pending is not None, "recv() before send()"
        (code, payload), self._pending = self._pending, None
        return self.host.answer(code, payload)

    def close(self) -> None:
        self.host.env.close()  # a vector env's close does nothing the second time


def _socket_link(actor: Any, authkey: bytes, spin_s: float) -> SocketLink:
    address = ray.get(actor.open.remote())
    try:
        return SocketLink(actor, address, authkey, spin_s)
    except OSError as exc:
        raise OSError(
            f"cannot reach the RayVecEnv actor's socket at {address[0]}:{address[1]} ({exc}); "
            "where the driver cannot reach the nodes directly, pass transport='ray'"
        ) from exc


LINKS: dict[str, Callable[[Any, bytes, float], SocketLink | RayLink]] = {
    "socket": _socket_link,
    "ray": lambda actor, _authkey, _spin_s: RayLink(actor),
}
"""The driver's link of each transport to a started actor (see the module's docstring); a
link's constructor raises RayActorError when the actor died while starting, OSError when its
socket cannot be reached."""


def new_authkey() -> bytes:
    """A fresh key for the socket links of one RayVecEnv."""
    return os.urandom(32)

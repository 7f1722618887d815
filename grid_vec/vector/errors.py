"""Errors GridVecEnv raises besides gymnasium's own (AlreadyPendingCallError, ...), the
re-raising in the parent of an error raised in a worker, and the naming of the sub-env whose
action a batch check refused."""

from __future__ import annotations

import contextlib
import pickle
import traceback
from collections.abc import Sequence
from typing import NamedTuple, NoReturn

from gymnasium import logger


class WorkerCrashedError(RuntimeError):
    """A worker process died (killed, segfault, os._exit); names the sub-envs it carried."""

    def __init__(self, message: str, env_ids: tuple[int, ...]) -> None:
        super().__init__(message)
        self.env_ids = env_ids


class WorkerTimeoutError(WorkerCrashedError):
    """A worker exceeded ``step_timeout`` and was killed."""


class ProtocolError(RuntimeError):
    """A worker received a message that is not part of the protocol (an unknown command).

    The worker answers it with this error instead of a result, then keeps serving: the
    message was read whole, so the pipe stays in step.
    """


class RemoteTraceback(Exception):
    """Carries a worker's formatted traceback as the ``__cause__`` of a re-raised error."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


class ErrorEntry(NamedTuple):
    """An exception raised in a worker, as it travels to the parent in an ``ERROR`` reply."""

    env_id: int | None  # the sub-env that raised; None: the worker itself (ProtocolError)
    blob: bytes | None  # the pickled exception, None when it cannot be unpickled
    type_name: str
    message: str
    trace: str  # the worker's formatted traceback


def error_entry(env_id: int | None, exc: BaseException) -> ErrorEntry:
    """Describe ``exc``, being handled in a worker, for the parent.

    Args:
        env_id: the sub-env whose call raised, or None for an error of the worker itself.
        exc: the exception; it travels pickled when it survives a pickling round trip.

    Returns:
        The entry to send in an ``ERROR`` reply.
    """
    try:
        blob: bytes | None = pickle.dumps(exc)
        pickle.loads(blob)
    except Exception:
        blob = None
    return ErrorEntry(env_id, blob, type(exc).__qualname__, str(exc), traceback.format_exc())


def naming_env(exc: ValueError, env_ids: Sequence[int]) -> ValueError:
    """A refusal of a batch of actions as the error of the first sub-env it refuses.

    Args:
        exc: the refusal; one naming rows of the batch (``rows``, as
            ``grid_vec.env.action_input.RefusedActions`` does) becomes a ``ValueError``
            whose message starts with ``sub-env <index>`` and whose ``env_index`` is that
            index, as a sub-env's error re-raised from a worker. Any other (the batch's
            shape, its keys: no one sub-env's) is returned as it is.
        env_ids: the sub-env of each row of the batch.

    Returns:
        The error to raise.
    """
    rows = getattr(exc, "rows", None)
    if not rows:
        return exc
    env_id = env_ids[rows[0]]
    named = ValueError(f"sub-env {env_id}: {exc}")
    named.env_index = env_id  # type: ignore[attr-defined]
    return named


def _source(entry: ErrorEntry) -> str:
    return "a worker" if entry.env_id is None else f"sub-env {entry.env_id}"


def reraise(entries: list[ErrorEntry], owner: str = "GridVecEnv") -> NoReturn:
    """Re-raise in the parent the last of the errors that workers reported.

    Emits the ``UserWarning``\\ s that ``AsyncVectorEnv`` emits, with its wording, for code that
    relies on them: for each error, "Received the following error from Worker-<sub-env>" and
    the worker's traceback, then "Raising the last exception back to the main process."
    (Unlike AsyncVectorEnv's, the worker stays up and the vector env stays usable.) The error
    raised is the worker's own exception when it can be unpickled (else a ``RuntimeError``
    naming its type), with a note naming the sub-env, ``env_index`` set, and the worker's
    traceback as its ``__cause__``.

    Args:
        entries: the errors of one reply or of one batch of replies (at least one).
        owner: the vector env the note names (RayVecEnv's actors report the same entries).

    Raises:
        BaseException: the error of the highest sub-env index (a worker's own error last).
    """
    entries = sorted(entries, key=lambda e: (e.env_id is None, e.env_id or 0))
    for entry in entries:
        logger.error(
            f"Received the following error from Worker-{entry.env_id} - Shutting it down"
            if entry.env_id is not None
            else "Received the following error from a worker (not from a sub-env)"
        )
        logger.error(entry.trace)
    logger.error("Raising the last exception back to the main process.")
    last = entries[-1]
    exc: BaseException | None = None
    if last.blob is not None:
        with contextlib.suppress(Exception):
            exc = pickle.loads(last.blob)
    if exc is None:
        exc = RuntimeError(f"{last.type_name}: {last.message}")
    exc.add_note(f"raised by {_source(last)} of {owner} (worker traceback above)")
    if last.env_id is not None:
        with contextlib.suppress(AttributeError):
            exc.env_index = last.env_id  # type: ignore[attr-defined]
    raise exc from RemoteTraceback(f"\n{_source(last)} worker traceback:\n{last.trace}")

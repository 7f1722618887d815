"""Errors GridVecEnv raises besides gymnasium's own (AlreadyPendingCallError, ...)."""

from __future__ import annotations


class WorkerCrashedError(RuntimeError):
    """A worker process died (killed, segfault, os._exit); names the sub-envs it carried."""

    def __init__(self, message: str, env_ids: tuple[int, ...]) -> None:
        super().__init__(message)
        self.env_ids = env_ids


class WorkerTimeoutError(WorkerCrashedError):
    """A worker exceeded ``step_timeout`` and was killed."""


class RemoteTraceback(Exception):
    """Carries a worker's formatted traceback as the ``__cause__`` of a re-raised error."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text

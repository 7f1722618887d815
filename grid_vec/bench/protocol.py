"""The timing protocol (warm-up, calibrated repetitions, median and spread) and the machine
description stored with every result, so that figures from different runs can be judged."""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

PACKAGES = (
    "grid_vec",
    "numpy",
    "gymnasium",
    "lightsim2grid",
    "pandapower",
    "grid2op",
    "stable-baselines3",
    "torch",
    "matplotlib",
)


@dataclass(frozen=True)
class Protocol:
    """How one measurement is taken.

    ``warmup_s`` of untimed batch steps (at least ``min_warmup_steps``) also calibrate how many
    batch steps make one repetition of about ``rep_s`` seconds (at least one); ``reps`` timed
    repetitions follow, each giving env-steps per second.
    """

    warmup_s: float = 0.2
    reps: int = 5
    rep_s: float = 0.15
    min_warmup_steps: int = 2

    def __post_init__(self) -> None:
        for name in ("warmup_s", "rep_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        for name in ("reps", "min_warmup_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    def cost_s(self, batch_s: float) -> float:
        """Seconds one measurement should take when a batch step lasts ``batch_s``."""
        warmup = max(self.warmup_s, self.min_warmup_steps * batch_s)
        return warmup + self.reps * max(self.rep_s, batch_s)


@dataclass(frozen=True)
class Measurement:
    """Env-steps per second of each timed repetition, with their median and spread."""

    samples: tuple[float, ...]
    batch_steps_per_rep: int
    batch_s: float

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)


def measure(run: Callable[[int], int], protocol: Protocol) -> Measurement:
    """Time ``run(k)`` (k batch steps, returning the env steps done) under ``protocol``."""
    calls, start = 0, time.perf_counter()
    while True:
        run(1)
        calls += 1
        elapsed = time.perf_counter() - start
        if calls >= protocol.min_warmup_steps and elapsed >= protocol.warmup_s:
            break
    batch_s = elapsed / calls
    k = max(1, round(protocol.rep_s / batch_s))
    samples = []
    for _ in range(protocol.reps):
        t0 = time.perf_counter()
        env_steps = run(k)
        samples.append(env_steps / (time.perf_counter() - t0))
    return Measurement(tuple(samples), k, batch_s)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str | None:
    from importlib import metadata  # here: its import costs tens of ms at every CLI start

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class Machine:
    """Where a run took place: CPU, cores, OS, Python and the versions of the packages timed."""

    cpu_model: str
    logical_cores: int | None
    usable_cores: int
    platform: str
    python: str
    packages: dict[str, str | None]
    load_average: tuple[float, float, float] | None
    date: str

    def as_dict(self) -> dict:
        return asdict(self)


def describe_machine() -> Machine:
    """Describe this machine and process now."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    try:
        load = tuple(round(x, 2) for x in os.getloadavg())
    except OSError:
        load = None
    return Machine(
        cpu_model=_cpu_model(),
        logical_cores=os.cpu_count(),
        usable_cores=usable,
        platform=platform.platform(),
        python=platform.python_version(),
        packages={name: _version(name) for name in PACKAGES},
        load_average=load,  # type: ignore[arg-type]
        date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )

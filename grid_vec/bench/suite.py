"""The run: every (number of envs, workload, subject) cell measured under one protocol, within
a time budget, and the versioned result document (results, ratios, skips, machine)."""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from grid_vec.bench.protocol import Protocol, describe_machine, measure
from grid_vec.bench.subjects import SUBJECTS, Subject
from grid_vec.bench.workloads import ACTIONS, WORKLOADS, Workload, sandbox_path

SCHEMA = "grid_vec.bench.throughput"
SCHEMA_VERSION = 1
NUM_ENVS = (1, 2, 4, 8, 16, 32)


def _check_names(what: str, names: tuple[str, ...], allowed: Any) -> None:
    bad = [n for n in names if n not in allowed]
    if not names or bad:
        raise ValueError(f"{what} must be a non-empty subset of {list(allowed)}, got {list(names)}")


@dataclass(frozen=True)
class BenchConfig:
    """What to run: every applicable (num_envs, workload, subject) cell, within ``budget_s``
    seconds of measurement (see :func:`run_suite` for how the budget is shared)."""

    num_envs: tuple[int, ...] = NUM_ENVS
    workloads: tuple[str, ...] = tuple(WORKLOADS)
    subjects: tuple[str, ...] = tuple(SUBJECTS)
    actions: tuple[str, ...] = ACTIONS
    protocol: Protocol = field(default_factory=Protocol)
    budget_s: float = 560.0
    seed: int = 0
    mode: str = "full"

    def __post_init__(self) -> None:
        _check_names("workloads", self.workloads, WORKLOADS)
        _check_names("subjects", self.subjects, SUBJECTS)
        _check_names("actions", self.actions, ACTIONS)
        if not self.num_envs or any(
            isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in self.num_envs
        ):
            raise ValueError(f"num_envs must be positive integers, got {self.num_envs!r}")
        if not isinstance(self.budget_s, (int, float)) or self.budget_s <= 0:
            raise ValueError(f"budget_s must be a positive number of seconds, got {self.budget_s}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")


QUICK = BenchConfig(
    num_envs=(1, 2),
    subjects=tuple(s for s in SUBJECTS if s not in ("GridVecEnv 1/worker", "GridVecEnv pool")),
    actions=("do-nothing",),
    protocol=Protocol(warmup_s=0.05, reps=3, rep_s=0.03),
    budget_s=50.0,
    mode="quick",
)


@dataclass
class _History:
    """What the last cell of a (subject, workload) cost, to estimate the next one."""

    num_envs: int
    processes: int
    overhead_s: float
    batch_s: float


def _estimate(subject: Subject, n: int, modes: int, prev: _History | None, p: Protocol) -> float:
    procs = max(1, subject.processes(n))
    if prev is None:
        return 1.0 + 0.3 * procs + modes * p.cost_s(0.0)
    overhead = prev.overhead_s * max(1.0, procs / max(1, prev.processes))
    return overhead + modes * p.cost_s(prev.batch_s * n / prev.num_envs)


def _modes(subject: Subject, workload: Workload, wanted: tuple[str, ...]) -> list[str]:
    """Random actions only where they mean the same work for every subject (GridEnv catalog)."""
    if workload.kind != "grid" or not subject.random_actions:
        return [m for m in wanted if m == "do-nothing"]
    return list(wanted)


def _level_weight(n: int) -> float:
    """Budget share of one cell of ``n`` envs, relative to one env (more processes to start)."""
    return 1.0 + math.log2(n) / 8


def _cells(config: BenchConfig, n: int, unavailable: set[str]) -> list[tuple[Subject, Workload]]:
    out = []
    for wname in config.workloads:
        for sname in config.subjects:
            subject = SUBJECTS[sname]
            if wname not in subject.workloads or (subject.single and n != 1):
                continue
            if sname not in unavailable and wname not in unavailable:
                out.append((subject, WORKLOADS[wname]))
    return out


def run_suite(config: BenchConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Measure every cell of ``config`` and return the result document (see :data:`SCHEMA`).

    Each number of envs gets a share of the time left (its cell count times
    :func:`_level_weight`), so
    that the largest counts are measured too; within it, cells go from the cheapest estimate
    up and a cell that would not fit in the share is skipped (and recorded as such).
    """
    start = time.perf_counter()
    deadline = start + config.budget_s
    machine = describe_machine()
    results: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    history: dict[tuple[str, str], _History] = {}
    unavailable = _unavailable(config, log, skipped)
    p = config.protocol
    levels = [_cells(config, n, unavailable) for n in config.num_envs]
    weights = [
        len(cells) * _level_weight(n) for n, cells in zip(config.num_envs, levels, strict=True)
    ]
    for i, n in enumerate(config.num_envs):
        now = time.perf_counter()
        level_deadline = now + (deadline - now) * weights[i] / max(1e-9, sum(weights[i:]))
        planned = []
        for subject, workload in levels[i]:
            modes = _modes(subject, workload, config.actions)
            prev = history.get((subject.name, workload.name))
            planned.append((_estimate(subject, n, len(modes), prev, p), subject, workload, modes))
        for cost, subject, workload, modes in sorted(planned, key=lambda c: c[0]):
            cell = {"subject": subject.name, "workload": workload.name, "num_envs": n}
            if time.perf_counter() + cost > level_deadline:
                skipped.append({**cell, "reason": f"budget (estimated {cost:.1f} s)"})
                continue
            try:
                rows, hist = _run_cell(subject, workload, n, modes, config)
            except Exception as exc:
                log(f"  {subject.name} on {workload.name} x{n}: FAILED {type(exc).__name__}: {exc}")
                errors.append({**cell, "error": traceback.format_exc(limit=3)})
                continue
            history[(subject.name, workload.name)] = hist
            for row in rows:
                log(
                    f"  {workload.name:<21} {row['actions']:<10} {subject.name:<25} x{n:<3}"
                    f" {row['steps_per_s']:>11,.0f} env-steps/s"
                )
            results.extend(rows)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "mode": config.mode,
        "config": asdict(config),
        "machine": machine.as_dict(),
        "results": results,
        "ratios": ratios(results),
        "skipped": skipped,
        "errors": errors,
        "duration_s": round(time.perf_counter() - start, 2),
    }


def _unavailable(config: BenchConfig, log: Callable[[str], None], skipped: list) -> set[str]:
    """Subjects whose package is missing and workloads whose data is missing (logged once)."""
    out: set[str] = set()
    for name in config.subjects:
        missing = SUBJECTS[name].missing()
        if missing:
            log(f"skipping subject {name!r}: {missing} is not installed")
            skipped.append({"subject": name, "reason": f"{missing} not installed"})
            out.add(name)
    for name in config.workloads:
        if WORKLOADS[name].grid2op_folder:
            try:
                sandbox_path()
            except ImportError as exc:
                log(f"skipping workload {name!r}: {exc}")
                skipped.append({"workload": name, "reason": str(exc)})
                out.add(name)
    return out


def _run_cell(
    subject: Subject, workload: Workload, n: int, modes: list[str], config: BenchConfig
) -> tuple[list[dict[str, Any]], _History]:
    t0 = time.perf_counter()
    session = subject.open(workload, n, config.seed)
    startup = time.perf_counter() - t0
    rows, batch_s = [], 0.0
    try:
        for mode in modes:
            m = measure(session.runner(mode), config.protocol)
            batch_s = max(batch_s, m.batch_s)
            rows.append(
                {
                    "subject": subject.name,
                    "workload": workload.name,
                    "num_envs": n,
                    "actions": mode,
                    "steps_per_s": m.median,
                    "min": m.low,
                    "max": m.high,
                    "samples": list(m.samples),
                    "batch_steps_per_rep": m.batch_steps_per_rep,
                    "startup_s": round(startup, 3),
                }
            )
    finally:
        t1 = time.perf_counter()
        session.close()
        overhead = startup + time.perf_counter() - t1
    return rows, _History(n, max(1, subject.processes(n)), overhead, batch_s)


def ratios(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """grid_vec's steps/s over each subject's on the same workload, envs and actions."""
    by_key = {(r["subject"], r["workload"], r["num_envs"], r["actions"]): r for r in results}
    out = []
    for r in results:
        ref_name = SUBJECTS[r["subject"]].reference
        ref = by_key.get((ref_name, r["workload"], r["num_envs"], r["actions"]))
        if ref is None:
            continue
        out.append(
            {
                "subject": r["subject"],
                "reference": ref_name,
                "workload": r["workload"],
                "num_envs": r["num_envs"],
                "actions": r["actions"],
                "ratio": ref["steps_per_s"] / r["steps_per_s"],
            }
        )
    return out

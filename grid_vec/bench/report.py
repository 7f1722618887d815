"""Reading a result document: text table, README markdown table, JSON file and PNG plot.

Every table cell is the median env-steps/s of one (workload, actions, subject, envs) cell;
``xR`` after it is grid_vec's median divided by that subject's (R > 1: grid_vec is faster).
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

from grid_vec.bench.subjects import SUBJECTS


def _groups(doc: dict[str, Any]) -> list[tuple[str, str, list[str], list[int]]]:
    """(workload, actions, subjects in run order, envs counts) of each table block."""
    seen: dict[tuple[str, str], tuple[list[str], list[int]]] = {}
    for r in doc["results"]:
        subjects, counts = seen.setdefault((r["workload"], r["actions"]), ([], []))
        if r["subject"] not in subjects:
            subjects.append(r["subject"])
        if r["num_envs"] not in counts:
            counts.append(r["num_envs"])
    order = list(SUBJECTS)
    return [
        (w, a, sorted(s, key=order.index), sorted(c))
        for (w, a), (s, c) in sorted(seen.items(), key=lambda kv: kv[0])
    ]


def _cells(doc: dict[str, Any]) -> dict[tuple, str]:
    ratio = {
        (q["subject"], q["workload"], q["num_envs"], q["actions"]): q["ratio"]
        for q in doc["ratios"]
    }
    out = {}
    for r in doc["results"]:
        key = (r["subject"], r["workload"], r["num_envs"], r["actions"])
        text = f"{r['steps_per_s']:,.0f}"
        if key in ratio:
            text += f" x{ratio[key]:.2f}"
        out[key] = text
    return out


def _spread(doc: dict[str, Any], subject: str, workload: str, actions: str) -> float:
    """Largest (max - min) / median over the row's cells, in percent."""
    return max(
        100.0 * (r["max"] - r["min"]) / r["steps_per_s"]
        for r in doc["results"]
        if (r["subject"], r["workload"], r["actions"]) == (subject, workload, actions)
    )


def format_table(doc: dict[str, Any]) -> str:
    """Plain-text tables, one per (workload, actions), rows = subjects, columns = envs."""
    cells = _cells(doc)
    lines = [
        "env-steps/s, median of the repetitions; xR = grid_vec / subject on the same cell "
        "(GridEnv for single envs, GridVecEnv for vector envs); spread = (max-min)/median"
    ]
    for workload, actions, subjects, counts in _groups(doc):
        lines.append("")
        lines.append(f"{workload} - {actions}")
        lines.append(f"{'subject':<26}" + "".join(f"{n:>17}" for n in counts) + f"{'spread':>9}")
        for s in subjects:
            row = "".join(f"{cells.get((s, workload, n, actions), '-'):>17}" for n in counts)
            lines.append(f"{s:<26}{row}{_spread(doc, s, workload, actions):>8.0f}%")
    for skip in doc["skipped"]:
        where = " ".join(f"{k}={v}" for k, v in skip.items() if k != "reason")
        lines.append(f"skipped {where}: {skip['reason']}")
    for err in doc["errors"]:
        last = err["error"].strip().splitlines()[-1]
        lines.append(f"failed {err['subject']} on {err['workload']} x{err['num_envs']}: {last}")
    return "\n".join(lines)


def format_markdown(doc: dict[str, Any]) -> str:
    """One markdown table for the README: a row per (workload, actions, subject)."""
    cells = _cells(doc)
    counts = sorted({r["num_envs"] for r in doc["results"]})
    head = "| workload | actions | subject | " + " | ".join(f"{n} envs" for n in counts) + " |"
    lines = [head, "|" + "---|" * (3 + len(counts))]
    for workload, actions, subjects, _ in _groups(doc):
        for s in subjects:
            row = [cells.get((s, workload, n, actions), "-").replace(" x", " ×") for n in counts]
            lines.append(f"| {workload} | {actions} | {s} | " + " | ".join(row) + " |")
    m, p = doc["machine"], doc["config"]["protocol"]
    default = (
        "grid-vec bench --quick --markdown"
        if doc["mode"] == "quick"
        else "grid-vec bench --markdown"
    )
    command = doc.get("command", default)
    lines += [
        "",
        f"`{command}` on {m['cpu_model']} ({m['usable_cores']} cores, "
        f"Python {m['python']}, {m['date'][:10]}). How to read it:",
        "",
        f"- each cell is the median env-steps/s of {p['reps']} timed repetitions of "
        f"about {p['rep_s']} s each, after a {p['warmup_s']} s warm-up; episodes that end "
        "are reset inside the timed steps (autoreset), for every subject alike;",
        "- ×R is grid_vec's median divided by the subject's on the same workload, actions "
        "and number of envs (GridEnv for single envs, GridVecEnv for vector envs): "
        "R > 1 means grid_vec is R times faster;",
        "- `random` draws uniformly from GridEnv's action catalog (many actions end "
        "episodes, so resets weigh a lot); grid2op subjects run do-nothing only, since "
        "their action space is not the same;",
        "- `LightEnv` is lightsim2grid's C++ env on grid_vec's compiled grid, with GridEnv's "
        "first scenario, limits, rules and catalog (its rules differ in places: no hard "
        "overflow, no isolation game over, toggles only disconnect; see "
        "`grid_vec/bench/lightenv.py`);",
        "- `l2rpn_case14_sandbox` is the same grid2op folder for grid_vec and grid2op; "
        "`trivial` is an env that does no work: only the vector env's overhead is timed;",
        "- `-`: not applicable (single env), skipped for the time budget or failed; the "
        "JSON keeps every sample, the spread, the skips, the errors and the machine.",
    ]
    return "\n".join(lines)


def write_json(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write the document (parent folders created) and return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return out


def plot(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Steps/s against the number of envs (log-log), one panel per workload, do-nothing
    actions; saved as a PNG. Needs matplotlib (the ``bench`` extra); ImportError otherwise."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "the plot needs matplotlib: pip install 'grid_vec[bench]' or pip install matplotlib"
        ) from exc
    groups = [g for g in _groups(doc) if g[1] == "do-nothing"]
    if not groups:
        raise ValueError("no do-nothing result to plot")
    cols = min(2, len(groups))
    rows = -(-len(groups) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.5 * rows), squeeze=False)
    order, colors = list(SUBJECTS), plt.get_cmap("tab20")
    for ax, (workload, actions, subjects, counts) in zip(axes.flat, groups, strict=False):
        for s in subjects:
            points = sorted(
                (r["num_envs"], r["steps_per_s"])
                for r in doc["results"]
                if (r["subject"], r["workload"], r["actions"]) == (s, workload, actions)
            )
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, marker="o", label=s, color=colors(order.index(s) % 20))
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.set_yscale("log")
        ax.set_title(f"{workload} ({actions})")
        ax.set_xlabel("number of envs")
        ax.set_ylabel("env-steps/s (median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes.flat[len(groups) :]:
        ax.set_visible(False)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def subject_summaries(
    samples: dict[str, list[float]], reference: str, ratio_key: str
) -> dict[str, dict[str, Any]]:
    """Each subject's figures in a side-by-side script of ``benchmarks/`` from the env-steps/s
    of its repetitions: the median, µs per env-step, min, max, the median's share of the
    ``reference`` subject's median (under ``ratio_key``) and the samples."""
    medians = {name: statistics.median(values) for name, values in samples.items()}
    return {
        name: {
            "env_steps_per_s": medians[name],
            "us_per_env_step": 1e6 / medians[name],
            "min": min(values),
            "max": max(values),
            ratio_key: medians[name] / medians[reference],
            "samples": values,
        }
        for name, values in samples.items()
    }


def format_subject_rows(results: list[dict[str, Any]], ratio_key: str, ratio_title: str) -> str:
    """The Markdown table of :func:`subject_summaries` results (one row per grid, actions and
    subject; its last column the share ``ratio_key``, headed ``ratio_title``)."""
    lines = [
        "| grid | actions | envs | subject | env-steps/s (min..max) | µs/env-step | "
        f"{ratio_title} |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for name, s in r["subjects"].items():
            lines.append(
                f"| {r['grid']} | {r['actions']} | {r['envs']} | {name} | "
                f"{s['env_steps_per_s']:,.0f} ({s['min']:,.0f}..{s['max']:,.0f}) | "
                f"{s['us_per_env_step']:.2f} | {s[ratio_key]:.2f}× |"
            )
    return "\n".join(lines)

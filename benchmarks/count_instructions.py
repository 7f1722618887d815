"""Instructions per env-step of the batched engine, counted by valgrind's callgrind.

Why: on a shared 2-core VM the wall and CPU times of one process swing by 30-50% from one
process to the next, which hides a change of a few percent. The instructions a step executes
do not depend on the machine's load: two runs of the same tree agree to about 0.2%, so an
A/B of two trees (``PYTHONPATH=/work/<tree>``) resolves a 1% change. An instruction count is
not a time (the compiled chord kernel overlaps far more instructions per cycle than the
interpreter does), so it ranks changes of the Python around the kernel, and the time
figures stay ``bench_batched.py``'s.

Only the timed steps are counted: the process starts with instrumentation off, steps
``--warmup`` times, turns it on with ``callgrind_control``, steps ``--steps`` times and turns
it off. Needs ``valgrind`` (its ``callgrind_control``) on the PATH; a run takes 10-60 s.

    python benchmarks/count_instructions.py --grid l2rpn_case14_sandbox --envs 32 --steps 50
    python benchmarks/count_instructions.py --envs 32 --actions random
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings


def _child(args: argparse.Namespace) -> None:
    """Under callgrind: build the batched env, step, count the timed steps only."""
    import numpy as np

    import grid_vec

    warnings.filterwarnings("ignore")
    envs = grid_vec.make_vec(args.grid, args.envs, vectorization="batched", reward="flat")
    envs.reset(seed=args.seed)
    rng = np.random.default_rng(args.seed)
    n_actions = envs.single_action_space.n

    def actions() -> np.ndarray:
        if args.actions == "random":
            return rng.integers(0, n_actions, args.envs)
        return np.zeros(args.envs, dtype=np.int64)

    for _ in range(args.warmup):
        envs.step(actions())
    planned = [actions() for _ in range(args.steps)]  # drawn before the count starts
    toggle = ["callgrind_control", "--instr=on", str(os.getpid())]
    subprocess.run(toggle, check=True, capture_output=True)
    for action in planned:
        envs.step(action)
    toggle[1] = "--instr=off"
    subprocess.run(toggle, check=True, capture_output=True)
    envs.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", default="l2rpn_case14_sandbox")
    parser.add_argument("--envs", type=int, default=32, help="rows of the batched env")
    parser.add_argument("--steps", type=int, default=50, help="batch steps counted")
    parser.add_argument("--warmup", type=int, default=20, help="batch steps before the count")
    parser.add_argument("--actions", choices=("noop", "random"), default="noop")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.envs < 1 or args.steps < 1 or args.warmup < 0:
        parser.error("--envs and --steps must be >= 1, --warmup >= 0")
    if args.child:
        _child(args)
        return 0
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print(
            "count_instructions.py: needs valgrind (callgrind_control) on the PATH", file=sys.stderr
        )
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={os.path.join(tmp, 'callgrind.out')}",
            sys.executable, os.path.abspath(__file__), "--child",
            *(argv if argv is not None else sys.argv[1:]),
        ]  # fmt: skip
        run = subprocess.run(command, capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or found is None:
        print(
            f"count_instructions.py: the counted run failed:\n{run.stderr[-2000:]}", file=sys.stderr
        )
        return 1
    per_step = int(found.group(1)) / (args.steps * args.envs)
    print(
        f"{args.grid}, batched x{args.envs}, {args.actions}: {per_step:,.0f} instructions per "
        f"env-step ({args.steps} batch steps counted after {args.warmup})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Every benchmark of the README, one after the other (run on an otherwise idle machine).
# Each prints a table and writes its JSON under benchmarks/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python}
$py benchmarks/bench_backends.py
$py benchmarks/bench_scenarios.py --reps 9
$py benchmarks/bench_env.py --steps 3000 --repeats 7
$py benchmarks/bench_vector.py
$py benchmarks/bench_vector_case14.py
$py benchmarks/bench_runner.py --env case14 --vector gridvec
$py benchmarks/bench_sb3.py
$py benchmarks/bench_ray.py
$py benchmarks/bench_startup.py
$py benchmarks/bench_resets.py
$py benchmarks/bench_eval_grid2op.py
$py benchmarks/bench_batched.py
$py benchmarks/bench_batch_memory.py
$py benchmarks/parity_random_actions.py --act 0.05
grid-vec bench --markdown

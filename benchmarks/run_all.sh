#!/usr/bin/env bash
# Every benchmark of the README, one after the other (run on an otherwise idle machine).
# Each prints a table and, with --out, writes its JSON under benchmarks/results/ (the record).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python}
$py benchmarks/bench_backends.py --out benchmarks/results
$py benchmarks/bench_scenarios.py --reps 9 --out benchmarks/results
$py benchmarks/bench_env.py --steps 3000 --repeats 7 --out benchmarks/results
$py benchmarks/bench_vector.py --out benchmarks/results
$py benchmarks/bench_vector_case14.py --out benchmarks/results
$py benchmarks/bench_runner.py --env case14 --vector gridvec --out benchmarks/results
$py benchmarks/bench_sb3.py --out benchmarks/results
$py benchmarks/bench_ray.py --out benchmarks/results
$py benchmarks/bench_ray_vec.py --out benchmarks/results
$py benchmarks/bench_startup.py --out benchmarks/results
$py benchmarks/bench_resets.py --out benchmarks/results
$py benchmarks/bench_eval_grid2op.py --out benchmarks/results
$py benchmarks/bench_batched.py --out benchmarks/results
$py benchmarks/bench_batch_memory.py --out benchmarks/results
$py benchmarks/parity_random_actions.py --act 0.05 --out benchmarks/results
grid-vec bench --markdown --out benchmarks/results/throughput.json

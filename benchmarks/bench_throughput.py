"""Standard throughput benchmark, same as ``grid-vec bench`` (see grid_vec/bench).

python benchmarks/bench_throughput.py --quick     # -> results/throughput_quick.json
python benchmarks/bench_throughput.py --markdown  # full run -> results/throughput.json
"""

import sys

from grid_vec.bench import main

if __name__ == "__main__":
    sys.exit(main())

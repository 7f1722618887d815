"""The compiled part of grid_vec: the power-flow kernels (grid_vec/grid/chord_kernel.c, rows of one
topology; grid_vec/grid/newton_kernel.c, rows of any topology; their shared results,
grid_vec/grid/flow_results.h).

Everything else about the package is in pyproject.toml; setuptools reads the extension from
here because pyproject.toml's own ``ext-modules`` table is still experimental in setuptools.
"""

from setuptools import Extension, setup

# complex products inline (C99 would call a library routine to handle inf and NaN, which a
# converged power flow never holds); no fused multiply-add, so that a row's arithmetic is the
# same in a vectorised lane and in a scalar remainder (a row's result must not depend on the
# rows solved beside it)
FLAGS = ["-O3", "-std=c99", "-fcx-limited-range", "-ffp-contract=off"]
SHARED = ["grid_vec/grid/flow_results.h"]

setup(
    ext_modules=[
        Extension(
            f"grid_vec.grid.{name}",
            [f"grid_vec/grid/{name}.c"],
            depends=SHARED,
            extra_compile_args=FLAGS,
        )
        for name in ("chord_kernel", "newton_kernel")
    ]
)

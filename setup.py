"""The compiled part of grid_vec: the chord power-flow kernel (grid_vec/grid/chord_kernel.c).

Everything else about the package is in pyproject.toml; setuptools reads the extension from
here because pyproject.toml's own ``ext-modules`` table is still experimental in setuptools.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "grid_vec.grid.chord_kernel",
            ["grid_vec/grid/chord_kernel.c"],
            # complex products inline (C99 would call a library routine to handle inf and NaN,
            # which a converged power flow never holds); no fused multiply-add, so that a
            # row's arithmetic is the same in a vectorised lane and in a scalar remainder
            # (a row's result must not depend on the rows solved beside it)
            extra_compile_args=["-O3", "-std=c99", "-fcx-limited-range", "-ffp-contract=off"],
        )
    ]
)

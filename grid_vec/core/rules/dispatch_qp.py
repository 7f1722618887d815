"""grid2op's dispatch programme, solved by scipy's compiled SLSQP core without its wrapper.

:mod:`grid_vec.core.rules.dispatch` poses grid2op's quadratic programme (``Programme``, in
grid2op's scaled units); grid2op solves it with ``scipy.optimize.minimize(method="SLSQP")``.
Most of that call's time is scipy's Python around the compiled kernel (``ScalarFunction``,
the constraint dispatch, the result object), not the kernel. :func:`solve` runs the same
kernel, ``scipy.optimize._slsqplib.slsqp``, with the loop of scipy's ``_minimize_slsqp``
restated for this problem alone: the same start point, the same buffers, the same objective,
gradient and constraint arithmetic at the same points, in the same order. The kernel then
takes the same steps, so the result is bitwise scipy's (``tests/env/test_dispatch_qp.py``
checks it against ``scipy.optimize.minimize`` on random programmes), hence grid2op's,
including which programmes fail and where an optimum is not unique (SLSQP's choice is kept,
not another optimum).

The kernel and its calling convention are scipy's private API (scipy 1.16 moved SLSQP from
Fortran to C with this signature). The direct path is taken only on the scipy versions in
``_KNOWN_SCIPY`` whose loop is restated here; on any other scipy, or if the kernel cannot be
imported, :func:`solve` calls ``scipy.optimize.minimize`` with the same functions: the same
answer, at scipy's cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy

# scipy versions whose ``_minimize_slsqp`` loop and kernel signature are restated here
_KNOWN_SCIPY = ("1.16.", "1.17.")
_MAXITER = 100  # scipy's default, which grid2op keeps
# scipy's exit modes (``_minimize_slsqp``'s messages)
_MESSAGES = {
    -1: "Gradient evaluation required (g & a)",
    0: "Optimization terminated successfully",
    1: "Function evaluation required (f & c)",
    2: "More equality constraints than independent variables",
    3: "More than 3*n iterations in LSQ subproblem",
    4: "Inequality constraints incompatible",
    5: "Singular matrix E in LSQ subproblem",
    6: "Singular matrix C in LSQ subproblem",
    7: "Rank-deficient equality constraint subproblem HFTI",
    8: "Positive directional derivative for linesearch",
    9: "Iteration limit reached",
}


def _load_kernel() -> Callable[..., None] | None:
    """scipy's compiled SLSQP step, or None where this module does not know its convention."""
    if not scipy.__version__.startswith(_KNOWN_SCIPY):
        return None
    try:
        from scipy.optimize._slsqplib import slsqp
    except ImportError:
        return None
    return slsqp


_KERNEL = _load_kernel()


@dataclass(frozen=True, eq=False)
class Programme:
    """grid2op's dispatch programme for one env, scaled as grid2op scales it.

    Minimise ``sum(weights * (x[mine] - goal) ** 2) / scale_f`` over ``x`` (the change of
    the participating generators' actual dispatch, divided by grid2op's ``scale_x``) subject
    to ``sum(x) == total`` and ``low <= x <= high``.
    """

    x0: np.ndarray  # (n,) float64 start point
    mine: np.ndarray  # (n,) bool: the generators the objective pulls towards a target
    weights: np.ndarray  # (mine.sum(),) float64
    goal: np.ndarray  # (mine.sum(),) float64
    scale_f: float
    total: np.ndarray  # (1,) float64: the sum the changes must make
    low: np.ndarray  # (n,) float64
    high: np.ndarray  # (n,) float64
    precision: float  # SLSQP's ftol and eps, as grid2op sets them

    def objective(self, x: np.ndarray) -> float:
        """The programme's objective at ``x`` (grid2op's expression)."""
        return float((self.weights * (x[self.mine] - self.goal) ** 2).sum() / self.scale_f)

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """The objective's gradient at ``x``."""
        grad = np.zeros(len(x))
        grad[self.mine] = 2.0 * self.weights * (x[self.mine] - self.goal) / self.scale_f
        return grad

    def constraints(self) -> list[dict[str, Any]]:
        """The constraints as SLSQP's dicts, the equality's first: what scipy makes of
        grid2op's two ``LinearConstraint``, without building them."""
        n = len(self.x0)
        return [
            *_linear(np.ones((1, n)), self.total, self.total),
            *_linear(np.eye(n), self.low, self.high),
        ]


@dataclass(frozen=True)
class Solution:
    """What SLSQP returns: its last point, whether it converged, and its exit message."""

    x: np.ndarray
    success: bool
    message: str


def solve(programme: Programme) -> Solution:
    """Solve ``programme`` as ``scipy.optimize.minimize(method="SLSQP")`` does, bit for bit.

    Args:
        programme: the scaled programme.

    Returns:
        SLSQP's last point and exit status (an unconverged point included: grid2op keeps it
        when it meets the constraints).
    """
    if _KERNEL is None or not len(programme.x0):
        return solve_with_minimize(programme)
    return _solve_direct(programme, _KERNEL)


def solve_with_minimize(programme: Programme) -> Solution:
    """``programme`` through ``scipy.optimize.minimize``: the reference, and the path on a
    scipy this module does not know."""
    from scipy.optimize import minimize

    res = minimize(
        programme.objective,
        programme.x0,
        method="SLSQP",
        jac=programme.gradient,
        constraints=programme.constraints(),
        options={"eps": programme.precision, "ftol": programme.precision, "disp": False},
    )
    return Solution(res.x, bool(res.success), str(res.message))


class _Layout:
    """The programme's constraints laid out as the kernel reads them, with scipy's arithmetic.

    scipy turns ``low <= a @ x <= high`` (grid2op's sum row, then its identity) into the
    rows ``a @ x - low`` where ``low == high`` (equalities, all blocks first), then per block
    ``a @ x - low`` where ``low`` is finite and ``-(a @ x - high)`` where ``high`` is. Here
    the same rows come from one gather: ``sign * (values[rows] - bound)``; a sign of -1
    negates exactly, as scipy's unary minus does, so every value and Jacobian entry has
    scipy's bits.
    """

    def __init__(self, programme: Programme) -> None:
        n = len(programme.x0)
        self.sum_row, self.identity = np.ones((1, n)), np.eye(n)
        # the two blocks' bounds stacked: row 0 the sum, rows 1..n the identity
        low = np.concatenate((programme.total, programme.low)).astype(float)
        high = np.concatenate((programme.total, programme.high)).astype(float)
        equal = low == high
        below = np.logical_xor(low != -np.inf, equal)
        above = np.logical_xor(high != np.inf, equal)
        # scipy's order: every equality, then block by block its rows below, then above
        parts = (
            np.flatnonzero(equal),
            np.flatnonzero(below[:1]),
            np.flatnonzero(above[:1]),
            1 + np.flatnonzero(below[1:]),
            1 + np.flatnonzero(above[1:]),
        )
        self.rows = np.concatenate(parts)
        self.sign = np.repeat([1.0, 1.0, -1.0, 1.0, -1.0], [len(p) for p in parts])
        self.bound = np.where(self.sign > 0, low[self.rows], high[self.rows])  # eq: low == high
        self.meq, self.m = int(equal.sum()), len(self.rows)
        a = np.concatenate((self.sum_row, self.identity))
        self.jacobian = np.zeros((max(1, self.m), n), order="F")
        self.jacobian[: self.m] = self.sign[:, None] * a[self.rows]

    def values(self, x: np.ndarray, out: np.ndarray) -> None:
        """The constraints' values at ``x`` into ``out`` (scipy's ``_eval_constraint``)."""
        # the two products as scipy computes them (one BLAS call per block), not x itself
        values = np.concatenate((np.dot(self.sum_row, x), np.dot(self.identity, x)))
        out[: self.m] = self.sign * (values[self.rows] - self.bound)


def _solve_direct(programme: Programme, kernel: Callable[..., None]) -> Solution:
    """scipy's ``_minimize_slsqp`` loop for a problem with no bounds, an analytic gradient
    and linear constraints: the kernel asks for the objective and the constraints (mode 1)
    or their derivatives (mode -1) until it stops."""
    layout = _Layout(programme)
    m, meq = layout.m, layout.meq
    x = programme.x0.astype(np.float64)  # a copy: the kernel moves it in place
    n = len(x)
    acc = programme.precision
    state = {
        "acc": acc, "alpha": 0.0, "f0": 0.0, "gs": 0.0, "h1": 0.0, "h2": 0.0, "h3": 0.0,
        "h4": 0.0, "t": 0.0, "t0": 0.0, "tol": 10.0 * acc, "exact": 0, "inconsistent": 0,
        "reset": 0, "iter": 0, "itermax": _MAXITER, "line": 0, "m": m, "meq": meq,
        "mode": 0, "n": n,
    }  # fmt: skip
    # scipy's workspace sizes (``_minimize_slsqp``)
    buffer_size = n * (n + 1) // 2 + 3 * m * n - (m + 5 * n + 7) * meq + 9 * m + 8 * n * n
    buffer_size += 35 * n + meq * meq + 28
    if m == meq:  # no inequality: scipy tops the workspace up
        buffer_size += 2 * n * (n + 1)
    buffer = np.zeros(max(buffer_size, 1))
    indices = np.zeros(max(m + 2 * n + 2, 1), dtype=np.int32)
    mult = np.zeros(max(1, m + 2 * n + 2))
    lower, upper = np.full(n, np.nan), np.full(n, np.nan)  # no bounds: NaN is "none"
    normals = layout.jacobian.copy(order="F")
    values = np.zeros(max(1, m))
    fx = programme.objective(x)
    g = programme.gradient(x)
    layout.values(x, values)
    while True:
        kernel(state, fx, g, normals, values, x, mult, lower, upper, buffer, indices)
        mode = state["mode"]
        if mode == 1:
            fx = programme.objective(x)
            layout.values(x, values)
        elif mode == -1:
            g = programme.gradient(x)
            normals[...] = layout.jacobian  # scipy re-evaluates them, whatever the kernel did
        else:
            break
    return Solution(x, mode == 0, _MESSAGES.get(mode, f"SLSQP exit mode {mode}"))


def _linear(a: np.ndarray, low: np.ndarray, high: np.ndarray) -> list[dict[str, Any]]:
    """``low <= a @ x <= high`` as SLSQP's constraint dicts: the same functions, in the same
    order, as scipy makes of a ``LinearConstraint`` for SLSQP (so the iterates, hence grid2op
    parity, are the same), without the cost of building and converting that object."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    equal = low == high
    below = np.logical_xor(low != -np.inf, equal)
    above = np.logical_xor(high != np.inf, equal)
    out: list[dict[str, Any]] = []
    if equal.any():
        out.append({
            "type": "eq",
            "fun": lambda x: np.dot(a, x).flatten()[equal] - low[equal],
            "jac": lambda x: a[equal, :],
        })  # fmt: skip
    n_below, n_above = int(below.sum()), int(above.sum())
    if n_below + n_above:
        jac = np.concatenate((a[below], -a[above]))

        def fun(x: np.ndarray) -> np.ndarray:
            y = np.zeros(n_below + n_above)
            values = np.dot(a, x).flatten()
            y[:n_below] = values[below] - low[below]
            y[n_below:] = -(values[above] - high[above])
            return y

        out.append({"type": "ineq", "fun": fun, "jac": lambda x: jac})
    return out

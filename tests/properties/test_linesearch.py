"""Hypothesis: the Wolfe search returns steps meeting both subgradient Wolfe conditions
([YVGS10] eqs. 23-24, Thm. 11) on random convex piecewise-quadratic lines, and the exact search
matches a fine grid (notes 002, R19-R20)."""
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import nsopt
from nsopt.linesearch import exact_line_search, wolfe_line_search
from nsopt.oracle import LineFunction
from nsopt.regularizers import L2
from nsopt.testing import directions, piecewise_linear_max

C1, C2 = 1e-4, 0.9


class MaxOfQuadratics(LineFunction):
    """phi(eta) = max_k 0.5 a_k eta^2 + b_k eta + c_k (a_k >= 0), with exact one-sided
    derivatives (max / min over the active pieces) and its breakpoints (pairwise crossings)."""

    def __init__(self, a, b, c):
        self.a, self.b, self.c = (np.asarray(v, dtype=np.float64) for v in (a, b, c))

    def _pieces(self, eta):
        return 0.5 * self.a * eta * eta + self.b * eta + self.c

    def value(self, eta):
        return float(self._pieces(eta).max())

    def derivative(self, eta, side=1):
        v = self._pieces(eta)
        top = v.max()
        active = v >= top - 1e-12 * max(1.0, abs(top))
        d = (self.a * eta + self.b)[active]
        return float(d.max() if side == 1 else d.min())

    def breakpoints(self):
        out = []
        k = len(self.a)
        for i in range(k):
            for j in range(i + 1, k):
                qa, qb, qc = 0.5 * (self.a[i] - self.a[j]), self.b[i] - self.b[j], self.c[i] - self.c[j]
                if qa == 0:
                    if qb != 0:
                        out.append(-qc / qb)
                    continue
                disc = qb * qb - 4 * qa * qc
                if disc >= 0:
                    r = math.sqrt(disc)
                    out += [(-qb - r) / (2 * qa), (-qb + r) / (2 * qa)]
        return np.sort(np.array(out, dtype=np.float64))


@st.composite
def convex_lines(draw, descent=True):
    """A MaxOfQuadratics line, bounded below (one strictly convex piece), with phi'(0+) < 0
    (shifted by a linear term) when ``descent``. Pieces with a = 0 make it nonsmooth like a
    hinge; ties at eta = 0 are common (offsets on a coarse grid)."""
    k = draw(st.integers(1, 6))
    coef = st.integers(-8, 8).map(lambda i: i / 2)
    a = [draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 4.0])) for _ in range(k)]
    b = [draw(coef) for _ in range(k)]
    c = [draw(coef) for _ in range(k)]
    a.append(draw(st.sampled_from([0.01, 0.25, 1.0, 8.0])))
    b.append(draw(coef))
    c.append(draw(coef))
    line = MaxOfQuadratics(a, b, c)
    if descent:
        target = -draw(st.sampled_from([1e-3, 0.5, 1.0, 10.0, 300.0]))
        line.b = line.b + (target - line.derivative(0.0, 1))
    return line


@given(convex_lines(), st.sampled_from([1e-3, 0.3, 1.0, 50.0]))
def test_wolfe_step_meets_both_conditions(line, eta0):
    f0, s0 = line.value(0.0), line.derivative(0.0, 1)
    assert s0 < 0
    res = wolfe_line_search(line, f0, s0, c1=C1, c2=C2, eta0=eta0)
    assert res.success and 0 < res.eta < math.inf
    assert res.value == line.value(res.eta)
    # checked independently of the search, from the definition on the pieces
    v = 0.5 * line.a * res.eta ** 2 + line.b * res.eta + line.c
    active = v >= v.max() - 1e-12 * max(1.0, abs(v.max()))
    assert v.max() <= f0 + C1 * res.eta * s0                                    # (23)
    assert (line.a * res.eta + line.b)[active].max() >= C2 * s0                 # (24)
    assert res.n_evals <= 2 * 60


@given(convex_lines(descent=False))
def test_exact_step_matches_a_fine_grid(line):
    res = exact_line_search(line)
    assert res.exact and res.success
    eta = res.eta
    hi = 2 * eta + 10.0
    grid = np.linspace(0.0, hi, 20001)
    values = (0.5 * line.a[:, None] * grid ** 2 + line.b[:, None] * grid + line.c[:, None]).max(axis=0)
    scale = max(1.0, abs(res.value))
    assert res.value <= values.min() + 1e-12 * scale
    # optimality: phi'(eta-) <= 0 <= phi'(eta+), or eta = 0 with phi'(0+) >= 0
    tol = 1e-9 * max(1.0, float(np.abs(line.a).max() * eta + np.abs(line.b).max()))
    assert line.derivative(eta, 1) >= -tol
    if eta > 0:
        assert line.derivative(eta, -1) <= tol


@given(st.integers(1, 4).flatmap(lambda d: st.tuples(piecewise_linear_max(d), directions(d))),
       st.sampled_from([0.1, 1.0]))
def test_wolfe_on_oracle_lines_uses_sup_derivatives(case, lam):
    """On lines of nsopt.Max of affine pieces (+ lam/2 |w|^2) at points with ties, the search
    (reached through exact_line_search's fallback: MaxLine knows no breakpoints) meets (23)
    and (24) stated with the oracle's sup over the subdifferential at both ends (R19)."""
    pl, p = case
    f = pl.oracle + lam * L2()
    w = pl.point
    s0, _ = f.sup_subgradient(w, p)
    f0 = f.value(w)
    res = exact_line_search(f.restrict(w, p), f0=f0, slope0=s0, c1=C1, c2=C2)
    assert not res.exact
    if s0 >= 0:
        assert res.eta == 0.0 and not res.success
        return
    assert res.success
    x = w + res.eta * p
    assert f.value(x) <= f0 + C1 * res.eta * s0 + 1e-12 * max(1.0, abs(f0))    # (23)
    assert f.sup_subgradient(x, p)[0] >= C2 * s0 - 1e-12 * abs(s0)              # (24)


@given(convex_lines(), st.integers(0, 3))
def test_exact_and_wolfe_agree_when_the_minimiser_is_wolfe(line, _):
    """The exact step satisfies the curvature condition (24) for any descent direction
    ([YVGS10] Sec. 3.3), and no Wolfe step does better than it."""
    f0, s0 = line.value(0.0), line.derivative(0.0, 1)
    ex = exact_line_search(line)
    assert line.derivative(ex.eta, 1) >= C2 * s0
    wo = wolfe_line_search(line, f0, s0)
    assert ex.value <= wo.value + 1e-12 * max(1.0, abs(wo.value))

"""Hypothesis laws of every scalar loss ([TVSL10] Table 5): values, subgradients, the
sup-subgradient at kinks, line restrictions and their exact minimisation, dense vs sparse,
sample weights vs duplicated rows.

Strategies build valid inputs directly (no ``assume``). Data, points and directions are dyadic
(entries of X in {+-1/2, +-1, +-2}, points on a grid of 1/8, targets on a grid of 1/4), so scores
are computed exactly and kinks are hit exactly: with single-nonzero rows of X, a coordinate
``w_j = kink_i / X[i, j]`` puts example ``i`` exactly on its kink (and the other examples of
column j wherever they fall, often on kinks too). The reference for the sup-subgradient is
brute force: each loss is written as a maximum of affine pieces in the score (or is
differentiable), and ``R'(w; p) = sum_i c_i max_{k active at f_i} slope_ik q_i`` with
``q = X p``.

Notation: f = X w (scores), q = X p, c the normalised sample weights.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import nsopt
from nsopt.losses.scalar import (
    EpsilonInsensitive,
    Exponential,
    Hinge,
    Huber,
    LeastAbsoluteDeviation,
    LeastSquares,
    Logistic,
    Novelty,
    Poisson,
    Quantile,
    SquaredHinge,
)
from nsopt.regularizers import L2

DYADIC_DATA = (1.0, -1.0, 0.5, -0.5, 2.0, -2.0)


# --- the catalogue: direct numpy formulas, affine pieces, kinks ------------------------------
class Spec(NamedTuple):
    make: Callable            # (X, y, param, sample_weight) -> loss
    labels: str               # "binary", "real", "counts" or "none" (y = rho, drawn as param)
    param: st.SearchStrategy | None
    value: Callable           # (z, y, param) -> element values l(z_i, y_i)
    deriv: Callable | None    # (z, y, param) -> l'(z_i, y_i), differentiable losses only
    pieces: Callable | None   # (y, param) -> (slopes, offsets), each (m, K): l = max_k slope z + offset
    kinks: Callable | None    # (y, param) -> (m, K) scores where l or l' is not smooth


def _col(a):
    return np.asarray(a, dtype=np.float64)[:, None]


def _stack(*cols):
    return np.stack(np.broadcast_arrays(*cols), axis=1).astype(np.float64)


def _log1pexp(t):
    return np.logaddexp(0.0, t)


SPECS = {
    "Hinge": Spec(
        lambda X, y, a, s: Hinge(X, y, sample_weight=s), "binary", None,
        lambda z, y, a: np.maximum(0.0, 1.0 - y * z), None,
        lambda y, a: (_stack(0.0 * y, -y), _stack(0.0 * y, 1.0 + 0.0 * y)),
        lambda y, a: _col(y)),
    "SquaredHinge": Spec(
        lambda X, y, a, s: SquaredHinge(X, y, sample_weight=s), "binary", None,
        lambda z, y, a: 0.5 * np.maximum(0.0, 1.0 - y * z) ** 2,
        lambda z, y, a: -y * np.maximum(0.0, 1.0 - y * z), None,
        lambda y, a: _col(y)),
    "Logistic": Spec(
        lambda X, y, a, s: Logistic(X, y, sample_weight=s), "binary", None,
        lambda z, y, a: _log1pexp(-y * z),
        lambda z, y, a: -y / (1.0 + np.exp(y * z)), None, None),
    "Exponential": Spec(
        lambda X, y, a, s: Exponential(X, y, sample_weight=s), "binary", None,
        lambda z, y, a: np.exp(-y * z),
        lambda z, y, a: -y * np.exp(-y * z), None, None),
    "Huber": Spec(
        lambda X, y, a, s: Huber(X, y, delta=a, sample_weight=s), "real",
        st.sampled_from([0.25, 0.5, 1.0, 2.0]),
        lambda z, y, a: np.where(np.abs(z - y) <= a, 0.5 * (z - y) ** 2,
                                 a * (np.abs(z - y) - 0.5 * a)),
        lambda z, y, a: np.clip(z - y, -a, a), None,
        lambda y, a: _stack(y - a, y + a)),
    "LeastSquares": Spec(
        lambda X, y, a, s: LeastSquares(X, y, sample_weight=s), "real", None,
        lambda z, y, a: 0.5 * (z - y) ** 2,
        lambda z, y, a: z - y, None, None),
    "LeastAbsoluteDeviation": Spec(
        lambda X, y, a, s: LeastAbsoluteDeviation(X, y, sample_weight=s), "real", None,
        lambda z, y, a: np.abs(z - y), None,
        lambda y, a: (_stack(1.0 + 0 * y, -1.0 + 0 * y), _stack(-y, y)),
        lambda y, a: _col(y)),
    "Quantile": Spec(
        lambda X, y, a, s: Quantile(X, y, tau=a, sample_weight=s), "real",
        st.sampled_from([0.125, 0.25, 0.5, 0.75, 0.875]),
        # pinball of level a (Koenker): a per unit of under-prediction, 1 - a of over-
        lambda z, y, a: np.maximum(a * (y - z), (1.0 - a) * (z - y)), None,
        lambda y, a: (_stack(1.0 - a + 0 * y, -a + 0 * y), _stack((a - 1.0) * y, a * y)),
        lambda y, a: _col(y)),
    "EpsilonInsensitive": Spec(
        lambda X, y, a, s: EpsilonInsensitive(X, y, epsilon=a, sample_weight=s), "real",
        st.sampled_from([0.0, 0.25, 0.5, 1.0]),
        # distance past the kinks y -+ a (|z - y| - a would round z - y to the precision of y)
        lambda z, y, a: np.maximum(0.0, np.maximum(z - (y + a), (y - a) - z)), None,
        lambda y, a: (_stack(0 * y, 1.0 + 0 * y, -1.0 + 0 * y), _stack(0 * y, -y - a, y - a)),
        lambda y, a: _stack(y - a, y + a)),
    "Poisson": Spec(
        lambda X, y, a, s: Poisson(X, y, sample_weight=s), "counts", None,
        lambda z, y, a: np.exp(z) - y * z,
        lambda z, y, a: np.exp(z) - y, None, None),
    "Novelty": Spec(
        lambda X, y, a, s: Novelty(X, rho=a, sample_weight=s), "none",
        st.sampled_from([1.0, 0.5, 2.0, 0.0, -0.75]),
        lambda z, y, a: np.maximum(0.0, a - z), None,
        lambda y, a: (_stack(0 * y, -1.0 + 0 * y), _stack(0 * y, a + 0 * y)),
        lambda y, a: _col(0 * y + a)),
}
NAMES = sorted(SPECS)
DIFFERENTIABLE = sorted(n for n in NAMES if SPECS[n].deriv is not None)


# --- strategies -------------------------------------------------------------------------
class Case(NamedTuple):
    name: str
    X: np.ndarray             # dense copy of the data
    y: np.ndarray             # targets (rho repeated for Novelty)
    param: float | None
    weight: np.ndarray | None  # integer sample weights or None
    w: np.ndarray
    p: np.ndarray
    v: np.ndarray             # a second point, for the subgradient inequality

    def loss(self, sparse=False, weight="self"):
        X = sp.csr_matrix(self.X) if sparse else self.X
        s = self.weight if isinstance(weight, str) else weight
        return SPECS[self.name].make(X, self.y, self.param, s)

    @property
    def c(self):
        s = np.ones(self.X.shape[0]) if self.weight is None else self.weight
        return s / s.sum()


@functools.lru_cache(maxsize=None)
def _grid(scale: float, step: float):
    k = int(round(scale / step))
    return st.integers(-k, k).map(lambda i: i * step)


def _floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _vector(draw, n, elements):
    return np.array(draw(st.lists(elements, min_size=n, max_size=n)), dtype=np.float64)


@st.composite
def cases(draw, name, kinked=False, weighted=None, m=(1, 7), d=(1, 4)):
    """A loss ``name`` on drawn data with a point ``w``, a direction ``p`` and a point ``v``.

    ``kinked=True``: X has one nonzero per row and ``w`` puts drawn examples exactly on a kink
    (or breakpoint of the second derivative) of their loss.
    """
    spec = SPECS[name]
    m = draw(st.integers(*m))
    d = draw(st.integers(*d))
    param = draw(spec.param) if spec.param is not None else None
    if spec.labels == "binary":
        y = _vector(draw, m, st.sampled_from([1.0, -1.0]))
    elif spec.labels == "real":
        y = _vector(draw, m, _grid(2.0, 0.25))
    elif spec.labels == "counts":
        y = _vector(draw, m, st.integers(0, 6))
    else:
        y = np.full(m, param)
    if kinked:
        cols = _vector(draw, m, st.integers(0, d - 1)).astype(int)
        X = np.zeros((m, d))
        X[np.arange(m), cols] = _vector(draw, m, st.sampled_from(DYADIC_DATA))
    else:
        X = _vector(draw, m * d, st.sampled_from(DYADIC_DATA) | _floats(-2.0, 2.0)).reshape(m, d)
        X[~np.array(draw(st.lists(st.booleans(), min_size=m * d, max_size=m * d))).reshape(m, d)] = 0.0
    w = _vector(draw, d, _grid(2.0, 0.125))
    if kinked and spec.kinks is not None:
        kinks = spec.kinks(y, param)
        for j in range(d):
            rows = np.flatnonzero(cols == j)
            if rows.size and draw(st.integers(0, 3)):  # usually put one example of column j on a kink
                i = int(draw(st.sampled_from(rows.tolist())))
                kink = kinks[i, draw(st.integers(0, kinks.shape[1] - 1))]
                w[j] = kink / X[i, j]
    p = _vector(draw, d, _grid(1.0, 0.25))
    p[draw(st.integers(0, d - 1))] = draw(st.sampled_from([0.25, -0.25, 0.5, -1.0, 1.0]))
    v = _vector(draw, d, _floats(-2.0, 2.0))
    if weighted is None:
        weighted = draw(st.booleans())
    weight = None
    if weighted:
        weight = _vector(draw, m, st.integers(0, 3))
        weight[draw(st.integers(0, m - 1))] += 1.0
    return Case(name, X, y, param, weight, w, p, v)


def _close(a, b, rtol, *scales):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b), *map(abs, scales))


# --- brute force -----------------------------------------------------------------------
def brute_sup(case, w, p):
    """``R'(w; p)`` from the affine pieces (or the derivative) of each example's loss."""
    spec = SPECS[case.name]
    f, q = case.X @ w, case.X @ p
    if spec.deriv is not None:
        return float(case.c @ (spec.deriv(f, case.y, case.param) * q))
    slopes, offsets = spec.pieces(case.y, case.param)
    vals = slopes * f[:, None] + offsets
    active = vals == vals.max(axis=1, keepdims=True)  # exact: dyadic data
    dirs = np.where(active, slopes * q[:, None], -np.inf).max(axis=1)
    return float(case.c @ dirs)


def risk(case, w):
    spec = SPECS[case.name]
    return float(case.c @ spec.value(case.X @ w, case.y, case.param))


# --- laws ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_values_match_numpy_formula(name, data):
    case = data.draw(cases(name))
    loss = case.loss()
    spec = SPECS[name]
    f = case.X @ case.w
    # element values through the kernel, one example at a time
    one = np.ones(1)
    elem = np.array([loss._value_kernel(f[i:i + 1], loss.y[i:i + 1], one) for i in range(f.size)])
    np.testing.assert_allclose(elem, spec.value(f, case.y, case.param), rtol=1e-13, atol=1e-300)
    # the risk, its value-and-subgradient twin, and the lower bound
    r = loss.value(case.w)
    assert _close(r, risk(case, case.w), 1e-13)
    r2, a = loss.value_and_subgradient(case.w)
    assert r2 == pytest.approx(r, rel=1e-14, abs=1e-300)
    assert a.shape == (case.X.shape[1],)
    assert r >= loss.lower_bound - 1e-12 * max(1.0, abs(r))
    if spec.deriv is not None:  # the subgradient is the gradient
        g = case.X.T @ (case.c * spec.deriv(f, case.y, case.param))
        np.testing.assert_allclose(a, g, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(g).max()))


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_subgradient_inequality(name, data):
    case = data.draw(cases(name, kinked=data.draw(st.booleans())))
    loss = case.loss()
    w, v = case.w, case.v
    rw, a = loss.value_and_subgradient(w)
    rv = loss.value(v)
    _, g = loss.sup_subgradient(w, case.p)
    for sub in (a, g):
        lin = rw + float(sub @ (v - w))
        assert rv >= lin - 1e-12 * max(1.0, abs(rv), abs(rw), float(np.abs(sub) @ np.abs(v - w)))


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@given(data=st.data())
def test_finite_differences(name, data):
    _check_finite_differences(data.draw(cases(name)))


def _check_finite_differences(case):
    loss = case.loss()
    rw, a = loss.value_and_subgradient(case.w)
    m, d = case.X.shape
    eps = np.finfo(float).eps
    # |g| with g = c * l'(f), the test's own formula: the scale of the rounding errors below
    absg = np.abs(case.c * SPECS[case.name].deriv(case.X @ case.w, case.y, case.param))
    # the direction p and every axis, scaled so that |<x_i, p>| <= 1: a central difference
    # across a jump of l'' then errs by at most h / 4
    for p in [case.p, *np.eye(d)]:
        q = np.abs(case.X @ p).max()
        if q == 0:
            continue
        p = p / q
        h = 1e-7
        fd = (loss.value(case.w + h * p) - loss.value(case.w - h * p)) / (2 * h)
        # Rounding, with T = |g|^T |X| |p| (the sum of the magnitudes of the terms of
        # <g, X p>). <a, p> with a = fl(X^T g): each a_j is off by <= gamma_m sum_i |X_ij| |g_i|
        # and the dot product adds gamma_d sum_j |a_j| |p_j|, so <a, p> is off by
        # <= (gamma_m + gamma_d) T; the kernel's g_i by a few ulps, <= 4 eps T. s = <g, fl(X p)>
        # (sup_subgradient) is off by the same (m + d + 4) eps T. The difference quotient
        # evaluates scores fl(<x_i, fl(w +- h p)>), off by gamma_{d+1} sum_j |X_ij| (|w_j| +
        # h |p_j|), which the quotient turns into (d + 1) eps (T + |g|^T |X| |w| / h). When
        # <g, X p> cancels (X p = 1e-20 from p = [-1, 1] and a row [1, 1], rescaled to p = 1e20
        # [-1, 1]), T is large and <a, p> legitimately holds no digit of it.
        T = float(absg @ np.abs(case.X) @ np.abs(p))
        dot_err = (m + d + 4) * eps * T
        fd_err = (d + 1) * eps * (T + float(absg @ np.abs(case.X) @ np.abs(case.w)) / h)
        assert abs(fd - float(a @ p)) <= 1e-6 * max(1.0, abs(fd), abs(float(a @ p)), abs(rw)) \
            + dot_err + fd_err, (p, fd, float(a @ p))
        # a = X^T (c * l'(f)) holds products that underflow (1e-228 * 1e-230 -> 0) where
        # <c * l'(f), X p> does not: each entry of a may be off by up to m * tiny (one underflow
        # per term), and <a, p> by that times |p|_1, which the rescaling p / q amplifies
        underflow = m * np.finfo(float).tiny * float(np.abs(p).sum())
        assert loss.sup_subgradient(case.w, p)[0] == pytest.approx(
            float(a @ p), rel=1e-12, abs=max(1e-300, underflow + 2 * dot_err))


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_sup_subgradient_at_kinks_matches_brute_force(name, data):
    case = data.draw(cases(name, kinked=True))
    loss = case.loss()
    w, p = case.w, case.p
    for direction in (p, -p):
        s, g = loss.sup_subgradient(w, direction)
        expected = brute_sup(case, w, direction)
        assert _close(s, expected, 1e-12), (s, expected)
        # g attains s and is a subgradient
        assert _close(float(g @ direction), s, 1e-12, float(np.abs(g) @ np.abs(direction)))
        rw, rv = loss.value(w), loss.value(case.v)
        assert rv >= rw + float(g @ (case.v - w)) - 1e-12 * max(1.0, abs(rv), abs(rw))
    # the default subgradient lies in the subdifferential: -R'(w; -p) <= <a, p> <= R'(w; p)
    a = loss.subgradient(w)
    right, left = loss.sup_subgradient(w, p)[0], -loss.sup_subgradient(w, -p)[0]
    tol = 1e-12 * max(1.0, abs(right), abs(left))
    assert left - tol <= float(a @ p) <= right + tol
    # a one-sided difference quotient agrees (piecewise-linear losses: exactly, for small h)
    h = 2.0 ** -20
    quotient = (loss.value(w + h * p) - loss.value(w)) / h
    assert _close(quotient, right, 1e-4, loss.value(w)), (quotient, right)


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_restrict_matches_oracle(name, data):
    _check_restrict(data.draw(cases(name, kinked=data.draw(st.booleans()))))


def _check_restrict(case):
    name = case.name
    loss = case.loss()
    w, p = case.w, case.p
    line = loss.restrict(w, p)
    for eta in (-1.0, -0.25, 0.0, 0.125, 0.5, 1.0, 2.0):  # dyadic: w + eta p is exact
        x = w + eta * p
        assert _close(line.value(eta), loss.value(x), 1e-13)
        right, left = line.derivative(eta, 1), line.derivative(eta, -1)
        slack = _kink_slack(case, w, p, eta, x)
        assert _close(right, loss.sup_subgradient(x, p)[0], 1e-12) or \
            abs(right - loss.sup_subgradient(x, p)[0]) <= slack, (eta, slack)
        assert _close(left, -loss.sup_subgradient(x, -p)[0], 1e-12) or \
            abs(left + loss.sup_subgradient(x, -p)[0]) <= slack, (eta, slack)
        assert _close(right, brute_sup(case, x, p), 1e-12) or \
            abs(right - brute_sup(case, x, p)) <= slack, (eta, slack)
        assert right >= left - 1e-12 * max(1.0, abs(left))
    # between breakpoints the derivative is continuous (no missing breakpoint)
    bps = line.breakpoints()
    assert bps is not None and np.all(np.diff(bps) >= 0)
    # a breakpoint beyond the float range (q_i subnormal: 1 / 5.6e-309) is +-inf, where the
    # line is not defined: probe between the finite ones (halves first: no overflow)
    t = np.unique(np.concatenate([[-4.0, 4.0], bps[np.isfinite(bps)]]))
    for eta in 0.5 * t[1:] + 0.5 * t[:-1]:
        right, left = line.derivative(eta, 1), line.derivative(eta, -1)
        slack = _kink_slack(case, w, p, eta)
        assert _close(right, left, 1e-12) or abs(right - left) <= slack, (eta, right, left, bps)
    if SPECS[name].kinks is None:
        assert bps.size == 0


def _kink_slack(case, w, p, eta, x=None):
    """How far the line's one-sided derivatives at ``eta`` may honestly differ from the
    oracle's at ``x = w + eta p`` (or, with ``x`` None, right from left between breakpoints).

    The line scores ``f + eta q`` (``f = Xw``, ``q = Xp``; within 8 ulps of a kink snapped onto
    it, as ``ScalarLine`` does) and the oracle's ``X x`` are different roundings of one number.
    With non-dyadic data (entries like 1e-238 absorbed in ``0.125 + 1e-238``) they can sit on
    different sides of a kink, or the line's on it and the oracle's just off it; no floating
    point formula can decide which is true. Only such examples (sides differ, scores within
    rounding) may change the derivative, each by at most ``c_i |slope jump| |q_i|``. Exact
    (dyadic) cases, where both scores are exact, get no slack. Between breakpoints an example
    counts when its line score is within rounding of a kink (the interval then has no float
    inside it that is off the kink, e.g. breakpoints 3.9999999999999996 and 4.0).
    """
    spec = SPECS[case.name]
    if spec.pieces is None:
        return 0.0  # differentiable: no derivative jump to excuse
    slopes, _ = spec.pieces(case.y, case.param)
    jump = slopes.max(axis=1) - slopes.min(axis=1)
    kinks = spec.kinks(case.y, case.param)
    f, q = case.X @ w, case.X @ p
    zl = f + eta * q
    eps = np.finfo(float).eps
    scale = np.abs(case.X) @ (np.abs(w) + abs(eta) * np.abs(p))
    amb = np.zeros(case.X.shape[0], dtype=bool)
    for k in kinks.T:
        tol = 16 * eps * (scale + np.abs(k))
        near_l = np.abs(zl - k) <= tol
        if x is None:
            amb |= near_l
            continue
        zo = case.X @ x
        sl = np.where(np.abs(zl - k) <= 8 * eps * (np.abs(f) + np.abs(eta * q) + np.abs(k)),
                      0.0, np.sign(zl - k))
        amb |= (sl != np.sign(zo - k)) & (near_l | (np.abs(zo - k) <= tol))
    return float(case.c @ (amb * jump * np.abs(q))) * (1 + 1e-12)


def _check_line_minimum(line, eta, rtol=1e-9):
    """Optimality conditions and a grid. A minimiser on a kink is returned as the breakpoint
    ``(kink - f_i) / q_i``, where ``f_i + eta q_i`` may miss the kink by an ulp: the one-sided
    derivatives are taken 16 ulps outside (monotone, so still a test of optimality)."""
    assert 0.0 <= eta < math.inf
    d0 = abs(line.derivative(0.0, 1))
    dtol = rtol * (1.0 + d0)
    delta = 16 * np.finfo(float).eps * max(1.0, eta)
    assert line.derivative(eta + delta, 1) >= -dtol
    if eta > 0:
        assert line.derivative(max(eta - delta, 0.0), -1) <= dtol
    grid = np.linspace(0.0, max(2.0 * eta, 1.0), 2001)
    best = min(line.value(t) for t in grid)
    phi = line.value(eta)
    assert phi <= best + 1e-12 * max(1.0, abs(best)), (eta, phi, best)


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_line_minimize_is_exact(name, data):
    """``RegularizedRisk(loss, L2(), lam).restrict(w, p).minimize()`` is exact: breakpoint
    bisection, then Brent on the piece (exact for the piecewise linear / quadratic losses, to
    rounding for the smooth ones), checked by the optimality conditions and a fine grid."""
    case = data.draw(cases(name, kinked=data.draw(st.booleans())))
    lam = data.draw(st.sampled_from([1e-2, 0.125, 1.0]))
    line = nsopt.RegularizedRisk(case.loss(), L2(), lam).restrict(case.w, case.p)
    _check_line_minimum(line, line.minimize())


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_dense_and_sparse_agree(name, data):
    _check_dense_sparse(data.draw(cases(name, kinked=data.draw(st.booleans()))))


def _score_error(case, v):
    """A bound on ``|fl(X v) - X v|`` per row for any summation order (BLAS pairs terms, CSR
    adds them in turn, with or without FMA): d products and d - 1 sums, each off by eps / 2
    relative, give ``gamma_d sum_j |X_ij| |v_j| <= d eps sum_j |X_ij| |v_j|``; below the
    normal range (entries near 1e-308) each of those 2d operations is off by up to half a
    subnormal spacing instead, an absolute error."""
    d = case.X.shape[1]
    eps = np.finfo(float).eps
    return d * eps * (np.abs(case.X) @ np.abs(v)) + d * np.finfo(float).smallest_subnormal


def _paths_slack(case, lines, eta, steepest=True):
    """How far two computations of one line (dense and sparse data: ``f = X w`` and ``q = X p``
    summed in different orders) may honestly differ in a derivative at ``eta``: ``(s, g)``
    with ``s`` the slack of a one-sided derivative (or of ``sup_subgradient``'s value) and
    ``g`` (d,) that of the subgradient vector.

    An example counts only when its two scores sit on different sides of a kink (or one on it)
    while both are within rounding of it, or (``steepest``: the side is chosen by the sign of
    q) both sit on a kink and the two q_i, both within rounding of 0, have different signs. Its
    derivative may then be either end of the subdifferential, ``c_i |slope jump| |q_i|``
    apart (``c_i |slope jump| |x_i|`` in the subgradient). Exact (dyadic) cases compute one
    score in both paths: no slack.
    """
    spec = SPECS[case.name]
    if spec.pieces is None:  # differentiable: l' has no jump
        return 0.0, np.zeros(case.X.shape[1])
    slopes, _ = spec.pieces(case.y, case.param)
    jump = slopes.max(axis=1) - slopes.min(axis=1)
    kinks = spec.kinks(case.y, case.param)
    eps = np.finfo(float).eps
    ef, eq = _score_error(case, case.w), _score_error(case, case.p)
    zs, qs, errs = [], [], []
    for line in lines:
        f, q = line.f, line.q
        zs.append(line._snap(f + eta * q, eta))  # the scores the line's kernel sees
        qs.append(q)
        # z = fl(f + eta q) misses X(w + eta p) by the rounding of f and q, of the sum, and by
        # the snap onto a kink within 8 eps (|f| + |eta q| + |k|)
        errs.append(ef + abs(eta) * eq + 9 * eps * (np.abs(f) + np.abs(eta * q))
                    + 8 * eps * np.abs(kinks).max(axis=1))
    amb = np.zeros(case.X.shape[0], dtype=bool)
    err = errs[0] + errs[1]  # a kink between the two scores is within this of each
    for k in kinks.T:
        sides = [np.sign(z - k) for z in zs]
        near = (np.abs(zs[0] - k) <= err) & (np.abs(zs[1] - k) <= err)
        amb |= (sides[0] != sides[1]) & near
        if steepest:
            on = (sides[0] == 0) & (sides[1] == 0)
            tiny = np.logical_and.reduce([np.abs(q) <= eq for q in qs])
            amb |= on & (np.sign(qs[0]) != np.sign(qs[1])) & tiny
    weight = case.c * amb * jump
    qmax = np.maximum(np.abs(qs[0]), np.abs(qs[1]))
    return float(weight @ qmax) * (1 + 1e-12), (weight @ np.abs(case.X)) * (1 + 1e-12)


def _line_breakpoints(case, line, rows):
    """The breakpoints ``(k - f_i) / q_i`` of the examples ``rows`` (where q_i != 0), as the
    line computes them."""
    k = SPECS[case.name].kinks(case.y, case.param)
    rows = rows & (line.q != 0)
    with np.errstate(over="ignore"):
        return ((k[rows] - line.f[rows, None]) / line.q[rows, None]).ravel()


def _without(values, drop):
    """``values`` (sorted) with one occurrence of each of ``drop`` removed (exact matches)."""
    values = list(values)
    for v in drop:
        values.remove(v)
    return np.array(values)


def _check_dense_sparse(case):
    dense, sparse = case.loss(), case.loss(sparse=True)
    w, p = case.w, case.p
    ld, ls = dense.restrict(w, p), sparse.restrict(w, p)

    def agree(a, b, slack=0.0):
        a, b = np.atleast_1d(a), np.atleast_1d(b)
        assert a.shape == b.shape, (a, b)
        tol = 1e-12 * (max(1.0, np.abs(a[np.isfinite(a)]).max(initial=0)) + np.abs(b)) + slack
        assert np.all((a == b) | (np.abs(a - b) <= tol)), (a, b, slack)

    agree(dense.value(w), sparse.value(w))
    s, g = _paths_slack(case, (ld, ls), 0.0, steepest=False)  # the default subgradient
    for x, y, slack in zip(dense.value_and_subgradient(w), sparse.value_and_subgradient(w), (0, g)):
        agree(x, y, slack)
    s, g = _paths_slack(case, (ld, ls), 0.0)
    for x, y, slack in zip(dense.sup_subgradient(w, p), sparse.sup_subgradient(w, p), (s, g)):
        agree(x, y, slack)
    for eta in (0.0, 0.375, 1.0):
        agree(ld.value(eta), ls.value(eta))
        s, _ = _paths_slack(case, (ld, ls), eta)
        agree(ld.derivative(eta, 1), ls.derivative(eta, 1), s)
        agree(ld.derivative(eta, -1), ls.derivative(eta, -1), s)
    assert dense.lower_bound == sparse.lower_bound
    if SPECS[case.name].kinks is None:
        assert ld.breakpoints().size == ls.breakpoints().size == 0
        return
    # Breakpoints b = (k - f_i) / q_i. Where q_i is within rounding of 0 in either path, the
    # other may have q_i = 0 (no breakpoint) or another tiny q_i (a breakpoint anywhere beyond
    # |k - f_i| / |q_i|): not determined by the data, not compared. Each other one is off the
    # exact b by at most (ef_i + |b| eq_i) / (|q_i| - eq_i) when f_i and q_i are off by their
    # rounding ef_i, eq_i (plus 2 eps |b| for the subtraction and the division), so by at most
    # t(b) = A + B |b| with A, B the largest such ratios; b -+ t(b) increase with b, so sorting
    # keeps the bound, and the two paths differ by at most twice it.
    ef, eq = _score_error(case, w), _score_error(case, p)
    tiny = (np.abs(ld.q) <= eq) | (np.abs(ls.q) <= eq)
    bd = _without(ld.breakpoints(), _line_breakpoints(case, ld, tiny))
    bs = _without(ls.breakpoints(), _line_breakpoints(case, ls, tiny))
    sure = ~tiny & (ld.q != 0)
    margin = (np.minimum(np.abs(ld.q), np.abs(ls.q)) - eq)[sure]
    A = float((ef[sure] / margin).max(initial=0.0))
    B = float((eq[sure] / margin).max(initial=0.0)) + 2 * np.finfo(float).eps
    # inf - inf where both overflow (compared by ==); B |b| + A may overflow near 1e308
    with np.errstate(invalid="ignore", over="ignore"):
        agree(bd, bs, 2 * (A + B * np.maximum(np.abs(bd), np.abs(bs))) * (1 + 1e-12))


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_sample_weights_equal_duplicated_rows(name, data):
    case = data.draw(cases(name, kinked=data.draw(st.booleans()), weighted=True))
    reps = case.weight.astype(int)
    rows = np.repeat(np.arange(case.X.shape[0]), reps)
    weighted = case.loss()
    duplicated = SPECS[name].make(case.X[rows], case.y[rows], case.param, None)
    w, p = case.w, case.p

    def agree(a, b):
        a, b = np.atleast_1d(a), np.atleast_1d(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13 * max(1.0, np.abs(a).max(initial=0)))

    agree(weighted.value(w), duplicated.value(w))
    agree(weighted.subgradient(w), duplicated.subgradient(w))
    for x, y in zip(weighted.sup_subgradient(w, p), duplicated.sup_subgradient(w, p)):
        agree(x, y)
    agree(weighted.restrict(w, p).derivative(0.5, -1), duplicated.restrict(w, p).derivative(0.5, -1))
    agree(weighted.lower_bound, duplicated.lower_bound)


# --- regressions: falsifying examples of an explore run (500 examples) -------------------
def _rows(m, d, rows):
    X = np.zeros((m, d))
    for i, r in rows.items():
        X[i] = r
    return X


_A = np.array
REGRESSIONS = [
    # line scores f + eta q absorb a tiny entry that X (w + eta p) keeps: 0 vs -5e-239 at rho = 0
    Case("Novelty", _rows(7, 4, {0: [0, 4.01962472e-238, 1, 0]}), np.zeros(7), 0.0, None,
         _A([0, 0, 0.125, 0]), _A([0, -0.25, -0.25, 0]), np.zeros(4)),
    Case("Novelty", _rows(7, 4, {0: [0, 4.01962472e-238, 1, 0]}), np.zeros(7), 0.0, None,
         _A([0, 0, 0.125, 0]), _A([0, 0.25, -0.25, 0]), np.zeros(4)),
    # (found at tau = 0.125 when tau meant the level 1 - tau: the same loss is now tau = 0.875)
    Case("Quantile", _rows(5, 3, {2: [-1, 2.32793364e-184, 0]}), np.zeros(5), 0.875, None,
         _A([0.125, 0, 0]), _A([-0.25, 0.25, 0]), np.zeros(3)),
    Case("Quantile", _rows(5, 3, {2: [1, 2.32793364e-184, 0]}), np.zeros(5), 0.875, None,
         _A([0.125, 0, 0]), _A([-0.25, 0.25, 0]), np.zeros(3)),
    Case("Hinge", _rows(7, 3, {6: [-2.0 ** -52, -0.5, 0]}), np.ones(7), None, None,
         _A([-0.125, -1.0, 0]), _A([-0.25, -0.5, 0]), np.zeros(3)),
    Case("Hinge", _rows(7, 3, {6: [2.0 ** -52, -0.5, 0]}), np.ones(7), None, None,
         _A([0.0, -1.0, 0]), _A([-0.25, -0.5, 0]), np.zeros(3)),
    # the score -8.7e-128 is left of the kink y - eps = 0 (y = eps = 1), where the right
    # derivative is -c q; |fl(z - y)| - eps = |-1| - 1 = 0 put it on the kink (derivative 0)
    Case("EpsilonInsensitive", _rows(6, 4, {4: [1.0, 0, 0, -6.98546843e-127]}),
         _A([0, 0, 0, 0, 1.0, 0]), 1.0, None, _A([0, 0, 0, 0.125]), _A([0.25, 0, 0, 0]),
         np.zeros(4)),
    # explore run: q_6 = 2.2e-308 * 0.25 puts a breakpoint at 1 / 5.6e-309 = inf; the probe
    # "between breakpoints" 4 and inf was eta = inf
    Case("Novelty", _rows(7, 4, {2: [1.0, 0, 0, 0], 6: [0, 0, np.finfo(float).tiny, 0]}),
         np.ones(7), 1.0, None, np.zeros(4), _A([0.25, 0, 0.25, 0]), np.zeros(4)),
    # breakpoint 1 / (0.25 + 2^-54) = 3.9999999999999996 next to 4.0: no float between them
    Case("Hinge", _rows(7, 3, {6: [1.0, 2.0 ** -52, 0]}), np.ones(7), None, None,
         np.zeros(3), _A([0.25, 0.25, 0]), np.zeros(3)),
]


@pytest.mark.parametrize("case", REGRESSIONS, ids=lambda c: c.name)
def test_restrict_matches_oracle_regressions(case):
    _check_restrict(case)


FD_REGRESSIONS = [
    # p = [0.5, 0.5, 0] rescaled to [512, 512, 0]: <a, p> = 512 (a_0 + a_1) cancels (T = 10.7)
    # and misses <g, X p> = 8.1e-5 by 3e-16, 3.6e-12 relative
    Case("LeastSquares", _rows(3, 3, {1: [0.5, -0.5, 0], 2: [0, 2.0 ** -9, 0]}), np.zeros(3),
         None, None, _A([0, 0.125, 0]), _A([0.5, 0.5, 0]), np.zeros(3)),
    # rescaled by 1 / 5.1e-116 to p = 9.7e114 [1, 1, 0]: <a, p> = 0, <g, X p> = -1/12
    Case("LeastSquares", _rows(3, 3, {1: [0.5, -0.5, 0], 2: [0, 1.0283782842608897e-115, 0]}),
         _A([0, 0.25, 0.25]), None, None, np.zeros(3), _A([0.5, 0.5, 0]), np.zeros(3)),
    # X p = 1 - 1 + 1.08e-122 is 0 or 1.08e-122 by summation order: s = 0, <a, p> = -5.4e-123
    Case("Logistic", _rows(2, 4, {0: [0, 1, 1, 1.0777350814614465e-122], 1: [0, 0, 0, 1]}),
         np.ones(2), None, _A([1.0, 0.0]), np.zeros(4), _A([0, 0.25, -0.25, 0.25]), np.zeros(4)),
    # <a, p> = 2/3 - 2/3 = 0 loses the 1.3e-20 that s = <g, X p> keeps
    Case("SquaredHinge", _rows(3, 2, {0: [3.9305611921492924e-20, 0], 1: [-1, -1], 2: [1, 0]}),
         np.ones(3), None, None, _A([1.0, 0]), _A([-0.25, 0.25]), np.zeros(2)),
    # X p = 9.8e-21: p rescaled to 2.5e19 [-1, 1], <a, p> = 0 for <g, X p> = 1/3
    Case("SquaredHinge", _rows(3, 2, {0: [3.9305611921492924e-20, 0], 1: [1, 1]}),
         np.ones(3), None, None, np.zeros(2), _A([-0.25, 0.25]), np.zeros(2)),
]


@pytest.mark.parametrize("case", FD_REGRESSIONS, ids=lambda c: c.name)
def test_finite_differences_cancellation_regressions(case):
    _check_finite_differences(case)


# BLAS sums X[1] @ v as (x0 v0 + x2 v2) + (x1 v1 + x3 v3), CSR in turn: 1 - 1 + 6.6e-79 c is
# 0 in one path and 6.6e-79 c in the other (built after the reported explore failure of
# test_dense_and_sparse_agree[Huber] with an X entry of 6.6e-79, whose exact input was lost)
_CANCEL = _rows(2, 4, {1: [1.0, -1.0, 6.6e-79, 0.5]})
DENSE_SPARSE_REGRESSIONS = [
    # q_1 = 0 (dense) or 1.65e-79 (sparse): breakpoints only in the sparse path, at 1e79
    Case("Huber", _CANCEL, _A([0, 1.0]), 1.0, None, np.zeros(4), _A([0.25, 0.25, 0.25, 0]),
         np.zeros(4)),
    Case("Quantile", _CANCEL, np.zeros(2), 0.75, None, np.zeros(4), _A([0.25, 0.25, 0.25, 0]),
         np.zeros(4)),
    # f_1 = 0 on the kink (dense) or 6.6e-79 just right of it (sparse): the default subgradient
    # and the left derivative differ by c_1 |jump| |x_1|, |q_1|
    Case("Quantile", _CANCEL, np.zeros(2), 0.75, None, _A([0.125, 0.125, 1, 0]),
         _A([-0.25, 0, 0, 0]), np.zeros(4)),
    # from the explore run: q_4 = 1 - 1 - 2.5e-301 is -2.5e-301 (dense) or 0 (sparse) with f_4
    # on the kink: sup_subgradient takes the right end or the default, c_4 x_4 apart
    Case("Hinge", _rows(5, 4, {4: [0, -2.0, 1e-300, -2.0]}), np.ones(5), None, None,
         _A([0, 0, 0, -0.5]), _A([0, -0.5, -0.25, 0.5]), np.zeros(4)),
    # ... and a breakpoint at 4e300 in the dense path only
    Case("Hinge", _rows(5, 4, {4: [0, -2.0, 1e-300, -2.0]}), np.ones(5), None, None,
         np.zeros(4), _A([0, -0.5, 0.25, 0.5]), np.zeros(4)),
]


@pytest.mark.parametrize("case", DENSE_SPARSE_REGRESSIONS, ids=lambda c: c.name)
def test_dense_and_sparse_agree_regressions(case):
    _check_dense_sparse(case)


def test_finite_differences_underflow_regression():
    # a = X^T g underflows (1.1e-228 * 2e-230) where <g, X p> = 2e-230 does not
    case = Case("LeastSquares", _rows(7, 3, {5: [0, 1.10384432e-228, 0]}), np.zeros(7), None,
                None, _A([0, 0.125, 0]), _A([0.25, 0, 0]), np.zeros(3))
    _check_finite_differences(case)

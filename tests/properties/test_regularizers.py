"""Hypothesis laws of every regularizer: Fenchel-Young, subgradients, lines, conjugate gradients.

Strategies build valid inputs directly (no ``assume``): a regularizer with random parameters and
dimension, points in its domain (the closure, or the interior where a subgradient exists) and
directions. The laws checked are those of [TVSL10] Sec. 2.3 and test B1 of the 000 notes.
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsopt.regularizers import KL, L1, L2, ElasticNet, Lp, NegEntropy, QuadraticForm

SETTINGS = settings(max_examples=50, deadline=None)
MAX_DIM = 6

# --- elements -------------------------------------------------------------------------------
coord = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)
# values with exact zeros and ties, so that kinks and coinciding breakpoints occur often
kinky = st.one_of(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.0, 0.5, 1.0, 2.0]), coord)
# exact zeros or values bounded away from 0: finite differences stay accurate near |t|^p terms
separated = st.one_of(st.just(0.0), st.floats(0.1, 3.0), st.floats(-3.0, -0.1))
# kinky but never tiny and nonzero (one-sided finite differences must not cross a kink)
kinky_separated = st.one_of(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.0, 0.5, 1.0, 2.0]),
                            separated)
# no zeros: a one-sided difference of |t|^1.5 at t = 0 errs by O(sqrt(h))
nonzero = st.one_of(st.floats(0.1, 3.0), st.floats(-3.0, -0.1))


# strategies are cached: rebuilding one per example costs more than the checks themselves
@functools.lru_cache(maxsize=None)
def vectors(d: int, elements=coord):
    return st.lists(elements, min_size=d, max_size=d).map(lambda xs: np.array(xs, dtype=np.float64))


@functools.lru_cache(maxsize=None)
@st.composite
def spd_matrices(draw, d: int) -> np.ndarray:
    B = draw(vectors(d * d, st.floats(-1.0, 1.0))).reshape(d, d)
    return B @ B.T + 0.5 * np.eye(d)


@functools.lru_cache(maxsize=None)
@st.composite
def probability_vectors(draw, d: int, allow_zeros: bool = False) -> np.ndarray:
    entry = st.floats(0.05, 1.0)
    if allow_zeros:
        entry = st.one_of(st.just(0.0), st.floats(1e-6, 1.0))
    x = draw(vectors(d, entry))
    if x.sum() == 0:
        x[draw(st.integers(0, d - 1))] = 1.0
    return x / x.sum()


# --- the regularizers: name -> (builder(draw, d), domain) -------------------------------------
BUILDERS = {
    "L2": (lambda draw, d: L2(), "R"),
    "L1": (lambda draw, d: L1(), "R"),
    "Lp1.5": (lambda draw, d: Lp(1.5), "R"),
    "Lp2": (lambda draw, d: Lp(2), "R"),
    "Lp3": (lambda draw, d: Lp(3), "R"),
    "QuadraticForm": (lambda draw, d: QuadraticForm(draw(spd_matrices(d))), "R"),
    "ElasticNet": (lambda draw, d: ElasticNet(draw(st.sampled_from([0.0, 0.3, 0.5, 0.9]))), "R"),
    "NegEntropy": (lambda draw, d: NegEntropy(), "orthant"),
    "NegEntropy-normalized": (lambda draw, d: NegEntropy(normalized=True), "simplex"),
    "KL": (lambda draw, d: KL(draw(probability_vectors(d))), "simplex"),
}
NAMES = sorted(BUILDERS)
KINKED = ["L1", "ElasticNet"]                  # Omega has kinks at w_i = 0
EXACT_LINES = ["L1", "L2", "QuadraticForm", "ElasticNet"]
SMOOTH_CONJUGATE = [n for n in NAMES if n != "L1"]
NO_CURVATURE_BOUND = ["L1", "Lp3", "NegEntropy"]   # checked to be None in tests/test_regularizers.py


@functools.lru_cache(maxsize=None)
@st.composite
def regularizers(draw, name: str):
    d = draw(st.integers(1, MAX_DIM))
    build, domain = BUILDERS[name]
    return build(draw, d), d, domain


@functools.lru_cache(maxsize=None)
@st.composite
def domain_points(draw, domain: str, d: int, interior: bool = False, elements=kinky):
    """A point of the domain's closure, or of the interior (where a subgradient exists)."""
    if domain == "R":
        return draw(vectors(d, elements))
    if domain == "orthant":
        entry = st.floats(0.05, 5.0) if interior else st.one_of(st.just(0.0), st.floats(1e-6, 5.0))
        return draw(vectors(d, entry))
    return draw(probability_vectors(d, allow_zeros=not interior))


@functools.lru_cache(maxsize=None)
@st.composite
def directions(draw, domain: str, d: int, elements=kinky):
    p = draw(vectors(d, elements))
    if domain == "simplex":      # tangent to the simplex
        p = p - p.mean()
    return p


@functools.lru_cache(maxsize=None)
def dual_points(name: str, d: int, elements=coord):
    if name == "L1":             # the conjugate is finite on the unit inf-ball only
        return vectors(d, st.floats(-1.0, 1.0))
    return vectors(d, elements)


def fy_gap(reg, w, mu) -> tuple[float, float]:
    """Omega(w) + Omega*(mu) - <w, mu> and the scale for a relative tolerance."""
    a, b, c = reg.value(w), reg.conjugate(mu), float(w @ mu)
    return a + b - c, 1.0 + abs(a) + abs(b) + abs(c)


def close(x, y, tol) -> bool:
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= tol


# ---------------------------------------------------------------------------------------------
# Fenchel-Young
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_fenchel_young_inequality(name, data):
    reg, d, domain = data.draw(regularizers(name))
    w = data.draw(domain_points(domain, d))
    mu = data.draw(vectors(d, coord))
    gap, scale = fy_gap(reg, w, mu)
    assert gap >= -1e-9 * scale


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_fenchel_young_equality_at_conjugate_grad(name, data):
    reg, d, domain = data.draw(regularizers(name))
    mu = data.draw(dual_points(name, d))
    w = reg.conjugate_grad(mu)
    assert w.dtype == np.float64 and w.shape == (d,)
    assert math.isfinite(reg.value(w)), "conjugate_grad left the domain"
    gap, scale = fy_gap(reg, w, mu)
    assert abs(gap) <= 1e-9 * scale


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_subgradient_inequality_and_membership(name, data):
    reg, d, domain = data.draw(regularizers(name))
    w = data.draw(domain_points(domain, d, interior=True))
    v = data.draw(domain_points(domain, d))
    f, g = reg.value_and_subgradient(w)
    assert f == pytest.approx(reg.value(w), rel=1e-12, abs=1e-12)
    tol = 1e-9 * (1.0 + abs(f) + abs(reg.value(v)) + np.abs(g).sum() * np.abs(v - w).max())
    assert reg.value(v) >= f + g @ (v - w) - tol
    # g is in the subdifferential iff Fenchel-Young holds with equality at (w, g)
    gap, scale = fy_gap(reg, w, g)
    assert abs(gap) <= 1e-9 * scale


# ---------------------------------------------------------------------------------------------
# sup_subgradient
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in NAMES if n not in KINKED])
@SETTINGS
@given(data=st.data())
def test_sup_subgradient_smooth_matches_central_difference(name, data):
    reg, d, domain = data.draw(regularizers(name))
    w = data.draw(domain_points(domain, d, interior=True, elements=separated))
    p = data.draw(directions(domain, d, elements=separated))
    s, g = reg.sup_subgradient(w, p)
    assert s == pytest.approx(g @ p, rel=1e-12, abs=1e-12)
    h = 1e-5
    fd = (reg.value(w + h * p) - reg.value(w - h * p)) / (2 * h)
    assert abs(s - fd) <= 1e-6 * (1.0 + abs(s) + np.abs(p).sum())


def brute_force_sup(reg, w, p) -> float:
    """max of <g, p> over the vertices of the box subdifferential (enumerated)."""
    r = 1.0 if isinstance(reg, L1) else reg.l1_ratio
    smooth_part = 0.0 if isinstance(reg, L1) else (1.0 - reg.l1_ratio) * w
    zeros = np.flatnonzero(w == 0)
    best = -math.inf
    for signs in itertools.product((-1.0, 1.0), repeat=zeros.size):
        g = r * np.sign(w) + smooth_part
        g[zeros] = r * np.array(signs)
        best = max(best, float(g @ p))
    return best


@pytest.mark.parametrize("name", KINKED)
@SETTINGS
@given(data=st.data())
def test_sup_subgradient_at_kinks_brute_force(name, data):
    reg, d, _ = data.draw(regularizers(name))
    w = data.draw(vectors(d, kinky_separated))
    p = data.draw(vectors(d, kinky_separated))
    s, g = reg.sup_subgradient(w, p)
    assert s == pytest.approx(brute_force_sup(reg, w, p), rel=1e-12, abs=1e-12)
    assert s == pytest.approx(g @ p, rel=1e-12, abs=1e-12)
    gap, scale = fy_gap(reg, w, g)              # g attains it and is a subgradient
    assert abs(gap) <= 1e-9 * scale
    h = 1e-7                                     # one-sided difference: no nonzero w_i crosses 0
    fd = (reg.value(w + h * p) - reg.value(w)) / h
    assert abs(s - fd) <= 1e-6 * (1.0 + np.abs(p).sum()) + h * float(p @ p)
    # and the left derivative -Omega'(w; -p) from the opposite direction
    s_minus = -reg.sup_subgradient(w, -p)[0]
    assert s_minus <= s + 1e-12
    fd_left = (reg.value(w) - reg.value(w - h * p)) / h
    assert abs(s_minus - fd_left) <= 1e-6 * (1.0 + np.abs(p).sum()) + h * float(p @ p)


@pytest.mark.parametrize("name", [n for n in NAMES if BUILDERS[n][1] == "simplex"])
@SETTINGS
@given(data=st.data())
def test_simplex_domain_is_enforced(name, data):
    """Off the simplex the value is +inf and a direction leaving it has derivative +inf."""
    reg, d, _ = data.draw(regularizers(name))
    w = data.draw(domain_points("simplex", d, interior=True))
    p = data.draw(directions("simplex", d))
    shift = data.draw(st.sampled_from([-1.0, 1.0])) * data.draw(st.floats(1e-6, 1.0))
    assert math.isfinite(reg.value(w))
    assert reg.value(w * (1.0 + shift)) == math.inf
    s, g = reg.sup_subgradient(w, p + shift)          # sum(p + shift) = d * shift != 0
    assert s == math.inf
    assert np.all(np.isfinite(g))


# ---------------------------------------------------------------------------------------------
# Lines
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_restrict_value_matches_value(name, data):
    reg, d, domain = data.draw(regularizers(name))
    w = data.draw(domain_points(domain, d))
    p = data.draw(directions(domain, d))
    line = reg.restrict(w, p)
    for eta in data.draw(st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=4)) + [0.0]:
        x = w + eta * p
        expect = reg.value(x)
        tol = 1e-9 * (1.0 + abs(reg.value(w)) + float(x @ x) + eta**2 * float(p @ p)
                      + float(w @ w) + (abs(expect) if math.isfinite(expect) else 0.0))
        assert close(line.value(eta), expect, tol)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_restrict_derivatives_match_one_sided_differences(name, data):
    reg, d, domain = data.draw(regularizers(name))
    elements = nonzero if name.startswith("Lp") else kinky_separated
    w = data.draw(domain_points(domain, d, interior=True, elements=elements))
    p = data.draw(directions(domain, d, elements=kinky_separated))
    line = reg.restrict(w, p)
    right, left = line.derivative(0.0, +1), line.derivative(0.0, -1)
    assert left <= right + 1e-12
    assert right == pytest.approx(reg.sup_subgradient(w, p)[0], rel=1e-9, abs=1e-9)
    assert left == pytest.approx(-reg.sup_subgradient(w, -p)[0], rel=1e-9, abs=1e-9)
    h = 1e-7
    tol = 1e-6 * (1.0 + np.abs(p).sum() + abs(right)) + 10 * h * float(p @ p) * (
        1.0 if domain == "R" else 1.0 / float(w.min()))
    f0 = line.value(0.0)
    assert abs((line.value(h) - f0) / h - right) <= tol
    assert abs((f0 - line.value(-h)) / h - left) <= tol


@st.composite
def intervals(draw):
    kind = draw(st.sampled_from(["half", "line", "finite", "left"]))
    if kind == "half":
        return 0.0, math.inf
    if kind == "line":
        return -math.inf, math.inf
    if kind == "left":
        return -math.inf, draw(st.floats(-3.0, 3.0))
    a, b = sorted(draw(st.lists(st.floats(-3.0, 3.0), min_size=2, max_size=2)))
    return a, b


def grid_min(line, lo, hi, n=401) -> float:
    etas = np.linspace(lo, hi, n)
    vals = np.array([line.value(e) for e in etas])
    k = int(np.argmin(vals))
    step = (hi - lo) / (n - 1)
    with np.errstate(over="ignore"):  # the window's ends may pass 1.8e308: clipped to [lo, hi]
        fine = np.linspace(max(lo, etas[k] - step), min(hi, etas[k] + step), 101)
    return min(float(vals[k]), min(line.value(e) for e in fine))


@pytest.mark.parametrize("name", EXACT_LINES)
@SETTINGS
@given(data=st.data())
def test_line_minimize_is_exact(name, data):
    reg, d, _ = data.draw(regularizers(name))
    w = data.draw(vectors(d, kinky))
    p = data.draw(vectors(d, kinky))
    lo, hi = data.draw(intervals())
    _check_line_minimize(reg, w, p, lo, hi)


@pytest.mark.parametrize("p1", [1.800193921648649, 1.8046875])
def test_line_minimize_at_a_subnormal_breakpoint_regression(p1):
    # explore run: w_1 = -2.2e-313 (subnormal) puts the minimiser on the breakpoint
    # eta = 2.2e-313 / p_1 = 1.2e-313, where w_1 + eta p_1 is +-5e-324 (one subnormal spacing),
    # not within 4 eps (|w_1| + |eta p_1|) = 0 of the kink: both one-sided derivatives took
    # one side's slope
    w = np.array([-2.0, -2.2250738585e-313, -2.0, 0.5, -2.0])
    p = np.array([-2.0, p1, -2.0, -2.0, 0.5])
    _check_line_minimize(L1(), w, p, 0.0, math.inf)


@pytest.mark.parametrize("reg", [L2(), ElasticNet(0.0), ElasticNet(0.5)], ids=repr)
@pytest.mark.parametrize("w, p, lo, hi", [
    # |p| = 2.2e-309: the minimiser 2 / 2.2e-309 = 9e308 lies beyond the float range; the
    # rescaled line's 2 / s overflowed to inf, "no minimiser" for a bounded line
    ([-2.0, -2.0], [0.0, 2.225073858507201e-309], 0.0, math.inf),
    # the minimiser clipped to hi = 1.75 along p / s came back as (1.75 s) / s = 1.75 + 1 ulp
    ([0.5, -2.0], [-2.225073858507201e-309, 0.0], -math.inf, 1.75),
])
def test_line_minimize_along_a_subnormal_direction_regression(reg, w, p, lo, hi):
    # derandomized (ci) examples of test_line_minimize_is_exact
    _check_line_minimize(reg, np.array(w), np.array(p), lo, hi)


def _check_line_minimize(reg, w, p, lo, hi):
    line = reg.restrict(w, p)
    eta = line.minimize(lo, hi)
    assert lo <= eta <= hi and math.isfinite(eta)   # every line here is bounded below
    f = line.value(eta)
    tol = 1e-9 * (1.0 + abs(f) + float(w @ w) + float(p @ p))
    # optimality: no descent inside [lo, hi]
    if eta > lo:
        assert line.derivative(eta, -1) <= 1e-9 * (1.0 + np.abs(p).sum() * (1 + np.abs(w).sum()))
    if eta < hi:
        assert line.derivative(eta, +1) >= -1e-9 * (1.0 + np.abs(p).sum() * (1 + np.abs(w).sum()))
    # against a fine grid on a window containing eta, 0 and the finite ends
    a = lo if math.isfinite(lo) else min(eta, 0.0) - 5.0
    b = hi if math.isfinite(hi) else max(eta, 0.0) + 5.0
    assert f <= grid_min(line, a, b) + tol


# ---------------------------------------------------------------------------------------------
# Conjugate gradients
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SMOOTH_CONJUGATE)
@SETTINGS
@given(data=st.data())
def test_conjugate_grad_matches_finite_difference(name, data):
    reg, d, _ = data.draw(regularizers(name))
    mu = data.draw(vectors(d, separated))
    g = reg.conjugate_grad(mu)
    h = 1e-6
    fd = np.array([(reg.conjugate(mu + h * e) - reg.conjugate(mu - h * e)) / (2 * h)
                   for e in np.eye(d)])
    curvature = reg.curvature_bound if reg.curvature_bound is not None else 1.0
    # ElasticNet's conjugate is C^1 only: a difference straddling |mu_i| = r errs by <= H h
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 + 2 * curvature * h)


@pytest.mark.parametrize("name", [n for n in NAMES if n not in NO_CURVATURE_BOUND])
@SETTINGS
@given(data=st.data())
def test_curvature_bound_bounds_the_change_of_the_conjugate_gradient(name, data):
    """||grad Omega*(mu) - grad Omega*(nu)||_2 <= H* ||mu - nu||_2 where H* is declared."""
    reg, d, _ = data.draw(regularizers(name))
    mu, nu = data.draw(vectors(d, coord)), data.draw(vectors(d, coord))
    H = reg.curvature_bound
    diff = np.linalg.norm(reg.conjugate_grad(mu) - reg.conjugate_grad(nu))
    assert diff <= H * np.linalg.norm(mu - nu) * (1 + 1e-9) + 1e-12


# ---------------------------------------------------------------------------------------------
# Erratum E6
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(mu=st.integers(1, MAX_DIM).flatmap(lambda d: vectors(d, coord)))
def test_erratum_E6_entropy_conjugate(mu):
    """[TVSL10] prints Omega*(mu) = sum exp(mu_i) for Omega(w) = sum w_i log w_i on w >= 0.

    That pair breaks Fenchel-Young equality at its own dual connection w = exp(mu), and it is
    not the sup at the true maximiser exp(mu - 1) either; sum exp(mu_i - 1) (what NegEntropy
    uses) satisfies it. The printed formula is the conjugate of sum (w_i log w_i - w_i).
    """
    reg = NegEntropy()

    def omega(w):
        return float(np.sum(w * np.log(w)))

    printed = float(np.exp(mu).sum())
    w_printed = np.exp(mu)
    gap_printed = omega(w_printed) + printed - float(w_printed @ mu)
    assert gap_printed == pytest.approx(printed, rel=1e-9)     # = sum exp(mu) > 0
    assert gap_printed > 1e-2

    w_star = np.exp(mu - 1.0)
    sup = float(w_star @ mu) - omega(w_star)                     # the true sup, attained at w_star
    assert printed - sup == pytest.approx(printed * (1 - math.exp(-1)), rel=1e-9)

    corrected = float(np.exp(mu - 1.0).sum())
    assert reg.conjugate(mu) == pytest.approx(corrected, rel=1e-12)
    np.testing.assert_allclose(reg.conjugate_grad(mu), w_star, rtol=1e-12)
    gap_corrected = omega(w_star) + reg.conjugate(mu) - float(w_star @ mu)
    assert gap_corrected == pytest.approx(0, abs=1e-9 * (1 + printed))

    # the printed conjugate does fit the shifted entropy sum (w log w - w)
    shifted = omega(w_printed) - float(w_printed.sum())
    assert shifted + printed - float(w_printed @ mu) == pytest.approx(0, abs=1e-9 * (1 + printed))

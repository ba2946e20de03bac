"""L1-regularized linear models at speed (issue 11): the pieces that made BMRM's stabilised
L1 path cheap per iteration, each against the slower reference it replaced.

* the secant line search of a differentiable loss plus a regularizer's line
  (:func:`nsopt.linesearch.smooth_line_search`) against the generic exact search
  (:func:`nsopt.linesearch.exact_line_search`): the same minimum, fewer loss derivatives;
* the hot-started L1 master LP (:class:`nsopt.inner.LPSimplex`, ``hot_start=True``) against
  the LP solved from scratch, through adds, drops and aggregations of the bundle;
* :class:`~nsopt.inner.level_master.BoxModelLP` with a column cost against ``linprog``;
* the L1 dual certifier's budget: a call is due only when its expected work fits.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt.bundle import PlaneBundle
from nsopt.certificate import L1DualCertifier
from nsopt.inner import LPSimplex
from nsopt.inner.level_master import BoxModelLP, highs_available
from nsopt.linesearch import exact_line_search
from nsopt.losses import Hinge, Logistic, SquaredHinge
from nsopt.regularizers import L1, L2, ElasticNet
from nsopt.linesearch import smooth_line_search

from cvxref import small_binary

needs_highs = pytest.mark.skipif(not highs_available(), reason="no HiGHS object model")

LOSSES = {"logistic": Logistic, "sqhinge": SquaredHinge}
REGS = {"l1": L1, "l2": L2, "enet": lambda: ElasticNet(0.5)}


class _Counting:
    """Counts the derivative calls made on the loss's part of a line (``line.lines[0]``)."""

    def __init__(self, line):
        self.n = 0
        part = line.lines[0]
        inner = part.derivative

        def derivative(eta, side=1):
            self.n += 1
            return inner(eta, side)

        part.derivative = derivative


def _line(loss, reg, seed, lam, scale):
    rng = np.random.default_rng(seed)
    X, y = small_binary(120, 12, seed=seed % 7)
    J = nsopt.RegularizedRisk(LOSSES[loss](X, y), REGS[reg](), lam=lam)
    w = rng.standard_normal(12) * (rng.random(12) < 0.5)      # zeros: kinks of the L1 norm
    p = rng.standard_normal(12) * (rng.random(12) < 0.7) * scale
    return J, w, p


# ------------------------------------------------------------------------- line search
@settings(max_examples=60, deadline=None)
@given(loss=st.sampled_from(sorted(LOSSES)), reg=st.sampled_from(sorted(REGS)),
       seed=st.integers(0, 10_000), lam=st.floats(1e-4, 1.0), scale=st.floats(1e-3, 10.0))
def test_secant_search_finds_the_generic_searchs_minimum(loss, reg, seed, lam, scale):
    """Same minimum value as the generic exact search (to rounding), never above phi(0),
    and the returned value is the line's value at the returned step."""
    J, w, p = _line(loss, reg, seed, lam, scale)
    ours = smooth_line_search(J.restrict(w, p))
    ref = exact_line_search(J.restrict(w, p))
    assert ours is not None and ours.exact and ours.success
    phi = J.restrict(w, p)
    assert ours.eta >= 0 and ours.value == phi.value(ours.eta)
    scale_f = abs(ref.value) + 1e-300
    assert ours.value <= ref.value + 1e-12 * scale_f
    assert ours.value <= phi.value(0.0)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_secant_search_needs_fewer_loss_derivatives(loss):
    """On an L1 line the generic search bisects over every breakpoint with the loss's
    derivative and then runs Brent; the secant search costs a few loss derivatives."""
    used = {"ours": [], "generic": []}
    for seed in range(8):
        J, w, p = _line(loss, "l1", seed, 1e-3, 1.0)
        for name, search in (("ours", smooth_line_search), ("generic", exact_line_search)):
            line = J.restrict(w, p)
            count = _Counting(line)
            search(line)
            used[name].append(count.n)
    assert sum(used["ours"]) < sum(used["generic"])
    assert max(used["ours"]) <= 12


def test_secant_search_stays_at_zero_on_an_ascent_direction():
    J, w, p = _line("logistic", "l1", 3, 1e-2, 1.0)
    slope = J.restrict(w, p).derivative(0.0, 1)
    ours = smooth_line_search(J.restrict(w, -p if slope < 0 else p))
    assert ours.eta == 0.0


def test_secant_search_declines_lines_it_does_not_know():
    """A piecewise-linear loss (hinge) is left to the generic search (None)."""
    X, y = small_binary(60, 5, seed=1)
    J = nsopt.RegularizedRisk(Hinge(X, y), L1(), lam=1e-2)
    assert smooth_line_search(J.restrict(np.zeros(5), np.ones(5))) is None


def test_secant_search_finds_a_kink_of_the_l1_norm_exactly():
    """A line through the optimum across a coordinate held at 0 by the L1 norm (its partial
    derivative of the risk well inside (-lam, lam)): the minimiser is that coordinate's zero
    crossing, eta = 1, found exactly, with one-sided derivatives of opposite signs."""
    X, y = small_binary(200, 6, seed=0)
    lam = 0.05                           # coordinate 1: 0 at the optimum, |dR/dw_1| < lam / 50
    J = nsopt.RegularizedRisk(Logistic(X, y), L1(), lam=lam)
    w_opt = nsopt.minimize(J, rtol=1e-10).x
    grad = J.loss.value_and_subgradient(w_opt)[1]
    inside = np.flatnonzero((w_opt == 0) & (np.abs(grad) < 0.5 * lam))
    assert inside.size                   # the problem has such a coordinate
    j = int(inside[0])
    w = w_opt.copy()
    w[j] = 0.3
    p = np.zeros(6)
    p[j] = -0.3
    res = smooth_line_search(J.restrict(w, p))
    line = J.restrict(w, p)
    assert res.eta == pytest.approx(1.0, rel=1e-12)
    assert line.derivative(res.eta, -1) <= 1e-12 and line.derivative(res.eta, 1) >= -1e-12


# ------------------------------------------------------------------------- hot LP master
def _bundle_sequence(seed, d=8, n=25):
    """Planes of an L1 logistic risk at random points, with the loss's floor first."""
    rng = np.random.default_rng(seed)
    X, y = small_binary(100, d, seed=seed)
    loss = Logistic(X, y)
    planes = []
    for _ in range(n):
        w = rng.standard_normal(d)
        r, a = loss.value_and_subgradient(w)
        planes.append((a, r - a @ w))
    return planes


@needs_highs
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hot_lp_master_equals_the_lp_from_scratch(seed):
    """Along a run's bundle (planes added one by one, inactive ones dropped, the bundle
    aggregated when full) the hot-started LP gives the cold one's optimal value, a feasible
    certified dual point of the same value, and a minimiser of the same model value."""
    lam = 1e-2
    reg = L1()
    hot, cold = LPSimplex(), LPSimplex(hot_start=False)
    bundle = PlaneBundle(8)
    bundle.add_floor(0.0)
    alpha = np.ones(1)
    rng = np.random.default_rng(seed)
    for k, (a, b) in enumerate(_bundle_sequence(seed)):
        if k % 6 == 5 and bundle.n > 4:                   # drop some planes, keep the order
            mask = rng.random(bundle.n) < 0.3
            alpha = alpha[bundle.drop(mask)]
        if k == 17:                                       # aggregate (permutes the planes)
            alpha = bundle.compress(alpha / alpha.sum(), max_planes=6)
        bundle.add(a, b)
        h = hot.solve(bundle, reg, lam)
        c = cold.solve(bundle, reg, lam)
        scale = 1.0 + abs(c.dual_value)
        assert h.dual_value == pytest.approx(c.dual_value, abs=1e-8 * scale)
        assert h.alpha.min() >= 0 and h.alpha.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.abs(h.alpha @ bundle.A).max() <= lam      # the repaired dual is feasible
        assert bundle.model(h.w) + lam * np.abs(h.w).sum() == pytest.approx(
            bundle.model(c.w) + lam * np.abs(c.w).sum(), abs=1e-8 * scale)
        alpha = h.alpha
    assert bundle in hot._models and not cold._models     # the hot model was kept


@needs_highs
def test_hot_lp_model_rebuilds_for_a_new_lam():
    hot = LPSimplex()
    bundle = PlaneBundle(3)
    bundle.add_floor(0.0)
    bundle.add(np.array([1.0, -2.0, 0.5]), 0.3)
    first = hot.solve(bundle, L1(), 0.1).dual_value
    again = hot.solve(bundle, L1(), 1.0).dual_value
    assert again == pytest.approx(LPSimplex(hot_start=False).solve(bundle, L1(), 1.0).dual_value)
    assert first <= again     # a larger lam: a larger model minimum


def test_lp_hot_start_option_is_checked():
    with pytest.raises(TypeError, match="hot_start"):
        LPSimplex(hot_start="yes")


@needs_highs
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), m=st.integers(1, 30), d=st.integers(1, 10))
def test_box_model_lp_with_a_cost_matches_linprog(seed, m, d):
    """min t + c^T x over x in [0, inf)^d with <a_i, x> - t <= -b_i: the value of linprog."""
    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((m, d)), rng.standard_normal(m)
    c = rng.uniform(1.1, 2.0, d) * np.abs(A).max()          # bounded: c beats every slope
    lp = BoxModelLP(np.zeros(d), np.full(d, np.inf), cost=c)
    for i in range(m):
        lp.add(A[i], b[i])
    out = lp.solve()
    ref = scipy.optimize.linprog(np.append(c, 1.0), A_ub=np.hstack([A, -np.ones((m, 1))]),
                                 b_ub=-b, bounds=[(0, None)] * d + [(None, None)],
                                 method="highs")
    assert out is not None
    x, t, alpha = out
    assert t + c @ x == pytest.approx(ref.fun, abs=1e-8 * (1 + abs(ref.fun)))
    assert alpha.sum() == pytest.approx(1.0, abs=1e-8)


def test_box_model_lp_cost_size_is_checked():
    if not highs_available():
        pytest.skip("no HiGHS object model")
    with pytest.raises(ValueError, match="cost"):
        BoxModelLP(np.zeros(3), np.ones(3), cost=np.ones(2))


# ----------------------------------------------------------------- the dual certifier
def test_dual_certifier_is_due_only_when_its_expected_work_fits():
    X, y = small_binary(200, 10, seed=4)
    J = nsopt.RegularizedRisk(Logistic(X, y), L1(), 1e-2)
    cert = L1DualCertifier(J, budget=0.25)
    expected = cert._expected
    assert not cert.due(0.0)                      # nothing done yet: no call at the start
    assert cert.due(expected / 0.25)
    cert.bound(np.full(10, 0.1))
    assert cert.spent > 0 and not cert.due(cert.spent / 0.25)   # the next call must fit too
    assert L1DualCertifier(J, budget=1.0).due(0.0)              # every iteration


def test_default_l1_run_certifies_and_its_certificate_checks():
    """BMRM's stabilised L1 path (the default before newton-cd) on L1 logistic and L1 squared
    hinge (all the pieces above): certified, the certificate verified, the lower bound below
    an independent optimum."""
    pytest.importorskip("cvxpy")
    from cvxref import cvxpy_optimum

    X, y = small_binary(400, 12, seed=5)
    for loss, name in ((Logistic, "logistic"), (SquaredHinge, "squared_hinge")):
        J = nsopt.RegularizedRisk(loss(X, y), L1(), lam=1e-3)
        res = nsopt.minimize(J, method="bmrm", rtol=1e-5)
        assert res.success and res.info["line_search"] is True
        assert res.certificate.check(J) >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))
        ref = cvxpy_optimum(X, y, name, L1(), 1e-3)
        assert res.lower_bound <= ref + 1e-7 * (1 + abs(ref))
        assert math.isfinite(res.fun) and res.fun - ref <= 1e-5 * abs(res.fun) + 1e-7


@needs_highs
def test_box_model_lp_deadline_counts_from_now_not_from_the_first_solve():
    """HiGHS's run clock adds up over solves: deadlines of 0.2 s given after 0.3 s of earlier
    solves must still let the next solves (a new row each, a few pivots) finish (they
    stopped at the time limit when the limit was the seconds left alone)."""
    rng = np.random.default_rng(0)
    d = 300
    lp = BoxModelLP(np.zeros(d), np.full(d, np.inf), cost=np.full(d, 10.0))
    while lp._h.getRunTime() < 0.3:
        lp.add(0.5 * rng.standard_normal(d), float(rng.standard_normal()))
        assert lp.solve() is not None
    for _ in range(150):
        lp.add(0.5 * rng.standard_normal(d), float(rng.standard_normal()))
        assert lp.solve(deadline_seconds=0.2) is not None
    assert lp.solve() is not None                          # and no stale limit afterwards

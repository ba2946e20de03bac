"""The level bundle method (``method="level-bundle"``, [LNN95]): any convex oracle on a box.

Reference optima are the box-constrained minima from cvxpy + Clarabel (never HiGHS, which the
solver itself uses for its LP). The rule tested throughout: every query point and ``x`` lie in
the box, ``lower_bound <= f* <= fun`` (f* over the box), ``gap <= rtol |fun|`` at success, and
the certificate checks with ``bounds=(lb, ub)``."""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np
import pytest
import scipy.optimize
from hypothesis import example, given, settings
from hypothesis import strategies as st

import nsopt
from catalogue import l1_fit, max_affine_ridge, max_eigenvalue, max_eigenvalue_data
from nsopt.certificate import CertificateError, OraclePlanes
from nsopt.solvers import LevelBundle, ProblemNotSupported


class Case(NamedTuple):
    oracle: nsopt.FunctionOracle
    expr: Callable          # cvxpy variable -> expression of f
    lb: np.ndarray
    ub: np.ndarray


def _box(rng, d, width=1.0):
    """A box that cuts through the unconstrained minimiser's region (not a formality)."""
    lb = -rng.uniform(0.1, width, d)
    ub = rng.uniform(0.1, width, d)
    return lb, ub


def l1_case(seed, n=30, d=6):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d))
    b = 2.0 * rng.standard_normal(n)
    return Case(*l1_fit(A, b), *_box(rng, d))


def max_affine_ridge_case(seed, n=25, d=5, mu=1e-2):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d))
    b = rng.standard_normal(n)
    return Case(*max_affine_ridge(A, b, mu), *_box(rng, d, 2.0))


def chebyshev_case(seed, m=40, degree=4):
    """Minimax polynomial fit of a kinked function on [-1, 1]: max_j |V c - y|_j."""
    rng = np.random.default_rng(seed)
    t = np.linspace(-1.0, 1.0, m)
    y = np.abs(t - rng.uniform(-0.5, 0.5)) + 0.1 * np.sin(5 * t)
    V = np.vander(t, degree + 1, increasing=True)

    def vs(c):
        r = V @ c - y
        j = int(np.argmax(np.abs(r)))
        return float(abs(r[j])), np.sign(r[j]) * V[j]

    import cvxpy as cp
    d = degree + 1
    return Case(nsopt.FunctionOracle(value_and_subgradient=vs, dim=d, lower_bound=0.0),
                lambda c: cp.norm_inf(V @ c - y), np.full(d, -2.0), np.full(d, 2.0))


def hinge_case(seed, m=60, d=5, lam=1e-2):
    """An L2 hinge risk as a bare FunctionOracle (no RegularizedRisk: no plane certifier)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(m) >= 0, 1.0, -1.0)

    def vs(w):
        z = 1.0 - y * (X @ w)
        active = z > 0
        g = -(X[active].T @ y[active]) / m + lam * w
        return float(np.maximum(z, 0).sum() / m + 0.5 * lam * (w @ w)), g

    import cvxpy as cp
    return Case(nsopt.FunctionOracle(value_and_subgradient=vs, dim=d),
                lambda w: cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / m + 0.5 * lam * cp.sum_squares(w),
                *_box(rng, d, 0.5))


def max_eigenvalue_case(seed, n=6, k=3):
    """lambda_max(A0 + sum x_i A_i), the A_i made traceless (so f is bounded below and has a
    minimiser: lambda_max >= trace / n)."""
    A0, As = max_eigenvalue_data(n, k, seed)
    As = As - (np.trace(As, axis1=1, axis2=2) / n)[:, None, None] * np.eye(n)
    rng = np.random.default_rng(seed + 1)
    return Case(*max_eigenvalue(A0, As), *_box(rng, k, 1.0))


CASES = {"l1": l1_case, "max-affine-ridge": max_affine_ridge_case,
         "chebyshev": chebyshev_case, "hinge": hinge_case, "max-eigenvalue": max_eigenvalue_case}


def f_star(case: Case) -> float:
    import cvxpy as cp

    x = cp.Variable(case.lb.size)
    prob = cp.Problem(cp.Minimize(case.expr(x)), [x >= case.lb, x <= case.ub])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    if prob.status == "optimal_inaccurate":
        # the largest eigenvalue's semidefinite program at seed 271: Clarabel stops short of
        # 1e-10; its default accuracy (1e-8) is within tol() and it reports "optimal" there
        prob.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


def tol(f):
    return 1e-7 * (1 + abs(f))  # Clarabel's accuracy


class Recorder(nsopt.Oracle):
    """Wraps an oracle and keeps every point it is asked about."""

    def __init__(self, f):
        self.f, self.dim, self.lower_bound, self.points = f, f.dim, f.lower_bound, []

    def _value_and_subgradient(self, x):
        self.points.append(np.array(x, copy=True))
        return self.f.value_and_subgradient(x)


def solve_and_check(case: Case, rtol=1e-6, **options):
    rec = Recorder(case.oracle)
    res = nsopt.minimize(rec, method="level-bundle", bounds=(case.lb, case.ub), rtol=rtol,
                         max_iter=3000, **options)
    fs = f_star(case)
    assert res.success, res.message
    assert res.lower_bound - tol(fs) <= fs <= res.fun + tol(fs)
    assert res.gap <= rtol * abs(res.fun) + 1e-15
    assert res.fun == pytest.approx(case.oracle.value(res.x), rel=1e-12)
    points = np.array(rec.points)
    assert np.all(points >= case.lb) and np.all(points <= case.ub)      # bounds are a constraint
    assert np.all(res.x >= case.lb) and np.all(res.x <= case.ub)
    bound = res.certificate.check(case.oracle, bounds=(case.lb, case.ub))
    assert bound >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))
    assert bound <= fs + tol(fs)
    return res


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
@example(seed=271)  # max-eigenvalue: Clarabel "optimal_inaccurate" at 1e-10 (explore draw)
def test_certificate_brackets_box_optimum(name, seed):
    solve_and_check(CASES[name](seed))


@pytest.mark.parametrize("name", ["l1", "chebyshev"])
def test_reaches_rtol_1e8_without_stalling(name):
    res = solve_and_check(CASES[name](7), rtol=1e-8)
    assert res.nit < 500
    assert res.certificate.source in ("level-lp", "lower-bound")


def test_evidence_is_oracle_planes_over_the_box():
    case = l1_case(3)
    res = nsopt.minimize(case.oracle, method="level-bundle", bounds=(case.lb, case.ub), rtol=1e-6)
    ev = res.certificate.evidence
    assert res.certificate.source == "level-lp" and isinstance(ev, OraclePlanes)
    np.testing.assert_array_equal(ev.lb, case.lb)
    np.testing.assert_array_equal(ev.ub, case.ub)
    assert len(ev.points) <= case.lb.size + 1           # a vertex of the LP: at most d + 1
    assert math.fsum(list(ev.weights) + [ev.floor]) == pytest.approx(1.0, abs=1e-12)
    # the bound holds over the box only: a larger stated box is refused
    with pytest.raises(CertificateError, match="box"):
        res.certificate.check(case.oracle, bounds=(case.lb - 1.0, case.ub + 1.0))


def test_scipy_bounds_and_scalar_bounds():
    case = chebyshev_case(1)
    a = nsopt.minimize(case.oracle, method="level-bundle", bounds=scipy.optimize.Bounds(-2.0, 2.0),
                       rtol=1e-6)
    b = nsopt.minimize(case.oracle, method="level-bundle", bounds=(-2, 2), rtol=1e-6)
    c = nsopt.minimize(case.oracle, method="level-bundle", bounds=(case.lb, case.ub), rtol=1e-6)
    assert a.success and b.success and c.success
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(b.x, c.x)


def test_x0_outside_the_box_is_projected():
    case = l1_case(4)
    x0 = np.full(case.lb.size, 5.0)
    keep = x0.copy()
    rec = Recorder(case.oracle)
    res = nsopt.minimize(rec, method="level-bundle", x0=x0, bounds=(case.lb, case.ub), rtol=1e-6)
    np.testing.assert_array_equal(x0, keep)
    np.testing.assert_array_equal(rec.points[0], np.clip(x0, case.lb, case.ub))
    assert res.success and np.all(res.x <= case.ub) and np.all(res.x >= case.lb)
    r0 = nsopt.minimize(case.oracle, method="level-bundle", x0=x0, bounds=(case.lb, case.ub),
                        max_iter=0)
    np.testing.assert_array_equal(r0.x, np.clip(x0, case.lb, case.ub))


def test_degenerate_box_and_floor():
    """A box that is a point: the first LP proves f(x0) (gap 0 after one evaluation)."""
    case = l1_case(5)
    p = np.linspace(-0.2, 0.3, case.lb.size)
    res = nsopt.minimize(case.oracle, method="level-bundle", bounds=(p, p), rtol=1e-9)
    assert res.success and res.nit == 0
    np.testing.assert_array_equal(res.x, p)
    assert res.certificate.check(case.oracle, bounds=(p, p)) <= res.fun


def test_max_planes_bounds_the_bundle():
    case = hinge_case(2)
    d, cap = case.lb.size, 10
    seen = []
    res = nsopt.minimize(case.oracle, method="level-bundle", bounds=(case.lb, case.ub),
                         rtol=1e-6, max_planes=cap, max_iter=3000,
                         callback=lambda s: seen.append(s.n_planes))
    assert res.success
    assert max(seen) <= max(cap, d + 2)
    assert f_star(case) >= res.lower_bound - tol(res.fun)


# ------------------------------------------------------------------------- degenerate solves
def test_lp_failure_is_a_status_not_a_crash(monkeypatch):
    """The hot-started LP failing hands over to linprog from scratch; when that fails too,
    the run ends with a status."""
    import nsopt.solvers._region as level
    from nsopt.inner.level_master import BoxModelLP, DenseBoxLP

    case = l1_case(6)
    calls = [0]
    real = level.linprog

    def failing(*args, **kwargs):
        calls[0] += 1
        if calls[0] >= 4:
            return scipy.optimize.OptimizeResult(status=4, message="numerical difficulties",
                                                 x=None, ineqlin=None)
        return real(*args, **kwargs)

    monkeypatch.setattr(level, "linprog", failing)
    monkeypatch.setattr(BoxModelLP, "solve", lambda self, *a: None)
    monkeypatch.setattr(DenseBoxLP, "solve", lambda self, *a: None)
    res = nsopt.minimize(case.oracle, method="level-bundle", bounds=(case.lb, case.ub), rtol=1e-9)
    assert res.status is nsopt.Status.NUMERICAL_ERROR and not res.success
    assert "LP" in res.info["numerical_error"]["message"]
    assert res.lower_bound <= f_star(case) + tol(res.fun)
    assert res.certificate.check(case.oracle, bounds=(case.lb, case.ub)) >= res.lower_bound - 1e-9


def test_qp_failure_falls_back_to_the_lp_point(monkeypatch):
    case = chebyshev_case(2)
    monkeypatch.setattr(LevelBundle, "_project", lambda self, *a: (None, None))
    res = nsopt.minimize(case.oracle, method="level-bundle", bounds=(case.lb, case.ub), rtol=1e-6,
                         max_iter=3000)
    assert res.success and res.info["n_qp_fallbacks"] >= res.nit  # every projection (init too)
    assert res.lower_bound - tol(res.fun) <= f_star(case) <= res.fun + tol(res.fun)


# ----------------------------------------------------------------------------- input errors
def _f(d=3):
    return nsopt.FunctionOracle(lambda x: float(np.abs(x - 0.5).sum()), lambda x: np.sign(x - 0.5),
                                dim=d)


def test_bounds_are_required():
    with pytest.raises(ProblemNotSupported, match=r"bounds=\(lb, ub\)"):
        nsopt.minimize(_f(), method="level-bundle")


@pytest.mark.parametrize("bounds,kind,match", [
    ((1.0, 0.0), ValueError, r"lb > ub at index 0 \(1.0 > 0.0\)"),
    (([0, 0, 2], [1, 1, 1]), ValueError, "lb > ub at index 2"),
    ((np.nan, 1.0), ValueError, "lb has NaN"),
    ((0.0, [1.0, np.nan, 1.0]), ValueError, "ub has NaN at index 1"),
    ((-np.inf, 1.0), ValueError, "lb has an infinite entry"),
    ((0.0, np.inf), ValueError, "ub has an infinite entry"),
    (([0, 0], [1, 1, 1]), ValueError, "same length"),
    ((np.zeros((2, 2)), 1.0), ValueError, "1-D"),
    ((0.0, 1.0, 2.0), TypeError, "pair"),
    ([(0, 1), (0, 1), (0, 1)], TypeError, "pair"),
    (("a", 1.0), TypeError, "bounds lb"),
    (5.0, TypeError, "pair"),
])
def test_bad_bounds_name_the_argument_and_value(bounds, kind, match):
    with pytest.raises(kind, match=match) as exc:
        LevelBundle(bounds=bounds)
    assert "option bounds=" in str(exc.value)


def test_bounds_of_the_wrong_length_for_the_problem():
    with pytest.raises(ValueError, match="bounds: lb has 2 entries but the problem has dim 3"):
        nsopt.minimize(_f(3), method="level-bundle", bounds=([0, 0], [1, 1]))


@pytest.mark.parametrize("option,value", [("level_fraction", 0.0), ("level_fraction", 1.0),
                                          ("max_planes", 2)])
def test_option_ranges(option, value):
    with pytest.raises(ValueError, match=option):
        LevelBundle(bounds=(0, 1), **{option: value})


def test_regularized_risk_as_an_oracle():
    """A RegularizedRisk is an oracle too; a box around its minimiser gives the risk's f*."""
    from cvxref import cvxpy_optimum, small_binary

    X, y = small_binary(60, 4, seed=11)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), 1e-2)
    res = nsopt.minimize(J, method="level-bundle", bounds=(-20, 20), rtol=1e-7)
    fs = cvxpy_optimum(X, y, "hinge", nsopt.regularizers.L2(), 1e-2)
    assert res.success and res.lower_bound - tol(fs) <= fs <= res.fun + tol(fs)
    assert res.certificate.check(J, bounds=(-20, 20)) >= res.lower_bound - 1e-9


def test_list_storage_of_the_bundle_gives_the_same_run(monkeypatch):
    """At large d the bundle keeps its slopes as a list of rows (sparse LP and QP matrices)."""
    import functools

    import nsopt.solvers._region as level

    case = hinge_case(4)
    a = nsopt.minimize(case.oracle, method="level-bundle", bounds=(case.lb, case.ub), rtol=1e-6)
    monkeypatch.setattr(level, "PlaneBundle", functools.partial(level.PlaneBundle, dense_limit=0))
    b = nsopt.minimize(case.oracle, method="level-bundle", bounds=(case.lb, case.ub), rtol=1e-6)
    assert a.success and b.success
    assert b.fun == pytest.approx(a.fun, rel=1e-9) and b.nit == pytest.approx(a.nit, abs=2)
    assert b.certificate.check(case.oracle, bounds=(case.lb, case.ub)) >= b.lower_bound - 1e-9


def test_sum_of_oracles():
    """A composed oracle (``f + g``, with the floor of both) is solved like any other."""
    f, g = l1_case(8, d=5), max_affine_ridge_case(9, d=5)
    both = Case(f.oracle + g.oracle, lambda x: f.expr(x) + g.expr(x), f.lb, f.ub)
    solve_and_check(both, rtol=1e-7)


def test_methods_supporting_lists_level_bundle_only_with_its_box_and_minimize_agrees():
    """One name, one behaviour: what methods_supporting lists with given options, minimize
    runs with those options; level-bundle cannot run without bounds, so it is not listed."""
    from nsopt.solvers import ProblemNotSupported, methods_supporting

    c = np.random.default_rng(1).standard_normal(4)
    f = nsopt.FunctionOracle(lambda x: float(np.abs(x - c).sum()) + 1.0, lambda x: np.sign(x - c),
                             dim=4)  # f* = 1: a relative gap can be met
    assert "level-bundle" not in methods_supporting(f)
    assert "level-bundle" not in methods_supporting(f, bounds=None)
    box = (-5.0, 5.0)
    assert "level-bundle" in methods_supporting(f, bounds=box)
    with pytest.raises(ProblemNotSupported, match="bounds"):
        nsopt.minimize(f, method="level-bundle")
    res = nsopt.minimize(f, method="level-bundle", bounds=box, rtol=1e-6, max_iter=500)
    assert res.success and res.lower_bound <= 1.0 <= res.fun


def test_hot_lp_time_limit_is_what_is_left_not_the_sum_of_runs():
    """HiGHS's ``time_limit`` bounds its run clock summed over every run of one model: a
    limit of "what is left of max_time" failed every hot solve once the LPs so far had taken
    that long (each then fell back to a solve from scratch, 70 ms at d = 100)."""
    from nsopt.inner.level_master import BoxModelLP, highs_available

    if not highs_available():
        pytest.skip("no HiGHS object model")
    rng = np.random.default_rng(0)
    d = 30
    A, b = rng.standard_normal((400, d)), rng.standard_normal(400)
    lp = BoxModelLP(-np.ones(d), np.ones(d), {"simplex_dual_edge_weight_strategy": 1})
    x = np.zeros(d)
    for i in range(120):   # many runs: one more solve is ~1% of their sum, even under load
        r = A @ x - b
        g = A.T @ np.sign(r)
        lp.add(g, float(np.abs(r).sum() - g @ x))
        out = lp.solve()
        x = out[0]
    spent = lp._h.getRunTime()
    assert spent > 0
    r = A @ x - b
    g = A.T @ np.sign(r)
    lp.add(g, float(np.abs(r).sum() - g @ x))
    out = lp.solve(spent / 2)       # less left than the runs so far took, but ample for one
    assert out is not None
    assert np.all(np.isfinite(out[2])) and abs(out[2].sum() - 1) < 1e-6


def test_dense_lp_up_to_its_dimension_highs_above():
    """The warm LP is the compiled dense dual simplex up to ``DENSE_LP_MAX_DIM`` variables
    (its dense (d+1)^2 inverse), HiGHS's hot-started model above it."""
    from nsopt.inner.level_master import BoxModelLP, DenseBoxLP, highs_available
    from nsopt.solvers.level_bundle import DENSE_LP_MAX_DIM, LevelBundle

    small = LevelBundle._hot_lp(-np.ones(DENSE_LP_MAX_DIM), np.ones(DENSE_LP_MAX_DIM))
    assert isinstance(small, DenseBoxLP)
    big = LevelBundle._hot_lp(-np.ones(DENSE_LP_MAX_DIM + 1), np.ones(DENSE_LP_MAX_DIM + 1))
    assert isinstance(big, BoxModelLP) if highs_available() else big is None


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n=st.integers(1, 40), d=st.integers(1, 12),
       floor=st.booleans(), n_drop=st.integers(0, 5))
def test_the_loops_shortcuts_give_the_bundles_bound_and_evidence(seed, n, d, floor, n_drop):
    """The bundle's ``combine`` (its support found once) is bit for bit ``rmatvec`` and the
    weighted offsets, and the level loop's evidence (``_points_evidence``, from its list of
    query points) is what ``planes_evidence`` gives, also after a drop and with the floor
    plane."""
    from nsopt.bundle import PlaneBundle
    from nsopt.solvers._region import planes_evidence
    from nsopt.solvers.level_bundle import _points_evidence

    rng = np.random.default_rng(seed)
    lb, ub = -rng.uniform(0.5, 3, d), rng.uniform(0.5, 3, d)
    bundle, points = PlaneBundle(d, evidence="points"), []
    if floor:
        bundle.add_floor(-2.5)
        points.append(None)
    for _ in range(n):
        w = rng.uniform(lb, ub)
        bundle.add_at(w, float(rng.standard_normal()), rng.standard_normal(d))
        points.append(w)
    if n_drop:
        mask = np.zeros(bundle.n, dtype=bool)
        mask[rng.choice(bundle.n, size=min(n_drop, bundle.n - 1), replace=False)] = True
        keep = bundle.drop(mask)
        points = [points[i] for i in keep.tolist()]
    raw = rng.standard_normal(bundle.n) * (rng.random(bundle.n) < 0.6)
    raw[rng.integers(bundle.n)] = 1.0                  # some positive weight
    alpha = bundle.feasible(raw)
    a_bar, b_bar = bundle.combine(alpha)
    support = alpha.nonzero()[0]
    np.testing.assert_array_equal(a_bar, bundle.rmatvec(alpha))
    assert b_bar == float(alpha[support] @ bundle.b[support])
    ref_a, ref_b = a_bar, b_bar
    ev = _points_evidence(points, alpha, -2.5 if floor else -math.inf, (a_bar, b_bar), lb, ub)
    ref = planes_evidence(bundle, alpha, -2.5 if floor else -math.inf, (ref_a, ref_b),
                          lb=lb, ub=ub)
    assert len(ev.points) == len(ref.points)
    assert all(p is q for p, q in zip(ev.points, ref.points))
    np.testing.assert_array_equal(ev.weights, ref.weights)
    assert ev.floor == ref.floor and ev.floor_value == ref.floor_value


def test_nearly_parallel_minorants_reach_1e8():
    """A Chebyshev fit whose oracle offers its 16 next largest pieces a call: neighbouring
    points' pieces are nearly parallel, the LP's basis ill-conditioned, and its multipliers
    left residual slopes worth 3.7e-8 of the value on the box; the run stalled there for
    400 iterations (347 failed projections). The refined multipliers
    (:func:`~nsopt.solvers._region.polish_multipliers`) prove 1e-8."""
    from catalogue import chebyshev_data, chebyshev_fit

    f, expr = chebyshev_fit(*chebyshev_data(2000, "abs"), degree=20, minorants=16)
    case = Case(f, expr, np.full(21, -3.0), np.full(21, 3.0))
    res = solve_and_check(case, rtol=1e-8, minorants=True)
    assert res.nit < 150 and res.info["n_qp_fallbacks"] < 10


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), noise=st.sampled_from([0.0, 1e-12, 1e-9, 1e-6]))
def test_polished_multipliers_never_lower_the_bound(seed, noise):
    """Refinement keeps the multipliers on the simplex and the bound they prove (recomputed
    from them) at least the given multipliers'; from the LP's optimal multipliers blurred by
    rounding-sized noise it recovers the LP's bound to 1e-12."""
    from nsopt.bundle import PlaneBundle
    from nsopt.solvers._region import box_min, box_model_minimum, polish_multipliers

    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(2, 8)), int(rng.integers(3, 30))
    bundle = PlaneBundle(d)
    for _ in range(n):
        bundle.add(rng.standard_normal(d), float(rng.standard_normal()))
    lb, ub = -rng.uniform(0.5, 3, d), rng.uniform(0.5, 3, d)
    best = box_model_minimum(bundle, lb, ub)
    alpha = np.maximum(best.alpha * (1 + noise * rng.standard_normal(bundle.n)), 0.0)
    before, start, (a0, b0) = polish_multipliers(bundle, alpha, lb, ub, rounds=0)  # feasible
    assert before == b0 + box_min(a0, lb, ub)
    value, refined, (a2, b2) = polish_multipliers(bundle, alpha, lb, ub)
    assert np.all(refined >= 0) and math.isclose(refined.sum(), 1.0, rel_tol=1e-14)
    a_re, b_re = bundle.combine(refined)         # the plane returned is the multipliers'
    assert np.array_equal(a2, a_re) and b2 == b_re
    assert value == b2 + box_min(a2, lb, ub)
    assert value >= before
    assert value >= best.bound - 1e-12 * (1 + abs(best.bound)) or noise >= 1e-6
    # the gate (POLISH_WORTH): no round when the residuals cost at most ``worth``
    assert polish_multipliers(bundle, alpha, lb, ub, worth=math.inf)[0] == before
    residual = np.abs(a0) <= 1e-7 * float(np.abs(bundle.A[start > 0]).max(initial=0.0))
    cost = float(np.abs(a0[residual]) @ (ub - lb)[residual])
    assert polish_multipliers(bundle, alpha, lb, ub, worth=cost)[0] == before



def _new_planes_reference(bundle, G, c):
    """``_new_planes`` as it was (a k x n comparison and a k x k triangle every call): the
    reference for the fast path."""
    dup = np.zeros(c.shape[0], dtype=bool)
    b = bundle.b
    for j in np.flatnonzero((c[:, None] == b).any(axis=1)).tolist():
        twins = np.flatnonzero(b == c[j])
        dup[j] = bool((bundle.A[twins] == G[j]).all(axis=1).any())
    same = np.tril(c[:, None] == c, -1)
    for t in np.flatnonzero(same.any(axis=1)).tolist():
        if not dup[t]:
            earlier = np.flatnonzero(same[t])
            dup[t] = bool((G[earlier] == G[t]).all(axis=1).any())
    return np.flatnonzero(~dup)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n=st.integers(0, 12), k=st.integers(0, 8),
       planted=st.integers(0, 4), shared=st.booleans())
def test_new_planes_fast_path_matches_the_reference(seed, n, k, planted, shared):
    """The minorants kept (``_region._new_planes``, offsets compared by a compiled pass first)
    are exactly the reference's, with planted duplicates of bundle planes and of earlier
    rows, offsets that repeat with other slopes, zeros of both signs and NaN offsets."""
    from nsopt.bundle import PlaneBundle
    from nsopt.solvers._region import _new_planes

    rng = np.random.default_rng(seed)
    d = 3
    bundle = PlaneBundle(d, evidence="points", gram=False)
    for _ in range(n):
        bundle.add_at(rng.standard_normal(d), float(rng.integers(-2, 3)),
                      rng.integers(-1, 2, d).astype(float))
    G = rng.integers(-1, 2, (k, d)).astype(float)
    c = rng.integers(-2, 3, k).astype(float)
    for _ in range(planted if k else 0):
        j = int(rng.integers(k))
        if n and rng.random() < 0.5:                 # a plane of the bundle's offset
            i = int(rng.integers(n))                 # with its slope, or (shared) another
            G[j], c[j] = (G[j] if shared else bundle.A[i]), bundle.b[i]
        elif j:                                       # an earlier row
            i = int(rng.integers(j))
            G[j], c[j] = G[i], c[i]
    if k and rng.random() < 0.2:
        c[int(rng.integers(k))] = np.nan
    if k and rng.random() < 0.2:
        c[c == 0] = -0.0                             # -0.0 == 0.0: the same offset
    got = _new_planes(bundle, G, c)
    np.testing.assert_array_equal(got, _new_planes_reference(bundle, G, c))


def _rows_instance(seed, n_eq):
    """A random bundle over a box with two inequality rows (and ``n_eq`` equalities through a
    point of the box, as pairs), and the LP's multipliers (HiGHS)."""
    from nsopt.bundle import PlaneBundle
    from nsopt.solvers._region import rows_model_minimum

    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(2, 7)), int(rng.integers(3, 25))
    bundle = PlaneBundle(d)
    for _ in range(n):
        bundle.add(rng.standard_normal(d), float(rng.standard_normal()))
    lb, ub = -rng.uniform(0.5, 3, d), rng.uniform(0.5, 3, d)
    inside = rng.uniform(0.5 * lb, 0.5 * ub)
    A = rng.standard_normal((2, d))
    b = A @ inside + rng.uniform(0.0, 0.5, 2)
    E = rng.standard_normal((n_eq, d))
    A_ub = np.vstack([A, E, -E])
    b_ub = np.concatenate([b, E @ inside, -(E @ inside)])
    return bundle, lb, ub, A_ub, b_ub, rows_model_minimum(bundle, lb, ub, (A_ub, b_ub)), rng


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n_eq=st.integers(0, 2),
       noise=st.sampled_from([0.0, 1e-12, 1e-9, 1e-6]))
@example(seed=117, n_eq=2, noise=1e-12)  # one plane, two equality pairs: refined all the same
def test_polished_rows_multipliers_never_lower_the_bound(seed, n_eq, noise):
    """With rows (``polish_rows_multipliers``, the rows variant's refinement) the planes'
    multipliers stay on the simplex and the rows' nonnegative, the value is the bound
    ``rows_bound`` recomputes from them, never below the given multipliers', and from the
    LP's multipliers blurred by rounding-sized noise it recovers the LP's bound to 1e-12."""
    from nsopt.solvers._region import polish_rows_multipliers, rows_bound

    bundle, lb, ub, A_ub, b_ub, best, rng = _rows_instance(seed, n_eq)
    alpha = np.maximum(best.alpha * (1 + noise * rng.standard_normal(bundle.n)), 0.0)
    y = np.maximum(best.y * (1 + noise * rng.standard_normal(best.y.size)), 0.0)
    before = polish_rows_multipliers(bundle, alpha, y, A_ub, b_ub, lb, ub, n_eq, rounds=0)[0]
    value, a2, y2, (a_bar, b_bar) = polish_rows_multipliers(bundle, alpha, y, A_ub, b_ub, lb,
                                                            ub, n_eq)
    assert np.all(a2 >= 0) and math.isclose(a2.sum(), 1.0, rel_tol=1e-14) and np.all(y2 >= 0)
    a_re, b_re = bundle.combine(a2)
    assert np.array_equal(a_bar, a_re) and b_bar == b_re
    assert value == rows_bound(a_re, b_re, y2, A_ub, b_ub, lb, ub)
    assert value >= before
    assert value >= best.bound - 1e-12 * (1 + abs(best.bound)) or noise >= 1e-6
    # a gate above any residuals' cost: no round, the given multipliers' bound
    assert polish_rows_multipliers(bundle, alpha, y, A_ub, b_ub, lb, ub, n_eq,
                                   worth=math.inf)[0] == before


@pytest.mark.parametrize("rows", ["A_ub", "A_eq"])
def test_rows_variant_refines_near_the_end_and_check_accepts(rows, monkeypatch):
    """The rows variant refines its multipliers near the end (within POLISH_BELOW): the bound
    reported is never below the unrefined one, ``check`` with the rows recomputes it, and
    Clarabel's optimum over the box and the rows lies between bound and value."""
    import cvxpy as cp
    from catalogue import chebyshev_data, chebyshev_fit
    from nsopt.solvers import _polyhedral

    f, expr = chebyshev_fit(*chebyshev_data(200, "abs"), degree=8, minorants=6)
    d = 9
    opts = ({"A_ub": np.ones((1, d)), "b_ub": np.array([0.3])} if rows == "A_ub"
            else {"A_eq": np.eye(d)[:1], "b_eq": np.array([0.42])})
    calls = []
    polish = _polyhedral.polish_rows_multipliers

    def spy(bundle, alpha, y, A_ub, b_ub, lb, ub, n_eq=0, **options):
        plain = polish(bundle, alpha, y, A_ub, b_ub, lb, ub, n_eq, rounds=0)[0]
        out = polish(bundle, alpha, y, A_ub, b_ub, lb, ub, n_eq, **options)
        calls.append(out[0] >= plain)
        return out

    monkeypatch.setattr(_polyhedral, "polish_rows_multipliers", spy)
    res = nsopt.minimize(f, method="level-bundle", bounds=(-3, 3), rtol=1e-8, max_iter=400,
                         **opts)
    assert res.success and res.gap <= 1e-8 * abs(res.fun)
    assert calls and all(calls)
    bound = res.certificate.check(f, bounds=(-3, 3), **opts)
    assert bound >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))
    x = cp.Variable(d)
    cons = [x >= -3, x <= 3] + ([opts["A_ub"] @ x <= opts["b_ub"]] if rows == "A_ub"
                                else [opts["A_eq"] @ x == opts["b_eq"]])
    prob = cp.Problem(cp.Minimize(expr(x)), cons)
    prob.solve(solver=cp.CLARABEL)
    fs = float(prob.value)
    assert res.lower_bound - tol(fs) <= fs <= res.fun + tol(fs)

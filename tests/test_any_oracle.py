"""Any convex oracle, certified: every method that takes a bare oracle, with a box (a
constraint) or a ball (a statement that a minimiser lies in it), against cvxpy + Clarabel.

The rule tested on every function kind and method: ``lower_bound <= f* <= fun`` (f* over the
box, or the unconstrained minimum for a ball), ``gap <= rtol |fun|`` at success, the
certificate checks with the same region, every query point lies in the box; and the option
plumbing around it (which methods take a box, one region at a time, the start projected, a
problem with ``f* = 0`` that stops)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from catalogue import l1_fit
from nsopt.solvers import SOLVERS, ProblemNotSupported, methods_supporting
from test_level_bundle import CASES, Recorder, f_star, tol

#: the methods for a bare oracle, and whether each takes the box as a constraint
ANY_ORACLE = {"level-bundle": True, "proximal-bundle": True, "subbfgs": False, "sublbfgs": False}
#: methods that must reach the tolerance on these small instances (the bundle methods)
MUST_CONVERGE = {"level-bundle", "proximal-bundle"}


def unconstrained(case):
    """``(f*, x*)`` without constraints (Clarabel)."""
    import cvxpy as cp

    x = cp.Variable(case.lb.size)
    prob = cp.Problem(cp.Minimize(case.expr(x)))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == "optimal", prob.status
    return float(prob.value), np.asarray(x.value)


def run(case, method, region, rtol=1e-6, **options):
    """Solve ``case`` with ``region`` ("box" or "ball"); check the bracket, the certificate and
    (for a box) that every query point is in it; return the result."""
    rec = Recorder(case.oracle)
    if region == "box":
        fs, stated = f_star(case), {"bounds": (case.lb, case.ub)}
    else:
        fs, xs = unconstrained(case)
        centre = np.round(xs, 1) + 0.05           # not the minimiser, not the origin
        stated = {"radius": 1.5 * float(np.linalg.norm(xs - centre)) + 0.5,
                  "centre": centre}
    res = nsopt.minimize(rec, method=method, rtol=rtol, max_iter=2000, **stated, **options)
    assert res.lower_bound - tol(fs) <= fs <= res.fun + tol(fs), (res.lower_bound, fs, res.fun)
    assert res.fun == pytest.approx(case.oracle.value(res.x), rel=1e-12)
    if res.success:
        assert res.gap <= rtol * abs(res.fun) + 1e-12
    if region == "box":
        points = np.array(rec.points)
        assert np.all(points >= case.lb) and np.all(points <= case.ub)
        bound = res.certificate.check(case.oracle, bounds=(case.lb, case.ub))
    else:
        bound = res.certificate.check(case.oracle, radius=stated["radius"],
                                      centre=stated["centre"])
    if math.isfinite(res.lower_bound):
        assert bound >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))
        assert bound <= fs + tol(fs)
    return res


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("method", sorted(ANY_ORACLE))
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
def test_ball_brackets_the_optimum(name, method, seed):
    res = run(CASES[name](seed), method, "ball")
    if method in MUST_CONVERGE:
        assert res.success, res.message
    # every method proves some finite bound from its oracle calls over the ball
    assert math.isfinite(res.lower_bound), (res.status, res.certificate.source)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
def test_box_constrains_the_trust_region_bundle(name, seed):
    res = run(CASES[name](seed), "proximal-bundle", "box")
    assert res.success, res.message


#: the four function kinds of the issue (an L1 fit, a max of affine functions with a ridge,
#: a Chebyshev fit, a largest eigenvalue)
FOUR = ["l1", "max-affine-ridge", "chebyshev", "max-eigenvalue"]


@pytest.mark.parametrize("name", FOUR)
@pytest.mark.parametrize("method", sorted(MUST_CONVERGE))
@pytest.mark.parametrize("region", ["box", "ball"])
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
def test_bundle_methods_reach_1e8_without_stalling(name, method, region, seed):
    """A certified relative gap of 1e-8 (the stopping rule reads the certificate): ``success``
    with ``gap <= 1e-8 |fun|``, the bracket around Clarabel's optimum and the certificate's
    check all hold (``run``); within 2000 iterations, so a stall fails the test."""
    res = run(CASES[name](seed), method, region, rtol=1e-8)
    assert res.success, (res.status, res.message, res.gap / abs(res.fun))
    assert res.gap <= 1e-8 * abs(res.fun)
    assert res.certificate.lower == res.lower_bound


# --------------------------------------------------------------------------- option plumbing
def test_box_is_refused_by_methods_that_cannot_keep_it():
    case = CASES["l1"](0)
    for method in ("subbfgs", "sublbfgs"):
        with pytest.raises(TypeError, match=r"cannot keep its iterates in a box.*radius="):
            nsopt.minimize(case.oracle, method=method, bounds=(case.lb, case.ub))


def test_methods_supporting_agrees_with_minimize_on_every_method():
    """What ``methods_supporting`` lists with an option, ``minimize`` accepts with it, and
    what it does not list, ``minimize`` refuses (before the first oracle call)."""
    case = CASES["max-affine-ridge"](1)
    for options in ({}, {"bounds": (case.lb, case.ub)}, {"radius": 3.0}):
        listed = set(methods_supporting(case.oracle, **options))
        for method in SOLVERS:
            if method in listed:
                res = nsopt.minimize(case.oracle, method=method, max_iter=3, **options)
                assert res.nit <= 3
            else:
                with pytest.raises((TypeError, ProblemNotSupported)):
                    nsopt.minimize(case.oracle, method=method, max_iter=3, **options)
        assert ("level-bundle" in listed) == bool(options)
    assert set(methods_supporting(case.oracle, bounds=(case.lb, case.ub))) == {
        m for m, box in ANY_ORACLE.items() if box}


def test_one_region_at_a_time():
    case = CASES["l1"](0)
    with pytest.raises(ValueError, match="not both"):
        nsopt.minimize(case.oracle, method="proximal-bundle", bounds=(case.lb, case.ub), radius=2.0)
    with pytest.raises(ValueError, match="give radius too"):
        nsopt.minimize(case.oracle, method="subbfgs", centre=np.zeros(case.lb.size))
    with pytest.raises(ValueError, match="centre"):
        nsopt.minimize(case.oracle, method="subbfgs", radius=1.0, centre=np.zeros(case.lb.size + 1))


@pytest.mark.parametrize("method", ["level-bundle", "proximal-bundle"])
def test_start_outside_the_box_is_projected(method):
    case = CASES["l1"](3)
    rec = Recorder(case.oracle)
    x0 = case.ub + 5.0
    res = nsopt.minimize(rec, method=method, x0=x0, bounds=(case.lb, case.ub), rtol=1e-6)
    np.testing.assert_array_equal(rec.points[0], case.ub)    # the first call: x0 clipped
    assert np.all(res.x <= case.ub) and res.success


@pytest.mark.parametrize("method", ["level-bundle", "proximal-bundle", "subbfgs", "sublbfgs"])
def test_zero_optimum_stops_without_limits(method):
    """f* = 0 (a consistent system): rtol * |fun| vanishes, yet the run stops, on a gap closed
    up to the rounding of the values met, or on its own stationarity test."""
    rng = np.random.default_rng(1)
    A = rng.standard_normal((30, 5))
    b = A @ rng.standard_normal(5)
    f, _ = l1_fit(A, b)
    region = {"bounds": (-5.0, 5.0)} if ANY_ORACLE[method] else {"radius": 20.0}
    res = nsopt.minimize(f, method=method, rtol=1e-6, **region)      # no max_iter, no max_time
    assert res.status in (nsopt.Status.CONVERGED, nsopt.Status.STATIONARY)
    assert res.lower_bound <= 0.0 <= res.fun
    if method in MUST_CONVERGE:
        assert res.success and res.fun <= 1e-9 * np.abs(b).sum()


def test_ball_check_needs_the_same_centre():
    case = CASES["hinge"](2)
    fs, xs = unconstrained(case)
    centre = xs + 0.1
    res = nsopt.minimize(case.oracle, method="proximal-bundle", radius=1.0, centre=centre,
                         rtol=1e-6)
    assert res.success
    assert res.certificate.check(case.oracle, radius=1.0, centre=centre) <= fs + tol(fs)
    with pytest.raises(nsopt.certificate.CertificateError, match="does not contain"):
        res.certificate.check(case.oracle, radius=1.0, centre=centre + 10.0)


def test_region_certifier_keeps_its_bound_when_its_planes_overflow():
    """certify_planes small: the certifier drops idle planes and aggregates; the bound it
    proved stays provable (the check rebuilds it) and the run still converges."""
    case = CASES["max-affine-ridge"](4)
    res = run(case, "sublbfgs", "ball", rtol=1e-4, certify_planes=2)
    assert res.certificate.source in ("region-planes", "lower-bound")
    assert math.isfinite(res.lower_bound)


def test_subbfgs_stationary_certificate_becomes_a_bound_over_the_ball():
    """A largest eigenvalue where subBFGS finds no descent direction before the tolerance:
    its eps-subgradient aggregate (points, directions, weights) over the stated ball is the
    bound, checkable through the oracle's sup_subgradient, instead of a bare `stationary`."""
    rng = np.random.default_rng(0)
    n, d = 8, 6
    sym = lambda M: (M + M.T) / 2                                          # noqa: E731
    A0 = sym(rng.standard_normal((n, n)))
    As = np.array([sym(rng.standard_normal((n, n))) for _ in range(d)])
    As -= np.trace(As, axis1=1, axis2=2)[:, None, None] / n * np.eye(n)

    def vas(x):
        lam, V = np.linalg.eigh(A0 + np.tensordot(x, As, 1))
        return float(lam[-1]), np.einsum("i,kij,j->k", V[:, -1], As, V[:, -1])

    def sup(x, p):
        lam, V = np.linalg.eigh(A0 + np.tensordot(x, As, 1))
        top = V[:, lam >= lam[-1] - 1e-9 * max(1.0, abs(lam[-1]))]
        mu, U = np.linalg.eigh(sym(top.T @ np.tensordot(p, As, 1) @ top))
        v = top @ U[:, -1]
        return float(mu[-1]), np.einsum("i,kij,j->k", v, As, v)

    import cvxpy as cp
    x = cp.Variable(d)
    prob = cp.Problem(cp.Minimize(cp.lambda_max(A0 + sum(x[i] * As[i] for i in range(d)))))
    prob.solve(solver=cp.CLARABEL)
    fs = float(prob.value)
    assert np.linalg.norm(x.value) < 1.0                 # the ball of radius 1 holds x*
    f = nsopt.FunctionOracle(value_and_subgradient=vas, sup_subgradient=sup, dim=d)
    res = nsopt.minimize(f, method="subbfgs", radius=1.0, rtol=1e-6, max_iter=2000)
    assert res.success, res.message
    assert res.lower_bound - 1e-7 <= fs <= res.fun + 1e-7
    assert res.certificate.evidence.directions is not None
    assert res.certificate.source == "eps-subgradient"      # the aggregate is not zero
    assert res.certificate.check(f, radius=1.0) >= res.lower_bound - 1e-9


@pytest.mark.parametrize("name", ["max-affine-ridge", "hinge", "chebyshev"])
def test_half_infinite_box_for_the_trust_region_bundle(name):
    """bounds=(0, inf): x >= 0 is kept and the aggregate plane proves the bound (the slope's
    sign decides the infinite side, in exact arithmetic at the check)."""
    import cvxpy as cp

    case = CASES[name](5)
    x = cp.Variable(case.lb.size)
    prob = cp.Problem(cp.Minimize(case.expr(x)), [x >= 0])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    fs = float(prob.value)
    rec = Recorder(case.oracle)
    res = nsopt.minimize(rec, method="proximal-bundle", bounds=(0, np.inf), rtol=1e-6)
    assert res.success, res.message
    assert np.all(np.array(rec.points) >= 0)
    assert res.lower_bound - tol(fs) <= fs <= res.fun + tol(fs)
    assert res.certificate.check(case.oracle, bounds=(0, np.inf)) >= res.lower_bound - 1e-9


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), floor=st.booleans(), n_zero=st.integers(0, 4))
def test_planes_evidence_fast_path_is_the_bundles_evidence(seed, floor, n_zero):
    """The evidence read off the query points (every weighted plane a point's own plane or
    the floor) has the points, weights and floor weight that the bundle's recipe merge gives,
    and the same bound under ``Certificate.check``'s rebuild."""
    from nsopt.bundle import PlaneBundle
    from nsopt.certificate import OraclePlanes
    from nsopt.solvers._region import planes_evidence

    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((30, 4)), rng.standard_normal(30)
    f, _ = l1_fit(A, b)
    bundle = PlaneBundle(4, evidence="points")
    if floor:
        bundle.add_floor(f.lower_bound)
    for _ in range(6):
        w = rng.standard_normal(4)
        w.setflags(write=False)
        fun, g = f.value_and_subgradient(w)
        bundle.add_at(w, fun, g)
    alpha = rng.uniform(0.1, 1.0, bundle.n)
    alpha[rng.choice(bundle.n, size=min(n_zero, bundle.n - 1), replace=False)] = 0.0
    alpha = bundle.feasible(alpha)
    plane = bundle.combine(alpha)
    lb, ub = -np.ones(4), np.ones(4)
    fast = planes_evidence(bundle, alpha, f.lower_bound, plane, lb=lb, ub=ub)
    q = bundle.evidence(alpha)
    slow = OraclePlanes(q.points, q.weights[:, 0], floor=float(q.floor[0]),
                        floor_value=f.lower_bound, plane=plane, lb=lb, ub=ub)
    key = lambda ev: sorted((tuple(p), w) for p, w in zip(ev.points, ev.weights))  # noqa: E731
    assert key(fast) == key(slow)
    assert fast.floor == pytest.approx(slow.floor, abs=1e-15)
    assert fast.verify(f)[0] == pytest.approx(slow.verify(f)[0], rel=1e-12, abs=1e-12)



@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2 ** 16), kind=st.sampled_from(["box", "ball"]))
def test_region_certifier_dense_lp_equals_the_lp_from_scratch(seed, kind):
    """The certifier's warm LP is the compiled dense simplex (no rows, small d): through
    adds, drops of idle planes and aggregations (max_planes at its floor 2 d + 2), its bound
    is the model's minimum solved from scratch (HiGHS through linprog), and the best bound
    stays at or above it (the certificates themselves are checked by the sublbfgs runs)."""
    from nsopt.inner.level_master import DenseBoxLP
    from nsopt.oracle import CountingOracle
    from nsopt.solvers._region import RegionCertifier, region_from_options, region_model_minimum

    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 6))
    A, b = rng.standard_normal((25, d)), rng.standard_normal(25)
    f = nsopt.FunctionOracle(lambda x: float(np.max(A @ x + b)),
                             lambda x: A[int(np.argmax(A @ x + b))], dim=d)
    stated = ({"bounds": (np.full(d, -2.0), np.full(d, 3.0))} if kind == "box"
              else {"radius": 2.5, "centre": rng.uniform(-0.5, 0.5, d)})
    region = region_from_options(stated, d)
    cert = RegionCertifier(f, region, max_planes=3)
    counting = CountingOracle(f)
    lo, hi = region.enclosing_box()
    for _ in range(3 * d + 6):
        cert(counting.evaluate(rng.uniform(lo, hi)))
        hot = cert._hot_minimum()
        assert isinstance(cert._lp, DenseBoxLP)
        ref = region_model_minimum(cert.bundle, region, None)
        assert hot.bound == pytest.approx(ref.bound, rel=1e-9, abs=1e-9)
        cert.bound(final=True)
        assert cert.best[0] >= ref.bound - 1e-9 * (1 + abs(ref.bound))

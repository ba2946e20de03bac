"""Polyhedral constraints ``A_ub x <= b_ub`` on top of a box (issue 10, "Constraints").

The problem is ``min f`` over ``P = {lb <= x <= ub, A_ub x <= b_ub}``; level-bundle and the
trust-region proximal bundle keep every query point in P and certify by LP duality (plane
multipliers on the simplex, row multipliers >= 0). Reference optima from cvxpy + Clarabel. The
rules: ``lower_bound <= f* <= fun``, ``gap <= rtol |fun|`` at success, the certificate checks
with the same box and rows and its bound is recomputed from the multipliers alone (weak
duality: any nonnegative multipliers give a bound <= f*), tampered evidence is rejected."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from catalogue import l1_fit, max_affine_ridge
from nsopt.certificate import CertificateError, OraclePlanes
from nsopt.solvers import SOLVERS, ProblemNotSupported, methods_supporting
from nsopt.solvers._region import rows_bound

METHODS = ("level-bundle", "proximal-bundle")


class Recorder(nsopt.Oracle):
    """An oracle that records every point it is asked about."""

    def __init__(self, inner):
        self.inner, self.dim, self.points = inner, inner.dim, []
        self.lower_bound = inner.lower_bound

    def _value_and_subgradient(self, x):
        self.points.append(np.array(x))
        return self.inner.value_and_subgradient(x)

    def _value(self, x):
        return self.inner.value(x)


def make_case(kind, seed, d=5, n_rows=4):
    """``(oracle, expr, lb, ub, A_ub, b_ub)``: an L1 regression or a max-affine function with a
    box and random rows through a random feasible point, tight enough to be active."""
    rng = np.random.default_rng(seed)
    if kind == "l1":
        A, b = rng.standard_normal((30, d)), 2.0 * rng.standard_normal(30)
        oracle, expr = l1_fit(A, b)
    else:
        A, b = rng.standard_normal((25, d)), rng.standard_normal(25)
        oracle, expr = max_affine_ridge(A, b, 1e-2)
    lb, ub = -rng.uniform(0.5, 2.0, d), rng.uniform(0.5, 2.0, d)
    inside = rng.uniform(0.5 * lb, 0.5 * ub)
    G = rng.standard_normal((n_rows, d))
    h = G @ inside + rng.uniform(0.05, 0.5, n_rows)
    return oracle, expr, lb, ub, G, h


def f_star(expr, lb, ub, G, h):
    import cvxpy as cp

    x = cp.Variable(lb.size)
    prob = cp.Problem(cp.Minimize(expr(x)), [x >= lb, x <= ub, G @ x <= h])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == "optimal", prob.status
    return float(prob.value), np.asarray(x.value)


def feasible(x, lb, ub, G, h, tol=1e-9):
    scale = 1.0 + np.abs(h) + np.abs(G) @ np.abs(x)
    return bool(np.all(lb <= x) and np.all(x <= ub) and np.all(G @ x - h <= tol * scale))


# ----------------------------------------------------------------------- against Clarabel
@pytest.mark.parametrize("kind", ["l1", "max-affine"])
@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
def test_bracket_gap_and_check_against_clarabel(kind, method, seed):
    oracle, expr, lb, ub, G, h = make_case(kind, seed)
    fs, _ = f_star(expr, lb, ub, G, h)
    rec = Recorder(oracle)
    rtol = 1e-7
    res = nsopt.minimize(rec, method=method, bounds=(lb, ub), A_ub=G, b_ub=h, rtol=rtol,
                         max_iter=3000)
    tol = 1e-7 * max(1.0, abs(fs))        # Clarabel's own accuracy
    assert res.success, (res.status, res.message)
    assert res.gap <= rtol * abs(res.fun) + 1e-12
    assert res.lower_bound <= fs + tol and fs <= res.fun + tol
    assert feasible(res.x, lb, ub, G, h)
    assert all(feasible(p, lb, ub, G, h) for p in rec.points)   # the master carries the rows
    assert res.certificate.source in ("level-lp", "eps-subgradient", "region-planes")
    ev = res.certificate.evidence
    assert isinstance(ev, OraclePlanes) and ev.y_ub is not None and np.all(ev.y_ub >= 0)
    bound = res.certificate.check(oracle, bounds=(lb, ub), A_ub=G, b_ub=h)
    assert res.lower_bound - 1e-9 * abs(res.lower_bound) <= bound <= fs + tol


def test_rows_change_the_answer():
    """The rows are not a formality: the constrained optimum is above the box's alone."""
    oracle, expr, lb, ub, G, h = make_case("l1", 4)
    fs, _ = f_star(expr, lb, ub, G, h)
    box_only = nsopt.minimize(oracle, method="level-bundle", bounds=(lb, ub), rtol=1e-8)
    assert box_only.fun < fs - 1e-3
    res = nsopt.minimize(oracle, method="level-bundle", bounds=(lb, ub), A_ub=G, b_ub=h,
                         rtol=1e-8)
    assert res.success and abs(res.fun - fs) <= 1e-6 * fs


# ------------------------------------------------------------------- weak duality (property)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 16), kind=st.sampled_from(["l1", "max-affine"]),
       k=st.integers(1, 6), y_scale=st.floats(0.0, 100.0),
       data=st.data())
def test_any_nonnegative_multipliers_bound_below_f_star(seed, kind, k, y_scale, data):
    """Weak duality: planes at any points, any weights on the simplex and any y >= 0 give a
    bound <= f* (the solver's formula and the check's recomputation)."""
    oracle, expr, lb, ub, G, h = make_case(kind, seed)
    fs, _ = f_star(expr, lb, ub, G, h)
    rng = np.random.default_rng(seed + 1)
    points = [rng.uniform(lb - 1.0, ub + 1.0) for _ in range(k)]    # in the set or not
    w = np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k)))
    w = np.full(k, 1.0 / k) if w.sum() <= 0 else w / w.sum()
    y = y_scale * np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=G.shape[0],
                                              max_size=G.shape[0])))
    a_bar = sum(wi * oracle.subgradient(p) for wi, p in zip(w, points))
    b_bar = sum(wi * (oracle.value(p) - oracle.subgradient(p) @ p) for wi, p in zip(w, points))
    tol = 1e-7 * max(1.0, abs(fs))
    assert rows_bound(a_bar, b_bar, y, G, h, lb, ub) <= fs + tol
    ev = OraclePlanes(tuple(points), w, floor_value=oracle.lower_bound, lb=lb, ub=ub, A_ub=G,
                      b_ub=h, y_ub=y)
    assert ev.verify(oracle)[0] <= fs + tol


# ------------------------------------------------------------------------------ the start
@pytest.mark.parametrize("method", METHODS)
def test_infeasible_x0_is_rejected_naming_the_row(method):
    oracle, expr, lb, ub, G, h = make_case("l1", 7)
    x0 = 0.4 * ub                           # in the box
    h = np.maximum(h, G @ x0)               # every row satisfied at x0 ...
    h[2] = G[2] @ x0 - 0.25                 # ... but row 2, violated by 0.25
    with pytest.raises(ValueError, match=r"x0 violates row 2 of A_ub x <= b_ub by 0\.25"):
        nsopt.minimize(oracle, method=method, x0=x0, bounds=(lb, ub), A_ub=G, b_ub=h)


@pytest.mark.parametrize("method", METHODS)
def test_default_start_is_projected_onto_the_set(method):
    """No x0 given: the default start (0) is projected (a QP) when it violates a row."""
    oracle, expr, lb, ub, G, h = make_case("max-affine", 11)
    h = h.copy()
    h[0] = G[0] @ (0.3 * ub) - 0.0   # through a point of the box: 0 is cut off when G[0] ub > 0
    if G[0] @ (0.3 * ub) >= 0:
        G = G.copy()
        G[0] = -G[0]
        h[0] = G[0] @ (0.3 * ub)
    assert G[0] @ np.zeros(lb.size) > h[0]          # 0 is infeasible
    rec = Recorder(oracle)
    res = nsopt.minimize(rec, method=method, bounds=(lb, ub), A_ub=G, b_ub=h, max_iter=5)
    assert feasible(rec.points[0], lb, ub, G, h)
    assert feasible(res.x, lb, ub, G, h)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("with_x0", [False, True])
def test_empty_set_is_a_clear_error(method, with_x0):
    oracle, *_ = make_case("l1", 2, d=3)
    G = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    h = np.array([-1.0, -1.0])          # x_0 <= -1 and x_0 >= 1
    x0 = np.zeros(3) if with_x0 else None
    with pytest.raises(ValueError, match="feasible set .* is empty"):
        nsopt.minimize(oracle, method=method, x0=x0, bounds=(-5.0, 5.0), A_ub=G, b_ub=h)


def test_rows_are_validated_naming_the_argument():
    oracle, *_ = make_case("l1", 2, d=3)
    with pytest.raises(ValueError, match=r"A_ub must have shape \(m, 3\)"):
        nsopt.minimize(oracle, method="level-bundle", bounds=(-1, 1), A_ub=np.ones((2, 4)),
                       b_ub=np.ones(2))
    with pytest.raises(ValueError, match=r"b_ub must have shape \(2,\)"):
        nsopt.minimize(oracle, method="level-bundle", bounds=(-1, 1), A_ub=np.ones((2, 3)),
                       b_ub=np.ones(3))
    with pytest.raises(ValueError, match="A_ub is given without b_ub"):
        nsopt.minimize(oracle, method="level-bundle", bounds=(-1, 1), A_ub=np.ones((2, 3)))
    with pytest.raises(ValueError, match="non-finite entry"):
        nsopt.minimize(oracle, method="level-bundle", bounds=(-1, 1), A_ub=np.ones((2, 3)),
                       b_ub=np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="radius"):
        nsopt.minimize(oracle, method="level-bundle", radius=2.0, A_ub=np.ones((2, 3)),
                       b_ub=np.ones(2))


# -------------------------------------------------------------------------- the certificate
@pytest.fixture(scope="module")
def solved():
    oracle, expr, lb, ub, G, h = make_case("l1", 5)
    res = nsopt.minimize(oracle, method="level-bundle", bounds=(lb, ub), A_ub=G, b_ub=h,
                         rtol=1e-8)
    assert res.success
    return oracle, lb, ub, G, h, res


def _forge(cert, **changes):
    return dataclasses.replace(cert, evidence=dataclasses.replace(cert.evidence, **changes))


def test_check_recomputes_the_bound_from_the_multipliers(solved):
    oracle, lb, ub, G, h, res = solved
    bound = res.certificate.check(oracle, bounds=(lb, ub), A_ub=G, b_ub=h)
    assert bound == pytest.approx(res.lower_bound, rel=1e-9)
    assert res.certificate.check(oracle) == pytest.approx(bound, rel=1e-12)  # its own region
    assert np.any(res.certificate.evidence.y_ub > 0)     # the rows matter at the optimum


def test_tampered_row_multipliers_are_rejected(solved):
    oracle, lb, ub, G, h, res = solved
    y = res.certificate.evidence.y_ub
    for forged, why in ((np.zeros_like(y), "exceeds the one its evidence proves"),
                        (10.0 * y + 1.0, "exceeds the one its evidence proves"),
                        (-y - 1.0, "must be >= 0"),
                        (y[:-1], "shape")):
        with pytest.raises(CertificateError, match=why):
            _forge(res.certificate, y_ub=forged).check(oracle, bounds=(lb, ub), A_ub=G, b_ub=h)


def test_tampered_planes_and_rows_are_rejected(solved):
    oracle, lb, ub, G, h, res = solved
    ev = res.certificate.evidence
    w = np.array(ev.weights, dtype=float)
    w[0] += 0.5
    with pytest.raises(CertificateError, match="simplex"):
        _forge(res.certificate, weights=w).check(oracle, bounds=(lb, ub), A_ub=G, b_ub=h)
    # tightened rows: the evidence bounds f over a smaller set than the one stated
    with pytest.raises(CertificateError, match="not among the rows you state"):
        _forge(res.certificate, b_ub=h - 0.01).check(oracle, bounds=(lb, ub), A_ub=G, b_ub=h)
    # loosened rows (a larger set, so allowed): the multipliers no longer prove the bound
    with pytest.raises(CertificateError, match="exceeds the one its evidence proves"):
        _forge(res.certificate, b_ub=h + 1.0).check(oracle, bounds=(lb, ub), A_ub=G, b_ub=h)
    # a check that states the box alone: the evidence bounds f over a smaller set
    with pytest.raises(CertificateError, match="rows"):
        res.certificate.check(oracle, bounds=(lb, ub))
    # the rows dropped from the evidence: the claimed bound is no longer proven
    with pytest.raises(CertificateError):
        _forge(res.certificate, A_ub=None, b_ub=None, y_ub=None).check(oracle, bounds=(lb, ub))
    # a claimed bound above what the multipliers prove
    forged = dataclasses.replace(res.certificate, lower=res.certificate.lower + 1e-3,
                                 gap=res.certificate.gap - 1e-3)
    with pytest.raises(CertificateError, match="exceeds"):
        forged.check(oracle, bounds=(lb, ub), A_ub=G, b_ub=h)


def test_infeasible_certificate_point_is_rejected(solved):
    oracle, lb, ub, G, h, res = solved
    k = int(np.argmax(G @ res.x - h))
    h2 = h.copy()
    h2[k] = G[k] @ res.x - 0.1                       # x now violates row k
    cert = _forge(res.certificate, b_ub=h2)
    with pytest.raises(CertificateError, match=f"violates row {k}"):
        cert.check(oracle)


# ---------------------------------------------------------------- one name, one behaviour
def test_methods_supporting_agrees_with_minimize_with_rows():
    """Every method: what ``methods_supporting`` lists with rows, ``minimize`` runs; what it
    does not list, ``minimize`` refuses before the first oracle call."""
    oracle, expr, lb, ub, G, h = make_case("max-affine", 1)
    for options in ({"A_ub": G, "b_ub": h, "bounds": (lb, ub)}, {"A_ub": G, "b_ub": h}):
        listed = set(methods_supporting(oracle, **options))
        assert "proximal-bundle" in listed
        assert ("level-bundle" in listed) == ("bounds" in options)
        for method in SOLVERS:
            if method in listed:
                res = nsopt.minimize(oracle, method=method, max_iter=3, **options)
                assert res.nit <= 3 and feasible(res.x, lb if "bounds" in options
                                                 else np.full(lb.size, -np.inf),
                                                 ub if "bounds" in options
                                                 else np.full(ub.size, np.inf), G, h)
            else:
                with pytest.raises((TypeError, ProblemNotSupported)):
                    nsopt.minimize(oracle, method=method, max_iter=3, **options)
    assert set(methods_supporting(oracle, A_ub=G, b_ub=h, bounds=(lb, ub))) == set(METHODS)


@pytest.mark.parametrize("method", ["subbfgs", "sublbfgs"])
def test_other_any_oracle_methods_refuse_rows_clearly(method):
    oracle, expr, lb, ub, G, h = make_case("l1", 0)
    with pytest.raises(TypeError, match=r"cannot keep its iterates in a polyhedron.*"
                                        r"level-bundle.*proximal-bundle|cannot keep its "
                                        r"iterates in a polyhedron.*proximal-bundle.*level"):
        nsopt.minimize(oracle, method=method, A_ub=G, b_ub=h, radius=10.0)


def test_rows_without_a_box_run_honestly():
    """Rows alone (proximal-bundle): iterates stay feasible; with an unbounded box the bound
    needs a reduced cost exactly zero, so the run may end stationary, never with a false
    claim: a proven bound is below f*."""
    oracle, expr, lb, ub, G, h = make_case("l1", 3)
    import cvxpy as cp

    x = cp.Variable(lb.size)
    prob = cp.Problem(cp.Minimize(expr(x)), [G @ x <= h])
    prob.solve(solver=cp.CLARABEL)
    res = nsopt.minimize(oracle, method="proximal-bundle", A_ub=G, b_ub=h, rtol=1e-6,
                         max_iter=500)
    assert np.all(G @ res.x - h <= 1e-9 * (1 + np.abs(h)))
    assert res.fun >= prob.value - 1e-6 * abs(prob.value)
    assert res.lower_bound <= prob.value + 1e-6 * abs(prob.value)
    assert res.success or res.status in (nsopt.Status.STATIONARY, nsopt.Status.MAX_ITER)
    if math.isfinite(res.lower_bound):
        assert res.certificate.check(oracle, A_ub=G, b_ub=h,
                                     bounds=(-np.inf, np.inf)) <= prob.value + 1e-6


def _l1_master_case(seed):
    """An L1 case with a halfspace and a bundle of 8 planes at random points of its box."""
    from nsopt.bundle import PlaneBundle

    oracle, expr, lb, ub, G, h = make_case("l1", 9)
    rng = np.random.default_rng(seed)
    bundle = PlaneBundle(lb.size, evidence="points")
    for _ in range(8):
        x = rng.uniform(lb, ub)
        f, g = oracle.value_and_subgradient(x)
        bundle.add_at(x, f, g)
    return bundle, np.zeros(lb.size), lb, ub, G, h


def test_prox_master_falls_back_to_osqp_when_highs_fails(monkeypatch):
    """HiGHS's QP reports 'solve error' now and then on the trust-region master: OSQP takes
    over, with the same minimiser (to its accuracy) and a feasible point."""
    from nsopt.solvers import _polyhedral

    bundle, centre, lb, ub, G, h = _l1_master_case(0)
    beta, y, x = _polyhedral.rows_prox_master(bundle, 3.0, centre, lb, ub, (G, h))
    real = _polyhedral._highs_class()

    class Failing(real):
        def modelStatusToString(self, status):
            return "Solve error"

    monkeypatch.setattr(_polyhedral, "_highs_class", lambda: Failing)
    beta2, y2, x2 = _polyhedral.rows_prox_master(bundle, 3.0, centre, lb, ub, (G, h))
    np.testing.assert_allclose(x2, x, atol=1e-5)
    assert feasible(x2, lb, ub, G, h)
    assert beta2.sum() == pytest.approx(1.0) and np.all(y2 >= 0)


def test_prox_master_bounds_highs_work_and_a_hit_bound_falls_back(monkeypatch):
    """HiGHS's QP once cycled without end on a random degenerate master: every solve gets an
    iteration and a time bound that HiGHS accepts (its setOptionValue reports kOk), and a
    solve stopped by the bound is answered by OSQP, feasible and the same minimiser."""
    from nsopt.solvers import _polyhedral

    bundle, centre, lb, ub, G, h = _l1_master_case(1)
    reference = _polyhedral.rows_prox_master(bundle, 3.0, centre, lb, ub, (G, h))
    real = _polyhedral._highs_class()
    seen = {}

    class Recording(real):
        def setOptionValue(self, name, value):
            status = super().setOptionValue(name, value)
            seen[name] = (value, str(status))
            return status

    monkeypatch.setattr(_polyhedral, "_highs_class", lambda: Recording)
    _polyhedral.rows_prox_master(bundle, 3.0, centre, lb, ub, (G, h))
    assert seen["qp_iteration_limit"][0] >= 1000 and "kOk" in seen["qp_iteration_limit"][1]
    assert seen["time_limit"][0] > 0 and "kOk" in seen["time_limit"][1]
    monkeypatch.setattr(_polyhedral, "highs_qp_limits",
                        lambda *a: {"qp_iteration_limit": 0, "time_limit": 60.0})
    fallbacks = []
    osqp = _polyhedral._osqp_prox
    monkeypatch.setattr(_polyhedral, "_osqp_prox", lambda *a: fallbacks.append(1) or osqp(*a))
    beta, y, x = _polyhedral.rows_prox_master(bundle, 3.0, centre, lb, ub, (G, h))
    assert fallbacks == [1]   # the bound stopped HiGHS: OSQP answered
    np.testing.assert_allclose(x, reference[2], atol=1e-5)
    assert feasible(x, lb, ub, G, h)


# ---------------------------------------------------------------------------- equalities
def f_star_eq(expr, lb, ub, G, h, E, e):
    import cvxpy as cp

    x = cp.Variable(lb.size)
    prob = cp.Problem(cp.Minimize(expr(x)), [x >= lb, x <= ub, G @ x <= h, E @ x == e])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


@pytest.mark.parametrize("kind", ["l1", "max-affine"])
@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
def test_equalities_against_clarabel(kind, method, seed):
    """``A_eq x = b_eq`` (kept as pairs of rows; the level method projects in their null
    space): the same bracket, every query point on the equalities, the check with them."""
    oracle, expr, lb, ub, G, h = make_case(kind, seed)
    rng = np.random.default_rng(seed + 7)
    E = rng.standard_normal((2, lb.size))
    inside = rng.uniform(0.3 * lb, 0.3 * ub)
    e = E @ inside
    h = np.maximum(h, G @ inside + 0.05)        # the point stays feasible for the rows
    fs = f_star_eq(expr, lb, ub, G, h, E, e)
    rec = Recorder(oracle)
    res = nsopt.minimize(rec, method=method, bounds=(lb, ub), A_ub=G, b_ub=h, A_eq=E, b_eq=e,
                         rtol=1e-7, max_iter=3000)
    tol = 1e-7 * max(1.0, abs(fs))
    assert res.success, (res.status, res.message)
    assert res.lower_bound <= fs + tol and fs <= res.fun + tol
    for p in rec.points + [res.x]:
        assert feasible(p, lb, ub, G, h)
        assert np.all(np.abs(E @ p - e) <= 1e-9 * (1 + np.abs(e) + np.abs(E) @ np.abs(p)))
    bound = res.certificate.check(oracle, bounds=(lb, ub), A_ub=G, b_ub=h, A_eq=E, b_eq=e)
    assert res.lower_bound - 1e-9 * abs(res.lower_bound) <= bound <= fs + tol
    if method == "level-bundle":
        assert res.info["n_qp_fallbacks"] <= res.nit // 4      # the projection works


def test_x0_off_an_equality_names_it():
    oracle, expr, lb, ub, G, h = make_case("l1", 1)
    E, e = np.ones((1, lb.size)), np.array([0.1])
    with pytest.raises(ValueError, match=r"x0 violates row 0 of A_eq x = b_eq by 0\.1"):
        nsopt.minimize(oracle, method="proximal-bundle", x0=np.zeros(lb.size),
                       bounds=(lb, ub), A_eq=E, b_eq=e)

"""The trust-region bundle's master QP over a box and rows ``A_ub x <= b_ub`` by the dense
active set (``proximal_bundle._rows_prox_master``): the same minimum as a conic solver, the
KKT multipliers, HiGHS only as the fallback, and the run it makes possible (issue 10: the
trust-region bundle with a halfspace stalled at a gap of 4e-2 while HiGHS solved each QP)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from catalogue import l1_fit
from nsopt.bundle import PlaneBundle
from nsopt.inner import QPSimplex
from nsopt.solvers import proximal_bundle as PB


def reference(bundle, u, c, lb, ub, R, r):
    """min_x max_i (a_i x + b_i) + u/2 ||x - c||^2 over the box and the rows, by Clarabel
    (HiGHS's QP, the solver's own fallback, hangs on some of these instances)."""
    import cvxpy as cp

    A = np.asarray(bundle.rows())
    x = cp.Variable(A.shape[1])
    cons = [R @ x <= r]
    fin = np.isfinite(lb)
    if fin.any():
        cons += [x[fin] >= lb[fin], x[fin] <= ub[fin]]
    prob = cp.Problem(cp.Minimize(cp.max(A @ x + bundle.b) + 0.5 * u * cp.sum_squares(x - c)),
                      cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return prob.status, (None if x.value is None else np.asarray(x.value))


def objective(bundle, u, c, x):
    return float(bundle.model(x)) + 0.5 * u * float(np.sum((x - c) ** 2))


def instance(seed, degenerate=False, infinite=False):
    rng = np.random.default_rng(seed)
    d, n, m = int(rng.integers(1, 10)), int(rng.integers(1, 14)), int(rng.integers(1, 5))
    bundle = PlaneBundle(d)
    for _ in range(n):
        bundle.add(rng.standard_normal(d), float(rng.standard_normal()))
    h = rng.uniform(0.5, 3.0, d)
    lb, ub = (np.full(d, -np.inf), np.full(d, np.inf)) if infinite else (-h, h)
    R = rng.standard_normal((m, d))
    inside = rng.uniform(-0.5, 0.5, d) * (1.0 if infinite else h)
    r = R @ inside + rng.uniform(0.0, 1.0, m)
    if degenerate:          # a repeated plane, a repeated row, a row tight at the point inside
        bundle.add(np.array(bundle.rows()[0]), float(bundle.b[0]))
        R = np.vstack([R, R[0]])
        r = np.append(r, r[0])
        r[-2] = R[-2] @ inside
    c = inside + 2.0 * rng.standard_normal(d)       # the rows are often violated at c
    u = float(10.0 ** rng.uniform(-2, 2))
    return bundle, u, c, lb, ub, R, r


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), degenerate=st.booleans(), infinite=st.booleans())
def test_equals_clarabel_with_kkt_multipliers(seed, degenerate, infinite):
    bundle, u, c, lb, ub, R, r = instance(seed, degenerate, infinite)
    out = PB._rows_prox_master(bundle, QPSimplex(), u, c, lb, ub, R, r)
    status, ref = reference(bundle, u, c, lb, ub, R, r)
    if out is None:         # the caller's HiGHS fallback: allowed, counted in the test below
        return
    alpha, y, x, rows = out
    assert status == "optimal" and ref is not None
    best = objective(bundle, u, c, ref)
    assert objective(bundle, u, c, x) <= best + 1e-9 * max(1.0, abs(best))
    # x is feasible (box exactly, rows to the solvers' tolerance) and optimal: its value can
    # only tie the optimum
    assert np.all(lb <= x) and np.all(x <= ub)
    assert np.all(R @ x - r <= 1e-9 * (1.0 + np.abs(r) + np.abs(R) @ np.abs(x)))
    assert objective(bundle, u, c, x) >= best - 1e-7 * max(1.0, abs(best))
    # the multipliers: alpha in the simplex, y >= 0 and zero off the held rows, and the
    # minimiser of the Lagrangian over the box is x (stationarity)
    assert np.all(alpha >= 0) and alpha.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(y >= 0) and np.all(y[~rows.active] == 0)
    A = np.asarray(bundle.rows())
    x_lagrange = np.clip(c - (A.T @ alpha + R.T @ y) / u, lb, ub)
    np.testing.assert_allclose(x_lagrange, x, atol=1e-7 * (1.0 + np.abs(x).max()))


def test_the_dense_path_solves_most_instances():
    """The fallback is for degenerate active sets, not the rule: of 60 random instances
    (nondegenerate draws, finite box), the active set answers at least 50."""
    solved = sum(PB._rows_prox_master(bundle, QPSimplex(), u, c, lb, ub, R, r) is not None
                 for bundle, u, c, lb, ub, R, r in (instance(s) for s in range(60)))
    assert solved >= 50


def test_an_empty_set_is_left_to_the_fallback():
    """x_0 <= -1 and -x_0 <= -1: no point; the active set gives up (None), never an answer."""
    bundle = PlaneBundle(2)
    bundle.add(np.array([1.0, 0.5]), 0.0)
    R, r = np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([-1.0, -1.0])
    box = np.full(2, 5.0)
    assert PB._rows_prox_master(bundle, QPSimplex(), 1.0, np.zeros(2), -box, box, R, r) is None


def test_warm_active_set_gives_the_same_answer():
    """Starting from the last solve's active set (what the solver does) changes the path,
    not the minimiser."""
    for seed in range(20):
        bundle, u, c, lb, ub, R, r = instance(seed)
        cold = PB._rows_prox_master(bundle, QPSimplex(), u, c, lb, ub, R, r)
        if cold is None:
            continue
        bundle.add(np.ones(bundle.dim), float(bundle.model(cold[2])) - 0.1)
        again = PB._rows_prox_master(bundle, QPSimplex(), u, c, lb, ub, R, r)
        warm = PB._rows_prox_master(bundle, QPSimplex(), u, c, lb, ub, R, r, start=cold[3])
        if again is None or warm is None:
            continue
        assert objective(bundle, u, c, warm[2]) == pytest.approx(
            objective(bundle, u, c, again[2]), rel=1e-9, abs=1e-12)


def _halfspace_case(m=80, d=12, seed=3, equality=False):
    """An L1 fit and the halfspace sum(x) <= sum(x_ref) - 1 that cuts off its free minimiser
    x_ref (the plane sum(x) = ... with ``equality``); Clarabel's optimum in the box."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, d))
    b = A @ rng.standard_normal(d) + 0.1 * rng.standard_normal(m)
    oracle, expr = l1_fit(A, b)
    import cvxpy as cp

    x = cp.Variable(d)
    cp.Problem(cp.Minimize(expr(x))).solve(solver=cp.CLARABEL)
    x_ref = np.asarray(x.value)
    h = 2.0 * np.abs(x_ref).max() + 1.0
    G, g = np.ones((1, d)), np.array([x_ref.sum() - 1.0])     # cuts off the free minimiser
    prob = cp.Problem(cp.Minimize(expr(x)),
                      [x >= -h, x <= h, (G @ x == g) if equality else (G @ x <= g)])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return oracle, float(prob.value), h, G, g


def test_trust_region_with_a_halfspace_certifies_without_highs(monkeypatch):
    """The L1 fit with a binding halfspace (benchmarks/any_oracle.py's l1-fit-halfspace, small):
    certified at rtol 1e-6, the bound below Clarabel's optimum, every query point in the set,
    and no master QP sent to HiGHS."""
    oracle, fs, h, G, g = _halfspace_case()
    highs = []
    real = PB.rows_prox_master
    monkeypatch.setattr(PB, "rows_prox_master", lambda *a, **k: highs.append(1) or real(*a, **k))
    points = []

    class Recorder(nsopt.Oracle):
        dim, lower_bound = oracle.dim, oracle.lower_bound

        def _value_and_subgradient(self, x):
            points.append(np.array(x))
            return oracle.value_and_subgradient(x)

        def _value(self, x):
            return oracle.value(x)

    d = oracle.dim
    res = nsopt.minimize(Recorder(), method="proximal-bundle", variant="trust-region",
                         bounds=(-h * np.ones(d), h * np.ones(d)), A_ub=G, b_ub=g, rtol=1e-6,
                         max_iter=3000)
    assert res.success, (res.status, res.message)
    assert res.gap <= 1e-6 * abs(res.fun)
    assert res.lower_bound <= fs + 1e-8 * abs(fs) and fs <= res.fun + 1e-8 * abs(fs)
    assert not highs
    assert len(points) == res.nfev
    for p in points:
        assert np.all(np.abs(p) <= h) and G[0] @ p - g[0] <= 1e-9 * (1 + abs(g[0]) + np.abs(p).sum())
    assert res.certificate.check(oracle, bounds=(-h, h), A_ub=G, b_ub=g) <= fs + 1e-8 * abs(fs)


def test_trust_region_falls_back_to_highs_when_the_active_set_gives_up(monkeypatch):
    """With the dense master failing every time, HiGHS solves each master: same certified
    answer."""
    oracle, fs, h, G, g = _halfspace_case(m=40, d=5, seed=4)
    monkeypatch.setattr(PB, "_rows_prox_master", lambda *a, **k: None)
    d = oracle.dim
    res = nsopt.minimize(oracle, method="proximal-bundle", variant="trust-region",
                         bounds=(-h * np.ones(d), h * np.ones(d)), A_ub=G, b_ub=g, rtol=1e-6,
                         max_iter=2000)
    assert res.success and res.lower_bound <= fs + 1e-8 * abs(fs)
    assert G[0] @ res.x <= g[0] + 1e-9 * (1 + abs(g[0]))


# ------------------------------------------- the region certifier's LP with rows, compiled
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), tight=st.booleans())
def test_dense_lp_with_rows_equals_highs_through_adds_and_drops(seed, tight):
    """``DenseBoxLP(rows=...)``: every warm solve proves the bound HiGHS's LP from scratch
    proves (1e-9), with its point in the set, while planes come and go."""
    from nsopt.inner.level_master import DenseBoxLP
    from nsopt.solvers._region import rows_bound, rows_model_minimum

    rng = np.random.default_rng(seed)
    d, m = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    lb, ub = -rng.uniform(0.5, 3.0, d), rng.uniform(0.5, 3.0, d)
    R = rng.standard_normal((m, d))
    inside = rng.uniform(lb / 2, ub / 2)
    r = R @ inside + rng.uniform(0.0, 1.0, m)
    if tight:
        r[0] = R[0] @ inside
    bundle, lp = PlaneBundle(d), DenseBoxLP(lb, ub, capacity=2, rows=(R, r))
    for k in range(int(rng.integers(2, 25))):
        a, b = rng.standard_normal(d), float(rng.standard_normal())
        bundle.add(a, b)
        lp.add(a, b)
        if k % 5 == 4:
            mask = rng.random(bundle.n) < 0.3
            mask[-1] = False
            bundle.drop(mask)
            lp.drop(mask)
        out = lp.solve()
        assert out is not None
        x, _, alpha, y = out
        assert np.all(R @ x - r <= 1e-9 * (1.0 + np.abs(r))) and np.all(y >= 0)
        total = alpha.sum()
        a_bar, b_bar = bundle.combine(bundle.feasible(alpha))
        value = rows_bound(a_bar, b_bar, y / total, R, r, lb, ub)
        ref = rows_model_minimum(bundle, lb, ub, (R, r)).bound
        assert value == pytest.approx(ref, rel=1e-9, abs=1e-9)


def test_dense_lp_with_rows_on_an_empty_set_says_none():
    from nsopt.inner.level_master import DenseBoxLP

    lp = DenseBoxLP(np.full(2, -1.0), np.full(2, 1.0),
                    rows=(np.array([[1.0, 1.0]]), np.array([-3.0])))   # below the box
    lp.add(np.array([1.0, 0.0]), 0.0)
    assert lp.solve() is None


def _with_equalities(seed):
    """An instance of :func:`instance` with one or two equality rows through its point inside,
    in the solver's layout: the inequalities, then the pairs ``E x <= e``, ``-E x <= -e``."""
    bundle, u, c, lb, ub, R, r = instance(seed)
    rng = np.random.default_rng(seed + 1)
    d = bundle.dim
    k = int(rng.integers(1, min(2, d) + 1))
    # a point strictly inside the box and the rows, through which the equalities pass
    finite = np.isfinite(lb)
    inside = np.zeros(d)
    for _ in range(200):
        inside = rng.uniform(-0.5, 0.5, d) * np.where(finite, ub, 1.0)
        if np.all(R @ inside < r):
            break
    E = rng.standard_normal((k, d))
    e = E @ inside
    return bundle, u, c, lb, ub, np.vstack([R, E, -E]), np.concatenate([r, e, -e]), k


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_equalities_are_held_with_free_sign_multipliers(seed):
    """``A_eq`` in the dense active set (it went to HiGHS before): the minimum is Clarabel's,
    ``E x = e`` holds, the pair's multipliers are ``(max(y, 0), max(-y, 0))`` of one free
    multiplier, and x minimises the Lagrangian over the box."""
    bundle, u, c, lb, ub, R, r, k = _with_equalities(seed)
    out = PB._rows_prox_master(bundle, QPSimplex(), u, c, lb, ub, R, r, n_eq=k)
    status, ref = reference(bundle, u, c, lb, ub, R, r)     # E x <= e and -E x <= -e
    if out is None:
        return
    alpha, y, x, rows = out
    assert status == "optimal" and ref is not None
    best = objective(bundle, u, c, ref)
    assert objective(bundle, u, c, x) == pytest.approx(best, rel=1e-7, abs=1e-7)
    m_ub = R.shape[0] - 2 * k
    np.testing.assert_allclose(R[m_ub: m_ub + k] @ x, r[m_ub: m_ub + k],
                               atol=1e-9 * (1.0 + np.abs(x).max()))
    assert np.all(R[:m_ub] @ x - r[:m_ub] <= 1e-9 * (1.0 + np.abs(r[:m_ub]).max()))
    assert np.all(y >= 0)
    assert np.all(np.minimum(y[m_ub: m_ub + k], y[m_ub + k:]) == 0)    # one side of each pair
    A = np.asarray(bundle.rows())
    x_lagrange = np.clip(c - (A.T @ alpha + R.T @ y) / u, lb, ub)
    np.testing.assert_allclose(x_lagrange, x, atol=1e-7 * (1.0 + np.abs(x).max()))


def test_the_dense_path_takes_equalities():
    """Most random instances with equalities are answered without HiGHS (before: none)."""
    solved = sum(PB._rows_prox_master(b, QPSimplex(), u, c, lb, ub, R, r, n_eq=k) is not None
                 for b, u, c, lb, ub, R, r, k in (_with_equalities(s) for s in range(40)))
    assert solved >= 30


def test_trust_region_with_an_equality_certifies_without_highs(monkeypatch):
    """The L1 fit on the plane sum(x) = sum(x_ref) - 1 (it cuts off the free minimiser
    x_ref): the trust-region bundle's masters do not go to HiGHS, the run certifies rtol
    1e-6, its bound is below Clarabel's optimum and its point lies on the plane."""
    oracle, fstar, h, G, g = _halfspace_case(m=60, d=8, seed=5, equality=True)
    calls = []
    real = PB.rows_prox_master
    monkeypatch.setattr(PB, "rows_prox_master", lambda *a, **k: calls.append(1) or real(*a, **k))
    res = nsopt.minimize(oracle, method="proximal-bundle", rtol=1e-6, bounds=(-h, h),
                         A_eq=G, b_eq=g, max_iter=3000)
    assert res.success
    assert res.lower_bound <= fstar + 1e-7 * max(1.0, abs(fstar))
    assert fstar <= res.fun + 1e-9 * max(1.0, abs(fstar))
    assert abs(float(G[0] @ res.x - g[0])) <= 1e-8 * (1.0 + np.abs(res.x).sum())
    assert res.certificate.check(oracle, bounds=(-h, h), A_eq=G, b_eq=g) >= res.lower_bound - 1e-9
    assert len(calls) <= 2          # the odd degenerate round may still go to HiGHS

"""Warm master problems of the any-oracle bundle methods (``nsopt.inner.level_master``) and
what they buy: the compiled Goldfarb-Idnani projection and the hot-started HiGHS LP against
independent solvers, and the runs they serve (iteration counts that failed with the former
settings, certified 1e-8 against cvxpy + Clarabel)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from catalogue import chebyshev_data, chebyshev_fit, max_affine_data, max_affine_ridge
from nsopt.inner.level_master import BoxModelLP, DenseBoxLP, highs_available, project_level_set

needs_highs = pytest.mark.skipif(not highs_available(), reason="no HiGHS object model")


def _instance(seed, m, d, feasible_margin):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, d))
    inside = rng.uniform(-0.5, 0.5, d)
    r = A @ inside + feasible_margin * rng.uniform(0.0, 1.0, m)   # inside satisfies A x <= r
    lb, ub = -np.ones(d), np.ones(d)
    lb[rng.random(d) < 0.2] = -np.inf                             # half-infinite sides too
    centre = 3.0 * rng.standard_normal(d)
    return A, r, lb, ub, centre


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 16), m=st.integers(1, 60), d=st.integers(1, 25),
       margin=st.sampled_from([0.0, 0.3]))
def test_projection_matches_clarabel_and_its_multipliers_are_kkt(seed, m, d, margin):
    import cvxpy as cp

    A, r, lb, ub, c = _instance(seed, m, d, margin)
    x, mult = project_level_set(A, r, lb, ub, c)
    X = cp.Variable(d)
    cons = [A @ X <= r, X <= ub] + [X[j] >= lb[j] for j in range(d) if np.isfinite(lb[j])]
    prob = cp.Problem(cp.Minimize(cp.sum_squares(X - c)), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert x is not None
    np.testing.assert_allclose(x, X.value, atol=1e-6)
    assert np.all(A @ x <= r + 1e-9) and np.all(x >= lb) and np.all(x <= ub)
    # KKT: mult >= 0, complementary, and x = clip of c - A^T mult on the free coordinates
    assert np.all(mult >= 0)
    assert np.all(mult * (r - A @ x) <= 1e-8 * (1 + mult))
    step = c - A.T @ mult
    free = (x > lb + 1e-9) & (x < ub - 1e-9)
    np.testing.assert_allclose(x[free], step[free], atol=1e-7)


def test_projection_reports_an_empty_level_set():
    A = np.array([[1.0], [-1.0]])                  # x <= -1 and x >= 1
    x, mult = project_level_set(A, np.array([-1.0, -1.0]), np.array([-5.0]), np.array([5.0]),
                                np.array([0.0]))
    assert x is None and not mult.any()


@needs_highs
def test_hot_lp_matches_linprog_through_adds_and_drops():
    rng = np.random.default_rng(3)
    d = 7
    lb, ub = -np.ones(d), 2 * np.ones(d)
    lp = BoxModelLP(lb, ub)
    A, b = np.zeros((0, d)), np.zeros(0)
    for k in range(40):
        a, beta = rng.standard_normal(d), rng.standard_normal()
        lp.add(a, beta)
        A, b = np.vstack([A, a]), np.append(b, beta)
        if k % 9 == 8:                             # drop a few rows in both
            mask = rng.random(A.shape[0]) < 0.3
            lp.drop(mask)
            A, b = A[~mask], b[~mask]
        x, t, alpha = lp.solve()
        ref = scipy.optimize.linprog(np.append(np.zeros(d), 1.0),
                                     A_ub=np.hstack([A, -np.ones((A.shape[0], 1))]), b_ub=-b,
                                     bounds=[(l, u) for l, u in zip(lb, ub)] + [(None, None)],
                                     method="highs")
        assert t == pytest.approx(ref.fun, abs=1e-9)
        assert max(A @ x + b) == pytest.approx(t, abs=1e-9)
        assert alpha.shape == b.shape and alpha.min() >= -1e-12
        assert alpha.sum() == pytest.approx(1.0, abs=1e-9)


def _clarabel_box_lp(A, b, lb, ub):
    """The LP min_x max_i (A x + b)_i over the box, by cvxpy + Clarabel (tight tolerances)."""
    import cvxpy as cp

    x = cp.Variable(A.shape[1])
    prob = cp.Problem(cp.Minimize(cp.max(A @ x + b)), [x >= lb, x <= ub])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value


@st.composite
def _plane_sequences(draw):
    """A box and a sequence of planes, with the degenerate cases the level method meets:
    repeated planes, scaled copies, zero slopes (flat planes), sparse slopes, coordinates
    with lb == ub, and drops of random rows between solves."""
    d = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2 ** 16))
    kind = draw(st.sampled_from(["gaussian", "repeats", "flat", "sparse", "fixed-coords"]))
    n = draw(st.integers(1, 40))
    rng = np.random.default_rng(seed)
    lb, ub = -rng.uniform(0.1, 3.0, d), rng.uniform(0.1, 3.0, d)
    if kind == "fixed-coords":
        fixed = rng.random(d) < 0.5
        lb[fixed] = ub[fixed] = rng.uniform(-1, 1, fixed.sum())
    A, b = rng.standard_normal((n, d)), rng.standard_normal(n)
    if kind == "repeats":
        src = rng.integers(0, max(1, n // 3), n)
        A, b = A[src] * rng.choice([1.0, 2.0], (n, 1)), b[src]
    elif kind == "flat":
        A[rng.random(n) < 0.4] = 0.0
    elif kind == "sparse":
        A[rng.random((n, d)) < 0.7] = 0.0
    drops = [rng.random(n) < 0.25 if rng.random() < 0.3 else None for _ in range(n)]
    return lb, ub, A, b, drops


@settings(max_examples=60, deadline=None)
@given(case=_plane_sequences())
def test_dense_lp_matches_clarabel_through_adds_and_drops(case):
    """The compiled dual simplex, warm through adds and drops (as the level method drives
    it), against cvxpy + Clarabel: same value; its point in the box attains it; its
    multipliers are on the simplex and prove that value exactly (LP duality)."""
    from nsopt.solvers._region import box_min

    lb, ub, A_all, b_all, drops = case
    lp = DenseBoxLP(lb, ub, capacity=2)
    A, b = np.zeros((0, lb.size)), np.zeros(0)
    for k in range(A_all.shape[0]):
        lp.add(A_all[k], b_all[k])
        A, b = np.vstack([A, A_all[k]]), np.append(b, b_all[k])
        if drops[k] is not None and A.shape[0] > 1:
            mask = drops[k][: A.shape[0]].copy()
            mask[-1] = False                       # the level method keeps its newest plane
            lp.drop(mask)
            A, b = A[~mask], b[~mask]
        assert lp.n == A.shape[0]
        x, t, alpha = lp.solve()
        assert np.all(x >= lb) and np.all(x <= ub)
        scale = 1.0 + abs(t)
        assert max(A @ x + b) == pytest.approx(t, abs=1e-9 * scale)
        assert alpha.shape == b.shape and alpha.min() >= 0.0
        assert alpha.sum() == pytest.approx(1.0, abs=1e-9)
        bound = alpha @ b + box_min(A.T @ alpha, lb, ub)
        assert bound == pytest.approx(t, abs=1e-9 * scale)
    ref = _clarabel_box_lp(A, b, lb, ub)
    assert t == pytest.approx(ref, abs=1e-7 * (1.0 + abs(ref)))


def test_dense_lp_restarts_cold_when_a_basis_plane_with_weight_goes():
    """Dropping a plane that carries the optimum's multiplier leaves no dual-feasible basis:
    the next solve starts cold and still finds the optimum of what is left."""
    lb, ub = -np.ones(2), np.ones(2)
    lp = DenseBoxLP(lb, ub)
    planes = [(np.array([1.0, 0.0]), 0.0), (np.array([-1.0, 0.0]), 0.0),
              (np.array([0.0, 1.0]), 0.5), (np.array([0.0, -1.0]), 0.5)]
    for a, beta in planes:
        lp.add(a, beta)
    x, t, alpha = lp.solve()
    assert t == pytest.approx(0.5) and alpha[2:].sum() == pytest.approx(1.0)
    lp.drop(np.array([False, False, True, False]))     # the plane x_2 + 0.5 had weight
    assert not lp._warm                                # the basis it was in is given up
    x, t, alpha = lp.solve()
    # max(|x_1|, 0.5 - x_2) over the box: 0 at x_1 = 0, x_2 >= 0.5
    assert t == pytest.approx(0.0, abs=1e-12)
    assert max(abs(x[0]), 0.5 - x[1]) == pytest.approx(0.0, abs=1e-12)
    assert alpha.sum() == pytest.approx(1.0) and lp._warm


def test_dense_lp_refuses_an_infinite_box():
    with pytest.raises(ValueError, match="finite box"):
        DenseBoxLP(np.zeros(2), np.array([1.0, np.inf]))


# ------------------------------------------------------------------------------- the runs
def _benchmark_max_affine():
    """The benchmark's max of 500 affine pieces + 0.005/2 ||x||^2 in d = 50 (its box)."""
    f, _ = max_affine_ridge(*max_affine_data(500, 50, seed=1), mu=0.005)
    return f, (-1.79, 1.79)


def test_trust_region_bundle_keeps_the_planes_a_polyhedral_minimum_needs():
    """A cap of 50 planes in d = 50 (the former default, with planes idle 10 iterations
    dropped) aggregated planes the model needs: 402 oracle calls to a certified 1e-6. The
    default keeps room for 2 d + 2 planes and drops none early."""
    f, box = _benchmark_max_affine()
    bound = 300
    res = nsopt.minimize(f, method="proximal-bundle", bounds=box, rtol=1e-6, max_iter=1000)
    assert res.success and res.nfev <= bound
    old = nsopt.minimize(f, method="proximal-bundle", bounds=box, rtol=1e-6, max_iter=1000,
                         max_planes=50, remove_inactive=10, proximity="doubling")
    assert not (old.success and old.nfev <= bound)     # the bound tells the settings apart
    assert res.certificate.check(f, bounds=box) >= res.lower_bound - 1e-9 * abs(res.fun)


@needs_highs
def test_level_bundle_solves_the_lp_only_every_other_iteration(monkeypatch):
    """With ``lp_every=2`` the LP runs at most every other iteration plus once per empty level
    set, and the projection's multipliers prove bounds in between (the run still certifies)."""
    calls = [0]
    real = BoxModelLP.solve

    def counting(self, *args):
        calls[0] += 1
        return real(self, *args)

    monkeypatch.setattr(BoxModelLP, "solve", counting)
    real_dense = DenseBoxLP.solve
    monkeypatch.setattr(DenseBoxLP, "solve",
                        lambda self, *a: (calls.__setitem__(0, calls[0] + 1), real_dense(self, *a))[1])
    f, box = _benchmark_max_affine()
    res = nsopt.minimize(f, method="level-bundle", bounds=box, rtol=1e-6, max_iter=1000)
    assert res.success
    assert calls[0] <= 0.75 * res.nit + 2           # one LP per iteration would be nit + 1
    assert res.certificate.check(f, bounds=box) >= res.lower_bound - 1e-9 * abs(res.fun)


def _small(name):
    import cvxpy as cp

    if name == "max-affine":
        f, expr = max_affine_ridge(*max_affine_data(60, 8, seed=4), mu=0.01)
        box = (-2.0, 2.0)
    else:
        f, expr = chebyshev_fit(*chebyshev_data(300, "abs"), degree=8)
        box = (-2.0, 2.0)
    x = cp.Variable(f.dim)
    prob = cp.Problem(cp.Minimize(expr(x)), [x >= box[0], x <= box[1]])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert prob.status == "optimal"
    return f, box, float(prob.value)


@pytest.mark.parametrize("method, options", [
    ("level-bundle", {}), ("level-bundle", {"lp_every": None}),
    ("proximal-bundle", {}), ("proximal-bundle", {"proximity": "doubling"})])
@pytest.mark.parametrize("name", ["max-affine", "chebyshev"])
def test_certified_1e8_without_stalling(name, method, options):
    f, box, fs = _small(name)
    res = nsopt.minimize(f, method=method, bounds=box, rtol=1e-8, max_iter=3000, **options)
    assert res.success, res.message
    assert res.gap <= 1e-8 * abs(res.fun)
    slack = 1e-9 * (1 + abs(fs))                       # Clarabel's accuracy
    assert res.lower_bound - slack <= fs <= res.fun + slack
    assert res.certificate.check(f, bounds=box) >= res.lower_bound - 1e-10 * abs(res.fun)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 16), m=st.integers(1, 40), d=st.integers(1, 15),
       margin=st.sampled_from([0.0, 0.3]), nan=st.booleans())
def test_projection_answer_is_the_kernels_clipped_point_and_plane_multipliers(seed, m, d,
                                                                           margin, nan):
    """``project_level_set`` assembles its answer in compiled code: the kernel's point clipped
    onto the box (NaN kept, so the caller's finiteness test still sees it) and the active
    planes' multipliers, the same numbers as assembling them with numpy."""
    from nsopt.inner.level_master import _project

    A, r, lb, ub, c = _instance(seed, m, d, margin)
    if nan:
        c[0] = np.nan
    x, mult = project_level_set(A, r, lb, ub, c, tol=1e-12)
    x0, u, act, q, status = _project(A, r, lb, ub, c.copy(), 1e-12, 10 * (m + 2 * d))
    if status != 0:
        assert x is None and not mult.any()
        return
    ref = np.zeros(m)
    planes = act[:q] < m
    ref[act[:q][planes]] = u[:q][planes]
    np.testing.assert_array_equal(mult, ref)
    np.testing.assert_array_equal(x, np.clip(x0, lb, ub))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2 ** 16), d=st.integers(1, 6), n0=st.integers(0, 5),
       k=st.integers(1, 9), capacity=st.integers(1, 4))
def test_dense_lp_add_many_is_k_adds(seed, d, n0, k, capacity):
    """``DenseBoxLP.add_many`` (the minorants of one oracle call in one copy) leaves the LP
    exactly as k calls of ``add`` in order, also when the row store must grow, and the warm
    solve that follows returns the same numbers."""
    rng = np.random.default_rng(seed)
    lb, ub = -rng.uniform(0.5, 2, d), rng.uniform(0.5, 2, d)
    A0, b0 = rng.standard_normal((n0 + 1, d)), rng.standard_normal(n0 + 1)
    A, b = rng.standard_normal((k, d)), rng.standard_normal(k)
    one, many = DenseBoxLP(lb, ub, capacity=capacity), DenseBoxLP(lb, ub, capacity=capacity)
    for lp in (one, many):
        for j in range(n0 + 1):
            lp.add(A0[j], b0[j])
        lp.solve()                                  # a warm basis before the batch
    for j in range(k):
        one.add(A[j], b[j])
    many.add_many(A, b)
    assert one.n == many.n == n0 + 1 + k
    np.testing.assert_array_equal(one._A[: one.n], many._A[: many.n])
    np.testing.assert_array_equal(one._b[: one.n], many._b[: many.n])
    np.testing.assert_array_equal(one._tc[: one.n], many._tc[: many.n])
    x1, t1, a1 = one.solve()
    x2, t2, a2 = many.solve()
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(a1, a2)
    assert t1 == t2

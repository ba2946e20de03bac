"""Master-problem solvers (nsopt.inner): exactness against cvxpy + Clarabel, feasibility of the
multipliers, validity of the reported lower bound, warm starts, backend agreement, routing."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

cp = pytest.importorskip("cvxpy")

from nsopt import regularizers as R  # noqa: E402
from nsopt.bundle import PlaneBundle  # noqa: E402
from nsopt.inner import (InnerSolution, LPSimplex, OSQPSimplex, QPSimplex,  # noqa: E402
                         SmoothSimplex, project_simplex, select)
from nsopt.inner.lp import _repair  # noqa: E402


# --- fixtures: bundles, a local quadratic-form regularizer, cvxpy primal ----------------------
class LocalQuadratic:
    """0.5 w^T Q w with conjugate 0.5 mu^T Q^{-1} mu: a stand-in for QuadraticForm."""

    inner = "qp"

    def __init__(self, Q):
        self.Q = np.asarray(Q, dtype=float)
        self.Minv = np.linalg.inv(self.Q)

    def value(self, w):
        return 0.5 * float(w @ self.Q @ w)

    def conjugate(self, mu):
        return 0.5 * float(mu @ self.Minv @ mu)

    def conjugate_grad(self, mu):
        return self.Minv @ mu

    def metric(self, a):
        return self.Minv @ a


def random_spd(d, seed):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, d))
    return B @ B.T / d + 0.5 * np.eye(d)


def make_bundle(n, d, seed, metric=None, duplicates=2, zero_plane=True, scale=1.0):
    """n random planes, plus duplicated planes and a zero-slope plane (the loss's floor)."""
    rng = np.random.default_rng(seed)
    bundle = PlaneBundle(d, metric=metric)
    if zero_plane:
        bundle.add(np.zeros(d), 0.0)
    for _ in range(n):
        bundle.add(scale * rng.standard_normal(d), rng.standard_normal())
    for k in range(duplicates):
        bundle.add(bundle.A[1 + k].copy(), float(bundle.b[1 + k]))
    return bundle


def cvx_omega(reg, w):
    """cvxpy expression and constraints of lam-free Omega(w) for the regularizers tested."""
    if isinstance(reg, LocalQuadratic):
        return 0.5 * cp.quad_form(w, cp.psd_wrap(reg.Q)), []
    name = type(reg).__name__
    if name == "L2":
        return 0.5 * cp.sum_squares(w), []
    if name == "L1":
        return cp.norm1(w), []
    if name == "QuadraticForm":
        return 0.5 * cp.quad_form(w, cp.psd_wrap(reg.Q)), []
    if name == "Lp":
        return 0.5 * cp.square(cp.pnorm(w, reg.p)), []
    if name == "ElasticNet":
        r = reg.l1_ratio
        return r * cp.norm1(w) + 0.5 * (1 - r) * cp.sum_squares(w), []
    if name == "KL":
        return cp.sum(cp.kl_div(w, reg.prior)), [cp.sum(w) == 1]
    if name == "NegEntropy":
        return -cp.sum(cp.entr(w)), ([cp.sum(w) == 1] if reg.normalized else [])
    raise NotImplementedError(name)


def cvx_primal(bundle, reg, lam):
    """min_w lam Omega(w) + max_i <a_i, w> + b_i by cvxpy + Clarabel: (value, w)."""
    w = cp.Variable(bundle.dim)
    omega, cons = cvx_omega(reg, w)
    prob = cp.Problem(cp.Minimize(lam * omega + cp.max(bundle.A @ w + bundle.b)), cons)
    with warnings.catch_warnings():  # "may be inaccurate" at these tight tolerances
        warnings.simplefilter("ignore", UserWarning)
        try:
            prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12,
                       max_iter=500)
        except cp.error.SolverError:  # pragma: no cover - tight tolerances not reached
            prob.solve(solver="CLARABEL")
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value), np.asarray(w.value)


def assert_feasible(alpha, n):
    assert alpha.shape == (n,)
    assert np.all(alpha >= 0)
    assert abs(alpha.sum() - 1.0) <= 1e-13 * n


def assert_solution(sol, bundle, reg, lam, p_star, w_star=None, *, rel=1e-8, gap_tol=None):
    assert isinstance(sol, InnerSolution)
    assert_feasible(sol.alpha, bundle.n)
    # strong duality: dual value == primal optimum
    assert abs(sol.dual_value - p_star) <= rel * (1 + abs(p_star)), (sol.dual_value, p_star)
    # the dual value is the bundle's lower bound at alpha, recomputed independently
    assert sol.dual_value == pytest.approx(bundle.lower_bound(reg, lam, sol.alpha), rel=1e-12,
                                           abs=1e-13)
    # the gap is the primal value at w minus the dual value, >= 0 up to rounding
    primal = float(np.max(bundle.A @ sol.w + bundle.b)) + lam * reg.value(sol.w)
    assert sol.gap >= -1e-12
    assert primal - sol.dual_value == pytest.approx(sol.gap, abs=1e-10 * (1 + abs(p_star)))
    if gap_tol is not None:
        assert sol.gap <= gap_tol
    if w_star is not None:
        np.testing.assert_allclose(sol.w, w_star, atol=1e-5 * (1 + np.abs(w_star).max()))


# --- projection onto the simplex -------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_project_simplex_is_the_projection(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    v = rng.standard_normal(n) * 10 ** rng.uniform(-3, 3)
    x = project_simplex(v)
    assert_feasible(x, n)
    # x = P(v) iff <v - x, y - x> <= 0 for every y in the simplex, i.e. for every vertex
    r = v - x
    assert np.max(r) <= r @ x + 1e-12 * (1 + np.abs(v).max())
    np.testing.assert_allclose(project_simplex(x), x, atol=1e-15)


def test_project_simplex_known_values():
    np.testing.assert_allclose(project_simplex([0.5, 0.5, 2.0]), [0.0, 0.0, 1.0])
    np.testing.assert_allclose(project_simplex([0.2, 0.2]), [0.5, 0.5])
    np.testing.assert_allclose(project_simplex([3.0, 1.0], z=2.0), [2.0, 0.0])
    np.testing.assert_allclose(project_simplex([0.1, 0.6, 0.3]), [0.1, 0.6, 0.3])
    with pytest.raises(ValueError):
        project_simplex([])


# --- QPSimplex: exact against cvxpy ----------------------------------------------------------
QP_CASES = [  # (n planes, d, lam, seed): n > d, n < d, small and large lam
    (30, 8, 0.1, 0),
    (12, 20, 1.0, 1),
    (60, 5, 1e-3, 2),
    (25, 10, 10.0, 3),
]


@pytest.mark.parametrize("n,d,lam,seed", QP_CASES)
@pytest.mark.parametrize("kind", ["L2", "quadratic"])
def test_qp_simplex_matches_cvxpy(n, d, lam, seed, kind):
    if kind == "L2":
        reg, metric = R.L2(), None
    else:
        reg = LocalQuadratic(random_spd(d, seed))
        metric = reg.metric
    bundle = make_bundle(n, d, seed, metric=metric)
    sol = QPSimplex().solve(bundle, reg, lam)
    p_star, w_star = cvx_primal(bundle, reg, lam)
    assert_solution(sol, bundle, reg, lam, p_star, w_star,
                    gap_tol=1e-12 * (1 + abs(sol.dual_value)))
    # exact to ~1e-12: the dual value never exceeds the primal optimum beyond Clarabel's accuracy
    assert sol.dual_value <= p_star + 1e-9 * (1 + abs(p_star))
    # w is the dual connection
    a_bar = sol.alpha @ bundle.A
    np.testing.assert_allclose(sol.w, reg.conjugate_grad(-a_bar / lam), rtol=1e-12, atol=1e-13)


def test_qp_simplex_with_nsopt_quadratic_form():
    QuadraticForm = getattr(R, "QuadraticForm", None)
    if QuadraticForm is None:
        pytest.skip("nsopt.regularizers.QuadraticForm not available yet")
    d, lam = 7, 0.3
    reg = QuadraticForm(random_spd(d, 11))
    bundle = make_bundle(20, d, 11, metric=reg.metric)
    sol = QPSimplex().solve(bundle, reg, lam)
    p_star, w_star = cvx_primal(bundle, reg, lam)
    assert_solution(sol, bundle, reg, lam, p_star, w_star)


def test_qp_simplex_single_plane_is_closed_form():
    d, lam = 5, 0.7
    rng = np.random.default_rng(4)
    a, b0 = rng.standard_normal(d), 0.3
    for reg, metric in [(R.L2(), None), (LocalQuadratic(random_spd(d, 4)), "reg")]:
        bundle = PlaneBundle(d, metric=None if metric is None else reg.metric)
        bundle.add(a, b0)
        sol = QPSimplex().solve(bundle, reg, lam)
        Ma = a if metric is None else reg.metric(a)
        assert sol.alpha.tolist() == [1.0]
        assert sol.dual_value == pytest.approx(b0 - a @ Ma / (2 * lam), rel=1e-14)
        np.testing.assert_allclose(sol.w, -Ma / lam, rtol=1e-14)
        assert sol.gap == 0.0


def test_qp_simplex_degenerate_bundles():
    d, lam = 4, 0.5
    # only zero-slope planes: the best offset wins, w = 0
    bundle = PlaneBundle(d)
    for b0 in (0.1, 0.4, 0.4, -1.0):
        bundle.add(np.zeros(d), b0)
    sol = QPSimplex().solve(bundle, R.L2(), lam)
    assert sol.dual_value == pytest.approx(0.4, abs=1e-15)
    assert sol.gap <= 1e-15 and np.all(sol.w == 0)
    assert_feasible(sol.alpha, 4)
    # every plane duplicated five times, many more planes than dimensions
    rng = np.random.default_rng(5)
    bundle = PlaneBundle(d)
    bundle.add(np.zeros(d), 0.0)
    base = [(rng.standard_normal(d), rng.standard_normal()) for _ in range(8)]
    for _ in range(5):
        for a, b0 in base:
            bundle.add(a, b0)
    sol = QPSimplex().solve(bundle, R.L2(), lam)
    p_star, w_star = cvx_primal(bundle, R.L2(), lam)
    assert_solution(sol, bundle, R.L2(), lam, p_star, w_star,
                    gap_tol=1e-12 * (1 + abs(sol.dual_value)))


def test_qp_simplex_inexact_solve_is_still_a_lower_bound():
    bundle = make_bundle(60, 10, 6)
    lam = 0.05
    p_star, _ = cvx_primal(bundle, R.L2(), lam)
    for max_iter in (1, 3, 10):
        sol = QPSimplex(max_iter=max_iter, polish_rounds=0).solve(bundle, R.L2(), lam)
        assert_feasible(sol.alpha, bundle.n)
        assert sol.n_iter <= max_iter
        assert sol.dual_value <= p_star + 1e-10
        assert sol.gap > 1e-6  # not converged, and the gap says so
    # a loose tol stops early with a gap within it
    loose = QPSimplex().solve(bundle, R.L2(), lam, tol=1e-3)
    assert loose.gap <= 1e-3
    assert loose.dual_value <= p_star + 1e-10


def bmrm_like_bundles(d=30, n_pieces=400, steps=60, lam=1e-2, seed=7):
    """Planes of a piecewise-linear risk added at successive master minimisers, as BMRM does."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n_pieces, d)) / np.sqrt(d)
    e = rng.standard_normal(n_pieces)
    bundle = PlaneBundle(d)
    bundle.add(np.zeros(d), float(np.min(e)) - 10.0)
    w, alpha, pairs = np.zeros(d), None, []
    solver = QPSimplex()
    for _ in range(steps):
        k = int(np.argmax(C @ w + e))
        bundle.add(C[k], float(e[k]))
        warm = None if alpha is None else np.append(alpha, 0.0)
        sol = solver.solve(bundle, R.L2(), lam, warm=warm)
        pairs.append((bundle.n, alpha))
        alpha, w = sol.alpha, sol.w
    return bundle, pairs


def test_warm_start_reduces_iterations():
    bundle, pairs = bmrm_like_bundles()
    lam = 1e-2
    cold_total = warm_total = 0
    for n, alpha_prev in pairs[10:]:
        sub = PlaneBundle(bundle.dim)
        for i in range(n):
            sub.add(bundle.A[i], float(bundle.b[i]))
        cold = QPSimplex().solve(sub, R.L2(), lam)
        warm = QPSimplex().solve(sub, R.L2(), lam, warm=alpha_prev)  # shorter: padded with 0
        assert warm.dual_value == pytest.approx(cold.dual_value, rel=1e-12, abs=1e-14)
        cold_total += cold.n_iter
        warm_total += warm.n_iter
    assert warm_total < 0.7 * cold_total, (warm_total, cold_total)


# --- OSQP ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,d,lam,seed", [QP_CASES[0], QP_CASES[1], QP_CASES[3]])
def test_osqp_agrees_with_qp_simplex(n, d, lam, seed):
    reg = LocalQuadratic(random_spd(d, seed)) if seed % 2 else R.L2()
    bundle = make_bundle(n, d, seed, metric=reg.metric if seed % 2 else None)
    exact = QPSimplex().solve(bundle, reg, lam)
    sol = OSQPSimplex().solve(bundle, reg, lam)
    assert_feasible(sol.alpha, bundle.n)
    assert sol.gap >= -1e-12
    assert sol.dual_value <= exact.dual_value + 1e-12 * (1 + abs(exact.dual_value))
    assert sol.dual_value == pytest.approx(exact.dual_value, rel=1e-8, abs=1e-10)
    np.testing.assert_allclose(sol.w, exact.w, atol=1e-5 * (1 + np.abs(exact.w).max()))
    # a warm start from the exact answer is accepted and keeps it
    again = OSQPSimplex().solve(bundle, reg, lam, warm=exact.alpha)
    assert again.dual_value == pytest.approx(exact.dual_value, rel=1e-9, abs=1e-11)


def test_osqp_not_converged_is_still_a_valid_bound():
    # many planes in 5 dimensions at a small lam: ADMM stalls within a small budget
    bundle = make_bundle(60, 5, 2)
    lam = 1e-3
    exact = QPSimplex().solve(bundle, R.L2(), lam)
    sol = OSQPSimplex(max_iter=200).solve(bundle, R.L2(), lam)
    assert_feasible(sol.alpha, bundle.n)
    assert sol.dual_value <= exact.dual_value + 1e-12
    assert sol.dual_value == pytest.approx(bundle.lower_bound(R.L2(), lam, sol.alpha), rel=1e-12)
    assert sol.gap >= exact.dual_value - sol.dual_value - 1e-12  # the gap is honest


# --- LP for L1 -------------------------------------------------------------------------------
@pytest.mark.parametrize("n,d,lam,seed", [(30, 8, 0.1, 0), (15, 25, 0.5, 1), (80, 6, 0.02, 2)])
def test_lp_simplex_l1_matches_cvxpy(n, d, lam, seed):
    reg = R.L1()
    bundle = make_bundle(n, d, seed)
    sol = LPSimplex().solve(bundle, reg, lam)
    p_star, _ = cvx_primal(bundle, reg, lam)
    assert_feasible(sol.alpha, bundle.n)
    a_bar = sol.alpha @ bundle.A
    assert np.abs(a_bar).max() <= lam * (1 - 1e-12)  # dual-feasible: Omega*(-a_bar/lam) = 0
    assert sol.dual_value == pytest.approx(float(sol.alpha @ bundle.b), rel=1e-15, abs=1e-15)
    assert math.isfinite(bundle.lower_bound(reg, lam, sol.alpha))
    assert sol.dual_value <= p_star + 1e-9 * (1 + abs(p_star))  # never above the optimum
    assert sol.dual_value == pytest.approx(p_star, rel=1e-7, abs=1e-8)
    primal = float(np.max(bundle.A @ sol.w + bundle.b)) + lam * np.abs(sol.w).sum()
    assert primal == pytest.approx(p_star, rel=1e-7, abs=1e-8)
    assert -1e-12 <= sol.gap <= 1e-7 * (1 + abs(p_star))


def test_lp_repair_makes_multipliers_feasible():
    rng = np.random.default_rng(8)
    d, lam = 6, 0.3
    A = np.vstack([np.zeros(d), rng.standard_normal((5, d))])
    # multipliers slightly outside ||A^T alpha||_inf <= lam, as an LP solver may return
    alpha = project_simplex(rng.random(6))
    v = np.abs(alpha @ A).max()
    A[1:] *= lam * (1 + 1e-9) / v
    assert np.abs(alpha @ A).max() > lam
    fixed = _repair(A, alpha, np.eye(1, 6, 0).ravel(), lam * (1 - 1e-12))
    assert_feasible(fixed, 6)
    assert np.abs(fixed @ A).max() <= lam * (1 - 1e-12)
    assert np.abs(fixed - alpha).max() < 1e-8  # a tiny mix, not a different point


def test_lp_simplex_unbounded_model_raises():
    bundle = PlaneBundle(3)
    bundle.add(np.array([1.0, 0.0, 0.0]), 0.0)
    bundle.add(np.array([0.0, 2.0, 0.0]), 1.0)
    with pytest.raises(ValueError, match="lower_bound"):
        LPSimplex().solve(bundle, R.L1(), 0.5)


def test_lp_simplex_bounded_by_a_combination_of_planes():
    # no single plane has ||a||_inf < lam, but their average does: the model is bounded
    bundle = PlaneBundle(1)
    bundle.add(np.array([2.0]), 0.0)
    bundle.add(np.array([-2.0]), 0.0)
    sol = LPSimplex().solve(bundle, R.L1(), 1.0)
    assert sol.dual_value == pytest.approx(0.0, abs=1e-12)
    assert np.abs(sol.alpha @ bundle.A).max() <= 1.0


# --- SmoothSimplex ---------------------------------------------------------------------------
@pytest.mark.parametrize("n,d,lam,seed", QP_CASES[:3])
def test_smooth_simplex_matches_qp_on_quadratics(n, d, lam, seed):
    for reg, metric in [(R.L2(), None), (LocalQuadratic(random_spd(d, seed)), "m")]:
        bundle = make_bundle(n, d, seed, metric=None if metric is None else reg.metric)
        exact = QPSimplex().solve(bundle, reg, lam)
        sol = SmoothSimplex().solve(bundle, reg, lam, tol=1e-10)
        assert_feasible(sol.alpha, bundle.n)
        assert -1e-12 <= sol.gap <= 1e-10
        assert sol.dual_value <= exact.dual_value + 1e-12 * (1 + abs(exact.dual_value))
        assert sol.dual_value == pytest.approx(exact.dual_value, rel=1e-10, abs=1e-12)
        np.testing.assert_allclose(sol.w, exact.w, atol=1e-4 * (1 + np.abs(exact.w).max()))


SMOOTH_REGS = [  # (class name, constructor arguments, lam, slope scale)
    ("Lp", (1.5,), 0.2, 0.5),
    ("Lp", (3.0,), 0.2, 0.5),
    ("ElasticNet", (0.5,), 0.2, 0.5),
    ("NegEntropy", (), 0.5, 2.0),
    ("NegEntropy", (True,), 0.1, 2.0),
    ("KL", ("prior",), 0.1, 2.0),
]


@pytest.mark.parametrize("name,args,lam,scale", SMOOTH_REGS, ids=lambda x: str(x))
def test_smooth_simplex_matches_cvxpy(name, args, lam, scale):
    cls = getattr(R, name, None)
    if cls is None:
        pytest.skip(f"nsopt.regularizers.{name} not available yet")
    d = 6
    if args == ("prior",):
        prior = np.random.default_rng(9).random(d) + 0.2
        args = (prior / prior.sum(),)
    reg = cls(*args)
    bundle = make_bundle(25, d, 10, scale=scale)
    tol = 1e-9
    sol = select(reg).solve(bundle, reg, lam, tol=tol)
    p_star, _ = cvx_primal(bundle, reg, lam)
    assert_feasible(sol.alpha, bundle.n)
    assert np.count_nonzero(sol.alpha) >= 3  # a master problem with several active planes
    assert sol.dual_value <= p_star + 1e-8 * (1 + abs(p_star))
    assert sol.dual_value == pytest.approx(p_star, rel=1e-7, abs=1e-8)
    assert -1e-12 <= sol.gap <= tol
    assert sol.dual_value == pytest.approx(bundle.lower_bound(reg, lam, sol.alpha), rel=1e-12,
                                           abs=1e-13)
    np.testing.assert_allclose(sol.w, reg.conjugate_grad(-(sol.alpha @ bundle.A) / lam))


def test_smooth_simplex_returns_best_point_when_stopped_early():
    bundle = make_bundle(40, 8, 12)
    lam = 0.05
    exact = QPSimplex().solve(bundle, R.L2(), lam)
    values = [SmoothSimplex(max_iter=k).solve(bundle, R.L2(), lam).dual_value for k in (1, 5, 50)]
    assert all(v <= exact.dual_value + 1e-12 for v in values)
    assert values[0] <= values[1] + 1e-15 <= values[2] + 2e-15  # best seen never gets worse


# --- shared argument handling, options, routing ----------------------------------------------
@pytest.mark.parametrize("solver", [QPSimplex(), OSQPSimplex(), SmoothSimplex()])
def test_solve_checks_its_arguments(solver):
    bundle = make_bundle(5, 3, 13)
    with pytest.raises(ValueError, match="lam"):
        solver.solve(bundle, R.L2(), 0.0)
    with pytest.raises(ValueError, match="empty"):
        solver.solve(PlaneBundle(3), R.L2(), 1.0)
    with pytest.raises(ValueError, match="warm"):
        solver.solve(bundle, R.L2(), 1.0, warm=np.ones(bundle.n + 1))
    with pytest.raises(ValueError, match="inner"):
        solver.solve(bundle, R.L1(), 1.0)
    # a short warm start is padded with zeros; a zero one falls back to a cold start
    sol = solver.solve(bundle, R.L2(), 1.0, warm=[0.0, 1.0])
    cold = solver.solve(bundle, R.L2(), 1.0, warm=np.zeros(2))
    assert sol.dual_value == pytest.approx(cold.dual_value, rel=1e-9)


def test_metric_mismatch_is_detected():
    d = 4
    reg = LocalQuadratic(random_spd(d, 14) + 3 * np.eye(d))
    bundle = make_bundle(6, d, 14)  # built without reg.metric
    with pytest.raises(ValueError, match="metric"):
        QPSimplex().solve(bundle, reg, 1.0)


def test_options_are_validated():
    with pytest.raises(TypeError):
        QPSimplex(tolerance=1e-3)
    with pytest.raises(TypeError):
        QPSimplex(10)  # keyword-only
    with pytest.raises(ValueError, match="max_iter"):
        QPSimplex(max_iter=0)
    with pytest.raises(TypeError, match="max_iter"):
        SmoothSimplex(max_iter=2.5)
    with pytest.raises(ValueError, match="eps"):
        OSQPSimplex(eps=-1.0)
    with pytest.raises(TypeError):
        LPSimplex(method="simplex")
    with pytest.raises(ValueError, match="tol"):
        QPSimplex().solve(make_bundle(3, 2, 0), R.L2(), 1.0, tol=-1.0)


def test_select_routes_by_regularizer():
    assert type(select(R.L2())) is QPSimplex
    assert type(select(LocalQuadratic(np.eye(2)))) is QPSimplex
    assert type(select(R.L1())) is LPSimplex
    assert type(select(R.L2(), "osqp")) is OSQPSimplex
    assert type(select(R.L2(), "smooth")) is SmoothSimplex
    assert type(select(R.L1(), "lp")) is LPSimplex
    for name in ("Lp", "NegEntropy", "ElasticNet"):
        cls = getattr(R, name, None)
        if cls is not None:
            reg = cls(1.5) if name == "Lp" else cls()
            assert type(select(reg)) is SmoothSimplex
    custom = QPSimplex(max_iter=7)
    assert select(R.L2(), custom) is custom


def test_select_errors_are_clear():
    with pytest.raises(ValueError, match="inner"):
        select(R.L1(), "qp")
    with pytest.raises(ValueError, match="inner"):
        select(R.L1(), "osqp")
    with pytest.raises(ValueError, match="inner"):
        select(R.L1(), "smooth")
    with pytest.raises(ValueError, match="inner"):
        select(R.L2(), "lp")
    with pytest.raises(ValueError, match="unknown inner solver"):
        select(R.L2(), "cplex")
    with pytest.raises(ValueError, match="inner"):
        select(object(), "auto")
    with pytest.raises(ValueError, match="inner"):
        select(R.L1(), QPSimplex())

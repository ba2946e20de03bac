"""subBFGS / subLBFGS ([YVGS10] Algs. 1-2): the toy trace of the 002 notes (Sec. 2.8, R18,
R33), direction finding (R9-R15), the failure path, certificates against cvxpy, subLBFGS =
subBFGS (R31), the Appendix E counterexamples (R34) and the OWL-QN modes (R35)."""
import math

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given
from hypothesis import strategies as st

import nsopt
from nsopt import regularizers as R
from nsopt.losses import Hinge, Logistic, SquaredHinge
from nsopt.oracle import CountingOracle, GenericLine, LineFunction
from nsopt.solvers import SubBFGS, SubLBFGS
from nsopt.solvers.subbfgs import (DenseInverseHessian, LBFGSInverseHessian, _Alg2,
                                   descent_direction)
from nsopt.testing import kink_points, random_regularized_risk

from cvxref import cvxpy_optimum, small_binary


def toy():
    """f(x, y) = 10|x| + |y| ([YVGS10] eq. 8) with exact line searches (an L1 line)."""
    return R.L1().compose(np.diag([10.0, 1.0]))


# ----------------------------------------------------------------------------------------
# The toy example, notes 002 Sec. 2.8
# ----------------------------------------------------------------------------------------
def test_toy_trace_reaches_the_optimum_in_two_steps():
    states = list(SubBFGS(max_iter=2).iterate(toy(), x0=np.ones(2)))
    s0, s1, s2 = states
    np.testing.assert_array_equal(s0.g, [10.0, 1.0])                   # g_0, p_0 = (-10, -1)
    # t = 0: exact step 0.1 to the hinge x = 0
    assert s1.eta == pytest.approx(0.1, abs=1e-10)
    np.testing.assert_allclose(s1.w, [0.0, 0.9], atol=1e-10)
    assert s1.fun == pytest.approx(0.9, abs=1e-10)
    np.testing.assert_allclose(s1.g, [-10.0, 1.0], atol=1e-10)        # argsup along p_0
    np.testing.assert_allclose(s1.store.B, [[0.05, 0.005], [0.005, 1.0105]], atol=1e-10)
    assert s1.n_inner == 0                                             # (1, 1) is smooth
    # t = 1: one pass of Algorithm 2, exact step 0.9 / 1.01 to (0, 0)
    assert s2.n_inner == 1 and s2.n_failures == 0
    np.testing.assert_allclose(s2.g_bar, [-0.1, 1.0], atol=1e-10)
    assert s2.eta == pytest.approx(0.9 / 1.01, abs=1e-10)
    assert np.abs(s2.w).max() < 1e-12 and s2.fun < 1e-12


def test_toy_direction_finding_intermediate_values():
    """R18: at w = (0, 0.9), B_1 as above, g^(1) = (-10, 1): p^(1) = (0.495, -0.9605),
    g^(2) = (10, 1), eps^(1) = 9.9, M(p^(1)) = 6.94475; mu* = 0.495, g_bar = (-0.1, 1),
    p^(2) = (0, -1.01), M(p^(2)) = -0.505, and the next eps is 0."""
    f = CountingOracle(toy())
    w, g1 = np.array([0.0, 0.9]), np.array([-10.0, 1.0])
    B = DenseInverseHessian(np.array([[0.05, 0.005], [0.005, 1.0105]]))
    alg = _Alg2(B, g1)
    np.testing.assert_allclose(alg.p, [0.495, -0.9605], atol=1e-12)
    alg.observe(*f.sup_subgradient(w, alg.p))
    np.testing.assert_allclose(alg.g_next, [10.0, 1.0], atol=1e-12)
    assert alg.slope_next == pytest.approx(3.9895, abs=1e-12)
    assert alg.eps == pytest.approx(9.9, abs=1e-12)
    assert alg.min_M == pytest.approx(6.94475, abs=1e-12)
    assert alg.mix()
    mu = (alg.g_bar[0] + 10.0) / 20.0
    assert mu == pytest.approx(0.495, abs=1e-12)
    np.testing.assert_allclose(alg.g_bar, [-0.1, 1.0], atol=1e-12)
    np.testing.assert_allclose(alg.p, [0.0, -1.01], atol=1e-12)
    alg.observe(*f.sup_subgradient(w, alg.p))
    assert alg.min_M == pytest.approx(-0.505, abs=1e-12)
    assert abs(alg.eps) < 1e-12
    d = descent_direction(f, w, g1, B)
    assert d.success and d.n_inner == 1 and d.slope == pytest.approx(-1.01, abs=1e-12)
    np.testing.assert_allclose(d.p, [0.0, -1.01], atol=1e-12)


def test_toy_plain_bfgs_fails_at_the_second_step():
    """Negative control (R33): without Algorithm 2's loop (k_max = 1, i.e. p = -B g, BFGS)
    the direction at the hinge is not a descent direction; even the B = I retry fails, so the
    run stops at (0, 0.9), recorded as a failure, with status stationary (not success) and an
    eps-subgradient certificate that itself shows the point is not optimal (||g_bar|| >= 1)."""
    res = nsopt.minimize(toy(), method="subbfgs", x0=np.ones(2), max_direction_iter=1, max_iter=10)
    assert res.fun == pytest.approx(0.9) and res.nit == 2
    assert res.info["n_failures"] == 1 and res.status is nsopt.Status.STATIONARY
    # the only bound is the oracle's stated floor (L1 >= 0): far from 0.9, so no proof
    assert not res.success and res.lower_bound == 0.0 and res.certificate.source == "lower-bound"
    assert res.subgradient_norm >= 1.0 and res.linearization_error == 0.0
    np.testing.assert_allclose(res.x, [0.0, 0.9], atol=1e-12)


# ----------------------------------------------------------------------------------------
# Direction finding
# ----------------------------------------------------------------------------------------
def _hinge_subdifferential(J, w):
    """dJ(w) = base + M beta, beta in [0, 1]^k for the k examples on their kink."""
    loss = J.loss
    X = loss.data.X
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    margin = 1.0 - loss.y * (X @ w)
    rows = -(loss.c * loss.y)[:, None] * X
    base = J.lam * w + rows[margin > 0].sum(axis=0)
    return base, rows[margin == 0].T


def _spd(seed, d):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (Q * rng.uniform(0.1, 10.0, d)) @ Q.T


@given(st.data())
def test_direction_is_descent_at_hinge_kinks(data):
    """At points with examples exactly on their hinges (dyadic data: exact ties), Algorithm 2
    with a random SPD B returns a descent direction whenever one exists (0 not in dJ, checked
    by a bounded least-squares solve), with p = -B g_bar and g_bar in dJ(w); when 0 is in
    dJ(w) it reports failure."""
    J = data.draw(random_regularized_risk("hinge", m=(2, 8), d=(1, 4), dyadic=True, lam=(0.0625, 1.0)))
    w = data.draw(kink_points(J.loss, max_kinks=3))
    B = _spd(data.draw(st.integers(0, 2**16)), J.dim)
    base, M = _hinge_subdifferential(J, w)
    if M.shape[1]:
        fit = scipy.optimize.lsq_linear(M, -base, bounds=(0.0, 1.0), method="bvls")
        min_norm = float(np.linalg.norm(base + M @ fit.x))
    else:
        min_norm = float(np.linalg.norm(base))
    f = CountingOracle(J)
    # R13: eps^(i) is non-increasing along the inner loop (Theorem 7)
    alg = _Alg2(DenseInverseHessian(B), J.subgradient(w))
    alg.observe(*f.sup_subgradient(w, alg.p))
    eps = [alg.eps]
    while alg.keep_going(1e-12, 200) and alg.mix():
        alg.observe(*f.sup_subgradient(w, alg.p))
        eps.append(alg.eps)
    assert all(b <= a + 1e-12 * max(1.0, abs(a)) for a, b in zip(eps, eps[1:]))
    d = descent_direction(f, w, J.subgradient(w), DenseInverseHessian(B), epsilon=1e-12, k_max=2000)
    # the reported slope is the true directional derivative: max over the box of (base + M b)^T p
    true_slope = base @ d.p + np.maximum(M.T @ d.p, 0.0).sum()
    assert d.slope == pytest.approx(true_slope, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(d.p, -B @ d.g_bar, rtol=1e-10, atol=1e-12)            # R12
    if M.shape[1]:                                                                   # g_bar in dJ(w)
        fit = scipy.optimize.lsq_linear(M, d.g_bar - base, bounds=(0.0, 1.0), method="bvls")
        assert np.linalg.norm(base + M @ fit.x - d.g_bar) <= 1e-9 * max(1.0, np.linalg.norm(base))
    else:
        np.testing.assert_allclose(d.g_bar, base, rtol=1e-12, atol=1e-14)
    if min_norm > 1e-6:
        assert d.success and d.slope < 0
    elif min_norm < 1e-12:
        assert not d.success


def test_erratum_4_mu_is_clipped():
    """Erratum 4 of the 002 notes: Alg. 2 l. 7 / eq. 97 lack eq. 73's max(0, .): a
    subgradient that does not violate the candidate gives no step (never mu < 0), and mu* is
    capped at 1 (then g_bar becomes the new subgradient)."""
    B = DenseInverseHessian(np.eye(2))
    alg = _Alg2(B, np.array([1.0, 0.0]))                    # p = (-1, 0), p^T g_bar = -1
    alg.observe(-2.0, np.array([2.0, 0.0]))                 # g^T p = -2 < p^T g_bar: mu would be < 0
    assert not alg.mix() and alg.n_inner == 0
    np.testing.assert_array_equal(alg.g_bar, [1.0, 0.0])
    alg = _Alg2(B, np.array([1.0, 0.0]))
    alg.observe(0.0, np.array([0.0, 0.0]))                  # mu* = min(1, 1 / 1) = 1: g_bar = 0
    assert alg.mix()
    np.testing.assert_allclose(alg.g_bar, [0.0, 0.0], atol=1e-15)
    alg = _Alg2(B, np.array([1.0, 0.0]))
    alg.observe(-0.5, np.array([0.5, 1.0]))                 # interior: eq. 73 with explicit B
    g_bar, g = np.array([1.0, 0.0]), np.array([0.5, 1.0])
    mu73 = (g_bar - g) @ g_bar / ((g_bar - g) @ (g_bar - g))
    assert 0 < mu73 < 1 and alg.mix()
    np.testing.assert_allclose(alg.g_bar, (1 - mu73) * g_bar + mu73 * g, rtol=1e-14)   # R11


def test_failure_path_at_the_optimum_is_taken_and_recorded():
    """|x| + |y| from its minimiser: Algorithm 2 returns failure, the B = I retry too; the
    run stops after one step with the failure counted in info and history. The aggregate
    subgradient is exactly 0 there (no linearization error): a proof of optimality, so the
    status is converged with gap 0."""
    # the user's subgradient at 0 is (1, 1) and no floor is stated, so only Algorithm 2 (which
    # fails to descend, and whose aggregate reaches 0) proves it
    f = nsopt.FunctionOracle(lambda w: float(np.abs(w).sum()),
                             lambda w: np.where(w >= 0, 1.0, -1.0), dim=2,
                             sup_subgradient=lambda w, p: (float(np.abs(p).sum()), np.sign(p)))
    res = nsopt.minimize(f, method="subbfgs", x0=np.zeros(2))
    assert res.status is nsopt.Status.CONVERGED and res.nit == 1
    assert res.lower_bound == res.fun == 0.0 and res.certificate.source == "zero-subgradient"
    assert res.info["n_failures"] == 1 and res.info["n_restarts"] == 0
    assert res.history["n_failures"].tolist() == [0, 1]
    np.testing.assert_array_equal(res.x, [0.0, 0.0])
    # L1 states its floor 0: the start is proven optimal before any step
    res = nsopt.minimize(R.L1().compose(np.eye(2)), method="subbfgs", x0=np.zeros(2))
    assert res.status is nsopt.Status.CONVERGED and res.nit == 0
    assert res.lower_bound == res.fun == 0.0 and res.certificate.source == "lower-bound"
    assert -1e-300 <= res.certificate.check(R.L1().compose(np.eye(2))) <= 0.0  # minus rounding


def test_plain_oracle_stops_on_gtol_and_finds_the_optimum():
    """A smooth FunctionOracle without a lower bound (gap = inf): the run stops on the
    solver's own test, ||g_bar|| <= gtol, at the known optimum, with status stationary (no
    bound is proven) and the eps-subgradient certificate in the result. On a fresh install
    (hypothesis 6.170, scipy 1.17.1) the Wolfe search at the minimiser, where c1 eta slope0 is
    below the rounding of f0, expanded to 1e20 and called the ray unbounded."""
    A = _spd(3, 5)
    c = np.arange(5.0)
    f = nsopt.FunctionOracle(lambda w: 0.5 * (w - c) @ A @ (w - c), lambda w: A @ (w - c), dim=5)
    res = nsopt.minimize(f, method="subbfgs", gtol=1e-9)
    assert res.status is nsopt.Status.STATIONARY and res.lower_bound == -math.inf
    assert not res.success and res.subgradient_norm <= 1e-9 and res.linearization_error >= 0
    # what the certificate proves: f(x) - f(c) <= eps + ||g|| ||x - c||
    assert res.fun - 0.0 <= res.linearization_error + res.subgradient_norm * np.linalg.norm(res.x - c) + 1e-15
    np.testing.assert_allclose(res.x, c, atol=1e-7)
    assert res.nit <= 12                                         # BFGS, line searches exact-ish


@pytest.mark.parametrize("method", ["subbfgs", "sublbfgs"])
def test_nonsmooth_plain_oracle_reaches_the_known_optimum(method):
    """A Max of affine pieces plus a quadratic, as a plain oracle (Wolfe line search)."""
    rng = np.random.default_rng(5)
    A, b = rng.standard_normal((12, 4)), rng.standard_normal(12)
    pieces = [nsopt.FunctionOracle(lambda w, a=a, c=c: float(a @ w + c), lambda w, a=a: a.copy(), dim=4)
              for a, c in zip(A, b)]
    f = nsopt.Max(pieces) + 0.5 * R.L2()
    import cvxpy as cp
    x = cp.Variable(4)
    f_star = cp.Problem(cp.Minimize(cp.max(A @ x + b) + 0.25 * cp.sum_squares(x))).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    res = nsopt.minimize(f, method=method, max_iter=200)
    assert res.fun == pytest.approx(f_star, rel=1e-7, abs=1e-9)


# ----------------------------------------------------------------------------------------
# Against cvxpy, and subLBFGS = subBFGS
# ----------------------------------------------------------------------------------------
CASES = [("hinge", R.L2(), 1e-2, 11), ("hinge", R.L2(), 1e-3, 12), ("logistic", R.L2(), 1e-3, 13),
         ("logistic", R.L1(), 1e-2, 14), ("logistic", R.L1(), 1e-3, 15)]


@pytest.mark.parametrize("method", ["subbfgs", "sublbfgs"])
@pytest.mark.parametrize("loss,reg,lam,seed", CASES, ids=[f"{c[0]}-{type(c[1]).__name__}-{c[2]}" for c in CASES])
def test_certificate_brackets_cvxpy_optimum(method, loss, reg, lam, seed):
    X, y = small_binary(150, 10, seed)
    cls = {"hinge": Hinge, "logistic": Logistic}[loss]
    J = nsopt.RegularizedRisk(cls(X, y), reg, lam)
    res = nsopt.minimize(J, method=method, rtol=1e-6, max_iter=2000)
    f_star = cvxpy_optimum(X, y, loss, reg, lam)
    tol = 1e-7 * max(1.0, abs(f_star))
    assert res.status is nsopt.Status.CONVERGED
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.gap <= 1e-6 * res.fun
    assert res.certificate.check(J) >= res.lower_bound - 1e-9
    if method == "sublbfgs" and isinstance(reg, R.L1):
        assert res.info["mode"] == "owlqn*"


@pytest.mark.parametrize("variant", ["owlqn", "owlqn*", "none"])
def test_owlqn_variants_on_l1_logistic(variant):
    X, y = small_binary(200, 12, 21)
    J = nsopt.RegularizedRisk(Logistic(X, y), R.L1(), 2e-2)
    res = nsopt.minimize(J, method="sublbfgs", owlqn_variant=variant, rtol=1e-6, max_iter=2000)
    f_star = cvxpy_optimum(X, y, "logistic", R.L1(), 2e-2)
    assert res.success and res.lower_bound - 1e-7 <= f_star <= res.fun + 1e-7
    assert res.info["mode"] == ("subbfgs" if variant == "none" else variant)
    if variant != "none":                 # the orthant projection gives exact zeros
        assert np.sum(res.x == 0) >= 1


def test_owlqn_star_recovers_from_random_subgradients():
    """R35: Algorithm 2 started from a *random* subgradient at zero coordinates (not the
    pseudo-gradient) still returns a descent direction at non-optimal points."""
    X, y = small_binary(100, 8, 22)
    J = nsopt.RegularizedRisk(Logistic(X, y), R.L1(), 5e-2)
    f = CountingOracle(J)
    rng = np.random.default_rng(0)
    store = LBFGSInverseHessian.new(8, "identity", 15)
    for _ in range(20):
        w = np.where(rng.random(8) < 0.5, 0.0, rng.standard_normal(8))
        g = J.loss.subgradient(w) + J.lam * np.where(w != 0, np.sign(w), rng.uniform(-1, 1, 8))
        d = descent_direction(f, w, g, store, epsilon=1e-5, k_max=1000)
        assert d.success and d.slope < 0


def test_null_steps_handle_kinks_within_rounding():
    """Exact steps land on hinges that the oracle then sees ~1e-16 away, on one side; the
    null steps (probing past kinks within kink_tol) let the run reach the tolerance. With
    kink_tol = 0 (only exactly-zero steps are null) subLBFGS stalls far from it."""
    X, y = small_binary(120, 8, 1)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 1e-2)
    res = nsopt.minimize(J, method="sublbfgs", rtol=1e-6, max_iter=2000)
    assert res.success and res.gap <= 1e-6 * res.fun and res.info["n_null_steps"] > 0
    stalled = nsopt.minimize(J, method="sublbfgs", rtol=1e-6, max_iter=2000, kink_tol=0.0)
    assert stalled.gap > 100 * res.gap


def test_sublbfgs_with_full_memory_reproduces_subbfgs():
    """R31: with H_0 = I and memory >= iterations the two stores give the same products, so
    the iterates agree (logistic + L2 is smooth: R16, no inner passes)."""
    X, y = small_binary(200, 10, 31)
    J = nsopt.RegularizedRisk(Logistic(X, y), R.L2(), 1e-3)
    a = list(SubBFGS(max_iter=15, rtol=1e-15).iterate(J))
    b = list(SubLBFGS(memory=20, max_iter=15, rtol=1e-15).iterate(J))
    assert len(a) == len(b) == 16
    for s, t in zip(a, b):
        np.testing.assert_allclose(s.w, t.w, rtol=1e-8, atol=1e-10)
    assert a[-1].n_inner == 0 and a[-1].fun < a[0].fun
    # with a short memory they differ
    c = list(SubLBFGS(memory=2, max_iter=15, rtol=1e-15).iterate(J))
    assert np.abs(c[-1].w - a[-1].w).max() > 1e-6


def test_stores_two_loop_equals_dense():
    rng = np.random.default_rng(4)
    dense, lbfgs = DenseInverseHessian.new(6), LBFGSInverseHessian.new(6, "identity", 10)
    for _ in range(5):
        s = rng.standard_normal(6)
        y = s + 0.3 * rng.standard_normal(6)
        dense, lbfgs = dense.update(s, y), lbfgs.update(s, y)
        np.testing.assert_allclose(dense.dot(y), s, rtol=1e-10)                     # secant
    np.testing.assert_allclose(dense.B, dense.B.T, rtol=1e-12)                      # R30
    assert np.linalg.eigvalsh(dense.B).min() > 0
    v = rng.standard_normal(6)
    np.testing.assert_allclose(lbfgs.dot(v), dense.dot(v), rtol=1e-10)


def test_curvature_shift_enforces_h():
    """Alg. 1 l. 14 (R29): the stored pair has s^T y / y^T y >= h; w is not changed."""
    solver = SubBFGS(inverse_hessian_floor=1.0)
    s, y = np.array([1e-3, 0.0]), np.array([1.0, 0.0])
    store, skipped, shifted = solver.curvature_update(DenseInverseHessian.new(2), s, y)
    assert (skipped, shifted) == (0, 1)
    np.testing.assert_allclose(store.dot(y), [1.0, 0.0])       # secant with s' = s + (h - s'y/y'y) y
    assert solver.curvature_update(DenseInverseHessian.new(2), -s, y)[1:] == (1, 0)   # s^T y <= 0: skipped


def test_options_are_checked():
    with pytest.raises(ValueError, match="line_search"):
        SubBFGS(line_search="backtracking")
    with pytest.raises(ValueError, match="c1 < c2"):
        SubBFGS(c1=0.5, c2=0.4)
    with pytest.raises(ValueError, match="memory"):
        SubLBFGS(memory=0)
    with pytest.raises(TypeError, match="unknown option"):
        SubBFGS(memory=5)                         # the dense store has no memory
    with pytest.raises(TypeError, match="unknown option"):
        SubBFGS(owlqn_variant="owlqn")
    with pytest.raises(NotImplementedError, match="exact"):
        nsopt.minimize(nsopt.FunctionOracle(lambda w: float(w @ w), lambda w: 2 * w, dim=2),
                       method="subbfgs", x0=np.ones(2), line_search="exact", max_iter=3)


def test_wolfe_and_exact_line_searches_agree_on_the_optimum():
    X, y = small_binary(120, 6, 41)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 1e-2)
    a = nsopt.minimize(J, method="subbfgs", rtol=1e-6, max_iter=1000)
    b = nsopt.minimize(J, method="subbfgs", rtol=1e-6, max_iter=1000, line_search="wolfe")
    assert a.success and b.success
    assert a.fun == pytest.approx(b.fun, rel=2e-6)


# ----------------------------------------------------------------------------------------
# Appendix E counterexamples (notes 002, Sec. 3.6, R34), exact line searches
# ----------------------------------------------------------------------------------------
TIE = 1e-12


class Polyhedral(nsopt.Oracle):
    """max_k A_k w + b_k with an exact argsup (ties within 1e-12) and an exact line."""

    def __init__(self, A, b):
        self.A, self.b = np.asarray(A, dtype=float), np.asarray(b, dtype=float)
        self.dim = self.A.shape[1]

    def _value_and_subgradient(self, w):
        v = self.A @ w + self.b
        k = int(np.argmax(v))
        return float(v[k]), self.A[k].copy()

    def _sup_subgradient(self, w, p):
        v = self.A @ w + self.b
        act = np.flatnonzero(v >= v.max() - TIE * max(1.0, abs(v.max())))
        k = act[int(np.argmax(self.A[act] @ p))]
        return float(self.A[k] @ p), self.A[k].copy()

    def _restrict(self, w, p):
        return PolyhedralLine(self.A @ w + self.b, self.A @ p)


class PolyhedralLine(LineFunction):
    def __init__(self, c, s):
        self.c, self.s = c, s

    def value(self, eta):
        return float(np.max(self.c + eta * self.s))

    def derivative(self, eta, side=1):
        v = self.c + eta * self.s
        act = v >= v.max() - TIE * max(1.0, abs(v.max()))
        return float(self.s[act].max() if side == 1 else self.s[act].min())

    def breakpoints(self):
        i, j = np.triu_indices(len(self.c), 1)
        ok = self.s[i] != self.s[j]
        return np.sort((self.c[j][ok] - self.c[i][ok]) / (self.s[i][ok] - self.s[j][ok]))


class Wolfe1975(nsopt.Oracle):
    """Eq. 112: 5 sqrt(9x^2 + 16y^2) if x >= |y| else 9x + 16|y| (C^1 across x = |y|;
    kinked along y = 0, x <= 0; unbounded below as x -> -inf)."""

    dim = 2

    @staticmethod
    def _grad(w):
        x, y = w
        if x >= abs(y):
            r = math.hypot(3 * x, 4 * y)
            return np.array([45 * x / r, 80 * y / r])
        return np.array([9.0, 16.0 * np.sign(y)])

    def _value_and_subgradient(self, w):
        x, y = w
        f = 5 * math.hypot(3 * x, 4 * y) if x >= abs(y) else 9 * x + 16 * abs(y)
        return f, self._grad(w) if np.abs(w).max() > TIE else np.array([9.0, 0.0])

    def _sup_subgradient(self, w, p):
        x, y = w
        if abs(y) <= TIE * max(1.0, abs(x)) and x < 0:     # the kink y = 0, x < 0
            g = np.array([9.0, 16.0 * np.sign(p[1])])
        else:
            g = self._grad(w)
        return float(g @ p), g

    def _restrict(self, w, p):
        return _WolfeLine(self, w, p)


class _WolfeLine(GenericLine):
    def breakpoints(self):
        return np.array([-self.w[1] / self.p[1]]) if self.p[1] != 0 else np.empty(0)


def test_appendix_e_112_wolfe_function():
    """From (2, 1): after one smooth step, the second direction points into x < 0, crossing
    the kink line y = 0 at x < 0, along which Phi is unbounded below (slope 9 p_x + 16|p_y| < 0
    past the kink): the run stops at step 2 reporting J -> -inf. (The paper's step 2 lands on
    the hinge; in exact arithmetic nothing bounds Phi along this p.) Steepest descent with an
    exact line search instead zig-zags to the non-optimal (0, 0)."""
    states = list(SubBFGS(max_iter=5).iterate(Wolfe1975(), x0=np.array([2.0, 1.0])))
    assert len(states) == 3 and states[-1].unbounded and not states[1].unbounded
    w, s = states[1].w, states[2]
    p = -s.store.B @ s.g_bar
    eta_kink = -w[1] / p[1]
    assert eta_kink > 0 and w[0] + eta_kink * p[0] < 0 and 9 * p[0] + 16 * abs(p[1]) < 0


def test_appendix_e_113_reaches_the_minimum_at_step_2():
    """Eq. 113 max{-100, +-2x + 3y, +-5x + 2y}: subBFGS crosses to y < 0 at step 2 and
    attains the minimum value -100 there (subgradient descent oscillates to (0, 0))."""
    f = Polyhedral([[0, 0], [2, 3], [-2, 3], [5, 2], [-5, 2]], [-100, 0, 0, 0, 0])
    states = list(SubBFGS(max_iter=2).iterate(f, x0=np.array([9.0, 12.0])))
    assert states[1].w[1] > 0 and states[1].fun > -100
    assert states[2].w[1] < 0 and states[2].fun == pytest.approx(-100.0, abs=1e-9)


@pytest.mark.parametrize("x0", [(1.0, 1.0), (3.0, 1.0), (1.0, -1.0)])
def test_appendix_e_114_unbounded_within_three_iterations(x0):
    """Eq. 114 max{2|x| + y, 3y}: f -> -inf; subBFGS finds the unbounded ray within three
    iterations and the line search reports it instead of looping."""
    f = Polyhedral([[2, 1], [-2, 1], [0, 3]], [0, 0, 0])
    res = nsopt.minimize(f, method="subbfgs", x0=np.array(x0), max_iter=50)
    assert res.info["unbounded"] and res.nit <= 3


@pytest.mark.parametrize("lam", [1e-2, 1e-3])
def test_owlqn_follows_the_facts_squared_hinge_l1(lam):
    """OWL-QN is chosen by what the problem is (a differentiable loss, Omega = ||w||_1), not by
    its class: squared hinge + L1 took the generic path on main."""
    X, y = small_binary(150, 10, 21)
    J = nsopt.RegularizedRisk(SquaredHinge(X, y), R.L1(), lam)
    res = nsopt.minimize(J, method="sublbfgs", rtol=1e-6, max_iter=2000)
    f_star = cvxpy_optimum(X, y, "squaredhinge", R.L1(), lam)
    assert res.info["mode"] == "owlqn*" and res.success
    assert res.lower_bound - 1e-7 <= f_star <= res.fun + 1e-7


def test_owlqn_is_a_variant_plugged_into_the_loop():
    """Issue 15, move 3: the quasi-Newton loop takes its iteration as a component (as scipy's
    trust-region loop takes its subproblem): SubLBFGS names OWL-QN's for L1 with a
    differentiable loss, Algorithm 2's otherwise; the state carries it, no mode string."""
    from nsopt.solvers._quasi_newton import QuasiNewton
    from nsopt.solvers.owlqn import OrthantWiseStep
    from nsopt.solvers.subbfgs import SubgradientStep

    X, y = small_binary(60, 5, 3)
    l1 = nsopt.RegularizedRisk(Logistic(X, y), R.L1(), 1e-2)
    l2 = nsopt.RegularizedRisk(Logistic(X, y), R.L2(), 1e-2)
    assert issubclass(SubBFGS, QuasiNewton) and "mode" not in SubBFGS.State._fields
    for solver, problem, kind, name in [
            (SubLBFGS(max_iter=2), l1, OrthantWiseStep, "owlqn*"),
            (SubLBFGS(max_iter=2, owlqn_variant="owlqn"), l1, OrthantWiseStep, "owlqn"),
            (SubLBFGS(max_iter=2, owlqn_variant="none"), l1, SubgradientStep, "subbfgs"),
            (SubLBFGS(max_iter=2), l2, SubgradientStep, "subbfgs"),
            (SubBFGS(max_iter=2), l1, SubgradientStep, "subbfgs")]:
        states = list(solver.iterate(problem))
        assert all(isinstance(s.variant, kind) and s.variant.name == name for s in states)
    assert isinstance(list(SubLBFGS(max_iter=1, memory=2).iterate(l1))[-1].store, LBFGSInverseHessian)
    assert isinstance(list(SubBFGS(max_iter=1).iterate(l1))[-1].store, DenseInverseHessian)

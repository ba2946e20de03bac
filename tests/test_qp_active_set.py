"""The active-set phase of the simplex QP (``QPSimplex(active_set=True)``, the trust-region
bundle's master): against a brute-force solve over every face, against the SMO path, warm
against cold, its Cholesky downdate, and the trust-region bundle's bracket of Clarabel's optimum."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nsopt
from nsopt.inner import QPSimplex
from nsopt.inner.qp_simplex import _active_set, _chol_delete
from nsopt.regularizers import L2
from nsopt.solvers.proximal_bundle import _DensePlanes


def _instance(draw_seed, n, d, duplicates):
    rng = np.random.default_rng(draw_seed)
    A = rng.standard_normal((n, d))
    if duplicates and n > 2:
        A[1] = A[0]                       # a repeated slope (a singular face)
        A[-1] = 0.5 * (A[0] + A[-2])      # a slope inside a segment of two others
    b = rng.standard_normal(n) * 10.0 ** rng.uniform(-1, 1)
    lam = float(10.0 ** rng.uniform(-2, 1))
    return A, b, lam


def _dual(A, b, lam, alpha):
    a = A.T @ alpha
    return float(b @ alpha - a @ a / (2.0 * lam))


def _brute_force(A, b, lam):
    r"""max over the simplex of D by the KKT system of every face whose lifted slopes
    :math:`(a_i, 1)` are independent (an optimum lies on such a face)."""
    n = b.size
    G = A @ A.T / lam
    best = -np.inf
    for k in range(1, min(n, A.shape[1] + 1) + 1):
        for S in itertools.combinations(range(n), k):
            S = list(S)
            lifted = np.column_stack([A[S], np.ones(k)])
            if np.linalg.matrix_rank(lifted, tol=1e-9) < k:
                continue
            K = np.zeros((k + 1, k + 1))
            K[:k, :k] = G[np.ix_(S, S)]
            K[:k, k] = K[k, :k] = 1.0
            sol = np.linalg.solve(K, np.append(b[S], 1.0))
            if sol[:k].min() < -1e-10:
                continue
            alpha = np.zeros(n)
            alpha[S] = np.maximum(sol[:k], 0.0)
            best = max(best, _dual(A, b, lam, alpha / alpha.sum()))
    return best


@settings(deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 6), d=st.integers(1, 3),
       duplicates=st.booleans(), warm=st.booleans())
def test_active_set_reaches_the_brute_force_optimum(seed, n, d, duplicates, warm):
    A, b, lam = _instance(seed, n, d, duplicates)
    alpha = (np.random.default_rng(seed + 1).random(n) + 1e-3) if warm else np.eye(n)[0]
    alpha = alpha / alpha.sum()
    it, viol, status = _active_set(A @ A.T, b, lam, alpha, 1e-12, 1000, min(n, d + 1))
    assert status == 0
    assert alpha.min() >= 0.0 and abs(alpha.sum() - 1.0) < 1e-12
    ref = _brute_force(A, b, lam)
    assert abs(_dual(A, b, lam, alpha) - ref) <= 1e-9 * (1.0 + abs(ref))


def test_active_set_matches_smo_warm_and_cold_on_degenerate_bundles():
    """n > d + 1 planes (singular Gram matrices): the same dual value and primal point as the
    SMO path, and a warm start (from noisy multipliers) gives the cold start's solution."""
    rng = np.random.default_rng(3)
    for trial in range(40):
        n, d = int(rng.integers(5, 40)), int(rng.integers(2, 8))
        A, b, lam = _instance(trial, n, d, duplicates=trial % 2 == 0)
        planes = _DensePlanes(A, b, A @ A.T)
        ref = QPSimplex().solve(planes, L2(), lam)
        cold = QPSimplex(active_set=True).solve(planes, L2(), lam)
        warm = QPSimplex(active_set=True).solve(planes, L2(), lam,
                                                warm=ref.alpha + 0.1 * rng.random(n))
        for sol in (cold, warm):
            assert abs(sol.dual_value - ref.dual_value) <= 1e-10 * (1.0 + abs(ref.dual_value))
            assert np.allclose(sol.w, ref.w, rtol=1e-7, atol=1e-8 * (1 + np.abs(ref.w).max()))
            assert sol.gap <= 1e-9 * (1.0 + abs(ref.dual_value))
            assert sol.alpha.min() >= 0.0 and abs(sol.alpha.sum() - 1.0) < 1e-12


def test_active_set_option_is_checked():
    with pytest.raises(TypeError, match="active_set"):
        QPSimplex(active_set="yes")


@settings(deadline=None)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(1, 8), data=st.data())
def test_cholesky_delete_is_the_factor_of_the_reduced_matrix(seed, k, data):
    r = data.draw(st.integers(0, k - 1))
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((k, k + 2))
    M = Z @ Z.T
    L = np.zeros((k + 1, k + 1))        # a larger buffer, as the kernel keeps
    L[:k, :k] = np.linalg.cholesky(M)
    _chol_delete(L, k, r)
    keep = [i for i in range(k) if i != r]
    Lr = L[: k - 1, : k - 1]
    assert np.allclose(np.triu(Lr, 1), 0.0)
    assert np.allclose(Lr @ Lr.T, M[np.ix_(keep, keep)], atol=1e-10 * (1 + np.abs(M).max()))
    assert np.all(L[k - 1] == 0.0)


def test_trust_region_brackets_clarabel_on_a_box():
    """The trust-region bundle (the active-set master) on an L1 fit over a box: ``lower_bound
    <= f* <= fun`` with Clarabel's f*, a proven gap within rtol, and a certificate that checks."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(0)
    A = rng.standard_normal((60, 6))
    b = A @ rng.standard_normal(6) + 0.1 * rng.standard_normal(60)
    f = nsopt.FunctionOracle(value_and_subgradient=lambda x: (float(np.abs(A @ x - b).sum()),
                                                              A.T @ np.sign(A @ x - b)), dim=6)
    x = cp.Variable(6)
    prob = cp.Problem(cp.Minimize(cp.norm1(A @ x - b)), [x >= -5, x <= 5])
    prob.solve(solver=cp.CLARABEL)
    f_star = float(prob.value)
    res = nsopt.minimize(f, method="proximal-bundle", bounds=(-5.0, 5.0), rtol=1e-8)
    assert res.status == nsopt.Status.CONVERGED
    slack = 1e-7 * (1.0 + abs(f_star))     # Clarabel's own accuracy
    assert res.lower_bound <= f_star + slack and f_star <= res.fun + slack
    assert res.gap <= 1e-8 * abs(res.fun)
    res.certificate.check(f, bounds=(-5.0, 5.0))

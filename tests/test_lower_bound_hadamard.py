"""The lower-bound instance of [SZV09] Sec. 3, corrected (001 notes Sec. 2.3-2.4, requirements LB-1..5).

J(w) = max_i <a_i, w> + c + lam/2 ||w||^2 with A = H_d / sqrt(d) (orthonormal columns) and
c = 1/(2 lam d), so J* = 0 at w* = -A e / (lam d). With a vertex oracle (one column per call)
every cutting-plane method picks a new orthogonal column each iteration, and BMRM's gap is
exactly eps_t = 1/(2 lam t) for t < d: the O(1/eps) bound is tight. The instance as printed
in the seed is broken (its columns come in +- pairs): a regression test documents the erratum.
A dual method started at the prox-centre e/d is optimal at once.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import hadamard

import nsopt
from nsopt.inner import project_simplex
from nsopt.oracle import LineFunction, Oracle
from nsopt.solvers import BMRM, ExcessiveGap
from nsopt.saddle import SaddleForm

LSBMRM = getattr(nsopt.solvers, "LSBMRM", None)


class MaxLine(LineFunction):
    """phi(eta) = max_i (s_i + eta q_i) + shift, with exact one-sided derivatives and kinks."""

    def __init__(self, s, q, shift):
        self.s, self.q, self.shift = s, q, shift

    def value(self, eta):
        return float(np.max(self.s + eta * self.q) + self.shift)

    def derivative(self, eta, side=1):
        v = self.s + eta * self.q
        top = v.max()
        active = v >= top - 1e-12 * max(1.0, abs(top))
        return float(self.q[active].max() if side == 1 else self.q[active].min())

    def breakpoints(self):
        s, q = self.s, self.q
        dq = q[:, None] - q[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            eta = (s[None, :] - s[:, None]) / dq
        return np.sort(eta[np.isfinite(eta)])


class HadamardMax(Oracle):
    """R(w) = max_i <a_i, w> + shift with a VERTEX subgradient oracle (one column), the exact
    sup-subgradient and line restriction, and the saddle form over the simplex."""

    def __init__(self, A, shift=0.0):
        self.A, self.shift, self.dim = A, float(shift), A.shape[0]
        self.columns_used = []

    def _value(self, w):
        return float((self.A.T @ w).max() + self.shift)

    def _value_and_subgradient(self, w):
        s = self.A.T @ w
        i = int(np.argmax(s))
        self.columns_used.append(i)
        return float(s[i] + self.shift), self.A[:, i].copy()

    def _sup_subgradient(self, w, p):
        s = self.A.T @ w
        active = np.flatnonzero(s >= s.max() - 1e-12 * max(1.0, abs(s.max())))
        i = active[np.argmax(self.A[:, active].T @ p)]
        return float(self.A[:, i] @ p), self.A[:, i].copy()

    def _restrict(self, w, p):
        return MaxLine(self.A.T @ w, self.A.T @ p, self.shift)

    def saddle_form(self):
        # R(w) = max_{alpha in simplex} <alpha, shift - (-A^T) w>
        A, d = self.A, self.A.shape[1]
        return SaddleForm(matvec=lambda w: -(A.T @ w), rmatvec=lambda a: -(A @ a),
                          offset=np.full(d, self.shift), project=project_simplex,
                          center=np.full(d, 1.0 / d), radius_sq=0.5 * (1 - 1 / d))


def corrected(d, lam, shifted=True):
    A = hadamard(d) / math.sqrt(d)
    return nsopt.RegularizedRisk(HadamardMax(A, 1 / (2 * lam * d) if shifted else 0.0), lam=lam)


def printed(d):
    """[SZV09] Sec. 3 as printed: (1/sqrt d) [[H, -H], [-H, H]] with H = H_{d/2}."""
    H = hadamard(d // 2)
    return np.block([[H, -H], [-H, H]]) / math.sqrt(d)


def eps(res):
    """eps_t, t = 1, 2, ...: BMRM-family runs add their first plane in init, so history row j
    holds the gap after t = j + 1 planes."""
    return np.asarray(res.history["gap"])


# --------------------------------------------------------------------------------------------
def test_LB1_hadamard_orthonormal():
    for d in (2, 16, 64, 256):
        H = hadamard(d)
        np.testing.assert_array_equal(H @ H.T, d * np.eye(d))
        A = H / math.sqrt(d)
        assert np.abs(A.T @ A - np.eye(d)).max() <= 1e-12


def test_LB2_erratum_printed_instance_is_solved_in_two_steps():
    """[ERRATUM] the printed A has column j + d/2 = -column j (rank d/2), so the second cut is
    forced to be the partner column and BMRM reaches eps_2 = 0 (001 notes Sec. 2.3)."""
    d, lam = 16, 0.01
    A = printed(d)
    for j in range(d // 2):
        np.testing.assert_array_equal(A[:, j + d // 2], -A[:, j])
    assert np.linalg.matrix_rank(A) == d // 2
    J = nsopt.RegularizedRisk(HadamardMax(A), lam=lam)
    states = list(BMRM(inner_rtol=0.0, rtol=0.0, atol=1e-12, max_iter=3).iterate(J))
    w1 = states[0].w                                       # master minimiser after one plane
    assert J.value(np.zeros(d)) == 0.0                     # J(w_0) = 0 = J*
    assert -states[0].lower_bound == pytest.approx(1 / (2 * lam))   # eps_1 = 1/(2 lam)
    assert J.value(w1) == pytest.approx(3 / (2 * lam))     # not 1/(2 lam) as Thm 7 claims
    assert abs(states[1].lower_bound) <= 1e-9              # eps_2 = 0
    assert J.loss.columns_used[1] - J.loss.columns_used[0] in (d // 2, -d // 2)


@pytest.mark.parametrize("d,lam", [(16, 0.01), (64, 1e-3), (64, 1e-2), (64, 1.0), (128, 0.1)])
def test_LB3_bmrm_gap_is_exactly_one_over_2_lam_t(d, lam):
    J = corrected(d, lam)
    res = BMRM(inner_rtol=0.0, rtol=0.0, atol=1e-300, max_iter=d - 2).solve(J)
    e = eps(res)
    t = np.arange(1, d)
    assert e.size == d - 1
    np.testing.assert_allclose(e * 2 * lam * t, 1.0, rtol=0, atol=1e-6)
    # every cut is a new column, so J_t(w_t) = c - 1/(2 lam t) and the best value stays J(w_0) = c
    used = J.loss.columns_used
    assert len(set(used)) == len(used) == d - 1
    np.testing.assert_allclose(res.history["fun"], 1 / (2 * lam * d), rtol=1e-12)


@pytest.mark.skipif(LSBMRM is None, reason="nsopt.solvers.LSBMRM not written yet")
@pytest.mark.parametrize("d,lam", [(16, 0.01), (64, 1e-2), (64, 1.0)])
def test_LB3_ls_bmrm_gap_is_exactly_one_over_2_lam_t(d, lam):
    J = corrected(d, lam)
    res = LSBMRM(inner_rtol=0.0, rtol=0.0, atol=1e-300, max_iter=d - 2).solve(J)
    e = eps(res)
    t = np.arange(1, d)
    np.testing.assert_allclose(e * 2 * lam * t, 1.0, rtol=0, atol=1e-6)


@pytest.mark.parametrize("method", ["bmrm"] + (["ls-bmrm"] if LSBMRM is not None else []))
def test_LB3_iterations_to_eps_and_LB5_upper_bound(method):
    """The first t with eps_t <= eps is ceil(1/(2 lam eps)) (strictly below: floor + 1), and
    never more than Theorem 5's bound log2(lam J(0)/(G^2 H*)) + 8 G^2 H*/(lam eps) - 4 (G = H* = 1)."""
    d, lam, tol = 64, 1.0, 0.0123
    J = corrected(d, lam)
    solver = nsopt.solvers.SOLVERS[method](inner_rtol=0.0, rtol=0.0, atol=tol, max_iter=d)
    res = solver.solve(J)
    t_stop = res.nit + 1                                   # planes in the model
    assert res.success
    assert t_stop == math.ceil(1 / (2 * lam * tol)) == 41
    bound = math.log2(lam * (1 / (2 * lam * d))) + 8 / (lam * tol) - 4
    assert t_stop <= bound


def test_LB4_primal_gap_excluding_w0():
    d, lam = 32, 0.1
    J = corrected(d, lam)
    states = list(BMRM(inner_rtol=0.0, rtol=0.0, atol=1e-300, max_iter=d - 2).iterate(J))
    for t, s in enumerate(states[: d - 1], start=1):
        # the master minimiser w_t: J(w_t) = c + 1/(2 lam t) = J* + 1/(2 lam t) + 1/(2 lam d)
        assert J.value(s.w) - 0.0 == pytest.approx(1 / (2 * lam * t) + 1 / (2 * lam * d), rel=1e-9)
        assert s.lower_bound == pytest.approx(1 / (2 * lam * d) - 1 / (2 * lam * t), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("adaptive", [True, False])
@pytest.mark.parametrize("d,lam", [(64, 1e-2), (256, 1e-3)])
def test_excessive_gap_solves_the_instance_at_once(d, lam, adaptive):
    """From the prox-centre e/d the dual method sits at the optimum: w(e/d) = w*, and the
    gradient of D there is constant, so the projected step does not move."""
    J = corrected(d, lam)
    res = ExcessiveGap(adaptive_lipschitz=adaptive, rtol=0.0, atol=1e-10, max_iter=5).solve(J)
    assert res.success and res.nit <= 1
    assert abs(res.fun) <= 1e-10 and abs(res.lower_bound) <= 1e-10
    w_star = -hadamard(d) @ np.ones(d) / (math.sqrt(d) * lam * d)
    np.testing.assert_allclose(res.x, w_star, atol=1e-10)
    # BMRM needs d - 1 iterations to get below 1/(2 lam (d - 1)) on the same instance
    assert res.certificate.check(J) >= res.lower_bound - 1e-12

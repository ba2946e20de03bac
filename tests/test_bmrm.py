"""BMRM ([TVSL10] Alg. 2): certificates against cvxpy for every regularizer, and the paper's
invariants (requirements C1, C2, C4, C5, C8, C10 of the 000 notes)."""
import math

import numpy as np
import pytest

import nsopt
from nsopt import regularizers as R
from nsopt.losses import Hinge, Logistic
from nsopt.solvers import BMRM

from cvxref import cvxpy_optimum, small_binary


def _regs(d, rng):
    B = rng.standard_normal((d, d))
    Q = B @ B.T + 0.5 * np.eye(d)
    prior = rng.random(d) + 0.1
    prior /= prior.sum()
    return {
        "l2": R.L2(),
        "l1": R.L1(),
        "lp1.5": R.Lp(1.5),
        "lp3": R.Lp(3.0),
        "quadratic-form": R.QuadraticForm(Q),
        "negentropy": R.NegEntropy(),
        "negentropy-normalized": R.NegEntropy(normalized=True),
        "kl": R.KL(prior),
        "elastic-net": R.ElasticNet(0.5),
    }


REG_NAMES = ["l2", "l1", "lp1.5", "lp3", "quadratic-form", "negentropy",
             "negentropy-normalized", "kl", "elastic-net"]


@pytest.mark.parametrize("loss_cls", [Hinge, Logistic], ids=["hinge", "logistic"])
@pytest.mark.parametrize("reg_name", REG_NAMES)
def test_certificate_brackets_cvxpy_optimum(loss_cls, reg_name):
    rng = np.random.default_rng(3)
    X, y = small_binary(m=80, d=6, seed=3)
    reg = _regs(6, rng)[reg_name]
    lam = 0.05
    J = nsopt.RegularizedRisk(loss_cls(X, y), reg, lam)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-5, max_iter=3000)
    f_star = cvxpy_optimum(X, y, loss_cls.__name__.lower(), reg, lam)
    tol = 1e-6 * max(1.0, abs(f_star))
    assert res.status is nsopt.Status.CONVERGED, res
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.gap <= 1e-5 * abs(res.fun) + 1e-12
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)  # fun is J at the returned x
    # the certificate's evidence proves the reported bound, recomputed independently
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))


def test_bounds_monotone_and_planes_tight():
    """C1, C2 (Lemma 9): with exact master solves and no plane removal the master dual
    value is nondecreasing, every plane is tight at its point, and gamma_t >= eps_t."""
    X, y = small_binary(m=120, d=10, seed=1)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 1e-2)
    solver = BMRM(inner_rtol=0.0, remove_inactive=None, rtol=1e-6)
    prev = None
    best = math.inf
    n = 0
    for state in solver.iterate(J):
        fun = J.value(state.w)
        best = min(best, fun)
        if prev is not None:
            assert state.lower_bound >= prev.lower_bound - 1e-12
            # the plane added at the previous master point is tight there (C1)
            i = state.bundle.n - 1
            a, b = state.bundle.A[i], state.bundle.b[i]
            assert a @ prev.w + b == pytest.approx(J.loss.value(prev.w), rel=1e-12, abs=1e-14)
        assert fun - state.lower_bound >= best - state.lower_bound - 1e-15  # gamma_t >= eps_t
        assert state.lower_bound <= best + 1e-12
        prev = state
        n += 1
    assert n > 5


@pytest.mark.parametrize("lam", [1e-2, 1e-3])
def test_theorem4_recurrence(lam):
    """C4: eps_t - eps_{t+1} >= (eps_t / 2) min(1, lam eps_t / (4 G^2 H*)) with exact solves;
    hinge + L2 with unit-norm rows gives G = 1, H* = 1."""
    X, y = small_binary(m=300, d=20, seed=7, unit_rows=True)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), lam)
    eps = []
    for state in BMRM(inner_rtol=0.0, remove_inactive=None, rtol=1e-7).iterate(J):
        # eps_t = min_{i<=t} J(w_i) - J_t(w_t), with w_t the state's master point
        eps.append(min(state.fun_best, J.value(state.w)) - state.lower_bound)
    eps = np.array(eps)
    assert len(eps) >= 5
    for e0, e1 in zip(eps[:-1], eps[1:]):
        assert e0 - e1 >= 0.5 * e0 * min(1.0, lam * e0 / 4.0) - 1e-9


@pytest.mark.parametrize("lam", [1e-1, 1e-2])
def test_theorem5_iteration_bound(lam):
    """C5: iterations to eps <= max(0, log2(lam)) + 8 / (lam eps) (hinge, unit rows)."""
    X, y = small_binary(m=300, d=20, seed=8, unit_rows=True)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), lam)
    eps = 1e-3
    res = nsopt.minimize(J, atol=eps, rtol=0.0, inner_rtol=0.0)
    assert res.success
    assert res.nit <= max(0.0, math.log2(lam)) + 8.0 / (lam * eps)


def test_compress_keeps_dual_value():
    """C8: dropping zero multipliers and aggregating by multipliers keeps D(alpha)."""
    X, y = small_binary(m=200, d=15, seed=2)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 1e-3)
    states = list(BMRM(inner_rtol=0.0, remove_inactive=None, rtol=1e-8, max_iter=40).iterate(J))
    s = states[-1]
    bundle, alpha = s.bundle, s.alpha
    before = bundle.lower_bound(J.reg, J.lam, alpha)
    n_before = bundle.n
    new_alpha = bundle.compress(alpha, max_planes=bundle.n)
    assert bundle.n < n_before
    assert new_alpha.sum() == pytest.approx(1.0)
    assert bundle.lower_bound(J.reg, J.lam, new_alpha) == pytest.approx(before, rel=1e-10, abs=1e-13)


def test_max_planes_bounds_memory_and_still_converges():
    X, y = small_binary(m=400, d=30, seed=4)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 1e-3)
    res = nsopt.minimize(J, max_planes=8, remove_inactive=None, rtol=1e-3, max_iter=5000)
    assert res.success
    assert res.history["n_planes"].max() <= 8
    ref = nsopt.minimize(J, rtol=1e-8)
    assert res.lower_bound <= ref.fun + 1e-12 and ref.lower_bound <= res.fun + 1e-12


def test_plane_removal_does_not_change_optimum():
    """C9: removing planes idle for 10 iterations changes the result only within the gap."""
    X, y = small_binary(m=300, d=25, seed=5)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 1e-3)
    a = nsopt.minimize(J, rtol=1e-6, remove_inactive=None)
    b = nsopt.minimize(J, rtol=1e-6, remove_inactive=10)
    assert abs(a.fun - b.fun) <= a.gap + b.gap
    assert b.history["n_planes"].max() <= a.history["n_planes"].max()


def test_osqp_backend_agrees():
    X, y = small_binary(m=150, d=12, seed=6)
    J = nsopt.RegularizedRisk(Logistic(X, y), R.L2(), 1e-2)
    a = nsopt.minimize(J, rtol=1e-6)
    b = nsopt.minimize(J, rtol=1e-6, inner="osqp")
    assert b.lower_bound <= a.fun + 1e-12 and a.lower_bound <= b.fun + 1e-12


def test_l1_gives_sparse_solution():
    X, y = small_binary(m=200, d=30, seed=9)
    res = nsopt.minimize(nsopt.RegularizedRisk(Hinge(X, y), R.L1(), 0.05), rtol=1e-6)
    assert res.success
    assert np.sum(np.abs(res.x) > 1e-8) < 30


def test_wrong_inner_for_regularizer_is_an_error():
    X, y = small_binary(m=50, d=5, seed=0)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L1(), 0.1)
    with pytest.raises(ValueError, match="qp"):
        nsopt.minimize(J, inner="qp")


def test_unbounded_master_without_loss_floor_is_explained():
    """With L1 and a loss that declares no lower bound, the first master LP is unbounded:
    the solver must say so instead of returning garbage (DESIGN.md sec. 6)."""
    X, y = small_binary(m=50, d=5, seed=0)
    loss = Hinge(X, y)
    loss.lower_bound = -math.inf
    J = nsopt.RegularizedRisk(loss, R.L1(), 1e-3)
    with pytest.raises(ValueError, match="lower bound|unbounded"):
        nsopt.minimize(J)

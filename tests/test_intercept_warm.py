"""The warm-started master problem with one intercept (:class:`nsopt.inner.InterceptQP`,
``method="path"``) and warm starts from cutting planes with an intercept.

The path master must give the same master value as the interior-point box QP (``"ipm"``) from
any start, multipliers exactly on the product of simplices with exact zeros for inactive
planes, and a certified run when warm-started from planes without evidence (the cause of the
stall of the interior-point master: it keeps every multiplier positive, so an evidence-free
warm plane never left the support and no bound was ever proven)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.bundle import PlaneBundle
from nsopt.inner import select
from nsopt.inner.intercept import InterceptQP
from nsopt.problem import InterceptRegularizer


class _Box:
    def __init__(self, B):
        self.B = B

    def intercept_bound(self):
        return self.B


def random_master(seed, n, d, n_blocks, B, push):
    """A bundle of ``n`` random planes on ``(w, b)`` (``push`` shifts the intercept slopes one
    way: large values make the box active), a floor per model."""
    rng = np.random.default_rng(seed)
    reg = InterceptRegularizer(R.L2(), d, 1, _Box(B))
    bundle = PlaneBundle(d + 1, metric=reg.gram_metric, n_blocks=n_blocks)
    A = rng.standard_normal((n, d + 1))
    A[:, d] += push
    c = rng.standard_normal(n)
    for p in range(n_blocks):
        bundle.add_floor(-3.0, block=p)
    for i in range(n):
        bundle.add(A[i], c[i], block=i % n_blocks)
    return reg, bundle


def box_dual(bundle, reg, lam, alpha):
    """``c^T alpha - ||A_w^T alpha||^2 / (2 lam) - B |A_b^T alpha|`` from the planes."""
    A = np.asarray(bundle.A)
    a = alpha @ A
    d = reg.n_coef
    return float(alpha @ bundle.b) - 0.5 * float(a[:d] @ a[:d]) / lam - reg.box * abs(a[d])


def check_feasible(sol, bundle):
    n_blocks = bundle.n_blocks
    assert np.all(sol.alpha >= 0)
    sums = np.bincount(np.asarray(bundle.block), weights=sol.alpha, minlength=n_blocks)
    np.testing.assert_allclose(sums, 1.0, rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 25), d=st.integers(1, 6),
       n_blocks=st.sampled_from([1, 2]), B=st.sampled_from([0.5, 3.0, 50.0]),
       lam=st.sampled_from([1e-3, 0.1, 3.0]), push=st.sampled_from([0.0, 1.0, 4.0]),
       warm=st.booleans())
def test_path_master_matches_the_interior_point(seed, n, d, n_blocks, B, lam, push, warm):
    reg, bundle = random_master(seed, n, d, n_blocks, B, push)
    start = np.random.default_rng(seed + 1).random(bundle.n) if warm else None
    path = InterceptQP(method="path").solve(bundle, reg, lam, warm=start)
    ipm = InterceptQP(method="ipm").solve(bundle, reg, lam, warm=start)
    check_feasible(path, bundle)
    scale = 1.0 + abs(ipm.dual_value)
    assert path.dual_value >= ipm.dual_value - 1e-7 * scale
    # the dual value is the exact box dual at the multipliers, and below the primal model
    assert path.dual_value == pytest.approx(box_dual(bundle, reg, lam, path.alpha), abs=1e-9 * scale)
    x = path.w
    model = sum(np.max((np.asarray(bundle.A) @ x + bundle.b)[np.asarray(bundle.block) == p])
                for p in range(n_blocks))
    primal = model + lam * 0.5 * float(x[:d] @ x[:d])
    assert abs(x[d]) <= B
    assert path.dual_value <= primal + 1e-9 * scale
    assert path.gap <= max(1e-7 * scale, 2.0 * ipm.gap)  # the fallback is the box QP itself


def test_inactive_planes_get_exact_zero_multipliers():
    """Planes far below the model have multiplier exactly 0 (the interior point leaves them a
    small positive one), so they age and are dropped."""
    reg, bundle = random_master(3, 12, 4, 1, 10.0, 0.5)
    for i in range(5):  # low copies of planes: never active
        bundle.add(np.asarray(bundle.A)[1 + i], float(bundle.b[1 + i]) - 5.0)
    sol = InterceptQP(method="path").solve(bundle, reg, 0.1)
    assert np.all(sol.alpha[-5:] == 0.0)
    ipm = InterceptQP(method="ipm").solve(bundle, reg, 0.1)
    assert sol.dual_value >= ipm.dual_value - 1e-9


def test_auto_picks_path_with_one_intercept_and_ipm_with_several():
    """With several intercepts the path method does not apply: the box QP is used."""
    rng = np.random.default_rng(0)
    d, k, lam = 3, 2, 0.2
    reg = InterceptRegularizer(R.L2(), d, k, _Box(2.0))
    bundle = PlaneBundle(d + k, metric=reg.gram_metric)
    bundle.add_floor(-3.0)
    for _ in range(6):
        bundle.add(rng.standard_normal(d + k), rng.standard_normal())
    auto = select(reg).solve(bundle, reg, lam)
    ipm = InterceptQP(method="ipm").solve(bundle, reg, lam)
    assert auto.dual_value == pytest.approx(ipm.dual_value, rel=1e-9)
    with pytest.raises(ValueError, match="method"):
        InterceptQP(method="newton")


def shifted_binary(m=400, d=20, seed=8):
    """tests/test_sklearn.py's warm-start problem: labels of a noisy linear rule, the features
    shifted by 0.5 (an intercept to find)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    score = X @ rng.normal(size=d) + 0.5 * rng.normal(size=m)
    return X + 0.5, np.where(score > 0, 1.0, -1.0)


@pytest.mark.parametrize("method", ["bmrm", "ls-bmrm"])
def test_warm_planes_with_an_intercept_certify(method):
    """The run that stalled: planes of lam = 0.1 (no evidence in the new run) warm-start
    lam = 0.03; it converges, certifies, and needs fewer iterations than cold."""
    X, y = shifted_binary()
    J0 = nsopt.RegularizedRisk(L.Hinge(X, y), R.L2(), 0.1, fit_intercept=True)
    r0 = nsopt.minimize(J0, method=method, rtol=1e-4)
    J = nsopt.RegularizedRisk(L.Hinge(X, y), R.L2(), 0.03, fit_intercept=True)
    cold = nsopt.minimize(J, method=method, rtol=1e-4)
    warm = nsopt.minimize(J, method=method, rtol=1e-4, x0=r0.x, planes=r0.info["planes"])
    assert warm.success and cold.success
    assert warm.certificate.check(J) >= warm.lower_bound * (1 - 1e-9)
    assert warm.lower_bound <= cold.fun and cold.lower_bound <= warm.fun
    assert warm.nit < cold.nit


def test_sklearn_warm_path_with_an_intercept_reuses_planes_and_certifies():
    """A warm-started alpha path with an intercept passes the previous run's planes, needs
    fewer iterations than cold, and every point's certificate checks."""
    sk = pytest.importorskip("nsopt.sklearn")
    pytest.importorskip("sklearn", minversion="1.6")
    X, y = shifted_binary()
    alphas = [1e-1, 3e-2, 1e-2, 3e-3, 1e-3]
    iters = {}
    for warm in (False, True):
        est = sk.LinearClassifier(alpha=alphas[0], method="ls-bmrm", fit_intercept=True,
                                  warm_start=warm, tol=1e-4)
        iters[warm] = []
        for a in alphas:
            est.set_params(alpha=a)
            seen = {}
            original = sk.minimize

            def spy(J, **kwargs):
                seen["planes"] = kwargs.get("planes")
                return original(J, **kwargs)

            sk.minimize = spy
            try:
                est.fit(X, y)
            finally:
                sk.minimize = original
            if warm and a != alphas[0]:
                assert seen["planes"] is not None
            assert est.result_.success
            assert est.certificate_.check(est.problem(X, y)) > -np.inf
            iters[warm].append(est.n_iter_)
    assert sum(iters[True][1:]) < sum(iters[False][1:])

"""Dual coordinate descent (method "dcd"): certified against cvxpy, refusals, forged evidence."""
import dataclasses
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.certificate import CertificateError, DualPoint
from nsopt.solvers import DCD, ProblemNotSupported

from cvxref import small_binary

LOSSES = {"hinge": L.Hinge, "squared-hinge": L.SquaredHinge, "logistic": L.Logistic}


def _problem(loss, sparse, seed=0, lam=1e-2, m=150, d=8, weights=True):
    X, y = small_binary(m, d, seed, sparse=False)
    rng = np.random.default_rng(seed + 100)
    if sparse:
        X = sp.csr_matrix(np.where(rng.random(X.shape) < 0.6, X, 0.0))
    w = rng.uniform(0.2, 3.0, m) if weights else None
    if weights:
        w[:5] = 0.0  # examples without weight take no part
    return nsopt.RegularizedRisk(LOSSES[loss](X, y, sample_weight=w), R.L2(), lam)


def _cvxpy_optimum(J):
    import cvxpy as cp

    prob, _ = nsopt.to_cvxpy(J)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_certified_bracket_against_cvxpy(loss, sparse):
    pytest.importorskip("cvxpy")
    J = _problem(loss, sparse, seed=len(loss) + sparse)
    rtol = 1e-6
    res = nsopt.minimize(J, method="dcd", rtol=rtol, max_iter=5000)
    f_star = _cvxpy_optimum(J)
    slack = 1e-7 * max(1.0, abs(f_star))
    assert res.success, res.message
    assert res.lower_bound - slack <= f_star <= res.fun + slack
    assert res.gap <= rtol * abs(res.fun)
    assert res.certificate.source == "dual-point"
    assert isinstance(res.certificate.evidence, DualPoint)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * max(1.0, abs(res.lower_bound))
    t = res.certificate.evidence.t
    assert np.all(t >= 0) and np.all(t <= J.loss.dual_upper)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_forged_certificates_are_rejected(loss):
    J = _problem(loss, sparse=True, seed=3)
    res = nsopt.minimize(J, method="dcd", rtol=1e-4)
    cert = res.certificate
    cert.check(J)
    # a claim above what the dual point proves
    higher = dataclasses.replace(cert, lower=cert.lower + 1e-3 * abs(cert.upper),
                                 gap=cert.gap - 1e-3 * abs(cert.upper))
    with pytest.raises(CertificateError):
        higher.check(J)
    # a dual point outside its box, below or above
    outside = [-0.5] + ([2.0 * J.loss.dual_upper] if math.isfinite(J.loss.dual_upper) else [])
    for value in outside:
        t = np.array(cert.evidence.t)
        t[0] = value
        with pytest.raises(CertificateError, match="leaves the box"):
            dataclasses.replace(cert, evidence=DualPoint(t), a_bar=None, b_bar=None).check(J)
    # the certificate of another problem (other lam)
    other = nsopt.RegularizedRisk(J.loss, R.L2(), J.lam * 2)
    with pytest.raises(CertificateError):
        cert.check(other)


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("check_every", [None, 1, 3])
def test_options_change_the_path_not_the_answer(shrinking, check_every):
    J = _problem("hinge", sparse=True, seed=5, lam=1e-3)
    res = nsopt.minimize(J, method="dcd", rtol=1e-5, shrinking=shrinking,
                         check_every=check_every, max_iter=5000)
    ref = nsopt.minimize(J, method="ls-bmrm", rtol=1e-8)
    assert res.success
    assert res.lower_bound <= ref.fun + 1e-12 and ref.lower_bound <= res.fun + 1e-12
    if check_every is not None:
        assert res.info["epochs"] == check_every * res.nit
    assert 0 < res.info["n_active"] <= J.loss.m


def test_runs_are_reproducible_and_seeded():
    J = _problem("logistic", sparse=False, seed=7)
    a = nsopt.minimize(J, method="dcd", max_iter=3, check_every=1)
    b = nsopt.minimize(J, method="dcd", max_iter=3, check_every=1)
    c = nsopt.minimize(J, method="dcd", max_iter=3, check_every=1, random_state=1)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.lower_bound == b.lower_bound
    assert not np.array_equal(a.x, c.x)


@pytest.mark.parametrize("make,what", [
    (lambda X, y: nsopt.RegularizedRisk(L.Hinge(X, y), R.L1(), 1e-2), "L2 regularizer"),
    (lambda X, y: nsopt.RegularizedRisk(L.Hinge(X, y), R.L1(), 1e-2, fit_intercept=True),
     "L2 regularizer (lam/2)||w||^2 on the coefficients (with or without an intercept)"),
    (lambda X, y: nsopt.RegularizedRisk(L.Huber(X, y), R.L2(), 1e-2), "Hinge, SquaredHinge or Logistic"),
    (lambda X, y: nsopt.RegularizedRisk(L.Exponential(X, y), R.L2(), 1e-2),
     "Hinge, SquaredHinge or Logistic"),
])
def test_refusals_name_the_reason_and_the_alternatives(make, what):
    X, y = small_binary(40, 4, 0)
    J = make(X, y)
    reason = DCD.unsupported_reason(J)
    assert reason is not None and what in reason and "ls-bmrm" in reason
    with pytest.raises(ProblemNotSupported, match="methods that can solve"):
        nsopt.minimize(J, method="dcd")
    assert "dcd" not in nsopt.solvers.methods_supporting(J)


def test_a_subclass_with_another_conjugate_is_refused():
    class HalfHinge(L.Hinge):
        def conjugate_terms(self, t):
            return -0.5 * np.asarray(t, dtype=np.float64)

    X, y = small_binary(40, 4, 0)
    assert DCD.unsupported_reason(nsopt.RegularizedRisk(HalfHinge(X, y), R.L2(), 1e-2))
    assert DCD.unsupported_reason(nsopt.RegularizedRisk(L.Hinge(X, y), R.L2(), 1e-2)) is None


@settings(max_examples=15, deadline=None)
@given(loss=st.sampled_from(sorted(LOSSES)), seed=st.integers(0, 10_000),
       lam=st.floats(1e-4, 1.0), max_iter=st.integers(0, 6), sparse=st.booleans())
def test_every_stop_brackets_the_optimum_with_a_valid_certificate(loss, seed, lam, max_iter,
                                                                  sparse):
    J = _problem(loss, sparse, seed=seed, lam=lam, m=60, d=5)
    res = nsopt.minimize(J, method="dcd", max_iter=max_iter, rtol=1e-9, check_every=1)
    ref = nsopt.minimize(J, method="ls-bmrm", rtol=1e-7)
    tol = 1e-9 * max(1.0, abs(ref.fun))
    assert res.lower_bound <= ref.fun + tol and ref.lower_bound <= res.fun + tol
    assert res.certificate.check(J) >= res.lower_bound - tol
    assert np.all(np.diff(res.history["lower_bound"]) >= 0)


# --- the compiled epochs without an intercept (nsopt/solvers/_dcd_kernels.py) ----------------
from nsopt.oracle import CountingOracle  # noqa: E402
from nsopt.solvers import _dcd_kernels as K  # noqa: E402
from nsopt.solvers import dcd as dcd_module  # noqa: E402


def _a9a_like(loss="hinge", lam=1e-3, m=6000, seed=0):
    """a9a-shaped data; at the default size large enough (nnz > _ESTIMATE_MIN_NNZ) for the
    gap estimate to decide the checks."""
    X, y = nsopt.datasets.make_sparse_binary(m, 123, random_state=seed)
    J = nsopt.RegularizedRisk(LOSSES[loss](X, y), R.L2(), lam)
    assert m < 6000 or X.nnz >= dcd_module._ESTIMATE_MIN_NNZ
    return J


def _plain(J, **options):
    s = DCD(check_every=1, **options).init(CountingOracle(J), np.zeros(J.dim))
    return s, s.work


def _epochs(pk, n, prefetch=4):
    return K.epochs(pk.kind, pk.indptr, pk.indices, pk.data, pk.ex, pk.w, pk.index, pk.shrink,
                    pk.sums, pk.v, pk.lam, pk.rng, n, 2**62, -np.inf, -np.inf, prefetch)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_shrinking_and_the_estimate_reach_the_same_certified_optimum(loss):
    """Shrinking (and the gap estimate deciding the checks) changes the path, not the answer:
    both runs certify rtol, their brackets overlap, and both certificates check."""
    J = _a9a_like(loss, lam=1e-4)
    rtol = 1e-5
    runs = [nsopt.minimize(J, method="dcd", rtol=rtol, shrinking=s, max_iter=500)
            for s in (True, False)]
    for res in runs:
        assert res.success, res.message
        assert res.gap <= rtol * abs(res.fun)
        assert res.certificate.check(J) >= res.lower_bound - 1e-9 * abs(res.lower_bound)
        assert res.fun == J.value(res.x)  # settled: the oracle's value, not the kernel's
    a, b = runs
    tol = 1e-12 * abs(a.fun)
    assert a.lower_bound <= b.fun + tol and b.lower_bound <= a.fun + tol
    assert abs(a.fun - b.fun) <= rtol * abs(a.fun)


def test_the_estimate_saves_checks():
    """The checks are decided by the estimate: far fewer than epochs (one check per epoch is
    what a fixed period of one epoch would cost)."""
    J = _a9a_like("hinge", lam=1e-4)
    res = nsopt.minimize(J, method="dcd", rtol=1e-3)
    assert res.success
    assert res.info["epochs"] >= 5 * res.nit


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_check_pass_is_the_dual_plane_and_the_risk(loss):
    """The fused pass gives loss.dual_plane(t) and loss.value(w) (to rounding), leaves t in
    its box, and refreshes every margin."""
    J = _a9a_like(loss, lam=1e-3, m=800)
    s, pk = _plain(J)
    _epochs(pk, 3)
    t, a = np.empty(J.loss.m), np.empty(J.dim)
    w = pk.w.copy()
    b, risk = K.check_pass(pk.kind, pk.indptr, pk.indices, pk.data, pk.ex, pk.w, a, t)
    a_ref, b_ref = J.loss.dual_plane(pk.ex[:, K.EX_T])
    np.testing.assert_allclose(a, a_ref, rtol=1e-12, atol=1e-15)
    assert b == pytest.approx(b_ref, rel=1e-12, abs=1e-15)
    assert risk == pytest.approx(J.loss.value(w), rel=1e-12)
    assert np.all(t >= 0) and np.all(t <= J.loss.dual_upper)
    np.testing.assert_allclose(pk.ex[:, K.EX_Z], J.loss.y * (J.loss.data.X @ w), atol=1e-12)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_epochs_keep_w_the_sums_and_the_shrunk_rows(loss):
    """What the epochs maintain stays exact up to rounding: w = X^T(c y t)/lam, the dual sum
    sum c psi(t), v = sum of c y x over the examples shrunk at t = 1 (the hinge's), and the
    dual never decreases."""
    J = _a9a_like(loss, lam=1e-4, m=1500)
    s, pk = _plain(J)
    X, y, c, lam = J.loss.data.X, J.loss.y, J.loss.c, J.lam

    def dual(t):
        a, b = J.loss.dual_plane(t)
        return b - 0.5 * float(a @ a) / lam

    previous = dual(pk.ex[:, K.EX_T])
    for _ in range(12):
        _epochs(pk, 1)
        t = pk.ex[:, K.EX_T].copy()
        np.testing.assert_allclose(pk.w, X.T @ (c * y * t) / lam, rtol=1e-9, atol=1e-11)
        assert pk.sums[1] == pytest.approx(float(np.sum(-c * J.loss.conjugate_terms(t))),
                                           rel=1e-9)
        shrunk = pk.index[int(pk.shrink[0]):]
        up = shrunk[t[shrunk] == 1.0] if pk.kind == 0 else shrunk[:0]
        np.testing.assert_allclose(pk.v, X[up].T @ (c[up] * y[up]) if up.size else 0.0,
                                   atol=1e-12)
        now = dual(t)
        assert now >= previous - 1e-12 * max(1.0, abs(now))
        previous = now


def test_prefetching_does_not_change_the_iterates():
    J = _a9a_like("hinge", lam=1e-4, m=1500)
    (_, p0), (_, p4) = _plain(J), _plain(J)
    for _ in range(4):
        _epochs(p0, 2, prefetch=0)
        _epochs(p4, 2, prefetch=4)
        np.testing.assert_array_equal(p0.ex, p4.ex)
        np.testing.assert_array_equal(p0.w, p4.w)
        np.testing.assert_array_equal(p0.index, p4.index)


def test_estimate_runs_are_reproducible():
    J = _a9a_like("hinge", lam=1e-4)
    a, b = (nsopt.minimize(J, method="dcd", rtol=1e-4) for _ in range(2))
    c = nsopt.minimize(J, method="dcd", rtol=1e-4, random_state=2)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.lower_bound == b.lower_bound and a.info["epochs"] == b.info["epochs"]
    assert not np.array_equal(a.x, c.x)


def test_an_overridden_oracle_is_valued_by_the_oracle():
    """A loss whose oracle is overridden (scores_supported False) is valued by calling it, not
    by the kernel's margin loss: its values reach the result."""
    J = _a9a_like("hinge", lam=1e-3, m=800)
    inner = J.loss._value_and_subgradient
    calls = []

    def counted(w):
        calls.append(1)
        return inner(w)

    J.loss._value_and_subgradient = counted
    res = nsopt.minimize(J, method="dcd", rtol=1e-4, check_every=2, max_iter=6)
    assert len(calls) >= res.nit  # one oracle call per check (and the start)


def _count_scores_passes(J):
    """Wrap ``J.loss.data.dot`` (the pass ``X w`` of the loss's oracle) with a counter."""
    calls = []
    inner = J.loss.data.dot

    def counted(w):
        calls.append(1)
        return inner(w)

    J.loss.data.dot = counted
    return calls


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_the_closing_check_values_its_point_from_the_check_pass(loss):
    """Without an intercept and from x0 = 0, no oracle call makes the pass X w: the start is
    valued from the scores 0, the check that closes the gap from its own pass's scores (no
    settling call). The answer is the oracle's value at x and the certificate checks."""
    J = _a9a_like(loss, lam=1e-3, m=2000)
    calls = _count_scores_passes(J)
    res = nsopt.minimize(J, method="dcd", rtol=1e-4)
    assert res.success and res.nfev == 2
    assert calls == []
    del J.loss.data.dot
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-13, abs=0)
    assert res.certificate.check(J) <= res.fun
    # a start other than 0 is valued by a whole oracle call
    calls = _count_scores_passes(J)
    res0 = nsopt.minimize(J, method="dcd", x0=np.full(J.dim, 1e-3), rtol=1e-4)
    assert res0.success and len(calls) == 1


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_the_closing_check_changes_no_iterate(loss, monkeypatch):
    """The dual path, the checks' points and bounds are those of the run valued by oracle calls
    at every check (an instance-level oracle: ``scores_supported`` off for the valuing only;
    the scaled point, which only the kernel's own values offer, off)."""
    monkeypatch.setattr(dcd_module, "_SCALE_PRIMAL", False)
    monkeypatch.setattr(dcd_module, "_EXACT_MAX_DIM", 0)  # the exact finish: kernel values too
    J = _a9a_like(loss, lam=1e-3, m=2000)
    a = list((s.epochs, s.lower_bound, None if s.w is None else s.w.copy())
             for s in DCD(rtol=1e-5, check_every=2).iterate(J))
    K2 = _a9a_like(loss, lam=1e-3, m=2000)
    K2.loss._value_and_subgradient = K2.loss._value_and_subgradient  # an overridden oracle
    b = list((s.epochs, s.lower_bound, None if s.w is None else s.w.copy())
             for s in DCD(rtol=1e-5, check_every=2).iterate(K2))
    assert len(a) == len(b) >= 2
    for (ea, la, wa), (eb, lb, wb) in zip(a, b):
        assert ea == eb and la == lb
        assert (wa is None and wb is None) or np.array_equal(wa, wb)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(LOSSES)), st.integers(0, 2**16), st.floats(-0.3, 0.3))
def test_best_scale_minimises_j_along_the_ray(loss, seed, shift):
    """``best_scale`` from the check pass's margins: J(s x) at the s it returns is the minimum
    of J along the ray {s x : s in [0.5, 2]} (a fine grid and its best neighbourhood, valued
    by the oracle) up to rounding, and the risk it returns is R(s x)."""
    J = _problem(loss, sparse=True, seed=seed % 7, lam=1e-2)
    rng = np.random.default_rng(seed)
    s0, pk = _plain(J)
    _epochs(pk, 3)
    x = pk.w * (1.0 + shift) + 0.01 * rng.standard_normal(pk.w.size)
    pk.w[:] = x
    a, t = np.empty(x.size), np.empty(pk.ex.shape[0])
    K.check_pass(pk.kind, pk.indptr, pk.indices, pk.data, pk.ex, pk.w, a, t)
    sc, r = K.best_scale(pk.kind, pk.ex, J.lam, float(x @ x), 0.5, 2.0, 60)
    assert 0.5 <= sc <= 2.0
    assert r == pytest.approx(J.loss.value(sc * x), rel=1e-10, abs=1e-14)
    best = J.value(sc * x)
    grid = np.linspace(0.5, 2.0, 1501)
    vals = np.array([J.value(g * x) for g in grid])
    k = int(np.argmin(vals))
    fine = np.linspace(grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)], 201)
    assert best <= min(vals.min(), min(J.value(g * x) for g in fine)) * (1 + 1e-9) + 1e-14
    assert best <= J.value(x) * (1 + 1e-12) + 1e-15


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_the_scaled_point_changes_no_dual_iterate(loss, monkeypatch):
    """With a fixed check period the scaled point changes the points offered, never the dual
    path: equal epochs and bounds, each check's value at most the unscaled one's; the
    certificate of the scaled run checks."""
    runs = {}
    for flag in (False, True):
        monkeypatch.setattr(dcd_module, "_SCALE_PRIMAL", flag)
        J = _a9a_like(loss, lam=1e-4, m=2000)
        runs[flag] = [(s.epochs, s.lower_bound, s.fun_best, None if s.w is None else s.w.copy())
                      for s in DCD(rtol=1e-10, check_every=3, max_iter=8).iterate(J)]
    assert len(runs[False]) == len(runs[True])
    better = 0
    for (e0, l0, f0, _), (e1, l1, f1, _) in zip(runs[False], runs[True]):
        assert e0 == e1 and l0 == l1
        assert f1 <= f0 * (1 + 1e-13) or not math.isfinite(f0)
        better += f1 < f0 * (1 - 1e-9)
    if loss == "hinge":
        assert better >= 1   # the hinge's primal lags: the scaled point helps
    res = nsopt.minimize(J, method="dcd", rtol=1e-5)
    assert res.success and res.certificate.check(J) <= res.fun


@given(m=st.integers(1, 40), lam=st.floats(1e-8, 1e3), seed=st.integers(0, 2**16))
@settings(max_examples=20, deadline=None)
def test_packed_examples_are_the_columns_on_cache_lines(m, lam, seed):
    """The compiled fill of the per-example array gives bitwise numpy's column formulas
    (``c * y / lam``, ``c * sq / lam``), zero margins and padding, rows on 64-byte lines."""
    rng = np.random.default_rng(seed)
    y, c = np.where(rng.random(m) < 0.5, 1.0, -1.0), rng.random(m)
    sq, t = 10 * rng.random(m), rng.random(m)
    ex = K.pack_examples(y, c, sq, lam, t, 1.0 - t)
    ref = np.zeros((m, 8))
    ref[:, K.EX_Y], ref[:, K.EX_SCALE], ref[:, K.EX_Q] = y, c * y / lam, c * sq / lam
    ref[:, K.EX_C], ref[:, K.EX_T], ref[:, K.EX_TC] = c, t, 1.0 - t
    assert np.array_equal(ex, ref) and ex.ctypes.data % 64 == 0


# ---- the kernel's kind, asked of the loss's dual (one comparison per kind) ----

@pytest.mark.parametrize("loss,kind", [(L.Hinge, 0), (L.SquaredHinge, 1), (L.Logistic, 2)])
def test_kind_of_the_kernels_losses(loss, kind):
    X, y = small_binary()[:2]
    assert dcd_module._kind(loss(X, y)) == kind


@pytest.mark.parametrize("error", [1e-12, math.nan])
def test_kind_refuses_a_conjugate_off_by_more_than_rounding(error):
    X, y = small_binary()[:2]
    loss = L.SquaredHinge(X, y)
    real = loss.conjugate_terms

    def off(t):
        out = np.array(real(t), dtype=np.float64)
        out[-1] += error
        return out

    loss.conjugate_terms = off
    assert dcd_module._kind(loss) is None
    loss.conjugate_terms = lambda t: np.array(real(t), dtype=np.float64) + 1e-15
    assert dcd_module._kind(loss) == 1   # within the tolerance 1e-14

"""Truncated Newton for L2 smooth margin losses (method "newton-cg"): certified against cvxpy +
Clarabel, refusals through the loss / regularizer protocol, edge cases, the default method."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.solvers import SOLVERS, NewtonCG, ProblemNotSupported

from cvxref import (SMOOTH_MARGIN_LOSSES, assert_dual_point_certified, small_binary,
                     smooth_margin_problem)

LOSSES = SMOOTH_MARGIN_LOSSES
_check_certified = assert_dual_point_certified


def _problem(loss, seed=0, lam=1e-2, **kw):
    return smooth_margin_problem(loss, R.L2(), seed, lam, **kw)


@settings(max_examples=8, deadline=None)
@given(loss=st.sampled_from(sorted(LOSSES)), seed=st.integers(0, 10_000),
       lam=st.sampled_from([1e-5, 1e-3, 1e-1]), sparse=st.booleans(), weights=st.booleans(),
       intercept=st.booleans(), model=st.sampled_from(["auto", "cg"]))
def test_certified_bracket_against_cvxpy(loss, seed, lam, sparse, weights, intercept, model):
    """lower_bound <= J* <= fun, gap <= rtol at success and ``check`` agrees, on random small
    problems, with both direction solvers (dense Cholesky; conjugate gradient), with and
    without a free intercept."""
    pytest.importorskip("cvxpy")
    J = _problem(loss, seed, lam, sparse=sparse, weights=weights, intercept=intercept)
    res = nsopt.minimize(J, method="newton-cg", rtol=1e-6, max_iter=200, model=model)
    _check_certified(J, res, 1e-6)


def test_models_agree_and_newton_converges_fast():
    """The dense and the CG direction reach the same optimum; Newton's local convergence: a
    gap of 1e-10 in few steps at a small lam (dual coordinate descent's hard case)."""
    J = _problem("logistic", seed=5, lam=1e-5, m=200, d=10)
    a = nsopt.minimize(J, method="newton-cg", rtol=1e-10, model="gram")
    b = nsopt.minimize(J, method="newton-cg", rtol=1e-10, model="cg")
    assert a.success and b.success and a.info["model"] == "gram" and b.info["model"] == "cg"
    assert a.fun == pytest.approx(b.fun, rel=1e-9)
    assert a.nit <= 25 and b.nit <= 25
    assert b.info["cg_iterations"] > 0 and a.info["cg_iterations"] == 0


def test_sparse_and_dense_agree():
    Jd = _problem("squared-hinge", seed=5, lam=1e-2)
    Js = nsopt.RegularizedRisk(L.SquaredHinge(sp.csr_matrix(Jd.loss.data.X), Jd.loss.y),
                               R.L2(), 1e-2)
    a = nsopt.minimize(Jd, method="newton-cg", rtol=1e-9)
    b = nsopt.minimize(Js, method="newton-cg", rtol=1e-9)
    assert a.fun == pytest.approx(b.fun, rel=1e-9)


class _Loop:   # the loop's counting wrapper, as far as ``prepare`` reads it
    def __init__(self, J):
        self.problem, self.loss = J, J.loss


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [False, True])
def test_prepare_builds_only_the_layouts_read(sparse, intercept):
    """With ``dense_share`` (newton-cg's dense model) X is one dense array (ones column last
    with an intercept), no CSR rows are built and CSC columns only for the intercept's
    rebalancing; without it (newton-cd) both layouts are built as before and nothing dense."""
    from nsopt.solvers.newton_cd import prepare

    J = _problem("logistic", seed=3, sparse=sparse, intercept=intercept)
    X = J.base_loss.data.X if intercept else J.loss.data.X
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    m, d = Xd.shape
    lean = prepare(_Loop(J), "auto", 0, dense_share=0.5)
    full = prepare(_Loop(J), "auto", 0)
    assert lean.gram and full.gram and full.dense is None
    expect = np.hstack([Xd, np.ones((m, 1))]) if intercept else Xd
    assert lean.dense.flags.c_contiguous and np.array_equal(lean.dense, expect)
    assert lean.rows[1].size == 0 and full.rows[1].size == np.count_nonzero(Xd)
    assert (lean.indices.size == np.count_nonzero(Xd)) == intercept
    csc = sp.csc_matrix(Xd)
    assert np.array_equal(full.indptr, csc.indptr) and np.array_equal(full.values, csc.data)
    # too sparse for the dense array: both layouts, as newton-cd's
    none = prepare(_Loop(J), "auto", 0, dense_share=1.01)
    assert none.dense is None and none.rows[1].size == np.count_nonzero(Xd)


@pytest.mark.parametrize("intercept", [False, True])
def test_lean_layouts_give_the_same_run(intercept, monkeypatch):
    """The dense array alone gives the iterates of the sparse-layout path to rounding."""
    import nsopt.solvers.newton_cg as ncg

    J = _problem("squared-hinge", seed=9, lam=1e-3, intercept=intercept)
    a = nsopt.minimize(J, method="newton-cg", rtol=1e-10)
    assert ncg._dense_share(_Loop(J)) == 0.0           # dense data: syrk on a dense copy
    monkeypatch.setattr(ncg, "_SYRK_ADVANTAGE", 0.0)   # never dense: rows and columns
    assert ncg._dense_share(_Loop(J)) is None
    b = nsopt.minimize(J, method="newton-cg", rtol=1e-10)
    assert a.success and b.success
    np.testing.assert_allclose(a.x, b.x, rtol=1e-8, atol=1e-10)
    assert a.nfev == b.nfev


# ---------------------------------------------------------------- refusals (protocol)

@pytest.mark.parametrize("loss,reg", [(L.Hinge, R.L2()), (L.Logistic, R.L1()),
                                      (L.SquaredHinge, R.ElasticNet(0.5)),
                                      (L.LeastSquares, R.L2()), (L.Logistic, R.Lp(3.0))])
def test_refuses_other_losses_and_regularizers(loss, reg):
    X, y = small_binary(40, 4, 0)
    J = nsopt.RegularizedRisk(loss(X, y), reg, 1e-2)
    assert NewtonCG.unsupported_reason(J) is not None
    assert "newton-cg" not in nsopt.solvers.methods_supporting(J)
    with pytest.raises(ProblemNotSupported, match="newton-cg"):
        nsopt.minimize(J, method="newton-cg")


def test_loss_is_asked_of_the_protocol_not_the_class():
    """A Logistic subclass with another conjugate is refused (its second derivative and dual
    are not the kernels'); a regularizer is taken for what it states (self_conjugate)."""
    X, y = small_binary(40, 4, 0)

    class NotLogistic(L.Logistic):
        def conjugate_terms(self, t):
            return 2.0 * super().conjugate_terms(t)

    assert NewtonCG.unsupported_reason(nsopt.RegularizedRisk(NotLogistic(X, y), R.L2(), 1e-2))
    assert NewtonCG.unsupported_reason(nsopt.RegularizedRisk(L.Logistic(X, y), R.L2(), 1e-2)) is None


def test_bare_oracle_refused():
    f = nsopt.FunctionOracle(lambda x: float(np.abs(x).sum()), lambda x: np.sign(x), dim=3)
    assert "newton-cg" not in nsopt.solvers.methods_supporting(f)


# ---------------------------------------------------------------- edge cases

def test_nan_start_raises():
    J = _problem("logistic")
    with pytest.raises(ValueError, match="x0"):
        nsopt.minimize(J, method="newton-cg", x0=np.full(J.dim, np.nan))


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_one_example(loss):
    pytest.importorskip("cvxpy")
    X = np.array([[1.0, -2.0, 0.5]])
    for lam in (1e-3, 1.0):
        J = nsopt.RegularizedRisk(LOSSES[loss](X, np.array([1.0])), R.L2(), lam)
        res = nsopt.minimize(J, method="newton-cg", rtol=1e-7, max_iter=200)
        _check_certified(J, res, 1e-7)


def test_all_zero_column_stays_zero():
    X, y = small_binary(60, 5, 2)
    X[:, 3] = 0.0
    for model in ("gram", "cg"):
        J = nsopt.RegularizedRisk(L.Logistic(X, y), R.L2(), 1e-3)
        res = nsopt.minimize(J, method="newton-cg", rtol=1e-8, model=model)
        assert res.success and res.x[3] == 0.0


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_huge_lam(loss):
    """lam = 1e8: w* is about grad R(0) / lam (tiny); the gap is still proven."""
    J = _problem(loss, lam=1e8)
    res = nsopt.minimize(J, method="newton-cg", rtol=1e-9)
    assert res.success and np.max(np.abs(res.x)) < 1e-7
    assert res.certificate.check(J) <= res.fun * (1 + 1e-12)


def test_x0_is_used_and_not_modified():
    J = _problem("squared-hinge", seed=4)
    x0 = np.linspace(-1, 1, J.dim)
    keep = x0.copy()
    res = nsopt.minimize(J, method="newton-cg", x0=x0, rtol=1e-6)
    assert res.success and np.array_equal(x0, keep)


def test_logistic_intercept_one_class_raises():
    X, _ = small_binary(20, 3, 0)
    J = nsopt.RegularizedRisk(L.Logistic(X, np.ones(20)), R.L2(), 1e-2, fit_intercept=True)
    with pytest.raises(ValueError, match="same label"):
        nsopt.minimize(J, method="newton-cg")


def test_registered():
    assert SOLVERS["newton-cg"] is NewtonCG
    assert math.isfinite(NewtonCG().config["rtol"])
    with pytest.raises(ValueError, match="cg_tol"):
        NewtonCG(cg_tol=1.5)


# ---------------------------------------------------------------- the default method

@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_default_picks_newton_cg_when_dcd_is_ill_conditioned(loss):
    """dcd at small conditioning (the squared hinge; the logistic loss takes newton-cg at
    every conditioning), newton-cg above NEWTON_MIN_CONDITIONING and with a free intercept
    (dcd's default is without one)."""
    from nsopt.minimize import NEWTON_MIN_CONDITIONING, dcd_conditioning, default_method

    easy = _problem(loss, lam=1.0)
    hard = _problem(loss, lam=1e-5)
    assert dcd_conditioning(easy) <= NEWTON_MIN_CONDITIONING < dcd_conditioning(hard)
    assert default_method(easy) == ("newton-cg" if loss == "logistic" else "dcd")
    assert default_method(hard) == "newton-cg"
    assert default_method(_problem(loss, lam=1.0, intercept=True)) == "newton-cg"
    res = nsopt.minimize(hard)
    assert res.method == "newton-cg" and res.success


def test_default_keeps_dcd_for_the_hinge():
    from nsopt.minimize import default_method

    X, y = small_binary(40, 4, 0)
    assert default_method(nsopt.RegularizedRisk(L.Hinge(X, y), R.L2(), 1e-2)) == "dcd"


@pytest.mark.parametrize("loss", ["log_loss", "squared_hinge"])
def test_sklearn_l2_smooth_loss_defaults_to_newton_cg(loss):
    from nsopt.sklearn import LinearClassifier

    X, y = small_binary(60, 5, 1)
    est = LinearClassifier(loss=loss, penalty="l2").fit(X, y)
    assert est.result_.method == "newton-cg" and est.result_.success


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from([1, 2]), seed=st.integers(0, 10_000),
       spread=st.sampled_from([1e-3, 1.0, 30.0, 800.0]), beta=st.sampled_from([1.0, 0.5, 1e-3]))
def test_fused_terms_equal_newton_cd_kernels(kind, seed, spread, beta):
    """The loss terms with the conjugate sum from the same exponentials equal newton-cd's
    ``margin_terms`` + ``conjugate_sum`` (+ ``line_loss`` on a trial), including margins where
    exp under- or overflows (spread 800) and margins at exactly 0."""
    from nsopt.solvers import _newton_cd_kernels as K
    from nsopt.solvers._newton_cg_kernels import line_terms, margin_terms_conj

    rng = np.random.default_rng(seed)
    m = 50
    z, q = spread * rng.standard_normal(m), spread * rng.standard_normal(m)
    z[:3] = 0.0
    y, c = rng.choice([-1.0, 1.0], m), rng.uniform(0.0, 2.0, m)
    t0, D0, t1, D1 = (np.empty(m) for _ in range(4))
    loss0 = K.margin_terms(kind, z, y, c, t0, D0)
    loss1, conj1 = margin_terms_conj(kind, z, y, c, t1, D1)
    assert np.array_equal(t0, t1) and np.array_equal(D0, D1)
    assert loss1 == pytest.approx(loss0, rel=1e-13, abs=1e-300)
    conj0 = K.conjugate_sum(kind, 1.0, t0, c)
    assert conj1 == pytest.approx(conj0, rel=1e-12, abs=1e-14 * float(c.sum()))
    zt = np.empty(m)
    loss2, conj2 = line_terms(kind, z, q, beta, y, c, zt, t1, D1)
    assert np.array_equal(zt, z + beta * q)
    assert loss2 == pytest.approx(K.line_loss(kind, z, q, beta, y, c), rel=1e-13, abs=1e-300)
    K.margin_terms(kind, zt, y, c, t0, D0)
    assert np.array_equal(t0, t1) and np.array_equal(D0, D1)
    assert conj2 == pytest.approx(K.conjugate_sum(kind, 1.0, t0, c), rel=1e-12,
                                  abs=1e-14 * float(c.sum()))


def test_init_runs_on_one_blas_thread(monkeypatch):
    """The setup (data preparation, the start's oracle call) runs inside the one-BLAS-thread
    context: a threaded call there left OpenBLAS's worker spinning through short runs."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import nsopt.solvers.newton_cg as ncg

    seen = []
    prepare = ncg.prepare

    def spy(*args, **kwargs):
        seen.extend(i["num_threads"] for i in threadpoolctl.threadpool_info()
                    if i["user_api"] == "blas")
        return prepare(*args, **kwargs)

    monkeypatch.setattr(ncg, "prepare", spy)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):   # tests run on 1
        res = nsopt.minimize(_problem("logistic", seed=2), method="newton-cg", rtol=1e-6)
    assert res.success and seen and set(seen) == {1}


# ---------------------------------------------------------------- the dense Hessian

def _hessian_data(seed, m, d, density, intercept, dense):
    """``prepare``'s data in the dense-Hessian model, the dense copy (``dense``) or the sparse
    rows, of a random X with the given share of nonzeros (empty rows and columns included)."""
    from nsopt.solvers.newton_cd import prepare

    rng = np.random.default_rng(seed)
    X = np.where(rng.random((m, d)) < density, rng.standard_normal((m, d)), 0.0)
    X[rng.random(m) < 0.2] = 0.0                       # empty rows
    X[:, rng.random(d) < 0.2] = 0.0                    # empty columns
    y = rng.choice([-1.0, 1.0], m)
    J = nsopt.RegularizedRisk(L.SquaredHinge(sp.csr_matrix(X), y), R.L2(), 1e-2,
                              fit_intercept=intercept)
    data = prepare(_Loop(J), "gram", 0, dense_share=0.0 if dense else None)
    assert (data.dense is not None) == dense
    Xb = np.hstack([X, np.ones((m, 1))]) if intercept else X
    return data, Xb, rng


def _hessian_state(data, D, hess=None, hess_D=None, updates=0):
    from types import SimpleNamespace
    unit = bool(data.dense is None and np.all(data.rows[2] == 1.0))
    return SimpleNamespace(D=D, dense=data.dense, hess=hess, hess_D=hess_D,
                           hess_updates=updates, unit=unit)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 40), d=st.integers(1, 9),
       density=st.sampled_from([0.0, 0.1, 0.5, 1.0]), intercept=st.booleans())
def test_sparse_rows_hessian_equals_syrk(seed, m, d, density, intercept):
    """X^T diag(D) X from the sparse rows' pairs of nonzeros equals BLAS syrk's on the dense
    copy (and the plain product) to 1e-12 relative, at any sparsity, with empty rows and
    columns, weights 0 among them, and the intercept's column of ones."""
    from nsopt.solvers.newton_cg import NewtonCG

    rows, Xb, rng = _hessian_data(seed, m, d, density, intercept, dense=False)
    dense, _, _ = _hessian_data(seed, m, d, density, intercept, dense=True)
    D = np.where(rng.random(m) < 0.3, 0.0, rng.uniform(0.0, 2.0, m))
    H_rows, up1 = NewtonCG._loss_hessian(rows, _hessian_state(rows, D))
    H_syrk, up2 = NewtonCG._loss_hessian(dense, _hessian_state(dense, D))
    ref = Xb.T @ (D[:, None] * Xb)
    scale = max(float(np.abs(ref).max()), 1e-300)
    assert not up1 and not up2
    assert np.abs(H_rows - H_syrk).max() <= 1e-12 * scale
    assert np.abs(H_rows - ref).max() <= 1e-12 * scale
    assert np.array_equal(H_rows, H_rows.T)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), dense=st.booleans(), intercept=st.booleans())
def test_hessian_updates_equal_the_rebuilt_hessian(seed, dense, intercept):
    """The squared hinge's weights c_i or 0: a Hessian updated from the rows that changed
    weight equals the one built from scratch to 1e-12 relative, through a chain of updates
    (rows entering and leaving), on the dense copy and on the sparse rows."""
    from nsopt.solvers.newton_cg import NewtonCG

    m = 60
    data, Xb, rng = _hessian_data(seed, m, 7, 0.5, intercept, dense)
    c = rng.uniform(0.2, 3.0, m)
    active = rng.random(m) < 0.7
    D = np.where(active, c, 0.0)
    H, _ = NewtonCG._loss_hessian(data, _hessian_state(data, D))
    for k in range(5):
        active = active ^ (rng.random(m) < 0.1)
        active[k] = not active[k]                      # at least one row changes
        D_new = np.where(active, c, 0.0)
        H, updated = NewtonCG._loss_hessian(data, _hessian_state(data, D_new, H, D, k))
        ref = Xb.T @ (D_new[:, None] * Xb)
        assert updated == (np.count_nonzero(D_new != D) < np.count_nonzero(D_new))
        assert np.abs(H - ref).max() <= 1e-12 * max(float(np.abs(ref).max()), 1e-300)
        D = D_new


def test_hessian_updates_give_the_same_run(monkeypatch):
    """The squared hinge's run with its Hessian updated from the changed rows reaches the
    result of the run that builds every Hessian from scratch; both proven."""
    import nsopt.solvers.newton_cg as ncg

    J = _problem("squared-hinge", seed=4, lam=1e-4, m=200, d=8)
    a = nsopt.minimize(J, method="newton-cg", rtol=1e-10)
    monkeypatch.setattr(ncg, "_MAX_UPDATES", 0)
    b = nsopt.minimize(J, method="newton-cg", rtol=1e-10)
    assert a.success and b.success
    assert a.info["hessian_updates"] > 0 and b.info["hessian_updates"] == 0
    assert a.nit == b.nit
    np.testing.assert_allclose(a.x, b.x, rtol=1e-8, atol=1e-10)
    assert a.certificate.check(J) <= a.fun + 1e-12 * abs(a.fun)


def test_dense_hessian_cost_model():
    """syrk on a dense copy when its m n(n+1)/2 is at most 16x the rows' pairs (dense data),
    the sparse rows otherwise (few nonzeros a row among many columns); the intercept counts
    as a nonzero column in every row."""
    from nsopt.solvers.newton_cg import _dense_share

    rng = np.random.default_rng(0)
    y = rng.choice([-1.0, 1.0], 300)
    dense = nsopt.RegularizedRisk(L.Logistic(rng.standard_normal((300, 8)), y), R.L2(), 1e-3)
    assert _dense_share(_Loop(dense)) == 0.0
    Xs = sp.random(300, 200, density=3 / 200, random_state=1, format="csr")
    sparse = nsopt.RegularizedRisk(L.Logistic(Xs, y), R.L2(), 1e-3)
    assert _dense_share(_Loop(sparse)) is None
    # 4 of 8 columns a row: 300*8*9/2 = 10800 <= 16 * 300*4*5/2 = 48000
    X4 = np.where(np.arange(8) % 2 == 0, rng.standard_normal((300, 8)), 0.0)
    half = nsopt.RegularizedRisk(L.Logistic(sp.csr_matrix(X4), y), R.L2(), 1e-3)
    assert _dense_share(_Loop(half)) == 0.0


def test_line_search_expansion_saves_steps(monkeypatch):
    """Separable data at a small lam (the logistic loss flatter along the Newton direction
    than its model): the line search doubles past the full step, and the run proves the gap
    in fewer Newton steps than without the doubling."""
    import nsopt.solvers.newton_cg as ncg

    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 6))
    y = np.where(X @ rng.standard_normal(6) >= 0, 1.0, -1.0)
    J = nsopt.RegularizedRisk(L.Logistic(X, y), R.L2(), 1e-6)
    a = nsopt.minimize(J, method="newton-cg", rtol=1e-6)
    monkeypatch.setattr(ncg, "_EXPAND_FIT", math.inf)
    b = nsopt.minimize(J, method="newton-cg", rtol=1e-6)
    assert a.success and b.success
    assert a.info["line_search_expansions"] > 0 and b.info["line_search_expansions"] == 0
    assert a.nit < b.nit
    assert a.certificate.check(J) <= a.fun + 1e-12 * abs(a.fun)
    assert a.fun == pytest.approx(b.fun, rel=1e-5)


@pytest.mark.parametrize("intercept", [False, True])
def test_sparse_gram_model_reads_the_rows_only(intercept):
    """The sparse dense-Hessian model (scores, gradient and Hessian from the rows) builds no
    CSC columns but for the intercept's rebalancing, and its run equals the one that has
    them."""
    from nsopt.solvers.newton_cd import prepare

    Xs = sp.random(200, 60, density=0.05, random_state=2, format="csr")
    y = np.where(np.random.default_rng(2).random(200) < 0.5, 1.0, -1.0)
    J = nsopt.RegularizedRisk(L.Logistic(Xs, y), R.L2(), 1e-4, fit_intercept=intercept)
    lean = prepare(_Loop(J), "auto", 0, columns=False)
    assert lean.gram and lean.dense is None and lean.rows[1].size == Xs.nnz
    assert (lean.indices.size == Xs.nnz) == intercept
    res = nsopt.minimize(J, method="newton-cg", rtol=1e-9)
    ref = nsopt.minimize(J, method="newton-cg", rtol=1e-9, model="cg")
    assert res.success and res.info["model"] == "gram" and ref.success
    assert res.fun == pytest.approx(ref.fun, rel=1e-8)

"""Newton coordinate descent for L1 (method "newton-cd"): certified against cvxpy + Clarabel,
refusals through the loss / regularizer protocol, edge cases, the default method."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.minimize import default_method
from nsopt.solvers import SOLVERS, NewtonCD, ProblemNotSupported
from nsopt.solvers.newton_cd import loss_kind

from cvxref import (SMOOTH_MARGIN_LOSSES, assert_dual_point_certified, small_binary,
                     smooth_margin_problem)

LOSSES = SMOOTH_MARGIN_LOSSES
_check_certified = assert_dual_point_certified


def _problem(loss, seed=0, lam=1e-2, **kw):
    return smooth_margin_problem(loss, R.L1(), seed, lam, **kw)


@settings(max_examples=12, deadline=None)
@given(loss=st.sampled_from(sorted(LOSSES)), seed=st.integers(0, 10_000),
       lam=st.sampled_from([1e-3, 1e-2, 1e-1]), sparse=st.booleans(), weights=st.booleans(),
       model=st.sampled_from(["auto", "columns"]))
def test_certified_bracket_against_cvxpy(loss, seed, lam, sparse, weights, model):
    """lower_bound <= J* <= fun and gap <= rtol at success, on random small problems, with
    both model solvers (the dense Hessian with face Newton steps; CSC coordinate descent)."""
    pytest.importorskip("cvxpy")
    J = _problem(loss, seed, lam, sparse=sparse, weights=weights)
    res = nsopt.minimize(J, method="newton-cd", rtol=1e-6, max_iter=500, model=model)
    _check_certified(J, res, 1e-6)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_free_intercept_against_cvxpy(loss):
    pytest.importorskip("cvxpy")
    J = _problem(loss, seed=3, lam=1e-2, intercept=True)
    res = nsopt.minimize(J, method="newton-cd", rtol=1e-6, max_iter=500)
    _check_certified(J, res, 1e-6)
    assert J.split(res.x)[1].shape == (1,)


def test_sparse_and_dense_agree():
    Jd = _problem("logistic", seed=5, lam=1e-2)
    Js = nsopt.RegularizedRisk(L.Logistic(sp.csr_matrix(Jd.loss.data.X), Jd.loss.y), R.L1(), 1e-2)
    a = nsopt.minimize(Jd, method="newton-cd", rtol=1e-9)
    b = nsopt.minimize(Js, method="newton-cd", rtol=1e-9)
    assert a.fun == pytest.approx(b.fun, rel=1e-9)


def test_few_iterations_where_bmrm_needs_many():
    """The point of the method: Newton steps, not cutting planes (a moderately conditioned
    problem: bmrm needs several times the iterations)."""
    J = _problem("logistic", seed=11, lam=1e-3, m=300, d=20)
    newton = nsopt.minimize(J, method="newton-cd", rtol=1e-6)
    bmrm = nsopt.minimize(J, method="bmrm", rtol=1e-6)
    assert newton.success and bmrm.success
    assert newton.nit * 3 <= bmrm.nit


# ---------------------------------------------------------------- refusals (protocol)

@pytest.mark.parametrize("loss,reg", [(L.Hinge, R.L1()), (L.Logistic, R.L2()),
                                      (L.SquaredHinge, R.ElasticNet(0.5)),
                                      (L.LeastSquares, R.L1())])
def test_refuses_other_losses_and_regularizers(loss, reg):
    X, y = small_binary(40, 4, 0)
    J = nsopt.RegularizedRisk(loss(X, y), reg, 1e-2)
    assert NewtonCD.unsupported_reason(J) is not None
    assert "newton-cd" not in nsopt.solvers.methods_supporting(J)
    with pytest.raises(ProblemNotSupported, match="newton-cd"):
        nsopt.minimize(J, method="newton-cd")


def test_kind_is_asked_of_the_protocol_not_the_class():
    """A loss is recognised by what it states (differentiable, binary, its conjugate), so a
    subclass with another conjugate is refused and a lookalike class is accepted."""
    X, y = small_binary(40, 4, 0)

    class NotLogistic(L.Logistic):
        def conjugate_terms(self, t):
            return 2.0 * super().conjugate_terms(t)

    assert loss_kind(L.Logistic(X, y)) is not None
    assert loss_kind(L.SquaredHinge(X, y)) is not None
    assert loss_kind(NotLogistic(X, y)) is None
    assert loss_kind(L.Hinge(X, y)) is None           # not differentiable
    assert loss_kind(L.Exponential(X, y)) is None     # no dual the kernels know


def test_bare_oracle_refused():
    f = nsopt.FunctionOracle(lambda x: float(np.abs(x).sum()), lambda x: np.sign(x), dim=3)
    assert "newton-cd" not in nsopt.solvers.methods_supporting(f)


# ---------------------------------------------------------------- edge cases

def test_nan_input_raises():
    X, y = small_binary(20, 3, 0)
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        L.Logistic(X, y)
    J = _problem("logistic")
    with pytest.raises(ValueError, match="x0"):
        nsopt.minimize(J, method="newton-cd", x0=np.full(J.dim, np.nan))


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_one_example(loss):
    pytest.importorskip("cvxpy")
    X = np.array([[1.0, -2.0, 0.5]])
    for lam in (1e-2, 1.0):
        J = nsopt.RegularizedRisk(LOSSES[loss](X, np.array([1.0])), R.L1(), lam)
        res = nsopt.minimize(J, method="newton-cd", rtol=1e-7, max_iter=200)
        _check_certified(J, res, 1e-7)


def test_all_zero_column_stays_zero():
    X, y = small_binary(60, 5, 2)
    X[:, 3] = 0.0
    for model in ("auto", "columns"):
        J = nsopt.RegularizedRisk(L.Logistic(X, y), R.L1(), 1e-3)
        res = nsopt.minimize(J, method="newton-cd", rtol=1e-7, model=model)
        assert res.success and res.x[3] == 0.0


def test_large_lam_gives_zero_with_a_proof():
    """lam above ||grad R(0)||_inf: w = 0 is optimal, proven at the start."""
    J = _problem("logistic", lam=10.0)
    res = nsopt.minimize(J, method="newton-cd", rtol=1e-9)
    assert res.success and np.all(res.x == 0) and res.nit <= 1


def test_x0_is_used_and_not_modified():
    J = _problem("squared-hinge", seed=4)
    x0 = np.linspace(-1, 1, J.dim)
    keep = x0.copy()
    res = nsopt.minimize(J, method="newton-cd", x0=x0, rtol=1e-6)
    assert res.success and np.array_equal(x0, keep)


def test_reproducible():
    J = _problem("logistic", seed=9, lam=1e-3)
    a = nsopt.minimize(J, method="newton-cd", rtol=1e-8, random_state=3)
    b = nsopt.minimize(J, method="newton-cd", rtol=1e-8, random_state=3)
    assert np.array_equal(a.x, b.x) and a.nit == b.nit


def test_logistic_intercept_one_class_raises():
    X, _ = small_binary(20, 3, 0)
    J = nsopt.RegularizedRisk(L.Logistic(X, np.ones(20)), R.L1(), 1e-2, fit_intercept=True)
    with pytest.raises(ValueError, match="same label"):
        nsopt.minimize(J, method="newton-cd")


# ---------------------------------------------------------------- the default method

@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_default_picks_newton_cd_for_l1_smooth_margin_losses(loss):
    J = _problem(loss)
    assert default_method(J) == "newton-cd"
    res = nsopt.minimize(J)
    assert res.method == "newton-cd" and res.success


def test_default_keeps_bmrm_for_l1_hinge():
    X, y = small_binary(40, 4, 0)
    assert default_method(nsopt.RegularizedRisk(L.Hinge(X, y), R.L1(), 1e-2)) == "bmrm"


def test_registered():
    assert SOLVERS["newton-cd"] is NewtonCD
    assert math.isfinite(NewtonCD().config["rtol"])

"""newton-cg's dense Hessian from the sparse rows (``_newton_cg_kernels.row_gram``): bitwise
newton-cd's pairs kernel, equal to the Hessian-vector products of the CG model, the same
iterates, and certified runs on one-hot data (every stored value 1, the ``unit`` path)."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.solvers import _newton_cd_kernels as K
from nsopt.solvers._newton_cg_kernels import hess_vec, row_gram

from cvxref import assert_dual_point_certified


def _sparse(seed, m, d, density, unit):
    rng = np.random.default_rng(seed)
    vals = np.ones((m, d)) if unit else rng.standard_normal((m, d))
    X = np.where(rng.random((m, d)) < density, vals, 0.0)
    X[rng.random(m) < 0.2] = 0.0                       # empty rows
    X[:, rng.random(d) < 0.2] = 0.0                    # empty columns
    return sp.csr_matrix(X), rng


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 30), d=st.integers(1, 12),
       density=st.sampled_from([0.0, 0.2, 0.6, 1.0]), unit=st.booleans(),
       has_b=st.booleans(), signed=st.booleans())
def test_row_gram_is_the_pairs_kernel_and_the_hessian_vector_products(seed, m, d, density,
                                                                       unit, has_b, signed):
    """row_gram is bitwise newton-cd's ``gram`` (every column active), symmetric, and H v
    equals the CG model's Hessian-vector product X^T(D (X v)) (columns, CSC) to 1e-10
    relative, for any v: weights 0 skipped, negative weights (the updates' differences),
    empty rows and columns, the intercept's column of ones, with and without ``unit``
    (every stored value 1, values not read)."""
    X, rng = _sparse(seed, m, d, density, unit)
    lo = -1.0 if signed else 0.0
    D = np.where(rng.random(m) < 0.3, 0.0, rng.uniform(lo, 2.0, m))
    rows = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
    n = d + int(has_b)
    H = np.full((n, n), np.nan)                        # every entry is written
    row_gram(*rows, D, has_b, unit, H)
    ref = K.gram(*rows, D, np.arange(d, dtype=np.int64), n, d if has_b else -1, 0.0)
    assert np.array_equal(H, ref)
    assert np.array_equal(H, H.T)
    if unit:                                           # reading the values changes nothing
        H2 = np.empty((n, n))
        row_gram(*rows, D, has_b, False, H2)
        assert np.array_equal(H, H2)
    C = X.tocsc()
    cols = (C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data)
    Hv, u = np.empty(n), np.empty(m)
    for _ in range(3):
        v = rng.standard_normal(n)
        hess_vec(*cols, D, v, has_b, u, Hv)
        scale = max(float(np.abs(H).max()) * float(np.abs(v).sum()), 1e-300)
        assert np.abs(H @ v - Hv).max() <= 1e-10 * scale


def _onehot(seed, m=60, groups=(3, 4, 2)):
    """One-hot rows (every stored value 1, mushrooms' layout) and labels from a planted w."""
    rng = np.random.default_rng(seed)
    blocks = [np.eye(k)[rng.integers(0, k, m)] for k in groups]
    X = np.hstack(blocks)
    y = np.where(X @ rng.standard_normal(X.shape[1]) + 0.5 * rng.standard_normal(m) > 0,
                 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return sp.csr_matrix(X), y


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000), loss=st.sampled_from(["Logistic", "SquaredHinge"]),
       intercept=st.booleans())
def test_same_iterates_as_the_pairs_kernel(seed, loss, intercept):
    """The algorithm did not change: a run whose Hessians come from newton-cd's ``gram``
    (monkeypatched in) has bitwise the same objective and bound histories and x."""
    import nsopt.solvers.newton_cg as ncg

    X, y = _onehot(seed)
    J = nsopt.RegularizedRisk(getattr(L, loss)(X, y), R.L2(), 1e-3, fit_intercept=intercept)
    a = nsopt.minimize(J, method="newton-cg", model="gram", rtol=1e-8)
    with pytest.MonkeyPatch.context() as mp:
        def pairs(indptr, indices, data, D, has_b, unit, H):
            d = H.shape[0] - int(has_b)
            H[:] = K.gram(indptr, indices, data, D, np.arange(d, dtype=np.int64), H.shape[0],
                          d if has_b else -1, 0.0)
        mp.setattr(ncg, "row_gram", pairs)
        b = nsopt.minimize(J, method="newton-cg", model="gram", rtol=1e-8)
    assert a.nit == b.nit
    for key in ("fun", "lower_bound"):
        assert np.array_equal(np.asarray(a.history[key]), np.asarray(b.history[key]))
    assert np.array_equal(a.x, b.x)


def test_onehot_unit_rows_certified_against_cvxpy():
    """On one-hot data (the ``unit`` path, sparse rows) both losses (one with an intercept)
    bracket Clarabel's optimum, and ``check`` recomputes the bound."""
    X, y = _onehot(3)
    for loss, intercept in (("Logistic", True), ("SquaredHinge", False)):
        J = nsopt.RegularizedRisk(getattr(L, loss)(X, y), R.L2(), 1e-2, fit_intercept=intercept)
        res = nsopt.minimize(J, method="newton-cg", model="gram", rtol=1e-6)
        assert res.info["model"] == "gram"
        assert_dual_point_certified(J, res, 1e-6)

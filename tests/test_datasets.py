"""Tests of nsopt.datasets: synthetic generators and normalize_rows."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from nsopt.datasets import (
    make_dense_binary,
    make_multiclass,
    make_multilabel,
    make_ranking,
    make_regression,
    make_sparse_binary,
    normalize_rows,
)

GENERATORS = {
    "sparse_binary": lambda rs: make_sparse_binary(300, random_state=rs),
    "dense_binary": lambda rs: make_dense_binary(50, 4, random_state=rs),
    "dense_binary_separable": lambda rs: make_dense_binary(50, 4, separable=True, random_state=rs),
    "regression": lambda rs: make_regression(40, 5, random_state=rs),
    "multiclass": lambda rs: make_multiclass(60, 5, 4, random_state=rs),
    "multilabel": lambda rs: make_multilabel(60, 5, 3, random_state=rs),
    "ranking": lambda rs: make_ranking(5, 8, 4, random_state=rs),
}


def _as_dense(a):
    return a.toarray() if sp.issparse(a) else a


def _assert_outputs_equal(out1, out2):
    assert len(out1) == len(out2)
    for a, b in zip(out1, out2):
        np.testing.assert_array_equal(_as_dense(a), _as_dense(b))


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_deterministic_under_random_state(name):
    gen = GENERATORS[name]
    _assert_outputs_equal(gen(7), gen(7))
    _assert_outputs_equal(gen(np.random.default_rng(7)), gen(np.random.default_rng(7)))
    _assert_outputs_equal(gen(np.random.default_rng(7)), gen(7))  # an int seeds default_rng
    different = gen(8)
    assert any(not np.array_equal(_as_dense(a), _as_dense(b)) for a, b in zip(gen(7), different))
    rng = np.random.default_rng(0)
    first, second = gen(rng), gen(rng)  # a Generator is advanced, not reset
    assert any(not np.array_equal(_as_dense(a), _as_dense(b)) for a, b in zip(first, second))


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_legacy_random_state_rejected(name):
    with pytest.raises(TypeError, match="Generator"):
        GENERATORS[name](np.random.RandomState(0))


def test_sparse_binary_shapes_and_values():
    X, y = make_sparse_binary(500, 40, random_state=1)
    assert sp.isspmatrix_csr(X) and X.shape == (500, 40) and X.dtype == np.float64
    assert X.has_canonical_format
    np.testing.assert_array_equal(np.unique(X.data), [1.0])
    assert y.shape == (500,) and y.dtype == np.float64
    assert set(np.unique(y)) == {-1.0, 1.0}


def test_sparse_binary_is_a9a_like():
    # a9a: density 0.1128, 24.1% positive (README of the shared data)
    X, y = make_sparse_binary(20000, random_state=3)
    assert X.shape == (20000, 123)
    assert X.nnz / (X.shape[0] * X.shape[1]) == pytest.approx(0.11, abs=0.005)
    assert np.mean(y == 1) == pytest.approx(0.24, abs=0.02)
    # one-hot groups: every row has at most ceil(0.11 * 123) = 14 ones, most have 13 or 14
    per_row = X.getnnz(axis=1)
    assert per_row.max() <= 14 and np.mean(per_row >= 13) > 0.8


@pytest.mark.parametrize("density, noise", [(0.05, 0.0), (0.3, 0.2), (0.6, 0.1)])
def test_sparse_binary_density_and_imbalance_follow_parameters(density, noise):
    X, y = make_sparse_binary(8000, 60, density=density, noise=noise, random_state=5)
    assert X.nnz / X.shape[0] / X.shape[1] == pytest.approx(density, abs=0.01)
    assert np.mean(y == 1) == pytest.approx(0.24, abs=0.025)


def test_sparse_binary_labels_follow_a_linear_model():
    # without label noise a linear classifier (with bias) separates the classes
    X, y = make_sparse_binary(300, 30, noise=0.0, random_state=2)
    Xb = np.hstack([X.toarray(), np.ones((300, 1))])
    res = linprog(np.zeros(31), A_ub=-(y[:, None] * Xb), b_ub=-np.ones(300), bounds=(None, None))
    assert res.status == 0


def test_dense_binary():
    X, y = make_dense_binary(200, 6, random_state=0)
    assert X.shape == (200, 6) and X.dtype == np.float64 and y.dtype == np.float64
    assert set(np.unique(y)) == {-1.0, 1.0}
    for m in (2, 3):
        assert set(np.unique(make_dense_binary(m, 3, random_state=1)[1])) == {-1.0, 1.0}


@pytest.mark.parametrize("separable", [True, False])
def test_dense_binary_separability(separable):
    X, y = make_dense_binary(300, 5, separable=separable, random_state=4)
    # feasibility of y_i <w, x_i> >= 1 (no bias), by linear programming
    res = linprog(np.zeros(5), A_ub=-(y[:, None] * X), b_ub=-np.ones(300), bounds=(None, None))
    assert (res.status == 0) == separable


def test_regression():
    X, y, w = make_regression(100, 8, noise=0.0, random_state=0, n_informative=3, return_coef=True)
    assert X.shape == (100, 8) and y.shape == (100,) and w.shape == (8,)
    assert np.count_nonzero(w) == 3
    np.testing.assert_allclose(X @ w, y)
    X, y = make_regression(100, 8, noise=0.5, random_state=0)
    assert X.dtype == y.dtype == np.float64
    X, y, w = make_regression(200, 4, noise=0.0, random_state=1, outlier_fraction=0.1, return_coef=True)
    assert np.sum(~np.isclose(X @ w, y)) == 20


def test_multiclass():
    X, y = make_multiclass(101, 7, n_classes=5, random_state=0)
    assert X.shape == (101, 7) and X.dtype == np.float64
    assert y.dtype == np.int64 and y.shape == (101,)
    assert set(np.unique(y)) == set(range(5))
    counts = np.bincount(y)
    assert counts.max() - counts.min() <= 1
    with pytest.raises(ValueError, match="n_classes"):
        make_multiclass(3, 2, n_classes=4)
    with pytest.raises(ValueError, match="n_classes"):
        make_multiclass(10, 2, n_classes=1)


def test_multiclass_is_learnable():
    # nearest class mean recovers most labels with the default separation
    X, y = make_multiclass(600, 10, n_classes=3, random_state=3)
    means = np.stack([X[y == c].mean(axis=0) for c in range(3)])
    pred = np.argmin(((X[:, None, :] - means[None]) ** 2).sum(axis=2), axis=1)
    assert np.mean(pred == y) > 0.75


def test_multilabel():
    X, Y = make_multilabel(400, 9, n_labels=6, random_state=0)
    assert X.shape == (400, 9) and Y.shape == (400, 6)
    assert Y.dtype == np.float64 and set(np.unique(Y)) <= {0.0, 1.0}
    rates = Y.mean(axis=0)
    assert np.all(rates >= 0.15) and np.all(rates <= 0.55)


def test_ranking():
    X, rel, qid = make_ranking(6, 20, 5, random_state=0)
    assert X.shape == (120, 5) and rel.shape == qid.shape == (120,)
    assert rel.dtype == np.float64 and qid.dtype == np.int64
    assert set(np.unique(rel)) == {0.0, 1.0, 2.0}
    assert np.all(np.diff(qid) >= 0) and np.unique(qid).tolist() == list(range(1, 7))
    for q in range(1, 7):
        assert set(np.unique(rel[qid == q])) == {0.0, 1.0, 2.0}
    mix = np.bincount(rel.astype(int)) / rel.size
    np.testing.assert_allclose(mix, [0.65, 0.20, 0.15], atol=0.03)
    X, rel, qid = make_ranking(3, 1, 2, random_state=0)
    assert rel.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: make_sparse_binary(0), "n_samples"),
        (lambda: make_sparse_binary(10, density=0.0), "density"),
        (lambda: make_sparse_binary(10, density=1.5), "density"),
        (lambda: make_sparse_binary(10, noise=0.5), "noise"),
        (lambda: make_dense_binary(10, 0), "n_features"),
        (lambda: make_dense_binary(10, 2, margin=0), "margin"),
        (lambda: make_regression(10, 2, noise=-1), "noise"),
        (lambda: make_regression(10, 2, n_informative=3), "n_informative"),
        (lambda: make_multilabel(10, 2, n_labels=0), "n_labels"),
        (lambda: make_ranking(0), "n_queries"),
        (lambda: make_ranking(2, docs_per_query=2.5), "docs_per_query"),
    ],
)
def test_invalid_parameters(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_normalize_rows_dense():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 4))
    X[5] = 0.0
    X_before = X.copy()
    Z = normalize_rows(X)
    np.testing.assert_array_equal(X, X_before)  # input not modified
    norms = np.linalg.norm(Z, axis=1)
    np.testing.assert_allclose(np.delete(norms, 5), 1.0, rtol=1e-14)
    assert norms[5] == 0.0
    np.testing.assert_allclose(Z * np.linalg.norm(X, axis=1)[:, None], X, rtol=1e-14)
    with pytest.raises(ValueError, match="2-D"):
        normalize_rows(np.ones(3))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_normalize_rows_sparse(fmt):
    X, _ = make_sparse_binary(100, 30, random_state=0)
    X = X.asformat(fmt)
    X_before = X.copy()
    Z = normalize_rows(X)
    assert sp.isspmatrix_csr(Z) and Z.dtype == np.float64
    assert (X != X_before).nnz == 0
    norms = np.sqrt(np.asarray(Z.multiply(Z).sum(axis=1)).ravel())
    nonzero = X.getnnz(axis=1) > 0 if fmt != "coo" else X.tocsr().getnnz(axis=1) > 0
    np.testing.assert_allclose(norms[nonzero], 1.0, rtol=1e-14)
    assert np.all(norms[~nonzero] == 0.0)
    np.testing.assert_allclose(Z.toarray(), normalize_rows(X.toarray()), rtol=1e-14)

r"""The oracle call of an element-wise loss in one read of the CSR rows
(:func:`nsopt.losses._kernels.fused_kernels`, :meth:`DataMatrix.fused`).

Properties, for every element-wise loss of nsopt, on random sparse data with dyadic entries
(so that scores land exactly on kinks: the default subgradient's side must be the grad
kernel's), optional sample weights (zeros included), empty rows and one example: the fused
call is bitwise the two passes (scipy's ``X @ w``, the grad kernel, scipy's ``g @ X``) and
its derivatives and dual point too; it agrees with the dense (BLAS) evaluation to 1e-12; the
threaded blocks are deterministic and equal the serial call to 1e-12.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import nsopt
from nsopt.losses import _kernels as k
from nsopt.losses.scalar import (EpsilonInsensitive, Exponential, Hinge, Huber,
                                 LeastAbsoluteDeviation, LeastSquares, Logistic, Novelty,
                                 Poisson, Quantile, SquaredHinge)
from nsopt.testing import DYADIC_DATA, PassCounter


def _binary(rng, m):
    return np.where(rng.random(m) < 0.5, -1.0, 1.0)


def _real(rng, m):  # dyadic targets: z - y is exact, so kinks are hit exactly
    return rng.integers(-4, 5, size=m) / 4.0


#: every element-wise loss: class -> (labels, keyword parameters)
LOSSES = {
    Hinge: (_binary, {}),
    SquaredHinge: (_binary, {}),
    Logistic: (_binary, {}),
    Exponential: (_binary, {}),
    Huber: (_real, {"delta": 0.5}),
    LeastSquares: (_real, {}),
    LeastAbsoluteDeviation: (_real, {}),
    Quantile: (_real, {"tau": 0.25}),
    EpsilonInsensitive: (_real, {"epsilon": 0.25}),
    Poisson: (lambda rng, m: rng.integers(0, 4, size=m).astype(float), {}),
    Novelty: (None, {"rho": 0.5}),
}


def _make(cls, X, rng, weights):
    labels, params = LOSSES[cls]
    if labels is None:  # Novelty: no labels
        return cls(X, sample_weight=weights, **params)
    return cls(X, labels(rng, X.shape[0]), sample_weight=weights, **params)


def _two_passes(loss, w):
    """The oracle call as before the fused kernel: ``X @ w``, the grad kernel, ``g @ X``."""
    z = np.asarray(loss.data.X @ w).reshape(-1)
    g = np.empty(loss.m)
    r = loss._grad_kernel(z, loss.y, loss.c, np.zeros(loss.m), g)
    return float(r), np.asarray(g @ loss.data.X).reshape(-1), g


@st.composite
def problems(draw):
    cls = draw(st.sampled_from(sorted(LOSSES, key=lambda c: c.__name__)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.integers(1, 40))
    d = draw(st.integers(1, 8))
    density = draw(st.sampled_from([0.0, 0.2, 0.6, 1.0]))
    X = sp.random(m, d, density=density, format="csr", random_state=rng,
                  data_rvs=lambda n: rng.choice(DYADIC_DATA, size=n))
    if m > 1:  # an empty row
        X = sp.vstack([X[:m - 1], sp.csr_matrix((1, d))]).tocsr()
    weights = None
    if draw(st.booleans()):
        weights = rng.integers(0, 3, size=m).astype(float)
        weights[0] = 1.0  # not all zero
    w = rng.choice([0.0, 0.25, -0.25, 0.5, -1.0, 1.0], size=d)  # dyadic: exact scores, kinks hit
    w *= draw(st.sampled_from([1.0, 3.0, 40.0]))
    return _make(cls, X, rng, weights), w


@given(problems())
def test_fused_call_is_the_two_passes_bitwise(problem):
    loss, w = problem
    assert loss._fused_kernels() is not None
    r0, a0, g0 = _two_passes(loss, w)
    r, a = loss._value_and_subgradient(w)
    assert r == r0 or (np.isnan(r) and np.isnan(r0))
    np.testing.assert_array_equal(a, a0)
    r1, a1, t1 = loss._value_subgradient_dual(w)
    assert r1 == r0 or (np.isnan(r1) and np.isnan(r0))
    np.testing.assert_array_equal(a1, a0)
    t0 = loss._dual_of_gradient(g0)
    if t0 is None:
        assert t1 is None
    else:
        np.testing.assert_array_equal(t1, t0)
    # the dense (BLAS) evaluation of the same loss, to 1e-12
    dense = type(loss).__new__(type(loss))
    dense.__dict__.update(loss.__dict__)
    dense.data = k.DataMatrix(loss.data.X.toarray())
    assert dense._fused_kernels() is None
    rd, ad = dense._value_and_subgradient(w)
    if np.isfinite(r0):
        assert abs(rd - r) <= 1e-12 * max(1.0, abs(r))
        np.testing.assert_allclose(ad, a, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(a).max()))


def _sparse(m, d, seed, density=0.3):
    rng = np.random.default_rng(seed)
    return sp.random(m, d, density=density, format="csr", random_state=rng,
                     data_rvs=lambda n: rng.normal(size=n)), rng


@pytest.mark.parametrize("cls", [Hinge, Huber])
def test_threaded_blocks_are_deterministic_and_equal_the_serial_call(cls, monkeypatch):
    """Above PARALLEL_MIN_NNZ (forced here) the row blocks run in threads: the same bits on
    every call and for every thread count's own blocks, the serial answer to 1e-12 (with
    two and three blocks, and a block of no rows)."""
    X, rng = _sparse(301, 17, 0)
    loss = _make(cls, X, rng, rng.random(301))
    w = rng.normal(size=17)
    r0, a0 = loss._value_and_subgradient(w)
    g0 = np.empty(loss.m)
    loss._grad_kernel(np.asarray(X @ w), loss.y, loss.c, np.zeros(loss.m), g0)
    loss.data.parallel = True
    for n in (2, 3, 400):  # 400 blocks for 301 rows: empty blocks
        monkeypatch.setattr(k, "get_num_threads", lambda n=n: n)
        g = np.empty(loss.m)
        fused = loss._fused_kernels()
        params = [getattr(loss, p) for p in loss.kernel_params]
        r, a = loss.data.fused(fused, w, loss.y, loss.c, g, params)
        r2, a2 = loss.data.fused(fused, w, loss.y, loss.c, np.empty(loss.m), params)
        assert r == r2 and np.array_equal(a, a2)
        assert abs(r - r0) <= 1e-12 * abs(r0)
        np.testing.assert_allclose(a, a0, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(g, g0)  # each example's derivative: no reduction


def test_start_continues_the_running_sum():
    """``start`` is the running sum's first value, as the grad kernel's (the ordered shards'
    continuation): a split continued through it is bitwise the one-call sum."""
    X, rng = _sparse(60, 9, 1)
    y = np.where(rng.random(60) < 0.5, -1.0, 1.0)
    c = rng.random(60)
    w = rng.normal(size=9)
    fused = k.FUSED_KERNELS[k.logistic_grad]
    whole = fused(X.indptr, X.indices, X.data, w, y, c, np.empty(60), np.zeros(9))
    head = fused(X.indptr[:24], X.indices, X.data, w, y[:23], c[:23], np.empty(23), np.zeros(9))
    tail = fused(X.indptr[23:], X.indices, X.data, w, y[23:], c[23:], np.empty(37), np.zeros(9),
                 head)
    assert tail == whole
    assert fused(X.indptr, X.indices, X.data, w, y, c, np.empty(60), np.zeros(9), 0.0) == whole


def test_one_example_and_all_rows_empty():
    X = sp.csr_matrix(np.array([[0.0, 2.0, 0.0]]))
    loss = Hinge(X, np.array([1.0]))
    r, a = loss._value_and_subgradient(np.array([0.0, 0.5, 3.0]))  # margin exactly 1: kink
    assert r == 0.0 and np.array_equal(a, np.zeros(3))  # the hinge's default subgradient 0
    r, a = loss._value_and_subgradient(np.array([0.0, 0.25, 3.0]))
    assert r == 0.5 and np.array_equal(a, [0.0, -2.0, 0.0])
    loss = Logistic(sp.csr_matrix((4, 3)), np.array([1.0, -1.0, 1.0, 1.0]))
    r, a = loss._value_and_subgradient(np.ones(3))
    assert r == np.log(2.0) and np.array_equal(a, np.zeros(3))


def test_used_by_the_oracle_call_and_counted_as_one_pass():
    """A sparse risk's oracle call goes through the fused kernel (one read: the pass counter
    counts both halves once); the line's kept-margin paths still use the two passes; an
    intercept's ``[X 1]``, dense data and an overridden grad kernel do not take it."""
    X, y = nsopt.datasets.make_sparse_binary(120, 10, random_state=0)
    loss = Hinge(X, y)
    counter = PassCounter(loss.data)
    J = nsopt.RegularizedRisk(loss, lam=1e-2)
    calls = []
    fused = loss.data.fused
    loss.data.fused = lambda *a, **kw: calls.append(1) or fused(*a, **kw)
    J.value_and_subgradient(np.full(10, 0.1))
    assert calls == [1] and counter.passes() == 1.0
    J.restrict(np.zeros(10), np.ones(10))
    assert calls == [1] and counter.dots == 3  # the line: X w and X p
    assert Hinge(X.toarray(), y)._fused_kernels() is None
    Jb = nsopt.RegularizedRisk(Hinge(X, y), lam=1e-2, fit_intercept=True)
    assert type(Jb.loss.data) is not k.DataMatrix and Jb.loss._fused_kernels() is None
    other = Hinge(X, y)
    other._grad_kernel = lambda *a: Hinge._grad_kernel(other, *a)
    assert other._fused_kernels() is None

"""The QP master's fast paths (issue 11, per-iteration overhead) give the same bits as the
general code they shortcut: the direct gelsy call against scipy's ``lstsq``, the fused
extremes against numpy's reductions, the one-model ``feasible`` against the per-model sums,
and the shared one-block structure against a fresh one."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.linalg import lstsq

from nsopt.bundle import PlaneBundle
from nsopt.inner._base import bundle_blocks
from nsopt.inner._simplex import Blocks
from nsopt.inner.qp_simplex import _fused_extremes, _lstsq

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 9), seed=st.integers(0, 2**32 - 1), rank=st.integers(0, 9))
def test_lstsq_is_scipys_gelsy_bit_for_bit(k, seed, rank):
    """The same LAPACK routine, workspace and cond: identical solutions, singular K included."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((k, min(rank, k)))
    K = B @ B.T if rank < k else rng.standard_normal((k, k))
    rhs = rng.standard_normal(k)
    expected = lstsq(K, rhs, lapack_driver="gelsy", check_finite=False)[0]
    got = _lstsq(K, rhs)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(1, 40))
def test_fused_extremes_equal_numpys_reductions(data, n):
    grad = data.draw(hnp.arrays(np.float64, n, elements=finite))
    b = data.draw(hnp.arrays(np.float64, n, elements=finite))
    alpha = data.draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 0.25, 1.0])))
    blocks = Blocks.single(n)
    fused = _fused_extremes(alpha, grad, b, blocks)
    if not (alpha > 0).any():
        assert fused is None  # numpy's min over an empty support raises: left to it
        return
    viol, dev = fused
    assert viol == blocks.violation(alpha, grad)
    assert dev == np.abs(grad - b).max()


@pytest.mark.parametrize("bad", ["nan_grad", "inf_minus_inf", "strided", "multi"])
def test_fused_extremes_decline_what_numpy_must_decide(bad):
    n = 6
    alpha = np.full(n, 1.0 / n)
    grad = np.arange(n, dtype=float)
    b = np.zeros(n)
    blocks = Blocks.single(n)
    if bad == "nan_grad":
        grad[2] = np.nan
    elif bad == "inf_minus_inf":
        grad[1] = b[1] = np.inf
    elif bad == "strided":
        grad = np.arange(2 * n, dtype=float)[::2]
    else:
        blocks = Blocks(np.array([0, 0, 0, 1, 1, 1]), 2)
    assert _fused_extremes(alpha, grad, b, blocks) is None


@settings(max_examples=60, deadline=None)
@given(alpha=hnp.arrays(np.float64, st.integers(1, 30),
                        elements=st.floats(-1.0, 1e3, allow_nan=False)))
def test_one_model_feasible_equals_the_per_model_sums(alpha):
    """The one-model path divides by its one total: the quotients of the general formula."""
    bundle = PlaneBundle(2)
    for i in range(alpha.size):
        bundle.add(np.array([float(i), 1.0]), float(i))
    got = bundle.feasible(alpha)
    clipped = np.maximum(alpha, 0.0)
    sums = np.bincount(np.zeros(alpha.size, dtype=np.int64), weights=clipped, minlength=1)
    expected = (np.full(alpha.size, 1.0 / alpha.size) if np.any(sums <= 0)
                else clipped / sums[np.zeros(alpha.size, dtype=np.int64)])
    assert np.array_equal(got, expected)
    assert got.min() >= 0 and abs(got.sum() - 1.0) <= 1e-12


def test_shared_one_block_structure_matches_a_fresh_one():
    bundle = PlaneBundle(3)
    for i in range(5):
        bundle.add(np.array([1.0, float(i), 0.0]), 0.0)
    first, again = bundle_blocks(bundle), bundle_blocks(bundle)
    fresh = Blocks.single(5)
    assert first is again  # shared, not rebuilt per call
    assert first.n == fresh.n == 5 and first.n_blocks == 1
    assert np.array_equal(first.labels, fresh.labels)
    assert np.array_equal(first.counts, fresh.counts)
    bundle.add(np.array([0.0, 0.0, 1.0]), 1.0)
    assert bundle_blocks(bundle).n == 6

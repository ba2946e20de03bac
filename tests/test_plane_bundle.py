"""PlaneBundle: the Gram matrix kept exact through add/drop/permute, model labels (several
cutting-plane models, [UF12] Sec. 3.3) following every operation, aggregation and compression
keeping the dual value (C8) for one model and per model, growth, and the errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

from nsopt import regularizers as R
from nsopt.bundle import PlaneBundle
from nsopt.inner import QPSimplex

# integer slopes and an integer metric: every product and sum below is exact in floating point,
# so the Gram matrix kept by the bundle must equal A M A^T bit for bit
_B = np.array([[2, 1, 0, 0], [0, 1, -1, 0], [1, 0, 1, 1], [0, 0, 1, 2]], dtype=float)
METRIC = _B @ _B.T  # symmetric positive definite, integer


def metric(a):
    return METRIC @ a


def reference_gram(bundle):
    M = np.eye(bundle.dim) if bundle.metric is None else METRIC
    return bundle.A @ M @ bundle.A.T


class Reference:
    """The planes as a plain list of (a, b, block, age): what the bundle must hold."""

    def __init__(self):
        self.rows = []

    def check(self, bundle):
        assert bundle.n == len(self.rows) == len(bundle)
        if self.rows:
            A = np.array([r[0] for r in self.rows])
            np.testing.assert_array_equal(bundle.A, A)
            np.testing.assert_array_equal(bundle.b, [r[1] for r in self.rows])
            np.testing.assert_array_equal(bundle.block, [r[2] for r in self.rows])
            np.testing.assert_array_equal(bundle.age, [r[3] for r in self.rows])
            if bundle.metric is not None:
                np.testing.assert_array_equal(bundle.MA, A @ METRIC)
        assert bundle.block.dtype.kind == "i"
        np.testing.assert_array_equal(bundle.G, reference_gram(bundle))
        np.testing.assert_array_equal(bundle.G, bundle.G.T)


@pytest.mark.parametrize("with_metric", [False, True])
@pytest.mark.parametrize("n_blocks", [1, 3])
def test_add_drop_permute_keep_gram_and_labels(with_metric, n_blocks):
    rng = np.random.default_rng(n_blocks + 10 * with_metric)
    d = 4
    bundle = PlaneBundle(d, metric=metric if with_metric else None, capacity=3,
                         n_blocks=n_blocks)
    ref = Reference()
    for p in range(n_blocks):  # one fixed floor per model
        assert bundle.add_fixed(np.zeros(d), -1.0 - p, block=p) == p
        ref.rows.append((np.zeros(d), -1.0 - p, p, 0))
    assert bundle.n_fixed == n_blocks
    ref.check(bundle)
    for step in range(12):
        for _ in range(int(rng.integers(1, 6))):
            a = rng.integers(-4, 5, d).astype(float)
            b0 = float(rng.integers(-9, 10))
            p = int(rng.integers(n_blocks))
            if rng.random() < 0.5:
                i = bundle.add(a, b0, block=p)
            else:  # add_at: the plane of a function with that value and slope at w
                w = rng.integers(-3, 4, d).astype(float)
                i = bundle.add_at(w, b0 + float(a @ w), a, block=p)
            assert i == len(ref.rows)
            ref.rows.append((a, b0, p, 0))
        ref.check(bundle)
        alpha = rng.random(bundle.n) * (rng.random(bundle.n) < 0.5)
        bundle.update_ages(alpha)
        ref.rows = [(a, b0, p, 0 if alpha[i] > 0 else age + 1)
                    for i, (a, b0, p, age) in enumerate(ref.rows)]
        ref.check(bundle)
        mask = rng.random(bundle.n) < 0.3
        keep = bundle.drop(mask)
        expect = [i for i in range(len(ref.rows)) if i < n_blocks or not mask[i]]
        np.testing.assert_array_equal(keep, expect)  # fixed planes are never dropped
        ref.rows = [ref.rows[i] for i in expect]
        ref.check(bundle)
        order = np.concatenate([np.arange(n_blocks),
                                n_blocks + rng.permutation(bundle.n - n_blocks)])
        bundle._permute(order)
        ref.rows = [ref.rows[i] for i in order]
        ref.check(bundle)


def test_growth_beyond_initial_capacity():
    d, P = 4, 3
    bundle = PlaneBundle(d, metric=metric, capacity=2, n_blocks=P)
    ref = Reference()
    rng = np.random.default_rng(1)
    for k in range(70):
        a = rng.integers(-3, 4, d).astype(float)
        bundle.add(a, float(k), block=k % P)
        ref.rows.append((a, float(k), k % P, 0))
    assert bundle._b.shape[0] >= 70 and bundle._block.shape[0] == bundle._b.shape[0]
    ref.check(bundle)
    assert np.bincount(bundle.block).tolist() == [24, 23, 23]


# --- aggregation and compression keep the dual value (C8) ---------------------------------------
def solved_bundle(P, n, d=6, seed=0, lam=0.05, fixed=True):
    """A bundle with one fixed floor per model and ``n`` planes, and its master multipliers."""
    rng = np.random.default_rng(seed)
    bundle = PlaneBundle(d, n_blocks=P)
    if fixed:
        for p in range(P):
            bundle.add_fixed(np.zeros(d), -2.0, block=p)
    for k in range(n):
        bundle.add(rng.standard_normal(d), rng.standard_normal(), block=k % P)
    alpha = QPSimplex().solve(bundle, R.L2(), lam).alpha
    return bundle, alpha, lam


def block_sums(bundle, alpha):
    return np.bincount(bundle.block, weights=alpha, minlength=bundle.n_blocks)


def dual(bundle, alpha, lam):
    return bundle.lower_bound(R.L2(), lam, alpha)


def test_aggregate_keeps_dual_value_one_model():
    bundle, alpha, lam = solved_bundle(1, 30)
    before = dual(bundle, alpha, lam)
    index = np.array([1, 4, 5, 9, 12, 20])
    rest = np.setdiff1d(np.arange(bundle.n), index)
    a_hat, b_hat, alpha_hat = bundle.aggregate(alpha, index)
    assert alpha_hat == pytest.approx(alpha[index].sum(), abs=1e-15)
    new_alpha = np.append(alpha[rest], alpha_hat)
    assert bundle.n == rest.size + 1
    np.testing.assert_array_equal(bundle.A[-1], a_hat)
    assert bundle.b[-1] == b_hat
    assert dual(bundle, new_alpha, lam) == pytest.approx(before, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(bundle.G, bundle.A @ bundle.A.T, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("p", [0, 1, 2])
def test_aggregate_keeps_dual_value_per_model(p):
    bundle, alpha, lam = solved_bundle(3, 45, seed=p)
    before = dual(bundle, alpha, lam)
    labels = bundle.block.copy()
    index = np.flatnonzero((labels == p) & (np.arange(bundle.n) >= bundle.n_fixed))[::2]
    rest = np.setdiff1d(np.arange(bundle.n), index)
    _, _, alpha_hat = bundle.aggregate(alpha, index)
    new_alpha = np.append(alpha[rest], alpha_hat)
    assert bundle.block[-1] == p  # the aggregate belongs to the model of its planes
    np.testing.assert_array_equal(bundle.block[:-1], labels[rest])
    np.testing.assert_allclose(block_sums(bundle, new_alpha), 1.0, atol=1e-14)
    assert dual(bundle, new_alpha, lam) == pytest.approx(before, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(bundle.G, bundle.A @ bundle.A.T, rtol=1e-13, atol=1e-13)


def test_aggregate_of_zero_multipliers_is_a_plain_average():
    bundle = PlaneBundle(2, n_blocks=2)
    bundle.add(np.array([1.0, 0.0]), 1.0, block=1)
    bundle.add(np.array([3.0, 2.0]), 3.0, block=1)
    bundle.add(np.array([0.0, 5.0]), 0.0, block=0)
    a_hat, b_hat, alpha_hat = bundle.aggregate(np.array([0.0, 0.0, 1.0]), [0, 1])
    assert alpha_hat == 0.0 and b_hat == 2.0
    np.testing.assert_array_equal(a_hat, [2.0, 1.0])
    assert bundle.block.tolist() == [0, 1]


@pytest.mark.parametrize("keep_newest", [None, 3])
def test_compress_one_model_both_policies(keep_newest):
    bundle, alpha, lam = solved_bundle(1, 40, seed=3)
    before = dual(bundle, alpha, lam)
    A_old, b_old = bundle.A.copy(), bundle.b.copy()
    max_planes = bundle.n  # full: the solver compresses before adding plane max_planes + 1
    new_alpha = bundle.compress(alpha, max_planes, keep_newest=keep_newest)
    assert bundle.n < max_planes
    assert new_alpha.shape == (bundle.n,)
    assert new_alpha.sum() == pytest.approx(1.0, abs=1e-14)
    assert dual(bundle, new_alpha, lam) == pytest.approx(before, rel=1e-12, abs=1e-14)
    np.testing.assert_array_equal(bundle.A[0], A_old[0])  # the fixed floor stays first
    assert bundle.n_fixed == 1 and bundle.b[0] == b_old[0]
    np.testing.assert_allclose(bundle.G, bundle.A @ bundle.A.T, rtol=1e-13, atol=1e-13)
    if keep_newest is not None:  # [fixed, aggregate, the k newest in order]
        assert bundle.n == 1 + 1 + keep_newest
        np.testing.assert_array_equal(bundle.A[2:], A_old[-keep_newest:])
    assert np.all(bundle.block == 0)


def test_compress_one_model_matches_the_documented_bmrm_policy():
    """keep_newest=None: zero multipliers go first; if still full, the older half of the
    non-fixed planes becomes one aggregate placed right after the fixed planes."""
    rng = np.random.default_rng(4)
    d = 3
    bundle = PlaneBundle(d)
    bundle.add_fixed(np.zeros(d), -1.0)
    for _ in range(9):
        bundle.add(rng.standard_normal(d), rng.standard_normal())
    alpha = np.full(10, 0.1)
    A_old = bundle.A.copy()
    new_alpha = bundle.compress(alpha, max_planes=10)
    # no zero multiplier: planes 1..4 (the older half of 9) aggregated, placed at index 1
    assert bundle.n == 1 + 1 + 5
    np.testing.assert_allclose(bundle.A[1], A_old[1:5].mean(axis=0), rtol=1e-14)
    np.testing.assert_array_equal(bundle.A[2:], A_old[5:])
    np.testing.assert_allclose(new_alpha, [0.1, 0.4] + [0.1] * 5, rtol=1e-14)
    # with zero multipliers below the limit, dropping them is enough
    alpha = np.append(new_alpha, 0.0)
    bundle.add(np.ones(d), 0.0)
    alpha[3] = 0.0
    alpha[1] += 0.1
    out = bundle.compress(alpha, max_planes=8)
    assert bundle.n == 6 and out.tolist() == [0.1, 0.5, 0.1, 0.1, 0.1, 0.1]
    np.testing.assert_array_equal(bundle.compress(out, max_planes=8), out)  # not full
    assert bundle.n == 6


@pytest.mark.parametrize("keep_newest", [None, 2])
@pytest.mark.parametrize("p", [0, 2])
def test_compress_per_model(keep_newest, p):
    P = 3
    bundle, alpha, lam = solved_bundle(P, 3 * 12, seed=5 + p)
    before = dual(bundle, alpha, lam)
    labels_old, A_old, b_old = bundle.block.copy(), bundle.A.copy(), bundle.b.copy()
    max_planes = int(np.count_nonzero(labels_old == p))  # model p is exactly full
    others = labels_old != p
    new_alpha = bundle.compress(alpha, max_planes, keep_newest=keep_newest, block=p)
    in_p = bundle.block == p
    assert np.count_nonzero(in_p) < max_planes  # room made in model p ...
    # ... and only there: the other models' planes are untouched, in their order
    np.testing.assert_array_equal(bundle.A[bundle.block != p], A_old[others])
    np.testing.assert_array_equal(bundle.b[bundle.block != p], b_old[others])
    np.testing.assert_array_equal(new_alpha[bundle.block != p], alpha[others])
    # fixed floors (one per model) still lead
    assert bundle.n_fixed == P and bundle.block[:P].tolist() == list(range(P))
    np.testing.assert_array_equal(bundle.b[:P], -2.0)
    np.testing.assert_allclose(block_sums(bundle, new_alpha), 1.0, atol=1e-14)
    assert dual(bundle, new_alpha, lam) == pytest.approx(before, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(bundle.G, bundle.A @ bundle.A.T, rtol=1e-13, atol=1e-13)
    rows_p = np.flatnonzero(in_p)
    old_rows_p = np.flatnonzero(labels_old == p)
    if keep_newest is not None:  # [floor, aggregate, the k newest] within model p
        assert rows_p.size == 1 + 1 + keep_newest
        np.testing.assert_array_equal(bundle.A[rows_p[2:]], A_old[old_rows_p[-keep_newest:]])
        # the aggregate sits where the oldest plane it replaced was
        assert rows_p[1] == old_rows_p[1]


def test_compress_per_model_does_nothing_when_the_model_has_room():
    bundle, alpha, lam = solved_bundle(3, 12, seed=9)
    n = bundle.n
    out = bundle.compress(alpha, max_planes=6, block=1)  # 5 planes in model 1: room left
    assert bundle.n == n
    np.testing.assert_array_equal(out, alpha)


# --- model, combine, lower bound over the product of simplices ---------------------------------
def test_model_is_the_sum_of_per_model_maxima():
    rng = np.random.default_rng(6)
    d, P = 4, 3
    bundle = PlaneBundle(d, n_blocks=P)
    assert bundle.model(np.zeros(d)) == -math.inf
    for k in range(15):
        bundle.add(rng.standard_normal(d), rng.standard_normal(), block=k % P)
    w = rng.standard_normal(d)
    values = bundle.A @ w + bundle.b
    expect = sum(values[bundle.block == p].max() for p in range(P))
    assert bundle.model(w) == pytest.approx(expect, rel=1e-15)
    single = PlaneBundle(d)
    for a, b0 in zip(bundle.A, bundle.b):
        single.add(a, b0)
    assert single.model(w) == values.max()
    gap = PlaneBundle(d, n_blocks=2)
    gap.add(np.ones(d), 0.0, block=0)
    assert gap.model(w) == -math.inf  # model 1 has no plane yet


@pytest.mark.parametrize("reg", [R.L2(), R.L1()], ids=["L2", "L1"])
def test_lower_bound_is_valid_on_the_product_of_simplices(reg):
    """Weak duality: at any alpha in the product, b^T alpha - lam Omega*(-A^T alpha / lam) is
    below lam Omega(w) + sum_p max_{i in p} (<a_i, w> + b_i) at every w."""
    rng = np.random.default_rng(7)
    d, P, lam = 5, 4, 0.5
    bundle = PlaneBundle(d, n_blocks=P)
    for p in range(P):
        bundle.add_fixed(np.zeros(d), 0.0, block=p)
    for k in range(24):
        bundle.add(0.1 * rng.standard_normal(d), rng.standard_normal(), block=k % P)
    for _ in range(20):
        alpha = rng.random(bundle.n)
        alpha /= block_sums(bundle, alpha)[bundle.block]
        a_bar, b_bar = bundle.combine(alpha)
        np.testing.assert_allclose(a_bar, alpha @ bundle.A)
        lower = bundle.lower_bound(reg, lam, alpha)
        assert math.isfinite(lower)
        for _ in range(20):
            w = rng.standard_normal(d) * 3
            assert lower <= lam * reg.value(w) + bundle.model(w) + 1e-12


# --- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("block", [-1, 3, 1.5, True, "0", None])
def test_bad_block_index_is_an_error(block):
    bundle = PlaneBundle(2, n_blocks=3)
    with pytest.raises(ValueError, match="block"):
        bundle.add(np.ones(2), 0.0, block=block)
    with pytest.raises(ValueError, match="block"):
        bundle.add_fixed(np.ones(2), 0.0, block=block)
    with pytest.raises(ValueError, match="block"):
        bundle.add_at(np.zeros(2), 0.0, np.ones(2), block=block)
    bundle.add(np.ones(2), 0.0, block=np.int64(2))  # numpy integers are fine
    with pytest.raises(ValueError, match="block"):
        bundle.compress(np.ones(1), 1, block=block)
    assert bundle.n == 1 and bundle.block.tolist() == [2]
    with pytest.raises(ValueError, match="block"):
        PlaneBundle(2).add(np.ones(2), 0.0, block=1)  # one model: only block 0


@pytest.mark.parametrize("n_blocks", [0, -2, 2.0, True])
def test_bad_number_of_models_is_an_error(n_blocks):
    with pytest.raises(ValueError, match="n_blocks"):
        PlaneBundle(3, n_blocks=n_blocks)


def test_cross_model_aggregation_is_an_error():
    bundle = PlaneBundle(2, n_blocks=2)
    bundle.add(np.ones(2), 0.0, block=0)
    bundle.add(np.zeros(2), 1.0, block=1)
    bundle.add(-np.ones(2), 0.0, block=0)
    alpha = np.array([0.5, 1.0, 0.5])
    with pytest.raises(ValueError, match="one model"):
        bundle.aggregate(alpha, [0, 1])
    with pytest.raises(ValueError, match="one model"):
        bundle.aggregate(alpha)  # all planes: two models
    with pytest.raises(ValueError, match="at least one"):
        bundle.aggregate(alpha, [])
    assert bundle.n == 3  # nothing changed
    bundle.aggregate(alpha, [0, 2])
    assert bundle.block.tolist() == [1, 0]


def test_fixed_planes_only_first():
    bundle = PlaneBundle(2, n_blocks=2)
    bundle.add_fixed(np.zeros(2), 0.0, block=0)
    bundle.add(np.ones(2), 0.0, block=1)
    with pytest.raises(RuntimeError, match="fixed"):
        bundle.add_fixed(np.zeros(2), 0.0, block=1)

"""nsopt.testing.kink_points for users' functions (``kinks=``): the points are on kinks, and a
kink bug in a user's oracle is caught there and not on random points."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nsopt
from nsopt.testing import (
    KinkPlanes,
    MaxPieces,
    check_oracle,
    kink_points,
    piecewise_linear_max,
    random_scalar_loss,
)


# ---------------------------------------------------------------------------------------
# Two users' functions, each with a correct oracle and one with a kink bug
# ---------------------------------------------------------------------------------------
def l1_oracle(d, correct=True):
    """||w||_1; the buggy one answers sup_subgradient with sign(w), 0 on the zeros."""
    sup = None
    if correct:
        def sup(w, p):
            g = np.where(w != 0, np.sign(w), np.sign(p))
            return float(g @ p), g
    return nsopt.FunctionOracle(lambda w: float(np.abs(w).sum()), lambda w: np.sign(w), dim=d,
                                sup_subgradient=sup)


def max_affine_oracle(A, b, correct=True):
    """max_k <a_k, w> + b_k; the buggy one answers sup_subgradient with the first maximiser,
    ignoring the other tied pieces."""
    def value(w):
        return float(np.max(A @ w + b))

    def subgradient(w):
        return A[int(np.argmax(A @ w + b))].copy()

    def sup(w, p):
        v = A @ w + b
        tied = np.flatnonzero(v == v.max())
        k = tied[int(np.argmax(A[tied] @ p))] if correct else tied[0]
        return float(A[k] @ p), A[k].copy()

    return nsopt.FunctionOracle(value, subgradient, dim=A.shape[1], sup_subgradient=sup)


def axis_directions(d):
    """+-e_j for every j: along one of them a kink's two sides always differ."""
    return np.vstack([np.eye(d), -np.eye(d)])


def one_sided(oracle, w, p):
    """(f'(w; p), -f'(w; -p)): equal exactly where f is differentiable along p."""
    return oracle.sup_subgradient(w, p)[0], -oracle.sup_subgradient(w, -p)[0]


@st.composite
def max_affine(draw, d=(1, 4), exact=True):
    """2 to 6 pieces with dyadic intercepts, not all parallel. ``exact``: slopes in
    {-c, 0, c} per coordinate (c a power of two, as for the l1 and l-inf norms written as
    maxima), so every slope difference is a power of two and ties are reached exactly; else
    any dyadic slopes (multiples of 1/4), where ties hold up to rounding."""
    dim = draw(st.integers(*d))
    k = draw(st.integers(2, 6))
    if exact:
        c = 2.0 ** np.array(draw(st.lists(st.integers(-2, 1), min_size=dim, max_size=dim)))
        signs = np.array(draw(st.lists(st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=dim,
                                                max_size=dim), min_size=k, max_size=k)))
        A = signs * c
    else:
        A = draw(piecewise_linear_max(dim, pieces=(k, k), ties=False)).A
    b = np.array(draw(st.lists(st.integers(-16, 16), min_size=k, max_size=k)), dtype=float) / 4
    if np.ptp(A, axis=0).max() == 0:  # all pieces parallel: make one steeper along axis 0
        A = A.copy()
        A[0, 0] += 1.0 if A[0, 0] <= 0 else -1.0
    return A, b


# ---------------------------------------------------------------------------------------
# The points are on kinks
# ---------------------------------------------------------------------------------------
@given(data=st.data())
def test_kink_planes_put_l1_points_on_zeros(data):
    d = data.draw(st.integers(1, 6))
    w = data.draw(kink_points(l1_oracle(d), max_kinks=3, kinks=lambda w: KinkPlanes(np.eye(d), np.zeros(d))))
    zeros = np.flatnonzero(w == 0.0)  # the drawn point may have zeros of its own
    assert zeros.size >= 1, w
    oracle = l1_oracle(d)
    for j in zeros:  # the subdifferential's j-th coordinate is [-1, 1]: the sides disagree
        right, left = one_sided(oracle, w, np.eye(d)[j])
        assert (right, left) == (1.0, -1.0)


@given(data=st.data())
def test_max_pieces_put_points_where_two_pieces_tie_at_the_top(data):
    A, b = data.draw(max_affine())
    oracle = max_affine_oracle(A, b)
    w = data.draw(kink_points(oracle, kinks=lambda w: MaxPieces(A, b)))
    v = A @ w + b
    tied = np.flatnonzero(v == v.max())  # exact: dyadic data, exact divisions preferred
    slopes = np.unique(A[tied], axis=0)
    assert slopes.shape[0] >= 2, (A, b, w, v)
    # not a singleton: along p = a_k - a_i the right derivative is max_tied <a, p> >= |p|^2 / 2
    # above the left one, min_tied <a, p>
    p = slopes[1] - slopes[0]
    right, left = one_sided(oracle, w, p)
    assert right - left >= p @ p - 1e-12
    # the same through nsopt's own Max (its ties use a relative tolerance of 1e-12)
    right_max, left_max = one_sided(nsopt.Max([nsopt.FunctionOracle(
        lambda w, a=a, c=c: float(a @ w + c), lambda w, a=a: a.copy(), dim=A.shape[1])
        for a, c in zip(A, b)]), w, p)
    assert right_max == pytest.approx(right) and left_max == pytest.approx(left)


@given(data=st.data())
def test_max_pieces_with_any_slopes_tie_up_to_rounding(data):
    A, b = data.draw(max_affine(exact=False))
    w = data.draw(kink_points(max_affine_oracle(A, b), kinks=lambda w: MaxPieces(A, b)))
    v = A @ w + b
    scale = np.abs(A) @ np.abs(w) + np.abs(b)
    near = np.flatnonzero(v >= v.max() - 1e-12 * (1 + scale.max()))
    assert np.unique(A[near], axis=0).shape[0] >= 2, (A, b, w, v)


@given(data=st.data())
def test_the_losses_path_still_puts_examples_on_their_kinks(data):
    loss = data.draw(random_scalar_loss("hinge", dyadic=True, m=(1, 8), d=(1, 5)))
    w = data.draw(kink_points(loss))
    X = loss.data.X.toarray() if hasattr(loss.data.X, "toarray") else np.asarray(loss.data.X)
    if np.any(X != 0):
        assert np.any(X @ w == loss.kinks())  # y_i <x_i, w> = 1, exactly
    # the same strategy through kinks=, with the loss's own planes, gives the same points
    same = data.draw(kink_points(loss, kinks=lambda w: KinkPlanes(loss.data.X, loss.kinks())))
    if np.any(X != 0):
        assert np.any(X @ same == loss.kinks())


@given(data=st.data())
def test_a_user_point_is_returned_as_is(data):
    d = data.draw(st.integers(1, 4))
    point = np.arange(d, dtype=float)
    w = data.draw(kink_points(l1_oracle(d), kinks=lambda w: point))
    np.testing.assert_array_equal(w, point)


# ---------------------------------------------------------------------------------------
# A planted kink bug: caught on kink points, not on random points
# ---------------------------------------------------------------------------------------
@given(data=st.data())
def test_kink_points_catch_the_max_affine_tie_bug(data):
    A, b = data.draw(max_affine())
    w = data.draw(kink_points(max_affine_oracle(A, b), kinks=lambda w: MaxPieces(A, b)))
    d = A.shape[1]
    check_oracle(max_affine_oracle(A, b), points=w, directions=axis_directions(d), n=2 * d)
    with pytest.raises(AssertionError, match="directional derivative"):
        check_oracle(max_affine_oracle(A, b, correct=False), points=w,
                     directions=axis_directions(d), n=2 * d)


@given(data=st.data())
def test_kink_points_catch_the_l1_sign_bug(data):
    d = data.draw(st.integers(1, 6))
    w = data.draw(kink_points(l1_oracle(d), kinks=lambda w: KinkPlanes(np.eye(d), np.zeros(d))))
    check_oracle(l1_oracle(d), points=w, directions=axis_directions(d), n=2 * d)
    with pytest.raises(AssertionError, match="directional derivative"):
        check_oracle(l1_oracle(d, correct=False), points=w, directions=axis_directions(d), n=2 * d)


@given(data=st.data(), seed=st.integers(0, 2**16))
def test_random_points_miss_both_bugs(data, seed):
    # check_oracle's own random points (normal, continuous): no ties, no zeros, almost surely
    A, b = data.draw(max_affine())
    d = A.shape[1]
    check_oracle(max_affine_oracle(A, b, correct=False), seed=seed, n=10)
    check_oracle(l1_oracle(d, correct=False), seed=seed, n=10)


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------
@given(data=st.data())
def test_a_user_oracle_without_kinks_is_refused(data):
    with pytest.raises(TypeError, match="kinks="):
        data.draw(kink_points(l1_oracle(3)))


@given(data=st.data())
def test_kinks_must_describe_the_kinks(data):
    with pytest.raises(TypeError, match="KinkPlanes"):
        data.draw(kink_points(l1_oracle(3), kinks=lambda w: (np.eye(3), np.zeros(3))))
    with pytest.raises(TypeError, match="callable"):
        data.draw(kink_points(l1_oracle(3), kinks=KinkPlanes(np.eye(3), np.zeros(3))))
    with pytest.raises(ValueError, match="normals must have shape"):
        data.draw(kink_points(l1_oracle(3), kinks=lambda w: KinkPlanes(np.eye(2), np.zeros(2))))

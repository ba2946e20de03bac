"""Hypothesis laws of the structured hinge ([TVSL10] eq. 24, App. A.2) on tiny chains, checked
against brute-force enumeration of every label sequence (length <= 5, n_states <= 3).

The reference is written independently of nsopt: the joint feature of each labelling is
formed by einsum/add.at from the one-hot labels, the label loss is the normalised Hamming
count, and the loss is the maximum over the enumerated labellings. Data and points are dyadic
(data entries in {0, +-1/2, +-1, +-2}, points on a grid of 1/4), so scores are exact and
ties between labellings are common (at w = 0 every labelling with the most errors ties);
the loss values differ from each other by far more than the tie tolerance used here.

Requirements of the 000 notes: A9 (Lemma 8), A10 (majorization); the rest are the oracle
laws: subgradient inequality, sup-subgradient as the directional derivative at ties (the
maximum over tied maximisers of <phi(y') - phi(y), p>), group sums (A11-like).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from nsopt.losses.structured import ChainHinge, StructuredHinge

DYADIC = (0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0)
TIE = 1e-9  # ties in the brute force: values within TIE (relative); distinct values differ by >> TIE


@pytest.fixture(autouse=True, scope="module")
def _compile_once():
    """Trigger numba compilation (or the cache load) before hypothesis times anything."""
    ChainHinge([np.ones((2, 1))], [[0, 1]], 2).value_and_subgradient(np.zeros(6))


# --- brute force, independent of nsopt --------------------------------------------------------
def labellings(n_states: int, length: int) -> np.ndarray:
    return np.array(list(itertools.product(range(n_states), repeat=length)), dtype=np.int64)


def bf_features(x: np.ndarray, L: np.ndarray, n_states: int) -> np.ndarray:
    """phi(x, y') for every row y' of L: (K, S F + S^2), emission block then transitions."""
    K, T = L.shape
    onehot = np.eye(n_states)[L]                               # (K, T, S)
    emission = np.einsum("kts,tf->ksf", onehot, x).reshape(K, -1)
    transition = np.zeros((K, n_states, n_states))
    for t in range(1, T):
        np.add.at(transition, (np.arange(K), L[:, t - 1], L[:, t]), 1.0)
    return np.hstack([emission, transition.reshape(K, -1)])


def bf_table(x, y, n_states):
    """Every labelling y' with Delta(y, y') and phi(x, y') - phi(x, y)."""
    L = labellings(n_states, len(y))
    Phi = bf_features(x, L, n_states)
    true = bf_features(x, np.asarray(y)[None, :], n_states)[0]
    delta = (L != np.asarray(y)[None, :]).mean(axis=1)
    return L, delta, Phi - true


def bf_loss(x, y, n_states, w):
    L, delta, D = bf_table(x, y, n_states)
    return float((delta + D @ w).max())


# --- strategies ---------------------------------------------------------------------------------
@st.composite
def chains(draw, max_seqs=3, max_len=5, max_states=3, max_positions=None):
    S = draw(st.integers(2, max_states))
    F = draw(st.integers(1, 3))
    m = draw(st.integers(1, max_seqs))
    lengths = [draw(st.integers(1, max_len)) for _ in range(m)]
    if max_positions is not None:
        while sum(lengths) > max_positions:
            lengths[int(np.argmax(lengths))] -= 1
    X = [np.array(draw(st.lists(st.sampled_from(DYADIC), min_size=T * F, max_size=T * F))).reshape(T, F)
         for T in lengths]
    Y = [np.array(draw(st.lists(st.integers(0, S - 1), min_size=T, max_size=T)), dtype=np.int64)
         for T in lengths]
    sparse = draw(st.booleans())
    loss = ChainHinge([sp.csr_matrix(x) for x in X] if sparse else X, Y, S)
    return loss, X, Y


@st.composite
def chain_points(draw, dim):
    """w = 0 (maximal ties), a dyadic point (frequent ties), or a generic one."""
    kind = draw(st.sampled_from(["zero", "dyadic", "dyadic", "generic"]))
    if kind == "zero":
        return np.zeros(dim)
    if kind == "dyadic":
        return np.array(draw(st.lists(st.integers(-8, 8), min_size=dim, max_size=dim))) / 4.0
    return np.array(draw(st.lists(st.floats(-3, 3, allow_nan=False, allow_subnormal=False),
                                  min_size=dim, max_size=dim)))


def per_example(loss, w):
    """The per-example losses l_i (the P = m groups, divided by their weights)."""
    values, _ = loss.group_value_and_subgradients(w, loss.m)
    return values / loss.c


# --- loss-augmented inference ----------------------------------------------------------------------
@given(st.data())
def test_loss_augmented_argmax_matches_enumeration(data):
    """The Viterbi maximiser attains the brute-force maximum of Delta + <w, phi>, its delta is
    the normalised Hamming loss, and the oracle's per-sequence loss is that maximum."""
    loss, X, Y = data.draw(chains())
    w = data.draw(chain_points(loss.dim))
    for x, y, value in zip(X, Y, per_example(loss, w)):
        L, delta, D = bf_table(x, y, loss.n_states)
        scores = delta + D @ w
        best = scores.max()
        y_hat, d = loss.loss_augmented_argmax(x, y, w)
        k = int(np.flatnonzero((L == y_hat).all(axis=1))[0])
        assert d == pytest.approx(delta[k], abs=1e-15)
        assert scores[k] == pytest.approx(best, rel=1e-12, abs=1e-12)
        assert value == pytest.approx(best, rel=1e-12, abs=1e-12)


@given(st.data())
def test_predict_matches_enumeration(data):
    loss, X, Y = data.draw(chains())
    w = data.draw(chain_points(loss.dim))
    for x, y_pred in zip(X, loss.predict(X, w)):
        L = labellings(loss.n_states, x.shape[0])
        scores = bf_features(x, L, loss.n_states) @ w
        k = int(np.flatnonzero((L == y_pred).all(axis=1))[0])
        assert scores[k] == pytest.approx(scores.max(), rel=1e-12, abs=1e-12)


@given(st.data())
def test_joint_feature_matches_reference(data):
    loss, X, Y = data.draw(chains())
    for x, y in zip(X, Y):
        np.testing.assert_array_equal(loss.joint_feature(x, y), bf_features(x, y[None, :], loss.n_states)[0])


# --- A9, A10 ------------------------------------------------------------------------------------------
@given(st.data())
def test_lemma8_per_example_sum_equals_joint_max(data):
    """A9: with Gamma = 1 and Delta(Y, Y') = sum_i Delta(y_i, y'_i), sum_i max_{y'} [...] equals
    the max over joint labellings Y' of the whole data set of
    <w, Phi(X, Y') - Phi(X, Y)> + Delta(Y, Y'), enumerated jointly (product space)."""
    loss, X, Y = data.draw(chains(max_seqs=3, max_len=3, max_positions=6))
    w = data.draw(chain_points(loss.dim))
    tables = [bf_table(x, y, loss.n_states) for x, y in zip(X, Y)]
    joint = -np.inf
    for choice in itertools.product(*[range(len(t[1])) for t in tables]):
        Dphi = sum(t[2][k] for t, k in zip(tables, choice))
        Delta = sum(t[1][k] for t, k in zip(tables, choice))
        joint = max(joint, float(Dphi @ w + Delta))
    total = loss.m * loss.value(w)  # the mean times m: sum of per-example maxima
    assert total == pytest.approx(joint, rel=1e-12, abs=1e-12)


@given(st.data())
def test_majorization_of_prediction_loss(data):
    """A10: l(x, y, w) >= Delta(y, argmax_y' <w, phi(x, y')>) for every sequence."""
    loss, X, Y = data.draw(chains())
    w = data.draw(chain_points(loss.dim))
    values = per_example(loss, w)
    for value, y, y_pred in zip(values, Y, loss.predict(X, w)):
        assert value >= np.mean(y_pred != y) - 1e-12
    assert loss.value(w) >= loss.lower_bound == 0.0


# --- oracle laws ------------------------------------------------------------------------------------
@given(st.data())
def test_subgradient_inequality(data):
    loss, X, Y = data.draw(chains())
    w = data.draw(chain_points(loss.dim))
    v = data.draw(chain_points(loss.dim))
    f, g = loss.value_and_subgradient(w)
    assert loss.value(v) >= f + g @ (v - w) - 1e-12 * (1 + abs(f))


@given(st.data())
def test_sup_subgradient_is_max_over_tied_maximisers(data):
    """R'(w; p) = sum_i c_i max_{y' tied} <phi(x_i, y') - phi(x_i, y_i), p> by enumeration, at
    points with ties; the returned g attains it and is a subgradient; the plain subgradient
    gives no more."""
    loss, X, Y = data.draw(chains())
    w = data.draw(chain_points(loss.dim))
    p = np.array(data.draw(st.lists(st.integers(-4, 4), min_size=loss.dim, max_size=loss.dim))) / 2.0
    expected = 0.0
    for c, x, y in zip(loss.c, X, Y):
        _, delta, D = bf_table(x, y, loss.n_states)
        scores = delta + D @ w
        tied = scores >= scores.max() - TIE * max(1.0, abs(scores.max()))
        expected += c * (D[tied] @ p).max()
    s, g = loss.sup_subgradient(w, p)
    assert s == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert g @ p == pytest.approx(s, rel=1e-12, abs=1e-12)
    f = loss.value(w)
    v = data.draw(chain_points(loss.dim))
    assert loss.value(v) >= f + g @ (v - w) - 1e-12 * (1 + abs(f))
    assert loss.subgradient(w) @ p <= s + 1e-12
    # the right derivative of the restriction is the directional derivative
    assert loss.restrict(w, p).derivative(0.0, +1) == pytest.approx(s, rel=1e-12, abs=1e-12)
    assert loss.restrict(w, p).derivative(0.0, -1) == pytest.approx(-loss.sup_subgradient(w, -p)[0],
                                                                      rel=1e-12, abs=1e-12)


@given(st.data())
def test_group_sums_equal_total(data):
    """A11-like: the P partial risks and subgradients sum to the total; each row is a
    subgradient of its own partial risk."""
    loss, X, Y = data.draw(chains())
    w = data.draw(chain_points(loss.dim))
    P = data.draw(st.integers(1, loss.m))
    values, G = loss.group_value_and_subgradients(w, P)
    f, g = loss.value_and_subgradient(w)
    assert values.shape == (P,) and G.shape == (P, loss.dim)
    assert values.sum() == pytest.approx(f, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(G.sum(axis=0), g, rtol=1e-12, atol=1e-14)
    v = data.draw(chain_points(loss.dim))
    values_v, _ = loss.group_value_and_subgradients(v, P)
    assert (values_v >= values + G @ (v - w) - 1e-12 * (1 + np.abs(values))).all()


@given(st.data())
def test_structured_hinge_with_enumeration_equals_chain(data):
    """The generic StructuredHinge with brute-force inference (and all_argmax) reproduces the
    chain model: values, subgradients where the maximiser is unique, sup-subgradients always."""
    loss, X, Y = data.draw(chains(max_len=4))
    S = loss.n_states

    def argmax(x, y, w):
        L, delta, D = bf_table(x, y, S)
        k = int(np.argmax(delta + D @ w))
        return L[k], float(delta[k])

    def all_argmax(x, y, w):
        L, delta, D = bf_table(x, y, S)
        scores = delta + D @ w
        tied = np.flatnonzero(scores >= scores.max() - TIE * max(1.0, abs(scores.max())))
        return [(L[k], float(delta[k])) for k in tied]

    generic = StructuredHinge(loss.joint_feature, argmax, list(zip(X, Y)), loss.dim, loss.label_loss,
                              all_argmax=all_argmax)
    w = data.draw(chain_points(loss.dim))
    p = np.array(data.draw(st.lists(st.integers(-4, 4), min_size=loss.dim, max_size=loss.dim))) / 2.0
    assert generic.value(w) == pytest.approx(loss.value(w), rel=1e-12, abs=1e-12)
    assert generic.sup_subgradient(w, p)[0] == pytest.approx(loss.sup_subgradient(w, p)[0], rel=1e-12, abs=1e-12)
    if not w.any():
        return
    unique = all(len(all_argmax(x, y, w)) == 1 for x, y in zip(X, Y))
    if unique:
        np.testing.assert_allclose(generic.subgradient(w), loss.subgradient(w), rtol=1e-12, atol=1e-12)

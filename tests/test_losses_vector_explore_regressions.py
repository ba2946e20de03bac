"""Regression tests: the falsifying examples of the explore hypothesis run of
tests/properties/test_losses_vector.py (exact arrays from the failure output)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from nsopt.losses.vector import MulticlassHinge, MultilabelHinge, ScaledMulticlassHinge, Softmax
from nsopt.testing import check_oracle


def _close(a, b, rtol=1e-12):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def _dense_sparse_agree(make, X, w, p, etas=(-0.5, 0.0, 0.375, 1.5)):
    ld, ls = make(X), make(sp.csr_matrix(X))
    lined, lines = ld.restrict(w, p), ls.restrict(w, p)
    for eta in etas:
        assert _close(lined.value(eta), lines.value(eta))
        assert _close(lined.derivative(eta, 1), lines.derivative(eta, 1)), eta
        assert _close(lined.derivative(eta, -1), lines.derivative(eta, -1)), eta
    bd, bs = lined.breakpoints(), lines.breakpoints()
    assert bd.shape == bs.shape
    np.testing.assert_allclose(bd, bs, rtol=1e-12, atol=1e-12)


def test_cs_dense_sparse_derivative_at_a_rounded_kink():
    # kink of example 3 at eta = -0.5 up to rounding of -1/3 * -0.375: dense and sparse
    # products round differently, the line's left derivative must not depend on it
    X = np.zeros((7, 2))
    X[3] = [-1.40129846e-45, -1.0 / 3.0]
    y = np.array([0, 0, 0, 1, 0, 0, 0])
    w = np.array([0.0, 0, 0, 0, -0.375, 0, 0, 0])
    p = np.array([0.25, 0, 0, 0, -0.75, 0, 0, 0])
    _dense_sparse_agree(lambda A: MulticlassHinge(A, y, n_classes=4), X, w, p)


def test_cs_dense_and_sparse_sup_subgradients_at_a_rounding_tie_both_attain_the_sup():
    # explore run of 2026-11-24: at w = 0 the score slopes of example 3 along p are 0.25 - 3.5e-46
    # (class 0) and 0.25 (class 2), equal after rounding; the dense product picked class 0, the
    # sparse one class 2: two different vectors, both attaining f'(w; p), both subgradients
    X = np.zeros((7, 2))
    X[3] = [-1.40129846e-45, -1.0 / 3.0]
    y = np.array([0, 0, 0, 1, 0, 0, 0])
    w = np.zeros(6)
    p = np.array([0.25, 0, 0, -0.75, 0, -0.75])
    ld, ls = MulticlassHinge(X, y, n_classes=3), MulticlassHinge(sp.csr_matrix(X), y, n_classes=3)
    (s_d, g_d), (s_s, g_s) = ld.sup_subgradient(w, p), ls.sup_subgradient(w, p)
    assert _close(s_d, s_s)
    f0 = ld.value(w)
    rng = np.random.default_rng(0)
    for g in (g_d, g_s):
        assert _close(float(g @ p), s_d)
        for v in rng.standard_normal((20, 6)):
            assert ld.value(v) >= f0 + float(g @ (v - w)) - 1e-12


def test_cs_dense_sparse_no_kink_from_a_rounding_slope():
    # Q[6, 3] = -0.25 + (-1/3)(-0.75) is 0 or 5.6e-17 depending on the product (FMA or not):
    # a slope difference at the rounding level is no kink
    X = np.zeros((7, 2))
    X[6] = [-1.0, -1.0 / 3.0]
    y = np.zeros(7, dtype=np.int64)
    w = np.zeros(8)
    p = np.array([0.0, 0, 0, 0.25, 0, 0, 0, -0.75])
    _dense_sparse_agree(lambda A: MulticlassHinge(A, y, n_classes=4), X, w, p)


def test_multilabel_dense_sparse_derivative_at_a_rounded_kink():
    X = np.zeros((7, 4))
    X[2] = [1.0, 0.0, 0.0, 1.65116175]
    Y = np.zeros((7, 4))
    Y[2, 3] = 1.0
    w = np.zeros(16)
    w[2], w[14] = -0.5, 0.875
    p = np.zeros(16)
    p[2], p[14] = -1.0, 1.75
    _dense_sparse_agree(lambda A: MultilabelHinge(A, Y), X, w, p)


def _margin_line_matches_oracle(loss, w, p):
    line = loss.restrict(w, p)
    for eta in (-1.0, -0.25, 0.0, 0.125, 0.5, 1.0, 2.0):
        x = w + eta * p
        assert _close(line.value(eta), loss.value(x), 1e-13)
        assert _close(line.derivative(eta, 1), loss.sup_subgradient(x, p)[0]), eta
        assert _close(line.derivative(eta, -1), -loss.sup_subgradient(x, -p)[0]), eta


def test_margin_line_derivative_decides_ties_as_the_oracle():
    # a piece above the others by 4.8e-208 (a tie within tie_rtol for the oracle) crosses
    # them just right of eta = 0: the line's derivative must decide the tie the same way
    X = np.zeros((6, 4))
    X[4, 1] = 1.0
    y = np.zeros(6, dtype=np.int64)
    cost = np.zeros((2, 2))
    sw = np.array([1.0, 0, 0, 0, 1, 0])
    w = np.array([0.0, 0, 0, 4.8180502e-208, 0, 0, 0, 0])
    for sign in (1.0, -1.0):
        p = sign * np.array([0.0, 0, 0, -0.25, 0, 0, 0, 0])
        for A in (X, sp.csr_matrix(X)):
            _margin_line_matches_oracle(
                ScaledMulticlassHinge(A, y, cost, rescaling="margin", sample_weight=sw), w, p)


def test_margin_check_oracle_at_a_tie_within_tolerance():
    X = np.array([[0.0], [1.0]])
    y = np.array([0, 0])
    cost = np.zeros((5, 5))
    w = np.array([0.0, 0, 0, 0, 2.220446049250313e-16])
    p = np.array([0.0, 0, 0, 0, -0.25])
    for A in (X, sp.csr_matrix(X)):
        loss = ScaledMulticlassHinge(A, y, cost, rescaling="margin")
        _margin_line_matches_oracle(loss, w, p)
        check_oracle(loss, points=np.stack([w, np.zeros_like(w)]),
                     directions=np.stack([p, -p]), n=2, rtol=1e-7)


def test_cs_dense_sparse_lines_through_one_point():
    # Q = 2 F on example 5, so every piece of it passes through value 1 at eta = -0.5; the
    # sparse F_2 is one ulp off the dense one, and the flat pieces (classes 1, 3) then topped
    # the envelope on [-0.5, -0.49999999999999994]: two kinks an ulp apart for one
    X = np.zeros((7, 4))
    X[5] = [-0.00207198274925047, 0.0, -2.5911517275195988, 0.0]
    y = np.zeros(7, dtype=np.int64)
    w = np.zeros(20)
    w[[2, 4, 12, 14]] = [0.25, 0.125, -0.375, 0.125]
    p = np.zeros(20)
    p[[2, 4, 12, 14]] = [0.5, 0.25, -0.75, 0.25]
    _dense_sparse_agree(lambda A: MulticlassHinge(A, y, n_classes=5), X, w, p)
    assert MulticlassHinge(sp.csr_matrix(X), y, n_classes=5).restrict(w, p).breakpoints().size == 1


def test_softmax_line_constant_along_a_shift():
    # Q_1 = [0.625, 0.625]: p shifts both scores of the only nonzero example alike, the line
    # is constant; E_p[q] - q_y left -1e-17 of noise at eta = 0, so minimize doubled eta to
    # 2^51, where the scores have lost 0.125 to rounding and the value is off the grid's
    X = np.zeros((5, 2))
    X[1, 0] = -0.5
    y = np.zeros(5, dtype=np.int64)
    w = np.array([0.0, 0.25, 0, 0])
    p = np.array([-1.25, -1.25, 0, 0])
    for A in (X, sp.csr_matrix(X)):
        loss = Softmax(A, y, n_classes=2)
        line = loss.restrict(w, p)
        assert line.derivative(0.0, 1) == 0.0
        assert line.minimize() == 0.0
        check_oracle(loss, points=np.stack([w, np.zeros_like(w)]),
                     directions=np.stack([p, -p]), n=2, rtol=1e-7)

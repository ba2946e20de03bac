"""Hypothesis laws of the vector losses ([TVSL10] Table 6, [YVGS10] Sec. 6): values against
direct numpy formulas, subgradients, the sup-subgradient at ties, line restrictions, their
breakpoints and exact minimisation, dense vs sparse, the two-class-block structure (A8).

Strategies build valid inputs directly (no ``assume``). Data, points and directions are dyadic
by default (entries of X in {0, +-1/2, +-1, +-2}, W on a grid of 1/8, P on a grid of 1/4), so
every score is computed exactly whatever the summation order and ties are exact ties: at
``W = 0`` every class ties (every margin piece equals 1). The reference for the sup-subgradient
is brute force over the affine pieces of each loss in the scores: per example the pieces
attaining the max and ``R'(W; P) = sum_i c_i max_{active pieces} slope . q_i``.

Notation: F = X W (scores, m x k), Q = X P, c the normalised sample weights.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import nsopt
from nsopt.losses.vector import MulticlassHinge, MultilabelHinge, ScaledMulticlassHinge, Softmax
from nsopt.regularizers import L2
from nsopt.testing import check_oracle

KINDS = ["cs", "margin", "slack", "softmax", "multilabel"]
HINGES = ["cs", "margin", "slack", "multilabel"]
DYADIC_DATA = (0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0)


# ----------------------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------------------
class Case(NamedTuple):
    kind: str
    X: np.ndarray            # dense data (m x d)
    y: np.ndarray            # class labels (m,) or 0/1 matrix (m x k)
    k: int
    cost: np.ndarray | None
    weights: np.ndarray | None
    w: np.ndarray            # point (d k,)
    p: np.ndarray            # direction (d k,)

    def loss(self, sparse=False):
        X = sp.csr_matrix(self.X) if sparse else self.X
        sw = self.weights
        if self.kind == "cs":
            return MulticlassHinge(X, self.y, n_classes=self.k, sample_weight=sw)
        if self.kind in ("margin", "slack"):
            return ScaledMulticlassHinge(X, self.y, self.cost, rescaling=self.kind, sample_weight=sw)
        if self.kind == "softmax":
            return Softmax(X, self.y, n_classes=self.k, sample_weight=sw)
        return MultilabelHinge(X, self.y, sample_weight=sw)

    @property
    def c(self):
        m = self.X.shape[0]
        return np.full(m, 1.0 / m) if self.weights is None else self.weights / self.weights.sum()


def _grid_array(draw, shape, step, scale):
    n = int(round(scale / step))
    vals = draw(st.lists(st.integers(-n, n), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return np.array(vals, dtype=np.float64).reshape(shape) * step


@st.composite
def cases(draw, kind, point="any", dyadic=True):
    """A small vector-loss problem, a point and a direction.

    ``point``: "zero" (W = 0: every class ties), "grid" (dyadic, ties frequent), "random"
    (continuous) or "any"."""
    m = draw(st.integers(1, 7))
    d = draw(st.integers(1, 4))
    k = draw(st.integers(2, 5))
    if dyadic:
        X = np.array(draw(st.lists(st.sampled_from(DYADIC_DATA), min_size=m * d, max_size=m * d)),
                     dtype=np.float64).reshape(m, d)
    else:
        X = np.array(draw(st.lists(st.floats(-3, 3, allow_nan=False, allow_subnormal=False),
                                   min_size=m * d, max_size=m * d))).reshape(m, d)
    if kind == "multilabel":
        y = np.array(draw(st.lists(st.integers(0, 1), min_size=m * k, max_size=m * k)),
                     dtype=np.float64).reshape(m, k)
    else:
        y = np.array(draw(st.lists(st.integers(0, k - 1), min_size=m, max_size=m)), dtype=np.int64)
    cost = None
    if kind in ("margin", "slack"):
        cost = _grid_array(draw, (k, k), 0.25, 2.0)
        cost = np.abs(cost)
        np.fill_diagonal(cost, 0.0)
    weights = None
    if draw(st.booleans()):
        weights = np.array(draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)), dtype=np.float64)
        weights[draw(st.integers(0, m - 1))] += 1.0  # positive sum
    if point == "any":
        point = draw(st.sampled_from(["zero", "grid", "grid", "random"]))
    if point == "zero":
        w = np.zeros(d * k)
    elif point == "grid":
        w = _grid_array(draw, (d * k,), 0.125, 2.0)
    else:
        w = np.array(draw(st.lists(st.floats(-2, 2, allow_nan=False, allow_subnormal=False),
                                   min_size=d * k, max_size=d * k)))
        # entries below 1e-9 in magnitude are drawn as 0: a score that wins a max by 1e-300
        # puts a kink closer to w than any difference quotient can resolve, so check_oracle's
        # finite-difference law cannot be decided there (a kink at 1e-10 it resolves:
        # test_check_oracle_sees_a_kink_closer_than_1e_8); exact ties are drawn by "zero"/"grid"
        w[np.abs(w) < 1e-9] = 0.0
    p = _grid_array(draw, (d * k,), 0.25, 2.0)
    if not p.any():
        p[draw(st.integers(0, d * k - 1))] = 1.0
    return Case(kind, X, y, k, cost, weights, w, p)


# ----------------------------------------------------------------------------------------
# brute force: each loss as per-example affine pieces in the scores
# ----------------------------------------------------------------------------------------
def pieces(case, i):
    """The affine pieces ``(slope (k,), offset)`` of l(., y_i) in the scores of example i,
    with l(f) = max over pieces of slope . f + offset (hinge-type losses only)."""
    k = case.k
    out = []
    if case.kind == "multilabel":
        rel = np.flatnonzero(case.y[i] == 1)
        irr = np.flatnonzero(case.y[i] == 0)
        out.append((np.zeros(k), 0.0))  # z' = z
        for z, zp in itertools.product(rel, irr):
            s = np.zeros(k)
            s[zp] += 1.0
            s[z] -= 1.0
            out.append((s, 1.0))
        return out
    yi = case.y[i]
    for j in range(k):
        s = np.zeros(k)
        if case.kind == "cs":
            g, off = 1.0, float(j != yi)
        elif case.kind == "margin":
            g, off = 1.0, case.cost[yi, j]
        else:  # slack: cost (f_j - f_y + 1)
            g, off = case.cost[yi, j], case.cost[yi, j]
        if j != yi:
            s[j] += g
            s[yi] -= g
        else:
            off = 0.0
        out.append((s, off))
    return out


def direct_values(case, F):
    """Per-example loss values by the textbook formulas (numpy, no shared code)."""
    m, k = F.shape
    rows = np.arange(m)
    if case.kind == "softmax":
        top = F.max(axis=1)
        return top + np.log(np.exp(F - top[:, None]).sum(axis=1)) - F[rows, case.y]
    if case.kind == "multilabel":
        out = np.zeros(m)
        for i in range(m):
            rel, irr = case.y[i] == 1, case.y[i] == 0
            if rel.any() and irr.any():
                out[i] = max(0.0, 1.0 + F[i, irr].max() - F[i, rel].min())
        return out
    fy = F[rows, case.y][:, None]
    if case.kind == "cs":
        return (F - fy + (np.arange(k)[None, :] != case.y[:, None])).max(axis=1)
    C = case.cost[case.y]
    if case.kind == "margin":
        return (F - fy + C).max(axis=1)
    return (C * (F - fy + 1.0)).max(axis=1)


def brute_sup(case, w, p, tie=None):
    """R'(W; P) = sum_i c_i max over the active pieces of slope . q_i (exact on dyadic data).

    ``tie`` (m,): pieces within ``tie[i]`` of the top count as active too (see tie_radius)."""
    k = case.k
    F = case.X @ w.reshape(-1, k)
    Q = case.X @ p.reshape(-1, k)
    total = 0.0
    for i in range(F.shape[0]):
        ps = pieces(case, i)
        vals = np.array([s @ F[i] + b for s, b in ps])
        top = vals.max()
        radius = 0.0 if tie is None else tie[i]
        active = [s for (s, b), v in zip(ps, vals) if v >= top - radius]
        total += case.c[i] * max(s @ Q[i] for s in active)
    return total


def tie_radius(case, w, p, eta):
    """Per example, how far below the top a piece may be and still be tied for the loss at
    ``w + eta p``: the documented tie tolerance ``tie_rtol (1 + dmax + 2 gmax big)``
    (``(1 + 2 big)`` for multilabel; ``big`` the largest ``|F_ij| + |eta Q_ij|`` of the
    example, ``gmax``, ``dmax`` the largest score and offset factors), plus the rounding of
    the piece values the kernels compare, 8 eps times the same scale. Off dyadic grids the
    oracle and the line may decide such a near-tie as a tie (the steepest piece, R8)."""
    loss = case.loss()
    k = case.k
    F, Q = case.X @ w.reshape(-1, k), case.X @ p.reshape(-1, k)
    big = (np.abs(F) + abs(eta) * np.abs(Q)).max(axis=1)
    if case.kind == "multilabel":
        scale = 1.0 + 2.0 * big
    else:
        gmax, dmax = loss._tie_scale()
        scale = 1.0 + dmax + 2.0 * gmax * big
    return (loss.tie_rtol + 8 * np.finfo(float).eps) * scale


def brute_kinks(case, w, p):
    """Kinks of eta -> l(F_i + eta Q_i) over all examples, from all pairwise intersections of
    the pieces: an intersection is a kink if it is on the envelope and the slope jumps there."""
    k = case.k
    F = case.X @ w.reshape(-1, k)
    Q = case.X @ p.reshape(-1, k)
    out = []
    for i in range(F.shape[0]):
        if case.c[i] == 0:  # no kink in the weighted sum
            continue
        ps = pieces(case, i)
        a = np.array([s @ Q[i] for s, _ in ps])
        b = np.array([s @ F[i] + off for s, off in ps])
        for u, v in itertools.combinations(range(len(ps)), 2):
            if a[u] == a[v]:
                continue
            t = (b[u] - b[v]) / (a[v] - a[u])
            vals = b + t * a
            top = vals.max()
            act = np.abs(vals - top) <= 1e-12 * (1.0 + np.abs(vals).max())
            if abs(vals[u] - top) <= 1e-12 * (1 + abs(top)) and a[act].max() > a[act].min():
                out.append(t)
    out = np.sort(np.array(out))
    if out.size:
        keep = np.concatenate([[True], np.diff(out) > 1e-9 * (1.0 + np.abs(out[1:]))])
        out = out[keep]
    return out


def _close(a, b, rtol):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


# ----------------------------------------------------------------------------------------
# values and subgradients
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@given(data=st.data())
def test_value_matches_direct_formula(kind, sparse, data):
    case = data.draw(cases(kind, dyadic=data.draw(st.booleans())))
    loss = case.loss(sparse)
    F = case.X @ case.w.reshape(-1, case.k)
    expected = float(case.c @ direct_values(case, F))
    assert _close(loss.value(case.w), expected, 1e-12)
    assert _close(loss.value_and_subgradient(case.w)[0], expected, 1e-12)
    assert loss.shape == (case.X.shape[1], case.k) and loss.dim == case.w.size


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_subgradient_inequality(kind, data):
    """f(V) >= f(W) + <g, V - W> for the default subgradient and for sup_subgradient's g."""
    case = data.draw(cases(kind))
    loss = case.loss(data.draw(st.booleans()))
    v = case.w + case.p * data.draw(st.sampled_from([-2.0, -0.5, 0.25, 1.0, 3.0]))
    others = [v, np.zeros_like(v), case.w + case.p]
    fw, g = loss.value_and_subgradient(case.w)
    _, gs = loss.sup_subgradient(case.w, case.p)
    for x in others:
        fx = loss.value(x)
        for grad in (g, gs):
            lin = fw + grad @ (x - case.w)
            assert fx >= lin - 1e-12 * (1.0 + abs(fx) + np.abs(grad) @ np.abs(x - case.w))


@given(data=st.data())
def test_softmax_gradient_matches_finite_differences(data):
    """A8, second half: the softmax gradient is E_p[phi] - phi(y) (central differences, 1e-6)."""
    case = data.draw(cases("softmax", point="random", dyadic=False))
    loss = case.loss(data.draw(st.booleans()))
    _, g = loss.value_and_subgradient(case.w)
    h = 1e-5
    fd = np.array([(loss.value(case.w + h * e) - loss.value(case.w - h * e)) / (2 * h)
                   for e in np.eye(case.w.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    s, gs = loss.sup_subgradient(case.w, case.p)
    np.testing.assert_allclose(gs, g, rtol=1e-13, atol=1e-15)
    assert _close(s, g @ case.p, 1e-12)


@pytest.mark.parametrize("kind", HINGES)
@given(data=st.data())
def test_sup_subgradient_matches_brute_force_at_ties(kind, data):
    """At W = 0 (every class ties) and on dyadic grids (frequent exact ties), s equals the max
    over the active pieces, and the returned g attains s and is a subgradient."""
    case = data.draw(cases(kind, point=data.draw(st.sampled_from(["zero", "grid"]))))
    loss = case.loss(data.draw(st.booleans()))
    s, g = loss.sup_subgradient(case.w, case.p)
    assert _close(s, brute_sup(case, case.w, case.p), 1e-12)
    assert _close(float(g @ case.p), s, 1e-12)
    # -p: the left derivative, also by brute force
    s_left, _ = loss.sup_subgradient(case.w, -case.p)
    assert _close(s_left, brute_sup(case, case.w, -case.p), 1e-12)
    assert s >= -s_left - 1e-12  # right derivative >= left derivative
    # g is a subgradient (tested at points on both sides and far away)
    fw = loss.value(case.w)
    for t in (-4.0, -1.0, -0.125, 0.125, 1.0, 4.0):
        for direction in (case.p, np.ones_like(case.p)):
            x = case.w + t * direction
            assert loss.value(x) >= fw + g @ (x - case.w) - 1e-12 * (1.0 + abs(fw))


@pytest.mark.parametrize("kind", HINGES)
@given(data=st.data())
def test_sup_subgradient_is_the_directional_derivative(kind, data):
    """s = lim (f(w + h p) - f(w)) / h: on dyadic data the loss is affine on [0, h] for a small
    dyadic h, so the quotient is exact up to rounding."""
    case = data.draw(cases(kind, point=data.draw(st.sampled_from(["zero", "grid"]))))
    loss = case.loss()
    s, _ = loss.sup_subgradient(case.w, case.p)
    h = 2.0 ** -20
    quotient = (loss.value(case.w + h * case.p) - loss.value(case.w)) / h
    assert abs(quotient - s) <= 1e-8 * (1.0 + abs(s))


@pytest.mark.parametrize("kind", ["cs", "margin", "slack"])
@given(data=st.data())
def test_gradient_rows_have_at_most_two_class_blocks(kind, data):
    """A8: every per-example subgradient of a margin loss, default or steepest, has at most two
    nonzero class blocks (columns of the d x k gradient): e_{y*} - e_y scaled."""
    case = data.draw(cases(kind))
    full = case.loss()
    for i in range(case.X.shape[0]):
        one = Case(case.kind, case.X[i:i + 1], case.y[i:i + 1], case.k, case.cost, None,
                   case.w, case.p).loss()
        for g in (one.subgradient(case.w), one.sup_subgradient(case.w, case.p)[1],
                  one.sup_subgradient(case.w, -case.p)[1]):
            blocks = np.flatnonzero(np.any(g.reshape(one.shape) != 0, axis=0))
            assert blocks.size <= 2
            if blocks.size:
                assert case.y[i] in blocks
    # the score-gradient matrix G of the whole loss: at most two nonzeros per row, summing to 0
    F = full._scores(case.w)
    G = np.empty_like(F)
    full._kernel_grad(F, full._scores(case.p), 0.0, 1, G)
    assert np.all((G != 0).sum(axis=1) <= 2)
    np.testing.assert_allclose(G.sum(axis=1), 0.0, atol=1e-15)


# ----------------------------------------------------------------------------------------
# dense vs sparse
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_dense_and_sparse_agree(kind, data):
    case = data.draw(cases(kind, dyadic=data.draw(st.booleans())))
    ld, ls = case.loss(False), case.loss(True)

    def agree(a, b):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        assert a.shape == b.shape
        assert np.all(np.abs(a - b) <= 1e-12 * np.maximum(1.0, np.maximum(np.abs(a), np.abs(b))))

    for pair in zip(ld.value_and_subgradient(case.w), ls.value_and_subgradient(case.w)):
        agree(*pair)
    (s_d, g_d), (s_s, g_s) = ld.sup_subgradient(case.w, case.p), ls.sup_subgradient(case.w, case.p)
    agree(s_d, s_s)
    # the maximisers may differ: where two classes tie up to rounding, the dense (BLAS, maybe
    # with FMA) and the sparse products can order them differently; both must attain the sup
    for g in (g_d, g_s):
        assert g.shape == case.w.shape
        lin = float(g @ case.p)
        assert abs(lin - s_d) <= 1e-12 * max(1.0, abs(s_d), float(np.abs(g * case.p).sum()))
    lined, lines = ld.restrict(case.w, case.p), ls.restrict(case.w, case.p)
    for eta in (-0.5, 0.0, 0.375, 1.5):
        agree(lined.value(eta), lines.value(eta))
        agree(lined.derivative(eta, 1), lines.derivative(eta, 1))
        agree(lined.derivative(eta, -1), lines.derivative(eta, -1))
    agree(lined.breakpoints(), lines.breakpoints())


# ----------------------------------------------------------------------------------------
# line restriction, breakpoints, exact line search
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_restrict_matches_direct_evaluation(kind, data):
    case = data.draw(cases(kind))
    _check_restrict_direct(case, data.draw(st.booleans()))


def _check_restrict_direct(case, sparse):
    loss = case.loss(sparse)
    line = loss.restrict(case.w, case.p)
    for eta in (-1.0, -0.25, 0.0, 0.125, 0.5, 1.0, 2.0):  # dyadic: w + eta p is exact
        x = case.w + eta * case.p
        assert _close(line.value(eta), loss.value(x), 1e-13)
        right, left = line.derivative(eta, 1), line.derivative(eta, -1)
        assert _close(right, loss.sup_subgradient(x, case.p)[0], 1e-12)
        assert _close(left, -loss.sup_subgradient(x, -case.p)[0], 1e-12)
        assert right >= left - 1e-12 * max(1.0, abs(left))
        if case.kind != "softmax":
            # between the exact ties (dyadic data: the answer) and the ties within the
            # documented tolerance (a piece 1e-12 above the others at scores of size 1)
            exact = brute_sup(case, x, case.p)
            tied = brute_sup(case, x, case.p, tie_radius(case, case.w, case.p, eta))
            assert _close(right, exact, 1e-12) or exact <= right <= tied + 1e-12 * max(1.0, abs(tied)), \
                (eta, right, exact, tied)


def test_restrict_matches_direct_evaluation_regression():
    # explore run: the piece 1 (y = 0, k = 2) of example 2 is above the y piece by 1e-12 at
    # eta = 1 (scores [1, 1e-12]): a tie within tie_rtol (1 + 2 * 1 + 1) = 4e-12, decided as
    # the steepest piece (slope 0) where exact brute force has the other (slope -1)
    X = np.zeros((6, 4))
    X[2, 0] = 1.0
    w, p = np.zeros(8), np.zeros(8)
    w[1], p[0] = 1e-12, 1.0
    case = Case("cs", X, np.zeros(6, dtype=np.int64), 2, None, None, w, p)
    for sparse in (False, True):
        _check_restrict_direct(case, sparse)


@pytest.mark.parametrize("kind", HINGES)
@given(data=st.data())
def test_breakpoints_are_exactly_the_kinks(kind, data):
    """breakpoints() (upper envelopes, [YVGS10] Alg. 4) equals the brute-force set of kinks
    from all pairwise intersections of the pieces; the line is affine between consecutive
    breakpoints and its slope jumps at each one."""
    case = data.draw(cases(kind))
    loss = case.loss(data.draw(st.booleans()))
    line = loss.restrict(case.w, case.p)
    bps = line.breakpoints()
    assert bps is not None and np.all(np.diff(bps) >= 0)
    distinct = np.unique(bps)
    if distinct.size:
        keep = np.concatenate([[True], np.diff(distinct) > 1e-9 * (1.0 + np.abs(distinct[1:]))])
        distinct = distinct[keep]
    expected = brute_kinks(case, case.w, case.p)
    assert distinct.size == expected.size, (distinct, expected)
    np.testing.assert_allclose(distinct, expected, rtol=1e-9, atol=1e-12)
    # per-example: at most k - 1 kinks for the margin losses (the envelope of k lines)
    if kind != "multilabel":
        assert bps.size <= case.X.shape[0] * (case.k - 1)
    t = np.concatenate([[distinct[0] - 1.0] if distinct.size else [-1.0], distinct,
                        [distinct[-1] + 1.0] if distinct.size else [1.0]])
    for lo, hi in zip(t[:-1], t[1:]):  # affine between breakpoints
        mid = 0.5 * (lo + hi)
        x = case.w + mid * case.p
        # the event-based derivative (slope at -inf plus the jumps so far) is the direct one
        assert _close(line.derivative(mid, 1), loss.sup_subgradient(x, case.p)[0], 1e-11)
        assert _close(line.derivative(mid, -1), -loss.sup_subgradient(x, -case.p)[0], 1e-11)
        assert _close(line.value(mid), 0.5 * (line.value(lo) + line.value(hi)), 1e-10)
    for b in distinct:  # a true kink: the slope jumps
        assert line.derivative(b, 1) > line.derivative(b, -1)


@given(n=st.integers(1, 60), data=st.data())
def test_upper_envelope_matches_brute_force(n, data):
    """R24 ([YVGS10] Alg. 4 on the whole line): on integer lines with many ties and parallels,
    the hull is exactly the set of lines on top somewhere on an open interval, in slope
    order, and the kinks are where consecutive ones meet. n > 32 takes the argsort path."""
    from nsopt.losses._vector_kernels import upper_envelope

    a = np.array(data.draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n)), dtype=np.float64)
    b = np.array(data.draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n)), dtype=np.float64)
    hull = np.empty(n, dtype=np.int64)
    kinks = np.empty(n)
    h = upper_envelope(a, b, n, hull, kinks)
    # brute force: the envelope's kinks are intersections where the active slopes differ
    cand = sorted({(b[u] - b[v]) / (a[v] - a[u]) for u in range(n) for v in range(n) if a[u] != a[v]})
    expected = []
    for t in cand:
        vals = b + t * a
        act = vals >= vals.max() - 1e-12 * (1.0 + abs(vals.max()))  # t itself is rounded
        if a[act].max() > a[act].min():
            expected.append(t)
    np.testing.assert_allclose(kinks[:h - 1], expected, rtol=1e-14, atol=0)
    # the hull lines, in ascending slope, are on top just right of each kink (and at -inf)
    probes = [(expected[0] if expected else 0.0) - 1.0] + [t + 1e-6 for t in expected]
    for line, t in zip(hull[:h], probes):
        vals = b + t * a
        assert vals[line] >= vals.max() - 1e-12 * (1.0 + abs(vals.max()))
    assert np.all(np.diff(a[hull[:h]]) > 0)


def test_softmax_line_has_no_breakpoints():
    rng = np.random.default_rng(0)
    loss = Softmax(rng.standard_normal((5, 3)), [0, 1, 2, 0, 1])
    line = loss.restrict(rng.standard_normal(9), rng.standard_normal(9))
    assert line.breakpoints().size == 0


def _check_line_minimum(line, eta, rtol=1e-9):
    assert 0.0 <= eta < math.inf
    dtol = rtol * (1.0 + abs(line.derivative(0.0, 1)))
    assert line.derivative(eta, 1) >= -dtol
    if eta > 0:
        assert line.derivative(eta, -1) <= dtol
    grid = np.linspace(0.0, max(2.0 * eta, 1.0), 4001)
    best = min(line.value(t) for t in grid)
    phi = line.value(eta)
    assert phi <= best + 1e-12 * max(1.0, abs(best)), (eta, phi, best)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_exact_line_minimize_vs_grid(kind, data):
    """The lines of RegularizedRisk(loss, L2(), lam) are minimised exactly by the generic
    LineFunction.minimize over the loss's breakpoints: optimality conditions and a fine grid."""
    case = data.draw(cases(kind))
    lam = data.draw(st.sampled_from([1e-2, 0.125, 1.0]))
    loss = case.loss(data.draw(st.booleans()))
    line = nsopt.RegularizedRisk(loss, L2(), lam).restrict(case.w, case.p)
    _check_line_minimum(line, line.minimize())
    if kind != "softmax":
        _check_bare_piecewise_minimum(loss.restrict(case.w, case.p))


def _check_bare_piecewise_minimum(bare):
    """The bare hinge-type loss is piecewise linear: a minimiser on [0, 2] is a kink, an end,
    or a point of a flat piece (both one-sided derivatives zero to rounding: every point of
    that piece is a minimiser, and the closed form may land inside it)."""
    eta = bare.minimize(0.0, 2.0)
    grid = np.linspace(0.0, 2.0, 4001)
    assert bare.value(eta) <= min(bare.value(t) for t in grid) + 1e-12
    at_kink = np.isclose(bare.breakpoints(), eta, rtol=0, atol=1e-12).any()
    flat = abs(bare.derivative(eta, -1)) <= 1e-12 and abs(bare.derivative(eta, 1)) <= 1e-12
    assert eta in (0.0, 2.0) or at_kink or flat, (eta, bare.breakpoints())


def test_bare_minimum_inside_a_flat_piece():
    """Explore-profile find (seed 25754): a multilabel line flat on [-0.05, 1/14] (derivative
    -2.2e-16 there, by rounding), minimised at 1/14 - 1.25e-11 by the affine closed form: a
    true minimiser, not a kink; the old check demanded a kink or an end."""
    X = np.array([[-2.0, -2.0, 0.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 1.0], [0.0, 1.0, -0.5],
                  [0.5, 0.0, 1.0], [-0.5, 1.0, -2.0]])
    y = np.array([[0, 0, 1, 0], [0, 0, 0, 0], [1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1],
                  [1, 0, 0, 0]], dtype=np.float64)
    w = np.array([0.0, 0.0, -0.5, 0.625, 0.0, 0.0, 0.0, -0.75, 0.5, -0.625, 0.0, 0.0])
    p = np.array([-0.5, -1.25, 0.75, 0.5, 0.0, 1.75, -1.75, 0.0, 1.5, -0.25, 0.0, 0.0])
    bare = MultilabelHinge(X, y).restrict(w, p)
    _check_bare_piecewise_minimum(bare)
    # the piece left of 1/14 is flat: the value there equals the value at the kink
    assert bare.value(0.0) == pytest.approx(bare.value(1.0 / 14.0), abs=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_check_oracle_laws(kind, data):
    """nsopt.testing.check_oracle (all oracle laws) at the drawn point, W = 0 and a random one."""
    case = data.draw(cases(kind))
    loss = case.loss(data.draw(st.booleans()))
    pts = np.stack([case.w, np.zeros_like(case.w)])
    check_oracle(loss, points=pts, directions=np.stack([case.p, -case.p]), n=2, rtol=1e-7)


def test_check_oracle_sees_a_kink_closer_than_1e_8():
    """Explore seed 19709: the multilabel hinge at W[0, 3] = 1e-10 (the max over irrelevant
    labels unique by 1e-10) along p = -0.25 e: f'(w; p) = -0.25/7, but every difference step
    down to |h p| = 1e-8 crossed the kink and read 0. The checker now takes smaller steps while
    their rounding noise allows, and accepts the oracle's (correct) answer."""
    X = np.zeros((7, 3))
    X[6, 0] = 1.0
    Y = np.zeros((7, 5))
    Y[6, 4] = 1.0
    loss = MultilabelHinge(X, Y)
    w = np.zeros(15)
    w[3] = 1e-10
    p = np.zeros(15)
    p[3] = -0.25
    s, _ = loss.sup_subgradient(w, p)
    assert s == pytest.approx(-0.25 / 7, rel=1e-12)
    check_oracle(loss, points=np.stack([w, np.zeros(15)]), directions=np.stack([p, -p]), n=2,
                 rtol=1e-7)

"""Hypothesis laws of the multivariate losses ([TVSL10] App. A.3): values against brute force,
subgradients, the sup-subgradient at ties, line restrictions and their exact minimisation.

Strategies build valid inputs directly (no ``assume``). The data is ``X = [I | D]`` with ``D``
dyadic, and the point is solved for drawn scores: ``w = (f - D u, u)`` gives ``X w = f`` with
``f`` drawn either on a grid of 1/2 or 1/4 (so ties in ``f``, pair kinks ``f_j - f_i = 1`` and
ties between contingency tables happen all the time, exactly) or from the reals. Directions are dyadic (ties in ``q = X p`` too).

The references are brute force in score space: every loss is a maximum of affine functions of
``f`` (pairs, all labellings ``y'``, all permutations), so its value is the largest piece and its
directional derivative ``R'(f; q)`` the largest slope among the pieces attaining it (exact ties
on the dyadic grid; within 1e-12 relative otherwise).

Requirements A3-A7 of the 000 notes, and the PRBEP analogue of A5.
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import Callable, NamedTuple

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given
from hypothesis import strategies as st

from nsopt.losses.multivariate import (
    NDCG,
    PRBEP,
    FBeta,
    OrdinalRegression,
    PreferencePairs,
    ROCArea,
)

GRID = tuple(np.arange(-3, 4) / 2.0)  # steps of 1/2: ties in f and pair kinks f_j - f_i = 1
FINE_GRID = tuple(np.arange(-6, 7) / 4.0)  # steps of 1/4: also ties between tables (PRBEP)
DYADIC = (-2.0, -1.0, -0.5, 0.5, 1.0, 2.0)
STEPS = (0.0, 0.25, -0.75, 1.5)  # dyadic: line points are exact, kinks are hit


# --------------------------------------------------------------------------------------------
# Brute force in score space: (value, directional derivative) of the max of affine pieces
# --------------------------------------------------------------------------------------------
def _max_and_slope(values, slopes, tol=1e-12):
    top = values.max()
    return float(top), float(slopes[values >= top - tol * max(1.0, abs(top))].max())


def pair_hinge_brute(f, q, pairs, cost, norm):
    """sum_k cost_k max(0, 1 + f_i - f_j) / norm and its derivative along q."""
    v = s = 0.0
    for (i, j), c in zip(pairs, cost):
        z, dz = 1.0 + f[i] - f[j], q[i] - q[j]
        v += c * max(0.0, z)
        s += c * (dz if z > 0 else max(0.0, dz) if z == 0 else 0.0)
    return v / norm, s / norm


def roc_brute(f, q, y):
    pairs = [(i, j) for i in range(len(y)) for j in range(len(y)) if y[i] < 0 < y[j]]
    return pair_hinge_brute(f, q, pairs, np.ones(len(pairs)), len(pairs))


def ordinal_brute(f, q, y, cost):
    pairs = [(i, j) for i in range(len(y)) for j in range(len(y)) if y[i] < y[j]]
    c = [1.0 if cost == "constant" else float(y[j] - y[i]) for i, j in pairs]
    return pair_hinge_brute(f, q, pairs, c, len(pairs))


@functools.lru_cache(maxsize=None)
def _labellings(m):
    return np.array(list(itertools.product([-1.0, 1.0], repeat=m)))


def contingency_brute(f, q, y, beta=None):
    """max over labellings y' of Delta + (y' - y)^T f: F_beta (all y') or PRBEP (beta None:
    only y' with as many positives as y)."""
    L = _labellings(len(y))
    pos = y > 0
    tp = ((L > 0) & pos).sum(1)
    tn = ((L < 0) & ~pos).sum(1)
    n_pos, n_neg = pos.sum(), (~pos).sum()
    if beta is None:
        keep = (L > 0).sum(1) == n_pos
        L, tp = L[keep], tp[keep]
        delta = 1.0 - tp / n_pos
    else:
        b2 = beta * beta
        delta = 1.0 - (1 + b2) * tp / (tp + n_neg - tn + b2 * n_pos)
    return _max_and_slope(delta + (L - y) @ f, (L - y) @ q)


@functools.lru_cache(maxsize=None)
def _perms(n):
    return np.array(list(itertools.permutations(range(n))))


def ndcg_brute(f, q, rel, qid, k):
    """Mean over queries (with two grades or more) of
    max_pi [c^T f(pi) - mean over ideal rankings s of c^T f(s) + 1 - NDCG@k(pi)]."""
    vals, slopes = [], []
    for qq in np.unique(qid):
        rows = np.flatnonzero(qid == qq)
        r = rel[rows]
        if r.min() == r.max():
            continue
        n = rows.size
        P = _perms(n)  # P[t, i] = document at position i
        c = 1.0 / np.sqrt(np.arange(1, n + 1))
        a = np.array([1.0 / math.log2(i + 2) if k is None or i < k else 0.0 for i in range(n)])
        gain = 2.0 ** r - 1
        dcg = (gain[P] * a).sum(1)
        ndcg = dcg / dcg.max()
        ideal = P[np.all(np.diff(r[P], axis=1) <= 0, axis=1)]
        fr, qr = f[rows], q[rows]
        v = fr[P] @ c - np.mean(fr[ideal] @ c) + 1.0 - ndcg
        sl = qr[P] @ c - np.mean(qr[ideal] @ c)
        top, s = _max_and_slope(v, sl)
        vals.append(top)
        slopes.append(s)
    return float(np.mean(vals)), float(np.mean(slopes))


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------
class Case(NamedTuple):
    name: str
    make: Callable  # X -> loss
    brute: Callable  # (f, q) -> (value, directional derivative)
    X: np.ndarray
    w: np.ndarray
    p: np.ndarray
    v: np.ndarray  # another point, for the subgradient inequality
    tied: bool


def _vec(draw, elements, n):
    return np.array(draw(st.lists(elements, min_size=n, max_size=n)), dtype=np.float64)


@st.composite
def scored(draw, m):
    """(X, w, p, v, tied): X = [I | D] dense, X w = f drawn on GRID (tied) or real."""
    k = draw(st.integers(0, 2))
    D = _vec(draw, st.sampled_from(DYADIC + (0.0,)), m * k).reshape(m, k)
    X = np.hstack([np.eye(m), D])
    tied = draw(st.booleans())
    # "real" scores: not dyadic, but on a grid of 1e-6, so that two scores (and two pieces)
    # either tie exactly or differ far beyond rounding (no ambiguous near-ties)
    reals = st.integers(-2_000_000, 2_000_000).map(lambda i: i * 1e-6)
    grid = st.sampled_from(draw(st.sampled_from([GRID, FINE_GRID])))
    f = _vec(draw, grid if tied else reals, m)
    g = _vec(draw, grid if tied else reals, m)
    u = _vec(draw, st.sampled_from((-0.5, 0.0, 0.25, 1.0)), k)
    if not tied:
        u[:] = 0.0  # f - D u would round: keep X w = f exact
    w = np.concatenate([f - D @ u, u])
    v = np.concatenate([g - D @ u, u])
    p = _vec(draw, st.sampled_from((-1.0, -0.5, 0.0, 0.0, 0.5, 1.0)), m + k)
    p[draw(st.integers(0, m + k - 1))] = draw(st.sampled_from((-1.0, 1.0)))
    return X, w, p, v, tied


def _two_classes(draw, m, values=(-1.0, 1.0)):
    """Labels from ``values`` with at least two distinct values present."""
    y = _vec(draw, st.sampled_from(values), m)
    i = draw(st.integers(0, m - 1))
    j = draw(st.integers(0, m - 2))
    j += j >= i
    lo, hi = sorted(draw(st.permutations(values))[:2])
    y[i], y[j] = lo, hi
    return y


@st.composite
def roc_case(draw):
    m = draw(st.integers(2, 9))
    X, w, p, v, tied = draw(scored(m))
    y = _two_classes(draw, m)
    return Case(f"roc y={y.tolist()}", lambda A: ROCArea(A, y), lambda f, q: roc_brute(f, q, y), X, w, p, v, tied)


@st.composite
def ordinal_case(draw):
    m = draw(st.integers(2, 9))
    X, w, p, v, tied = draw(scored(m))
    y = _two_classes(draw, m, (1.0, 2.0, 3.0, 5.0))
    cost = draw(st.sampled_from(["constant", "difference"]))
    return Case(f"ordinal-{cost} y={y.tolist()}", lambda A: OrdinalRegression(A, y, cost=cost),
                lambda f, q: ordinal_brute(f, q, y, cost), X, w, p, v, tied)


@st.composite
def pairs_case(draw):
    m = draw(st.integers(2, 8))
    X, w, p, v, tied = draw(scored(m))
    n = draw(st.integers(1, 10))
    P = np.array([draw(st.permutations(range(m)))[:2] for _ in range(n)])
    cost = _vec(draw, st.sampled_from((0.5, 1.0, 2.0, 3.0)), n)
    return Case(f"pairs {P.tolist()} cost={cost.tolist()}", lambda A: PreferencePairs(A, P, cost=cost),
                lambda f, q: pair_hinge_brute(f, q, P, cost, n), X, w, p, v, tied)


@st.composite
def fbeta_case(draw):
    m = draw(st.integers(2, 10))
    X, w, p, v, tied = draw(scored(m))
    y = _two_classes(draw, m)
    beta = draw(st.sampled_from([0.5, 1.0, 2.0]))
    return Case(f"fbeta-{beta} y={y.tolist()}", lambda A: FBeta(A, y, beta),
                lambda f, q: contingency_brute(f, q, y, beta), X, w, p, v, tied)


@st.composite
def prbep_case(draw):
    m = draw(st.integers(2, 10))
    X, w, p, v, tied = draw(scored(m))
    y = _two_classes(draw, m)
    return Case(f"prbep y={y.tolist()}", lambda A: PRBEP(A, y), lambda f, q: contingency_brute(f, q, y),
                X, w, p, v, tied)


@st.composite
def ndcg_case(draw):
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=2))
    m = sum(sizes)
    if m < 2:
        sizes, m = [2], 2
    X, w, p, v, tied = draw(scored(m))
    qid = np.repeat(np.arange(len(sizes)), sizes)
    rel = _vec(draw, st.sampled_from((0.0, 1.0, 2.0)), m)
    big = int(np.argmax(sizes))  # make sure one query can be ranked
    rows = np.flatnonzero(qid == big)
    if rows.size < 2:
        qid[:] = 0
        rows = np.arange(m)
    rel[rows[0]], rel[rows[1]] = 2.0, draw(st.sampled_from((0.0, 1.0)))
    k = draw(st.sampled_from([None, 1, 2, 3]))
    return Case(f"ndcg-k{k} rel={rel.tolist()} qid={qid.tolist()}", lambda A: NDCG(A, rel, qid, k=k),
                lambda f, q: ndcg_brute(f, q, rel, qid, k), X, w, p, v, tied)


CASES = {
    "roc": roc_case(),
    "ordinal": ordinal_case(),
    "pairs": pairs_case(),
    "fbeta": fbeta_case(),
    "prbep": prbep_case(),
    "ndcg": ndcg_case(),
}
KINDS = sorted(CASES)


def _close(a, b, tol=1e-10, *scales):
    return abs(a - b) <= tol * (1.0 + max([abs(a), abs(b), *map(abs, scales)]))


# --------------------------------------------------------------------------------------------
# Laws
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_value_matches_brute_force(kind, data):
    """A3 (ROC, with ties), A4 (ordinal, both costs), A5 (F_beta over all labellings), A6 (NDCG
    over all permutations), A7 (pairs with 1/|P|), and PRBEP; dense and sparse X agree."""
    case = data.draw(CASES[kind])
    f, q = case.X @ case.w, case.X @ case.p
    expected, _ = case.brute(f, q)
    for X in (case.X, sp.csr_matrix(case.X)):
        loss = case.make(X)
        value = loss.value(case.w)
        r, g = loss.value_and_subgradient(case.w)
        assert _close(value, expected, 1e-12, np.abs(f).sum()), (case.name, value, expected)
        assert r == pytest.approx(value, rel=1e-14, abs=1e-14)
        assert g.shape == (case.X.shape[1],)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_subgradient_inequality(kind, data):
    """R(v) >= R(w) + <g, v - w> for the plain subgradient and the sup-subgradient's g."""
    case = data.draw(CASES[kind])
    loss = case.make(case.X)
    r, g = loss.value_and_subgradient(case.w)
    _, gs = loss.sup_subgradient(case.w, case.p)
    for v in (case.v, case.w + case.p, case.w - 2.0 * case.p, np.zeros_like(case.w)):
        rv = loss.value(v)
        for gg in (g, gs):
            lin = r + gg @ (v - case.w)
            assert rv >= lin - 1e-10 * (1.0 + abs(rv) + abs(lin)), (case.name, rv, lin)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_sup_subgradient_is_the_directional_derivative(kind, data):
    """s = R'(w; p) (brute force: the largest slope among the active pieces, which at ties in
    f takes the one-sided derivative steepest along p); s >= <g, p>; <g_s, p> = s; and s is the
    limit of the one-sided difference quotients (f(w + h p) - f(w)) / h."""
    case = data.draw(CASES[kind])
    loss = case.make(case.X)
    f, q = case.X @ case.w, case.X @ case.p
    _, expected = case.brute(f, q)
    s, gs = loss.sup_subgradient(case.w, case.p)
    g = loss.subgradient(case.w)
    scale = float(np.abs(q).sum()) * 2.0
    assert _close(s, expected, 1e-10, scale), (case.name, s, expected)
    assert s >= g @ case.p - 1e-10 * (1.0 + scale)
    assert _close(gs @ case.p, s, 1e-10, scale)
    r0 = loss.value(case.w)
    quotients = []
    for e in range(12, 34, 4):
        h = 2.0 ** -e
        qh = (loss.value(case.w + h * case.p) - r0) / h
        noise = 1e-14 * (1.0 + abs(r0) + np.abs(f).sum()) / h
        assert qh >= s - noise - 1e-9 * (1.0 + abs(s)), (case.name, h, qh, s)  # convexity
        quotients.append(abs(qh - s) - noise)
    assert min(quotients) <= 1e-7 * (1.0 + abs(s)), (case.name, s, quotients)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_restrict_matches_oracle(kind, data):
    """phi(eta) = R(w + eta p) (no pass over X per evaluation), the one-sided derivatives are the
    directional derivatives along +-p at w + eta p, and minimize is exact: one-sided optimality
    and no worse than a grid."""
    case = data.draw(CASES[kind])
    loss = case.make(case.X)
    line = loss.restrict(case.w, case.p)
    scale = float(np.abs(case.X @ case.p).sum()) * 2.0
    for eta in STEPS:
        x = case.w + eta * case.p
        assert _close(line.value(eta), loss.value(x), 1e-12, scale)
        right, left = line.derivative(eta, 1), line.derivative(eta, -1)
        assert _close(right, loss.sup_subgradient(x, case.p)[0], 1e-10, scale)
        assert _close(left, -loss.sup_subgradient(x, -case.p)[0], 1e-10, scale)
        assert right >= left - 1e-10 * (1.0 + scale)
    for hi in (2.0, math.inf):
        eta = line.minimize(0.0, hi)
        assert 0.0 <= eta <= hi and math.isfinite(eta)
        phi = line.value(eta)
        top = hi if math.isfinite(hi) else max(4.0, 2.0 * eta)
        grid = [line.value(t) for t in np.linspace(0.0, top, 101)]
        assert phi <= min(grid) + 1e-10 * (1.0 + abs(phi)), (case.name, eta, phi, min(grid))
        # sorting losses compare exactly: the derivative flips between adjacent floats; NDCG
        # detects tied assignments within rounding, a window of about 1e-13 around a kink
        ulps = 1e4 if kind == "ndcg" else 8
        delta = ulps * np.finfo(float).eps * max(1.0, eta)
        if eta < hi:
            assert line.derivative(eta + delta, 1) >= -1e-9 * (1.0 + scale)
        if eta > 0:
            assert line.derivative(max(eta - delta, 0.0), -1) <= 1e-9 * (1.0 + scale)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_groups_sum_to_the_loss(kind, data):
    """groups() partitions (a subset of) the rows; the per-group values and subgradients sum to
    the loss's value and a subgradient of it."""
    case = data.draw(CASES[kind])
    loss = case.make(case.X)
    values, A = loss.group_value_and_subgradients(case.w)
    r, g = loss.value_and_subgradient(case.w)
    groups = loss.groups()
    rows = np.concatenate(groups)
    assert len(np.unique(rows)) == rows.size
    assert values.shape == (len(groups),) and A.shape == (len(groups), case.X.shape[1])
    assert values.sum() == pytest.approx(r, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(A.sum(axis=0), g, rtol=1e-12, atol=1e-12)


@st.composite
def ndcg_spread(draw):
    """Scores of one or two queries (2-6 documents) on a dyadic grid scaled by 2^10 or 2^20 (the
    scores spread far beyond the gains), or of the gains' scale (0.75 times a grade plus a
    dyadic offset); a dyadic direction."""
    sizes = draw(st.lists(st.integers(2, 6), min_size=1, max_size=2))
    m = sum(sizes)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    rel = _vec(draw, st.sampled_from((0.0, 1.0, 2.0)), m)
    rel[0], rel[1] = 2.0, draw(st.sampled_from((0.0, 1.0)))
    scale = draw(st.sampled_from((2.0 ** 10, 2.0 ** 20, None)))
    grid = _vec(draw, st.sampled_from(FINE_GRID), m)
    f = grid * scale if scale else 0.75 * rel / 4.0 + grid / 16.0
    q = _vec(draw, st.sampled_from(DYADIC), m)
    return f, q, rel, qid, draw(st.sampled_from([None, 1, 2, 3]))


@given(ndcg_spread())
@example((np.array([3.0, -1.0, 2.0, 0.5, -2.0]) * 2.0 ** 20,
          np.array([1.0, -1.0, 0.5, 2.0, -0.5]), np.array([2.0, 0.0, 1.0, 0.0, 2.0]),
          np.zeros(5, dtype=int), None))
@example((np.array([1024.0, 1024.0, -512.0, 0.0, 1024.0, 2048.0]),
          np.array([1.0, 2.0, -1.0, 0.5, -2.0, 1.0]), np.array([2.0, 0.0, 1.0, 0.0, 2.0, 1.0]),
          np.zeros(6, dtype=int), 2))
@example((0.1875 * np.array([2.0, 0.0, 1.0, 0.0, 2.0, 1.0]),
          np.array([1.0, -1.0, 0.5, 2.0, -0.5, 1.0]), np.array([2.0, 0.0, 1.0, 0.0, 2.0, 1.0]),
          np.zeros(6, dtype=int), None))
def test_ndcg_at_high_spread_matches_brute_force(data):
    """A6 at high score spread (the merge's forced orders cut nearly every state) and at the
    gains' scale (they cut least): value, a subgradient and the directional derivative against
    brute force over all permutations."""
    f, q, rel, qid, k = data
    X = np.eye(f.size)
    loss = NDCG(X, rel, qid, k=k)
    value, slope = ndcg_brute(f, q, rel, qid, k)
    r, g = loss.value_and_subgradient(f)
    assert _close(r, value, 1e-12, np.abs(f).sum()), (r, value)
    s, _ = loss.sup_subgradient(f, q)
    assert _close(s, slope, 1e-10, np.abs(q).sum()), (s, slope)
    assert g @ q <= s + 1e-10 * (1.0 + np.abs(q).sum())
    for v in (f + q, f - 3.0 * q, np.zeros_like(f)):
        rv = loss.value(v)
        assert rv >= r + g @ (v - f) - 1e-12 * (1.0 + abs(rv) + np.abs(f).sum())

"""Multivariate losses ([TVSL10] App. A.3, Algorithms 7-11): brute force at the sizes of the
notes' requirements, the errata E2, E3, E4 and E17, the work of the sorting oracles, input
validation, BMRM certificates against cvxpy + Clarabel, and real data (slow).

The hypothesis laws (values, subgradients, sup-subgradients at ties, lines) are in
``tests/properties/test_losses_multivariate.py``.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt.losses import multivariate as mv
from nsopt.losses.multivariate import (
    NDCG,
    PRBEP,
    FBeta,
    OrdinalRegression,
    PreferencePairs,
    ROCArea,
    ndcg_at_k,
)
from nsopt.regularizers import L2
from nsopt.testing import check_oracle


def _binary(m, d, seed, grid=False):
    """Data and a point; with ``grid`` the scores sit on a grid of 1/2 (ties and pair kinks)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = np.where(rng.random(m) < 0.4, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    if grid:
        X = np.hstack([np.eye(m), X])
        w = np.concatenate([rng.integers(-3, 4, m) / 2.0, np.zeros(d)])
    else:
        w = rng.standard_normal(d)
    return X, y, w


def _pairs_value(f, pairs, cost, norm):
    z = 1.0 + f[pairs[:, 0]] - f[pairs[:, 1]]
    return float(cost @ np.maximum(z, 0.0)) / norm


def _all_pairs(y):
    i, j = np.nonzero(y[:, None] < y[None, :])
    return np.c_[i, j]


# --------------------------------------------------------------------------------------------
# ROC area ([TVSL10] Alg. 7): A3
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("grid", [False, True], ids=["real", "ties"])
def test_roc_matches_pair_formula_m50(seed, grid):
    """A3: the O(m log m) oracle equals the O(m^2) formula (27) to 1e-12 for m = 50, with ties
    in f (grid) and without; its subgradient is the pair-formula gradient or another element of
    the subdifferential (the subgradient inequality holds)."""
    X, y, w = _binary(50, 4, seed, grid)
    loss = ROCArea(X, y)
    f = X @ w
    P = _all_pairs(y)
    expected = _pairs_value(f, P, np.ones(len(P)), len(P))
    r, g = loss.value_and_subgradient(w)
    assert r == pytest.approx(expected, rel=1e-12, abs=1e-14)
    if grid:
        assert len(np.unique(f)) < len(f)  # ties in f indeed
        assert np.any((1.0 + f[P[:, 0]] - f[P[:, 1]]) == 0.0)  # and pairs on their kink
    rng = np.random.default_rng(seed)
    for _ in range(20):
        v = w + rng.standard_normal(w.size)
        assert loss.value(v) >= r + g @ (v - w) - 1e-12


def test_roc_equals_preference_pairs_on_all_pairs():
    """ROCArea is PreferencePairs over every (negative, positive) pair: value, subgradient and
    sup-subgradient (at ties too) agree."""
    X, y, w = _binary(30, 3, 7, grid=True)
    roc, pairs = ROCArea(X, y), PreferencePairs(X, _all_pairs(y))
    rng = np.random.default_rng(0)
    assert roc.value(w) == pytest.approx(pairs.value(w), rel=1e-13)
    for _ in range(10):
        p = rng.integers(-2, 3, X.shape[1]) / 2.0
        s1, g1 = roc.sup_subgradient(w, p)
        s2, g2 = pairs.sup_subgradient(w, p)
        assert s1 == pytest.approx(s2, rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-14)


def test_roc_sup_subgradient_at_ties_by_hand():
    """Two negatives and one positive with every pair on its kink (f_j - f_i = 1): the sup along
    p counts exactly the pairs with q_i > q_j."""
    X = np.eye(3)
    y = np.array([-1.0, -1.0, 1.0])
    w = np.array([0.0, 0.0, 1.0])  # both pairs on the kink
    loss = ROCArea(X, y)
    assert loss.value(w) == 0.0
    p = np.array([1.0, -1.0, 0.0])  # q_0 - q_2 = 1 > 0 (pair becomes active), q_1 - q_2 = -1
    s, g = loss.sup_subgradient(w, p)
    assert s == pytest.approx(0.5)  # (1/2) * max(0, 1) + (1/2) * max(0, -1)
    np.testing.assert_allclose(g, [0.5, 0.0, -0.5])
    s, _ = loss.sup_subgradient(w, -p)
    assert s == pytest.approx(0.5)
    h = 1e-6
    assert (loss.value(w + h * p) - loss.value(w)) / h == pytest.approx(0.5, rel=1e-9)


class _Counter:
    def __init__(self, fn):
        self.fn, self.calls, self.sizes = fn, 0, []

    def __call__(self, primary, secondary=None):
        self.calls += 1
        self.sizes.append(primary.shape[0])
        return self.fn(primary, secondary)


@pytest.mark.parametrize("m", [40, 4000])
def test_roc_work_is_one_sort_of_m_keys_per_evaluation(monkeypatch, m):
    """A3 (scaling), counted instead of timed: every oracle call sorts the m keys once (no
    pair is ever formed: O(m log m)); a line evaluation sorts once and never touches X. The
    timing (m = 1e5 vs 2e5) is in benchmarks/roc_scaling.py."""
    counter = _Counter(mv._order)
    monkeypatch.setattr(mv, "_order", counter)
    X, y, w = _binary(m, 5, 1)
    loss = ROCArea(X, y)
    p = np.random.default_rng(2).standard_normal(5)
    for call in (lambda: loss.value(w), lambda: loss.value_and_subgradient(w),
                 lambda: loss.sup_subgradient(w, p)):
        before = counter.calls
        call()
        assert counter.calls == before + 1
    line = loss.restrict(w, p)

    def no_pass(*args):
        raise AssertionError("a line evaluation made a pass over X")

    monkeypatch.setattr(loss.data, "dot", no_pass)
    monkeypatch.setattr(loss.data, "rdot", no_pass)
    for call in (lambda: line.value(0.3), lambda: line.derivative(0.3, 1),
                 lambda: line.derivative(0.3, -1)):
        before = counter.calls
        call()
        assert counter.calls == before + 1
    assert set(counter.sizes) == {m}
    before = counter.calls
    line.minimize(0.0, math.inf)
    assert counter.calls - before <= 2 * 70  # bracketing + at most 64 halvings, one sort each


def test_line_minimize_bisection_matches_breakpoints(monkeypatch):
    """With the breakpoints hidden (as for m_+ m_- > MAX_BREAKPOINT_PAIRS) the bisection finds
    the same minimiser as the exact search over the breakpoints, to a few ulps."""
    X, y, w = _binary(60, 4, 3)
    loss = ROCArea(X, y)
    rng = np.random.default_rng(4)
    for _ in range(5):
        p = rng.standard_normal(4)
        line = loss.restrict(w, p)
        exact = nsopt.LineFunction.minimize(line, 0.0, math.inf)  # generic, from breakpoints
        monkeypatch.setattr(mv, "MAX_BREAKPOINT_PAIRS", 0)
        assert line.breakpoints() is None
        eta = line.minimize(0.0, math.inf)
        monkeypatch.undo()
        assert eta == pytest.approx(exact, rel=1e-13, abs=1e-300)
        assert line.value(eta) <= line.value(exact) + 1e-14


# --------------------------------------------------------------------------------------------
# Ordinal regression ([TVSL10] Alg. 8, erratum E3): A4
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_levels", [2, 3, 4, 5])
@pytest.mark.parametrize("cost", ["constant", "difference"])
def test_erratum_E3_ordinal_matches_brute_force(n_levels, cost):
    """A4: the corrected Alg. 8 (else between the copies, y_i / y_j not mixed, <= m) equals
    (1/M) sum_{y_i < y_j} C(y_i, y_j) max(0, 1 + f_i - f_j), M the number of such pairs, with
    ties in f; C = 1 and C = y_j - y_i on label values with gaps."""
    rng = np.random.default_rng(n_levels)
    values = np.array([1, 2, 4, 7, 8])[:n_levels]
    for grid in (False, True):
        m = 40
        y = values[rng.integers(0, n_levels, m)].astype(float)
        y[:2] = values[0], values[-1]
        X = rng.standard_normal((m, 3))
        w = rng.standard_normal(3)
        if grid:
            X = np.hstack([np.eye(m), X])
            w = np.concatenate([rng.integers(-3, 4, m) / 2.0, np.zeros(3)])
        f = X @ w
        P = _all_pairs(y)
        C = np.ones(len(P)) if cost == "constant" else y[P[:, 1]] - y[P[:, 0]]
        loss = OrdinalRegression(X, y, cost=cost)
        assert loss.n_pairs == len(P)
        assert loss.value(w) == pytest.approx(_pairs_value(f, P, C, len(P)), rel=1e-12)
        # the subgradient is the pair formula's (any element at the kinks)
        r, g = loss.value_and_subgradient(w)
        for _ in range(10):
            v = w + rng.standard_normal(w.size)
            assert loss.value(v) >= r + g @ (v - w) - 1e-12


def test_ordinal_two_levels_is_roc_area():
    X, y, w = _binary(50, 4, 5, grid=True)
    assert OrdinalRegression(X, y).value(w) == pytest.approx(ROCArea(X, y).value(w), rel=1e-13)


# --------------------------------------------------------------------------------------------
# Preference pairs ([TVSL10] Alg. 9, erratum E17): A7
# --------------------------------------------------------------------------------------------
def test_erratum_E17_preference_pairs_mean_over_pairs():
    """A7: the value is the formula with 1/|P| (printed Alg. 9 returns the sum); duplicating
    every pair leaves it unchanged; costs weight the pairs but do not renormalise."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 4))
    w = rng.standard_normal(4)
    P = np.array([rng.permutation(20)[:2] for _ in range(30)])
    cost = rng.integers(1, 4, 30).astype(float)
    f = X @ w
    loss = PreferencePairs(X, P, cost=cost)
    total = float(cost @ np.maximum(1 + f[P[:, 0]] - f[P[:, 1]], 0.0))
    assert loss.value(w) == pytest.approx(total / 30, rel=1e-13)
    assert loss.value(w) != pytest.approx(total)  # the printed box's sum
    doubled = PreferencePairs(X, np.vstack([P, P]), cost=np.r_[cost, cost])
    assert doubled.value(w) == pytest.approx(loss.value(w), rel=1e-13)
    # i below j: a pair with f_j >= f_i + 1 costs nothing
    X2 = np.eye(2)
    assert PreferencePairs(X2, [[0, 1]]).value(np.array([0.0, 1.0])) == 0.0
    assert PreferencePairs(X2, [[1, 0]]).value(np.array([0.0, 1.0])) == 2.0


# --------------------------------------------------------------------------------------------
# F_beta and PRBEP ([TVSL10] Alg. 11, erratum E2): A5
# --------------------------------------------------------------------------------------------
def _fbeta_brute(f, y, beta):
    m = len(y)
    L = np.array(list(itertools.product([-1.0, 1.0], repeat=m)))
    pos = y > 0
    tp, tn = ((L > 0) & pos).sum(1), ((L < 0) & ~pos).sum(1)
    b2 = beta * beta
    F = (1 + b2) * tp / (tp + (~pos).sum() - tn + b2 * pos.sum())
    return float(np.max(1 - F + (L - y) @ f))


def _fbeta_printed(f, y, beta):
    """Alg. 11 exactly as printed: p_0 = 0, p_i = 2 sum_{k=i}^{m+} (off by one, erratum E2)."""
    fp = np.sort(f[y > 0])[::-1]
    fn = np.sort(f[y < 0])
    mp, mn = len(fp), len(fn)
    p = np.r_[0.0, [2 * fp[i - 1:].sum() for i in range(1, mp + 1)]]
    n = np.r_[0.0, [2 * fn[j - 1:].sum() for j in range(1, mn + 1)]]
    b2 = beta * beta
    return max(1 - (1 + b2) * i / (i + mn - j + b2 * mp) - p[i] + n[j]
               for i in range(mp + 1) for j in range(mn + 1))


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_erratum_E2_fbeta_matches_brute_force(beta):
    """A5: with the corrected indexing the oracle equals the max over all 2^m labellings (m <= 10);
    the printed indexing does not (it disagreed in 133 of 150 cases in the notes' check)."""
    rng = np.random.default_rng(int(beta * 10))
    printed_wrong = 0
    for t in range(25):
        m = int(rng.integers(2, 11))
        y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
        y[:2] = [1.0, -1.0]
        X = rng.standard_normal((m, 3))
        w = rng.standard_normal(3) * rng.choice([0.05, 0.3, 1.0])
        f = X @ w
        expected = _fbeta_brute(f, y, beta)
        loss = FBeta(X, y, beta)
        r, g = loss.value_and_subgradient(w)
        assert r == pytest.approx(expected, rel=1e-12, abs=1e-12)
        ystar = loss.labelling(w)
        assert set(np.unique(ystar)) <= {-1.0, 1.0}
        np.testing.assert_allclose(g, (ystar - y) @ X, atol=1e-12)  # g = (y* - y)^T X
        printed_wrong += abs(_fbeta_printed(f, y, beta) - expected) > 1e-9
    assert printed_wrong > 10


def test_fbeta_and_prbep_bound_their_losses():
    """R(w) >= Delta at the predicted labelling: sign(f) for F_beta, the top m_+ scores for PRBEP
    (break-even: as many predicted positives as true ones)."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        m = int(rng.integers(5, 40))
        y = np.where(rng.random(m) < 0.3, 1.0, -1.0)
        y[:2] = [1.0, -1.0]
        X = rng.standard_normal((m, 4))
        w = rng.standard_normal(4)
        f = X @ w
        pos, pred = y > 0, f > 0
        tp, fp = (pos & pred).sum(), (~pos & pred).sum()
        fb = 2 * tp / (2 * tp + fp + (pos & ~pred).sum())
        assert FBeta(X, y).value(w) >= 1 - fb - 1e-12
        top = np.argsort(-f)[: pos.sum()]
        assert PRBEP(X, y).value(w) >= 1 - pos[top].sum() / pos.sum() - 1e-12


def test_contingency_sup_subgradient_across_tied_tables():
    """Two tables tie (PRBEP: a = 0 and a = 1 at f = (1/4, 0 | 0, 0); F_beta at w = 0, every b
    with a = 0): the sup along q is the best slope over all tied tables, whichever the search
    met first; it equals the one-sided difference quotient."""
    X = np.eye(4)
    y = np.array([1.0, 1.0, -1.0, -1.0])
    w = np.array([0.25, 0.0, 0.0, 0.0])
    h = 2.0 ** -20
    for loss, point in ((PRBEP(X, y), w), (FBeta(X, y), np.zeros(4))):
        for q in ([1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0], [-1.0, 0.5, 0.0, -1.0],
                  [0.0, 0.0, 1.0, -1.0]):
            q = np.array(q)
            s, g = loss.sup_subgradient(point, q)
            fd = (loss.value(point + h * q) - loss.value(point)) / h
            assert s == pytest.approx(fd, abs=1e-9), (type(loss).__name__, q, s, fd)
            assert g @ q == pytest.approx(s)


def test_prbep_matches_brute_force_m10():
    rng = np.random.default_rng(5)
    for _ in range(10):
        m = 10
        y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
        y[:2] = [1.0, -1.0]
        X = rng.standard_normal((m, 3))
        w = rng.standard_normal(3) * 0.3
        f = X @ w
        L = np.array(list(itertools.product([-1.0, 1.0], repeat=m)))
        L = L[(L > 0).sum(1) == (y > 0).sum()]
        tp = ((L > 0) & (y > 0)).sum(1)
        expected = np.max(1 - tp / (y > 0).sum() + (L - y) @ f)
        assert PRBEP(X, y).value(w) == pytest.approx(expected, rel=1e-12, abs=1e-12)


# --------------------------------------------------------------------------------------------
# NDCG ([TVSL10] Alg. 10, erratum E4): A6
# --------------------------------------------------------------------------------------------
def _ndcg_query_brute(f, rel, k):
    """max over rankings pi (position i holds document pi(i)) of
    c^T f(pi) - mean_{ideal s} c^T f(s) + 1 - NDCG@k(pi)."""
    n = len(f)
    P = np.array(list(itertools.permutations(range(n))))
    c = 1 / np.sqrt(np.arange(1, n + 1))
    a = np.array([1 / math.log2(i + 2) if k is None or i < k else 0.0 for i in range(n)])
    gain = 2.0 ** rel - 1
    dcg = (gain[P] * a).sum(1)
    ideal = P[np.all(np.diff(rel[P], axis=1) <= 0, axis=1)]
    return float(np.max(f[P] @ c - np.mean(f[ideal] @ c) + 1 - dcg / dcg.max()))


@pytest.mark.parametrize("k", [None, 2, 3])
def test_erratum_E4_ndcg_matches_brute_force_permutations(k):
    """A6: the assignment with C_ij = c_i f_j - a_i b_j equals the brute-force max over all
    permutations (n <= 6), per query, averaged over queries; the printed C_ij = c_i f_i - b_i a_j
    does not (its score term ignores the permutation)."""
    rng = np.random.default_rng(0 if k is None else k)
    printed_wrong = 0
    for _ in range(15):
        sizes = rng.integers(2, 7, size=2)
        qid = np.repeat([3, 8], sizes)
        m = qid.size
        rel = rng.integers(0, 3, m).astype(float)
        rel[0], rel[sizes[0]] = 2.0, 2.0
        rel[1], rel[sizes[0] + 1] = 0.0, 1.0
        X = rng.standard_normal((m, 3))
        w = rng.standard_normal(3)
        f = X @ w
        expected = np.mean([_ndcg_query_brute(f[qid == q], rel[qid == q], k) for q in (3, 8)])
        loss = NDCG(X, rel, qid, k=k)
        assert loss.value(w) == pytest.approx(expected, rel=1e-12)
        # printed cost matrix c_i f_i - b_i a_j: the assignment no longer depends on f's order
        for q in (3, 8):
            rows = np.flatnonzero(qid == q)
            rows = rows[np.argsort(-rel[rows], kind="stable")]
            fq, r = f[rows], rel[rows]
            n = len(rows)
            c = 1 / np.sqrt(np.arange(1, n + 1))
            a = np.array([1 / math.log2(i + 2) if k is None or i < k else 0.0 for i in range(n)])
            b = (2.0 ** r - 1) / (a @ (2.0 ** r - 1))
            from scipy.optimize import linear_sum_assignment
            C = (c * fq)[:, None] - np.outer(b, a)
            _, perm = linear_sum_assignment(C, maximize=True)
            printed = c @ fq[perm] - c @ fq + b @ (a - a[perm])
            printed_wrong += abs(printed - _ndcg_query_brute(fq, r, k)) > 1e-9
    assert printed_wrong > 5


def test_ndcg_invariant_to_row_order_and_bounds_ndcg_loss():
    """The loss does not depend on the order of the rows (in particular within a relevance
    grade), and each query's term bounds its NDCG@k loss of the predicted ranking."""
    X, rel, qid = nsopt.datasets.make_ranking(6, 8, 4, random_state=3)
    rng = np.random.default_rng(1)
    for k in (None, 3):
        loss = NDCG(X, rel, qid, k=k)
        for _ in range(5):
            w = rng.standard_normal(4) * rng.choice([0.1, 1.0])
            perm = rng.permutation(len(rel))
            shuffled = NDCG(X[perm], rel[perm], qid[perm], k=k)
            assert shuffled.value(w) == pytest.approx(loss.value(w), rel=1e-12)
            values, _ = loss.group_value_and_subgradients(w)
            for v, rows in zip(values * loss.n_queries, loss.groups()):
                metric = ndcg_at_k(X[rows] @ w, rel[rows], qid[rows], k=k)
                assert v >= 1 - metric - 1e-12


def test_ndcg_sup_subgradient_with_all_scores_tied():
    """At w = 0 every permutation that maximises the gain loss is a maximiser; the sup along p
    is the best of them (brute force), not the one the first assignment happened to pick."""
    X, rel, qid = nsopt.datasets.make_ranking(2, 5, 3, random_state=0)
    loss = NDCG(X, rel, qid, k=2)
    rng = np.random.default_rng(0)
    for _ in range(10):
        p = rng.standard_normal(3)
        s, g = loss.sup_subgradient(np.zeros(3), p)
        h = 1e-7
        fd = (loss.value(h * p) - loss.value(np.zeros(3))) / h
        assert s == pytest.approx(fd, rel=1e-6, abs=1e-9)
        assert s >= loss.subgradient(np.zeros(3)) @ p - 1e-12


def test_ndcg_query_rules():
    """Queries with a single grade (or a single document) are skipped and counted; groups()
    are the kept queries; with no query left it is an error."""
    X = np.arange(14.0).reshape(7, 2)
    rel = np.array([0, 1, 2, 1, 1, 0, 2.0])
    qid = np.array([1, 1, 1, 2, 2, 3, 4])  # query 2: one grade; 3, 4: one document
    loss = NDCG(X, rel, qid)
    assert loss.n_queries == 1 and loss.n_skipped_queries == 3
    assert [sorted(g.tolist()) for g in loss.groups()] == [[0, 1, 2]]
    with pytest.raises(ValueError, match="single relevance grade"):
        NDCG(X[3:5], rel[3:5], qid[3:5])


def test_ndcg_at_k_metric():
    assert ndcg_at_k([3.0, 2.0, 1.0], [2, 1, 0], [1, 1, 1], k=2) == pytest.approx(1.0)
    # reversed: DCG@2 = 0/1 + 1/log2(3); ideal 3 + 1/log2(3)
    expected = (1 / math.log2(3)) / (3 + 1 / math.log2(3))
    assert ndcg_at_k([1.0, 2.0, 3.0], [2, 1, 0], [1, 1, 1], k=2) == pytest.approx(expected)
    # ties are averaged: a constant scorer gets the mean over all orders
    rel = np.array([2.0, 0.0, 1.0])
    mean = np.mean([ndcg_at_k(-np.argsort(p).astype(float), rel, [0] * 3, k=2)
                    for p in itertools.permutations(range(3))])
    assert ndcg_at_k(np.zeros(3), rel, [0] * 3, k=2) == pytest.approx(mean, rel=1e-12)
    # queries without a relevant document are skipped
    assert ndcg_at_k([1.0, 0.0, 5.0], [1, 0, 0], [1, 1, 2], k=1) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no query has a relevant"):
        ndcg_at_k([1.0, 2.0], [0, 0], [1, 1])


# --------------------------------------------------------------------------------------------
# Common: dense = sparse, the oracle laws on every loss, decision_function, validation
# --------------------------------------------------------------------------------------------
def _catalogue(seed=0, m=24):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 4))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = np.where(rng.random(m) < 0.4, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    yo = rng.integers(1, 5, m).astype(float)
    yo[:2] = [1, 4]
    P = np.array([rng.permutation(m)[:2] for _ in range(40)])
    rel = rng.integers(0, 3, m).astype(float)
    qid = np.repeat([1, 2, 3], m // 3)
    rel[[0, 8, 16]] = 2.0
    rel[[1, 9, 17]] = 0.0
    return X, {
        "roc": lambda A: ROCArea(A, y),
        "ordinal": lambda A: OrdinalRegression(A, yo),
        "ordinal-difference": lambda A: OrdinalRegression(A, yo, cost="difference"),
        "pairs": lambda A: PreferencePairs(A, P),
        "fbeta": lambda A: FBeta(A, y, 2.0),
        "prbep": lambda A: PRBEP(A, y),
        "ndcg": lambda A: NDCG(A, rel, qid, k=3),
    }


NAMES = list(_catalogue()[1])


@pytest.mark.parametrize("name", NAMES)
def test_dense_and_sparse_agree(name):
    X, make = _catalogue()
    dense, sparse = make[name](X), make[name](sp.csr_matrix(X))
    rng = np.random.default_rng(1)
    for _ in range(3):
        w, p = rng.standard_normal(4), rng.standard_normal(4)
        r1, g1 = dense.value_and_subgradient(w)
        r2, g2 = sparse.value_and_subgradient(w)
        assert r1 == pytest.approx(r2, rel=1e-12)
        np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-14)
        s1, _ = dense.sup_subgradient(w, p)
        s2, _ = sparse.sup_subgradient(w, p)
        assert s1 == pytest.approx(s2, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("name", NAMES)
def test_check_oracle(name):
    """nsopt.testing.check_oracle: subgradient inequality, sup_subgradient as the directional
    derivative, restrict consistent with the oracle, exact minimize (random points and w = 0,
    where everything ties)."""
    X, make = _catalogue()
    loss = make[name](X)
    assert loss.lower_bound == 0.0
    check_oracle(loss, n=4, seed=1)
    check_oracle(loss, points=np.zeros((1, 4)), n=3, seed=2)


def test_decision_function_and_repr():
    X, make = _catalogue()
    loss = make["roc"](X)
    w = np.arange(4.0)
    np.testing.assert_allclose(loss.decision_function(X[:5], w), X[:5] @ w)
    with pytest.raises(ValueError, match="features"):
        loss.decision_function(X[:, :3], w)
    assert "ROCArea(m=24, d=4" in repr(loss)
    assert [g.tolist() for g in loss.groups()] == [list(range(24))]


@pytest.mark.parametrize("make, match", [
    (lambda X: ROCArea(X, np.ones(4)), "both classes"),
    (lambda X: ROCArea(X, [1, -1, 1, 0]), "only -1 and \\+1"),
    (lambda X: ROCArea(X, [1, -1, 1]), "must match"),
    (lambda X: OrdinalRegression(X, [1, 2, 2.5, 3]), "integer labels"),
    (lambda X: OrdinalRegression(X, [2, 2, 2, 2]), "two distinct"),
    (lambda X: OrdinalRegression(X, [1, 2, 3, 4], cost="squared"), "cost must be"),
    (lambda X: PreferencePairs(X, np.zeros((0, 2), int)), "empty"),
    (lambda X: PreferencePairs(X, [[0, 4]]), "out of range"),
    (lambda X: PreferencePairs(X, [[-1, 2]]), "out of range"),
    (lambda X: PreferencePairs(X, [[1, 1]]), "itself"),
    (lambda X: PreferencePairs(X, [0, 1]), "shape"),
    (lambda X: PreferencePairs(X, [[0.5, 1]]), "integer"),
    (lambda X: PreferencePairs(X, [[0, 1]], cost=[-1.0]), "nonnegative"),
    (lambda X: FBeta(X, -np.ones(4)), "positive"),
    (lambda X: FBeta(X, [1, -1, 1, -1], beta=0), "beta"),
    (lambda X: PRBEP(X, -np.ones(4)), "positive"),
    (lambda X: NDCG(X, [1, 0, 2, -1], [1, 1, 1, 1]), ">= 0"),
    (lambda X: NDCG(X, [1, 0, 2, 1], [1, 1, 1]), "must match"),
    (lambda X: NDCG(X, [1, 0, 2, 1], [1, 1, 1, 1], k=0), "positive integer"),
])
def test_validation_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make(np.ones((4, 2)))


# --------------------------------------------------------------------------------------------
# BMRM against cvxpy + Clarabel
# --------------------------------------------------------------------------------------------
def _cvx_pairs_optimum(X, pairs, cost, norm, lam):
    """min_w lam/2 ||w||^2 + (1/norm) sum_k cost_k max(0, 1 + <x_i - x_j, w>), all pairs explicit."""
    import cvxpy as cp

    A = X[pairs[:, 0]] - X[pairs[:, 1]]
    w = cp.Variable(X.shape[1])
    obj = 0.5 * lam * cp.sum_squares(w) + cp.sum(cp.multiply(cost, cp.pos(1 + A @ w))) / norm
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


def _bmrm_cases():
    rng = np.random.default_rng(11)
    m, d = 40, 5
    X = rng.standard_normal((m, d))
    wt = rng.standard_normal(d)
    y = np.where(X @ wt + 0.8 * rng.standard_normal(m) > 0.3, 1.0, -1.0)
    yo = np.digitize(X @ wt + 0.5 * rng.standard_normal(m), [-1.0, 0.0, 1.0]) + 1.0
    P = np.array([rng.permutation(m)[:2] for _ in range(80)])
    cost = rng.integers(1, 4, 80).astype(float)
    allp, ordp = _all_pairs(y), _all_pairs(yo)
    return {
        "roc": (ROCArea(X, y), X, allp, np.ones(len(allp)), len(allp)),
        "pairs": (PreferencePairs(X, P, cost=cost), X, P, cost, 80),
        "ordinal": (OrdinalRegression(X, yo), X, ordp, np.ones(len(ordp)), len(ordp)),
        "ordinal-difference": (OrdinalRegression(X, yo, cost="difference"), X, ordp,
                               yo[ordp[:, 1]] - yo[ordp[:, 0]], len(ordp)),
    }


@pytest.mark.parametrize("name", ["roc", "pairs", "ordinal", "ordinal-difference"])
def test_bmrm_certificate_brackets_cvxpy_optimum(name):
    loss, X, pairs, cost, norm = _bmrm_cases()[name]
    lam = 0.05
    J = nsopt.RegularizedRisk(loss, L2(), lam)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-6, max_iter=2000)
    f_star = _cvx_pairs_optimum(X, pairs, cost, norm, lam)
    tol = 1e-6 * max(1.0, abs(f_star))
    assert res.status is nsopt.Status.CONVERGED, res
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))


# --------------------------------------------------------------------------------------------
# Real data (slow): OHSUMED ranking, a9a ROC area
# --------------------------------------------------------------------------------------------
def _load(name):
    """(X, y) or (X, y, qid) from the shared data folder; skips cleanly when it is missing."""
    try:
        from nsopt.io import find_data_dir, load_dataset
    except ImportError:
        load_dataset = None
    if load_dataset is not None:
        if find_data_dir() is None:
            pytest.skip("the shared data folder (../shared/data) is not available")
        try:
            return load_dataset(name)
        except FileNotFoundError as exc:
            pytest.skip(str(exc))
    import lzma
    from pathlib import Path

    from sklearn.datasets import load_svmlight_file

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / f"{name}.xz"
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    ranking = name.startswith("OHSUMED")
    return load_svmlight_file(lzma.open(path, "rb"), n_features=25 if ranking else 123,
                              query_id=ranking)


def _ohsumed():
    Xtr, rtr, qtr = _load("OHSUMED_Fold1_trainingset.txt")
    Xte, rte, qte = _load("OHSUMED_Fold1_testset.txt")
    Xtr, Xte = np.asarray(Xtr.todense()), np.asarray(Xte.todense())
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, rtr, qtr, (Xte - mu) / sd, rte, qte


def _random_baseline(rte, qte, n=20):
    rng = np.random.default_rng(0)
    return float(np.mean([ndcg_at_k(rng.standard_normal(rte.size), rte, qte, 10) for _ in range(n)]))


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "the structured NDCG hinge ([TVSL10] Alg. 10) is degenerate on OHSUMED with a linear model: "
    "BMRM certifies w = 0 optimal (R(w) >= R(0) = 1 for every w within the gap), so the model "
    "ties every document and scores like a random ranking; see NDCG's Notes"))
def test_ndcg_ohsumed_beats_random():
    Xtr, rtr, qtr, Xte, rte, qte = _ohsumed()
    loss = NDCG(Xtr, rtr, qtr, k=10)
    J = nsopt.RegularizedRisk(loss, L2(), 1e-3)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-3, max_time=60)
    test_ndcg = ndcg_at_k(Xte @ res.x, rte, qte, 10)
    baseline = _random_baseline(rte, qte)
    print(f"OHSUMED Fold1 NDCG loss: test NDCG@10 = {test_ndcg:.4f} (random {baseline:.4f}), "
          f"J = {res.fun:.6f} >= {res.lower_bound:.6f}, |w| = {np.linalg.norm(res.x):.3g}")
    assert res.lower_bound <= res.fun
    assert test_ndcg >= baseline + 0.05


@pytest.mark.slow
def test_pairwise_ranking_ohsumed_beats_random():
    """The practical ranker on OHSUMED: PreferencePairs over each query's pairs of different
    relevance (RankSVM), trained by BMRM; NDCG@10 on the test fold, against random scores."""
    Xtr, rtr, qtr, Xte, rte, qte = _ohsumed()
    pairs = []
    for q in np.unique(qtr):
        rows = np.flatnonzero(qtr == q)
        i, j = np.nonzero(rtr[rows][:, None] < rtr[rows][None, :])
        pairs.append(np.c_[rows[i], rows[j]])
    loss = PreferencePairs(Xtr, np.vstack(pairs))
    J = nsopt.RegularizedRisk(loss, L2(), 1e-2)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-3, max_time=90)
    test_ndcg = ndcg_at_k(Xte @ res.x, rte, qte, 10)
    baseline = _random_baseline(rte, qte)
    print(f"OHSUMED Fold1 pairwise: test NDCG@10 = {test_ndcg:.4f} (random {baseline:.4f}), "
          f"{loss.n_pairs} pairs, {res.nit} iterations, gap {res.gap:.2e}")
    assert res.certificate.check(J) <= res.fun
    assert test_ndcg >= baseline + 0.1


@pytest.mark.slow
def test_roc_area_a9a_test_auc():
    from sklearn.metrics import roc_auc_score

    X, y = _load("a9a")
    Xt, yt = _load("a9a.t")
    assert X.shape[1] == Xt.shape[1] == 123
    J = nsopt.RegularizedRisk(ROCArea(X, y), L2(), 1e-3)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-3, max_time=90)
    auc = roc_auc_score(yt, Xt @ res.x)
    print(f"a9a ROCArea: test AUC = {auc:.4f}, {res.nit} iterations, relative gap "
          f"{res.gap / res.fun:.2e}, {res.time:.1f} s")
    assert res.lower_bound <= res.fun
    assert auc >= 0.85

"""The batched NDCG oracle (issue 11): every query's assignment as a compiled merge of its
relevance grades (``_multivariate_kernels.ndcg_merge``) equals the per-query linear assignment
it replaces (``NDCG._query``, scipy's ``linear_sum_assignment``) and brute force over all
rankings."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsopt.losses import multivariate as mv
from nsopt.losses.multivariate import NDCG


def _brute(f, rel, k):
    """max over rankings of c^T f(pi) - mean_{ideal s} c^T f(s) + 1 - NDCG@k(pi)."""
    n = len(f)
    P = np.array(list(itertools.permutations(range(n))))
    c = 1 / np.sqrt(np.arange(1, n + 1))
    a = np.array([1 / math.log2(i + 2) if k is None or i < k else 0.0 for i in range(n)])
    dcg = ((2.0 ** rel - 1)[P] * a).sum(1)
    ideal = P[np.all(np.diff(rel[P], axis=1) <= 0, axis=1)]
    return float(np.max(f[P] @ c - np.mean(f[ideal] @ c) + 1 - dcg / dcg.max()))


def _per_query_lsa(loss, f):
    """The replaced path: one scipy assignment per query."""
    values = np.empty(loss.n_queries)
    g = np.zeros(loss.m)
    for t, (rows, c, c_bar, a, b) in enumerate(loss._queries):
        values[t], g[rows] = NDCG._query(f[rows], c, c_bar, a, b)
    return values / loss.n_queries, g / loss.n_queries


@st.composite
def ranking(draw, max_rows=30):
    m = draw(st.integers(2, max_rows))
    n_grades = draw(st.integers(2, 4))
    rel = np.array(draw(st.lists(st.integers(0, n_grades - 1), min_size=m, max_size=m)), float)
    qid = np.array(draw(st.lists(st.integers(0, 3), min_size=m, max_size=m)))
    ties = draw(st.booleans())
    f = np.array(draw(st.lists(st.integers(-3, 3) if ties else
                               st.floats(-3, 3, allow_nan=False, width=32),
                               min_size=m, max_size=m)), float)
    k = draw(st.sampled_from([None, 1, 2, 5]))
    return f, rel, qid, k


@settings(max_examples=150, deadline=None)
@given(ranking())
def test_merge_equals_per_query_assignment(data):
    f, rel, qid, k = data
    X = f[:, None]  # w = 1 gives the scores f
    try:
        loss = NDCG(X, rel, qid, k=k)
    except ValueError:  # no query with two grades
        return
    values, g = loss._score_group_grad(f)
    ref_values, ref_g = _per_query_lsa(loss, f)
    np.testing.assert_allclose(values, ref_values, rtol=0, atol=1e-12)
    if np.unique(f).size == f.size:  # no ties: the maximising ranking is unique
        np.testing.assert_allclose(g, ref_g, rtol=0, atol=1e-12)
    # the merge's gradient is a subgradient (ties pick any maximiser)
    rng = np.random.default_rng(0)
    for _ in range(3):
        f2 = f + rng.standard_normal(f.size)
        assert _per_query_lsa(loss, f2)[0].sum() >= values.sum() + g @ (f2 - f) - 1e-10


@pytest.mark.parametrize("k", [None, 1, 3])
def test_merge_equals_brute_force(k):
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(2, 7))
        rel = rng.integers(0, 3, n).astype(float)
        if rel.min() == rel.max():
            continue
        f = rng.integers(-2, 3, n).astype(float) if rng.random() < 0.5 else rng.standard_normal(n)
        loss = NDCG(f[:, None], rel, np.zeros(n), k=k)
        value = loss._score_group_grad(f)[0].sum()
        assert value == pytest.approx(_brute(f, rel, k), abs=1e-12)


def test_queries_over_the_state_cap_fall_back_to_the_assignment(monkeypatch):
    rng = np.random.default_rng(1)
    m = 40
    f = rng.standard_normal(m)
    rel = rng.integers(0, 3, m).astype(float)
    qid = np.repeat([0, 1], m // 2)
    loss = NDCG(f[:, None], rel, qid)
    merged = loss._score_group_grad(f)
    monkeypatch.setattr(mv, "_MAX_MERGE_STATES", 1)  # every query to scipy
    fallback = loss._score_group_grad(f)
    np.testing.assert_allclose(merged[0], fallback[0], atol=1e-12)
    np.testing.assert_allclose(merged[1], fallback[1], atol=1e-12)
    ref = _per_query_lsa(loss, f)
    np.testing.assert_array_equal(fallback[0], ref[0])


def test_value_and_subgradient_is_one_pass_each_way():
    """One X @ w and one X.T @ g per oracle call, whatever the number of queries."""
    rng = np.random.default_rng(2)
    m, d = 60, 4
    X = rng.standard_normal((m, d))
    rel = rng.integers(0, 3, m).astype(float)
    qid = rng.integers(0, 10, m)
    loss = NDCG(X, rel, qid)
    calls = {"dot": 0, "rdot": 0}
    dot, rdot = loss.data.dot, loss.data.rdot

    def count(name, fn):
        def wrapped(*args):
            calls[name] += 1
            return fn(*args)
        return wrapped

    loss.data.dot, loss.data.rdot = count("dot", dot), count("rdot", rdot)
    w = rng.standard_normal(d)
    value, grad = loss.value_and_subgradient(w)
    assert calls == {"dot": 1, "rdot": 1}
    ref_values, ref_g = _per_query_lsa(loss, X @ w)
    assert value == pytest.approx(ref_values.sum(), abs=1e-12)
    np.testing.assert_allclose(grad, X.T @ ref_g, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(ranking(max_rows=40))
def test_tail_by_prefix_sums_equals_the_sweep(data):
    """NDCG@k: the tails after position k by prefix sums equal the plain sweep (and LSA)."""
    f, rel, qid, k = data
    try:
        loss = NDCG(f[:, None], rel, qid, k=k)
    except ValueError:
        return
    fast = loss._score_group_grad(f)
    saved, mv._MAX_TAIL_PREFIX = mv._MAX_TAIL_PREFIX, 0
    try:
        sweep = loss._score_group_grad(f)
    finally:
        mv._MAX_TAIL_PREFIX = saved
    np.testing.assert_allclose(fast[0], sweep[0], rtol=0, atol=1e-12)
    ref = _per_query_lsa(loss, f)[0]
    np.testing.assert_allclose(sweep[0], ref, rtol=0, atol=1e-12)


def test_truncation_keeps_large_queries_in_the_merge(monkeypatch):
    """With k = 2 only the states with at most 2 documents placed are searched (each grade's
    count capped at 2: 27 states for 3 grades), so a query of 60 documents, 20 per grade
    (21^3 = 9261 states untruncated), stays in the merge under a cap of 100 states, while
    k = None sends it to linear_sum_assignment."""
    rng = np.random.default_rng(4)
    f = rng.standard_normal(60)
    rel = np.repeat([0.0, 1.0, 2.0], 20)
    monkeypatch.setattr(mv, "_MAX_MERGE_STATES", 100)
    calls = []
    query = NDCG._query

    def spy(*args, **kwargs):
        calls.append(1)
        return query(*args, **kwargs)

    monkeypatch.setattr(NDCG, "_query", staticmethod(spy))
    truncated = NDCG(f[:, None], rel, np.zeros(60), k=2)
    values, g = truncated._score_group_grad(f)
    assert not calls
    full = NDCG(f[:, None], rel, np.zeros(60))
    full._score_group_grad(f)
    assert len(calls) == 1
    ref_values, ref_g = _per_query_lsa(truncated, f)
    np.testing.assert_allclose(values, ref_values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g, ref_g, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scale", [0.0, 1e-3, 0.03, 0.3, 3.0, 300.0])
@pytest.mark.parametrize("k", [None, 4])
def test_pruned_merge_equals_assignment_at_every_score_scale(scale, k):
    """The forced orders prune the programme's states by the spread of the scores against
    the gains (none pruned at about the gains' scale, nearly all far from it): the value
    and gradient equal linear_sum_assignment's at every scale, on queries of 30-60
    documents in 3-4 grades."""
    rng = np.random.default_rng(int(scale * 1000) + (k or 0))
    m = 200
    qid = rng.integers(0, 4, m)
    rel = rng.integers(0, 4, m).astype(float)
    f = scale * rng.standard_normal(m)
    loss = NDCG(f[:, None], rel, qid, k=k)
    values, g = loss._score_group_grad(f)
    ref_values, ref_g = _per_query_lsa(loss, f)
    np.testing.assert_allclose(values, ref_values, rtol=0, atol=1e-12 * (1 + scale))
    if scale > 0:
        np.testing.assert_allclose(g, ref_g, rtol=0, atol=1e-12)

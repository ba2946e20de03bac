"""The NDCG merge's forced orders by position (issue 11, the untruncated oracle at high score
spread): the pruned programme (``_MERGE_PRUNE = 2``, the default) gives the value of brute
force over all rankings and a gradient that is the slope of a maximising ranking, at every
score spread (far beyond the gains, of the gains' order, ties); its values equal the previous
rule's (one ratio range for all positions, ``_MERGE_PRUNE = 1``), the whole merge's
(``_MERGE_PRUNE = 0``) and scipy's per-query assignment to 1e-12."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nsopt.losses import _multivariate_kernels as kern
from nsopt.losses import multivariate as mv
from nsopt.losses.multivariate import NDCG


def _pieces(f, rel, k):
    """Every ranking's value and score slope for one query (rows in the given order)."""
    n = len(f)
    P = np.array(list(itertools.permutations(range(n))))  # P[t, i]: document at position i
    c = 1.0 / np.sqrt(np.arange(1, n + 1))
    a = np.array([1.0 / math.log2(i + 2) if k is None or i < k else 0.0 for i in range(n)])
    dcg = ((2.0 ** rel - 1.0)[P] * a).sum(1)
    ideal = P[np.all(np.diff(rel[P], axis=1) <= 0, axis=1)]
    c_bar = np.zeros(n)  # mean over the ideal rankings of the weight c at each document
    for s in ideal:
        c_bar[s] += c
    c_bar /= len(ideal)
    slopes = np.zeros((len(P), n))
    slopes[np.arange(len(P))[:, None], P] = c
    slopes -= c_bar
    return slopes @ f + 1.0 - dcg / dcg.max(), slopes


def _merged(loss, f):
    """``loss._score_group_grad(f)``, asserting that no query fell back to the assignment
    (a layer left empty by the forced orders would hide a wrong order behind the fallback)."""
    calls = []
    query = NDCG._query
    NDCG._query = staticmethod(lambda *args, **kw: calls.append(1) or query(*args, **kw))
    try:
        out = loss._score_group_grad(f)
    finally:
        NDCG._query = staticmethod(query)
    assert not calls, f"{len(calls)} queries fell back to linear_sum_assignment"
    return out


def _check_against_brute_force(f, rel, qid, k):
    """Value of the brute-force maximum (1e-12 relative) and gradient equal (1e-12) to the
    slope of a ranking that attains it, for each query."""
    loss = NDCG(f[:, None], rel, qid, k=k)
    values, g = _merged(loss, f)
    scale = 1.0 + np.abs(f).sum()
    for t, (rows, *_) in enumerate(loss._queries):
        rows = np.sort(rows)
        v, slopes = _pieces(f[rows], rel[rows], k)
        top = v.max()
        value = values[t] * loss.n_queries
        assert abs(value - top) <= 1e-12 * scale, (value, top)
        active = v >= top - 1e-12 * scale
        gq = g[rows] * loss.n_queries
        assert np.abs(slopes[active] - gq).max(axis=1).min() <= 1e-12, (gq, slopes[active])
    return loss, values, g


@st.composite
def spread_queries(draw):
    """One or two queries of 2-6 documents in 2-3 grades, scores at a drawn spread: far
    beyond the gains (1e3-1e6), of the gains' order (about rho times the normalised gain, the
    case the forced orders cut least), small, or on a grid of ties."""
    sizes = draw(st.lists(st.integers(2, 6), min_size=1, max_size=2))
    m = sum(sizes)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    rel = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=m, max_size=m)))
    rel[0], rel[1] = 2.0, draw(st.sampled_from([0.0, 1.0]))  # query 0 can be ranked
    k = draw(st.sampled_from([None, None, 1, 2, 3]))
    kind = draw(st.sampled_from(["huge", "gains", "gains", "small", "ties"]))
    noise = np.array(draw(st.lists(st.integers(-1000, 1000), min_size=m, max_size=m))) / 1000.0
    if kind == "huge":
        f = noise * draw(st.sampled_from([1e3, 1e6]))
    elif kind == "gains":  # rho times the normalised gain b, rho across the ratios' range
        rho = draw(st.sampled_from([0.62, 0.7, 0.8, 0.9, 1.0, 1.1, 1.26]))
        f = np.empty(m)
        for q in range(len(sizes)):
            rows = qid == q
            gain = 2.0 ** rel[rows] - 1.0
            disc = 1.0 / np.log2(np.arange(2, rows.sum() + 2))
            if k is not None:
                disc[k:] = 0.0
            dcg_max = float(np.sort(gain)[::-1] @ disc)
            f[rows] = rho * gain / max(dcg_max, 1.0) + 0.02 * noise[rows]
    elif kind == "small":
        f = 1e-4 * noise
    else:
        f = np.round(2.0 * noise) / 2.0
    return f, rel, qid, k


@settings(max_examples=300, deadline=None)
@given(spread_queries())
# far beyond the gains: the sort by score wins everywhere
@example((np.array([3e6, -1e6, 2e6, 5e5, -2e6]), np.array([2.0, 0, 1, 0, 2]),
          np.zeros(5, dtype=int), None))
# of the gains' order (f = 0.7 gain): every interleaving is close to optimal
@example((0.7 * np.array([1.0, 0.0, 1 / 3, 0.0, 1.0, 1 / 3]), np.array([2.0, 0, 1, 0, 2, 1]),
          np.zeros(6, dtype=int), None))
# all scores tied, truncated: the lower gains first (forced exactly, at equal scores)
@example((np.zeros(6), np.array([2.0, 0, 1, 0, 2, 1]), np.zeros(6, dtype=int), 2))
# two queries, one at a huge spread, one tied
@example((np.array([1e6, -1e6, 3e5, 0.5, 0.5, 0.5]), np.array([2.0, 0, 1, 1, 0, 2]),
          np.repeat([0, 1], 3), None))
def test_pruned_merge_matches_brute_force_at_every_spread(data):
    f, rel, qid, k = data
    _check_against_brute_force(f, rel, qid, k)


def _queries(seed, scale, m=240, n_queries=4, grades=3):
    rng = np.random.default_rng(seed)
    qid = rng.integers(0, n_queries, m)
    rel = rng.integers(0, grades, m).astype(float)
    return scale * rng.standard_normal(m), rel, qid


def _with(monkeypatch, loss, f, **consts):
    with monkeypatch.context() as mp:
        for key, val in consts.items():
            mp.setattr(mv, key, val)
        return loss._score_group_grad(f)


@pytest.mark.parametrize("k", [None, 10])
@pytest.mark.parametrize("scale", [0.0, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 1.0, 1e3])
def test_rules_agree_on_the_value_at_every_spread(monkeypatch, scale, k):
    """Queries of about 60 documents in 3 grades: the value with the forced orders by position
    equals the one-range rule's, the whole merge's (no forced order) and the per-query
    assignment's to 1e-12; without ties the optimal ranking is unique, so the gradients are
    equal too."""
    f, rel, qid = _queries(int(1e4 * scale) + (k or 0), scale)
    loss = NDCG(f[:, None], rel, qid, k=k)
    values, g = _merged(loss, f)
    tol = 1e-12 * (1.0 + np.abs(f).max())
    for consts in ({"_MERGE_PRUNE": 1}, {"_MERGE_PRUNE": 0}, {"_MAX_MERGE_STATES": 0}):
        ref_values, ref_g = _with(monkeypatch, loss, f, **consts)
        np.testing.assert_allclose(values, ref_values, rtol=0, atol=tol, err_msg=str(consts))
        if scale > 0:
            np.testing.assert_allclose(g, ref_g, rtol=0, atol=1e-12, err_msg=str(consts))


def test_scores_at_the_gains_scale_keep_the_value(monkeypatch):
    """The hardest spread for the forced orders: scores rho * gain plus a small noise, for rho
    across the range of the position weights' ratios (0.62 to 1.26), 4 grades."""
    rng = np.random.default_rng(7)
    m = 200
    qid = rng.integers(0, 3, m)
    rel = rng.integers(0, 4, m).astype(float)
    loss = NDCG(np.ones((m, 1)), rel, qid)
    for rho in (0.62, 0.7, 0.9, 1.26):
        gains = np.concatenate([q[4] for q in loss._queries])  # normalised gains, query order
        f = np.empty(m)
        f[loss._rows] = rho * gains
        f += 1e-3 * rng.standard_normal(m)
        values, g = _merged(loss, f)
        for consts in ({"_MERGE_PRUNE": 0}, {"_MAX_MERGE_STATES": 0}):
            ref_values, ref_g = _with(monkeypatch, loss, f, **consts)
            np.testing.assert_allclose(values, ref_values, rtol=0, atol=1e-12)
            np.testing.assert_allclose(g, ref_g, rtol=0, atol=1e-12)


def test_programme_grows_its_arrays_and_runs_again(monkeypatch):
    """Without forced orders a query of 60 documents in 3 grades has 21^3 states, far beyond
    the programme's first arrays (4 n + 64 entries): they are doubled and the query run again,
    with the same result as the assignment."""
    rng = np.random.default_rng(5)
    f = 0.01 * rng.standard_normal(60)
    rel = np.repeat([0.0, 1.0, 2.0], 20)
    loss = NDCG(f[:, None], rel, np.zeros(60))
    whole = _with(monkeypatch, loss, f, _MERGE_PRUNE=0)
    lsa = _with(monkeypatch, loss, f, _MAX_MERGE_STATES=0)
    np.testing.assert_allclose(whole[0], lsa[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(whole[1], lsa[1], rtol=0, atol=1e-12)


def test_order_of_tied_scores_from_the_sort_does_not_matter():
    """The kernel takes the entries by decreasing score in any order of ties and puts ties in
    row order itself: a stable argsort and one with every run of ties reversed give the same
    values and gradients."""
    f = np.array([0.5, 0.5, 0.5, 0.0, 0.0, 0.5, 0.5, -1.0, 0.0])
    rel = np.array([2.0, 1.0, 1.0, 0.0, 0.0, 0.0, 2.0, 1.0, 2.0])
    qid = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    loss = NDCG(f[:, None], rel, qid)
    fq = f[loss._rows]
    stable = np.argsort(-fq, kind="stable")
    reverse = (fq.size - 1 - np.argsort(-fq[::-1], kind="stable"))  # ties last row first
    assert not np.array_equal(stable, reverse)
    out = []
    for f_order in (stable, reverse):
        values = np.empty(loss.n_queries)
        g = np.empty(fq.size)
        done = np.zeros(loss.n_queries, dtype=np.bool_)
        kern.ndcg_merge(fq, f_order.astype(np.int64), loss._qptr, loss._gptr, loss._qg,
                        loss._b_grade, loss._c, loss._a, loss._c_bar, loss._ab, loss._rho_lo,
                        loss._rho_hi, mv._MAX_MERGE_STATES, mv._MAX_TAIL_PREFIX, 2, values, g,
                        done)
        assert done.all()
        out.append((values, g))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])

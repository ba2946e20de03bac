"""Kept scores for vector losses (issue 11): LS-BMRM's line through ``F_b = X W_b`` along
``Q = X (W_t - W_b)`` built from the scores it keeps, with no ``X W`` pass, as for the scalar
margin losses (tests/test_margin_cache.py); and :func:`nsopt._linalg.lincomb`, the compiled
combination of kept scores, equal to numpy's ``a * x + b * y`` bitwise."""
import copy
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nsopt
from nsopt._linalg import lincomb
from nsopt.losses import MulticlassHinge, MultilabelHinge, Softmax
from nsopt.oracle import CountingOracle
from nsopt.solvers import LSBMRM


def _problem(loss, fit_intercept, seed=0, m=90, d=8, k=4, lam=1e-2):
    rng = np.random.default_rng(seed)
    X = sp.random(m, d, density=0.5, random_state=seed, format="csr")
    W = rng.standard_normal((d, k))
    scores = X @ W + 0.3 * rng.standard_normal((m, k))
    if loss is MultilabelHinge:
        Y = scores > 0
        Y[np.arange(m), np.argmax(scores, axis=1)] = True  # every example has a label
        return nsopt.RegularizedRisk(loss(X, Y), lam=lam, fit_intercept=fit_intercept)
    return nsopt.RegularizedRisk(loss(X, np.argmax(scores, axis=1), k), lam=lam,
                                 fit_intercept=fit_intercept)


def _rel(a, b):
    return float(np.linalg.norm(a - b)) / max(float(np.linalg.norm(b)), 1e-300)


CASES = [(loss, icpt) for loss in (MulticlassHinge, Softmax, MultilabelHinge)
         for icpt in (False, True)]


@pytest.mark.parametrize("loss,fit_intercept", CASES)
def test_vector_losses_keep_their_scores(loss, fit_intercept):
    """The scores are X W (+ 1 b^T), linear in w, and the line built from them is the line
    built from the data, value and one-sided derivatives."""
    J = _problem(loss, fit_intercept)
    rng = np.random.default_rng(1)
    w, p = rng.standard_normal(J.dim), rng.standard_normal(J.dim)
    assert J.loss.scores_supported
    F, Q = J.scores(w), J.scores(p)
    assert F.shape == (J.loss.m, J.loss.n_outputs)
    assert _rel(J.scores(0.3 * w - 2.0 * p), 0.3 * F - 2.0 * Q) <= 1e-12
    kept, plain = J.restrict_scores(w, p, F, Q), J.restrict(w, p)
    for eta in (0.0, 0.37, 1.5):
        assert math.isclose(kept.value(eta), plain.value(eta), rel_tol=1e-12)
        for side in (-1, 1):
            assert math.isclose(kept.derivative(eta, side), plain.derivative(eta, side),
                                rel_tol=1e-9, abs_tol=1e-12)


def test_an_overridden_vector_loss_hides_its_scores():
    J = _problem(MulticlassHinge, False)
    plain = J.loss._value_and_subgradient
    J.loss._value_and_subgradient = lambda w: plain(w)  # an instance override
    assert not J.loss.scores_supported and J.scores(np.zeros(J.dim)) is None


@pytest.mark.parametrize("loss,fit_intercept", [c for c in CASES if c != (MultilabelHinge, True)])
def test_cached_step_equals_plain_step(loss, fit_intercept):
    """From every state of a plain run, one step with the kept scores gives the plain path's
    next iterates to 1e-12 (as tests/test_margin_cache.py for the scalar losses)."""
    J = _problem(loss, fit_intercept, seed=2)
    opts = dict(inner_rtol=0.0, rtol=1e-9, max_iter=12)
    states = [copy.deepcopy(s) for s in LSBMRM(reuse_scores=False, **opts).iterate(J)]
    assert len(states) > 5
    cached = LSBMRM(reuse_scores=True, **opts)
    oracle = CountingOracle(J)
    moved = 0
    for before, after in zip(states[:-1], states[1:]):
        s = copy.deepcopy(before)._replace(scores_best=J.scores(before.w_best),
                                           scores_query=None)
        new = cached.step(oracle, s)
        assert new.scores_best is not None
        assert new.scores_query is None  # the query point's plane comes from the data
        assert _rel(new.w_best, after.w_best) <= 1e-12
        assert _rel(new.w_query, after.w_query) <= 1e-12
        assert math.isclose(new.fun_best, after.fun_best, rel_tol=1e-12)
        assert math.isclose(new.lower_bound, after.lower_bound, rel_tol=1e-12, abs_tol=1e-14)
        assert _rel(new.scores_best, J.scores(new.w_best)) <= 1e-12
        moved += new.eta > 0
    assert moved > 0  # the kept line ran and moved the best point


@pytest.mark.parametrize("reuse", [True, False])
def test_two_score_passes_per_iteration_with_kept_scores(reuse):
    """With kept scores an iteration makes two ``X W`` passes (the master point's, and the
    query point's plane from the data: the evidence is the query points); without, three."""
    J = _problem(MulticlassHinge, False, seed=3, m=150, d=12, lam=1e-3)
    loss = J.loss
    calls = [0]
    matmat = loss._matmat

    def counted(*args):
        calls[0] += 1
        return matmat(*args)

    loss._matmat = counted
    seen = [(calls[0], s.eta) for s in LSBMRM(reuse_scores=reuse, max_iter=10,
                                               rtol=1e-12).iterate(J)][:-1]
    steps = [(c1 - c0, eta) for (c0, _), (c1, eta) in zip(seen[:-1], seen[1:])]
    assert len(steps) >= 8
    for n, eta in steps:
        assert n == (2 if reuse else 3)
    res = nsopt.minimize(J, method="ls-bmrm", rtol=1e-6, reuse_scores=reuse)
    assert res.success
    res.certificate.check(J)


@given(st.data())
def test_lincomb_is_numpys_combination_bitwise(data):
    shape = data.draw(st.sampled_from([(0,), (1,), (7,), (5, 3), (2, 3, 4)]))
    floats = st.floats(-1e150, 1e150, allow_nan=False)
    x = data.draw(hnp.arrays(np.float64, shape, elements=floats))
    y = data.draw(hnp.arrays(np.float64, shape, elements=floats))
    a, b = data.draw(floats), data.draw(floats)
    expected = a * x + b * y
    for where in ("new", "x", "y"):
        xx, yy = x.copy(), y.copy()
        out = {"new": None, "x": xx, "y": yy}[where]
        got = lincomb(a, xx, b, yy, out=out)
        np.testing.assert_array_equal(got, expected)
    # a strided view takes numpy's blocks: the same values
    if len(shape) == 1 and shape[0] > 1:
        np.testing.assert_array_equal(lincomb(a, x[::2], b, y[::2]), expected[::2])

"""Evaluation from known scores (margins) and LS-BMRM's score cache (issue 11).

LS-BMRM keeps the scores ``X w_b`` and ``X w_t``; those of the query point and of the line are
their linear combinations, so an iteration makes one data pass. These tests check that the
caching path computes the plain path's iterates (each step from the same state, to 1e-12),
that it makes the passes it claims, that the protocol pieces (``RegularizedRisk.scores``,
``_evaluate(w, scores=...)``, ``restrict_scores``) agree with the plain ones, and that the
bundle's deferred dual-point evidence is the eager one.
"""
import copy
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import nsopt
from nsopt.testing import PassCounter
from nsopt.losses import Hinge, Logistic, SquaredHinge
from nsopt.oracle import CountingOracle
from nsopt.solvers import BMRM, LSBMRM

CASES = [(sparse, loss, icpt) for sparse in (False, True) for loss in (Hinge, SquaredHinge)
         for icpt in (False, True)]


def _problem(sparse, loss, fit_intercept, seed=0, m=120, d=15, lam=1e-2):
    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random(m, d, density=0.3, random_state=seed, format="csr")
    else:
        X = rng.standard_normal((m, d))
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.3 * rng.standard_normal(m) + 0.5 >= 0, 1.0, -1.0)
    return nsopt.RegularizedRisk(loss(X, y), lam=lam, fit_intercept=fit_intercept)


def _rel(a, b):
    return float(np.linalg.norm(a - b)) / max(float(np.linalg.norm(b)), 1e-300)


# ----------------------------------------------------------------- the iterates of LS-BMRM
@pytest.mark.parametrize("sparse,loss,fit_intercept", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_cached_step_equals_plain_step(sparse, loss, fit_intercept, seed):
    """From every state of a plain run, one step of the score-caching path gives the plain
    path's next iterates (best point, query point, their values, the bound) to 1e-12: the
    cache changes where the scores come from, not what is computed. (Whole runs drift apart
    by rounding amplified by near-degenerate master problems, as any two orders of summation
    would: the comparison is step by step.)"""
    J = _problem(sparse, loss, fit_intercept, seed)
    opts = dict(inner_rtol=0.0, rtol=1e-9, max_iter=15)
    plain = LSBMRM(reuse_scores=False, **opts)
    states = [copy.deepcopy(s) for s in plain.iterate(J)]
    assert len(states) > 5
    assert all(s.scores_best is None and s.scores_query is None for s in states)
    cached = LSBMRM(reuse_scores=True, **opts)
    oracle = CountingOracle(J)
    steps_with_line = 0
    for before, after in zip(states[:-1], states[1:]):
        s = copy.deepcopy(before)
        s = s._replace(scores_best=J.scores(s.w_best), scores_query=J.scores(s.w_query))
        new = cached.step(oracle, s)
        assert new.scores_best is not None  # the cache was used
        assert _rel(new.w_best, after.w_best) <= 1e-12
        assert _rel(new.w_query, after.w_query) <= 1e-12
        assert math.isclose(new.fun_best, after.fun_best, rel_tol=1e-12)
        assert math.isclose(new.lower_bound, after.lower_bound, rel_tol=1e-12, abs_tol=1e-14)
        # the kept scores are those of the kept points
        assert _rel(new.scores_best, J.scores(new.w_best)) <= 1e-12
        assert _rel(new.scores_query, J.scores(new.w_query)) <= 1e-12
        steps_with_line += new.eta > 0
    assert steps_with_line > 0  # the line search moved the best point: the cached line ran


@pytest.mark.parametrize("sparse,loss,fit_intercept", CASES)
def test_whole_runs_certify_the_same_optimum(sparse, loss, fit_intercept):
    """Both paths certify; each one's bound is below the other's value (same optimum)."""
    J = _problem(sparse, loss, fit_intercept, seed=3, m=200, d=20, lam=1e-3)
    a = nsopt.minimize(J, method="ls-bmrm", rtol=1e-6, reuse_scores=True)
    b = nsopt.minimize(J, method="ls-bmrm", rtol=1e-6, reuse_scores=False)
    assert a.success and b.success
    assert a.lower_bound <= b.fun + 1e-12 and b.lower_bound <= a.fun + 1e-12
    a.certificate.check(J)


# ------------------------------------------------------------------- data passes counted
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("reuse", [True, False])
def test_one_pass_per_iteration(fit_intercept, reuse):
    """With the cache an iteration makes one ``X w`` (the master point's scores) and one
    ``X^T g`` (the new plane); without it, ``X w`` three times (query, line start, line
    direction; two when the master point is the best point and there is no line)."""
    J = _problem(True, Hinge, fit_intercept, seed=2, m=150, d=12, lam=1e-3)
    counter = PassCounter(J.base_loss.data)
    seen = []
    for s in LSBMRM(reuse_scores=reuse, max_iter=12, rtol=1e-12).iterate(J):
        seen.append((counter.dots, counter.rdots, s))
    assert len(seen) == 13
    seen = seen[:-1]  # the last state comes after the run's end (the best point settled)
    for (d0, r0, _), (d1, r1, s) in zip(seen[:-1], seen[1:]):
        assert r1 - r0 == 1
        if reuse:
            assert d1 - d0 == 1
        else:
            assert d1 - d0 in (2, 3)
    if not reuse:
        assert any(d1 - d0 == 3 for (d0, _, _), (d1, _, _) in zip(seen[:-1], seen[1:]))


def test_plain_fallback_when_the_loss_hides_its_scores():
    """A loss that overrides its evaluation has no scores: the solver runs the plain path."""
    X, y = nsopt.datasets.make_sparse_binary(100, 8, random_state=0)
    loss = Hinge(X, y)
    plain = loss._value_and_subgradient
    loss._value_and_subgradient = lambda w: plain(w)  # an instance override
    J = nsopt.RegularizedRisk(loss, lam=1e-2)
    assert not loss.scores_supported and J.scores(np.zeros(8)) is None
    states = list(LSBMRM(max_iter=5, rtol=1e-12).iterate(J))
    assert all(s.scores_best is None for s in states)
    assert states[-1].fun_best < states[0].fun_best


# ------------------------------------------------------------------------- the protocol
@pytest.mark.parametrize("sparse,loss,fit_intercept",
                         CASES + [(True, Logistic, False), (False, Logistic, True)])
def test_evaluate_from_scores_equals_plain(sparse, loss, fit_intercept):
    J = _problem(sparse, loss, fit_intercept, seed=4)
    rng = np.random.default_rng(5)
    w = rng.standard_normal(J.dim)
    f = J.scores(w)
    np.testing.assert_allclose(f, J.loss.data.dot(w), rtol=0, atol=0)
    ev0, ev1 = J._evaluate(w), J._evaluate(w, scores=f)
    assert ev0.fun == ev1.fun and ev0.loss_value == ev1.loss_value
    np.testing.assert_array_equal(ev0.loss_subgradient, ev1.loss_subgradient)
    if ev0.loss_dual is not None:
        np.testing.assert_array_equal(ev0.loss_dual, ev1.loss_dual)


@given(a=st.floats(-3, 3), b=st.floats(-3, 3), eta=st.floats(0, 4), seed=st.integers(0, 50),
       case=st.sampled_from(CASES))
def test_scores_are_linear_and_lines_agree(a, b, eta, seed, case):
    """Scores of ``a w1 + b w2`` are ``a f1 + b f2`` (to rounding), and the line from given
    scores has the plain line's values and one-sided derivatives."""
    J = _problem(*case, seed=seed % 3, m=40, d=6)
    rng = np.random.default_rng(seed)
    w1, w2 = rng.standard_normal(J.dim), rng.standard_normal(J.dim)
    f1, f2 = J.scores(w1), J.scores(w2)
    w = a * w1 + b * w2
    scale = abs(a) * np.abs(f1) + abs(b) * np.abs(f2) + 1.0
    assert np.all(np.abs(J.scores(w) - (a * f1 + b * f2)) <= 1e-12 * scale)
    p = w2 - w1
    plain, fast = J.restrict(w1, p), J.restrict_scores(w1, p, f1, f2 - f1)
    vscale = 1.0 + abs(plain.value(eta))
    assert abs(plain.value(eta) - fast.value(eta)) <= 1e-11 * vscale
    for side in (1, -1):
        dp, df = plain.derivative(eta, side), fast.derivative(eta, side)
        assert abs(dp - df) <= 1e-9 * (1.0 + abs(dp))


# --------------------------------------------------------------------- deferred evidence
@pytest.mark.parametrize("method", [BMRM, LSBMRM])
def test_deferred_dual_point_is_the_eager_one(method):
    """The bundle's evidence is formed on first read, equal to the eager combination, and the
    result's certificate checks; the evidence pickles as a plain DualPoint."""
    import pickle

    from nsopt.certificate import DualPoint

    J = _problem(True, Hinge, False, seed=6, m=150, d=10, lam=1e-3)
    solver = method(rtol=1e-5)
    last = None
    for s in solver.iterate(J):
        last = s
    ev = last.evidence
    assert isinstance(ev, DualPoint)
    bundle = last.bundle
    alpha = bundle.feasible(last.alpha)
    index = np.flatnonzero(alpha)
    if ev.plane is not None and len(index):
        eager = bundle._combine_evidence(alpha[index], index)
        # the state's evidence is that of the best bound, which may be an earlier alpha
        fresh = bundle.evidence(alpha)
        np.testing.assert_array_equal(fresh.t, eager)
    back = pickle.loads(pickle.dumps(ev))
    assert type(back) is DualPoint
    np.testing.assert_array_equal(back.t, ev.t)
    res = solver.solve(J)
    assert res.success
    res.certificate.check(J)


def test_certificate_holds_a_plain_dual_point():
    """The lazily formed dual point reaches the certificate as a plain DualPoint (a forger's
    ``dataclasses.replace`` works on it, and ``check`` catches the forgery)."""
    import dataclasses

    from nsopt.certificate import CertificateError, DualPoint

    X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    for method in ("bmrm", "ls-bmrm"):
        cert = nsopt.minimize(J, method=method, rtol=1e-4).certificate
        assert type(cert.evidence) is DualPoint
        t = cert.evidence.t.copy()
        t[0] = np.nan
        bad = dataclasses.replace(cert, evidence=dataclasses.replace(cert.evidence, t=t))
        with pytest.raises(CertificateError):
            bad.check(J)


def test_a_long_step_on_a_tiny_direction_reads_the_data_again():
    """Explore find: w_t equal to w_b up to 1e-16, the exact line step 3.5e13. The kept scores'
    difference is then rounding, which such a step multiplies; the line is taken afresh from
    the data instead, and the run stays truthful (fun is J at x, certified)."""
    X = np.array([[0, 1, 0, 0, 0], [1, 0, 1, 1, 0], [1, 1, 0, 1, 0], [0, 0, 0, 0, 0],
                  [0, 0, 0, 0, 1], [1, 0, 0, 1, 1], [1, 0, 0, 1, 1], [0, 0, 0, 0, 0]], float)
    y = np.array([-1.0, -1, 1, -1, 1, -1, 1, -1])
    J = nsopt.RegularizedRisk(Hinge(X, y), nsopt.regularizers.L2(), 1e-4)
    cached = nsopt.minimize(J, method="ls-bmrm", max_iter=300)
    plain = nsopt.minimize(J, method="ls-bmrm", max_iter=300, reuse_scores=False)
    for res in (cached, plain):
        assert res.status is nsopt.Status.CONVERGED
        assert res.fun == J.value(res.x)
    assert cached.fun == pytest.approx(plain.fun, rel=1e-12)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_query_point_planes_are_the_datas_where_the_evidence_is_the_points(seed, fit_intercept):
    """LAD + L1 (QueryPoints evidence, an LP master): ``check`` re-evaluates the loss at the
    stored query points, so LS-BMRM must take those planes from the data, not from the kept
    scores, whose rounding flips the subgradient of a zero residual at an LP vertex. Before the
    fix at least 12 of these 36 runs (4 without intercept) returned a "converged" certificate
    that ``check`` recomputed as -inf or whose slope it could not rebuild."""
    from nsopt.losses import LeastAbsoluteDeviation
    from nsopt.regularizers import L1

    rng = np.random.default_rng(seed)
    for lam, m, d in [(1e-1, 20, 8), (1e-2, 60, 3), (1e-3, 60, 8), (1e-2, 20, 8), (1e-3, 20, 3)]:
        X = rng.standard_normal((m, d))
        y = X @ rng.standard_normal(d) + 3 + 0.1 * rng.standard_normal(m)
        J = nsopt.RegularizedRisk(LeastAbsoluteDeviation(X, y), L1(), lam=lam,
                                  fit_intercept=fit_intercept)
        for method, options in [("ls-bmrm", {}), ("bmrm", {"line_search": True})]:
            res = nsopt.minimize(J, method=method, rtol=1e-4, max_iter=500, **options)
            assert res.success, (method, lam, m, d, res.message)
            assert res.certificate.check(J) >= res.lower_bound - 1e-9 * abs(res.lower_bound)

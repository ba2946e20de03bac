"""The default method of ``nsopt.minimize`` (``method=None``) for a RegularizedRisk (issue 11).

Rule (:func:`nsopt.minimize.default_method`): ``"dcd"`` where the DCD class says it can solve
the problem with the options given (``methods_supporting``) and its conditioning
``kappa = max_i c_i ||x_i||^2 / lam`` is at most ``DCD_MAX_CONDITIONING``; above it, without
an intercept, ``"dcd-probe"`` (five dcd epochs decide between dcd and LS-BMRM); else ``"ls-bmrm"``.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import importlib

import nsopt
from nsopt.losses import Hinge, Logistic, SquaredHinge
from nsopt.regularizers import L1, L2
from nsopt.solvers import SOLVERS, methods_supporting

mz = importlib.import_module("nsopt.minimize")  # the module (nsopt.minimize is the function)

pytestmark = pytest.mark.skipif("dcd" not in SOLVERS, reason="dcd is not registered")

LOSSES = (Hinge, SquaredHinge, Logistic)


@pytest.fixture(scope="module")
def data():
    return nsopt.datasets.make_sparse_binary(400, 20, random_state=0)


def lam_at(X, kappa, c=None):
    """The lam at which the uniform-weight problem on X has conditioning ``kappa``."""
    m = X.shape[0]
    c = np.full(m, 1.0 / m) if c is None else c
    sq = np.asarray(sp.csr_matrix(X).multiply(X).sum(axis=1)).ravel()
    return float(np.max(c * sq)) / kappa


@given(scale=st.floats(0.1, 10.0), lam=st.floats(1e-6, 1.0),
       weights=st.booleans())
@settings(max_examples=30, deadline=None)
def test_conditioning_is_max_weighted_row_norm_over_lam(scale, lam, weights):
    X, y = nsopt.datasets.make_sparse_binary(60, 8, random_state=3)
    X = X * scale
    c = np.linspace(0.5, 1.5, X.shape[0]) if weights else None
    J = nsopt.RegularizedRisk(Hinge(X, y, sample_weight=c), L2(), lam)
    dense = X.toarray()
    weight = J.loss.c  # the loss's own (normalised) weights
    expected = np.max(weight * np.einsum("ij,ij->i", dense, dense)) / lam
    assert mz.dcd_conditioning(J) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("side", [0.5, 2.0])
def test_default_picks_dcd_below_the_threshold_and_the_probe_above(data, loss, side):
    X, y = data
    lam = lam_at(X, side * mz.DCD_MAX_CONDITIONING)
    J = nsopt.RegularizedRisk(loss(X, y), L2(), lam)
    expected = "dcd" if side < 1 else "dcd-probe"
    if loss is not Hinge:  # truncated Newton above NEWTON_MIN_CONDITIONING, and for the logistic
        expected = "newton-cg"  # loss at every conditioning (tests/test_newton_cg.py)
    assert mz.default_method(J) == expected
    res = nsopt.minimize(J, max_iter=3)
    assert res.method == expected  # the choice is visible on the Result


def test_default_runs_dcd_to_a_proven_gap(data):
    X, y = data
    J = nsopt.RegularizedRisk(SquaredHinge(X, y), L2(),
                              lam_at(X, 0.5 * mz.NEWTON_MIN_CONDITIONING))
    res = nsopt.minimize(J, rtol=1e-6)
    assert res.method == "dcd" and res.success
    assert res.certificate.source == "dual-point"
    ref = nsopt.minimize(J, method="ls-bmrm", rtol=1e-8)
    assert res.lower_bound <= ref.fun + 1e-12
    assert ref.lower_bound <= res.fun + 1e-12


@pytest.mark.parametrize("make", [
    lambda X, y, lam: nsopt.RegularizedRisk(Hinge(X, y), L1(), lam),           # L1
    lambda X, y, lam: nsopt.RegularizedRisk(nsopt.losses.Huber(X, y), L2(), lam),  # other loss
    lambda X, y, lam: nsopt.RegularizedRisk(Hinge(X, y), L2(), lam, fit_intercept=True),
], ids=["l1", "huber", "intercept"])
def test_default_is_not_dcd_where_dcd_refuses_or_loses(data, make):
    X, y = data
    lam = lam_at(X, 0.1 * mz.DCD_MAX_CONDITIONING)  # well conditioned: only applicability decides
    J = make(X, y, lam)
    dcd_says = SOLVERS["dcd"].unsupported_reason(J)
    if J.fit_intercept:  # dcd takes it (pair steps), the rule does not pick it: slower there
        assert dcd_says is None and mz.default_method(J) == "ls-bmrm"
        return
    assert (mz.default_method(J) == "dcd") == (dcd_says is None)
    if dcd_says is not None:
        # an LP master (L1) gets BMRM's stabilised path, the others LS-BMRM
        want = "bmrm" if J.reg.inner in mz.LP_MASTERS else "ls-bmrm"
        assert nsopt.minimize(J, max_iter=2).method == want


def test_rule_asks_the_dcd_class(data, monkeypatch):
    """The rule has no list of its own: what DCD says it takes decides (e.g. intercepts, when
    DCD learns them)."""
    X, y = data
    J = nsopt.RegularizedRisk(Hinge(X, y), L2(), lam_at(X, 0.1 * mz.DCD_MAX_CONDITIONING))
    assert mz.default_method(J) == "dcd"
    monkeypatch.setattr(SOLVERS["dcd"], "unsupported_reason",
                        classmethod(lambda cls, problem: "refused for the test"))
    assert mz.default_method(J) == "ls-bmrm"
    assert nsopt.minimize(J, max_iter=2).method == "ls-bmrm"


def test_options_only_ls_bmrm_takes_keep_ls_bmrm(data):
    """``minimize(J, query_fraction=...)`` with no method: dcd has no such option, so the default
    stays the method that takes it, as ``methods_supporting`` says."""
    X, y = data
    J = nsopt.RegularizedRisk(Hinge(X, y), L2(), lam_at(X, 0.1 * mz.DCD_MAX_CONDITIONING))
    assert "dcd" not in methods_supporting(J, query_fraction=0.5)
    assert mz.default_method(J, query_fraction=0.5) == "ls-bmrm"
    res = nsopt.minimize(J, max_iter=2, query_fraction=0.5)
    assert res.method == "ls-bmrm"
    # and an option dcd takes keeps dcd
    assert nsopt.minimize(J, max_iter=2, random_state=3).method == "dcd"


def test_an_option_named_as_none_counts(data):
    """``minimize`` hands every named option to the method, None included, and a method refuses
    names it does not know: ``remove_inactive=None`` (BMRM's "keep every plane") must steer the
    default away from dcd, as ``methods_supporting`` says (it listed dcd, and minimize raised)."""
    X, y = data
    J = nsopt.RegularizedRisk(Hinge(X, y), L2(), lam_at(X, 0.1 * mz.DCD_MAX_CONDITIONING))
    assert "dcd" not in methods_supporting(J, remove_inactive=None)
    assert "ls-bmrm" in methods_supporting(J, remove_inactive=None)
    assert nsopt.minimize(J, max_iter=2, remove_inactive=None).method == "ls-bmrm"


def test_plain_function_default_unchanged():
    res = nsopt.minimize(lambda x: (abs(x).sum(), np.sign(x)), np.ones(3), jac=True,
                         radius=10.0)
    assert res.method == mz.DEFAULT_METHOD_FOR_FUNCTIONS


def test_several_intercepts_get_the_proximal_bundle():
    """One bias per class: BMRM's model is not stabilised in the unregularized intercepts
    (Kelley's iterates in the box |b| <= B), so the default (and the scikit-learn estimator's)
    is the proximal bundle."""
    from nsopt.losses import MulticlassHinge
    from nsopt.sklearn import LinearClassifier

    rng = np.random.default_rng(0)
    m, d, K = 240, 6, 8
    y = rng.integers(0, K, m)
    X = rng.standard_normal((m, d)) + 2.0 * rng.standard_normal((K, d))[y]
    J = nsopt.RegularizedRisk(MulticlassHinge(X, y), L2(), 1e-2, fit_intercept=True)
    assert J.n_intercepts == K
    assert mz.default_method(J) == "proximal-bundle"
    res = nsopt.minimize(J, rtol=1e-3, max_iter=2000)
    assert res.method == "proximal-bundle" and res.success
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * abs(res.lower_bound)
    # (the crawl of ls-bmrm shows at letter's size, 26 biases: docs/solvers.md, measured)
    # one intercept: the BMRM family stays the default
    J1 = nsopt.RegularizedRisk(Hinge(X, np.where(y % 2, 1.0, -1.0)), L2(), 1e-2,
                               fit_intercept=True)
    assert mz.default_method(J1) == "ls-bmrm"
    est = LinearClassifier(loss="multiclass_hinge", alpha=1e-2, tol=1e-3).fit(X, y)
    assert est.result_.method == "proximal-bundle"


def test_default_with_constraints_is_a_method_that_takes_them():
    """A box or rows ``A_ub x <= b_ub`` that LS-BMRM cannot keep, on a bare Oracle or a risk:
    the default is a method ``methods_supporting`` lists with those options, and it runs (it
    was ``ls-bmrm``, which then refused the option). A bare oracle without options still gets
    LS-BMRM's refusal (tests/test_scipy_convention.py)."""
    rng = np.random.default_rng(0)
    c = rng.standard_normal(4)
    f = nsopt.FunctionOracle(lambda x: float(np.abs(x - c).sum()) + 1.0,
                             lambda x: np.sign(x - c), dim=4)
    G, h = np.ones((1, 4)), np.array([0.5])
    X, y = nsopt.datasets.make_sparse_binary(100, 4, random_state=0)
    J = nsopt.RegularizedRisk(Hinge(X, y), L2(), 1e-2)
    for problem, options in ((f, {"bounds": (-2.0, 2.0)}),
                             (f, {"bounds": (-2.0, 2.0), "A_ub": G, "b_ub": h}),
                             (J, {"bounds": (-2.0, 2.0)}),
                             (J, {"A_ub": G, "b_ub": h})):
        chosen = mz.default_method(problem, **options)
        assert chosen in methods_supporting(problem, **options), (options, chosen)
        res = nsopt.minimize(problem, max_iter=3, **options)
        assert res.method == chosen
        if "A_ub" in options:
            assert float((G @ res.x)[0]) <= 0.5 + 1e-9


# ---------------------------------------------------------------- dcd-probe, above the threshold
def _separable_or_noisy(kind):
    """Dense 200 x 10 data, L2 hinge at conditioning 3000 (> DCD_MAX_CONDITIONING): separable
    (margin 0.5), or labels flipped with probability 0.3."""
    X, y = nsopt.datasets.make_dense_binary(200, 10, separable=kind == "separable",
                                            noise=0.3, random_state=0)
    return nsopt.RegularizedRisk(Hinge(X, y), L2(), lam_at(X, 3000.0))


@pytest.mark.parametrize("kind,finisher,source", [("separable", "dcd", "dual-point"),
                                                  ("noisy", "ls-bmrm", "bundle-dual")])
def test_probe_tells_separable_from_noisy(kind, finisher, source):
    """Above DCD_MAX_CONDITIONING the default is the probe; five epochs decide: dcd goes on
    where its bound climbs fast (separable: share 0.87), LS-BMRM takes over elsewhere (0.006).
    Either way the certificate is the finishing method's, checks, and brackets Clarabel's J*."""
    from cvxref import clarabel_optimum

    J = _separable_or_noisy(kind)
    assert mz.default_method(J) == mz.PROBE_METHOD == "dcd-probe"
    res = nsopt.minimize(J, rtol=1e-6)
    assert res.method == "dcd-probe" and res.success
    assert res.info["finisher"] == finisher and res.certificate.source == source
    assert (res.info["probe_share"] >= 0.1) == (finisher == "dcd")
    f_star = clarabel_optimum(J)
    slack = 1e-7 * max(1.0, abs(f_star))
    assert res.lower_bound - slack <= f_star <= res.fun + slack
    assert res.gap <= 1e-6 * res.fun
    checked = res.certificate.check(J)
    assert res.lower_bound - 1e-9 * res.fun <= checked <= res.fun + 1e-9 * res.fun


def test_probe_hands_over_with_its_point_and_plane():
    """After the hand-over LS-BMRM starts at the probe's point (its first value) with the
    probe's dual plane in its bundle: its first bound is already at least the probe's D(t)."""
    J = _separable_or_noisy("noisy")
    first = next(iter(nsopt.solvers.DCDProbe(rtol=1e-6).iterate(J)))
    assert first.phase == "ls-bmrm"
    d_t = first.probe_share * first.fun_best      # the probe's D(t), at the probe's point
    assert first.lower_bound >= d_t * (1 - 1e-9) > 0
    # a share asked of the probe above what it reached keeps LS-BMRM, one below keeps dcd
    share = first.probe_share
    for asked, phase in ((share * 1.01, "ls-bmrm"), (share * 0.99, "dcd")):
        s = next(iter(nsopt.solvers.DCDProbe(rtol=1e-6, probe_share=asked).iterate(J)))
        assert s.phase == phase


def test_probe_is_not_the_default_with_an_intercept_or_below_the_threshold():
    X, y = nsopt.datasets.make_dense_binary(200, 10, separable=True, random_state=0)
    J = _separable_or_noisy("separable")
    assert mz.default_method(nsopt.RegularizedRisk(Hinge(X, y), L2(), J.lam,
                                                   fit_intercept=True)) == "ls-bmrm"
    assert mz.default_method(nsopt.RegularizedRisk(Hinge(X, y), L2(),
                                                   lam_at(X, 100.0))) == "dcd"


def test_default_method_doctests():
    """The examples of default_method and of DCDProbe (what the rule picks)."""
    import doctest

    probe = importlib.import_module("nsopt.solvers.dcd_probe")
    for obj, globs in ((mz.default_method, vars(mz)), (probe.DCDProbe, vars(probe))):
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        for test in doctest.DocTestFinder().find(obj, globs=dict(globs)):
            runner.run(test)
        assert runner.summarize(verbose=False).failed == 0


def test_options_only_dcd_takes_keep_dcd_above_the_threshold():
    """``check_every`` (dcd's, not the probe's nor LS-BMRM's) keeps dcd where the probe would
    be the default, as ``methods_supporting`` says."""
    J = _separable_or_noisy("noisy")
    assert methods_supporting(J, check_every=2) == ["dcd"]
    assert mz.default_method(J, check_every=2) == "dcd"
    assert nsopt.minimize(J, max_iter=1, check_every=2).method == "dcd"


# ---- the rule's own cost (benchmarks/peers.py's small cells: mushrooms, runs of 7-40 ms) ----

def _protocol_conditioning(J):
    """kappa by the data's own ``row_norms_sq`` (the protocol path)."""
    sq = np.asarray(J.loss.data.row_norms_sq(), dtype=np.float64).reshape(-1)
    return float(np.max(J.loss.c * sq)) / J.lam


@pytest.mark.parametrize("form", ["csr", "csc", "dense", "float32", "duplicates"])
def test_conditioning_compiled_rows_equal_the_protocol(data, form):
    X, y = data
    X = sp.csr_matrix(X)
    if form == "csc":
        X = X.tocsc()
    elif form == "dense":
        X = X.toarray()
    elif form == "float32":
        X = X.astype(np.float32)
    elif form == "duplicates":  # one entry split in two: not canonical, (a + b)^2 != a^2 + b^2
        first = X.indptr[1]   # row 0's first entry again, at the end of row 0
        data_ = np.insert(X.data, first, 0.5)
        indices = np.insert(X.indices, first, X.indices[0])
        indptr = X.indptr.copy()
        indptr[1:] += 1
        X = sp.csr_matrix((data_, indices, indptr), shape=X.shape)
        assert X.indptr[1] - X.indptr[0] >= 2 and not X.has_canonical_format
    J = nsopt.RegularizedRisk(SquaredHinge(X, y), L2(), 1e-3)
    assert mz.dcd_conditioning(J) == pytest.approx(_protocol_conditioning(J), rel=1e-12)


def test_conditioning_of_float64_csr_rows_skips_the_protocol(data, monkeypatch):
    X, y = data
    J = nsopt.RegularizedRisk(Hinge(sp.csr_matrix(X), y), L2(), 1e-2)
    expected = _protocol_conditioning(J)

    def refuse():
        raise AssertionError("scipy's row norms were called")

    monkeypatch.setattr(J.loss.data, "row_norms_sq", refuse)
    assert mz.dcd_conditioning(J) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("loss,kappa,expected", [
    (SquaredHinge, 10.0, "dcd"), (SquaredHinge, 100.0, "newton-cg"),
    (Logistic, 10.0, "newton-cg"), (Hinge, 10.0, "dcd"), (Hinge, 1000.0, "dcd-probe")])
def test_default_method_computes_the_conditioning_once(data, monkeypatch, loss, kappa, expected):
    X, y = data
    J = nsopt.RegularizedRisk(loss(X, y), L2(), lam_at(X, kappa))
    calls = []
    real = mz.dcd_conditioning
    monkeypatch.setattr(mz, "dcd_conditioning", lambda p: calls.append(1) or real(p))
    assert mz.default_method(J) == expected
    assert len(calls) <= 1

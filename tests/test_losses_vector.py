"""Vector losses ([TVSL10] Table 6, [YVGS10] Sec. 6): BMRM certificates against cvxpy +
Clarabel, reductions to known losses (R5, R7 of the 002 notes), erratum E9, input validation,
predictions, and real data (slow: letter.scale and yeast).

The laws (values, subgradients, ties, lines, breakpoints, dense vs sparse) are the hypothesis
suite in tests/properties/test_losses_vector.py.
"""
from __future__ import annotations

import lzma
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt.losses import Hinge
from nsopt.losses.vector import MulticlassHinge, MultilabelHinge, ScaledMulticlassHinge, Softmax
from nsopt.regularizers import L2

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


# ----------------------------------------------------------------------------------------
# small problems and their cvxpy references
# ----------------------------------------------------------------------------------------
def small_multiclass(m=60, d=4, k=3, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    W = rng.standard_normal((d, k))
    y = np.argmax(X @ W + 0.7 * rng.standard_normal((m, k)), axis=1)
    y[:k] = np.arange(k)  # every class present
    return (sp.csr_matrix(X) if sparse else X), y


def small_multilabel(m=50, d=4, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    W = rng.standard_normal((d, k))
    Y = (X @ W + 0.5 * rng.standard_normal((m, k)) > 0.3).astype(float)
    Y[0] = 0.0  # no relevant label: contributes 0
    Y[1] = 1.0  # every label relevant: contributes 0
    return X, Y


def cvx_optimum(kind, X, y, lam, cost=None):
    """min_W lam/2 ||W||^2 + (1/m) sum_i l(W^T x_i, y_i) by cvxpy + Clarabel (SCS fallback)."""
    import cvxpy as cp

    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    m, d = X.shape
    k = cost.shape[0] if cost is not None else (y.shape[1] if kind == "multilabel" else int(y.max()) + 1)
    W = cp.Variable((d, k))
    F = X @ W
    cons = []
    if kind == "multilabel":
        xi = cp.Variable(m)
        rows, plus, minus = [], [], []
        for i in range(m):
            for z in np.flatnonzero(y[i] == 1):
                for zp in np.flatnonzero(y[i] == 0):
                    rows.append(i)
                    plus.append(i * k + zp)
                    minus.append(i * k + z)
        Fv = cp.vec(F, order="C")
        cons = [xi >= 0]
        if rows:
            cons.append(xi[np.array(rows)] >= 1 + Fv[np.array(plus)] - Fv[np.array(minus)])
        risk = cp.sum(xi) / m
    else:
        onehot = np.eye(k)[y]
        fy = cp.reshape(cp.sum(cp.multiply(F, onehot), axis=1), (m, 1), order="C")
        if kind == "softmax":
            risk = cp.sum(cp.log_sum_exp(F, axis=1) - fy[:, 0]) / m
        else:
            if kind == "cs":
                C, G = 1.0 - onehot, np.ones((m, k))
            elif kind == "margin":
                C, G = cost[y], np.ones((m, k))
            else:  # slack
                C, G = cost[y], cost[y]
            diff = F - fy @ np.ones((1, k))
            risk = cp.sum(cp.max(cp.multiply(G, diff) + C, axis=1)) / m
    prob = cp.Problem(cp.Minimize(lam * 0.5 * cp.sum_squares(W) + risk), cons)
    try:
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    except cp.SolverError:  # pragma: no cover - depends on the installed solvers
        prob.solve(solver=cp.SCS, eps=1e-9, max_iters=200000)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)


COST = np.array([[0.0, 1.0, 2.0], [0.5, 0.0, 1.5], [3.0, 0.25, 0.0]])


def make_loss(kind, sparse=False):
    if kind == "multilabel":
        X, Y = small_multilabel()
        X = sp.csr_matrix(X) if sparse else X
        return MultilabelHinge(X, Y), X, Y, None
    X, y = small_multiclass(sparse=sparse)
    if kind == "cs":
        return MulticlassHinge(X, y), X, y, None
    if kind == "softmax":
        return Softmax(X, y), X, y, None
    return ScaledMulticlassHinge(X, y, COST, rescaling=kind), X, y, COST


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("kind", ["cs", "margin", "slack", "softmax", "multilabel"])
def test_bmrm_certificate_brackets_cvxpy_optimum(kind, sparse):
    loss, X, y, cost = make_loss(kind, sparse)
    lam = 0.05
    J = nsopt.RegularizedRisk(loss, L2(), lam)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-6, max_iter=3000)
    f_star = cvx_optimum(kind, X, y, lam, cost)
    tol = 1e-6 * max(1.0, abs(f_star))
    assert res.status is nsopt.Status.CONVERGED, res
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.fun - f_star <= 1e-6 * abs(f_star) + tol
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))


# ----------------------------------------------------------------------------------------
# reductions: the losses agree with known ones where they must
# ----------------------------------------------------------------------------------------
def test_two_class_hinge_is_the_binary_hinge():
    """R7 (002 notes): with classes {-1, +1} and W = [-w/2, w/2] the Crammer-Singer loss is
    max(0, 1 - y <w, x>): values, subgradients (pulled back), lines and breakpoints agree."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 5))
    y = np.where(rng.random(40) < 0.5, -1.0, 1.0)
    hinge, cs = Hinge(X, y), MulticlassHinge(X, ((y + 1) / 2).astype(int))
    lift = lambda v: np.stack([-v / 2, v / 2], axis=1).ravel()  # noqa: E731
    pull = lambda g: (g.reshape(5, 2) @ np.array([-0.5, 0.5]))  # noqa: E731
    for _ in range(5):
        w, p = rng.standard_normal(5), rng.standard_normal(5)
        assert cs.value(lift(w)) == pytest.approx(hinge.value(w), rel=1e-13)
        s_cs, g_cs = cs.sup_subgradient(lift(w), lift(p))
        s_h, _ = hinge.sup_subgradient(w, p)
        assert s_cs == pytest.approx(s_h, rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(pull(cs.subgradient(lift(w))), hinge.subgradient(w), atol=1e-14)
        lc, lh = cs.restrict(lift(w), lift(p)), hinge.restrict(w, p)
        np.testing.assert_allclose(np.unique(lc.breakpoints()), np.unique(lh.breakpoints()), rtol=1e-12)
        for eta in (-1.0, 0.3, 2.0):
            assert lc.value(eta) == pytest.approx(lh.value(eta), rel=1e-13)
        assert lc.minimize(0.0, 10.0) == pytest.approx(lh.minimize(0.0, 10.0), rel=1e-12, abs=1e-14)


def test_multilabel_with_one_label_is_crammer_singer():
    """R5 (002 notes): with Z_i = {y_i} the multilabel hinge (eq. 54) is eq. 42."""
    X, y = small_multiclass(m=30, k=4, seed=2)
    Y = np.eye(4)[y]
    ml, cs = MultilabelHinge(X, Y), MulticlassHinge(X, y)
    rng = np.random.default_rng(0)
    for w in (np.zeros(16), rng.standard_normal(16)):
        p = rng.standard_normal(16)
        assert ml.value(w) == pytest.approx(cs.value(w), rel=1e-14)
        np.testing.assert_allclose(ml.sup_subgradient(w, p)[1], cs.sup_subgradient(w, p)[1], atol=1e-15)
        np.testing.assert_allclose(ml.restrict(w, p).breakpoints(), cs.restrict(w, p).breakpoints(),
                                   rtol=1e-12)


def test_scaled_hinge_with_unit_cost_is_crammer_singer():
    X, y = small_multiclass(k=3, seed=4)
    unit = 1.0 - np.eye(3)
    cs = MulticlassHinge(X, y)
    w = np.random.default_rng(4).standard_normal(12)
    for rescaling in ("margin", "slack"):
        sc = ScaledMulticlassHinge(X, y, unit, rescaling=rescaling)
        assert sc.value(w) == pytest.approx(cs.value(w), rel=1e-14)
        np.testing.assert_allclose(sc.subgradient(w), cs.subgradient(w), atol=1e-15)


def test_erratum_E9_scaled_hinge_both_readings():
    """E9: Table 6 prints max Gamma (f' - f + Delta); eq. 24/29 put Gamma on f' - f only.
    With Gamma = cost and the 0/1 margin, Table 6 is slack rescaling cost (f' - f + 1), which is
    also eq. 29 with Gamma = Delta = cost; eq. 29 with Gamma = 1 is margin rescaling. The two
    options differ, and each matches its formula."""
    X, y = small_multiclass(m=40, k=3, seed=5)
    rng = np.random.default_rng(5)
    w = rng.standard_normal(12)
    F = X @ w.reshape(4, 3)
    fy = F[np.arange(40), y][:, None]
    C = COST[y]
    table6 = (C * (F - fy + (1.0 - np.eye(3)[y]))).max(axis=1).mean()   # Gamma = cost, Delta = 0/1
    eq29_slack = (C * (F - fy) + C).max(axis=1).mean()                   # Gamma = Delta = cost
    eq29_margin = (F - fy + C).max(axis=1).mean()                        # Gamma = 1, Delta = cost
    slack = ScaledMulticlassHinge(X, y, COST, rescaling="slack").value(w)
    margin = ScaledMulticlassHinge(X, y, COST, rescaling="margin").value(w)
    assert slack == pytest.approx(table6, rel=1e-13) and slack == pytest.approx(eq29_slack, rel=1e-13)
    assert margin == pytest.approx(eq29_margin, rel=1e-13)
    assert abs(slack - margin) > 1e-3


# ----------------------------------------------------------------------------------------
# exact line search on the regularized risk
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["cs", "multilabel"])
def test_regularized_risk_line_minimize_exact(kind):
    """J.restrict(w, p).minimize() is exact: the loss line's breakpoints (per-example upper
    envelopes) plus the L2 quadratic, bisection then the root on the piece; fine grid check."""
    loss = make_loss(kind)[0]
    J = nsopt.RegularizedRisk(loss, L2(), 0.05)
    rng = np.random.default_rng(3)
    w, p = rng.standard_normal(loss.dim), rng.standard_normal(loss.dim)
    line = J.restrict(w, p)
    eta = line.minimize()
    grid = np.linspace(0.0, max(2 * eta, 1.0), 20001)
    assert line.value(eta) <= min(line.value(t) for t in grid) + 1e-12
    assert line.derivative(eta, 1) >= -1e-9 and (eta == 0 or line.derivative(eta, -1) <= 1e-9)


@pytest.mark.parametrize("kind", ["cs", "multilabel"])
def test_line_jumps_are_the_derivative_steps_and_the_search_sweeps(kind, monkeypatch):
    """VectorLine.jumps(): phi'(eta+) = phi'(lo+) + the jumps of the kinks in (lo, eta], at
    points away from kinks; and J.restrict(w, p).minimize() takes the compiled sweep over
    them: at most 3 passes over the scores for the tie rule (the derivative checks), where
    the bisection over sorted kinks made one per step (13 a line on letter)."""
    loss = make_loss(kind)[0]
    rng = np.random.default_rng(5)
    w, p = rng.standard_normal(loss.dim), rng.standard_normal(loss.dim)
    bare = loss.restrict(w, p)
    kinks, jumps = bare.jumps()
    assert kinks.size > 3 and np.all(jumps >= 0)
    d0 = bare.derivative(0.0, 1)
    srt = np.sort(kinks[kinks > 0])
    for eta in (srt[:-1] + srt[1:])[:8] / 2:
        expect = d0 + jumps[(kinks > 0) & (kinks <= eta)].sum()
        assert bare.derivative(eta, 1) == pytest.approx(expect, rel=1e-9, abs=1e-12)
    calls = []
    plain = type(loss)._kernel_pairs
    monkeypatch.setattr(type(loss), "_kernel_pairs",
                        lambda self, *a: calls.append(1) or plain(self, *a))
    line = nsopt.RegularizedRisk(loss, L2(), 1e-3).restrict(w, -p if d0 > 0 else p)
    eta = line.minimize()
    assert line.derivative(eta, 1) >= -1e-9 and (eta == 0 or line.derivative(eta, -1) <= 1e-9)
    assert len(calls) <= 3 + 2  # the sweep's checks, plus the two asserted just above


def test_line_minimize_returns_zero_for_an_ascent_direction():
    """R21: ls-BMRM may pass a direction that is not a descent direction; the exact search
    then returns 0."""
    loss, *_ = make_loss("cs")
    w = np.random.default_rng(0).standard_normal(loss.dim)
    _, g = loss.sup_subgradient(w, np.zeros(loss.dim) + 1.0)
    line = loss.restrict(w, g)  # along a subgradient: phi'(0+) >= <g, g> > 0
    assert line.derivative(0.0, 1) > 0
    assert line.minimize() == 0.0


def test_line_and_breakpoints_on_a_hand_example():
    """One example, three classes, y = 0, F = (0, 0, 0), Q = (0, 1, -1): lines 0, 1 + eta and
    1 - eta; the envelope is 1 - eta, then 1 + eta, with one kink at 0 (the zero line never
    tops it), and the right derivative at 0 is +1."""
    X = np.array([[1.0]])
    loss = MulticlassHinge(X, [0], n_classes=3)
    line = loss.restrict(np.zeros(3), np.array([0.0, 1.0, -1.0]))
    np.testing.assert_array_equal(line.breakpoints(), [0.0])
    assert line.derivative(0.0, 1) == 1.0 and line.derivative(0.0, -1) == -1.0
    assert line.value(-2.0) == 3.0 and line.value(0.5) == 1.5
    # parallel lines (the Alg. 4 division by zero): Q = (0, 1, 1) with offsets 1 and 1
    line = loss.restrict(np.zeros(3), np.array([0.0, 1.0, 1.0]))
    np.testing.assert_array_equal(line.breakpoints(), [-1.0])
    assert line.value(-3.0) == 0.0 and line.value(1.0) == 2.0


# ----------------------------------------------------------------------------------------
# parts of the risk: SGD batches and P-BMRM groups
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("kind", ["cs", "slack", "softmax", "multilabel"])
def test_batch_and_group_subgradients(kind, sparse):
    """batch_subgradient(w, rows) is the subgradient of the same loss built on X[rows];
    group_value_and_subgradients splits R(w) and its subgradient into contiguous groups."""
    loss, X, y, cost = make_loss(kind, sparse)
    rng = np.random.default_rng(8)
    w = rng.standard_normal(loss.dim)
    rows = rng.choice(loss.m, size=17, replace=False)
    Xr = X[rows]
    if kind == "multilabel":
        ref = MultilabelHinge(Xr, y[rows])
    elif kind == "cs":
        ref = MulticlassHinge(Xr, y[rows], n_classes=3)
    elif kind == "softmax":
        ref = Softmax(Xr, y[rows], n_classes=3)
    else:
        ref = ScaledMulticlassHinge(Xr, y[rows], cost, rescaling=kind)
    np.testing.assert_allclose(loss.batch_subgradient(w, rows), ref.subgradient(w), rtol=1e-12, atol=1e-15)
    f, g = loss.value_and_subgradient(w)
    values, subgradients = loss.group_value_and_subgradients(w, 4)
    assert values.shape == (4,) and subgradients.shape == (4, loss.dim)
    assert values.sum() == pytest.approx(f, rel=1e-12)
    np.testing.assert_allclose(subgradients.sum(axis=0), g, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="non-empty groups"):
        loss.group_value_and_subgradients(w, loss.m + 1)


def test_many_classes_line_matches_direct_evaluation():
    """k = 40 > 32 lines per example (the argsort path of the envelope): the event-based
    derivatives equal the direct per-example ones and the breakpoints are true kinks."""
    rng = np.random.default_rng(11)
    X = rng.integers(-2, 3, size=(6, 3)).astype(float)
    y = rng.integers(0, 40, size=6)
    loss = MulticlassHinge(X, y, n_classes=40)
    w = rng.integers(-4, 5, size=loss.dim) / 8.0
    p = rng.integers(-4, 5, size=loss.dim) / 4.0
    line = loss.restrict(w, p)
    bps = np.unique(line.breakpoints())
    t = np.concatenate([[bps[0] - 1.0], bps, [bps[-1] + 1.0]])
    for mid in 0.5 * (t[1:] + t[:-1]):
        assert line.derivative(mid, 1) == pytest.approx(loss.sup_subgradient(w + mid * p, p)[0],
                                                        rel=1e-12, abs=1e-14)
    for b in bps:
        assert line.derivative(b, 1) > line.derivative(b, -1)


# ----------------------------------------------------------------------------------------
# predictions
# ----------------------------------------------------------------------------------------
def test_predictions():
    X, y = small_multiclass(m=200, d=4, k=3, seed=7)
    for loss in (MulticlassHinge(X, y), Softmax(X, y)):
        res = nsopt.minimize(nsopt.RegularizedRisk(loss, L2(), 1e-3), method="bmrm", rtol=1e-4)
        scores = loss.decision_function(X, res.x)
        assert scores.shape == (200, 3)
        np.testing.assert_array_equal(loss.predict(X, res.x), np.argmax(scores, axis=1))
        assert np.mean(loss.predict(X, res.x) == y) > 0.6  # chance is 1/3; label noise caps it
    proba = loss.predict_proba(X, res.x)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="features"):
        loss.decision_function(X[:, :3], res.x)
    ml = MultilabelHinge(*small_multilabel())
    w = np.random.default_rng(0).standard_normal(ml.dim)
    P = ml.predict(np.ones((3, 4)), w, n_labels=2)
    assert P.shape == (3, 4) and np.all(P.sum(axis=1) == 2)
    assert set(np.unique(ml.predict(np.ones((3, 4)), w))) <= {0.0, 1.0}


# ----------------------------------------------------------------------------------------
# bad input: clear errors
# ----------------------------------------------------------------------------------------
X3 = np.arange(6.0).reshape(3, 2)


@pytest.mark.parametrize("cls", [MulticlassHinge, Softmax])
def test_bad_class_labels(cls):
    with pytest.raises(ValueError, match=r"non-integer values \[2.5\]"):
        cls(X3, [0, 1, 2.5])
    with pytest.raises(ValueError, match=r"negative labels \[-1.0\]"):
        cls(X3, [0, -1, 1])
    with pytest.raises(ValueError, match=r"0 \.\. 2 \(n_classes = 3\); found \[5\]"):
        cls(X3, [0, 1, 5], n_classes=3)
    with pytest.raises(ValueError, match="X has 3 rows but y has 2"):
        cls(X3, [0, 1])
    with pytest.raises(ValueError, match=r"classes \[1\] have no examples.*n_classes=3"):
        cls(X3, [0, 2, 2])
    with pytest.raises(ValueError, match=r"classes \[0\] have no examples.*y - 1"):
        cls(X3, [1, 2, 2])  # 1-based labels
    with pytest.raises(ValueError, match="single class"):
        cls(X3, [0, 0, 0])
    with pytest.raises(ValueError, match="n_classes must be an integer >= 2"):
        cls(X3, [0, 1, 1], n_classes=1)
    with pytest.raises(ValueError, match="NaN"):
        cls(X3, [0, np.nan, 1])
    assert cls(X3, [0, 2, 2], n_classes=4).shape == (2, 4)  # empty classes allowed when asked


def test_bad_cost_matrix():
    y = [0, 1, 2]
    with pytest.raises(ValueError, match=r"square k x k.*\(3, 2\)"):
        ScaledMulticlassHinge(X3, y, np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"nonnegative; cost\[0, 1\] = -1.0"):
        ScaledMulticlassHinge(X3, y, [[0, -1, 1], [1, 0, 1], [1, 1, 0]])
    with pytest.raises(ValueError, match=r"zero diagonal.*cost\[1, 1\] = 2.0"):
        ScaledMulticlassHinge(X3, y, [[0, 1, 1], [1, 2, 1], [1, 1, 0]])
    with pytest.raises(ValueError, match=r"0 \.\. 1 \(n_classes = 2\); found \[2\]"):
        ScaledMulticlassHinge(X3, y, [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="NaN or inf"):
        ScaledMulticlassHinge(X3, y, [[0, 1, np.inf], [1, 0, 1], [1, 1, 0]])
    with pytest.raises(ValueError, match="rescaling must be 'margin' or 'slack'"):
        ScaledMulticlassHinge(X3, y, 1 - np.eye(3), rescaling="both")
    # classes without examples are fine: k comes from the cost matrix
    assert ScaledMulticlassHinge(X3, [0, 0, 1], 1 - np.eye(4)).shape == (2, 4)


def test_bad_multilabel_targets():
    with pytest.raises(ValueError, match=r"only 0 and 1; found \[2.0\] \(first at row 1, column 0\)"):
        MultilabelHinge(X3, [[0, 1], [2, 0], [1, 1]])
    with pytest.raises(ValueError, match="X has 3 rows but Y has 2"):
        MultilabelHinge(X3, [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="m x k 0/1 indicator matrix"):
        MultilabelHinge(X3, [0, 1, 1])
    with pytest.raises(ValueError, match="at least 2 label columns"):
        MultilabelHinge(X3, [[0], [1], [1]])
    # a sparse indicator matrix (as nsopt.io returns for multilabel files) is accepted
    loss = MultilabelHinge(X3, sp.csr_matrix(np.array([[0, 1], [1, 0], [1, 1]])))
    assert loss.value(np.zeros(4)) == pytest.approx(2 / 3)


def test_bad_points_and_shapes():
    loss = MulticlassHinge(X3, [0, 1, 2])
    assert loss.shape == (2, 3) and loss.dim == 6
    with pytest.raises(ValueError, match="length 5, expected 6"):
        loss.value(np.zeros(5))
    with pytest.raises(ValueError, match="flattened in C order"):
        loss.value(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="sample_weight"):
        MulticlassHinge(X3, [0, 1, 2], sample_weight=[-1.0, 1.0, 1.0])


def test_flattening_is_c_order():
    """w.reshape(d, k): column j of W scores class j."""
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    loss = MulticlassHinge(X, [0, 1])
    W = np.array([[5.0, 0.0], [0.0, 5.0]])  # x_0 -> class 0, x_1 -> class 1, margin 5
    assert loss.value(W.ravel()) == 0.0
    assert loss.value(W.T.ravel()) == 0.0  # symmetric W: the same
    W = np.array([[0.0, 5.0], [0.0, 0.0]])  # x_0 scores class 1 by 5: loss (5 + 1) / 2 + 1 / 2
    assert loss.value(W.ravel()) == pytest.approx(3.5)
    np.testing.assert_array_equal(loss.predict(X, W.ravel()), [1, 0])


# ----------------------------------------------------------------------------------------
# real data (slow)
# ----------------------------------------------------------------------------------------
def _load(name, **kw):
    if hasattr(nsopt, "io") and hasattr(nsopt.io, "load_dataset"):
        try:
            return nsopt.io.load_dataset(name)
        except FileNotFoundError:
            pass
    path = DATA / f"{name}.xz"
    if not path.is_file():
        pytest.skip(f"data set {name} not found in {DATA}")
    from sklearn.datasets import load_svmlight_file

    with lzma.open(path, "rb") as f:
        X, y = load_svmlight_file(f, **kw)
    if kw.get("multilabel"):
        Y = np.zeros((len(y), 14))
        for i, labels in enumerate(y):
            Y[i, [int(z) for z in labels]] = 1.0
        y = Y
    return X, y


@pytest.mark.slow
def test_letter_multiclass_hinge_accuracy():
    """Crammer-Singer + L2 on letter.scale (15000 x 16, 26 classes), lam = 1e-4, the proximal
    bundle method to a certified gap of 1e-2. Measured (2 cores, CPU time, one run): proximal
    bundle 190 iterations, 1.3 s; BMRM 842 iterations, 6.2 s; LS-BMRM 102 iterations, 13.6 s.
    Test accuracy 75.5% (BMRM); the floor is 72%."""
    X, y = _load("letter.scale", n_features=16)
    Xt, yt = _load("letter.scale.t", n_features=16)
    loss = MulticlassHinge(X, y.astype(int) - 1)  # labels 1..26 -> 0..25
    J = nsopt.RegularizedRisk(loss, L2(), 1e-4)
    t0 = time.perf_counter()
    res = nsopt.minimize(J, method="proximal-bundle", rtol=1e-2, max_time=90)
    elapsed = time.perf_counter() - t0
    acc = float(np.mean(loss.predict(Xt, res.x) == yt.astype(int) - 1))
    print(f"\nletter: {res.status.value}, {res.nit} iterations, {elapsed:.1f} s, fun {res.fun:.5f}, "
          f"relative gap {res.gap / res.fun:.2e}, test accuracy {acc:.4f}")
    assert res.lower_bound <= res.fun
    res.certificate.check(J)
    assert acc >= 0.72


@pytest.mark.slow
def test_yeast_multilabel_hinge():
    """Multilabel hinge (eq. 54) + L2 on yeast (1500 x 103, 14 labels, 4.2 relevant per example).

    On yeast the worst-pair loss cannot go below its value at W = 0 (1: every label ties):
    W = 0 is the optimum (cvxpy + Clarabel at lam = 1e-4: f* = 1.0000000000, ||W|| = 1e-8), so
    the certified bracket must contain 1, and predictions are the all-tie ones: no label scores
    above the mean, Hamming loss 0.3037 on yeast_test.svm (the all-zero predictor's)."""
    X, Y = _load("yeast_train.svm", n_features=103, multilabel=True)
    Xt, Yt = _load("yeast_test.svm", n_features=103, multilabel=True)
    loss = MultilabelHinge(X, Y)
    J = nsopt.RegularizedRisk(loss, L2(), 1e-3)
    t0 = time.perf_counter()
    res = nsopt.minimize(J, method="bmrm", rtol=1e-2, max_time=60)
    elapsed = time.perf_counter() - t0
    hamming = float(np.mean(loss.predict(Xt, res.x) != Yt))
    print(f"\nyeast: {res.status.value}, {res.nit} iterations, {elapsed:.1f} s, fun {res.fun:.5f}, "
          f"lower bound {res.lower_bound:.5f}, test Hamming loss {hamming:.4f}, "
          f"label accuracy {1 - hamming:.4f}")
    res.certificate.check(J)
    assert res.lower_bound <= 1.0 + 1e-12 and res.fun >= 1.0 - 1e-12
    assert res.status is nsopt.Status.CONVERGED
    assert hamming <= float(np.mean(Yt != 0)) + 1e-12  # no worse than predicting no label
    assert 1.0 - hamming >= 0.69

"""nsopt.to_cvxpy and nsopt.from_cvxpy: the cvxpy bridge, both ways (issue 13).

to_cvxpy: on every supported loss x regularizer pair the cvxpy objective equals
``problem.value`` at random points of the domain, and Clarabel's optimum lies in nsopt's
certified bracket; the unsupported classes raise NotImplementedError naming themselves.
from_cvxpy: max, abs, norms, pos and quad_over_lin expressions give oracles whose values match
numpy, whose subgradients satisfy the subgradient inequality, which pass check_oracle, and
which a bundle method minimises to a bracket containing cvxpy's own optimum.
"""
from __future__ import annotations

import sys
import zlib

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.cvx import (AUXILIARY, SUPPORTED, UNSUPPORTED, CvxpyProblem, cvxpy_support, from_cvxpy,
                       to_cvxpy)
from nsopt.testing import check_oracle

cp = pytest.importorskip("cvxpy")

M, D = 12, 3


def _binary(rng, m=M, d=D):
    X = rng.standard_normal((m, d))
    y = np.where(rng.standard_normal(m) + X[:, 0] > 0, 1.0, -1.0)
    y[:2] = (1.0, -1.0)
    return X, y


def _multiclass(rng, m=M, d=D, k=3):
    X = rng.standard_normal((m, d))
    y = np.argmax(X @ rng.standard_normal((d, k)) + rng.standard_normal((m, k)), axis=1)
    y[:k] = np.arange(k)
    return X, y


def _build(name, rng):
    """One small instance of the loss ``name`` (some with sample weights or sparse X)."""
    X, y = _binary(rng)
    r = X @ rng.standard_normal(D) + 0.3 * rng.standard_normal(M)
    weights = rng.uniform(0.2, 2.0, M)
    if name == "hinge":
        return L.Hinge(sp.csr_matrix(X), y, sample_weight=weights)
    if name == "squared-hinge":
        return L.SquaredHinge(X, y)
    if name == "logistic":
        return L.Logistic(X, y, sample_weight=weights)
    if name == "exponential":
        return L.Exponential(0.5 * X, y)
    if name == "huber":
        return L.Huber(X, r, delta=0.4)
    if name == "least-squares":
        return L.LeastSquares(sp.csr_matrix(X), r, sample_weight=weights)
    if name == "least-absolute-deviation":
        return L.LeastAbsoluteDeviation(X, r)
    if name == "quantile":
        return L.Quantile(X, r, tau=0.3)
    if name == "epsilon-insensitive":
        return L.EpsilonInsensitive(X, r, epsilon=0.2)
    if name == "poisson":
        return L.Poisson(0.5 * X, rng.poisson(1.5, M).astype(float))
    if name == "novelty":
        return L.Novelty(X, rho=0.5)
    Xm, ym = _multiclass(rng)
    if name == "multiclass-hinge":
        return L.MulticlassHinge(Xm, ym, sample_weight=weights)
    if name == "scaled-multiclass-hinge":
        cost = np.array([[0, 1, 2], [1, 0, 1], [3, 1, 0]], dtype=float)
        return L.ScaledMulticlassHinge(sp.csr_matrix(Xm), ym, cost, rescaling="slack")
    if name == "softmax":
        return L.Softmax(Xm, ym)
    if name == "multilabel-hinge":
        Y = (rng.random((M, 3)) < 0.4).astype(float)
        Y[0], Y[1] = 0.0, 1.0  # rows without a pair contribute 0
        return L.MultilabelHinge(Xm, Y, sample_weight=weights)
    if name == "roc-area":
        return L.ROCArea(X, y)
    if name == "f-beta":
        return L.FBeta(X, y, beta=0.7)
    if name == "prbep":
        return L.PRBEP(X, y)
    if name == "ordinal-regression":
        return L.OrdinalRegression(X, rng.integers(1, 4, M), cost="difference")
    if name == "preference-pairs":
        pairs = rng.choice(M, size=(15, 2), replace=True)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        return L.PreferencePairs(X, pairs, cost=rng.uniform(0.5, 2.0, len(pairs)))
    if name == "ndcg":
        Xr, rel, qid = nsopt.datasets.make_ranking(3, 5, D, random_state=int(rng.integers(100)))
        return L.NDCG(Xr, rel, qid, k=3)
    if name == "chain-hinge":
        Y = [rng.integers(0, 3, T) for T in (4, 3, 5)]
        Xs = [np.eye(3)[y][:, :2] + 0.5 * rng.standard_normal((len(y), 2)) for y in Y]
        return L.ChainHinge(Xs, Y, n_states=3, sample_weight=[1.0, 2.0, 0.5])
    raise KeyError(name)


def _reg(name, dim, rng):
    if name == "l2":
        return R.L2()
    if name == "lp":
        return R.Lp(1.5)
    if name == "quadratic-form":
        B = rng.standard_normal((dim, dim))
        return R.QuadraticForm(B @ B.T + np.eye(dim))
    if name == "l1":
        return R.L1()
    if name == "elastic-net":
        return R.ElasticNet(0.4)
    if name == "neg-entropy":
        return R.NegEntropy()
    if name == "neg-entropy-normalized":
        return R.NegEntropy(normalized=True)
    if name == "kl":
        prior = rng.uniform(0.5, 1.5, dim)
        return R.KL(prior / prior.sum())
    raise KeyError(name)


SUPPORTED_LOSSES = sorted(n for n, cls in L.LOSSES.items() if cls in SUPPORTED)
UNSUPPORTED_LOSSES = sorted(n for n, cls in L.LOSSES.items() if cls not in SUPPORTED)
REGS = ["l2", "lp", "quadratic-form", "l1", "elastic-net", "neg-entropy",
        "neg-entropy-normalized", "kl"]


def _point(reg_name, dim, rng):
    """A random point of the regularizer's domain."""
    if reg_name == "neg-entropy":
        return rng.uniform(0.05, 1.5, dim)
    if reg_name in ("neg-entropy-normalized", "kl"):
        return rng.dirichlet(np.ones(dim))
    return rng.standard_normal(dim)


def test_support_table_covers_every_loss_and_regularizer():
    rows = {name: (kind, ok, note) for name, kind, ok, note in cvxpy_support()}
    for cls in L.LOSSES.values():
        kind, ok, note = rows[cls.__name__]
        assert kind == "loss" and ok == (cls in SUPPORTED) and note
        assert (cls in SUPPORTED) != (cls in UNSUPPORTED)
    regs = {cls for name, cls in vars(R).items()
            if isinstance(cls, type) and issubclass(cls, R.Regularizer)
            and not name.startswith("_") and cls is not R.Regularizer}
    assert regs <= set(SUPPORTED)


def test_import_nsopt_does_not_import_cvxpy():
    import subprocess

    code = "import sys, nsopt, nsopt.cvx; nsopt.to_cvxpy; print('cvxpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("reg_name", REGS)
@pytest.mark.parametrize("loss_name", SUPPORTED_LOSSES)
def test_objective_matches_value(loss_name, reg_name):
    rng = np.random.default_rng(zlib.crc32(f"{loss_name}/{reg_name}".encode()))
    loss = _build(loss_name, rng)
    J = nsopt.RegularizedRisk(loss, _reg(reg_name, loss.dim, rng), lam=0.3)
    ref = to_cvxpy(J)
    assert isinstance(ref, CvxpyProblem) and ref.variable.shape == (J.dim,)
    problem, variable = ref  # unpacks as a pair
    for _ in range(3):
        w = 2.0 * _point(reg_name, J.dim, rng)
        if reg_name in ("neg-entropy-normalized", "kl"):
            w /= w.sum()
        if type(loss) in AUXILIARY:  # an LP in auxiliary variables, solved with w fixed
            assert ref.objective_at(w) == pytest.approx(J.value(w), rel=1e-7, abs=1e-9)
            break  # one point: each costs an LP solve
        variable.value = w
        assert problem.objective.value == pytest.approx(J.value(w), rel=1e-9, abs=1e-12)
        assert all(c.value() for c in problem.constraints)


@pytest.mark.parametrize("loss_name", SUPPORTED_LOSSES)
def test_bare_loss_objective_matches_value(loss_name):
    rng = np.random.default_rng(7)
    loss = _build(loss_name, rng)
    ref = to_cvxpy(loss)
    rel = 1e-7 if type(loss) in AUXILIARY else 1e-9
    for _ in range(3):
        w = 3.0 * rng.standard_normal(loss.dim)
        assert ref.objective_at(w) == pytest.approx(loss.value(w), rel=rel, abs=1e-12)


# every loss with L2, every regularizer with three losses of different kinds
SOLVE_PAIRS = ([(name, "l2") for name in SUPPORTED_LOSSES]
               + [(name, reg) for name in ("logistic", "multiclass-hinge", "roc-area")
                  for reg in REGS if reg != "l2"])


def _clarabel(problem):
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert problem.status in ("optimal", "optimal_inaccurate"), problem.status
    return float(problem.value)


@pytest.mark.parametrize("loss_name, reg_name", SOLVE_PAIRS)
def test_certified_bracket_contains_clarabel_optimum(loss_name, reg_name):
    rng = np.random.default_rng(3)
    loss = _build(loss_name, rng)
    J = nsopt.RegularizedRisk(loss, _reg(reg_name, loss.dim, rng), lam=0.3)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-6, max_iter=2000)
    assert res.success, (res.status, res.gap)
    ref = to_cvxpy(J)
    f_star = _clarabel(ref.problem)
    tol = 1e-6 * (1.0 + abs(f_star))
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    # and the solution cvxpy found is a point where nsopt's J agrees with cvxpy's objective
    assert J.value(ref.variable.value) == pytest.approx(f_star, rel=1e-5, abs=1e-7)


def test_sum_scaled_composed_max_translate():
    rng = np.random.default_rng(1)
    X, y = _binary(rng)
    hinge, logistic = L.Hinge(X, y), L.Logistic(X, y)
    A, b = rng.standard_normal((D, D)), rng.standard_normal(D)
    f = hinge + 2.0 * logistic + nsopt.Max([hinge, logistic.compose(A, b)])
    ref = to_cvxpy(f)
    for _ in range(3):
        w = rng.standard_normal(D)
        assert ref.objective_at(w) == pytest.approx(f.value(w), rel=1e-9)


@pytest.mark.parametrize("loss_name", UNSUPPORTED_LOSSES)
def test_unsupported_losses_raise_naming_the_loss(loss_name):
    cls = L.LOSSES[loss_name]
    rng = np.random.default_rng(0)
    if cls is L.StructuredHinge:
        Xs = rng.standard_normal((4, 2))
        loss = L.StructuredHinge(lambda x, label: x * (1.0 if label else -1.0),
                                 lambda x, label, w: (1 - label, 1.0), list(zip(Xs, [0, 1, 0, 1])),
                                 dim=2)
    else:  # pragma: no cover - a new unsupported loss needs an instance here
        pytest.fail(f"no test instance for {loss_name}")
    with pytest.raises(NotImplementedError, match=cls.__name__):
        to_cvxpy(nsopt.RegularizedRisk(loss, lam=0.1))


def test_function_oracle_and_unknown_oracles_raise():
    f = nsopt.FunctionOracle(lambda w: float(w @ w), lambda w: 2 * w, dim=2)
    with pytest.raises(NotImplementedError, match="FunctionOracle"):
        to_cvxpy(f)

    class Mine(nsopt.Oracle):
        dim = 2

        def _value_and_subgradient(self, w):
            return float(np.abs(w).sum()), np.sign(w)

    with pytest.raises(NotImplementedError, match="Mine"):
        to_cvxpy(Mine())
    with pytest.raises(TypeError, match="Oracle"):
        to_cvxpy("hinge")


# ----------------------------------------------------------------------------------------
# from_cvxpy
# ----------------------------------------------------------------------------------------
N = 4
_RNG = np.random.default_rng(11)
_A, _B = _RNG.standard_normal((5, N)), _RNG.standard_normal(5)
_C = _RNG.standard_normal(N)


def _expressions():
    """name -> (cvxpy expression of x, numpy function, missing_grad) over one variable x."""
    x = cp.Variable(N, name="x")
    return x, {
        "max": (cp.max(_A @ x + _B), lambda v: np.max(_A @ v + _B), "raise"),
        "abs": (cp.sum(cp.abs(x - _C)) + 0.1 * cp.sum_squares(x),
                lambda v: np.abs(v - _C).sum() + 0.1 * v @ v, "raise"),
        "norm1": (cp.norm1(_A @ x + _B), lambda v: np.abs(_A @ v + _B).sum(), "raise"),
        "norm2": (cp.norm2(_A @ x + _B), lambda v: np.linalg.norm(_A @ v + _B), "raise"),
        # cvxpy's norm_inf has no grad: the dual fallback
        "norm_inf": (cp.norm_inf(_A @ x + _B), lambda v: np.abs(_A @ v + _B).max(), "dual"),
        "pos": (cp.sum(cp.pos(_A @ x + _B)) + cp.norm2(x),
                lambda v: np.maximum(_A @ v + _B, 0).sum() + np.linalg.norm(v), "raise"),
        "quad_over_lin": (cp.quad_over_lin(_A @ x + _B, 2.0) + cp.norm1(x),
                          lambda v: (_A @ v + _B) @ (_A @ v + _B) / 2.0 + np.abs(v).sum(), "raise"),
    }


EXPRESSIONS = sorted(_expressions()[1])


def _oracle(name):
    x, table = _expressions()
    expr, fn, missing = table[name]
    return from_cvxpy(expr, missing_grad=missing), fn, expr, x


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_from_cvxpy_value_matches_numpy_and_check_oracle(name):
    f, fn, expr, x = _oracle(name)
    assert f.dim == N and f.lower_bound == (0.0 if expr.is_nonneg() else -np.inf)
    assert f.finite  # quad_over_lin's domain constraint is on a constant only
    rng = np.random.default_rng(5)
    for _ in range(5):
        w = 2.0 * rng.standard_normal(N)
        assert f.value(w) == pytest.approx(fn(w), rel=1e-12, abs=1e-12)
    check_oracle(f, n=6, rtol=1e-6 if name == "norm_inf" else 1e-7)
    assert x.value is None  # the oracle leaves the user's variable as it found it


points = st.lists(st.floats(-5, 5, allow_nan=False, allow_infinity=False), min_size=N,
                  max_size=N).map(np.array)


@pytest.mark.parametrize("name", EXPRESSIONS)
@settings(max_examples=8, deadline=None)
@given(w=points, v=points)
def test_from_cvxpy_subgradient_inequality(name, w, v):
    f, fn, _, _ = _oracle(name)
    fw, g = f.value_and_subgradient(w)
    slack = 1e-7 if name == "norm_inf" else 1e-10
    assert fn(v) >= fw + g @ (v - w) - slack * (1 + abs(fn(v)) + np.abs(g) @ np.abs(v - w))


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_bundle_method_brackets_cvxpy_optimum(name):
    f, _, expr, x = _oracle(name)
    f_star = _clarabel(cp.Problem(cp.Minimize(expr), [x >= -3, x <= 3]))
    res = nsopt.minimize(f, method="proximal-bundle", bounds=(-3.0, 3.0), rtol=1e-6, atol=1e-8,
                         max_iter=500)
    tol = 1e-6 * (1.0 + abs(f_star))
    assert np.isfinite(res.lower_bound)
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.gap <= 1e-4 * (1.0 + abs(f_star))


def test_scalar_variable_and_minimize_objective():
    t = cp.Variable(name="t")
    f = from_cvxpy(cp.Minimize(cp.abs(t - 1.5) + cp.square(t)))
    assert f.dim == 1 and f.value(np.array([1.0])) == pytest.approx(1.5)
    assert f.subgradient(np.array([2.0])).tolist() == [5.0]


def test_from_cvxpy_rejects_with_clear_errors():
    x, y = cp.Variable(3, name="x"), cp.Variable(2, name="y")
    with pytest.raises(ValueError, match="exactly one variable.*x.*y|exactly one variable.*y.*x"):
        from_cvxpy(cp.norm1(x) + cp.norm1(y))
    with pytest.raises(ValueError, match="scalar"):
        from_cvxpy(cp.abs(x))
    with pytest.raises(ValueError, match="convex"):
        from_cvxpy(cp.sum(cp.sqrt(x)))
    p = cp.Parameter(3, name="shift")
    with pytest.raises(ValueError, match="shift"):
        from_cvxpy(cp.norm1(x - p))
    p.value = np.ones(3)
    assert from_cvxpy(cp.norm1(x - p)).value(np.zeros(3)) == 3.0
    with pytest.raises(ValueError, match="nonneg"):
        from_cvxpy(cp.sum(cp.Variable(3, nonneg=True)))
    with pytest.raises(ValueError, match="shape"):
        from_cvxpy(cp.sum(cp.abs(cp.Variable((2, 2)))))
    with pytest.raises(ValueError, match="missing_grad"):
        from_cvxpy(cp.norm1(x), missing_grad="guess")
    with pytest.raises(TypeError, match="cvxpy expression"):
        from_cvxpy(lambda w: 0.0)


def test_missing_grad_raise_names_the_atom():
    x = cp.Variable(3)
    f = from_cvxpy(cp.norm_inf(x))
    assert f.value(np.array([1.0, -4.0, 2.0])) == 4.0
    with pytest.raises(ValueError, match="norm_inf.*missing_grad='dual'"):
        f.subgradient(np.array([1.0, -4.0, 2.0]))
    g = from_cvxpy(cp.norm_inf(x), missing_grad="dual").subgradient(np.array([1.0, -4.0, 2.0]))
    np.testing.assert_allclose(g, [0.0, -1.0, 0.0], atol=1e-7)


def test_domain_gives_inf_outside():
    x = cp.Variable(2)
    f = from_cvxpy(-cp.sum(cp.log(x)))
    assert not f.finite and f.value(np.array([-1.0, 1.0])) == np.inf
    assert f.value(np.array([1.0, 1.0])) == 0.0
    with pytest.raises(ValueError, match="domain"):
        f.subgradient(np.array([-1.0, 1.0]))


def test_round_trip():
    x = cp.Variable(3)
    expr = cp.norm1(x - 1) + cp.sum_squares(x)
    problem, variable = to_cvxpy(from_cvxpy(expr))
    assert variable is x and problem.objective.expr is expr


# --- a free intercept ------------------------------------------------------------------------
@pytest.mark.parametrize("loss_name", ["hinge", "logistic", "least-squares", "multiclass-hinge"])
@pytest.mark.parametrize("reg", ["l2", "l1"])
def test_to_cvxpy_with_an_intercept(loss_name, reg):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 3)) + 0.5
    if loss_name == "multiclass-hinge":
        loss = nsopt.losses.MulticlassHinge(X, rng.integers(0, 3, 30))
    elif loss_name == "least-squares":
        loss = nsopt.losses.LeastSquares(X, X @ [1.0, -2.0, 0.5] + 7.0 + rng.standard_normal(30))
    else:
        y = np.where(X[:, 0] + 0.3 * rng.standard_normal(30) > 1.0, 1.0, -1.0)
        loss = (nsopt.losses.Hinge if loss_name == "hinge" else nsopt.losses.Logistic)(X, y)
    omega = nsopt.regularizers.L2() if reg == "l2" else nsopt.regularizers.L1()
    J = nsopt.RegularizedRisk(loss, omega, lam=0.05, fit_intercept=True)
    prob, var = nsopt.to_cvxpy(J)
    assert var.size == J.dim
    for _ in range(3):
        x = rng.standard_normal(J.dim)
        var.value = x
        assert prob.objective.value == pytest.approx(J.value(x), rel=1e-10, abs=1e-12)
    optimum = prob.solve(solver="CLARABEL")
    res = nsopt.minimize(J, method="bmrm", rtol=1e-7)
    assert res.lower_bound <= optimum + 1e-6 * abs(optimum) and optimum <= res.fun + 1e-7
    # the intercept is free: the cvxpy optimum is below the problem without one
    without = nsopt.to_cvxpy(nsopt.RegularizedRisk(loss, omega, lam=0.05)).problem
    assert optimum <= without.solve(solver="CLARABEL") + 1e-8

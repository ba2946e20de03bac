"""Scalar losses ([TVSL10] Table 5): BMRM certificates against cvxpy + Clarabel for every
loss, bad input, the errata E7, E8, E20, overflow and the Poisson lower bound.

The element-wise laws (values, subgradients, kinks, lines, dense vs sparse, weights) are the
hypothesis suite in tests/properties/test_losses_scalar.py.
"""
import math

import numpy as np
import pytest

import nsopt
from nsopt import regularizers as R
from nsopt.losses import _kernels as K
from nsopt.losses.scalar import (
    EpsilonInsensitive,
    Exponential,
    Hinge,
    Huber,
    LeastAbsoluteDeviation,
    LeastSquares,
    Logistic,
    Novelty,
    Poisson,
    Quantile,
    SquaredHinge,
)
from nsopt.testing import check_oracle

from cvxref import small_binary


# --- problems and their cvxpy twins ---------------------------------------------------------
def _regression(m=60, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = X @ rng.standard_normal(d) + 0.3 * rng.standard_t(2, m)  # heavy tails: Huber, LAD matter
    return X, y


def _counts(m=60, d=5, seed=0):
    """Counts with mean about e^2, and a constant feature: the optimal Poisson risk is
    negative, so a lower bound of 0 would be wrong (and BMRM's certificate with it)."""
    rng = np.random.default_rng(seed)
    X = 0.5 * rng.standard_normal((m, d))
    X[:, 0] = 1.0
    y = rng.poisson(np.exp(X @ rng.standard_normal(d) * 0.5 + 2.0)).astype(float)
    return X, y


def _novelty_data(m=60, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return 1.0 + 0.5 * rng.standard_normal((m, d)), None


def _cvx_loss(name, X, y, w, param, weight):
    import cvxpy as cp

    m = X.shape[0]
    c = np.full(m, 1.0 / m) if weight is None else weight / weight.sum()
    f = X @ w
    if name == "Novelty":
        return c @ cp.pos(param - f)
    r = f - y
    z = cp.multiply(y, f)
    elem = {
        "Hinge": lambda: cp.pos(1 - z),
        "SquaredHinge": lambda: 0.5 * cp.square(cp.pos(1 - z)),
        "Logistic": lambda: cp.logistic(-z),
        "Exponential": lambda: cp.exp(-z),
        # cvxpy: huber(x, M) = x^2 if |x| <= M else 2 M |x| - M^2, twice ours
        "Huber": lambda: 0.5 * cp.huber(r, param),
        "LeastSquares": lambda: 0.5 * cp.square(r),
        "LeastAbsoluteDeviation": lambda: cp.abs(r),
        "Quantile": lambda: cp.maximum((1 - param) * r, -param * r),  # level param, r = f - y
        "EpsilonInsensitive": lambda: cp.pos(cp.abs(r) - param),
        "Poisson": lambda: cp.exp(f) - cp.multiply(y, f),
    }[name]()
    return c @ elem


def cvxpy_optimum(name, X, y, param, weight, reg, lam):
    import cvxpy as cp

    w = cp.Variable(X.shape[1])
    omega = 0.5 * cp.sum_squares(w) if isinstance(reg, R.L2) else cp.norm1(w)
    prob = cp.Problem(cp.Minimize(lam * omega + _cvx_loss(name, X, y, w, param, weight)))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


MAKERS = {
    "Hinge": (lambda X, y, a, s: Hinge(X, y, sample_weight=s), small_binary, None),
    "SquaredHinge": (lambda X, y, a, s: SquaredHinge(X, y, sample_weight=s), small_binary, None),
    "Logistic": (lambda X, y, a, s: Logistic(X, y, sample_weight=s), small_binary, None),
    "Exponential": (lambda X, y, a, s: Exponential(X, y, sample_weight=s), small_binary, None),
    "Huber": (lambda X, y, a, s: Huber(X, y, a, sample_weight=s), _regression, 0.5),
    "LeastSquares": (lambda X, y, a, s: LeastSquares(X, y, sample_weight=s), _regression, None),
    "LeastAbsoluteDeviation": (lambda X, y, a, s: LeastAbsoluteDeviation(X, y, sample_weight=s),
                               _regression, None),
    "Quantile": (lambda X, y, a, s: Quantile(X, y, a, sample_weight=s), _regression, 0.8),
    "EpsilonInsensitive": (lambda X, y, a, s: EpsilonInsensitive(X, y, a, sample_weight=s),
                           _regression, 0.25),
    "Poisson": (lambda X, y, a, s: Poisson(X, y, sample_weight=s), _counts, None),
    "Novelty": (lambda X, y, a, s: Novelty(X, a, sample_weight=s), _novelty_data, 1.0),
}

CASES = [(name, "l2", 0.05, False) for name in MAKERS] + [
    ("Exponential", "l1", 0.02, False),        # binary classification
    ("LeastAbsoluteDeviation", "l1", 0.02, False),  # piecewise-linear regression
    ("Huber", "l1", 0.02, True),               # smooth regression, sample weights
    ("Poisson", "l1", 0.02, False),            # counts: needs the negative lower bound
    ("Novelty", "l1", 0.02, False),            # no labels
    ("Quantile", "l2", 0.02, True),
]


@pytest.mark.parametrize("name, reg_name, lam, weighted", CASES,
                         ids=[f"{c[0]}-{c[1]}{'-weighted' if c[3] else ''}" for c in CASES])
def test_bmrm_certificate_brackets_cvxpy_optimum(name, reg_name, lam, weighted):
    make, data, param = MAKERS[name]
    X, y = data(m=60, d=5, seed=11)
    weight = np.random.default_rng(1).integers(1, 4, X.shape[0]).astype(float) if weighted else None
    reg = R.L2() if reg_name == "l2" else R.L1()
    J = nsopt.RegularizedRisk(make(X, y, param, weight), reg, lam)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-6, max_iter=5000)
    f_star = cvxpy_optimum(name, X, y, param, weight, reg, lam)
    tol = 1e-7 * max(1.0, abs(f_star))
    assert res.status is nsopt.Status.CONVERGED, res
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.gap <= 1e-6 * abs(res.fun) + 1e-12
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))
    if name == "Poisson":
        assert f_star < 0  # the case where a floor of 0 would be invalid


# --- check_oracle on every loss, with points on kinks --------------------------------------
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_check_oracle(name):
    make, data, param = MAKERS[name]
    X, y = data(m=12, d=3, seed=2)
    X = np.round(X * 4) / 4  # dyadic data: scores are exact and kinks are hit exactly
    if y is not None and name not in ("Poisson",):
        y = np.round(np.asarray(y) * 4) / 4
    loss = make(X, y, param, None)
    kinks = loss.kinks()
    points = [np.zeros(3), np.linspace(-1, 1, 3)]
    if kinks is not None:
        kinks = kinks.reshape(X.shape[0], -1)
        for i in range(3):  # example i on a kink: solve <x_i, w> = kink for one coordinate
            j = int(np.flatnonzero(X[i])[0])
            w = np.linspace(-0.5, 0.5, 3) * 0.25
            w[j] += (kinks[i, -1] - X[i] @ w) / X[i, j]
            points.append(w)
    check_oracle(loss, points=np.array(points), n=10, rtol=1e-7)


# --- attributes -----------------------------------------------------------------------------
def test_binary_flags_lower_bounds_and_predictions():
    Xb, yb = small_binary(m=20, d=3, seed=0)
    Xr, yr = _regression(m=20, d=3)
    w = np.array([0.5, -1.0, 2.0])
    for cls in (Hinge, SquaredHinge, Logistic, Exponential):
        loss = cls(Xb, yb)
        assert loss.binary and loss.lower_bound == 0.0
        np.testing.assert_array_equal(loss.predict(Xb, w), np.where(Xb @ w >= 0, 1.0, -1.0))
    for loss in (Huber(Xr, yr), LeastSquares(Xr, yr), LeastAbsoluteDeviation(Xr, yr),
                 Quantile(Xr, yr, 0.3), EpsilonInsensitive(Xr, yr, 0.1)):
        assert not loss.binary and loss.lower_bound == 0.0
        np.testing.assert_allclose(loss.predict(Xr, w), Xr @ w)
    nov = Novelty(Xr, rho=0.5)
    assert nov.lower_bound == 0.0 and nov.rho == 0.5
    np.testing.assert_array_equal(nov.y, np.full(20, 0.5))
    np.testing.assert_array_equal(nov.predict(Xr, w), np.where(Xr @ w >= 0.5, 1.0, -1.0))
    Xc, yc = _counts(m=20, d=3)
    np.testing.assert_allclose(Poisson(Xc, yc).predict(Xc, w), np.exp(Xc @ w))
    assert Huber(Xr, yr, delta=0.5).kinks().shape == (20, 2)
    assert EpsilonInsensitive(Xr, yr, 0.5).kinks().shape == (20, 2)


def test_poisson_lower_bound_is_the_exact_infimum():
    y = np.array([0.0, 1.0, 2.0, 5.0])
    weight = np.array([1.0, 2.0, 1.0, 3.0])
    loss = Poisson(np.eye(4), y, sample_weight=weight)
    c = weight / weight.sum()
    expected = float(c @ np.array([0.0, 1.0, 2 - 2 * math.log(2), 5 - 5 * math.log(5)]))
    assert loss.lower_bound == pytest.approx(expected, rel=1e-14)
    assert loss.lower_bound <= expected
    assert loss.lower_bound < 0  # the loss can be negative: 0 would be a wrong bound
    # attained for y > 0 at f = log y; approached as f -> -inf for y = 0
    w = np.log(np.where(y > 0, y, 1.0))
    w[0] = -40.0
    assert loss.value(w) == pytest.approx(loss.lower_bound, rel=1e-12, abs=1e-15)
    assert loss.value(w) >= loss.lower_bound


def test_exp_overflow_gives_inf_value():
    """Documented behaviour: exp overflow gives value +inf (no exception), and a solver that
    meets it stops with status numerical_error."""
    X = np.array([[1.0], [-1.0]])
    exp_loss = Exponential(X, [1.0, 1.0])
    assert exp_loss.value(np.array([800.0])) == math.inf  # exp(800) for the second example
    assert exp_loss.value(np.array([700.0])) == pytest.approx(0.5 * math.exp(700.0), rel=1e-12)
    pois = Poisson(X, [1.0, 0.0])
    assert pois.value(np.array([720.0])) == math.inf
    assert math.isfinite(pois.value(np.array([700.0])))
    # no overflow on the far side: the terms underflow to 0
    assert exp_loss.value(np.array([0.0])) == 1.0
    assert Exponential(X[:1], [1.0]).value(np.array([800.0])) == 0.0


def test_breakpoint_beyond_the_float_range_is_inf_without_warning():
    """A kink at eta = (k - f) / q beyond 1.8e308 (q = X p subnormal, as in explore runs with
    X entries near 1e-308) is +inf, no RuntimeWarning; minimize skips it."""
    import warnings

    loss = Hinge(np.array([[2.2250738585072014e-308]]), [1.0])
    line = loss.restrict(np.zeros(1), np.array([1e-3]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert line.breakpoints().tolist() == [math.inf]
        assert line.minimize() == math.inf  # the hinge decreases along p up to its kink


# --- bad input ------------------------------------------------------------------------------
X4 = np.arange(8.0).reshape(4, 2)


@pytest.mark.parametrize("cls", [Hinge, SquaredHinge, Logistic, Exponential])
def test_binary_losses_reject_other_labels(cls):
    with pytest.raises(ValueError, match=r"-1 and \+1.*\[0\.0, 2\.0\]"):
        cls(X4, [1.0, 0.0, 2.0, -1.0])


@pytest.mark.parametrize("make", [
    lambda y: Poisson(X4, y),
    lambda y: Huber(X4, y),
    lambda y: Quantile(X4, y, 0.5),
    lambda y: Exponential(X4, y),
], ids=["Poisson", "Huber", "Quantile", "Exponential"])
def test_nan_and_length_mismatch_in_targets(make):
    with pytest.raises(ValueError, match="y contains NaN"):
        make([1.0, np.nan, 1.0, 1.0])
    with pytest.raises(ValueError, match="X has 4 rows but y has 3 entries"):
        make([1.0, 1.0, 1.0])


def test_poisson_rejects_negative_counts():
    with pytest.raises(ValueError, match=r"nonnegative counts.*\[-2\.0, -1\.0\]"):
        Poisson(X4, [1.0, -1.0, -2.0, 3.0])


@pytest.mark.parametrize("tau", [0.0, 1.0, -0.5, 1.5, float("nan"), float("inf")])
def test_quantile_rejects_tau_outside_open_unit_interval(tau):
    with pytest.raises(ValueError, match="tau must be"):
        Quantile(X4, np.zeros(4), tau)


def test_quantile_tau_type():
    with pytest.raises(TypeError, match="tau must be a real number"):
        Quantile(X4, np.zeros(4), "0.5")


@pytest.mark.parametrize("epsilon", [-0.1, float("nan"), float("inf")])
def test_epsilon_insensitive_rejects_bad_epsilon(epsilon):
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        EpsilonInsensitive(X4, np.zeros(4), epsilon)


def test_epsilon_zero_is_absolute_deviation():
    X, y = _regression(m=10, d=2)
    w, p = np.array([0.3, -0.2]), np.array([1.0, 0.5])
    a, b = EpsilonInsensitive(X, y, 0.0), LeastAbsoluteDeviation(X, y)
    assert a.value(w) == b.value(w)
    np.testing.assert_array_equal(a.sup_subgradient(w, p)[1], b.sup_subgradient(w, p)[1])


@pytest.mark.parametrize("delta", [0.0, -1.0, float("nan")])
def test_huber_rejects_nonpositive_delta(delta):
    with pytest.raises(ValueError, match="delta must be > 0"):
        Huber(X4, np.zeros(4), delta)


def test_novelty_rejects_bad_rho_and_takes_no_labels():
    with pytest.raises(ValueError, match="rho must be finite"):
        Novelty(X4, rho=float("inf"))
    with pytest.raises(TypeError, match="rho must be a real number"):
        Novelty(X4, rho=np.ones(4))
    with pytest.raises(ValueError, match="sample_weight has length 3, expected 4"):
        Novelty(X4, 1.0, np.ones(3))


def test_sample_weight_length_mismatch():
    with pytest.raises(ValueError, match="sample_weight has length 2, expected 4"):
        LeastSquares(X4, np.zeros(4), sample_weight=[1.0, 2.0])


# --- errata ---------------------------------------------------------------------------------
def _central_difference(loss, w, h=1e-6):
    return (loss.value(w + h) - loss.value(w - h)) / (2 * h)


def test_erratum_E20_logistic_derivative():
    """[TVSL10] Table 5 prints -y / (1 + exp(-y f)); the derivative is -y / (1 + exp(y f))."""
    loss = Logistic(np.ones((1, 1)), [1.0])
    w = np.array([0.7])
    fd = _central_difference(loss, w)
    assert fd == pytest.approx(-0.3318, abs=5e-5)
    assert loss.subgradient(w)[0] == pytest.approx(fd, rel=1e-8)
    assert loss.subgradient(w)[0] == pytest.approx(-1 / (1 + math.exp(0.7)), rel=1e-14)
    printed = -1 / (1 + math.exp(-0.7))
    assert printed == pytest.approx(-0.6682, abs=5e-5)
    assert abs(loss.subgradient(w)[0] - printed) > 0.3


@pytest.mark.parametrize("y, f", [(2.0, 0.1), (0.5, -1.0), (-3.0, 0.2), (1.0, 0.25), (-1.0, 0.5)])
def test_erratum_E8_squared_hinge_derivative(y, f):
    """[TVSL10] Table 5 prints f - y, true only for y = +-1; in general -y max(0, 1 - y f).
    The kernel is written for general y (the class itself accepts y = +-1 only)."""
    z, yy, c = np.array([f]), np.array([y]), np.ones(1)
    out = np.empty(1)
    K.squared_hinge_grad(z, yy, c, np.zeros(1), out)
    h = 1e-6
    fd = (K.squared_hinge_value(z + h, yy, c) - K.squared_hinge_value(z - h, yy, c)) / (2 * h)
    assert out[0] == pytest.approx(fd, rel=1e-7, abs=1e-9)
    assert out[0] == pytest.approx(-y * max(0.0, 1 - y * f), rel=1e-15)
    if abs(y) != 1.0:
        assert abs(out[0] - (f - y)) > 0.1  # the printed formula is wrong here
    else:
        assert out[0] == pytest.approx(f - y)  # ... and right for binary labels
        loss = SquaredHinge(np.ones((1, 1)), [y])
        assert loss.subgradient(np.array([f]))[0] == pytest.approx(f - y, rel=1e-15)


def test_erratum_E7_huber():
    """[TVSL10] Table 5's Huber row is garbled: the loss is 0.5 r^2 if |r| <= 1 else |r| - 1/2,
    with derivative r or sgn(r) (r = f - y); for general delta, delta (|r| - delta / 2) and
    clip(r, -delta, delta)."""
    y = np.zeros(1)
    for delta in (1.0, 0.5, 3.0):
        for r in (-4.0, -1.0, -0.3, 0.0, 0.6, 1.0, 2.5, 7.0):
            loss = Huber(np.ones((1, 1)), y, delta)
            w = np.array([r])
            if delta == 1.0:  # the paper's loss
                expected = 0.5 * r * r if abs(r) <= 1 else abs(r) - 0.5
                slope = r if abs(r) <= 1 else math.copysign(1.0, r)
            else:
                expected = 0.5 * r * r if abs(r) <= delta else delta * (abs(r) - 0.5 * delta)
                slope = min(max(r, -delta), delta)
            assert loss.value(w) == pytest.approx(expected, rel=1e-15)
            assert loss.subgradient(w)[0] == pytest.approx(slope, rel=1e-15)
            assert _central_difference(loss, w) == pytest.approx(slope, abs=1e-6)
    # continuous value and derivative where the pieces meet
    loss = Huber(np.ones((1, 1)), y, 1.0)
    for r in (1.0, -1.0):
        lo, hi = loss.restrict(np.array([r]), np.ones(1)).derivative(0.0, -1), \
            loss.restrict(np.array([r]), np.ones(1)).derivative(0.0, 1)
        assert lo == hi == r


def test_line_classes_keep_their_docstrings():
    """Issue 15 move 7: a class attribute above the docstring made ``__doc__`` None."""
    from nsopt.losses.multivariate import ScoreLine
    from nsopt.regularizers import PiecewiseQuadraticLine, QuadraticLine

    for cls in (nsopt.losses.VectorLine, QuadraticLine, PiecewiseQuadraticLine, ScoreLine,
                nsopt.losses.ScalarLine):
        assert cls.__doc__ and cls.__doc__.strip(), cls.__name__
        assert cls.cheap_derivative is True


def test_losses_registry():
    """One registry: every exported loss class under its hyphenated name; get_loss accepts
    underscores (nsopt.testing's old spelling) and names the registry in its error."""
    from nsopt.losses import LOSSES, get_loss

    assert LOSSES["hinge"] is nsopt.losses.Hinge
    assert LOSSES["squared-hinge"] is nsopt.losses.SquaredHinge
    assert LOSSES["roc-area"] is nsopt.losses.ROCArea and LOSSES["ndcg"] is nsopt.losses.NDCG
    assert get_loss("squared_hinge") is get_loss("Squared-Hinge") is nsopt.losses.SquaredHinge
    exported = [getattr(nsopt.losses, n) for n in nsopt.losses.__all__]
    assert all(any(cls is e for e in exported) for cls in LOSSES.values())
    assert nsopt.losses.ScalarLoss not in LOSSES.values()
    with pytest.raises(ValueError, match="unknown loss 'nope'.*hinge"):
        get_loss("nope")


def test_contiguous_groups_one_split_for_every_loss():
    """Scalar, vector and structured losses split n examples the same way (issue 15 move 7)."""
    from nsopt.losses._groups import contiguous_groups

    b = contiguous_groups(30, 22)
    assert b[0] == 0 and b[-1] == 30 and np.all(np.diff(b) >= 1) and np.ptp(np.diff(b)) <= 1
    np.testing.assert_array_equal(b, np.linspace(0, 30, 23).astype(np.int64))
    with pytest.raises(ValueError, match="non-empty groups: n_groups must be in 1 .. 3"):
        contiguous_groups(3, 4)
    with pytest.raises(TypeError, match="integer"):
        contiguous_groups(3, 2.0)
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 3)), np.where(rng.random(30) < 0.5, -1.0, 1.0)
    w = rng.standard_normal(3)
    values, A = nsopt.losses.Hinge(X, y).group_value_and_subgradients(w, 22)
    for p in range(22):
        s, e = b[p], b[p + 1]
        part = nsopt.losses.Hinge(X[s:e], y[s:e]).value_and_subgradient(w)
        assert values[p] == pytest.approx(part[0] * (e - s) / 30, rel=1e-12)
        np.testing.assert_allclose(A[p], part[1] * (e - s) / 30, rtol=1e-12, atol=1e-15)

"""Unit tests of nsopt.oracle and of the loss constructors' validation.

The laws every oracle must obey (hypothesis) are in tests/properties/test_oracles.py.
"""
import math

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt import FunctionOracle
from nsopt.losses import Hinge, Logistic, SquaredHinge
from nsopt.oracle import GenericLine, LineFunction, Oracle, _minimize_piecewise

LOSSES = [Hinge, SquaredHinge, Logistic]


def quadratic(dim=2):
    return FunctionOracle(lambda w: 0.5 * float(w @ w), lambda w: w.copy(), dim=dim)


def l1_with_sup(dim):
    """||w||_1 with the subgradient steepest along p at the kinks."""
    return FunctionOracle(
        lambda w: float(np.abs(w).sum()),
        lambda w: np.sign(w),
        dim=dim,
        sup_subgradient=lambda w, p: (
            float(np.where(w != 0, np.sign(w) * p, np.abs(p)).sum()),
            np.where(w != 0, np.sign(w), np.sign(p)),
        ),
    )


# ----------------------------------------------------------------------------------------
# FunctionOracle: arguments and shapes
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"fun": lambda w: 0.0}, {"subgradient": lambda w: w}, {"dim": 3}],
    ids=["nothing", "fun-only", "subgradient-only", "dim-only"],
)
def test_function_oracle_needs_fun_and_subgradient(kwargs):
    with pytest.raises(TypeError, match="needs fun and subgradient, or value_and_subgradient"):
        FunctionOracle(**kwargs)


def test_function_oracle_value_and_subgradient_alone():
    calls = []

    def vas(w):
        calls.append(w.copy())
        return float(w @ w), 2 * w

    f = FunctionOracle(value_and_subgradient=vas, dim=2)
    w = np.array([1.0, -2.0])
    assert f.value(w) == 5.0
    np.testing.assert_array_equal(f.subgradient(w), [2.0, -4.0])
    fv, g = f.value_and_subgradient(w)
    assert (fv, g.tolist()) == (5.0, [2.0, -4.0])
    assert isinstance(fv, float)
    assert len(calls) == 3


def test_function_oracle_uses_value_and_subgradient_on_the_hot_path():
    f = FunctionOracle(
        lambda w: 1.0,
        lambda w: np.zeros(2),
        value_and_subgradient=lambda w: (7.0, np.ones(2)),
        dim=2,
    )
    assert f.value_and_subgradient(np.zeros(2))[0] == 7.0
    assert f.value(np.zeros(2)) == 1.0  # plain value still uses fun


def test_function_oracle_lower_bound_and_dim():
    f = FunctionOracle(lambda w: 0.0, lambda w: w, dim=4, lower_bound=-3)
    assert f.dim == 4 and f.lower_bound == -3.0 and isinstance(f.lower_bound, float)
    assert FunctionOracle(lambda w: 0.0, lambda w: w).lower_bound == -math.inf


def test_function_oracle_rejects_wrong_user_subgradient_shape():
    f = FunctionOracle(lambda w: 0.0, lambda w: np.zeros(w.shape[0] + 1), dim=2)
    with pytest.raises(ValueError, match=r"^the user callable subgradient returned an array of shape \(3,\) .*"
                       r"length 2"):
        f.subgradient(np.zeros(2))


def test_function_oracle_flattens_column_subgradient():
    f = FunctionOracle(lambda w: 0.0, lambda w: w.reshape(-1, 1), dim=2)
    g = f.subgradient(np.array([1.0, 2.0]))
    assert g.shape == (2,) and g.dtype == np.float64


def test_function_oracle_rejects_wrong_user_sup_subgradient_shape():
    f = FunctionOracle(lambda w: 0.0, lambda w: np.zeros(2), dim=2,
                       sup_subgradient=lambda w, p: (0.0, np.zeros(3)))
    with pytest.raises(ValueError, match="shape"):
        f.sup_subgradient(np.zeros(2), np.ones(2))


def test_function_oracle_rejects_non_callables():
    with pytest.raises(TypeError, match="callable"):
        FunctionOracle(3.0, lambda w: w)


@pytest.mark.parametrize("dim", [0, -1, 2.5, "3"])
def test_function_oracle_rejects_invalid_dim(dim):
    with pytest.raises((TypeError, ValueError), match="dim"):
        FunctionOracle(lambda w: 0.0, lambda w: w, dim=dim)


@pytest.mark.parametrize("method", ["value", "subgradient", "value_and_subgradient"])
def test_wrong_length_w(method):
    f = quadratic(2)
    with pytest.raises(ValueError, match="w has length 3, expected 2"):
        getattr(f, method)(np.ones(3))


@pytest.mark.parametrize("method", ["value", "subgradient", "value_and_subgradient"])
def test_two_dimensional_w_is_rejected_with_a_hint(method):
    f = quadratic(2)
    with pytest.raises(ValueError, match=r"w must be 1-D, got an array of shape \(2, 1\).*flattened"):
        getattr(f, method)(np.ones((2, 1)))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("method", ["value", "subgradient", "value_and_subgradient"])
def test_nonfinite_w_raises(method, bad):
    f = quadratic(3)
    with pytest.raises(ValueError, match=r"w contains NaN or inf \(first at index 1\)"):
        getattr(f, method)(np.array([0.0, bad, 1.0]))


def test_non_numeric_w_raises_type_error():
    with pytest.raises(TypeError, match="w must be a 1-D array of real numbers"):
        quadratic(2).value("ab")


@pytest.mark.parametrize("method", ["sup_subgradient", "restrict"])
def test_wrong_p(method):
    f = quadratic(2)
    w = np.zeros(2)
    with pytest.raises(ValueError, match="p has length 3, expected 2"):
        getattr(f, method)(w, np.ones(3))
    with pytest.raises(ValueError, match="p must be 1-D"):
        getattr(f, method)(w, np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"p contains NaN or inf \(first at index 0\)"):
        getattr(f, method)(w, np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="w has length 1, expected 2"):
        getattr(f, method)(np.zeros(1), np.ones(2))


def test_p_length_checked_against_w_when_dim_is_unknown():
    f = FunctionOracle(lambda w: 0.5 * float(w @ w), lambda w: w.copy())
    assert f.dim is None
    assert f.value(np.ones(5)) == 2.5
    with pytest.raises(ValueError, match="p has length 4, expected 5"):
        f.sup_subgradient(np.ones(5), np.ones(4))


def test_public_methods_return_floats_and_accept_lists():
    f = quadratic(2)
    v = f.value([1, 2])
    s, g = f.sup_subgradient([1, 2], [1, 0])
    assert type(v) is float and type(s) is float
    assert (v, s) == (2.5, 1.0)
    np.testing.assert_array_equal(g, [1.0, 2.0])


def test_sup_subgradient_defaults_to_the_plain_subgradient():
    f = FunctionOracle(lambda w: float(np.abs(w).sum()), lambda w: np.sign(w), dim=2)
    # at the kink w = 0 the default is sign(0) = 0: exact only where f is differentiable
    assert f.sup_subgradient(np.zeros(2), np.ones(2))[0] == 0.0
    assert f.sup_subgradient(np.array([1.0, -1.0]), np.array([1.0, 1.0]))[0] == 0.0
    assert l1_with_sup(2).sup_subgradient(np.zeros(2), np.array([1.0, -3.0]))[0] == 4.0


def test_missing_value_and_subgradient_names_the_class():
    class Bare(Oracle):
        dim = 2

    with pytest.raises(NotImplementedError, match="Bare._value_and_subgradient is not implemented"):
        Bare().value(np.zeros(2))


def test_line_function_base_names_the_class():
    class Line(LineFunction):
        pass

    with pytest.raises(NotImplementedError, match="Line.value is not implemented"):
        Line().value(0.0)
    with pytest.raises(NotImplementedError, match="Line.derivative is not implemented"):
        Line().derivative(0.0)
    assert Line().breakpoints() is None


# ----------------------------------------------------------------------------------------
# GenericLine
# ----------------------------------------------------------------------------------------
def test_generic_line_on_function_oracle():
    # f(w) = ||w||_1 + 0.5 ||w||^2 on the line w + eta p
    f = l1_with_sup(2) + quadratic(2)
    w, p = np.array([1.0, -2.0]), np.array([-1.0, 0.5])
    line = f.restrict(w, p)
    for eta in [-1.0, 0.0, 0.25, 1.0, 3.0, 4.0, 5.0]:
        x = w + eta * p
        assert line.value(eta) == pytest.approx(np.abs(x).sum() + 0.5 * x @ x, rel=1e-15)
    # kinks at eta = 1 (x_0 = 0) and eta = 4 (x_1 = 0)
    # phi'(eta) = sign(x0) * -1 + sign(x1) * 0.5 + x @ p; at eta=1: x = (0, -1.5), x @ p = -0.75
    assert line.derivative(1.0, 1) == pytest.approx(1.0 - 0.5 - 0.75)
    assert line.derivative(1.0, -1) == pytest.approx(-1.0 - 0.5 - 0.75)
    assert line.derivative(2.0, 1) == line.derivative(2.0, -1)  # smooth there


def test_generic_line_is_the_default_restrict_and_has_no_minimize():
    f = quadratic(2)
    line = f.restrict(np.zeros(2), np.ones(2))
    assert isinstance(line, GenericLine)
    assert line.breakpoints() is None
    with pytest.raises(NotImplementedError, match=r"GenericLine.minimize: no exact line search.*Wolfe"):
        line.minimize()


def test_generic_line_copies_are_independent_of_caller_arrays():
    f = quadratic(2)
    w, p = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    line = f.restrict(w, p)
    before = line.value(1.0)
    w[:] = 100.0
    p[:] = 100.0
    assert line.value(1.0) == before


def test_generic_line_rejects_bad_side():
    line = quadratic(2).restrict(np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match="side must be"):
        line.derivative(0.0, side=0)


# ----------------------------------------------------------------------------------------
# _minimize_piecewise and LineFunction.minimize
# ----------------------------------------------------------------------------------------
class PiecewiseLine(LineFunction):
    """phi(eta) = 0.5 c2 eta^2 + c1 eta + sum_k a_k |eta - t_k| (a_k >= 0), exact derivatives."""

    def __init__(self, c1=0.0, c2=0.0, kinks=(), weights=()):
        self.c1, self.c2 = float(c1), float(c2)
        self.t = np.asarray(kinks, dtype=float)
        self.a = np.asarray(weights, dtype=float)
        self.calls = 0

    def value(self, eta):
        return 0.5 * self.c2 * eta**2 + self.c1 * eta + float(self.a @ np.abs(eta - self.t))

    def derivative(self, eta, side=1):
        self.calls += 1
        s = np.where(eta != self.t, np.sign(eta - self.t), side)
        return self.c2 * eta + self.c1 + float(self.a @ s)

    def breakpoints(self):
        return self.t.copy()


def test_minimize_at_lo_for_an_increasing_function():
    assert PiecewiseLine(c1=1.0).minimize() == 0.0
    assert PiecewiseLine(c1=1.0).minimize(lo=-2.5, hi=3.0) == -2.5


def test_minimize_at_lo_when_lo_is_a_kink():
    line = PiecewiseLine(c1=0.5, kinks=[0.0], weights=[1.0])  # |eta| + 0.5 eta
    assert line.minimize(0.0) == 0.0


def test_minimize_at_a_kink_exactly():
    line = PiecewiseLine(c1=0.1, kinks=[0.5, 1.5, 4.0], weights=[0.2, 1.0, 0.3])
    # phi' = 0.1 + 0.2 - 1 - 0.3 < 0 before 1.5, 0.1 + 0.2 + 1 - 0.3 > 0 after
    assert line.minimize() == 1.5


def test_minimize_at_hi_for_a_decreasing_function():
    assert PiecewiseLine(c1=-1.0).minimize(0.0, 3.0) == 3.0
    line = PiecewiseLine(c1=-2.0, kinks=[1.0, 2.0], weights=[0.5, 0.5])
    assert line.minimize(0.0, 5.0) == 5.0


def test_minimize_on_an_unbounded_ray_returns_inf():
    assert PiecewiseLine(c1=-1.0).minimize() == math.inf
    line = PiecewiseLine(c1=-2.0, kinks=[1.0, 2.0], weights=[0.5, 0.5])
    assert line.minimize() == math.inf


def test_minimize_inside_a_smooth_piece():
    # 0.5 * 3 (eta - 0.7)^2 = 1.5 eta^2 - 2.1 eta + c: the derivative is affine, the root exact
    line = PiecewiseLine(c1=-2.1, c2=3.0)
    assert line.minimize() == pytest.approx(0.7, abs=1e-15)
    # with a kink: 0.5 (eta - 2.5)^2 + |eta - 1| has phi' = eta - 2.5 + 1 = 0 at 1.5
    line = PiecewiseLine(c1=-2.5, c2=1.0, kinks=[1.0], weights=[1.0])
    assert line.minimize() == pytest.approx(1.5, abs=1e-15)


def test_minimize_on_an_unbounded_last_piece_brackets_the_root():
    line = PiecewiseLine(c1=-1e6, c2=1.0, kinks=[1.0], weights=[1.0])
    assert line.minimize() == pytest.approx(1e6 - 1.0, rel=1e-15)


_FAR_KINK = ("_minimize_piecewise: brentq's xtol is 1e-15 * max(1, |left|, |right|), absolute and "
             "scaled by the bracket; when the next breakpoint is >= ~1e15 away (a direction with a "
             "1e-16 component) brentq stops at once and returns lo although phi'(lo+) < 0")


def test_minimize_root_far_from_the_next_breakpoint():
    # 0.5 (eta - 0.5)^2 + 1e-16 |eta - 1e16|: phi' = eta - 0.5 - 1e-16 before the kink at 1e16
    line = PiecewiseLine(c1=-0.5, c2=1.0, kinks=[1e16], weights=[1e-16])
    assert line.minimize() == pytest.approx(0.5, abs=1e-12)


def test_regularized_hinge_line_search_with_a_tiny_direction_component():
    # one example x = (0, 1) with y = 1 at w = (-0.5, 0); p = (1, 1e-16): the hinge kink of the
    # line is at eta = 1e16, the minimiser of 1 - 1e-16 eta + 0.5 ||w + eta p||^2 is ~0.5
    problem = nsopt.RegularizedRisk(Hinge(np.array([[0.0, 1.0]]), np.array([1.0])), lam=1.0)
    line = problem.restrict(np.array([-0.5, 0.0]), np.array([1.0, 1e-16]))
    eta = line.minimize()
    assert eta == pytest.approx(0.5, abs=1e-12)
    assert line.value(eta) <= line.value(0.5)


def test_minimize_on_a_flat_stretch_returns_a_minimiser():
    # |eta - 1| + |eta - 3| is minimal (= 2) on all of [1, 3]
    line = PiecewiseLine(kinks=[1.0, 3.0], weights=[1.0, 1.0])
    eta = line.minimize()
    assert 1.0 <= eta <= 3.0 and line.value(eta) == 2.0


def test_minimize_ignores_breakpoints_outside_the_interval():
    line = PiecewiseLine(c1=-2.5, c2=1.0, kinks=[-5.0, 1.0, 100.0], weights=[1.0, 1.0, 1.0])
    # on [0, 10]: phi' = eta - 2.5 + 1 + 1 - 1 = eta - 1.5
    assert line.minimize(0.0, 10.0) == pytest.approx(1.5, abs=1e-15)
    assert line.minimize(2.0, 10.0) == 2.0
    assert line.minimize(0.0, 1.25) == 1.25


def test_minimize_lo_equals_hi():
    assert PiecewiseLine(c1=-1.0).minimize(2.0, 2.0) == 2.0


def test_minimize_interval_errors():
    line = PiecewiseLine(c1=-1.0)
    with pytest.raises(ValueError, match="lo <= hi"):
        line.minimize(2.0, 1.0)
    with pytest.raises(ValueError, match="finite lower end"):
        line.minimize(-math.inf, 1.0)


def test_minimize_uses_logarithmically_many_derivatives():
    kinks = np.arange(1, 1025, dtype=float)
    line = PiecewiseLine(c1=-100.5, kinks=kinks, weights=np.full(kinks.size, 0.5))
    # between kinks, with k kinks below: phi' = -100.5 + 0.5 (k - (1024 - k)) = k - 612.5,
    # negative up to the kink 613 and positive after it
    assert line.minimize() == 613.0
    assert line.calls < 30


def test_minimize_piecewise_directly_with_unsorted_duplicated_breakpoints():
    line = PiecewiseLine(c1=0.1, kinks=[0.5, 1.5, 4.0], weights=[0.2, 1.0, 0.3])
    assert _minimize_piecewise(line, np.array([4.0, 1.5, 0.5, 1.5]), 0.0, math.inf) == 1.5


def test_scaled_line_with_zero_factor_minimises_at_lo():
    line = 0.0 * PiecewiseLine(c1=-1.0)
    assert line.minimize(0.5, 2.0) == 0.5
    assert line.value(3.0) == 0.0


def test_sum_line_breakpoints_union_and_minimize():
    a = PiecewiseLine(kinks=[1.0], weights=[1.0])
    b = PiecewiseLine(c1=-1.5, kinks=[2.0], weights=[1.0])
    line = a + b
    np.testing.assert_array_equal(line.breakpoints(), [1.0, 2.0])
    assert line.minimize() == 2.0
    assert (a + quadratic(1).restrict(np.zeros(1), np.ones(1))).breakpoints() is None


# ----------------------------------------------------------------------------------------
# Loss validation
# ----------------------------------------------------------------------------------------
X3 = np.array([[1.0, 0.0], [0.5, -1.0], [0.0, 2.0]])


@pytest.mark.parametrize("loss", LOSSES)
def test_labels_must_be_plus_minus_one_and_the_message_names_them(loss):
    with pytest.raises(ValueError, match=r"only -1 and \+1.*found \[0\.0\]"):
        loss(X3, [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"found \[2\.0, 3\.0\]"):
        loss(X3, [3.0, 1.0, 2.0])


@pytest.mark.parametrize("loss", LOSSES)
def test_mismatched_lengths(loss):
    with pytest.raises(ValueError, match="X has 3 rows but y has 2 entries"):
        loss(X3, [1.0, -1.0])
    with pytest.raises(ValueError, match="sample_weight has length 2, expected 3"):
        loss(X3, [1.0, -1.0, 1.0], sample_weight=[1.0, 1.0])


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_X(loss, bad):
    X = X3.copy()
    X[1, 0] = bad
    with pytest.raises(ValueError, match=r"X contains NaN or inf \(first at row 1, column 0\)"):
        loss(X, [1.0, -1.0, 1.0])
    X = X3.copy()
    X[2, 1] = bad
    with pytest.raises(ValueError, match=r"X contains NaN or inf \(first at row 2, column 1\)"):
        loss(sp.csr_matrix(X), [1.0, -1.0, 1.0])


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_y_and_weights(loss, bad):
    with pytest.raises(ValueError, match=r"y contains NaN or inf \(first at index 2\)"):
        loss(X3, [1.0, -1.0, bad])
    with pytest.raises(ValueError, match="sample_weight contains NaN or inf"):
        loss(X3, [1.0, -1.0, 1.0], sample_weight=[1.0, bad, 1.0])


@pytest.mark.parametrize("loss", LOSSES)
def test_X_must_be_two_dimensional(loss):
    with pytest.raises(ValueError, match=r"X must be 2-D.*got shape \(3,\).*reshape"):
        loss(np.ones(3), [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match=r"X must be 2-D.*\(3, 1, 1\)"):
        loss(np.ones((3, 1, 1)), [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="y must be 1-D"):
        loss(X3, np.ones((3, 1)))


@pytest.mark.parametrize("loss", LOSSES)
def test_empty_data(loss):
    with pytest.raises(ValueError, match="no rows"):
        loss(np.ones((0, 2)), [])
    with pytest.raises(ValueError, match="no columns"):
        loss(np.ones((2, 0)), [1.0, 1.0])


@pytest.mark.parametrize("loss", LOSSES)
def test_sample_weight_validation(loss):
    y = [1.0, -1.0, 1.0]
    with pytest.raises(ValueError, match="nonnegative"):
        loss(X3, y, sample_weight=[1.0, -0.5, 1.0])
    with pytest.raises(ValueError, match="positive sum"):
        loss(X3, y, sample_weight=[0.0, 0.0, 0.0])


def _agree(a, b, w, p):
    assert a.value(w) == pytest.approx(b.value(w), rel=1e-14, abs=1e-15)
    np.testing.assert_allclose(a.subgradient(w), b.subgradient(w), rtol=1e-13, atol=1e-15)
    sa, ga = a.sup_subgradient(w, p)
    sb, gb = b.sup_subgradient(w, p)
    assert sa == pytest.approx(sb, rel=1e-13, abs=1e-15)
    np.testing.assert_allclose(ga, gb, rtol=1e-13, atol=1e-15)
    la, lb = a.restrict(w, p), b.restrict(w, p)
    for eta in [0.0, 0.3, 1.0, 2.5]:
        assert la.value(eta) == pytest.approx(lb.value(eta), rel=1e-14, abs=1e-15)
        for side in (1, -1):
            assert la.derivative(eta, side) == pytest.approx(lb.derivative(eta, side), rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("loss", LOSSES)
def test_sample_weights_equal_repeated_rows(loss, sparse):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5, 3))
    y = np.array([1.0, -1.0, -1.0, 1.0, 1.0])
    weights = np.array([2, 1, 3, 0, 1])
    Xr, yr = np.repeat(X, weights, axis=0), np.repeat(y, weights)
    conv = sp.csr_matrix if sparse else np.asarray
    weighted = loss(conv(X), y, sample_weight=weights.astype(float))
    repeated = loss(conv(Xr), yr)
    # a point on a hinge kink of example 0 (x_0 . w = y_0 = 1), and generic points
    w_kink = np.array([1.0 / X[0, 0], 0.0, 0.0])
    assert X[0] @ w_kink == 1.0
    for w in [rng.standard_normal(3), w_kink, np.zeros(3)]:
        for p in [rng.standard_normal(3), np.array([1.0, 0.0, 0.0]), np.array([-1.0, 0.0, 0.0])]:
            _agree(weighted, repeated, w, p)


@pytest.mark.parametrize("loss", LOSSES)
def test_uniform_sample_weights_are_the_mean(loss):
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((4, 2)), np.array([1.0, 1.0, -1.0, -1.0])
    _agree(loss(X, y, sample_weight=np.full(4, 7.0)), loss(X, y), rng.standard_normal(2),
           rng.standard_normal(2))


def test_loss_values_by_hand():
    X = np.array([[1.0, 0.0], [0.0, 2.0]])
    y = np.array([1.0, -1.0])
    w = np.array([0.5, 0.25])  # scores 0.5, 0.5; margins y f = 0.5, -0.5
    assert Hinge(X, y).value(w) == pytest.approx(0.5 * (0.5 + 1.5))
    assert SquaredHinge(X, y).value(w) == pytest.approx(0.5 * 0.5 * (0.25 + 2.25))
    assert Logistic(X, y).value(w) == pytest.approx(0.5 * (np.log1p(np.exp(-0.5)) + np.log1p(np.exp(0.5))))
    # hinge subgradient: mean of -y_i x_i over the examples with margin < 1
    np.testing.assert_allclose(Hinge(X, y).subgradient(w), 0.5 * np.array([-1.0, 2.0]))


def test_loss_repr_and_shape():
    loss = Hinge(sp.csr_matrix(X3), [1.0, -1.0, 1.0])
    assert repr(loss) == "Hinge(m=3, d=2, sparse)"
    assert loss.shape == (2,) and loss.dim == 2 and loss.lower_bound == 0.0


def test_generic_line_evaluations_are_counted():
    """A generic line calls the oracle at every evaluation: each call counts in nfev (main
    left nfev == 0 after 20 of them), and a NaN there is a numerical error, not a value."""
    from nsopt.oracle import CountingOracle, OracleNumericalError

    f = nsopt.FunctionOracle(lambda x: float(x @ x) if x[0] > -1.5 else math.nan, lambda x: 2 * x, dim=3)
    counted = CountingOracle(f)
    line = counted.restrict(np.ones(3), -np.ones(3))
    for eta in np.linspace(0.0, 2.0, 20):
        line.value(eta)
    assert counted.nfev == 20
    line.derivative(0.5)
    assert counted.nfev == 21
    with pytest.raises(OracleNumericalError):
        line.value(3.0)

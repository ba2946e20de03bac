"""What is specific to nsopt.regularizers: input checks, repr, domains, constants, exact lines,
and each conjugate against an independent numerical sup (cvxpy with Clarabel).

The algebraic laws over random inputs are in tests/properties/test_regularizers.py.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from nsopt.regularizers import (
    KL,
    L1,
    L2,
    ElasticNet,
    Lp,
    NegEntropy,
    PiecewiseQuadraticLine,
    QuadraticForm,
    QuadraticLine,
    Regularizer,
)

Q3 = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
PRIOR3 = np.array([0.2, 0.3, 0.5])


def all_regularizers():
    return [L2(), L1(), Lp(1.5), Lp(3), QuadraticForm(Q3), ElasticNet(0.3),
            NegEntropy(), NegEntropy(normalized=True), KL(PRIOR3)]


# ---------------------------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p, match", [
    (1, r"1 < p < inf, got p = 1.0; .*use L1\(\)"),
    (0.5, r"1 < p < inf, got p = 0.5"),
    (-2, r"1 < p < inf"),
    (math.inf, r"1 < p < inf, got p = inf; .*not smooth"),
    (math.nan, r"p must be a number, got nan"),
])
def test_lp_rejects_p_outside_open_interval(p, match):
    with pytest.raises(ValueError, match=match):
        Lp(p)


@pytest.mark.parametrize("p", ["2", None, True, [2.0]])
def test_lp_rejects_non_numbers(p):
    with pytest.raises(TypeError, match="p must be a real number"):
        Lp(p)


def test_quadratic_form_rejects_non_symmetric():
    Q = np.array([[2.0, 1.0], [0.0, 2.0]])
    with pytest.raises(ValueError, match=r"Q is not symmetric: Q\[0, 1\] = 1.0 but Q\[1, 0\] = 0.0"):
        QuadraticForm(Q)


@pytest.mark.parametrize("Q", [
    np.array([[1.0, 2.0], [2.0, 1.0]]),        # indefinite
    np.array([[1.0, 1.0], [1.0, 1.0]]),        # positive semidefinite, singular
    -np.eye(3),
    np.zeros((2, 2)),
])
def test_quadratic_form_rejects_non_positive_definite(Q):
    with pytest.raises(ValueError, match="Q is not positive definite.*ridge"):
        QuadraticForm(Q)


@pytest.mark.parametrize("Q, match", [
    (np.ones((2, 3)), "square"),
    (np.ones(3), "square"),
    (np.zeros((0, 0)), "non-empty square"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), "NaN or inf"),
])
def test_quadratic_form_rejects_bad_shapes_and_values(Q, match):
    with pytest.raises(ValueError, match=match):
        QuadraticForm(Q)


def test_quadratic_form_accepts_tiny_rounding_asymmetry_and_sparse():
    Q = Q3.copy()
    Q[0, 1] += 1e-14
    reg = QuadraticForm(Q)
    assert np.array_equal(reg.Q, reg.Q.T)
    assert QuadraticForm(sp.csr_matrix(Q3)).value([1.0, 2.0, 3.0]) == pytest.approx(
        0.5 * np.array([1.0, 2.0, 3.0]) @ Q3 @ np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("r, match", [
    (1.0, r"l1_ratio = 1 is the pure L1 norm.*use L1\(\) instead"),
    (1.5, r"0 <= l1_ratio < 1, got l1_ratio = 1.5"),
    (-0.1, r"0 <= l1_ratio < 1, got l1_ratio = -0.1"),
    (math.nan, "l1_ratio must be a number"),
])
def test_elastic_net_rejects_l1_ratio_out_of_range(r, match):
    with pytest.raises(ValueError, match=match):
        ElasticNet(r)


def test_elastic_net_rejects_non_numbers():
    with pytest.raises(TypeError, match="l1_ratio must be a real number"):
        ElasticNet("0.5")


@pytest.mark.parametrize("prior, exc, match", [
    ([0.5, 0.5, 0.0], ValueError, r"strictly positive.*prior\[2\] = 0.0"),
    ([0.7, 0.5, -0.2], ValueError, r"strictly positive.*prior\[2\] = -0.2"),
    ([0.2, 0.3], ValueError, r"summing to 1, got sum 0.5.*prior / prior.sum\(\)"),
    ([1.0, 1.0], ValueError, r"summing to 1, got sum 2.0"),
    ([], ValueError, "at least one entry"),
    ([[0.5, 0.5]], ValueError, "prior must be 1-D"),
    ([0.5, np.nan], ValueError, "prior contains NaN"),
    ("abc", TypeError, "prior must be a 1-D array"),
])
def test_kl_rejects_prior_that_is_not_a_probability_vector(prior, exc, match):
    with pytest.raises(exc, match=match):
        KL(prior)


def test_neg_entropy_rejects_non_bool_normalized():
    with pytest.raises(TypeError, match="normalized must be True or False"):
        NegEntropy(normalized="yes")


def test_conjugate_checks_its_argument():
    with pytest.raises(ValueError, match="mu must be 1-D"):
        L2().conjugate(np.ones((2, 2)))
    with pytest.raises(ValueError, match="mu has length 2, expected 3"):
        QuadraticForm(Q3).conjugate([1.0, 2.0])
    with pytest.raises(ValueError, match="mu has length 2, expected 3"):
        KL(PRIOR3).conjugate_grad([1.0, 2.0])
    with pytest.raises(ValueError, match="mu contains NaN"):
        Lp(1.5).conjugate([1.0, np.nan])
    with pytest.raises(ValueError, match="w has length 2, expected 3"):
        QuadraticForm(Q3).value([1.0, 2.0])


# ---------------------------------------------------------------------------------------------
# repr, types, constants
# ---------------------------------------------------------------------------------------------
def test_repr_shows_parameters():
    assert repr(L2()) == "L2()"
    assert repr(L1()) == "L1()"
    assert repr(Lp(1.5)) == "Lp(p=1.5)"
    assert repr(Lp(3)) == "Lp(p=3.0)"
    assert repr(ElasticNet(0.25)) == "ElasticNet(l1_ratio=0.25)"
    assert repr(NegEntropy()) == "NegEntropy(normalized=False)"
    assert repr(NegEntropy(normalized=True)) == "NegEntropy(normalized=True)"
    assert repr(KL([0.25, 0.75])) == "KL(prior=[0.25, 0.75])"
    assert repr(QuadraticForm(np.diag([2.0, 3.0]))) == "QuadraticForm(Q=[[2., 0.], [0., 3.]])"
    assert repr(QuadraticForm(np.eye(6))) == "QuadraticForm(Q=<6x6 array>)"
    assert repr(KL(np.full(40, 1 / 40))) == "KL(prior=<40 array>)"


@pytest.mark.parametrize("reg", all_regularizers(), ids=repr)
def test_conjugate_returns_float_and_float64_array_from_lists(reg):
    mu = [0.1, -0.2, 0.3]
    c, g = reg.conjugate(mu), reg.conjugate_grad(mu)
    assert type(c) is float
    assert isinstance(g, np.ndarray) and g.dtype == np.float64 and g.shape == (3,)
    assert reg.conjugate(np.array(mu, dtype=np.float32)) == pytest.approx(c, rel=1e-6)
    assert isinstance(reg, Regularizer)


def test_conjugate_grad_returns_a_new_array():
    mu = np.array([0.5, -0.5])
    for reg in (L2(), Lp(2), ElasticNet(0.0)):
        g = reg.conjugate_grad(mu)
        g[0] = 99.0
        assert mu[0] == 0.5


@pytest.mark.parametrize("reg, inner, H, lower", [
    (L2(), "qp", 1.0, 0.0),
    (L1(), "lp", None, 0.0),
    (Lp(1.5), "smooth", 2.0, 0.0),          # q = 3
    (Lp(2), "smooth", 1.0, 0.0),
    (Lp(4 / 3), "smooth", 3.0, 0.0),        # q = 4
    (Lp(3), "smooth", None, 0.0),           # q = 1.5 < 2: Hessian unbounded
    (ElasticNet(0.75), "smooth", 4.0, 0.0),
    (NegEntropy(), "smooth", None, -math.inf),
    (NegEntropy(normalized=True), "smooth", 1.0, -math.inf),
    (KL(PRIOR3), "smooth", 1.0, 0.0),
], ids=repr)
def test_inner_curvature_bound_and_lower_bound(reg, inner, H, lower):
    assert reg.inner == inner
    assert reg.lower_bound == lower
    if H is None:
        assert reg.curvature_bound is None
    else:
        assert reg.curvature_bound == pytest.approx(H, rel=1e-12)


def test_quadratic_form_curvature_bound_and_metric():
    reg = QuadraticForm(Q3)
    assert reg.dim == 3
    assert reg.curvature_bound == pytest.approx(1 / np.linalg.eigvalsh(Q3)[0], rel=1e-12)
    a = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(reg.metric(a), np.linalg.solve(Q3, a), rtol=1e-12)
    A = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(reg.metric(A), np.linalg.solve(Q3, A), rtol=1e-12)
    np.testing.assert_allclose(reg.conjugate_grad(a), np.linalg.solve(Q3, a), rtol=1e-12)
    with pytest.raises(ValueError, match="3 rows"):
        reg.metric(np.ones(2))
    np.testing.assert_array_equal(L2().metric(a), a)
    with pytest.raises(NotImplementedError, match="L1 has no quadratic conjugate"):
        L1().metric(a)


# ---------------------------------------------------------------------------------------------
# L1 and elastic net
# ---------------------------------------------------------------------------------------------
def test_l1_conjugate_is_infinite_outside_the_unit_inf_ball():
    reg = L1()
    assert reg.conjugate([0.0, 0.0]) == 0.0
    assert reg.conjugate([1.0, -1.0]) == 0.0           # the boundary belongs to the ball
    assert reg.conjugate([0.3, -0.999]) == 0.0
    assert reg.conjugate([1.0 + 1e-12, 0.0]) == math.inf
    assert reg.conjugate([0.0, -3.0]) == math.inf
    np.testing.assert_array_equal(reg.conjugate_grad([0.5, -0.5]), [0.0, 0.0])


def test_l1_and_elastic_net_sup_subgradient_pick_the_steepest_sign_at_zeros():
    w, p = np.array([0.0, 2.0, 0.0, -1.0]), np.array([-3.0, 1.0, 0.0, 2.0])
    s, g = L1().sup_subgradient(w, p)
    np.testing.assert_array_equal(g, [-1.0, 1.0, 0.0, -1.0])
    assert s == 3.0 + 1.0 - 2.0
    s, g = ElasticNet(0.5).sup_subgradient(w, p)
    np.testing.assert_allclose(g, [-0.5, 0.5 + 1.0, 0.0, -0.5 - 0.5])
    assert s == pytest.approx(g @ p)


# ---------------------------------------------------------------------------------------------
# Entropies: domains and boundaries
# ---------------------------------------------------------------------------------------------
def test_neg_entropy_value_domain_and_zero_log_zero():
    reg = NegEntropy()
    assert reg.value([0.0, 1.0, 0.0]) == 0.0
    assert reg.value([0.5, 0.5]) == pytest.approx(math.log(0.5))
    assert reg.value([0.5, -1e-300]) == math.inf
    assert reg.value([2.0, 3.0]) == pytest.approx(2 * math.log(2) + 3 * math.log(3))


def test_normalized_entropy_and_kl_are_infinite_off_the_simplex():
    for reg in (NegEntropy(normalized=True), KL([0.5, 0.5])):
        assert math.isfinite(reg.value([0.5, 0.5 + 1e-12]))     # within the 1e-9 tolerance
        assert reg.value([0.5, 0.5 + 1e-6]) == math.inf
        assert reg.value([0.5, 0.4]) == math.inf
        assert reg.value([1.5, -0.5]) == math.inf
        assert reg.value([1.0, 0.0]) == pytest.approx(
            0.0 if isinstance(reg, NegEntropy) else math.log(2.0))


@pytest.mark.parametrize("reg", [NegEntropy(), NegEntropy(normalized=True), KL([0.5, 0.5])], ids=repr)
def test_entropy_subgradient_raises_at_zeros_and_outside_the_domain(reg):
    with pytest.raises(ValueError, match=r"w\[1\] = 0: .* no subgradient"):
        reg.subgradient([1.0, 0.0])
    with pytest.raises(ValueError, match="outside the domain"):
        reg.subgradient([1.5, -0.5])
    with pytest.raises(ValueError, match=r"w\[1\] = 0"):
        reg.sup_subgradient([1.0, 0.0], [-1.0, 1.0])


def test_entropy_subgradient_is_log_w_plus_one():
    w = np.array([0.2, 0.8])
    np.testing.assert_allclose(NegEntropy().subgradient(w), np.log(w) + 1, rtol=1e-15)
    np.testing.assert_allclose(KL([0.4, 0.6]).subgradient(w), np.log(w / [0.4, 0.6]) + 1, rtol=1e-15)


@pytest.mark.parametrize("reg", [NegEntropy(normalized=True), KL([0.5, 0.5])], ids=repr)
def test_simplex_sup_subgradient_is_infinite_off_the_tangent_space(reg):
    w = np.array([0.25, 0.75])
    s, _ = reg.sup_subgradient(w, [1.0, 0.0])           # sum(p) != 0 leaves the simplex
    assert s == math.inf
    s, g = reg.sup_subgradient(w, [1.0, -1.0])
    assert s == pytest.approx(g @ [1.0, -1.0])
    assert math.isfinite(s)


def test_unnormalized_entropy_conjugate_overflows_to_inf():
    with np.errstate(all="raise"):
        assert NegEntropy().conjugate([1000.0, 0.0]) == math.inf
    # the normalized one is computed stably
    assert NegEntropy(normalized=True).conjugate([1000.0, 0.0]) == pytest.approx(1000.0)
    np.testing.assert_allclose(NegEntropy(normalized=True).conjugate_grad([1000.0, 0.0]), [1.0, 0.0])
    np.testing.assert_allclose(KL([0.5, 0.5]).conjugate_grad([-1000.0, -1000.0]), [0.5, 0.5])
    assert KL([0.5, 0.5]).conjugate([-1000.0, -1000.0]) == pytest.approx(-1000.0)


def test_lp_is_stable_for_large_and_small_vectors():
    reg = Lp(3)
    for scale in (1e-200, 1e200):
        w = scale * np.array([1.0, -2.0])
        g = reg.subgradient(w)
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g / scale, reg.subgradient([1.0, -2.0]), rtol=1e-12)
    np.testing.assert_array_equal(reg.subgradient([0.0, 0.0]), [0.0, 0.0])
    np.testing.assert_array_equal(reg.conjugate_grad([0.0, 0.0]), [0.0, 0.0])


# ---------------------------------------------------------------------------------------------
# Exact lines
# ---------------------------------------------------------------------------------------------
def test_quadratic_line_minimize_cases():
    assert QuadraticLine(0.0, -2.0, 4.0).minimize() == 0.5
    assert QuadraticLine(0.0, -2.0, 4.0).minimize(1.0, 2.0) == 1.0
    assert QuadraticLine(0.0, 2.0, 4.0).minimize(0.0) == 0.0
    assert QuadraticLine(0.0, -1.0, 0.0).minimize(0.0, math.inf) == math.inf      # unbounded
    assert QuadraticLine(0.0, -1.0, 0.0).minimize(0.0, 3.0) == 3.0
    assert QuadraticLine(1.0, 0.0, 0.0).minimize(-2.0, 3.0) == -2.0              # constant
    assert QuadraticLine(1.0, 0.0, 0.0).minimize(-math.inf, math.inf) == 0.0
    with pytest.raises(ValueError, match="lo <= hi"):
        QuadraticLine(0.0, 1.0, 1.0).minimize(2.0, 1.0)
    with pytest.raises(ValueError, match="c2 >= 0"):
        QuadraticLine(0.0, 1.0, -1.0)
    with pytest.raises(ValueError, match="side must be"):
        QuadraticLine(0.0, 1.0, 1.0).derivative(0.0, side=0)


def test_l2_and_quadratic_form_lines_are_exact_quadratics():
    w, p = np.array([1.0, -2.0, 0.5]), np.array([0.5, 1.0, -1.0])
    line = QuadraticForm(Q3).restrict(w, p)
    assert isinstance(line, QuadraticLine)
    eta = line.minimize(-math.inf, math.inf)
    assert eta == pytest.approx(-(w @ Q3 @ p) / (p @ Q3 @ p), rel=1e-12)
    assert isinstance(L2().restrict(w, p), QuadraticLine)
    assert L2().restrict(w, p).minimize(-math.inf) == pytest.approx(-(w @ p) / (p @ p))


def test_l1_line_flat_minimiser_set():
    # |eta - 1| + |eta + 1| is 2 on [-1, 1]: the smallest minimiser inside [lo, hi] is returned
    line = L1().restrict([-1.0, 1.0], [1.0, 1.0])
    assert isinstance(line, PiecewiseQuadraticLine)
    assert line.minimize(-math.inf, math.inf) == -1.0
    assert line.minimize(0.0, math.inf) == 0.0
    assert line.minimize(2.0, 3.0) == 2.0
    assert line.minimize(-5.0, -3.0) == -3.0
    assert line.derivative(-1.0, -1) == -2.0 and line.derivative(-1.0, +1) == 0.0
    assert line.derivative(1.0, -1) == 0.0 and line.derivative(1.0, +1) == 2.0


def test_l1_line_with_ties_and_zero_direction():
    # breakpoints at 0.5 (twice, weights 2 and 2) and -1 (weight 1): minimum at the tie
    line = L1().restrict([-1.0, -1.0, 1.0, 3.0], [2.0, 2.0, 1.0, 0.0])
    assert line.minimize(-math.inf, math.inf) == 0.5
    assert line.value(0.5) == pytest.approx(1.5 + 3.0)
    const = L1().restrict([1.0, -2.0], [0.0, 0.0])
    assert const.value(7.0) == 3.0
    assert const.minimize(0.0, math.inf) == 0.0
    assert const.minimize(-math.inf, math.inf) == 0.0


def test_elastic_net_line_minimiser_between_breakpoints():
    # r = 0.5: phi(eta) = 0.5 |2 + eta| + 0.25 (2 + eta)^2 is minimal at eta = -2 (the kink)
    line = ElasticNet(0.5).restrict([2.0], [1.0])
    assert line.minimize(-math.inf, math.inf) == pytest.approx(-2.0)
    # with an offset that the kink cannot absorb the minimiser is smooth: w = 0, p = 1 and the
    # linear pull of a second coordinate: phi = 0.5|eta| + 0.25 eta^2 + 0.5|1 + eta| + 0.25 (1 + eta)^2
    line = ElasticNet(0.5).restrict([0.0, 1.0], [1.0, 1.0])
    eta = line.minimize(-math.inf, math.inf)
    grid = np.linspace(-3, 3, 60001)
    assert line.value(eta) <= min(line.value(e) for e in grid) + 1e-12


# ---------------------------------------------------------------------------------------------
# Each conjugate against an independent numerical sup
# ---------------------------------------------------------------------------------------------
cp = pytest.importorskip("cvxpy")


def cvxpy_omega(reg, w):
    if isinstance(reg, L2):
        return 0.5 * cp.sum_squares(w), []
    if isinstance(reg, L1):
        return cp.norm1(w), []
    if isinstance(reg, Lp):
        return 0.5 * cp.square(cp.pnorm(w, reg.p)), []
    if isinstance(reg, QuadraticForm):
        return 0.5 * cp.quad_form(w, reg.Q), []
    if isinstance(reg, ElasticNet):
        r = reg.l1_ratio
        return r * cp.norm1(w) + 0.5 * (1 - r) * cp.sum_squares(w), []
    if isinstance(reg, NegEntropy):
        return -cp.sum(cp.entr(w)), ([cp.sum(w) == 1] if reg.normalized else [])
    if isinstance(reg, KL):
        return -cp.sum(cp.entr(w)) - w @ np.log(reg.prior), [cp.sum(w) == 1]
    raise AssertionError(reg)


MUS = [np.array([0.7, -0.4, 0.2]), np.array([-1.3, 0.9, 2.1])]


@pytest.mark.parametrize("reg", all_regularizers(), ids=repr)
@pytest.mark.parametrize("k", range(len(MUS)))
def test_conjugate_matches_numerical_sup(reg, k):
    mu = MUS[k]
    w = cp.Variable(3)
    omega, constraints = cvxpy_omega(reg, w)
    prob = cp.Problem(cp.Maximize(mu @ w - omega), constraints)
    prob.solve(solver=cp.CLARABEL)
    expect = reg.conjugate(mu)
    if isinstance(reg, L1) and np.abs(mu).max() > 1:
        assert prob.status == cp.UNBOUNDED and expect == math.inf
        return
    assert prob.status == cp.OPTIMAL
    assert expect == pytest.approx(prob.value, rel=1e-6, abs=1e-6)
    # and conjugate_grad is the maximiser (unique for the strictly convex ones)
    if not isinstance(reg, L1):
        np.testing.assert_allclose(reg.conjugate_grad(mu), w.value, rtol=1e-4, atol=1e-5)

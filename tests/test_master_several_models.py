"""Master-problem solvers over a product of simplices (several cutting-plane models, [UF12] Sec.
3.3, P-BMRM): strong duality against cvxpy + Clarabel, feasibility block by block, the P-model
bound against the single model over the same planes, one block identical to the single simplex,
read-only views, warm starts and the errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

cp = pytest.importorskip("cvxpy")

from cvxref import cvx_regularizer  # noqa: E402
from nsopt import regularizers as R  # noqa: E402
from nsopt.bundle import PlaneBundle  # noqa: E402
from nsopt.inner import LPSimplex, OSQPSimplex, QPSimplex, SmoothSimplex  # noqa: E402
from nsopt.inner._base import bundle_blocks, warm_start  # noqa: E402
from nsopt.inner.lp import _anchor, _repair  # noqa: E402


# --- fixtures ----------------------------------------------------------------------------------
def random_spd(d, seed):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, d))
    return B @ B.T / d + 0.5 * np.eye(d)


def make_reg(kind, d, seed):
    """(regularizer, metric of the bundle) for the four families tested."""
    if kind == "L2":
        return R.L2(), None
    if kind == "quadratic":
        reg = R.QuadraticForm(random_spd(d, seed))
        return reg, reg.gram_metric
    if kind == "L1":
        return R.L1(), None
    if kind == "Lp1.5":
        return R.Lp(1.5), None
    raise ValueError(kind)


def block_bundle(P, n, d, seed, metric=None, floors=False, scale=1.0):
    """``n`` random planes spread over ``P`` interleaved models (each gets at least two), one
    duplicated plane, and with ``floors`` one fixed zero-slope plane of value 0 per model."""
    rng = np.random.default_rng(seed)
    bundle = PlaneBundle(d, metric=metric, n_blocks=P)
    if floors:
        for p in range(P):
            bundle.add_fixed(np.zeros(d), 0.0, block=p)
    labels = np.concatenate([np.repeat(np.arange(P), 2), rng.integers(0, P, max(n - 2 * P, 0))])
    for p in rng.permutation(labels):
        bundle.add(scale * rng.standard_normal(d), rng.standard_normal(), block=int(p))
    k = bundle.n_fixed
    bundle.add(bundle.A[k].copy(), float(bundle.b[k]), block=int(bundle.block[k]))
    return bundle


def cvx_primal(bundle, reg, lam):
    """min_w lam Omega(w) + sum_p max_{i in p} <a_i, w> + b_i by cvxpy + Clarabel."""
    w = cp.Variable(bundle.dim)
    omega, cons = cvx_regularizer(reg, w)
    risk = sum(cp.max(bundle.A[bundle.block == p] @ w + bundle.b[bundle.block == p])
               for p in range(bundle.n_blocks))
    prob = cp.Problem(cp.Minimize(lam * omega + risk), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12,
                       max_iter=500)
        except cp.error.SolverError:  # pragma: no cover - tight tolerances not reached
            prob.solve(solver="CLARABEL")
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)


def assert_feasible_blocks(alpha, bundle):
    assert alpha.shape == (bundle.n,)
    assert np.all(alpha >= 0)
    sums = np.bincount(bundle.block, weights=alpha, minlength=bundle.n_blocks)
    np.testing.assert_allclose(sums, 1.0, rtol=0, atol=1e-13 * bundle.n)


def assert_master_solution(sol, bundle, reg, lam, p_star, rel=1e-8):
    assert_feasible_blocks(sol.alpha, bundle)
    # strong duality: the dual value over the product equals the P-model's primal optimum
    assert abs(sol.dual_value - p_star) <= rel * (1 + abs(p_star)), (sol.dual_value, p_star)
    assert sol.dual_value <= p_star + 1e-9 * (1 + abs(p_star))  # a lower bound, never above
    # the dual value is the bundle's lower bound at alpha, recomputed independently
    assert sol.dual_value == pytest.approx(bundle.lower_bound(reg, lam, sol.alpha), rel=1e-12,
                                           abs=1e-13)
    # the gap is the P-model's primal value at w minus the dual value
    primal = bundle.model(sol.w) + lam * reg.value(sol.w)
    assert sol.gap >= -1e-12
    assert primal - sol.dual_value == pytest.approx(sol.gap, abs=1e-10 * (1 + abs(p_star)))


BACKENDS = {  # regularizer kind -> backends able to solve its master problem
    "L2": ("qp", "osqp", "smooth"),
    "quadratic": ("qp", "osqp", "smooth"),
    "L1": ("lp",),
    "Lp1.5": ("smooth",),
}
SOLVERS = {"qp": QPSimplex, "osqp": OSQPSimplex, "lp": LPSimplex, "smooth": SmoothSimplex}
CASES = [  # (regularizer, n planes, d, lam, seed)
    ("L2", 40, 6, 0.05, 0),
    ("L2", 14, 20, 1.0, 1),
    ("quadratic", 30, 8, 0.2, 2),
    ("L1", 36, 8, 0.1, 3),
    ("L1", 16, 20, 0.5, 4),
    ("Lp1.5", 24, 6, 0.3, 5),
]


@pytest.mark.parametrize("P", [1, 2, 4])
@pytest.mark.parametrize("kind,n,d,lam,seed", CASES, ids=lambda x: str(x))
def test_dual_value_equals_primal_optimum(kind, n, d, lam, seed, P):
    reg, metric = make_reg(kind, d, seed)
    bundle = block_bundle(P, n, d, seed + 10 * P, metric=metric, floors=kind == "L1",
                          scale=0.5 if kind == "Lp1.5" else 1.0)
    p_star = cvx_primal(bundle, reg, lam)
    for name in BACKENDS[kind]:
        sol = SOLVERS[name]().solve(bundle, reg, lam, tol=1e-11)
        assert_master_solution(sol, bundle, reg, lam, p_star)
        if kind == "L1":  # the repaired multipliers are dual-feasible
            assert np.abs(sol.alpha @ bundle.A).max() <= lam * (1 - 1e-12)


def risk_parts(P, d, seed, pieces=6):
    """P piecewise-linear convex parts R_p(w) = max_k <c_k, w> + e_k, bounded below (the slopes
    come in pairs c, -c, so 0 is in their convex hull)."""
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(P):
        C = rng.standard_normal((pieces, d))
        parts.append((np.vstack([C, -C]), rng.standard_normal(2 * pieces)))
    return parts


@pytest.mark.parametrize("kind", ["L2", "L1", "Lp1.5"])
@pytest.mark.parametrize("P", [2, 4])
def test_p_model_bound_dominates_single_model(kind, P):
    """B6: for the same sample points, sum_p max_i (.) >= max_i sum_p (.): the P-model's master
    value is >= the single model's, and both are lower bounds on min J."""
    d, lam = 5, 0.3
    reg, _ = make_reg(kind, d, 0)
    parts = risk_parts(P, d, seed=20 + P)
    rng = np.random.default_rng(30 + P)
    many = PlaneBundle(d, n_blocks=P)
    one = PlaneBundle(d)
    if kind == "L1":  # the L1 master needs floors: R_p >= min_w R_p(w) - 1, one per model
        floor = []
        for C, e in parts:
            v = cp.Variable(d)
            low = cp.Problem(cp.Minimize(cp.max(C @ v + e)))
            low.solve(solver="CLARABEL")
            assert low.status == "optimal"
            floor.append(float(low.value) - 1.0)
        for p in range(P):
            many.add_fixed(np.zeros(d), floor[p], block=p)
        one.add_fixed(np.zeros(d), sum(floor))
    for _ in range(6):
        w = 0.5 * rng.standard_normal(d)
        a_sum, v_sum = np.zeros(d), 0.0
        for p, (C, e) in enumerate(parts):
            k = int(np.argmax(C @ w + e))
            many.add_at(w, float(C[k] @ w + e[k]), C[k], block=p)
            a_sum += C[k]
            v_sum += float(C[k] @ w + e[k])
        one.add_at(w, v_sum, a_sum)
    solver = SOLVERS[BACKENDS[kind][0]]()
    lb_many = solver.solve(many, reg, lam, tol=1e-11).dual_value
    lb_one = solver.solve(one, reg, lam, tol=1e-11).dual_value
    assert lb_many >= lb_one - 1e-10 * (1 + abs(lb_one))
    # both bound the true minimum of lam Omega(w) + sum_p R_p(w)
    w = cp.Variable(d)
    omega, cons = cvx_regularizer(reg, w)
    J = cp.Problem(cp.Minimize(lam * omega + sum(cp.max(C @ w + e) for C, e in parts)), cons)
    J.solve(solver="CLARABEL")
    assert lb_many <= J.value + 1e-7 * (1 + abs(J.value))
    # here the P-model is strictly finer
    assert lb_many > lb_one + 1e-6


# --- one block: the single-simplex code, bit for bit --------------------------------------------
class _NoBlocks:
    """A duck-typed bundle view without ``block``/``n_blocks`` (the pre-P-BMRM protocol)."""

    def __init__(self, bundle):
        self._bundle = bundle

    def __getattr__(self, name):
        if name in ("block", "n_blocks"):
            raise AttributeError(name)
        return getattr(self._bundle, name)


class _Shifted:
    """The planes of a bundle with other offsets (as ``_ShiftedPlanes`` in proximal_bundle)."""

    def __init__(self, bundle, b):
        self._bundle, self.b = bundle, b

    def __getattr__(self, name):
        return getattr(self._bundle, name)


@pytest.mark.parametrize("kind", ["L2", "quadratic", "L1", "Lp1.5"])
def test_one_block_is_the_single_simplex_bit_for_bit(kind):
    d, lam = 6, 0.2
    reg, metric = make_reg(kind, d, 7)
    bundle = block_bundle(1, 25, d, 7, metric=metric, floors=True)
    warm = np.random.default_rng(7).random(bundle.n - 3)
    for name in BACKENDS[kind]:
        tol = 1e-10 if name == "smooth" else None
        for w0 in (None, warm):
            a = SOLVERS[name]().solve(bundle, reg, lam, warm=w0, tol=tol)
            b = SOLVERS[name]().solve(_NoBlocks(bundle), reg, lam, warm=w0, tol=tol)
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
            assert abs(a.alpha.sum() - 1.0) <= 1e-13 * bundle.n


@pytest.mark.parametrize("name", ["qp", "osqp", "smooth"])
def test_block_with_one_plane_shifts_the_other(name):
    """A model with a single plane (a0, b0) has multiplier 1: the P = 2 master is the P = 1 master
    over the planes (a_i + a0, b_i + b0)."""
    d, lam = 7, 0.1
    rng = np.random.default_rng(8)
    a0, b0 = rng.standard_normal(d), 0.7
    two, shifted = PlaneBundle(d, n_blocks=2), PlaneBundle(d)
    for _ in range(20):
        a, b = rng.standard_normal(d), rng.standard_normal()
        two.add(a, b, block=0)
        shifted.add(a + a0, b + b0)
    two.add(a0, b0, block=1)
    s2 = SOLVERS[name]().solve(two, R.L2(), lam, tol=1e-10 if name == "smooth" else 1e-12)
    s1 = QPSimplex().solve(shifted, R.L2(), lam)
    assert s2.alpha[-1] == 1.0
    assert s2.dual_value == pytest.approx(s1.dual_value, rel=1e-9, abs=1e-11)
    np.testing.assert_allclose(s2.w, s1.w, atol=1e-5)


def test_shifted_view_forwards_the_blocks():
    d, lam = 5, 0.3
    bundle = block_bundle(3, 30, d, 9)
    shift = np.random.default_rng(9).standard_normal(d)
    b_view = bundle.b + bundle.A @ shift
    copy = PlaneBundle(d, n_blocks=3)
    for a, b, p in zip(bundle.A, b_view, bundle.block):
        copy.add(a, b, block=int(p))
    for name in ("qp", "smooth"):
        tol = 1e-10 if name == "smooth" else 1e-12
        via_view = SOLVERS[name]().solve(_Shifted(bundle, b_view), R.L2(), lam, tol=tol)
        direct = SOLVERS[name]().solve(copy, R.L2(), lam, tol=tol)
        assert_feasible_blocks(via_view.alpha, bundle)
        assert via_view.dual_value == pytest.approx(direct.dual_value, rel=1e-9, abs=1e-10)


# --- warm starts, inexact solves ---------------------------------------------------------------
def test_warm_start_per_block():
    d, lam = 6, 0.05
    bundle = block_bundle(3, 45, d, 11)
    blocks = bundle_blocks(bundle)
    exact = QPSimplex().solve(bundle, R.L2(), lam)
    # renormalised per block; a block without weight starts uniform; all zero: cold start
    raw = np.where(bundle.block == 1, 0.0, 2.0 + np.arange(bundle.n))
    start = warm_start(raw, bundle.n, blocks)
    assert_feasible_blocks(start, bundle)
    np.testing.assert_allclose(start[bundle.block == 1], 1.0 / np.sum(bundle.block == 1))
    assert warm_start(np.zeros(bundle.n), bundle.n, blocks) is None
    for name in ("qp", "osqp", "smooth"):
        sol = SOLVERS[name]().solve(bundle, R.L2(), lam, warm=raw, tol=1e-11)
        assert_feasible_blocks(sol.alpha, bundle)
        assert sol.dual_value == pytest.approx(exact.dual_value, rel=1e-9, abs=1e-11)
    # a warm start at the optimum (padded for a new plane) costs almost nothing
    again = QPSimplex().solve(bundle, R.L2(), lam, warm=exact.alpha)
    assert again.n_iter <= 2 and again.dual_value == pytest.approx(exact.dual_value, rel=1e-12)
    bundle.add(np.random.default_rng(11).standard_normal(d), -5.0, block=2)  # an inactive cut
    padded = QPSimplex().solve(bundle, R.L2(), lam, warm=exact.alpha)
    assert padded.dual_value == pytest.approx(exact.dual_value, rel=1e-12)
    assert padded.n_iter <= 2


def test_warm_start_reduces_iterations_along_a_p_bmrm_run():
    """P-BMRM adds one plane per model at each master minimiser; the previous multipliers padded
    with zeros keep every block's sum, and warm solves are much cheaper than cold ones."""
    d, P, lam = 20, 4, 1e-2
    rng = np.random.default_rng(7)
    parts = [(rng.standard_normal((100, d)) / np.sqrt(d), rng.standard_normal(100) / P)
             for _ in range(P)]
    bundle = PlaneBundle(d, n_blocks=P)
    for p, (_, e) in enumerate(parts):
        bundle.add_fixed(np.zeros(d), float(e.min()) - 10.0, block=p)
    w, alpha, cold_total, warm_total, bounds = np.zeros(d), None, 0, 0, []
    for _ in range(25):
        for p, (C, e) in enumerate(parts):
            k = int(np.argmax(C @ w + e))
            bundle.add_at(w, float(C[k] @ w + e[k]), C[k], block=p)
        warm = None if alpha is None else np.append(alpha, np.zeros(P))
        sol = QPSimplex().solve(bundle, R.L2(), lam, warm=warm)
        cold = QPSimplex().solve(bundle, R.L2(), lam)
        assert_feasible_blocks(sol.alpha, bundle)
        assert sol.dual_value == pytest.approx(cold.dual_value, rel=1e-11, abs=1e-12)
        assert sol.gap <= 1e-11 * (1 + abs(sol.dual_value))
        cold_total += cold.n_iter
        warm_total += sol.n_iter
        alpha, w = sol.alpha, sol.w
        bounds.append(sol.dual_value)
    assert warm_total < 0.5 * cold_total, (warm_total, cold_total)
    assert np.all(np.diff(bounds) >= -1e-12)  # planes are only added: the bound never drops


@pytest.mark.parametrize("seed", range(6))
def test_qp_converges_on_degenerate_block_bundles(seed):
    """Many planes in few dimensions at small lam: a maximiser has up to d + P active planes and
    SMO's faces are singular; the polish's unbounded-ray step must still end at rounding level."""
    rng = np.random.default_rng(100 + seed)
    P, d = int(rng.integers(2, 7)), int(rng.integers(3, 12))
    lam = 10 ** rng.uniform(-3, -2)
    bundle = block_bundle(P, int(rng.integers(60, 120)), d, 100 + seed, floors=bool(seed % 2))
    sol = QPSimplex().solve(bundle, R.L2(), lam)
    assert_feasible_blocks(sol.alpha, bundle)
    assert sol.gap <= 2e-12 * (1 + abs(sol.dual_value))
    assert sol.n_iter < 20000
    ref = OSQPSimplex().solve(bundle, R.L2(), lam)
    assert ref.dual_value <= sol.dual_value + 1e-12 * (1 + abs(sol.dual_value))


def test_inexact_solves_are_feasible_lower_bounds():
    d, lam = 5, 0.01
    bundle = block_bundle(4, 80, d, 12)
    exact = QPSimplex().solve(bundle, R.L2(), lam)
    for max_iter in (1, 3, 10):
        for solver in (QPSimplex(max_iter=max_iter, polish_rounds=0),
                       SmoothSimplex(max_iter=max_iter), OSQPSimplex(max_iter=max_iter)):
            sol = solver.solve(bundle, R.L2(), lam)
            assert_feasible_blocks(sol.alpha, bundle)
            assert sol.dual_value <= exact.dual_value + 1e-12
            assert sol.dual_value == pytest.approx(bundle.lower_bound(R.L2(), lam, sol.alpha),
                                                   rel=1e-12)
            assert sol.gap >= exact.dual_value - sol.dual_value - 1e-10  # the gap is honest
    assert exact.gap <= 1e-12 * (1 + abs(exact.dual_value))


# --- the L1 dual repair over the product -------------------------------------------------------
def test_lp_repair_keeps_block_sums_and_reaches_the_box():
    rng = np.random.default_rng(13)
    d, lam, P = 6, 0.3, 3
    bundle = block_bundle(P, 12, d, 13, floors=True)
    A, blocks = bundle.A.copy(), bundle_blocks(bundle)
    anchor = _anchor(A, lam * (1 - 1e-12), blocks)
    np.testing.assert_array_equal(anchor[:P], 1.0)  # each model's own floor plane
    alpha = blocks.project(rng.random(bundle.n))
    A[P:] *= lam * (1 + 1e-9) / np.abs(alpha @ A).max()  # slightly outside, as HiGHS may return
    assert np.abs(alpha @ A).max() > lam
    fixed = _repair(A, alpha, anchor, lam * (1 - 1e-12), blocks)
    np.testing.assert_allclose(blocks.sums(fixed), 1.0, rtol=0, atol=1e-15)
    assert np.all(fixed >= 0)
    assert np.abs(fixed @ A).max() <= lam * (1 - 1e-12)
    assert np.abs(fixed - alpha).max() < 1e-8  # a tiny mix within each block


def test_lp_bounded_by_a_combination_across_models():
    # no model has a plane of small slope, but one unit of weight per model can cancel
    bundle = PlaneBundle(1, n_blocks=2)
    bundle.add(np.array([2.0]), 0.0, block=0)
    bundle.add(np.array([1.0]), 0.5, block=0)
    bundle.add(np.array([-2.0]), 0.0, block=1)
    anchor = _anchor(bundle.A, 0.5 * (1 - 1e-12), bundle_blocks(bundle))
    assert anchor is not None and np.abs(anchor @ bundle.A).max() <= 0.5
    sol = LPSimplex().solve(bundle, R.L1(), 0.5)
    p_star = cvx_primal(bundle, R.L1(), 0.5)
    assert_master_solution(sol, bundle, R.L1(), 0.5, p_star)


def test_lp_unbounded_models_are_explained():
    bundle = PlaneBundle(2, n_blocks=2)
    bundle.add_fixed(np.zeros(2), 0.0, block=0)
    bundle.add(np.array([3.0, 0.0]), 0.0, block=1)  # model 1 has no floor and a steep slope
    with pytest.raises(ValueError, match="floor"):
        LPSimplex().solve(bundle, R.L1(), 1.0)


# --- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["qp", "osqp", "lp", "smooth"])
def test_model_without_plane_is_an_error(name):
    bundle = PlaneBundle(3, n_blocks=3)
    bundle.add_fixed(np.zeros(3), 0.0, block=0)
    bundle.add(np.ones(3), 0.0, block=2)
    reg = R.L1() if name == "lp" else R.L2()
    with pytest.raises(ValueError, match=r"model\(s\) \[1\] of the bundle have no plane"):
        SOLVERS[name]().solve(bundle, reg, 1.0)
    with pytest.raises(ValueError, match=r"no plane"):
        SOLVERS[name]().solve(_Shifted(bundle, bundle.b + 1.0), reg, 1.0)

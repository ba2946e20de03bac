"""The bundle family beyond BMRM: LS-BMRM, the aggregated k-bundle, proximal BMRM and the
trust-region bundle (requirements C4-C8 of the 000 notes; [UF12] for the proximal variant)."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt import regularizers as R
from nsopt.losses import Hinge, Logistic
from nsopt.solvers import BMRM, KBundle, LSBMRM, ProximalBundle

from cvxref import cvxpy_optimum, small_binary


def _hinge(m=300, d=20, seed=0, lam=1e-2, unit_rows=False):
    X, y = small_binary(m, d, seed, unit_rows=unit_rows)
    return nsopt.RegularizedRisk(Hinge(X, y), R.L2(), lam)


# ---------------------------------------------------------------------------------- k-bundle
def test_kbundle_eta_maximizes_eq13():
    """C7: the closed-form eta of eq. (14) maximises the 1-D dual (13) on [0, 1]."""
    J = _hinge(seed=1, lam=1e-2)
    lam = J.lam
    states = list(KBundle(bundle_size=2, max_iter=15).iterate(J))
    grid = np.linspace(0.0, 1.0, 200001)
    for prev, cur in zip(states[:-1], states[1:]):
        w = prev.w
        f, a_t = J.loss.value_and_subgradient(w)
        b_t = f - a_t @ w
        a_hat, b_hat = -lam * w, prev.b_bar
        diff = a_t - a_hat
        dual = (-(grid / lam) * (a_hat @ diff) - grid ** 2 / (2 * lam) * (diff @ diff)
                + grid * (b_t - b_hat))
        best = grid[np.argmax(dual)]
        # cur.w = (1 - eta) w - eta a_t / lam: recover eta along the segment
        seg = -a_t / lam - w
        eta = float((cur.w - w) @ seg / (seg @ seg)) if seg @ seg > 0 else 0.0
        assert eta == pytest.approx(best, abs=2e-5)


def test_erratum_E1_kbundle_gap():
    """E1: Alg. 4's gap is min J + lam/2 ||w_t||^2 - b_hat >= 0; the printed sign
    (- lam/2 ||w_t||^2) goes negative."""
    J = _hinge(seed=2, lam=1e-2)
    best = math.inf
    printed_negative = 0
    n = 0
    for s in KBundle(bundle_size=2, max_iter=30, rtol=1e-9).iterate(J):
        best = min(best, J.value(s.w))
        sq = 0.5 * J.lam * float(s.w @ s.w)
        assert best + sq - s.b_bar >= -1e-12
        printed_negative += (best - sq - s.b_bar) < 0
        n += 1
    assert printed_negative >= n // 2


@pytest.mark.parametrize("lam", [1e-2, 1e-3])
def test_kbundle2_theorem4_recurrence(lam):
    """C4 for Algorithm 4 (k = 2): the per-step recurrence with G = H* = 1."""
    J = _hinge(m=300, d=20, seed=7, lam=lam, unit_rows=True)
    eps = [min(s.fun_best, J.value(s.w)) - s.lower_bound
           for s in KBundle(bundle_size=2, rtol=1e-6, max_iter=3000).iterate(J)]
    assert len(eps) > 5
    for e0, e1 in zip(eps[:-1], eps[1:]):
        assert e0 - e1 >= 0.5 * e0 * min(1.0, lam * e0 / 4.0) - 1e-9


@pytest.mark.parametrize("k", [2, 5])
def test_kbundle_iteration_bound(k):
    """C5: at most 8 / (lam eps) iterations (hinge, unit rows, J(0) = 1) for any k >= 2."""
    lam, eps = 1e-2, 1e-3
    J = _hinge(m=300, d=20, seed=8, lam=lam, unit_rows=True)
    res = nsopt.minimize(J, method="kbundle", bundle_size=k, atol=eps, rtol=0.0, max_iter=10 ** 5)
    assert res.success and res.nit <= 8.0 / (lam * eps)


def test_kbundle2_closed_form_equals_qp_path():
    J = _hinge(seed=3, lam=1e-2)
    a = nsopt.minimize(J, method="kbundle", bundle_size=2, max_iter=25, rtol=1e-12)
    b = nsopt.minimize(J, method="kbundle", bundle_size=2, closed_form=False, max_iter=25,
                       rtol=1e-12, inner_rtol=0.0)
    # the QP path keeps the loss's floor plane apart, so its model is at least as good
    assert b.lower_bound >= a.lower_bound - 1e-10
    assert a.fun == pytest.approx(b.fun, rel=0.05)


def test_kbundle_keeps_at_most_k_planes_and_aggregation_keeps_dual():
    """C8 at every step: the aggregated model's dual value right after aggregating equals the
    previous optimum, so the bound never drops; the bundle never exceeds k (+ the floor)."""
    J = _hinge(seed=4, lam=1e-3)
    k = 4
    lower = -math.inf
    for s in KBundle(bundle_size=k, inner_rtol=0.0, max_iter=60, rtol=1e-9).iterate(J):
        assert s.bundle.n <= k + s.bundle.n_fixed
        assert s.lower_bound >= lower - 1e-10
        lower = s.lower_bound


def test_kbundle_order_of_bundle_sizes():
    """Fig. 5 of [TVSL10], qualitatively: more planes, fewer iterations."""
    J = _hinge(m=400, d=30, seed=5, lam=1e-3)
    its = {k: nsopt.minimize(J, method="kbundle", bundle_size=k, rtol=1e-3, max_iter=20000).nit
           for k in (None, 20, 5, 2)}
    assert its[None] <= its[20] <= its[5] <= its[2]


def test_kbundle_memory_bounded_on_long_run():
    """Memory stays bounded by k on a 2,000-iteration run."""
    J = _hinge(m=200, d=10, seed=6, lam=1e-6)
    res = nsopt.minimize(J, method="kbundle", bundle_size=3, max_iter=2000, rtol=1e-12,
                         closed_form=False)
    assert res.nit == 2000
    assert res.history["n_planes"].max() <= 3 + 1


def test_bmrm_max_planes_memory_bounded_on_long_run():
    J = _hinge(m=200, d=10, seed=6, lam=1e-6)
    res = nsopt.minimize(J, method="bmrm", max_planes=6, max_iter=2000, rtol=1e-12)
    assert res.nit == 2000
    assert res.history["n_planes"].max() <= 6


# ----------------------------------------------------------------------------------- LS-BMRM
def test_lsbmrm_without_line_search_reproduces_bmrm():
    """C6: with eta = 1, LS-BMRM's query points are BMRM's iterates."""
    J = _hinge(seed=9, lam=1e-2)
    bm = [s.w for s in BMRM(max_iter=20, inner_rtol=0.0, rtol=1e-12).iterate(J)]
    ls = [s.w_query for s in LSBMRM(line_search=False, max_iter=20, inner_rtol=0.0,
                                    rtol=1e-12).iterate(J)]
    assert len(bm) == len(ls)
    for a, b in zip(bm, ls):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("loss_cls", [Hinge, Logistic])
def test_lsbmrm_best_value_non_increasing(loss_cls):
    X, y = small_binary(300, 20, seed=10)
    J = nsopt.RegularizedRisk(loss_cls(X, y), R.L2(), 1e-3)
    values = [s.fun_best for s in LSBMRM(rtol=1e-6).iterate(J)]
    assert len(values) > 3
    assert all(b <= a + 1e-15 for a, b in zip(values, values[1:]))
    # the recorded value is J at the line-search point (computed on the line, O(m))
    s = list(LSBMRM(max_iter=5).iterate(J))[-1]
    assert s.fun_best == pytest.approx(J.value(s.w_best), rel=1e-12)


def test_lsbmrm_needs_no_more_iterations_than_bmrm():
    """Fig. 8 of [TVSL10], qualitatively, on a small-lam problem."""
    J = _hinge(m=500, d=30, seed=11, lam=1e-4)
    bm = nsopt.minimize(J, method="bmrm", rtol=1e-3)
    ls = nsopt.minimize(J, method="ls-bmrm", rtol=1e-3)
    assert ls.success and bm.success
    assert ls.nit <= bm.nit


@pytest.mark.parametrize("lam", [1e-4, 1e-5])
def test_lsbmrm_theta_erratum_query_near_the_best_point(lam):
    """Erratum of [TVSL10] Alg. 3: OCAS's cut is w_c = 0.9 w_b + 0.1 w_t, theta = 0.1 in the
    paper's convention, not the 0.9 it prints; the default follows OCAS and needs fewer
    iterations than 0.9 (a9a: 52 against 466 at lam 1e-4)."""
    J = _hinge(m=2000, d=50, seed=3, lam=lam)
    default = nsopt.minimize(J, method="ls-bmrm", rtol=1e-3)
    printed = nsopt.minimize(J, method="ls-bmrm", rtol=1e-3, query_fraction=0.9)
    assert LSBMRM().query_fraction == 0.1
    assert default.success and printed.success
    assert default.nit < printed.nit


# --------------------------------------------------------------------------- proximal BMRM
def test_prox_bmrm_step_bound_and_certificate():
    J = _hinge(m=400, d=30, seed=12, lam=1e-4)
    states = list(ProximalBundle(max_step=0.05, rtol=1e-3, max_iter=2000).iterate(J))
    tuned = 0
    for prev, cur in zip(states[:-1], states[1:]):
        if cur.n_tunes > prev.n_tunes and cur.alpha > 0:  # a re-tuned step respects the bound
            assert np.linalg.norm(cur.w - prev.w) <= 0.05 * (1 + 1e-9)
            tuned += 1
    assert tuned > 0
    res = nsopt.minimize(J, method="proximal-bundle", rtol=1e-4)
    X, y = small_binary(400, 30, 12)
    f_star = cvxpy_optimum(X, y, "hinge", R.L2(), 1e-4)
    assert res.lower_bound - 1e-7 <= f_star <= res.fun + 1e-7


def test_prox_bmrm_sgd_init_and_warm_start():
    J = _hinge(m=400, d=30, seed=13, lam=1e-3)
    a = nsopt.minimize(J, method="proximal-bundle", start="sgd", rtol=1e-4)
    assert a.success
    # x0 near the optimum: the prox term keeps the solver there, so it converges fast
    b = nsopt.minimize(J, method="proximal-bundle", x0=a.x, rtol=1e-4)
    c = nsopt.minimize(J, method="bmrm", x0=a.x, rtol=1e-4)
    assert b.nit <= c.nit


def test_proximal_variant_rejects_non_l2():
    X, y = small_binary(50, 5)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L1(), 1e-2)
    with pytest.raises(nsopt.solvers.ProblemNotSupported, match="trust-region"):
        nsopt.minimize(J, method="proximal-bundle", variant="proximal")


def test_proximal_bundle_picks_its_variant_from_the_problem():
    """One name, one behaviour: "proximal-bundle" solves whatever methods_supporting says it
    can (main refused a FunctionOracle that its own error message said it could solve)."""
    X, y = small_binary(50, 5)
    l2 = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 1e-2)
    l1 = nsopt.RegularizedRisk(Hinge(X, y), R.L1(), 1e-2)
    plain = nsopt.FunctionOracle(lambda w: float(np.abs(w - 1).sum()), lambda w: np.sign(w - 1), dim=3)
    for problem, chosen in ((l2, nsopt.solvers.ProxBMRM), (l1, nsopt.solvers.TrustRegionBundle),
                            (plain, nsopt.solvers.TrustRegionBundle)):
        assert "proximal-bundle" in nsopt.solvers.methods_supporting(problem)
        assert type(nsopt.solvers.ProximalBundle().choose(problem)) is chosen
        res = nsopt.minimize(problem, method="proximal-bundle", max_iter=300)
        assert res.method == "proximal-bundle" and res.lower_bound <= res.fun
    with pytest.raises(TypeError, match="n_models"):  # an option of the other variant
        nsopt.minimize(plain, method="proximal-bundle", n_models=2)


# ----------------------------------------------------------------------- trust-region bundle
def _plain(fun_sub, dim, lower=-math.inf):
    return nsopt.FunctionOracle(value_and_subgradient=fun_sub, dim=dim, lower_bound=lower)


def test_trust_region_max_of_affine():
    rng = np.random.default_rng(0)
    n, d = 40, 5
    A = rng.standard_normal((n, d))
    b = rng.standard_normal(n)

    def f(x):
        v = A @ x + b
        i = int(np.argmax(v))
        return float(v[i]), A[i].copy()

    # a max of affine functions with bounded minimum: A's rows surround the origin
    A = np.vstack([A, -A])
    b = np.concatenate([b, b])
    import cvxpy as cp
    x = cp.Variable(d)
    f_star = cp.Problem(cp.Minimize(cp.max(A @ x + b))).solve(solver=cp.CLARABEL)
    res = nsopt.minimize(_plain(f, d), method="proximal-bundle", variant="trust-region",
                         atol=1e-8, rtol=0.0, max_iter=2000)
    assert res.fun == pytest.approx(f_star, abs=1e-6)
    # the aggregate subgradient is 0 with no linearization error: a proof of optimality
    assert res.status is nsopt.Status.CONVERGED and res.gap <= 1e-8


def test_trust_region_l1_residual_with_radius_bound():
    rng = np.random.default_rng(1)
    n, d = 30, 6
    A = rng.standard_normal((n, d))
    b = rng.standard_normal(n)

    def f(x):
        r = A @ x - b
        return float(np.abs(r).sum()), A.T @ np.sign(r)

    import cvxpy as cp
    x = cp.Variable(d)
    prob = cp.Problem(cp.Minimize(cp.norm1(A @ x - b)))
    f_star = prob.solve(solver=cp.CLARABEL)
    radius = 2.0 * float(np.linalg.norm(x.value)) + 1.0  # a valid bound on ||x*||
    res = nsopt.minimize(_plain(f, d), method="proximal-bundle", variant="trust-region",
                         radius=radius, rtol=1e-5, max_iter=5000)
    tol = 1e-8 * f_star  # Clarabel's accuracy
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.success and res.gap <= 1e-5 * res.fun + 1e-12


def test_trust_region_piecewise_quadratic_max():
    rng = np.random.default_rng(2)
    d, k = 4, 5
    centres = rng.standard_normal((k, d))
    scales = rng.random(k) + 0.5
    offsets = rng.standard_normal(k)
    pieces = [nsopt.FunctionOracle(
        lambda x, c=c, s=s, o=o: 0.5 * s * float((x - c) @ (x - c)) + o,
        lambda x, c=c, s=s: s * (x - c), dim=d) for c, s, o in zip(centres, scales, offsets)]
    f = nsopt.Max(pieces)
    import cvxpy as cp
    x = cp.Variable(d)
    f_star = cp.Problem(cp.Minimize(cp.max(cp.hstack(
        [0.5 * s * cp.sum_squares(x - c) + o for c, s, o in zip(centres, scales, offsets)])))
    ).solve(solver=cp.CLARABEL)
    res = nsopt.minimize(f, method="proximal-bundle", variant="trust-region", atol=1e-9,
                         rtol=0.0, max_iter=3000)
    assert res.fun == pytest.approx(f_star, abs=1e-6)


def test_trust_region_on_regularized_risk_reports_true_gap():
    X, y = small_binary(150, 10, seed=14)
    J = nsopt.RegularizedRisk(Logistic(X, y), R.L1(), 1e-2)
    f_star = cvxpy_optimum(X, y, "logistic", R.L1(), 1e-2)
    # the shared certifiers: the plane certifier alone, then with the L1 dual-point certifier
    for certify_dual, sources in ((False, {"planes"}), (True, {"planes", "dual-point"})):
        res = nsopt.minimize(J, method="proximal-bundle", variant="trust-region", rtol=1e-5,
                             certify_dual=certify_dual)
        assert res.success and res.certificate.source in sources
        assert res.lower_bound - 1e-8 <= f_star <= res.fun + 1e-8
        assert res.certificate.check(J) >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))


# ---------------------------------------------------------------------------------- paths
@pytest.mark.parametrize("method", ["bmrm", "ls-bmrm", "proximal-bundle"])
def test_path_reuses_solutions_and_planes(method):
    X, y = small_binary(400, 30, seed=15)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 1e-2)
    lams = [1e-2, 1e-3, 1e-4]
    results = nsopt.path(J, lams, method=method, rtol=1e-4)
    cold = [nsopt.minimize(nsopt.RegularizedRisk(J.loss, J.reg, lam), method=method, rtol=1e-4)
            for lam in lams]
    assert [r.info["lam"] for r in results] == lams
    for warm, c in zip(results, cold):
        assert warm.success
        assert warm.lower_bound <= c.fun + 1e-12 and c.lower_bound <= warm.fun + 1e-12
    if method != "proximal-bundle":  # measured in benchmarks/bundles.py; not always a win there
        # reusing planes and the previous solution saves iterations along the path
        assert sum(r.nit for r in results[1:]) < sum(c.nit for c in cold[1:])


# ------------------------------------------------------------------------- P-BMRM (n_models)
@pytest.mark.parametrize("n_models", [2, 8])
def test_multiple_models_certificate_and_fewer_iterations(n_models):
    X, y = small_binary(400, 30, seed=12)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 1e-3)
    one = nsopt.minimize(J, method="proximal-bundle", rtol=1e-5)
    many = nsopt.minimize(J, method="proximal-bundle", n_models=n_models, rtol=1e-5)
    f_star = cvxpy_optimum(X, y, "hinge", R.L2(), 1e-3)
    assert many.success and many.lower_bound - 1e-8 <= f_star <= many.fun + 1e-8
    assert many.certificate.check(J) >= many.lower_bound - 1e-9 * (1 + abs(many.lower_bound))
    # the P-model is finer ([UF12] Sec. 3.3): fewer iterations than one model
    assert many.nit < one.nit


def test_ndcg_merges_queries_into_blocks_and_runs_p_bmrm():
    """NDCG decomposes over queries; n_groups merges consecutive queries into blocks (the
    scalar losses' interface), so P-BMRM keeps one model per block. Its certificate must
    bracket BMRM's tightly certified optimum."""
    X, rel, qid = nsopt.datasets.make_ranking(12, 6, 5, random_state=4)
    loss = nsopt.losses.NDCG(X, rel, qid, k=3)
    w = np.linspace(-1.0, 1.0, 5)
    natural_values, natural_A = loss.group_value_and_subgradients(w)
    assert natural_values.shape == (loss.n_queries,)
    values, A = loss.group_value_and_subgradients(w, 4)
    blocks = loss.groups(4)
    assert values.shape == (4,) and A.shape == (4, 5) and len(blocks) == 4
    bounds = (np.arange(5) * loss.n_queries) // 4
    for k in range(4):  # block k is the sum of its queries
        a, b = bounds[k], bounds[k + 1]
        assert values[k] == pytest.approx(natural_values[a:b].sum(), rel=1e-12)
        np.testing.assert_allclose(A[k], natural_A[a:b].sum(0), rtol=1e-10, atol=1e-14)
        np.testing.assert_array_equal(blocks[k], np.concatenate(loss.groups()[a:b]))
    with pytest.raises(ValueError, match="1 .. 12 groups"):
        loss.group_value_and_subgradients(w, 13)

    J = nsopt.RegularizedRisk(loss, R.L2(), 1e-2)
    ref = nsopt.minimize(J, method="bmrm", rtol=1e-7)
    many = nsopt.minimize(J, method="proximal-bundle", n_models=4, rtol=1e-4)
    assert many.success
    assert many.lower_bound <= ref.fun + 1e-9 and ref.lower_bound <= many.fun + 1e-9
    assert many.certificate.check(J) >= many.lower_bound - 1e-9 * (1 + abs(many.lower_bound))


def test_a_loss_without_examples_to_split_says_so():
    X, y = small_binary(60, 4, seed=5)
    J = nsopt.RegularizedRisk(nsopt.losses.ROCArea(X, y), R.L2(), 1e-2)
    with pytest.raises(ValueError, match="does not decompose over examples"):
        nsopt.minimize(J, method="proximal-bundle", n_models=2)


def test_group_evaluation_is_one_oracle_call_and_sums_to_the_risk():
    X, y = small_binary(103, 7, seed=3)
    J = nsopt.RegularizedRisk(Logistic(X, y), R.L2(), 1e-2)
    oracle = nsopt.CountingOracle(J)
    w = np.linspace(-1, 1, 7)
    ev, values, subgradients = oracle.evaluate_groups(w, 5)
    assert oracle.nfev == 1 and values.shape == (5,) and subgradients.shape == (5, 7)
    assert values.sum() == pytest.approx(J.loss.value(w), rel=1e-12)
    np.testing.assert_allclose(subgradients.sum(0), J.loss.subgradient(w), rtol=1e-10, atol=1e-14)
    assert ev.fun == pytest.approx(J.value(w), rel=1e-12)


def test_kbundle_drops_idle_planes_before_aggregating(monkeypatch):
    """A full bundle makes room by dropping planes idle for remove_inactive solves (multiplier
    0: the dual value is kept) before it aggregates: with k above the active set's size
    (d + 1 = 6 here, k = 20) nothing is ever aggregated, while the paper's policy
    (remove_inactive=None) aggregates planes that still carry weight. Either way at most k
    planes and a monotone bound."""
    from nsopt.bundle import PlaneBundle

    calls = []
    aggregate = PlaneBundle.aggregate
    monkeypatch.setattr(PlaneBundle, "aggregate",
                        lambda self, *a, **kw: calls.append(1) or aggregate(self, *a, **kw))
    J = _hinge(m=200, d=5, seed=7, lam=1e-6)
    runs = {}
    for idle in (10, None):
        calls.clear()
        lower = -math.inf
        for s in KBundle(bundle_size=20, remove_inactive=idle, rtol=1e-4, max_iter=400).iterate(J):
            assert s.bundle.n <= 20 + s.bundle.n_fixed
            assert s.lower_bound >= lower - 1e-12
            lower = s.lower_bound
        runs[idle] = len(calls)
    assert runs[10] == 0 < runs[None]

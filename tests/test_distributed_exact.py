"""The ordered reduction of nsopt.distributed: one-machine answers to the last bit (issue 12).

With ``ShardedLoss.reduction = "ordered"`` each shard continues the running sums of the shards
before it: the loss value (a float along the chain) and, on sparse data, the subgradient
``X^T g`` (a d-vector along the chain). Every oracle answer is then bitwise the one-machine
one, so the iterates of every method are too, including subBFGS / subLBFGS, whose path on the
hinge turns a one-ulp difference of a subgradient into 1e-4 within two iterations (a kink
lands on the other side). What is checked: the continued ``X^T g`` equals the one-machine pass
bitwise for any split (hypothesis); the oracle's answers on shards equal the in-memory ones
bitwise; the chain's cost in round trips and bytes; a shard rebuilt mid-chain; dense data
(no vector chain) falls back to the parallel sum; a9a in 2, 4, 8 shards under a LocalCluster
of 2 worker processes: subBFGS and subLBFGS iterates equal the one-machine run's.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

distributed = pytest.importorskip("distributed")

import nsopt  # noqa: E402
import nsopt.distributed as nd  # noqa: E402
from nsopt._linalg import lincomb  # noqa: E402
from nsopt.losses._kernels import DataMatrix, _compressed_matvec  # noqa: E402
from test_distributed import client, kill_at_iteration, wait_for_both_workers  # noqa: E402,F401  (a LocalCluster of 2 processes)


@pytest.fixture(scope="module")
def data():
    return nsopt.datasets.make_sparse_binary(400, 30, random_state=0)


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def _same(a, b):
    """Bitwise equal (floats or arrays)."""
    return np.array_equal(np.asarray(a), np.asarray(b))


# --- the continued X^T g, without a cluster -------------------------------------------------
@settings(deadline=None)
@given(m=st.integers(1, 60), d=st.integers(1, 12), density=st.floats(0.05, 1.0),
       seed=st.integers(0, 2**32 - 1), n_cuts=st.integers(0, 6))
def test_continued_rdot_is_the_one_machine_pass_for_any_split(m, d, density, seed, n_cuts):
    """Shard after shard, each continuing the previous partial vector, gives ``X^T g`` of the
    whole matrix bitwise: both one-machine passes (scipy's ``g @ X`` and the threaded CSC
    pass used above PARALLEL_MIN_NNZ), for any cut points, empty shards included."""
    rng = np.random.default_rng(seed)
    X = sp.random(m, d, density=density, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.normal(size=k) * 10.0 ** rng.integers(-8, 8, size=k))
    g = rng.normal(size=m) * 10.0 ** rng.integers(-8, 8, size=m)
    whole = DataMatrix(X).rdot(g)
    csc = X.tocsc()
    csc.sort_indices()
    threaded = np.empty(d)
    _compressed_matvec(csc.indptr, csc.indices, csc.data, g, threaded)
    cuts = np.sort(rng.integers(0, m + 1, size=n_cuts))
    bounds = [0, *cuts.tolist(), m]
    a = None
    for s, e in zip(bounds[:-1], bounds[1:]):
        a = nd._continued_rdot(DataMatrix(X[s:e]), g[s:e], a)
    assert _same(a, whole)
    assert _same(a, threaded)


# --- the oracle on shards ---------------------------------------------------------------------
LOSSES = [nsopt.losses.Hinge, nsopt.losses.Logistic, nsopt.losses.SquaredHinge,
          nsopt.losses.EpsilonInsensitive]


def _risk(loss_cls, data, lam=1e-3):
    X, y = data
    if loss_cls is nsopt.losses.EpsilonInsensitive:
        y = X @ np.linspace(-1, 1, X.shape[1]) + 0.1 * np.sign(y)
    kw = dict(epsilon=0.05) if loss_cls is nsopt.losses.EpsilonInsensitive else {}
    return nsopt.RegularizedRisk(loss_cls(X, y, **kw), nsopt.regularizers.L2(), lam)


@pytest.mark.parametrize("loss_cls", LOSSES)
def test_ordered_oracle_answers_are_the_one_machine_ones_bitwise(client, data, loss_cls):
    """value, value_and_subgradient and sup_subgradient (slope and argsup) on 3 shards equal
    the in-memory answers to the last bit, at w = 0 (every margin on the hinge's kink side
    alike), at random points, and at a point on kinks (sup_subgradient picks the side of p)."""
    J = _risk(loss_cls, data)
    Js = nd.shard(J, n_shards=3, client=client)
    Js.loss.reduction = "ordered"
    rng = np.random.default_rng(3)
    on_kinks = np.eye(J.dim)[0]  # binary features: margins of exactly 1 (hinge kinks)
    for w in (np.zeros(J.dim), rng.normal(size=J.dim), on_kinks):
        assert Js.value(w) == J.value(w)
        f, g = Js.value_and_subgradient(w)
        f1, g1 = J.value_and_subgradient(w)
        assert f == f1 and _same(g, g1)
        for p in (rng.normal(size=J.dim), -np.eye(J.dim)[0], np.eye(J.dim)[0]):
            s, a = Js.sup_subgradient(w, p)
            s1, a1 = J.sup_subgradient(w, p)
            assert s == s1 and _same(a, a1)


def test_sup_subgradient_slope_is_the_argsup_times_p(data):
    """The loss's slope is a^T p for the subgradient a it returns (what shards reproduce),
    and it is the directional derivative: J(w + t p) - J(w) = t s for t small on a line
    that is affine near w, and a^T p >= g^T p for every other subgradient g at w."""
    J = _risk(nsopt.losses.Hinge, data)
    w = np.zeros(J.dim)
    p = np.random.default_rng(0).normal(size=J.dim)
    s, a = J.loss.sup_subgradient(w, p)
    assert s == float(a @ p)
    t = 1e-7
    assert (J.loss.value(w + t * p) - J.loss.value(w)) / t == pytest.approx(s, rel=1e-6)
    _, g0 = J.loss.value_and_subgradient(w)
    assert s >= float(g0 @ p) - 1e-15


def test_ordered_subgradient_cost(client, data):
    """An ordered value_and_subgradient costs P round trips (one parallel, P - 1 along the
    chain; parallel: 1) and moves 8 (d + 2) (P - 1) bytes more than the parallel one."""
    J = _risk(nsopt.losses.Hinge, data)
    P, d = 4, J.dim
    Js = nd.shard(J, n_shards=P, client=client)
    w = np.random.default_rng(1).normal(size=d)
    Js.value_and_subgradient(w)  # warm: first calls ask facts (chainable) once
    t0 = Js.loss.traffic
    Js.value_and_subgradient(w)
    t1 = Js.loss.traffic
    Js.loss.reduction = "ordered"
    Js.value_and_subgradient(w)
    t2 = Js.loss.traffic
    Js.value_and_subgradient(w)
    t3 = Js.loss.traffic
    assert t1["calls"] - t0["calls"] == 1
    assert t3["calls"] - t2["calls"] == P
    parallel = (t1["bytes_out"] - t0["bytes_out"]) + (t1["bytes_in"] - t0["bytes_in"])
    ordered = (t3["bytes_out"] - t2["bytes_out"]) + (t3["bytes_in"] - t2["bytes_in"])
    # per chain step a d-vector and a float each way; in the first round P - 1 vectors fewer
    assert ordered - parallel == 8 * (d + 2) * (P - 1)


def test_a_shard_without_its_derivatives_answers_none_then_recomputes(client, data):
    """A shard rebuilt between the two rounds has lost the derivatives it kept: it answers
    None, and the driver asks again with w (the answer is the same numbers)."""
    J = _risk(nsopt.losses.Hinge, data)
    Js = nd.shard(J, n_shards=2, client=client)
    Js.loss.reduction = "ordered"
    w = np.random.default_rng(2).normal(size=J.dim)
    assert Js.loss._map("chain_subgradient", 0.0, None, only=1) == [None]
    f, g = Js.value_and_subgradient(w)
    f1, g1 = J.value_and_subgradient(w)
    assert f == f1 and _same(g, g1)


def test_dense_shards_chain_values_only(client):
    """Dense data (BLAS products cannot be continued): values stay bitwise, subgradients are
    the parallel sums (to rounding)."""
    X, y = nsopt.datasets.make_sparse_binary(300, 10, random_state=1)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X.toarray(), y), nsopt.regularizers.L2(), 1e-3)
    Js = nd.shard(J, n_shards=3, client=client)
    Js.loss.reduction = "ordered"
    w = np.random.default_rng(4).normal(size=J.dim)
    f, g = Js.value_and_subgradient(w)
    f1, g1 = J.value_and_subgradient(w)
    assert f == f1 and _rel(g, g1) <= 1e-13
    assert Js.loss._ordered_vectors() is False


def test_worker_killed_mid_run_keeps_the_iterates_bitwise(client, data):
    """subBFGS on 4 ordered shards with a worker killed (SIGKILL) at iteration 4: the lost
    shards are rebuilt, the chain recomputes their derivatives, and the iterates stay the
    one-machine ones to the last bit."""
    J = _risk(nsopt.losses.Hinge, data)
    Js = nd.shard(J, n_shards=4, client=client)
    Js.loss.reduction = "ordered"
    ref = nsopt.minimize(J, method="subbfgs", rtol=0.0, max_iter=12)

    kill = kill_at_iteration(client, 3)

    res = nsopt.minimize(Js, method="subbfgs", rtol=0.0, max_iter=12, callback=kill)
    assert Js.loss.n_rebuilds >= 1
    assert res.nit == ref.nit and _same(res.x, ref.x)
    wait_for_both_workers(client)


# --- lines and ls-bmrm ---------------------------------------------------------------------
def test_ordered_lines_are_the_one_machine_lines_bitwise(client, data):
    """On ordered shards a line's values and one-sided derivatives (each shard continuing
    the running sum of the ones before it) equal the in-memory line's to the last bit, at
    the minimiser (a kink for the hinge) and between kinks; with ``line_search="gather"``
    the minimiser too (the hinge's kinks and jumps gathered in example order: the
    one-machine sweep). The squared hinge and logistic lines continue their fused line
    kernels (``start``), the hinge's its gradient kernel and a serial dot."""
    rng = np.random.default_rng(5)
    w, p = 0.1 * rng.normal(size=data[0].shape[1]), rng.normal(size=data[0].shape[1])
    for loss_cls in (nsopt.losses.Hinge, nsopt.losses.SquaredHinge, nsopt.losses.Logistic):
        J = _risk(loss_cls, data)
        Js = nd.shard(J, n_shards=2, client=client)
        Js.loss.reduction = "ordered"
        Js.loss.line_search = "gather"
        one, sharded = J.restrict(w, p), Js.restrict(w, p)
        eta = one.minimize()
        if loss_cls is not nsopt.losses.Logistic:  # (its sharded search is Newton's)
            assert sharded.minimize() == eta
        for t in (eta, 0.37 * eta + 0.01):
            assert sharded.value(t) == one.value(t)
            for side in (1, -1):
                assert sharded.derivative(t, side) == one.derivative(t, side)
        Js.loss.close()


def test_ls_bmrm_ordered_gathered_is_the_one_machine_run_bitwise(client, data):
    """ls-bmrm on 2 ordered shards with the gathered line search equals the one-machine run
    to the last bit, with the default ``reuse_scores=True`` (the shards keep X_k w_b and
    X_k w_t and form the line's q = X w_t - X w_b, the next scores and the query point's
    plane from them, as one machine does; the driver holds handles, never the m-vectors) and
    (hinge) with ``reuse_scores=False`` (q = X p from the data). The two one-machine runs
    differ, so each comparison tells them apart."""
    for loss_cls, modes in ((nsopt.losses.Hinge, (True, False)),
                            (nsopt.losses.SquaredHinge, (True,))):
        J = _risk(loss_cls, data)
        Js = nd.shard(J, n_shards=2, client=client)
        Js.loss.reduction = "ordered"
        Js.loss.line_search = "gather"
        runs = {}
        for reuse in modes:
            ref = nsopt.minimize(J, method="ls-bmrm", rtol=0.0, max_iter=15, inner_rtol=0.0,
                                 reuse_scores=reuse)
            res = nsopt.minimize(Js, method="ls-bmrm", rtol=0.0, max_iter=15, inner_rtol=0.0,
                                 reuse_scores=reuse)
            assert res.nit == ref.nit and res.info["line_steps"] == ref.info["line_steps"]
            np.testing.assert_array_equal(res.x, ref.x)
            np.testing.assert_array_equal(res.history["fun"], ref.history["fun"])
            assert res.certificate.check(Js) <= res.fun
            runs[reuse] = ref.x
        if len(runs) == 2:
            assert not _same(runs[True], runs[False])
        Js.loss.close()


def test_kept_scores_stay_on_the_shards_and_combine_as_one_machine(client, data):
    """``ShardedLoss.scores`` keeps X_k w on the shards only with the ordered reduction; the
    handle's difference, combination and max |f| are the one-machine arrays' (bitwise), its
    point follows the same combinations, and a line through kept scores is the one-machine
    ``restrict_scores`` line."""
    J = _risk(nsopt.losses.Hinge, data)
    Js = nd.shard(J, n_shards=3, client=client)
    assert Js.scores(np.zeros(J.dim)) is None  # parallel sums: recompute from the data
    Js.loss.reduction = "ordered"
    rng = np.random.default_rng(7)
    u, v = rng.normal(size=J.dim), rng.normal(size=J.dim)
    fu, fv = J.scores(u), J.scores(v)
    hu, hv = Js.scores(u), Js.scores(v)
    q, hq = fv - fu, hv - hu
    c = lincomb(0.9, fu, 0.1, fv)
    hc = hu.lincomb(0.9, 0.1, hv, out=hv)
    assert hc is hv and _same(hc.w, lincomb(0.9, u, 0.1, v))
    assert hq.max_abs() == float(np.max(np.abs(q))) and hc.max_abs() == float(np.max(np.abs(c)))
    one = J.restrict_scores(u, hq.w, fu, q)
    sharded = Js.restrict_scores(u, hq.w, hu, hq)
    for t in (0.0, 0.3, 1.7):
        assert sharded.value(t) == one.value(t)
    ev, ev1 = Js._evaluate(hc.w, scores=hc), J._evaluate(hc.w, scores=c)
    assert ev.fun == ev1.fun and _same(ev.subgradient, ev1.subgradient)
    Js.loss.close()


def test_worker_killed_mid_ls_bmrm_recomputes_the_kept_scores(client, data):
    """ls-bmrm with kept scores on 4 ordered shards, a worker killed (SIGKILL) at iteration
    4: the rebuilt shards recompute their kept scores from the points the driver keeps
    (X_k w, the combinations up to rounding) and the run goes on, to the one-machine
    iterates within 1e-8 and a certificate that checks. (Without the recomputation the
    next combination finds no scores on the rebuilt shards and the run fails: checked by
    hand.)"""
    J = _risk(nsopt.losses.Hinge, data)
    Js = nd.shard(J, n_shards=4, client=client)
    Js.loss.reduction = "ordered"
    ref = nsopt.minimize(J, method="ls-bmrm", rtol=0.0, max_iter=12, inner_rtol=0.0)
    kill = kill_at_iteration(client, 3)
    res = nsopt.minimize(Js, method="ls-bmrm", rtol=0.0, max_iter=12, inner_rtol=0.0,
                         callback=kill)
    assert Js.loss.n_rebuilds >= 1
    assert res.nit == ref.nit and _rel(res.x, ref.x) <= 1e-8
    assert res.certificate.check(Js) <= res.fun
    wait_for_both_workers(client)


# --- a9a in 2, 4, 8 shards: subBFGS and subLBFGS --------------------------------------------
QN_METHODS = ["subbfgs", "sublbfgs"]


@pytest.fixture(scope="module")
def a9a_qn_runs(a9a):
    X, y = a9a
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), 1e-4)
    return J, {m: nsopt.minimize(J, method=m, rtol=0.0, max_iter=15) for m in QN_METHODS}


@pytest.mark.slow
@pytest.mark.parametrize("n_shards", [2, 4, 8])
def test_a9a_quasi_newton_iterates_equal_one_machine(client, a9a_qn_runs, n_shards):
    """a9a hinge, lam = 1e-4, 15 iterations, ordered reduction: every iterate's value and the
    last point equal the one-machine run's to 1e-10 relative (measured: bitwise). With the
    parallel sums they differ by 1e-4 from the third iterate on (the path's kinks amplify the
    subgradient's last bit), which the first parallel run here checks still happens, so this
    test keeps testing the reduction."""
    J, refs = a9a_qn_runs
    Js = nd.shard(J, n_shards=n_shards, client=client)
    if n_shards == 2:
        res = nsopt.minimize(Js, method="subbfgs", rtol=0.0, max_iter=5)
        assert _rel(res.history["fun"], refs["subbfgs"].history["fun"][:6]) > 1e-10
    Js.loss.reduction = "ordered"
    for method in QN_METHODS:
        ref = refs[method]
        res = nsopt.minimize(Js, method=method, rtol=0.0, max_iter=15)
        assert res.nit == ref.nit, method
        assert _rel(res.history["fun"], ref.history["fun"]) <= 1e-10, method
        assert _rel(res.x, ref.x) <= 1e-10, method
        assert res.certificate.check(Js) <= res.fun

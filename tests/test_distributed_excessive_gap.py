"""Excessive-gap on a sharded problem (issue 12), under a LocalCluster of 2 worker processes.

The sharded saddle form (:mod:`nsopt.distributed_saddle`) keeps the dual vector's blocks on
the shards: the run equals the one-machine run to 1e-10 relative (the blocks are bitwise the
one-machine rows; only the sums over shards round differently), its certificate is a
:class:`~nsopt.distributed_saddle.ShardedSaddlePoint` that ``check`` verifies on the shards
and rejects when tampered with, and ``methods_supporting`` lists the method exactly when
``minimize`` accepts it. The in-memory iterates are bitwise those before the change.
"""
import dataclasses
import gc
import pickle

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import nsopt  # noqa: E402
import nsopt.distributed as nd  # noqa: E402
from nsopt._linalg import spectral_norm_sq  # noqa: E402
from nsopt.certificate import CertificateError, SaddlePoint  # noqa: E402
from nsopt.distributed_saddle import ShardedSaddlePoint, ShardedVector  # noqa: E402
from nsopt.solvers import ExcessiveGap, ProblemNotSupported, methods_supporting  # noqa: E402

from test_distributed import client, wait_for_both_workers  # noqa: E402,F401  (a LocalCluster of 2 processes)

EG = "excessive-gap"


@pytest.fixture(scope="module")
def a9a_like():
    """Shaped like a9a (one-hot rows, 24% positive), small enough for CI."""
    return nsopt.datasets.make_sparse_binary(1500, 123, random_state=5)


def _risk(data, loss_cls=nsopt.losses.Hinge, lam=1e-3, **kw):
    X, y = data
    return nsopt.RegularizedRisk(loss_cls(X, y), nsopt.regularizers.L2(), lam, **kw)


def _rel(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)), initial=0.0))


def _same_run(res, ref, tol=1e-10):
    assert res.nit == ref.nit and res.status == ref.status
    for f in ("fun", "lower_bound", "gap", "mu", "lipschitz"):
        assert _rel(res.history[f], ref.history[f]) <= tol, f
    assert _rel(res.x, ref.x) <= tol
    assert res.fun == pytest.approx(ref.fun, rel=tol)
    assert res.lower_bound == pytest.approx(ref.lower_bound, rel=tol)


# ----------------------------------------------------------------------------------------
# in memory: bitwise unchanged
# ----------------------------------------------------------------------------------------
def test_in_memory_forms_have_no_sharded_helpers(a9a_like):
    form = nsopt.saddle.saddle_form(_risk(a9a_like).loss)
    assert form.vdot is None and form.evidence is None and form.norm_sq is None


# ----------------------------------------------------------------------------------------
# sharded: the same run
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_shards", [2, 4])
def test_sharded_iterates_equal_the_in_memory_run(client, a9a_like, n_shards):
    J = _risk(a9a_like)
    Js = nd.shard(J, n_shards=n_shards, client=client)
    ref = nsopt.minimize(J, method=EG, rtol=0.0, max_iter=60)
    before = Js.loss.traffic
    res = nsopt.minimize(Js, method=EG, rtol=0.0, max_iter=60)
    after = Js.loss.traffic
    _same_run(res, ref)
    assert res.info["n_backtracks"] == ref.info["n_backtracks"]
    # the driver never receives a per-example vector: per iteration at most a few d-vectors
    # per shard (oracle subgradient, two Z^T alpha) and O(1) numbers otherwise
    d, m = J.dim, J.loss.m
    per_iter = (after["bytes_in"] - before["bytes_in"]) / res.nit
    assert per_iter <= n_shards * (4 * 8 * d + 256)
    calls = (after["calls"] - before["calls"]) / res.nit
    assert calls <= 5 + 2 * res.info["n_backtracks"] / res.nit + 1  # docs: 5 round trips
    ev = res.certificate.evidence
    assert isinstance(ev, ShardedSaddlePoint)
    assert res.certificate.check(Js) == pytest.approx(ref.certificate.check(J), rel=1e-10)
    assert all(np.size(p) < m for p in ev.plane)


def test_fixed_schedule_on_shards(client, a9a_like):
    J = _risk(a9a_like)
    Js = nd.shard(J, n_shards=2, client=client)
    # the norm of Z from the shards' Gram matrices: the one-machine SVD's to rounding
    form_s, form = nsopt.saddle.saddle_form(Js.loss), nsopt.saddle.saddle_form(J.loss)
    ref_norm = spectral_norm_sq(form.matvec, form.rmatvec, np.shape(form.center), J.dim)
    assert form_s.norm_sq() == pytest.approx(ref_norm, rel=1e-11)
    assert form_s.norm_sq() >= ref_norm * (1 - 1e-13)
    # with the same L the fixed schedule runs the same iterates
    L = ref_norm / J.lam
    ref = nsopt.minimize(J, method=EG, rtol=0.0, max_iter=40, adaptive_lipschitz=False,
                         lipschitz=L)
    res = nsopt.minimize(Js, method=EG, rtol=0.0, max_iter=40, adaptive_lipschitz=False,
                         lipschitz=L)
    _same_run(res, ref)
    # and with L computed on each side, to the rounding of L
    ref = nsopt.minimize(J, method=EG, rtol=0.0, max_iter=40, adaptive_lipschitz=False)
    res = nsopt.minimize(Js, method=EG, rtol=0.0, max_iter=40, adaptive_lipschitz=False)
    _same_run(res, ref, tol=1e-9)


def test_multiclass_hinge_on_shards(client):
    data = nsopt.datasets.make_multiclass(300, 12, 4, random_state=1)
    J = _risk(data, nsopt.losses.MulticlassHinge, 1e-2)
    Js = nd.shard(J, n_shards=3, client=client)
    ref = nsopt.minimize(J, method=EG, rtol=0.0, max_iter=50)
    res = nsopt.minimize(Js, method=EG, rtol=0.0, max_iter=50)
    _same_run(res, ref)
    assert res.certificate.check(Js) == pytest.approx(ref.certificate.check(J), rel=1e-10)
    # the blocks gathered are the one-machine dual point (m x k), which proves the same bound
    plain = res.certificate.evidence.gather(Js)
    assert isinstance(plain, SaddlePoint) and plain.alpha.shape == (300, 4)
    cert = dataclasses.replace(res.certificate, evidence=plain,
                               fingerprint=ref.certificate.fingerprint)
    assert cert.check(J) == pytest.approx(res.lower_bound, rel=1e-9)


# ----------------------------------------------------------------------------------------
# the certificate: success, checked on the workers, tampering rejected
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def solved(client, a9a_like):
    J = _risk(a9a_like, lam=1e-2)
    Js = nd.shard(J, n_shards=2, client=client)
    res = nsopt.minimize(Js, method=EG, rtol=1e-4, max_iter=2000)
    return J, Js, res


def test_success_with_a_certificate_checked_on_the_shards(solved):
    J, Js, res = solved
    assert res.success and res.gap <= 1e-4 * abs(res.fun)
    assert res.certificate.source == "excessive-gap"
    bound = res.certificate.check(Js)
    assert res.lower_bound * (1 - 1e-9) <= bound <= res.fun
    # the in-memory problem's optimum lies in the proven bracket
    ref = nsopt.minimize(J, method="bmrm", rtol=1e-8)
    assert res.lower_bound - 1e-9 <= ref.fun and ref.lower_bound <= res.fun + 1e-9
    # the blocks are points of Q (hinge: the box [0, c]) whose plane is the claimed one
    ev = res.certificate.evidence
    alpha = ev.gather(Js).alpha
    c = J.loss.c
    assert np.all(alpha >= 0) and np.all(alpha <= c * (1 + 1e-12))
    X, y = J.loss.data.X, J.loss.y
    np.testing.assert_allclose(-(X.T @ (y * alpha)), ev.plane[0], rtol=1e-10, atol=1e-14)
    assert float(alpha.sum()) == pytest.approx(ev.plane[1], rel=1e-12)


def _tampered(res, Js, block):
    """The certificate with its shard-1 block replaced by ``block`` (under a new key)."""
    ev = res.certificate.evidence
    key = ev.key + "-forged"
    for k, s in enumerate(Js.loss._shards):
        original = s.actor.saddle_get(ev.key).result()
        s.actor.saddle_put(key, block(original) if k == 1 else original).result()
    return dataclasses.replace(res.certificate,
                               evidence=dataclasses.replace(ev, key=key, handle=None))


def test_check_rejects_a_tampered_block(solved):
    J, Js, res = solved
    # outside Q (the box [0, c_i]): named by its shard
    with pytest.raises(CertificateError, match="shard 1.*outside"):
        _tampered(res, Js, lambda a: a + 1.0).check(Js)
    with pytest.raises(CertificateError, match="shard 1.*non-finite"):
        _tampered(res, Js, lambda a: np.where(np.arange(a.size) == 0, np.nan, a)).check(Js)
    with pytest.raises(CertificateError, match="shard 1.*shape"):
        _tampered(res, Js, lambda a: a[:-1]).check(Js)
    # another point of Q: well formed, but it does not prove the claimed bound
    with pytest.raises(CertificateError):
        _tampered(res, Js, np.zeros_like).check(Js)
    # a block that is not there (its worker lost it): named, never a KeyboardInterrupt
    gone = dataclasses.replace(res.certificate, evidence=dataclasses.replace(
        res.certificate.evidence, key="no-such-block", handle=None))
    with pytest.raises(CertificateError, match="shard 0.*gone"):
        gone.check(Js)
    # other data
    wrong = dataclasses.replace(res.certificate, evidence=dataclasses.replace(
        res.certificate.evidence, digests=("0" * 32,) + res.certificate.evidence.digests[1:]))
    with pytest.raises(CertificateError, match="shard 0.*digest"):
        wrong.check(Js)
    # the original still checks
    assert res.certificate.check(Js) >= res.lower_bound * (1 - 1e-9)


def test_sharded_evidence_needs_the_sharded_problem(solved):
    J, Js, res = solved
    with pytest.raises(CertificateError):
        res.certificate.evidence.verify(J)
    # pickles without its handle (the client does not travel)
    ev = pickle.loads(pickle.dumps(res.certificate.evidence))
    assert ev.key == res.certificate.evidence.key and ev.handle is None


# ----------------------------------------------------------------------------------------
# the driver's side: handles, drops, supported problems
# ----------------------------------------------------------------------------------------
def test_dual_vectors_stay_on_the_workers_and_are_dropped(client, a9a_like):
    J = _risk(a9a_like)
    Js = nd.shard(J, n_shards=2, client=client)
    states = list(ExcessiveGap(rtol=0.0, max_iter=3).iterate(Js))
    alpha = states[-1].alpha
    assert isinstance(alpha, ShardedVector) and alpha.shape == (J.loss.m,)
    # the blocks are the one-machine dual iterate and residual (sums over shards round apart)
    mem = list(ExcessiveGap(rtol=0.0, max_iter=3).iterate(J))[-1]
    assert _rel(alpha.gather(), mem.alpha) <= 1e-12
    assert _rel(states[-1].residual.gather(), mem.residual) <= 1e-12
    with pytest.raises(TypeError, match="gather"):
        np.asarray(alpha)
    with pytest.raises(TypeError):
        alpha + np.zeros(J.loss.m)
    del states, alpha
    n_iter = 60
    for _ in range(2):
        res = nsopt.minimize(Js, method=EG, rtol=0.0, max_iter=n_iter)
    gc.collect()  # the run's generator frames are cycles: their blocks go with the collector
    nsopt.minimize(Js, method=EG, rtol=0.0, max_iter=1)  # drops what the runs let go
    counts = [s.actor.saddle_count().result() for s in Js.loss._shards]
    # a run makes ~17 blocks an iteration (two shards x 2 runs x 60 x 17 without drops);
    # what stays is the last certificate's and a run's live handles, fewer than the iterations
    assert max(counts) < 40 < n_iter, counts
    assert res.certificate.check(Js) > 0


def test_methods_supporting_agrees_with_minimize_on_shards(client, a9a_like):
    data_mc = nsopt.datasets.make_multiclass(120, 8, 3, random_state=0)
    problems = {
        "hinge": nd.shard(_risk(a9a_like), n_shards=2, client=client),
        "multiclass": nd.shard(_risk(data_mc, nsopt.losses.MulticlassHinge), n_shards=2,
                               client=client),
        "logistic": nd.shard(_risk(a9a_like, nsopt.losses.Logistic), n_shards=2, client=client),
        "intercept": nd.shard(_risk(a9a_like, fit_intercept=True), n_shards=2, client=client),
        "l1": nd.shard(nsopt.RegularizedRisk(nsopt.losses.Hinge(*a9a_like),
                                             nsopt.regularizers.L1(), 1e-3),
                       n_shards=2, client=client),
    }
    listed = {}
    for name, Js in problems.items():
        listed[name] = EG in methods_supporting(Js)
        try:
            nsopt.minimize(Js, method=EG, max_iter=1)
            accepted = True
        except ProblemNotSupported as exc:
            accepted = False
            if name == "intercept":
                assert "intercept" in str(exc) and "bmrm" in str(exc)
            if name == "logistic":
                assert "Logistic" in str(exc) and "no saddle form" in str(exc)
        assert listed[name] == accepted, name
    assert listed == {"hinge": True, "multiclass": True, "logistic": False,
                      "intercept": False, "l1": False}


def test_a_lost_dual_block_interrupts_the_run_never_a_wrong_certificate(client, a9a_like):
    """A block gone from the shards (as after a worker's loss: the rebuilt shard has the data,
    not the dual iterate) stops the run with status ``interrupted`` and its best point; the
    certificate then checks to a valid bound, or fails naming the shard."""
    J = _risk(a9a_like)
    Js = nd.shard(J, n_shards=2, client=client)

    def lose_alpha(state):
        if state.iteration == 3:  # the shards drop alpha_3 with the next call
            Js.loss._saddle_dead.append(state.alpha.key)

    res = nsopt.minimize(Js, method=EG, rtol=0.0, max_iter=20, callback=lose_alpha)
    assert res.status == nsopt.Status.INTERRUPTED and not res.success
    assert res.nit == 3
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)
    try:
        bound = res.certificate.check(Js)
    except CertificateError as exc:
        assert "shard 0" in str(exc) and "gone" in str(exc)
    else:
        assert bound <= res.fun


# ----------------------------------------------------------------------------------------
# the ordered reduction: bitwise the one-machine run; a worker killed mid-run
# ----------------------------------------------------------------------------------------
def test_ordered_reduction_is_bitwise_and_a_killed_worker_interrupts(client, a9a_like):
    r"""With ``reduction="ordered"`` the solver's sums over shards (:math:`Z^T\alpha`,
    :math:`\langle\alpha, \beta\rangle`, the oracle) continue the one-machine pass shard after
    shard: every iterate, bound and step is the in-memory run's to the last bit (the
    parallel sums differ by ~1e-13 here); an ordered reduction costs P round trips, not 1.

    Then a worker killed (SIGKILL, ``kill_at_iteration``) at iteration 3: its shard is
    rebuilt from the data, but not the dual iterate kept there, which cannot be replayed.
    The run stops with status ``interrupted``, its best point valued correctly, and a
    certificate that checks to a valid bound or fails naming a shard: never a wrong one."""
    from test_distributed import kill_at_iteration

    J = _risk(a9a_like)
    ref = nsopt.minimize(J, method=EG, rtol=0.0, max_iter=10)
    Js = nd.shard(J, n_shards=2, client=client)
    Js.loss.reduction = "ordered"
    form = nsopt.saddle.saddle_form(Js.loss)
    assert form.vdot is not None and Js.loss._map("saddle_vector_chainable") == [True] * 2
    before = Js.loss.traffic["calls"]
    res = nsopt.minimize(Js, method=EG, rtol=0.0, max_iter=10)
    calls = Js.loss.traffic["calls"] - before
    assert res.nit == ref.nit and res.status == ref.status
    np.testing.assert_array_equal(res.x, ref.x)
    for f in ("fun", "lower_bound", "gap", "mu", "lipschitz"):
        np.testing.assert_array_equal(res.history[f], ref.history[f], err_msg=f)
    assert res.info["n_backtracks"] == ref.info["n_backtracks"]
    # the check sums the shards' planes in parallel (to rounding)
    assert res.certificate.check(Js) == pytest.approx(ref.certificate.check(J), rel=1e-12)
    # 5 reductions an iteration (+2 a backtrack), each 2 round trips; the start's few
    assert calls <= 2 * (5 * res.nit + 2 * res.info["n_backtracks"]) + 20

    res = nsopt.minimize(Js, method=EG, rtol=0.0, max_iter=20,
                         callback=kill_at_iteration(client, 3))
    wait_for_both_workers(client)
    assert Js.loss.n_rebuilds >= 1
    assert res.status == nsopt.Status.INTERRUPTED and not res.success
    assert 3 <= res.nit < 20
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)
    assert res.fun <= J.value(np.zeros(J.dim))
    try:
        bound = res.certificate.check(Js)
    except CertificateError as exc:
        assert "shard" in str(exc)
    else:
        assert bound <= res.fun
        assert bound <= J.value(ref.x)  # a lower bound of J: below its value anywhere

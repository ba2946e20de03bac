"""nsopt.distributed under a LocalCluster of 2 worker processes (issue 12).

What is checked: the sharded function equals the in-memory one; solvers whose path is stable
under rounding give the one-machine iterates to 1e-10 (see docs/distributed.md for the others);
every certificate passes ``check`` on the sharded problem; a worker killed mid-run; bad input
on one shard names the shard and the line.
"""
import lzma
import os
import signal

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import nsopt  # noqa: E402
import nsopt.distributed as nd  # noqa: E402


#: how long a test waits for a killed worker's nanny to start it again (a new Python process
#: importing numpy, numba and nsopt: seconds when idle, a minute was exceeded once at load 10)
RESPAWN_SECONDS = 180


def wait_for_both_workers(client):
    """Block until the cluster has its 2 workers again (after a test killed one)."""
    client.wait_for_workers(2, timeout=RESPAWN_SECONDS)


#: Dask settings of the test clusters.
#: - ``comm.timeouts.connect``: after a kill, the call that failed asks every shard's actor for
#:   a ping, and a call to the killed worker's address is retried on its refused connection
#:   until this timeout (30 s by default; ``distributed.comm.core.connect``): each kill test
#:   waited 30 s before the shard counted as lost. 5 s, as Dask's own cluster tests
#:   (``distributed.utils_test.config_for_cluster_tests``). Read when a connection is made, so
#:   it must be set while the test runs (the in-process scheduler relays the actors' calls).
#: - ``multiprocessing-method``: a worker process (at the cluster's start, and the nanny's
#:   restart after each kill) is forked from a server that has imported nsopt once
#:   (:func:`preload_nsopt`) instead of a new interpreter importing numpy, numba and nsopt
#:   (seconds each under load), as Dask's own test suite does for its own imports.
TEST_CONFIG = {"distributed.comm.timeouts.connect": "5s",
               "distributed.worker.multiprocessing-method": "forkserver"}


def preload_nsopt():
    """Have the fork server of the test clusters' workers import nsopt before it forks one.

    Dask's :func:`distributed.utils.get_mp_context` sets the fork server's preload list once
    (its own dependencies); nsopt's modules are added after it, before the server starts (a
    server already running keeps its list)."""
    import multiprocessing

    from distributed.utils import get_mp_context

    with dask.config.set(TEST_CONFIG):
        get_mp_context()
    multiprocessing.get_context("forkserver").set_forkserver_preload(
        ["distributed", "numpy", "scipy.sparse", "numba", "nsopt", "nsopt.distributed"])


@pytest.fixture(scope="module")
def client():
    preload_nsopt()
    with dask.config.set(TEST_CONFIG):
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           dashboard_address=None)
        c = distributed.Client(cluster)
        yield c
        c.close()
        cluster.close()


@pytest.fixture(scope="module")
def data():
    return nsopt.datasets.make_sparse_binary(400, 30, random_state=0)


def _risk(loss_cls, data, lam=1e-3, **kw):
    X, y = data
    if loss_cls is nsopt.losses.LeastSquares:
        y = X @ np.linspace(-1, 1, X.shape[1]) + 0.1 * np.sign(y)
    return nsopt.RegularizedRisk(loss_cls(X, y, **kw), nsopt.regularizers.L2(), lam)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


LOSSES = [nsopt.losses.Hinge, nsopt.losses.Logistic, nsopt.losses.SquaredHinge,
          nsopt.losses.LeastSquares]


@pytest.mark.parametrize("loss_cls", LOSSES)
def test_oracle_answers_match_in_memory(client, data, loss_cls):
    J = _risk(loss_cls, data)
    Js = nd.shard(J, n_shards=3, client=client)
    assert Js.loss.n_shards == 3 and Js.loss.m == J.loss.m
    rng = np.random.default_rng(1)
    w, p = rng.normal(size=J.dim), rng.normal(size=J.dim)
    f, g = J.value_and_subgradient(w)
    fs, gs = Js.value_and_subgradient(w)
    assert fs == pytest.approx(f, rel=1e-13)
    assert _rel(gs, g) <= 1e-13
    s, _ = J.sup_subgradient(w, p)
    ss, _ = Js.sup_subgradient(w, p)
    assert ss == pytest.approx(s, rel=1e-12, abs=1e-14)
    line, lines = J.restrict(w, p), Js.restrict(w, p)
    for eta in (0.0, 0.3, 2.0):
        assert lines.value(eta) == pytest.approx(line.value(eta), rel=1e-13)
        for side in (1, -1):
            assert lines.derivative(eta, side) == pytest.approx(line.derivative(eta, side),
                                                                rel=1e-12, abs=1e-14)
    assert lines.minimize() == pytest.approx(line.minimize(), rel=1e-10, abs=1e-14)


# (method, options, losses) whose path is stable under rounding: the master solved to rounding
# (inner_rtol=0) for the cutting-plane methods; subLBFGS on a smooth loss. With the default
# inner_rtol the one-machine runs themselves move by 1e-2 under rounding (dense vs sparse X).
STABLE = [
    ("bmrm", dict(inner_rtol=0.0), nsopt.losses.Hinge),
    ("ls-bmrm", dict(inner_rtol=0.0), nsopt.losses.Hinge),
    ("proximal-bundle", {}, nsopt.losses.Hinge),
    ("proximal-bundle", {}, nsopt.losses.LeastSquares),
    ("sublbfgs", {}, nsopt.losses.Logistic),
    ("bmrm", dict(inner_rtol=0.0), nsopt.losses.SquaredHinge),
]


@pytest.mark.parametrize("n_shards", [2, 4])
@pytest.mark.parametrize("method,options,loss_cls", STABLE)
def test_iterates_equal_one_machine_and_certificate_checks(client, data, method, options,
                                                           loss_cls, n_shards):
    J = _risk(loss_cls, data)
    Js = nd.shard(J, n_shards=n_shards, client=client)
    ref = nsopt.minimize(J, method=method, rtol=0.0, max_iter=25, **options)
    res = nsopt.minimize(Js, method=method, rtol=0.0, max_iter=25, **options)
    assert res.nit == ref.nit
    assert _rel(res.history["fun"], ref.history["fun"]) <= 1e-10
    assert _rel(res.x, ref.x) <= 1e-10
    bound = res.certificate.check(Js)
    assert bound <= res.fun
    assert bound >= res.lower_bound - 1e-9 * max(1.0, abs(res.lower_bound))


def test_one_model_per_shard(client, data):
    """proximal-bundle with n_models = n_shards: one cutting-plane model per shard, the same
    groups as the one-machine run's."""
    J = _risk(nsopt.losses.Hinge, data)
    Js = nd.shard(J, n_shards=4, client=client)
    ref = nsopt.minimize(J, method="proximal-bundle", n_models=4, rtol=0.0, max_iter=20)
    res = nsopt.minimize(Js, method="proximal-bundle", n_models=4, rtol=0.0, max_iter=20)
    assert _rel(res.x, ref.x) <= 1e-10
    res.certificate.check(Js)
    with pytest.raises(ValueError, match="n_models=4"):
        Js.loss.group_value_and_subgradients(np.zeros(J.dim), 3)


def test_converged_certificate_is_proven(client, data):
    J = _risk(nsopt.losses.Hinge, data)
    Js = nd.shard(J, n_shards=2, client=client)
    res = nsopt.minimize(Js, method="bmrm", rtol=1e-4)
    assert res.success
    assert res.certificate.check(Js) >= res.fun - 1e-4 * res.fun - 1e-12
    # the certificate belongs to the sharded data: another problem is refused
    other = nd.shard(_risk(nsopt.losses.Hinge, data, lam=2e-3), n_shards=2, client=client)
    with pytest.raises(nsopt.certificate.CertificateError):
        res.certificate.check(other)
    X, y = data
    flipped = nd.shard(nsopt.RegularizedRisk(nsopt.losses.Hinge(X, -y), lam=1e-3),
                       n_shards=2, client=client)
    with pytest.raises(nsopt.certificate.CertificateError, match="fingerprint"):
        res.certificate.check(flipped)


def _kill_one_worker(client):
    pids = client.run(os.getpid)
    addr = sorted(pids)[0]
    os.kill(pids[addr], signal.SIGKILL)


def kill_at_iteration(client, k):
    """A callback that kills one worker (SIGKILL) when called the (k + 1)-th time."""
    seen = []

    def kill(state):
        if len(seen) == k:
            _kill_one_worker(client)
        seen.append(1)
    return kill


def test_worker_killed_mid_run_is_rebuilt(client, data):
    """A worker killed (SIGKILL) at iteration 5: its shards are scattered again from the
    in-memory problem and the run goes on to the same iterates and a certificate that checks."""
    J = _risk(nsopt.losses.Hinge, data)
    Js = nd.shard(J, n_shards=4, client=client)
    ref = nsopt.minimize(J, method="proximal-bundle", rtol=0.0, max_iter=15)

    kill = kill_at_iteration(client, 4)

    res = nsopt.minimize(Js, method="proximal-bundle", rtol=0.0, max_iter=15, callback=kill)
    assert Js.loss.n_rebuilds >= 1
    assert res.nit == ref.nit
    assert _rel(res.x, ref.x) <= 1e-10
    res.certificate.check(Js)
    wait_for_both_workers(client)


def test_worker_killed_without_source_stops_interrupted(client, data):
    """Without a source to rebuild from (rebuild=False) the run stops with status interrupted,
    the best point so far and a certificate that still checks (on a problem rebuilt from
    the same data)."""
    J = _risk(nsopt.losses.Hinge, data)
    Js = nd.shard(J, n_shards=2, client=client, rebuild=False)

    kill = kill_at_iteration(client, 4)

    res = nsopt.minimize(Js, method="bmrm", rtol=0.0, max_iter=30, callback=kill)
    assert res.status == nsopt.Status.INTERRUPTED
    assert 4 <= res.nit < 30
    wait_for_both_workers(client)
    fresh = nd.shard(J, n_shards=2, client=client)
    assert res.certificate.check(fresh) <= res.fun
    assert fresh.value(res.x) == pytest.approx(res.fun, rel=1e-12)


class _CountedPings:
    """An actor handle whose pings are counted and answered "alive" without a call."""

    def __init__(self, actor, pings):
        self._actor, self._pings = actor, pings

    def __getattr__(self, name):
        if name == "ping":
            def ping(**kw):
                self._pings.append(kw)
                return self._actor.info()  # a future answering something true
            return ping
        return getattr(self._actor, name)


def test_worker_gone_from_the_scheduler_is_not_pinged(client, data, monkeypatch):
    """After a failed call, a shard whose worker the scheduler no longer lists is rebuilt
    without a ping (a ping to a killed worker's address waits Dask's connect timeout, 30 s by
    default); a listed shard is pinged (on its worker's event loop) and kept. The rebuilt
    shard answers the same numbers."""
    J = _risk(nsopt.losses.Hinge, data)
    Js = nd.shard(J, n_shards=2, client=client)
    loss = Js.loss
    w = np.linspace(-1.0, 1.0, J.dim)
    before = loss._value_and_subgradient(w)
    info = client.scheduler_info()
    gone = loss._shards[0].actor._address
    listed = {**info, "workers": {a: v for a, v in info["workers"].items() if a != gone}}
    pings = []
    loss._shards[0].actor = _CountedPings(loss._shards[0].actor, pings)
    with monkeypatch.context() as mp:
        mp.setattr(client, "scheduler_info", lambda *a, **k: listed)
        assert loss._rebuild_lost() is True
    # shard 1, listed, was pinged for real and found alive: only shard 0 was rebuilt
    assert pings == [] and loss.n_rebuilds == 1
    assert not isinstance(loss._shards[0].actor, _CountedPings)  # the rebuilt one
    after = loss._value_and_subgradient(w)
    assert after[0] == before[0] and np.array_equal(after[1], before[1])


def test_nan_in_one_shard_names_it(client, data):
    X, y = data
    X = X.toarray()
    X[250, 3] = np.nan
    loss = nsopt.losses.Hinge(np.zeros_like(X), y)
    loss.data = nsopt.losses._kernels.DataMatrix(X)  # in memory, the constructor refuses NaN
    with pytest.raises(nd.ShardError, match=r"shard 2 \(rows 200:300\): row 50"):
        nd.shard(nsopt.RegularizedRisk(loss, lam=1e-3), n_shards=4, client=client)


def _write(path, X, y):
    nsopt.io.dump_svmlight(X, y, str(path))
    return str(path)


def test_load_svmlight_equals_one_file(client, data, tmp_path):
    X, y = data
    paths = [_write(tmp_path / "a.svm", X[:150], y[:150]),
             _write(tmp_path / "b.svm", X[150:], y[150:])]
    whole = _write(tmp_path / "all.svm", X, y)
    Xw, yw = nsopt.io.load_svmlight(whole)
    J = nsopt.RegularizedRisk(nsopt.losses.Logistic(Xw, yw), lam=1e-3)
    Js = nd.load_svmlight(paths, loss="Logistic", lam=1e-3, client=client)
    assert Js.dim == J.dim and Js.loss.m == J.loss.m
    assert list(Js.loss.bounds) == [0, 150, 400]
    ref = nsopt.minimize(J, method="sublbfgs", rtol=0.0, max_iter=20)
    res = nsopt.minimize(Js, method="sublbfgs", rtol=0.0, max_iter=20)
    assert _rel(res.x, ref.x) <= 1e-10
    res.certificate.check(Js)


def test_load_svmlight_byte_ranges_equal_one_file(client, data, tmp_path):
    """n_shards byte ranges of one file (and of two files, shared by size) parsed on the
    workers: the same examples in the same order as one load, a bad line named by its line
    number in the file, and the refusals."""
    X, y = data
    whole = _write(tmp_path / "all.svm", X, y)
    Xw, yw = nsopt.io.load_svmlight(whole)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(Xw, yw), lam=1e-3)
    w = np.random.default_rng(4).normal(size=J.dim)
    Js = nd.load_svmlight(whole, lam=1e-3, client=client, n_shards=3)
    assert Js.loss.n_shards == 3 and Js.loss.m == 400 and Js.dim == J.dim
    assert "bytes" in Js.loss._shards[1].source
    actor, info = Js.loss._shards[1].rebuild()  # what a lost shard is rebuilt from: its range
    assert info["digest"] == Js.loss._shards[1].digest and info["m"] == Js.loss._shards[1].m
    assert Js.value(w) == pytest.approx(J.value(w), rel=1e-13)
    assert _rel(Js.subgradient(w), J.subgradient(w)) <= 1e-13
    a = _write(tmp_path / "a.svm", X[:300], y[:300])  # 3/4 of the bytes: two ranges
    b = _write(tmp_path / "b.svm", X[300:], y[300:])
    Js = nd.load_svmlight([a, b], lam=1e-3, client=client, n_shards=3)
    assert [s.source.split(",")[0] for s in Js.loss._shards] == [a, a, b]
    assert list(Js.loss.bounds)[-1] == 400 and list(Js.loss.bounds)[2] == 300
    assert _rel(Js.subgradient(w), J.subgradient(w)) <= 1e-13
    bad = tmp_path / "bad.svm"
    bad.write_text("".join(f"+1 1:{i}\n" for i in range(30)).replace("1:24\n", "1:abc\n"))
    with pytest.raises(nd.ShardError, match=r"shard 2 \(.*bad\.svm, bytes \d+-\d+\), "
                                            r"line 25") as info:
        nd.load_svmlight(str(bad), client=client, n_shards=3)
    assert info.value.shard == 2 and info.value.lineno == 25
    tiny = tmp_path / "tiny.svm"
    tiny.write_text("+1 1:1\n-1 1:2\n")  # 14 bytes, 3 ranges: [9, 14) starts no line
    with pytest.raises(nd.ShardError, match=r"shard 2 .*no line starts in this byte range"):
        nd.load_svmlight(str(tiny), client=client, n_shards=3)
    xz = tmp_path / "all.svm.xz"
    xz.write_bytes(lzma.compress((tmp_path / "all.svm").read_bytes()))
    with pytest.raises(ValueError, match=r"all\.svm\.xz, which is compressed"):
        nd.load_svmlight(str(xz), client=client, n_shards=2)
    with pytest.raises(ValueError, match=r"at least the number of files \(2\), got 1"):
        nd.load_svmlight([a, b], client=client, n_shards=1)


def test_load_svmlight_agrees_on_n_features(client, tmp_path):
    X = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 0, 2.0]])
    y = np.array([1.0, -1.0, 1.0])
    a = _write(tmp_path / "a.svm", X[:2, :2], y[:2])   # this file knows only 2 features
    b = _write(tmp_path / "b.svm", X[2:], y[2:])
    Js = nd.load_svmlight([a, b], loss=nsopt.losses.Hinge, lam=1e-2, client=client)
    assert Js.dim == 4
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    w = np.array([0.5, -1.0, 2.0, 0.25])
    assert Js.value(w) == pytest.approx(J.value(w), rel=1e-14)


def test_bad_svmlight_line_names_shard_file_and_line(client, data, tmp_path):
    X, y = data
    good = _write(tmp_path / "good.svm", X[:10], y[:10])
    bad = tmp_path / "bad.svm"
    bad.write_text("+1 1:0.5 3:1\n-1 2:0.25\n+1 4:abc\n")
    with pytest.raises(nd.ShardError, match=r"shard 1 \(.*bad\.svm\), line 3") as info:
        nd.load_svmlight([good, str(bad)], client=client)
    assert info.value.shard == 1 and info.value.lineno == 3
    nan = tmp_path / "nan.svm"
    nan.write_text("+1 1:0.5\n-1 2:nan\n")
    with pytest.raises(nd.ShardError, match=r"shard 0 \(.*nan\.svm\), line 2"):
        nd.load_svmlight([str(nan), good], client=client)
    labels = tmp_path / "labels.svm"
    labels.write_text("+1 1:0.5\n2 2:1\n")
    with pytest.raises(nd.ShardError, match=r"shard 1 \(.*labels\.svm\)"):
        nd.load_svmlight([good, str(labels)], loss="Hinge", client=client)


def test_from_builders_weights_shards_by_their_examples(client, data):
    """Shards built on the workers by callables: the mean over all examples, whatever the
    shards' sizes; a builder that returns no loss is refused naming its shard."""
    import functools

    X, y = data
    builders = [functools.partial(nsopt.losses.Logistic, X[:100], y[:100]),
                functools.partial(nsopt.losses.Logistic, X[100:], y[100:])]
    Js = nd.from_builders(builders, lam=1e-3, client=client)
    J = _risk(nsopt.losses.Logistic, data)
    w = np.random.default_rng(3).normal(size=J.dim)
    assert Js.value(w) == pytest.approx(J.value(w), rel=1e-13)
    assert _rel(Js.subgradient(w), J.subgradient(w)) <= 1e-13
    with pytest.raises(nd.ShardError, match="shard 1 .*not a scalar loss"):
        nd.from_builders([builders[0], functools.partial(np.zeros, 3)], client=client)


def test_arguments_are_checked(client, data):
    J = _risk(nsopt.losses.Hinge, data)
    with pytest.raises(ValueError, match="n_shards must be in 1 .. 400"):
        nd.shard(J, n_shards=401, client=client)
    with pytest.raises(TypeError, match="n_shards must be an integer"):
        nd.shard(J, n_shards=2.0, client=client)
    with pytest.raises(TypeError, match="RegularizedRisk"):
        nd.shard(J.loss, client=client)
    with pytest.raises(TypeError, match="scalar loss"):
        nd.load_svmlight(["x.svm"], loss=nsopt.losses.MulticlassHinge, client=client)


# the cutting-plane methods with the master solved to rounding: their paths are stable under
# rounding (ls-bmrm, which also needs the ordered reduction on a9a, is tested with both
# breakpoint searches in test_distributed_evidence.py), and excessive-gap (its dual blocks
# stay on the shards; its sums over shards are parallel: within 1e-10 over these 30 steps)
A9A_METHODS = [("bmrm", dict(inner_rtol=0.0)), ("proximal-bundle", {}),
               ("kbundle", dict(inner_rtol=0.0)), ("excessive-gap", {})]


@pytest.fixture(scope="module")
def a9a_runs(a9a):
    X, y = a9a
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), 1e-4)
    refs = {m: nsopt.minimize(J, method=m, rtol=0.0, max_iter=30, **o) for m, o in A9A_METHODS}
    return J, refs


@pytest.mark.slow
@pytest.mark.parametrize("n_shards", [2, 4, 8])
def test_a9a_iterates_equal_one_machine(client, a9a_runs, n_shards):
    """a9a in 2, 4, 8 shards, values summed in the one-machine order: every iterate's value
    and the last point equal the one-machine run's to 1e-10 relative."""
    J, refs = a9a_runs
    Js = nd.shard(J, n_shards=n_shards, client=client)
    Js.loss.reduction = "ordered"
    for method, options in A9A_METHODS:
        ref = refs[method]
        res = nsopt.minimize(Js, method=method, rtol=0.0, max_iter=30, **options)
        assert res.nit == ref.nit, method
        assert _rel(np.asarray(res.history["fun"]), np.asarray(ref.history["fun"])) <= 1e-10
        assert _rel(res.x, ref.x) <= 1e-10, method
        assert res.certificate.check(Js) <= res.fun


@pytest.mark.parametrize("loss_cls", LOSSES)
def test_ordered_reduction_gives_the_one_machine_values_bitwise(client, data, loss_cls):
    """With reduction="ordered" each shard continues the running sum of the shards before it,
    so the loss value (oracle, value-and-subgradient, line) is the one-machine kernel's to
    the last bit, at w = 0 (m equal terms: the sum's rounding is largest) and elsewhere; the
    parallel sum is not, at w = 0."""
    J = _risk(loss_cls, data)
    Js = nd.shard(J, n_shards=3, client=client)
    rng = np.random.default_rng(5)
    points = [np.zeros(J.dim), rng.normal(size=J.dim), 0.1 * rng.normal(size=J.dim)]
    Js.loss.reduction = "ordered"
    for w in points:
        assert Js.value(w) == J.value(w)
        f, g = Js.value_and_subgradient(w)
        f1, g1 = J.value_and_subgradient(w)
        assert f == f1 and _rel(g, g1) <= 1e-13
        p = rng.normal(size=J.dim)
        line, lines = J.restrict(w, p), Js.restrict(w, p)
        for eta in (0.0, 0.37, 1.5):
            assert lines.value(eta) == line.value(eta)
    # P - 1 more round trips per value, one float each way
    before = Js.loss.traffic
    Js.value(points[1])
    assert Js.loss.traffic["calls"] - before["calls"] == 3
    Js.loss.reduction = "parallel"
    before = Js.loss.traffic
    Js.value(points[1])
    assert Js.loss.traffic["calls"] - before["calls"] == 1
    with pytest.raises(ValueError, match="reduction must be 'parallel' or 'ordered'"):
        Js.loss.reduction = "tree"


def test_ordered_sum_of_many_equal_terms_differs_from_the_parallel_one(client):
    """The case that moved ls-bmrm's a9a path: at w = 0 the hinge's m terms are all 1/m; the
    one-machine running sum and the sum of shard sums round differently (checked here, on a
    size where they do), the ordered sum does not."""
    m = 32561
    X = np.zeros((m, 1))
    X[:, 0] = 1.0
    y = np.where(np.arange(m) % 4 == 0, 1.0, -1.0)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    Js = nd.shard(J, n_shards=2, client=client)
    w = np.zeros(1)
    assert Js.value(w) != J.value(w)  # the shards' partial sums round otherwise
    Js.loss.reduction = "ordered"
    assert Js.value(w) == J.value(w)


@pytest.mark.parametrize("loss_cls", [nsopt.losses.MulticlassHinge, nsopt.losses.Softmax])
@pytest.mark.parametrize("method,options", [("bmrm", dict(inner_rtol=0.0)),
                                            ("proximal-bundle", {})])
def test_vector_losses_on_shards(client, loss_cls, method, options):
    """Multiclass losses (W d x k flattened) shard like scalar ones: the same function, the
    one-machine iterates, certificates that check."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(300, 3)), axis=1).astype(float)
    J = nsopt.RegularizedRisk(loss_cls(X, y, n_classes=3), nsopt.regularizers.L2(), 1e-2)
    Js = nd.shard(J, n_shards=3, client=client)
    assert Js.dim == J.dim == 18 and (Js.loss.n_features, Js.loss.n_outputs) == (6, 3)
    w = rng.normal(size=J.dim)
    assert Js.value(w) == pytest.approx(J.value(w), rel=1e-13)
    assert _rel(Js.subgradient(w), J.subgradient(w)) <= 1e-13
    ref = nsopt.minimize(J, method=method, rtol=0.0, max_iter=20, **options)
    res = nsopt.minimize(Js, method=method, rtol=0.0, max_iter=20, **options)
    assert res.nit == ref.nit and _rel(res.x, ref.x) <= 1e-10
    assert res.certificate.check(Js) <= res.fun


def test_builders_wait_for_a_worker_that_is_starting(data, monkeypatch):
    """A cluster with no worker running yet (starting, or restarting one after a loss): shard
    waits up to WORKER_WAIT_SECONDS for one (CI once caught a LocalCluster with none between
    two tests), and says so by name when none comes."""
    import threading

    X, y = data
    J = _risk(nsopt.losses.Hinge, data)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cl, \
            distributed.Client(cl) as c:
        monkeypatch.setattr(nd, "WORKER_WAIT_SECONDS", 0.3)
        with pytest.raises(ValueError, match="no workers.*WORKER_WAIT_SECONDS"):
            nd.shard(J, n_shards=2, client=c)
        monkeypatch.setattr(nd, "WORKER_WAIT_SECONDS", 60.0)
        timer = threading.Timer(0.5, cl.scale, args=(1,))
        timer.start()
        try:
            Js = nd.shard(J, n_shards=2, client=c)
            w = np.linspace(-1.0, 1.0, X.shape[1])
            assert Js.value(w) == pytest.approx(J.value(w), rel=1e-12)
        finally:
            timer.cancel()


def test_shard_placed_by_the_scheduler_when_its_worker_just_left(client, data):
    """A worker listed a moment ago and gone when its shard is scattered (the scheduler raises
    KeyError for it: seen after a kill in the previous test) does not fail ``shard``: the
    scheduler places that shard; a worker that is still there is not second-guessed."""
    J = _risk(nsopt.losses.Hinge, data)
    gone = "tcp://127.0.0.1:1"       # never a worker of this cluster
    actor = nd._scatter_shard(client, J.loss, 0, 0, 50, gone)
    assert actor.shape().result() == (50, J.loss.dim)
    with pytest.raises(KeyError):  # the scatter's own error when the worker is listed
        orig = client.scheduler_info

        def listed(*a, **k):
            info = orig(*a, **k)
            return {**info, "workers": {**info["workers"], gone: {}}}
        client.scheduler_info = listed
        try:
            nd._scatter_shard(client, J.loss, 0, 0, 50, gone)
        finally:
            del client.scheduler_info


def test_local_client_is_direct_quiet_and_survives_a_killed_worker(data):
    """The client nsopt starts itself (local_client) calls the shards' actors directly
    (direct_to_workers: a lost worker then shows as an OSError of the call, not a relayed
    error) with Dask's periodic work quieted in the worker processes; a worker killed
    (SIGKILL) mid-run is rebuilt on that path too, to the same iterates and a checked
    certificate. The actor's timing method answers (wall, cpu) seconds."""
    J = _risk(nsopt.losses.Hinge, data)
    ref = nsopt.minimize(J, method="proximal-bundle", rtol=0.0, max_iter=15)
    preload_nsopt()
    with dask.config.set(TEST_CONFIG):  # the driver's direct calls connect under it
        c = nd.local_client(2)
        try:
            assert c.direct_to_workers is True
            quiet = c.run(lambda: dask.config.get("distributed.worker.profile.enabled"))
            assert len(quiet) == 2 and not any(quiet.values())
            Js = nd.shard(J, n_shards=4, client=c)
            w = np.linspace(-1.0, 1.0, J.dim)
            timed = Js.loss._map("timed", "value_and_subgradient", w)
            assert len(timed) == 4 and all(0.0 <= s < 60.0 for pair in timed for s in pair)

            kill = kill_at_iteration(c, 4)

            res = nsopt.minimize(Js, method="proximal-bundle", rtol=0.0, max_iter=15, callback=kill)
            assert Js.loss.n_rebuilds >= 1
            assert res.nit == ref.nit
            assert _rel(res.x, ref.x) <= 1e-10
            res.certificate.check(Js)
        finally:
            c.close()
            c.cluster.close()

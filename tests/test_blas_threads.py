"""The BLAS-threads policy of a run (option ``blas_threads``, ``nsopt/_threads.py``).

The suite runs with ``OPENBLAS_NUM_THREADS=1`` (conftest), so each test first raises the
caller's setting to 2 threads with threadpoolctl and checks that it took: otherwise a limit
to one thread could not be told from the process's own setting.
"""
import math

import numpy as np
import pytest

import nsopt
from nsopt import _threads
from nsopt.solvers import SOLVERS, methods_supporting

threadpoolctl = pytest.importorskip("threadpoolctl")


# numpy's and scipy's BLAS (loaded by nsopt's import), the ones nsopt's arithmetic calls;
# not another package's bundled copy (SCS's OpenBLAS, loaded with cvxpy in the full suite,
# stays on one thread whatever it is asked)
BLAS_LIBRARIES = [lib for lib in threadpoolctl.ThreadpoolController().lib_controllers
                  if lib.user_api == "blas"
                  and any(p in str(lib.filepath) for p in ("numpy", "scipy.libs", "scipy/"))]


def blas_threads_now():
    """The thread counts of the loaded BLAS libraries, as threadpoolctl reads them."""
    return sorted({lib.get_num_threads() for lib in BLAS_LIBRARIES})


def take_blas_control():
    """threadpoolctl lets one Python thread at a time set OpenBLAS's shared pool (the first
    to set it, until it lets go): a thread an earlier test left alive with that control (a
    Dask worker's) would silence this test's limits. Hand control to nobody first (the
    documented reset, ``clear_controlling_thread(force=True)``)."""
    controller = getattr(threadpoolctl, "OpenBLASController", None)
    clear = getattr(controller, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


@pytest.fixture
def two_threads():
    """The caller's setting: BLAS on 2 threads (restored after the test)."""
    take_blas_control()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        if not BLAS_LIBRARIES or blas_threads_now() != [2]:
            pytest.skip("BLAS here cannot run on 2 threads")
        yield


def recording_oracle(seen, fail_at=None, exc=RuntimeError):
    """|x - 1|_1 as a FunctionOracle that records the BLAS threads of every call (and raises
    ``exc`` at call ``fail_at``)."""
    def vs(x):
        seen.append(tuple(blas_threads_now()))
        if fail_at is not None and len(seen) >= fail_at:
            raise exc("planted")
        return float(np.abs(x - 1.0).sum()), np.sign(x - 1.0)
    return nsopt.FunctionOracle(value_and_subgradient=vs, dim=3)


def small_risk():
    X, y = nsopt.datasets.make_sparse_binary(60, 5, random_state=0)
    return nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)


@pytest.mark.parametrize("method", ["proximal-bundle", "level-bundle"])
def test_auto_runs_the_oracle_on_one_thread_and_restores(two_threads, method):
    seen = []
    res = nsopt.minimize(recording_oracle(seen), method=method, x0=np.zeros(3),
                         bounds=(-5.0, 5.0), max_iter=15)
    assert res.nfev > 0 and len(seen) == res.nfev
    assert set(seen) == {(1,)}            # every oracle call of the run: one thread
    assert blas_threads_now() == [2]      # the caller's setting is back


def test_auto_holds_in_the_callback_of_a_risk(two_threads):
    seen = []
    res = nsopt.minimize(small_risk(), method="bmrm", max_iter=5,
                         callback=lambda s: seen.append(tuple(blas_threads_now())))
    assert res.nit > 0 and set(seen) == {(1,)}
    assert blas_threads_now() == [2]


@pytest.mark.parametrize("setting", ["keep", None])
def test_keep_leaves_the_setting_alone(two_threads, setting):
    seen = []
    res = nsopt.minimize(recording_oracle(seen), method="proximal-bundle", x0=np.zeros(3),
                         radius=10.0, max_iter=10, blas_threads=setting)
    assert res.nfev > 0 and set(seen) == {(2,)}
    assert blas_threads_now() == [2]


def test_an_integer_is_the_run_s_thread_count():
    seen = []
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        nsopt.minimize(recording_oracle(seen), method="proximal-bundle", x0=np.zeros(3),
                       radius=10.0, max_iter=5, blas_threads=2)
        after = blas_threads_now()
    if not seen or set(seen) != {(2,)}:
        pytest.skip("BLAS here cannot run on 2 threads")
    assert after == [1]


def test_restored_after_an_exception_in_the_oracle(two_threads):
    seen = []
    with pytest.raises(RuntimeError, match="planted"):
        nsopt.minimize(recording_oracle(seen, fail_at=3), method="proximal-bundle",
                       x0=np.zeros(3), radius=10.0, max_iter=20)
    assert seen[-1] == (1,) and blas_threads_now() == [2]


def test_restored_after_ctrl_c(two_threads, monkeypatch):
    # Ctrl-C in the oracle: the run returns its best point, status interrupted
    seen = []
    res = nsopt.minimize(recording_oracle(seen, fail_at=4, exc=KeyboardInterrupt),
                         method="proximal-bundle", x0=np.zeros(3), radius=10.0, max_iter=20)
    assert res.status is nsopt.Status.INTERRUPTED and seen[-1] == (1,)
    assert blas_threads_now() == [2]
    # Ctrl-C outside the steps (in the set-up) propagates: the setting comes back all the same
    solver = SOLVERS["bmrm"]()

    def interrupted(*args, **kwargs):
        assert blas_threads_now() == [1]
        raise KeyboardInterrupt
    monkeypatch.setattr(solver, "_prepare", interrupted)
    with pytest.raises(KeyboardInterrupt):
        solver.solve(small_risk())
    assert blas_threads_now() == [2]


def test_iterate_lifts_the_limit_between_states(two_threads):
    seen = []
    solver = SOLVERS["proximal-bundle"](radius=10.0, max_iter=50)
    between = []
    for k, _ in enumerate(solver.iterate(recording_oracle(seen), np.zeros(3))):
        between.append(tuple(blas_threads_now()))
        if k == 3:
            break                          # abandoned: the setting must come back too
    assert set(seen) == {(1,)} and set(between) == {(2,)}
    assert blas_threads_now() == [2]


@pytest.mark.parametrize("value, error", [
    ("fast", ValueError), (0, ValueError), (-2, ValueError), (True, TypeError),
    (1.5, TypeError), ([1], TypeError)])
def test_invalid_values_name_the_argument(value, error):
    with pytest.raises(error, match=r"blas_threads=") as info:
        nsopt.minimize(small_risk(), method="bmrm", blas_threads=value)
    assert repr(value) in str(info.value)
    with pytest.raises(error, match=r"blas_threads="):
        SOLVERS["level-bundle"](blas_threads=value)


def test_every_method_takes_it():
    J = small_risk()
    for setting in ("auto", "keep", None, 1, 3):
        assert methods_supporting(J, blas_threads=setting) == methods_supporting(J)
        for name, cls in SOLVERS.items():
            assert cls(blas_threads=setting).config["blas_threads"] == setting, name
    f = nsopt.FunctionOracle(value_and_subgradient=lambda x: (float(x @ x), 2 * x), dim=2)
    assert methods_supporting(f, radius=1.0, blas_threads=1) == methods_supporting(f, radius=1.0)


def test_auto_rule_reads_the_data_size():
    """One thread for sparse data, small dense data and a user's oracle; the user's threads
    for a dense block of at least AUTO_DENSE_ENTRIES entries (a broadcast view: no memory)."""
    import types

    def risk_like(X):
        return types.SimpleNamespace(loss=types.SimpleNamespace(data=types.SimpleNamespace(X=X)))

    side = int(math.isqrt(_threads.AUTO_DENSE_ENTRIES))
    big = np.broadcast_to(0.0, (side + 1, side))
    assert _threads.threads_for("auto", risk_like(big)) is None
    assert _threads.threads_for("auto", risk_like(big[: side // 2])) == 1
    assert _threads.threads_for("auto", small_risk()) == 1
    assert _threads.threads_for("auto", recording_oracle([])) == 1
    assert _threads.threads_for("keep", small_risk()) is None
    assert _threads.threads_for(None, small_risk()) is None
    assert _threads.threads_for(3, small_risk()) == 3


def test_one_blas_thread_still_importable_from_certificate():
    from nsopt.certificate import _one_blas_thread

    assert _one_blas_thread is _threads._one_blas_thread


@pytest.mark.parametrize("setting, inside", [("auto", (1,)), ("keep", (2,)), (None, (2,)),
                                             (2, (2,))])
def test_nested_limits_keep_the_outer_one(two_threads, setting, inside):
    """A one-thread block entered inside the run's limit (the Newton steps', the dual-point
    certifier's) leaves the run on one thread when it exits under "auto", and gives way to a
    user's explicit setting ("keep", None, a count); outside a run it limits and restores the
    caller's setting."""
    seen = []

    def vs(x):
        with _threads._one_blas_thread():
            seen.append(tuple(blas_threads_now()))
        seen.append(tuple(blas_threads_now()))
        return float(np.abs(x - 1.0).sum()), np.sign(x - 1.0)
    f = nsopt.FunctionOracle(value_and_subgradient=vs, dim=3)
    nsopt.minimize(f, method="proximal-bundle", x0=np.zeros(3), radius=10.0, max_iter=5,
                   blas_threads=setting)
    assert seen and set(seen) == {inside}
    assert blas_threads_now() == [2] and not _threads._LEVELS
    with _threads._one_blas_thread():
        assert blas_threads_now() == [1]
        with _threads._one_blas_thread():
            assert blas_threads_now() == [1]
        assert blas_threads_now() == [1]
    assert blas_threads_now() == [2]


@pytest.mark.parametrize("method, loss", [("dcd", "Logistic"), ("newton-cg", "Logistic"),
                                          ("ls-bmrm", "Hinge")])
def test_every_oracle_call_of_a_run_on_one_thread(two_threads, monkeypatch, method, loss):
    """Every call through the run's counting oracle (init's, the steps', the final settle's)
    sees one thread: dcd's init and the loop's settle used to run outside any limit."""
    from nsopt.oracle import CountingOracle

    seen = []
    evaluate = CountingOracle.evaluate

    def spy(self, *args, **kwargs):
        seen.append(tuple(blas_threads_now()))
        return evaluate(self, *args, **kwargs)
    monkeypatch.setattr(CountingOracle, "evaluate", spy)
    X, y = nsopt.datasets.make_sparse_binary(80, 6, random_state=1)
    J = nsopt.RegularizedRisk(getattr(nsopt.losses, loss)(X, y), lam=1e-2)
    res = nsopt.minimize(J, method=method, rtol=1e-6)
    assert res.success and seen and set(seen) == {(1,)}
    assert blas_threads_now() == [2]


def test_overlapping_runs_restore_once_the_last_ends(two_threads):
    """Two runs that overlap without nesting (two Python threads, or two interleaved
    ``iterate`` loops): A opens the limit, B joins it, A ends first. B goes on on one thread,
    the caller's setting comes back when B ends, and a later run limits again. (Driven from
    one thread: OpenBLAS started with OPENBLAS_NUM_THREADS=1, as the suite is, ignores a
    limit set from another thread.)"""
    a, b = _threads.blas_limit("auto", None), _threads.blas_limit("auto", None)
    a.__enter__()
    b.__enter__()
    assert blas_threads_now() == [1]
    a.__exit__(None, None, None)
    assert blas_threads_now() == [1]          # b still runs: not restored under it
    b.__exit__(None, None, None)
    assert blas_threads_now() == [2] and not _threads._LEVELS
    later = []
    nsopt.minimize(recording_oracle(later), method="proximal-bundle", x0=np.zeros(3),
                   radius=10.0, max_iter=3)
    assert set(later) == {(1,)} and blas_threads_now() == [2]


def test_a_run_in_another_thread_leaves_blas_control():
    """threadpoolctl lets one Python thread at a time set OpenBLAS's shared pool: a run in a
    thread that lives on (a worker's) must hand that control back, or the main thread's own
    limits are silently ignored afterwards."""
    import threading

    ran, release = threading.Event(), threading.Event()
    take_blas_control()

    def work():
        try:
            nsopt.minimize(recording_oracle([]), method="proximal-bundle", x0=np.zeros(3),
                           radius=10.0, max_iter=3, blas_threads=2)
        finally:
            ran.set()
            release.wait(30)

    worker = threading.Thread(target=work)
    worker.start()
    try:
        assert ran.wait(60)
        with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
            took = blas_threads_now()
        with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
            took_one = blas_threads_now()
    finally:
        release.set()
        worker.join(60)
    assert took == [2] and took_one == [1]

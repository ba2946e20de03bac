"""Numba's compile time stays out of a run's time, its history and its max_time
(nsopt.solvers._clock.RunClock)."""
from __future__ import annotations

import time

import numpy as np
from numba.core import event

import nsopt
from nsopt.solvers._clock import RunClock

PAUSE = 0.2


def _fake_compilation(seconds=PAUSE):
    """What numba does around a compilation: a 'numba:compile' event of some duration."""
    with event.trigger_event("numba:compile"):
        time.sleep(seconds)


class _Holder:
    deadline = 100.0


def test_clock_subtracts_compilations_and_moves_deadlines():
    holder, idle = _Holder(), _Holder()
    idle.deadline = None
    with RunClock([holder, idle]) as clock:
        t0 = clock.start()
        _fake_compilation()
        wall = time.perf_counter() - t0
        elapsed = clock()
    assert clock.compiling >= PAUSE
    assert elapsed <= wall - PAUSE + 1e-6
    assert holder.deadline == 100.0 + clock.compiling and idle.deadline is None
    # unregistered on exit: a later compilation is not counted
    spent = clock.compiling
    _fake_compilation(0.01)
    assert clock.compiling == spent


def test_nested_compilations_count_once():
    with RunClock() as clock:
        clock.start()
        with event.trigger_event("numba:compile"):
            time.sleep(0.05)
            _fake_compilation(0.05)   # a kernel compiled while compiling its caller
        wall_inside = clock.compiling
    assert 0.1 <= wall_inside < 0.2


def _oracle_that_compiles_once():
    calls = {"n": 0}

    def fun(x):
        calls["n"] += 1
        if calls["n"] == 1:
            _fake_compilation()
        return float(np.abs(x - 1.0).sum()), np.sign(x - 1.0)

    return nsopt.FunctionOracle(value_and_subgradient=fun, dim=3, lower_bound=0.0)


def test_result_time_and_history_leave_out_compilation():
    t0 = time.perf_counter()
    res = nsopt.minimize(_oracle_that_compiles_once(), np.zeros(3), method="proximal-bundle",
                         max_iter=5, rtol=0)
    wall = time.perf_counter() - t0
    assert res.info["compile_time"] >= PAUSE
    assert res.time <= wall - PAUSE
    assert np.all(res.history["time"] <= res.time)
    assert res.history["time"][0] < wall - PAUSE


def test_max_time_is_not_spent_by_compilation():
    # the compilation alone lasts longer than max_time: the run still iterates
    res = nsopt.minimize(_oracle_that_compiles_once(), np.zeros(3), method="proximal-bundle",
                         max_time=PAUSE / 2, max_iter=3, rtol=0)
    assert res.nit == 3 and res.status is not nsopt.Status.MAX_TIME, res.status

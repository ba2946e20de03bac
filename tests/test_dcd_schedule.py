"""dcd's shrinking tolerance and the small problems' check schedule (issue 11): the path
changes, the certified answer does not; success is only ever a proven gap."""
import functools

import numpy as np
import pytest

import nsopt
from nsopt import regularizers as R
from nsopt.solvers import _dcd_kernels as K
from nsopt.solvers import dcd as dcd_module


def _gauss_hinge(m, d, lam, seed=1):
    """The hinge on standard normal features with noisy labels (benchmarks/small.py's gauss)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    score = X @ rng.standard_normal(d)
    y = np.where(score - np.median(score) + rng.standard_normal(m) > 0, 1.0, -1.0)
    return nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), R.L2(), lam)


def _assert_proven(res, J, rtol):
    """success means a gap the certificate proves again from the data."""
    assert res.success, res.message
    bound = res.certificate.check(J)
    assert bound <= res.fun
    assert res.fun - bound <= rtol * abs(res.fun) * (1 + 1e-9) + 1e-12
    assert J.value(res.x) == pytest.approx(res.fun, rel=1e-12, abs=1e-15)


def test_small_check_period_grows_geometrically_and_is_capped():
    work = [dcd_module._small_check_work(1000, k) for k in range(60)]
    flat = dcd_module._SMALL_FLAT
    assert work[:flat + 1] == [3000] * (flat + 1)  # the first checks as before
    assert all(b >= a for a, b in zip(work, work[1:]))
    assert work[flat + 5] > work[0] * 5
    assert max(work) == dcd_module._SMALL_MAX_WORK
    big = dcd_module._SMALL_MAX_WORK  # 3 nnz above the cap: the period stays 3 nnz
    assert dcd_module._small_check_work(big, 0) == dcd_module._small_check_work(big, 50) == 3 * big
    assert dcd_module._small_check_work(1000, 10**9) == dcd_module._SMALL_MAX_WORK  # no overflow


def test_the_growing_period_certifies_a_tiny_lam_in_few_checks(monkeypatch):
    """200 x 5 at lam 1e-5 (C = 500): a check every 3 nnz of work needs about 400 checks
    (nearly all the time) to prove 1e-2, the growing period 18 (at lam 1e-6: 3600 and 29)."""
    J = _gauss_hinge(200, 5, 1e-5)
    rtol = 1e-2
    res = nsopt.minimize(J, method="dcd", rtol=rtol, max_iter=40)
    _assert_proven(res, J, rtol)
    monkeypatch.setattr(dcd_module, "_SMALL_GROWTH", 1.0)  # the former schedule
    old = nsopt.minimize(J, method="dcd", rtol=rtol, max_iter=40)
    assert not old.success


def _eps_drops(J, mode, n=60):
    """Epochs one at a time with shrink[4] = mode; per epoch that started on the whole
    problem and divided eps: (n_active after it, n_active after the next epoch)."""
    s = dcd_module.DCD(check_every=1).init(nsopt.oracle.CountingOracle(J), np.zeros(J.dim))
    pk = s.work
    pk.shrink[4] = mode
    n_all = pk.index.size
    out, pending = [], None
    for _ in range(n):
        start_active, eps = int(pk.shrink[0]), float(pk.shrink[3])
        K.epochs(pk.kind, pk.indptr, pk.indices, pk.data, pk.ex, pk.w, pk.index, pk.shrink,
                 pk.sums, pk.v, pk.lam, pk.rng, 1, 2**62, -np.inf, -np.inf, 4)
        if pending is not None:
            out.append(int(pk.shrink[0]))
            pending = None
        if start_active == n_all and pk.shrink[3] < eps:
            pending = True
    return out, n_all


def test_a_full_epoch_meeting_eps_keeps_its_thresholds():
    """liblinear's rule: after a full epoch that meets the shrinking tolerance the next epoch
    shrinks with that epoch's bounds (mode 2); the former rule (mode 1) reset them, so the
    next epoch could shrink nothing."""
    X, y = nsopt.datasets.make_sparse_binary(1500, 60, random_state=3)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), R.L2(), 1e-2)
    after_old, n_all = _eps_drops(J, 1.0)
    after_new, _ = _eps_drops(J, 2.0)
    assert after_old and after_new
    assert all(a == n_all for a in after_old)
    assert any(a < n_all for a in after_new)


@functools.lru_cache(maxsize=None)
def _a9a_like(lam):
    X, y = nsopt.datasets.make_sparse_binary(1500, 123, random_state=0)
    return nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), R.L2(), lam)


@functools.lru_cache(maxsize=None)
def _unshrunk(lam):
    return nsopt.minimize(_a9a_like(lam), method="dcd", rtol=1e-4, shrinking=False,
                          max_iter=2000)


@pytest.mark.parametrize("keep_full", [False, True])
@pytest.mark.parametrize("eps0", [1.0, 0.01])
@pytest.mark.parametrize("lam", [1e-2, 1e-3])
def test_shrinking_schedules_change_the_path_not_the_certified_answer(monkeypatch, keep_full,
                                                                      eps0, lam):
    J = _a9a_like(lam)
    monkeypatch.setattr(dcd_module, "_KEEP_FULL", keep_full)
    monkeypatch.setattr(dcd_module, "_SHRINK_EPS0", eps0)
    rtol = 1e-4
    res = nsopt.minimize(J, method="dcd", rtol=rtol, max_iter=2000)
    _assert_proven(res, J, rtol)
    ref = _unshrunk(lam)
    assert res.lower_bound <= ref.fun + 1e-12 and ref.lower_bound <= res.fun + 1e-12

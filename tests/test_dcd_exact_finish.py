"""dcd's exact finish at small d (issue 11: small problems stay small): when the dual point's
sets repeat, the free examples are solved exactly and the result is offered only when one exact
check pass proves the gap. The optimum is Clarabel's; a wrong solve changes nothing."""
import numpy as np
import pytest

import nsopt
from nsopt import regularizers as R
from nsopt.solvers import dcd as dcd_module

from cvxref import assert_dual_point_certified, clarabel_optimum


def _integer_problem(loss, m=100, d=4, lam=1e-6, seed=1):
    """benchmarks/small.py's integer data (features in {0..4}, many ties), smaller: at lam
    1e-6 coordinate descent alone does not prove 1e-4 in 100 checks (3e5 epochs)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, (m, d)).astype(float)
    score = X @ np.arange(1.0, d + 1.0)
    rng.integers(0, 3, m)  # the regression targets' noise there: the same labels
    y = np.where(score - np.median(score) + rng.standard_normal(m) > 0, 1.0, -1.0)
    return nsopt.RegularizedRisk(loss(X, y), R.L2(), lam)


@pytest.mark.parametrize("loss", [nsopt.losses.Hinge, nsopt.losses.SquaredHinge])
def test_the_exact_finish_proves_clarabels_optimum(loss):
    """The finish's dual point proves a gap of 1e-7 (coordinate descent alone: not 1e-4 in
    seconds), ``check`` recomputes its bound, and the bound is Clarabel's optimum to 1e-8
    (the hinge's primal point, w(t) at lam 1e-6, carries the multipliers' rounding / lam)."""
    J = _integer_problem(loss)
    res = nsopt.minimize(J, method="dcd", rtol=1e-7, max_iter=100)
    assert res.success and res.info["n_exact"] >= 1
    assert_dual_point_certified(J, res, 1e-7)
    assert res.lower_bound == pytest.approx(clarabel_optimum(J), rel=1e-8)


def test_the_exact_finish_needs_fewer_epochs():
    """Same run with and without the finish: the finish proves 1e-4 within the checks where
    the epochs alone do not (100 x 4 integer hinge at lam 1e-6)."""
    J = _integer_problem(nsopt.losses.Hinge)
    on = nsopt.minimize(J, method="dcd", rtol=1e-4, max_iter=60)
    off = nsopt.minimize(J, method="dcd", rtol=1e-4, max_iter=on.nit, exact_finish=False)
    assert on.success and not off.success
    assert on.info["epochs"] <= off.info["epochs"]


def test_a_wrong_solve_changes_no_iterate_and_proves_nothing(monkeypatch):
    """A finish whose solve is wrong (every free multiplier at half its box) is rejected by
    the check pass: the checks' epochs, bounds and points are those of the run without the
    finish, and the run never claims the gap."""
    J = _integer_problem(nsopt.losses.Hinge)
    kw = dict(rtol=1e-6)
    off = [(s.epochs, s.lower_bound, None if s.w is None else s.w.copy())
           for s in dcd_module.DCD(exact_finish=False, max_iter=20, **kw).iterate(J)]
    tried = []

    def wrong(kind, A_F, c_F, g_U, lam):
        tried.append(A_F.shape[0])
        return 0.5 * c_F

    monkeypatch.setattr(dcd_module, "_exact_free", wrong)
    on = [(s.epochs, s.lower_bound, None if s.w is None else s.w.copy())
          for s in dcd_module.DCD(max_iter=20, **kw).iterate(J)]
    assert tried, "the finish was never tried"
    assert len(on) == len(off)
    for (ea, la, wa), (eb, lb, wb) in zip(on, off):
        assert ea == eb and la == lb
        assert (wa is None and wb is None) or np.array_equal(wa, wb)


def test_the_finish_is_not_tried_with_logistic_or_large_d(monkeypatch):
    """Logistic (no finite active set) and d above the limit: the finish is never tried."""
    calls = []
    monkeypatch.setattr(dcd_module, "_exact_free", lambda *a: calls.append(1))
    J = _integer_problem(nsopt.losses.Logistic, lam=1e-4)
    nsopt.minimize(J, method="dcd", rtol=1e-8, max_iter=10)
    monkeypatch.setattr(dcd_module, "_EXACT_MAX_DIM", 3)
    J = _integer_problem(nsopt.losses.Hinge)
    res = nsopt.minimize(J, method="dcd", rtol=1e-4, max_iter=30)
    assert calls == [] and res.info["n_exact"] == 0

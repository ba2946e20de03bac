"""BMRM with the L1 norm (LP master, ``nsopt.inner.lp``) certifies a small problem within a
bounded number of iterations, against cvxpy + Clarabel (issue 11).

The lower bound of every iteration is the LP dual value at repaired multipliers; it must rise
monotonically up to the optimum (no stall at a wrong value, no rounding loss in the repair).
"""
from __future__ import annotations

import numpy as np
import pytest

import nsopt
from nsopt.losses import Hinge, Logistic
from nsopt.regularizers import L1

from cvxref import cvxpy_optimum, small_binary

pytest.importorskip("cvxpy")

LOSSES = {"logistic": Logistic, "hinge": Hinge}


@pytest.mark.parametrize("lam", [1e-2, 1e-3, 1e-4])
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_bmrm_l1_certifies_rtol_1e4_in_bounded_iterations(loss, lam):
    X, y = small_binary(80, 6, seed=0)
    J = nsopt.RegularizedRisk(LOSSES[loss](X, y), L1(), lam=lam)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-4, max_iter=400)
    assert res.success, (res.message, res.nit, res.gap / res.fun)
    ref = cvxpy_optimum(X, y, loss, L1(), lam)
    slack = 1e-7 * (1 + abs(ref))  # Clarabel's accuracy
    assert res.lower_bound <= ref + slack
    assert res.fun >= ref - slack
    assert res.fun - ref <= 1e-4 * abs(res.fun) + slack
    # the LP bound never decreases along the run and ends within the gap of the optimum
    bounds = res.history.to_pandas()["lower_bound"].to_numpy()
    assert np.all(np.diff(bounds) >= -1e-12 * (1 + np.abs(bounds[1:])))
    assert ref - bounds[-1] <= 1e-4 * abs(res.fun) + slack

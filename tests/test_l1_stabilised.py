"""BMRM with the L1 norm does not stall (issue 11): on an LP master its default
(``line_search="auto"``) takes OCAS's line search and query point, where Alg. 2 as published
(``line_search=False``) is Kelley's cutting-plane method.

A mid-size synthetic L1 logistic problem (1000 x 50, made by ``nsopt.datasets``): the default
certifies a relative gap of 1e-4 within 200 iterations, with the LP dual bound at repaired
multipliers below the optimum (cvxpy + Clarabel); Kelley's method, given the same 200
iterations, proves no better than 1e-2.
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import nsopt
from nsopt.losses import Logistic, SquaredHinge
from nsopt.regularizers import L1, L2

from cvxref import cvxpy_optimum

ITERATIONS = 200


@pytest.fixture(scope="module")
def problem():
    X, y = nsopt.datasets.make_sparse_binary(1000, 50, random_state=0)
    return X, y, nsopt.RegularizedRisk(Logistic(X, y), L1(), lam=1e-3)


def test_default_l1_bmrm_certifies_1e4_in_bounded_iterations(problem):
    X, y, J = problem
    res = nsopt.minimize(J, method="bmrm", rtol=1e-4, max_iter=ITERATIONS)
    assert res.success, (res.message, res.nit, res.gap / res.fun)
    assert res.info["line_search"] is True
    # the proof is the LP dual value at repaired multipliers: below the optimum
    assert res.certificate.source == "bundle-dual"
    pytest.importorskip("cvxpy")
    ref = cvxpy_optimum(X, y, "logistic", L1(), 1e-3)
    slack = 1e-7 * (1 + abs(ref))
    assert res.lower_bound <= ref + slack
    assert res.fun - ref <= 1e-4 * abs(res.fun) + slack


def test_bmrm_on_l1_is_the_stabilised_path(problem):
    """``method="bmrm"`` on an L1 risk runs its stabilised path (theta 0.02), which certifies
    in fewer iterations than LS-BMRM's default theta 0.1. (The default method on this L1
    logistic problem is now newton-cd: tests/test_newton_cd.py.)"""
    _, _, J = problem
    res = nsopt.minimize(J, method="bmrm", rtol=1e-4, max_iter=ITERATIONS)
    assert res.method == "bmrm" and res.info["line_search"] is True
    assert res.success
    ls = nsopt.minimize(J, method="ls-bmrm", rtol=1e-4, max_iter=ITERATIONS)
    assert res.nit <= ls.nit


def test_kelley_stalls_where_the_default_certifies(problem):
    """The same run unstabilised: Kelley's iterates jump between far vertices of the LP."""
    _, _, J = problem
    res = nsopt.minimize(J, method="bmrm", rtol=1e-4, max_iter=ITERATIONS, line_search=False)
    assert res.info["line_search"] is False
    assert not res.success
    assert res.gap > 1e-2 * res.fun


def test_line_search_auto_is_off_for_a_quadratic_master():
    """L2 stabilises the master itself: ``"auto"`` keeps Alg. 2 there, and ``True`` forces
    LS-BMRM's iterates (the same iterates as ``ls-bmrm`` with the same theta)."""
    X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=1)
    J = nsopt.RegularizedRisk(SquaredHinge(X, y), L2(), lam=1e-3)
    plain = nsopt.minimize(J, method="bmrm", rtol=1e-6)
    assert plain.info["line_search"] is False
    forced = nsopt.minimize(J, method="bmrm", rtol=1e-6, line_search=True)
    ls = nsopt.minimize(J, method="ls-bmrm", rtol=1e-6,
                        query_fraction=importlib.import_module("nsopt.solvers.bmrm").LP_QUERY_FRACTION)
    assert forced.info["line_search"] is True
    assert forced.nit == ls.nit
    np.testing.assert_allclose(forced.history.to_pandas()["fun"], ls.history.to_pandas()["fun"],
                               rtol=1e-12)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_line_search_option_is_validated(value):
    with pytest.raises((TypeError, ValueError), match="line_search"):
        nsopt.solvers.BMRM(line_search=value)

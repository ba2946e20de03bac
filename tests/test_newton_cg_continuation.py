"""newton-cg's continuation in the model's lam (squared hinge, ``continuation``): certified
runs that bracket cvxpy's optimum, the logistic loss untouched, and the option's off switch."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import regularizers as R

from cvxref import assert_dual_point_certified, smooth_margin_problem


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 10_000), intercept=st.booleans(), weights=st.booleans(),
       model=st.sampled_from(["auto", "cg"]))
def test_stages_then_certified_at_lam(seed, intercept, weights, model):
    """At a small lam the run makes steps at a model lam above lam, and still proves the gap
    of the problem at lam (the bound is lam's: ``check`` recomputes it); with the option off
    no step is staged; both answers agree to the proven gaps."""
    J = smooth_margin_problem("squared-hinge", R.L2(), seed, 1e-5, m=60, d=6,
                              intercept=intercept, weights=weights)
    on = nsopt.minimize(J, method="newton-cg", rtol=1e-8, model=model)
    off = nsopt.minimize(J, method="newton-cg", rtol=1e-8, model=model, continuation=False)
    assert on.success and off.success
    assert on.info["continuation_steps"] > 0 and off.info["continuation_steps"] == 0
    for res in (on, off):
        assert res.lower_bound <= res.fun
        checked = res.certificate.check(J)
        assert res.lower_bound - 1e-9 * abs(res.fun) <= checked <= res.fun + 1e-12
    assert on.lower_bound <= off.fun + 1e-12 and off.lower_bound <= on.fun + 1e-12


def test_brackets_cvxpy():
    """The continued run's certified answer brackets Clarabel's optimum."""
    pytest.importorskip("cvxpy")
    J = smooth_margin_problem("squared-hinge", R.L2(), 5, 1e-5, m=60, d=6, intercept=True)
    res = nsopt.minimize(J, method="newton-cg", rtol=1e-6)
    assert res.info["continuation_steps"] > 0
    assert_dual_point_certified(J, res, 1e-6)


def test_logistic_ignores_the_option():
    """The logistic loss is not continued: the same iterates with the option on or off."""
    J = smooth_margin_problem("logistic", R.L2(), 2, 1e-5, m=60, d=6)
    a = nsopt.minimize(J, method="newton-cg", rtol=1e-8)
    b = nsopt.minimize(J, method="newton-cg", rtol=1e-8, continuation=False)
    assert a.info["continuation_steps"] == 0
    assert np.array_equal(np.asarray(a.history["fun"]), np.asarray(b.history["fun"]))
    assert np.array_equal(a.x, b.x)

"""scipy's convention in ``nsopt.minimize`` (issue 13): ``minimize(fun, x0, jac=...)`` on a
plain function, ``x0`` as the second positional argument, and the ``intermediate_result``
callback; the Oracle forms keep working as before."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import OptimizeResult

import nsopt

X0 = np.array([1.0, -2.0, 0.5])
SHIFT = np.array([0.3, -0.1, 0.2])


def value_and_subgradient(x):
    """``f(x) = ||x - c||_1 + 0.1 ||x||^2``: nonsmooth, one minimiser, deterministic runs."""
    return float(np.abs(x - SHIFT).sum() + 0.1 * x @ x), np.sign(x - SHIFT) + 0.2 * x


def value(x):
    return value_and_subgradient(x)[0]


def subgradient(x):
    return value_and_subgradient(x)[1]


def explicit(**kw):
    oracle = nsopt.FunctionOracle(value_and_subgradient=value_and_subgradient, dim=3)
    return nsopt.minimize(oracle, "proximal-bundle", X0, radius=10.0, **kw)


def same_run(a, b):
    assert a.status is b.status
    assert np.array_equal(a.x, b.x)
    assert a.fun == b.fun and a.nit == b.nit and a.nfev == b.nfev
    assert a.lower_bound == b.lower_bound
    assert a.method == b.method


def test_scipy_form_equals_function_oracle():
    ref = explicit()
    assert ref.status is nsopt.Status.CONVERGED
    same_run(nsopt.minimize(value_and_subgradient, X0, jac=True, radius=10.0), ref)
    same_run(nsopt.minimize(value_and_subgradient, x0=X0, jac=True, radius=10.0), ref)
    same_run(nsopt.minimize(value_and_subgradient, X0, method="proximal-bundle", jac=True,
                            radius=10.0), ref)


def test_jac_callable():
    oracle = nsopt.FunctionOracle(value, subgradient, dim=3)
    ref = nsopt.minimize(oracle, "proximal-bundle", X0, radius=10.0)
    res = nsopt.minimize(value, X0, jac=subgradient, radius=10.0)
    same_run(res, ref)
    assert np.array_equal(res.x, explicit().x)


def test_default_method_for_a_function_takes_any_oracle():
    res = nsopt.minimize(value_and_subgradient, X0, jac=True, radius=10.0)
    assert res.method == "proximal-bundle"
    # a method named by keyword still wins
    res = nsopt.minimize(value_and_subgradient, X0, jac=True, method="level-bundle",
                         radius=10.0)
    assert res.method == "level-bundle" and res.status is nsopt.Status.CONVERGED


def test_docs_example():
    res = nsopt.minimize(lambda x: (abs(x).sum(), np.sign(x)), np.ones(3), jac=True,
                         radius=10.0)
    assert res.status is nsopt.Status.CONVERGED and res.success
    assert res.fun <= 1e-3 and res.lower_bound <= 0.0 <= res.fun


@pytest.mark.parametrize("jac", [None, False])
def test_jac_missing_names_jac(jac):
    with pytest.raises(TypeError, match=r"jac=True.*finite differences"):
        nsopt.minimize(value_and_subgradient, X0, jac=jac)


def test_jac_of_another_kind_names_jac():
    with pytest.raises(TypeError, match="jac must be True"):
        nsopt.minimize(value, X0, jac="2-point")


def test_jac_with_an_oracle_is_refused():
    X, y = nsopt.datasets.make_sparse_binary(50, 5, random_state=0)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    with pytest.raises(TypeError, match="jac is for a plain function"):
        nsopt.minimize(J, jac=True)
    oracle = nsopt.FunctionOracle(value_and_subgradient=value_and_subgradient, dim=3)
    with pytest.raises(TypeError, match="jac"):
        nsopt.minimize(oracle, X0, jac=subgradient)


def test_x0_missing_for_a_function():
    with pytest.raises(TypeError, match="x0 is required"):
        nsopt.minimize(value_and_subgradient, jac=True)
    with pytest.raises(TypeError, match="x0 is required"):
        nsopt.minimize(value_and_subgradient, "proximal-bundle", jac=True)


def test_x0_positional_with_an_oracle():
    """The second positional argument is x0 whenever it is not a str, for an Oracle too."""
    oracle = nsopt.FunctionOracle(value_and_subgradient=value_and_subgradient, dim=3)
    same_run(nsopt.minimize(oracle, X0, method="proximal-bundle", radius=10.0), explicit())
    with pytest.raises(TypeError, match="x0 twice"):
        nsopt.minimize(oracle, X0, X0)
    with pytest.raises(TypeError, match="x0 twice"):
        nsopt.minimize(oracle, X0, x0=X0)
    with pytest.raises(TypeError, match="method twice"):
        nsopt.minimize(oracle, "bmrm", method="ls-bmrm")


def test_x0_not_modified_and_scalar_start():
    x0 = X0.copy()
    nsopt.minimize(value_and_subgradient, x0, jac=True, radius=10.0)
    assert np.array_equal(x0, X0)
    res = nsopt.minimize(lambda x: (abs(x[0] - 2.0), np.sign(x - 2.0)), 0.0, jac=True,
                         radius=10.0)
    assert res.x.shape == (1,) and abs(res.x[0] - 2.0) < 1e-6


def test_oracle_forms_unchanged():
    X, y = nsopt.datasets.make_sparse_binary(200, 10, random_state=0)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    a = nsopt.minimize(J)  # the default method for an Oracle (nsopt.minimize.default_method)
    b = nsopt.minimize(J, a.method)
    c = nsopt.minimize(J, method=a.method)
    d = nsopt.minimize(J, "bmrm", np.zeros(10))
    for r in (a, b, c):
        assert r.method == a.method and r.status is nsopt.Status.CONVERGED
        assert np.array_equal(r.x, a.x) and r.nit == a.nit
    assert d.method == "bmrm"
    with pytest.raises(ValueError, match="unknown method"):
        nsopt.minimize(J, "no-such-method")
    # a bare oracle by default still goes to bmrm, which says what it needs
    oracle = nsopt.FunctionOracle(value_and_subgradient=value_and_subgradient, dim=3)
    with pytest.raises(TypeError, match="RegularizedRisk"):
        nsopt.minimize(oracle)


def test_intermediate_result_rows_match_history():
    seen = []

    def callback(intermediate_result):
        seen.append(intermediate_result)

    res = nsopt.minimize(value_and_subgradient, X0, jac=True, radius=10.0, callback=callback)
    same_run(res, explicit())            # observing does not change the run
    h = res.history
    assert [r.nit for r in seen] == list(h["iteration"][1:])  # every step, the last included
    for r in seen:
        assert isinstance(r, OptimizeResult)
        assert set(r) == {"x", "fun", "nit", "lower_bound", "gap", "time", "nfev"}
        i = r.nit
        assert r.fun == h["fun"][i] and r.lower_bound == h["lower_bound"][i]
        assert r.gap == h["gap"][i] and r.nfev == h["nfev"][i] and r.time == h["time"][i]
        assert value(r.x) == r.fun       # x is the best point, as Result.x
    assert np.array_equal(seen[-1].x, res.x)


def test_intermediate_result_on_a_regularized_risk():
    """Every method: observing the rows leaves the run as it was, and each row's x is worth
    its fun."""
    X, y = nsopt.datasets.make_sparse_binary(200, 10, random_state=0)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    for method in nsopt.solvers.methods_supporting(J):
        seen = []
        res = nsopt.minimize(J, method, max_iter=40, callback=lambda intermediate_result:
                             seen.append(intermediate_result))
        same_run(res, nsopt.minimize(J, method, max_iter=40))
        assert [r.nit for r in seen] == list(range(1, res.nit + 1)), method
        for r in seen:
            assert r.fun == res.history["fun"][r.nit], method
            assert J.value(r.x) == pytest.approx(r.fun, rel=1e-12, abs=1e-12), method


@pytest.mark.parametrize("how", ["return", "raise"])
def test_intermediate_result_stop_gives_status_callback(how):
    def callback(intermediate_result):
        if intermediate_result.nit >= 1:
            if how == "raise":
                raise StopIteration
            return True
        return False

    res = nsopt.minimize(value_and_subgradient, X0, jac=True, radius=10.0, callback=callback)
    assert res.status is nsopt.Status.CALLBACK and not res.success
    assert res.message == nsopt.Status.CALLBACK.message
    assert res.nit == 1                  # the run ends on the row the callback stopped


def test_intermediate_result_interrupt_gives_status_interrupted():
    def callback(intermediate_result):
        raise KeyboardInterrupt

    res = nsopt.minimize(value_and_subgradient, X0, jac=True, radius=10.0, callback=callback)
    assert res.status is nsopt.Status.INTERRUPTED and res.nit == 1


def test_intermediate_result_other_errors_propagate():
    def callback(intermediate_result):
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        nsopt.minimize(value_and_subgradient, X0, jac=True, radius=10.0, callback=callback)


def test_intermediate_result_with_every_method_that_takes_a_function():
    """Each method that takes a bare oracle reports rows matching its history."""
    for method in nsopt.solvers.methods_supporting(explicit_oracle(), radius=10.0):
        seen = []
        res = nsopt.minimize(value_and_subgradient, X0, method=method, jac=True, radius=10.0,
                             max_iter=30, callback=lambda intermediate_result:
                             seen.append(intermediate_result))
        assert [r.nit for r in seen] == list(range(1, res.nit + 1)), method
        for r in seen:
            assert r.fun == res.history["fun"][r.nit], method
            assert value(r.x) == pytest.approx(r.fun, rel=1e-12, abs=1e-12), method


def explicit_oracle():
    return nsopt.FunctionOracle(value_and_subgradient=value_and_subgradient, dim=3)


def test_intermediate_result_stop_at_k_equals_state_callback_stop_at_k():
    res = nsopt.minimize(value_and_subgradient, X0, jac=True, radius=10.0,
                         callback=lambda intermediate_result: intermediate_result.nit >= 1)
    assert res.nit == 1


def test_state_callback_unchanged():
    states = []

    def callback(state):
        states.append(state)
        return len(states) >= 2

    res = explicit(callback=callback)
    assert not isinstance(states[0], OptimizeResult)
    assert type(states[0]).__name__ == "State"
    assert res.status is nsopt.Status.CALLBACK and res.nit == 2

    def stop(s):
        raise StopIteration

    res = nsopt.minimize(value_and_subgradient, X0, jac=True, radius=10.0, callback=stop)
    assert res.status is nsopt.Status.CALLBACK and res.nit == 1
    with pytest.raises(TypeError, match="callback"):
        nsopt.minimize(value_and_subgradient, X0, jac=True, callback=3)

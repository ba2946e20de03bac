"""Every solver in nsopt.solvers.SOLVERS, on every catalogue problem (tests/catalogue.py).

New solvers join automatically. Two tables, both strict: UNSUPPORTED lists known gaps on
problems a solver accepts (xfail with the reason), DECLARED_UNSUPPORTED every pair a solver
refuses with ProblemNotSupported. A solver that gains support for a pair in either table, or
refuses a pair missing from DECLARED_UNSUPPORTED, fails until the table is updated."""
import math

import numpy as np
import pytest

import nsopt
from nsopt import regularizers as R
from nsopt.losses import Hinge
from nsopt.solvers import SOLVERS, ProblemNotSupported

from catalogue import CATALOGUE
from cvxref import small_binary


UNSUPPORTED: dict[tuple[str, str], str] = {}

_NEEDS_RISK = "uses the loss and the regularizer separately: needs a RegularizedRisk"
_SADDLE_L2 = "needs L2 and a loss with a saddle form (hinge-type)"
_AGGREGATES = "aggregated planes need a strongly convex regularizer (L1: polyhedral conjugate)"
_DCD = "dual coordinate descent: L2 and a hinge, squared hinge or logistic loss only"
_NEWTON = "Newton coordinate descent: L1 and a logistic or squared hinge loss only"
_NEWTON_L2 = "truncated Newton: L2 and a logistic or squared hinge loss only"
#: (configuration id, case) -> why the solver refuses it (ProblemNotSupported)
DECLARED_UNSUPPORTED: dict[tuple[str, str], str] = {
    ("bmrm", "l1-regression-oracle"): _NEEDS_RISK,
    ("ls-bmrm", "l1-regression-oracle"): _NEEDS_RISK,
    ("kbundle", "l1-regression-oracle"): _NEEDS_RISK,
    ("kbundle", "hinge-l1"): _AGGREGATES,
    ("kbundle", "logistic-l1"): _AGGREGATES,
    ("kbundle", "multiclass-hinge-l1"): _AGGREGATES,
    ("excessive-gap", "logistic-l2"): _SADDLE_L2,
    ("excessive-gap", "squared-hinge-l2"): _SADDLE_L2,
    ("excessive-gap", "hinge-l1"): _SADDLE_L2,
    ("excessive-gap", "logistic-l1"): _SADDLE_L2,
    ("excessive-gap", "multiclass-hinge-l1"): _SADDLE_L2,
    ("excessive-gap", "l1-regression-oracle"): _SADDLE_L2,
    ("dcd", "hinge-l1"): _DCD,
    ("dcd", "logistic-l1"): _DCD,
    ("dcd", "multiclass-hinge-l2"): _DCD,
    ("dcd", "multiclass-hinge-l1"): _DCD,
    ("dcd", "l1-regression-oracle"): _NEEDS_RISK,
    **{("dcd-probe", case): _DCD for case in (
        "hinge-l1", "logistic-l1", "multiclass-hinge-l2", "multiclass-hinge-l1")},
    ("dcd-probe", "l1-regression-oracle"): _NEEDS_RISK,
    **{("newton-cd", case): _NEWTON for case in (
        "hinge-l2", "hinge-l2-sparse", "logistic-l2", "squared-hinge-l2", "hinge-l1",
        "multiclass-hinge-l2", "multiclass-hinge-l1")},
    ("newton-cd", "l1-regression-oracle"): _NEEDS_RISK,
    **{("newton-cg", case): _NEWTON_L2 for case in (
        "hinge-l2", "hinge-l2-sparse", "hinge-l1", "logistic-l1", "multiclass-hinge-l2",
        "multiclass-hinge-l1")},
    ("newton-cg", "l1-regression-oracle"): _NEEDS_RISK,
}

# every registered method with its default options, plus variants selected by an option
VARIANTS = {"proximal-bundle": [{"variant": "trust-region"}]}
#: options a method cannot run without, given in every configuration of it (not part of its id):
#: level-bundle needs a finite box; this one holds every catalogue problem's minimiser (all
#: within 4 in the max norm), so the box-constrained optimum is the catalogue's f*
REQUIRED = {"level-bundle": {"bounds": (-50.0, 50.0)}}
CONFIGS = [(m, dict(REQUIRED.get(m, {}))) for m in sorted(SOLVERS)] + [
    (m, {**REQUIRED.get(m, {}), **opts}) for m in sorted(SOLVERS) for opts in VARIANTS.get(m, [])]


def _config_id(method, opts):
    return method + "".join(f"[{v}]" for k, v in opts.items() if k not in REQUIRED.get(method, {}))


CONFIG_IDS = [_config_id(m, o) for m, o in CONFIGS]
METHODS = sorted(SOLVERS)


def _supported_case(method, opts, first=0):
    """Catalogue problem ``first`` or, when the method refuses it, the first one it takes
    (newton-cd takes only the L1 logistic problem, newton-cg the L2 smooth ones)."""
    cases = [CATALOGUE[first]] + CATALOGUE
    return next(c.problem() for c in cases
                if SOLVERS[method](**opts).unsupported_reason(c.problem()) is None)


def _mark(method, case, opts):
    """Known gaps: xfail with the table's reason. A refusal must be in DECLARED_UNSUPPORTED and
    raise ProblemNotSupported (then the case ends as xfail); a listed pair that is now accepted
    fails, so the table follows the solvers."""
    reason = UNSUPPORTED.get((method, case.name))
    if reason:
        pytest.xfail(reason)
    config = _config_id(method, opts)
    problem = case.problem()
    declared = SOLVERS[method](**opts).unsupported_reason(problem)
    listed = DECLARED_UNSUPPORTED.get((config, case.name))
    if declared is None:
        assert listed is None, (f"{config} now accepts {case.name}: remove the pair from "
                                "DECLARED_UNSUPPORTED")
        return
    assert listed is not None, f"{config} refuses {case.name} ({declared}): add it to DECLARED_UNSUPPORTED"
    with pytest.raises(ProblemNotSupported):
        nsopt.minimize(problem, method=method, max_iter=1, **opts)
    pytest.xfail(f"declared unsupported: {listed}")


@pytest.mark.parametrize("case", CATALOGUE, ids=str)
@pytest.mark.parametrize("method,opts", CONFIGS, ids=CONFIG_IDS)
def test_certificate_brackets_optimum(method, opts, case):
    _mark(method, case, opts)
    J = case.problem()
    res = nsopt.minimize(J, method=method, rtol=1e-6, max_iter=20000, **opts)
    f_star = case.f_star()
    tol = 1e-7 * max(1.0, abs(f_star))
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.success and res.gap <= 1e-6 * abs(res.fun) + 1e-15
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * max(1.0, abs(res.lower_bound))


@pytest.mark.parametrize("method,opts", CONFIGS, ids=CONFIG_IDS)
def test_result_fields_and_types(method, opts):
    J = _supported_case(method, opts)
    res = nsopt.minimize(J, method=method, max_iter=5, **opts)
    assert isinstance(res, nsopt.Result)
    assert res.x.shape == (J.dim,) and res.x.dtype == np.float64
    for name in ("fun", "lower_bound", "gap", "time"):
        assert isinstance(getattr(res, name), float)
    assert isinstance(res.nit, int) and isinstance(res.nfev, int)
    assert isinstance(res.status, nsopt.Status) and res.message == res.status.message
    assert res.success == (res.status is nsopt.Status.CONVERGED)
    assert res.gap == pytest.approx(res.fun - res.lower_bound)
    for col in ("iteration", "time", "fun", "lower_bound", "gap", "nfev"):
        assert len(res.history[col]) == res.nit + 1
    assert np.all(np.diff(res.history["fun"]) <= 0)            # best value never worsens
    assert np.all(np.diff(res.history["lower_bound"]) >= 0)    # best bound never weakens
    assert res.certificate.upper == res.fun and res.certificate.lower == res.lower_bound


@pytest.mark.parametrize("method,opts", CONFIGS, ids=CONFIG_IDS)
def test_callback_stop_equals_max_iter(method, opts):
    # the first catalogue problem (after logistic, the smoothest) the method supports
    cases = [CATALOGUE[2]] + CATALOGUE
    J = next(c.problem() for c in cases
             if SOLVERS[method](**opts).unsupported_reason(c.problem()) is None)
    k = 3
    a = nsopt.minimize(J, method=method, max_iter=k, rtol=1e-12, **opts)

    def stop_at_k(state, count=[0]):
        count[0] += 1
        if count[0] >= k:
            raise StopIteration

    b = nsopt.minimize(J, method=method, callback=stop_at_k, rtol=1e-12, **opts)
    count = [0]

    def true_at_k(state):
        count[0] += 1
        return count[0] >= k

    c = nsopt.minimize(J, method=method, callback=true_at_k, rtol=1e-12, **opts)
    assert a.status is nsopt.Status.MAX_ITER
    assert b.status is c.status is nsopt.Status.CALLBACK
    assert a.nit == b.nit == c.nit == k
    np.testing.assert_array_equal(a.x, b.x)
    assert a.fun == b.fun == c.fun and a.lower_bound == b.lower_bound


@pytest.mark.parametrize("method,opts", CONFIGS, ids=CONFIG_IDS)
def test_nfev_counts_distinct_oracle_calls(method, opts):
    J = _supported_case(method, opts)
    calls = []
    inner = J.loss._value_and_subgradient

    def counted(w):
        calls.append(w.copy())
        return inner(w)

    J.loss._value_and_subgradient = counted
    res = nsopt.minimize(J, method=method, max_iter=10, **opts)
    assert res.nfev >= len(calls) > 0
    # no point evaluated twice
    assert len({c.tobytes() for c in calls}) == len(calls)


@pytest.mark.parametrize("method,opts", CONFIGS, ids=CONFIG_IDS)
def test_x0_not_modified_and_used(method, opts):
    J = _supported_case(method, opts)
    x0 = np.full(J.dim, 0.3)
    keep = x0.copy()
    res = nsopt.minimize(J, method=method, x0=x0, max_iter=0, **opts)
    np.testing.assert_array_equal(x0, keep)
    np.testing.assert_array_equal(res.x, keep)
    assert res.fun == pytest.approx(J.value(keep)) and res.nit == 0


@pytest.mark.parametrize("method,opts", CONFIGS, ids=CONFIG_IDS)
def test_keyboard_interrupt_returns_best(method, opts):
    J = _supported_case(method, opts, 1)
    inner = J.loss._value_and_subgradient
    n = [0]

    def interrupt_at_5(w):
        n[0] += 1
        if n[0] == 5:
            raise KeyboardInterrupt
        return inner(w)

    J.loss._value_and_subgradient = interrupt_at_5
    res = nsopt.minimize(J, method=method, rtol=1e-12, **opts)
    assert res.status is nsopt.Status.INTERRUPTED and not res.success
    assert np.isfinite(res.fun) and res.fun == pytest.approx(J.value(res.x))
    assert res.lower_bound <= res.fun


@pytest.mark.parametrize("method,opts", CONFIGS, ids=CONFIG_IDS)
def test_numerical_error_on_nan(method, opts):
    J = _supported_case(method, opts)
    inner = J.loss._value_and_subgradient
    n = [0]

    def nan_at_3(w):
        n[0] += 1
        f, g = inner(w)
        return (math.nan, g) if n[0] >= 3 else (f, g)

    J.loss._value_and_subgradient = nan_at_3
    res = nsopt.minimize(J, method=method, rtol=1e-12, max_iter=50, **opts)
    assert res.status is nsopt.Status.NUMERICAL_ERROR
    assert np.isfinite(res.fun)


@pytest.mark.parametrize("method,opts", CONFIGS, ids=CONFIG_IDS)
def test_iterate_keeps_state_type(method, opts):
    J = _supported_case(method, opts)
    solver = SOLVERS[method](max_iter=4, rtol=1e-12, **opts)
    states = list(solver.iterate(J))
    assert len(states) == 5  # init + 4 steps
    assert len({type(s) for s in states}) == 1
    # re-entrant: a second run gives the same states
    again = list(solver.iterate(J))
    for s, t in zip(states, again):
        assert s.lower_bound == t.lower_bound


@pytest.mark.parametrize("method,opts", CONFIGS, ids=CONFIG_IDS)
def test_unknown_option_is_a_type_error(method, opts):
    with pytest.raises(TypeError, match="unknown option"):
        SOLVERS[method](maxiter=3, **opts)
    with pytest.raises(ValueError):
        SOLVERS[method](max_iter=-1, **opts)
    with pytest.raises(ValueError):
        SOLVERS[method](rtol=0.0, atol=0.0, **opts)


def test_unknown_method():
    with pytest.raises(ValueError, match="unknown method"):
        nsopt.minimize(CATALOGUE[0].problem(), method="newton")


def test_bmrm_rejects_plain_oracle_naming_alternatives():
    f = nsopt.FunctionOracle(lambda w: abs(w).sum(), lambda w: np.sign(w), dim=3)
    with pytest.raises(ProblemNotSupported, match="RegularizedRisk"):
        nsopt.minimize(f, method="bmrm")


def test_problem_must_be_an_oracle():
    with pytest.raises(TypeError, match="Oracle"):
        nsopt.minimize(lambda w: 0.0)


def test_lam_must_be_positive():
    X, y = small_binary(20, 3)
    with pytest.raises(ValueError, match="lam must be > 0"):
        nsopt.RegularizedRisk(Hinge(X, y), R.L2(), 0.0)


def test_declared_requirements_are_checked_for_every_solver():
    """``requires`` names capabilities the base checks (main checked only "regularized_risk"
    and ignored the rest); an unknown name is an error, never silently ignored."""
    from nsopt.solvers._base import CAPABILITIES

    plain = nsopt.FunctionOracle(lambda w: float(w @ w), lambda w: 2 * w, dim=2)
    for name, cls in nsopt.solvers.SOLVERS.items():
        assert set(cls.requires) <= set(CAPABILITIES), name
        supported = cls.unsupported_reason(plain) is None
        assert supported == ("regularized_risk" not in cls.requires), name

    class Wants(nsopt.solvers.BMRM):
        requires = ("telepathy",)

    with pytest.raises(ValueError, match="telepathy"):
        Wants.unsupported_reason(plain)


def test_solvers_read_facts_not_classes():
    """No solver tests a concrete loss or regularizer class: they ask the facts
    (self_conjugate, polyhedral, l1_ratio, differentiable, saddle_form)."""
    import pathlib
    import re

    root = pathlib.Path(nsopt.__file__).parent / "solvers"
    pattern = re.compile(r"(isinstance\([^)]*,\s*\(?(L1|L2|Lp|QuadraticForm|ElasticNet|NegEntropy|KL|"
                         r"Logistic|SquaredHinge|Hinge|MulticlassHinge|ScaledMulticlassHinge)\b|"
                         r"type\([^)]*\) is (not )?(L1|L2))")
    offenders = [f"{p.name}: {m.group(0)}" for p in root.glob("*.py")
                 for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_solvers_read_the_problem_explicitly():
    """Issue 15, move 5: a solver reaches the problem behind the loop's counting wrapper through
    its explicit ``problem`` attribute, never by ``getattr(x, "oracle", x)`` probing."""
    import pathlib
    import re

    root = pathlib.Path(nsopt.__file__).parent
    pattern = re.compile(r"getattr\([^)]*[\"']oracle[\"']")
    offenders = [f"{p.relative_to(root)}: {m.group(0)}" for p in root.rglob("*.py")
                 for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_states_declare_the_facts_the_loop_reads():
    """Issue 15, move 6: the optional State fields the loop reads are declared once
    (StateFacts, with their defaults); each solver's State provides some of them by having
    the field, listed in ``state_facts``; the loop probes nothing with getattr defaults."""
    import math
    import pathlib
    import re
    from typing import NamedTuple

    from nsopt.solvers import ProxBMRM, TrustRegionBundle
    from nsopt.solvers._base import StateFacts, state_facts

    provided = {cls.__name__: cls.state_facts for cls in
                {*nsopt.solvers.SOLVERS.values(), ProxBMRM, TrustRegionBundle}}
    assert provided["LSBMRM"] == ("lower_bound", "evidence", "w_best", "fun_best")
    assert provided["BMRM"] == provided["ExcessiveGap"] == ("lower_bound", "evidence")
    assert provided["SubBFGS"] == ("lower_bound", "evidence", "unbounded", "stationary",
                                   "subgradient_norm", "linearization_error")
    assert provided["TrustRegionBundle"] == ("lower_bound", "evidence", "stationary",
                                             "subgradient_norm", "linearization_error")
    for cls in {*nsopt.solvers.SOLVERS.values(), ProxBMRM, TrustRegionBundle}:
        state = getattr(cls, "State", None)
        if state is not None:
            assert set(cls.history_fields) <= set(state._fields), cls.__name__

    class Plain(NamedTuple):
        w: object
        stationary: bool
    facts = state_facts(Plain(w=None, stationary=True))
    assert facts.stationary and facts.lower_bound == -math.inf and facts.evidence is None
    assert facts.w_best is None and math.isnan(facts.subgradient_norm)
    assert state_facts(None) == StateFacts()

    with pytest.raises(TypeError, match="history_fields"):
        class Broken(nsopt.solvers.BMRM):
            history_fields = ("no_such_field",)

    source = (pathlib.Path(nsopt.__file__).parent / "solvers" / "_base.py").read_text(encoding="utf-8")
    assert not re.findall(r"getattr\(state, [\"'\w]+, ", source)

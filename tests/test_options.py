"""Solver options in one vocabulary (issue 15, move 4): every option of every solver is checked
from its declaration, none is accepted and ignored, and renamed options keep their former
names as deprecated aliases.

The solvers come from the registry ``nsopt.solvers.SOLVERS`` and the classes derived from the
registered ones (the variants of ``proximal-bundle``), so a new solver or option is covered
without editing this file. The invalid values are derived here, independently of the
implementation, from each option's declared constraints."""
import math
import numbers
import warnings

import numpy as np
import pytest

import nsopt
from nsopt._validation import (Boolean, Interval, NoneOr, Option, Options, Satisfies,
                               validate_options)
from nsopt.inner import OSQPSimplex, QPSimplex, SmoothSimplex
from nsopt.solvers import SOLVERS, LSBMRM, ProxBMRM, ProximalBundle, TrustRegionBundle

from cvxref import small_binary


def _solver_classes():
    """The registered classes and their subclasses in nsopt, as constructed (``ProximalBundle()``
    builds its ``variant="auto"`` class)."""
    found, stack = {}, list(SOLVERS.values())
    while stack:
        cls = stack.pop()
        stack.extend(c for c in cls.__subclasses__() if c.__module__.startswith("nsopt."))
        built = type(cls())
        found[built.__name__] = built
    return [found[k] for k in sorted(found)]


CLASSES = _solver_classes()
OPTIONS = [(cls, name, opt) for cls in CLASSES for name, opt in cls.option_table().items()]
OPTION_IDS = [f"{cls.__name__}.{name}" for cls, name, _ in OPTIONS]
RENAMED = [(cls, new, old) for cls, new, opt in OPTIONS for old in opt.renamed_from]
RENAMED_IDS = [f"{cls.__name__}.{old}->{new}" for cls, new, old in RENAMED]


def _owner(cls):
    return cls._label or cls.__name__


# ------------------------------------------------- what each constraint allows, said again here
#: Satisfies constraints by the name of their function: (accepted Python types, values of that
#: kind outside the set). A new Satisfies constraint needs an entry.
SATISFIES = {
    "check_planes": ((tuple, list), [(np.ones((2, 3)), np.ones(3)),
                                     (np.array([[1.0, np.nan]]), np.zeros(1))]),
    "_time_share": ((tuple,), [("seconds", 0.5), ("time", 0.0), ("time", 1.5), ("time",)]),
    "_finite_box": ((tuple, list), [(1.0, 0.0), (0.0, math.inf), (math.nan, 1.0),
                                    ([0.0, 0.0], [1.0, 1.0, 1.0])]),
    "check_box": ((tuple, list), [(1.0, 0.0), (math.inf, math.inf), (math.nan, 1.0),
                                  ([0.0, 0.0], [1.0, 1.0, 1.0])]),
    "_centre": ((tuple, list, np.ndarray), [[1.0, math.nan], [[1.0, 2.0]], [math.inf]]),
    "_matrix": ((tuple, list, np.ndarray), [np.zeros((0, 3)), np.ones((2, 2, 2))]),
    "_vector": ((tuple, list, np.ndarray, float, int), [np.zeros(0), []]),
}

KIND_POOL = ["no", "yes", "1", "auto", 1, 0, 1.0, 2.5, True, False, np.bool_(False), 1j, None,
             object(), [1.0], {"a": 1}, b"x"]


def _satisfies(c):
    key = c.convert.__name__
    assert key in SATISFIES, f"add {key!r} (kinds, out-of-range values) to SATISFIES in this file"
    return SATISFIES[key]


def _kind_ok(c, v) -> bool:
    if isinstance(c, Interval):
        if isinstance(v, (bool, np.bool_)):
            return False
        return isinstance(v, numbers.Integral if c.kind is numbers.Integral else numbers.Real)
    if isinstance(c, Options):
        return isinstance(v, str)
    if isinstance(c, Boolean):
        return isinstance(v, (bool, np.bool_))
    if isinstance(c, NoneOr):
        return v is None or _kind_ok(c.constraint, v)
    if isinstance(c, Satisfies):
        return isinstance(v, _satisfies(c)[0])
    raise AssertionError(f"unknown constraint {c!r}: teach this file about it")


def _in_set(c, v) -> bool:
    if not _kind_ok(c, v):
        return False
    if isinstance(c, Interval):
        left, right = c.closed in ("both", "left"), c.closed in ("both", "right")
        lo = v > -math.inf if c.low is None else (v >= c.low if left else v > c.low)
        hi = v < math.inf if c.high is None else (v <= c.high if right else v < c.high)
        return bool(lo and hi)
    if isinstance(c, Options):
        return v in c.choices
    if isinstance(c, NoneOr):
        return v is None or _in_set(c.constraint, v)
    if isinstance(c, Satisfies):
        return not any(v is bad for bad in _satisfies(c)[1])
    return True  # Boolean


def _outside(c) -> list:
    """Values of the right kind for ``c`` but outside its set."""
    if isinstance(c, Interval):
        out = [] if c.kind is numbers.Integral else [math.nan]
        for bound, sign, closed in ((c.low, -1, ("both", "left")), (c.high, 1, ("both", "right"))):
            if bound is None:
                if c.kind is numbers.Real:
                    out.append(sign * math.inf)
            elif math.isfinite(bound):
                out.append(bound + sign * (1 if c.kind is numbers.Integral else 0.5))
                if c.closed not in closed:
                    out.append(bound)
        return [int(v) if c.kind is numbers.Integral else float(v) for v in out]
    if isinstance(c, Options):
        return ["not-a-choice", c.choices[0].upper() + "!"]
    if isinstance(c, NoneOr):
        return _outside(c.constraint)
    if isinstance(c, Satisfies):
        return list(_satisfies(c)[1])
    return []  # Boolean: every bool is allowed


def wrong_kind(opt: Option) -> list:
    return [v for v in KIND_POOL if not any(_kind_ok(c, v) for c in opt.constraints)]


def out_of_range(opt: Option) -> list:
    values = [v for c in opt.constraints for v in _outside(c)]
    return [v for v in values
            if any(_kind_ok(c, v) for c in opt.constraints)
            and not any(_in_set(c, v) for c in opt.constraints)]


def valid_other_than_default(opt: Option):
    """A value in the option's set that differs from its default."""
    c = opt.constraints[0]
    c = c.constraint if isinstance(c, NoneOr) else c
    if isinstance(c, Boolean):
        return not opt.default
    if isinstance(c, Options):
        return next(x for x in c.choices if x != opt.default)
    if isinstance(c, Interval):
        lo = 0 if c.low is None else c.low
        integral = c.kind is numbers.Integral
        for v in (lo + 1, lo + 2, lo + 0.5, lo + 0.25, (lo + (c.high or lo + 1)) / 2):
            v = int(v) if integral else float(v)
            if _in_set(c, v) and v != opt.default:
                return v
    raise AssertionError(f"no valid example for {opt!r}")


def _check_message(exc, cls, name, value, opt):
    msg = str(exc.value)
    assert msg.startswith(f"{_owner(cls)} option {name}="), msg
    for c in opt.constraints:
        assert str(c) in msg, (str(c), msg)


# ----------------------------------------------------------------------------- every option
@pytest.mark.parametrize("cls,name,opt", OPTIONS, ids=OPTION_IDS)
def test_default_is_in_its_set(cls, name, opt):
    assert any(_in_set(c, opt.default) for c in opt.constraints)
    assert cls().config[name] == opt.default


@pytest.mark.parametrize("cls,name,opt", OPTIONS, ids=OPTION_IDS)
def test_wrong_kind_is_a_type_error_naming_the_option(cls, name, opt):
    bad = wrong_kind(opt)
    assert bad, f"{name}: no wrong-kind example"
    for value in bad:
        with pytest.raises(TypeError) as exc:
            cls(**{name: value})
        assert not isinstance(exc.value, ValueError)
        _check_message(exc, cls, name, value, opt)


@pytest.mark.parametrize("cls,name,opt", OPTIONS, ids=OPTION_IDS)
def test_out_of_range_is_a_value_error_naming_the_option(cls, name, opt):
    bad = out_of_range(opt)
    if all(isinstance(c.constraint if isinstance(c, NoneOr) else c, Boolean)
           for c in opt.constraints):
        assert bad == []
        pytest.skip("a boolean (or None) has no range")
    assert bad, f"{name}: no out-of-range example"
    for value in bad:
        with pytest.raises(ValueError) as exc:
            cls(**{name: value})
        _check_message(exc, cls, name, value, opt)


BOOLEANS = [(cls, name, opt) for cls, name, opt in OPTIONS
            if any(isinstance(c, Boolean) for c in opt.constraints)]


@pytest.mark.parametrize("cls,name,opt", BOOLEANS,
                         ids=[f"{cls.__name__}.{name}" for cls, name, _ in BOOLEANS])
def test_booleans_take_only_true_and_false(cls, name, opt):
    for value in ("no", "yes", "False", 0, 1.0):
        if any(_kind_ok(c, value) for c in opt.constraints):
            continue  # certify_dual: 0 and 1.0 are (out-of-range or valid) shares too
        with pytest.raises(TypeError, match=f"{name}=.*True or False"):
            cls(**{name: value})
    for value in (True, False, np.bool_(True), np.bool_(False)):
        got = cls(**{name: value}).config[name]
        assert got is bool(value)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_unknown_option_lists_the_valid_ones(cls):
    with pytest.raises(TypeError, match="unknown option") as exc:
        cls(not_an_option=1)
    msg = str(exc.value)
    assert "not_an_option" in msg and _owner(cls) in msg
    for name in cls.option_table():
        assert repr(name) in msg


def test_the_issue_examples():
    with pytest.raises(ValueError) as exc:
        nsopt.solvers.BMRM(rtol=-1.0)
    assert str(exc.value) == "BMRM option rtol=-1.0: must be a real number in [0, inf)"
    with pytest.raises(TypeError, match=r"LSBMRM option line_search='no': must be True or False"):
        LSBMRM(line_search="no")
    with pytest.raises(ValueError, match="start='ones': must be one of 'zeros', 'sgd'"):
        ProxBMRM(start="ones")
    with pytest.raises(ValueError, match="ProximalBundle option variant='bundle'"):
        ProximalBundle(variant="bundle")
    # the minimize entry point checks the same way
    with pytest.raises(TypeError, match="max_iter=2.5: must be None or an integer in"):
        nsopt.minimize(_problem(), max_iter=2.5)


# ------------------------------------------------------------------------------ renamed options
def test_renames_are_declared():
    assert {(c.__name__, old, new) for c, new, old in RENAMED} >= {
        ("ProxBMRM", "init", "start"), ("ProxBMRM", "K", "max_step"),
        ("ProxBMRM", "T", "retune_every"), ("TrustRegionBundle", "step0", "initial_step"),
        ("LSBMRM", "theta", "query_fraction"), ("SubBFGS", "h", "inverse_hessian_floor"),
        ("SubLBFGS", "k_max", "max_direction_iter"),
        ("ExcessiveGap", "adaptive_L", "adaptive_lipschitz")}


@pytest.mark.parametrize("cls,new,old", RENAMED, ids=RENAMED_IDS)
def test_former_name_warns_once_and_maps_to_the_new_one(cls, new, old):
    opt = cls.option_table()[new]
    value = valid_other_than_default(opt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        solver = cls(**{old: value})
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1, [str(w.message) for w in caught]
    w = deprecations[0]
    assert f"{old!r} is deprecated" in str(w.message) and f"use {new}=" in str(w.message)
    assert w.filename == __file__  # points at the caller's line, not inside nsopt
    assert solver.config[new] == value and old not in solver.config
    assert getattr(solver, new) == value
    with pytest.raises(TypeError, match=f"both {old}= and {new}="):
        cls(**{old: value, new: value})
    # an invalid value under the former name is reported under the new one
    bad = wrong_kind(opt)[0]
    with pytest.raises(TypeError, match=f"option {new}="), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cls(**{old: bad})


def _problem(m=80, d=5, lam=1e-2):
    X, y = small_binary(m, d, 0)
    return nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=lam)


def test_former_names_through_minimize_warn_at_the_callers_line():
    J = _problem()
    with pytest.warns(DeprecationWarning, match="use query_fraction=0.5") as rec:
        res = nsopt.minimize(J, method="ls-bmrm", theta=0.5, max_iter=3)
    assert [w.filename for w in rec] == [__file__]
    new = nsopt.minimize(J, method="ls-bmrm", query_fraction=0.5, max_iter=3)
    np.testing.assert_array_equal(res.x, new.x)


def test_proximal_bundle_auto_warns_once_per_call_not_again_at_solve():
    J = _problem()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = nsopt.minimize(J, method="proximal-bundle", K=0.1, T=50, init="zeros", max_iter=5)
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, DeprecationWarning))
    assert len(messages) == 3
    assert all(m.startswith("ProximalBundle option") for m in messages)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        same = nsopt.minimize(J, method="proximal-bundle", max_step=0.1, retune_every=50,
                              start="zeros", max_iter=5)
    np.testing.assert_array_equal(res.x, same.x)


# ------------------------------------------------------------------------ no ignored options
@pytest.mark.parametrize("inner,backend", [("auto", QPSimplex), ("qp", QPSimplex),
                                           ("smooth", SmoothSimplex), ("osqp", OSQPSimplex)])
def test_prox_bmrm_honours_inner(inner, backend):
    """Both master problems of proximal BMRM (the prox one and the certificate's) are L2 QPs:
    ``inner`` picks their backend (it was accepted and ignored: QPSimplex always)."""
    if inner == "osqp":
        pytest.importorskip("osqp")
    J = _problem()
    states = list(ProxBMRM(inner=inner, max_iter=4).iterate(J))
    assert all(type(s.master) is backend for s in states)
    res = ProxBMRM(inner=inner, rtol=1e-4).solve(J)
    assert res.success and res.lower_bound <= res.fun


def test_prox_bmrm_refuses_backends_that_cannot_solve_its_master():
    with pytest.raises(ValueError, match="ProxBMRM option inner='lp'"):
        ProxBMRM(inner="lp")


@pytest.mark.parametrize("name", ["n_models", "inner_rtol", "inner", "planes"])
def test_trust_region_has_no_options_it_would_ignore(name):
    """``n_models`` (one cutting-plane model per group of examples) and the master-problem
    options of the BMRM family are not the trust-region bundle's: the generic error lists
    what it takes."""
    with pytest.raises(TypeError, match=f"unknown option.*{name}.*valid options: .*'initial_step'"):
        TrustRegionBundle(**{name: 1})


# ------------------------------------------------------------------------------ the vocabulary
def test_interval_words_and_ends():
    from numbers import Integral, Real
    assert str(Interval(Real, 0, None, closed="left")) == "a real number in [0, inf)"
    assert str(Interval(Real, 0, 1, closed="neither")) == "a real number in (0, 1)"
    assert str(Interval(Integral, 1, None, closed="left")) == "an integer in [1, inf)"
    assert str(Interval(Real, 0, math.inf, closed="right")) == "a real number in (0, inf]"
    half_open = Interval(Real, 0, None, closed="both")       # None is never included
    with pytest.raises(ValueError):
        half_open.check(math.inf)
    assert Interval(Real, 0, math.inf, closed="right").check(math.inf) == math.inf
    assert type(Interval(Integral, 0, None, closed="left").check(np.int64(3))) is int
    assert type(Interval(Real, 0, None, closed="left").check(np.float32(2))) is float
    with pytest.raises(TypeError):
        Interval(Integral, 0, None, closed="left").check(3.0)
    with pytest.raises(ValueError):
        Interval(Real, None, None, closed="neither").check(math.nan)
    with pytest.raises(ValueError, match="closed"):
        Interval(Real, 0, 1, closed="open")


def test_an_option_cannot_declare_a_default_it_would_refuse():
    with pytest.raises(ValueError, match="default"):
        Option(-1, Interval(numbers.Integral, 0, None, closed="left"))
    with pytest.raises(TypeError, match="default"):
        Option(None, Boolean())
    with pytest.raises(TypeError, match="Constraint"):
        Option(True, bool)  # the old spelling: a converter, which took "no" as True


def test_validate_options_alone():
    table = {"new": Option(1, Interval(numbers.Integral, 1, None, closed="left"), renamed_from="old")}
    with pytest.warns(DeprecationWarning, match="use new=3"):
        config, given = validate_options("Thing", table, {"old": 3})
    assert config == given == {"new": 3}
    assert validate_options("Thing", table, {}) == ({"new": 1}, {})


def test_an_option_named_like_a_solver_method_is_refused_at_class_definition():
    # options are read as attributes: an option "step" would be hidden by Solver.step (the
    # add-a-solver demo of issue 15 met it as "unsupported operand type(s): 'method'")
    from numbers import Real

    from nsopt.solvers import Option, Solver
    from nsopt._validation import Interval

    with pytest.raises(TypeError, match=r"\['step'\] are named like attributes"):
        class Shadowed(Solver):  # noqa: F841
            name = "shadowed"
            options = {"step": Option(1.0, Interval(Real, 0, None, closed="neither"), doc="c")}

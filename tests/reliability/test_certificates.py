"""Certificate.check verifies from the problem's own data, never from the run's word.

Every measured way to fool the old check (it only redid b_bar - lam Omega*(-a_bar/lam)) is an
explicit test below; a hypothesis test tampers with every field of real certificates (dual-point,
query-point and saddle-point evidence) and requires "caught or still true": check raises
CertificateError, or the bound it returns is still below the optimum (cvxpy)."""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import regularizers as R
from nsopt.certificate import (Certificate, CertificateError, DualPoint, QueryPoints,
                               SaddlePoint)
from nsopt.losses import Hinge, Logistic, MulticlassHinge
from nsopt.solvers import methods_supporting

from cvxref import cvxpy_multiclass_hinge, cvxpy_optimum, small_binary, small_multiclass

LAM = 1e-2


@functools.lru_cache(maxsize=None)
def case(name):
    """``(J, f_star)`` for the three reference problems."""
    if name == "hinge-l2":
        X, y = small_binary(80, 6, seed=1)
        return nsopt.RegularizedRisk(Hinge(X, y), R.L2(), LAM), cvxpy_optimum(X, y, "hinge", R.L2(), LAM)
    if name == "logistic-l1":
        X, y = small_binary(80, 6, seed=2)
        return (nsopt.RegularizedRisk(Logistic(X, y), R.L1(), LAM),
                cvxpy_optimum(X, y, "logistic", R.L1(), LAM))
    X, y = small_multiclass(60, 4, 3, seed=3)
    return (nsopt.RegularizedRisk(MulticlassHinge(X, y), R.L2(), LAM),
            cvxpy_multiclass_hinge(X, y, 3, R.L2(), LAM))


CASES = ["hinge-l2", "logistic-l1", "multiclass-l2"]
RUNS = [(c, m) for c in CASES for m in methods_supporting(case(c)[0])]


@functools.lru_cache(maxsize=None)
def run(name, method):
    J, _ = case(name)
    try:
        return nsopt.minimize(J, method=method, rtol=1e-4, max_iter=3000)
    except nsopt.solvers.ProblemNotSupported as exc:  # e.g. proximal-bundle's default variant on L1
        pytest.skip(str(exc))


def tol(f):
    return 1e-7 * (1 + abs(f))


@pytest.mark.parametrize("name,method", RUNS)
def test_every_method_certificate_passes_check_below_cvxpy(name, method):
    J, f_star = case(name)
    res = run(name, method)
    assert res.success, res
    bound = res.certificate.check(J)
    assert bound >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))
    assert bound <= f_star + tol(f_star) and res.fun >= f_star - tol(f_star)
    kind = res.certificate.evidence
    if name == "multiclass-l2":  # no dual_plane: query points, or the saddle point of EG
        assert isinstance(kind, (QueryPoints, SaddlePoint))
    else:
        assert isinstance(kind, DualPoint)


# --- the measured failures of the old check, one test each ------------------------------
def base(name="hinge-l2", method="bmrm"):
    return case(name)[0], run(name, method).certificate


def test_b_bar_nan_is_rejected():
    J, cert = base()
    with pytest.raises(CertificateError):
        dataclasses.replace(cert, b_bar=math.nan).check(J)


def test_lower_123_with_a_nan_bound_is_rejected():
    J, cert = base()
    bad = dataclasses.replace(cert, lower=123.0, gap=cert.upper - 123.0,
                              a_bar=np.full(J.dim, math.nan))
    with pytest.raises(CertificateError):
        bad.check(J)
    # the same claim with evidence whose bound is NaN: also rejected, never -inf returned
    t = np.array(cert.evidence.t)
    t[0] = math.nan
    bad = dataclasses.replace(cert, lower=123.0, gap=cert.upper - 123.0,
                              evidence=DualPoint(t))
    with pytest.raises(CertificateError):
        bad.check(J)


@pytest.mark.parametrize("delta", [-1, 1])
def test_a_bar_of_wrong_length_is_rejected(delta):
    J, cert = base()
    a = cert.a_bar
    a = a[:-1] if delta < 0 else np.append(a, 0.0)
    with pytest.raises(CertificateError):
        dataclasses.replace(cert, a_bar=a).check(J)


@pytest.mark.parametrize("name", CASES)
def test_lower_and_b_bar_raised_together_is_rejected(name):
    J, f_star = case(name)
    cert = run(name, "bmrm").certificate
    bad = dataclasses.replace(cert, lower=cert.lower + 1, b_bar=cert.b_bar + 1,
                              gap=cert.gap - 1)
    assert bad.lower > f_star
    with pytest.raises(CertificateError):
        bad.check(J)


def test_certificate_from_other_data_same_lam_is_rejected():
    J, cert = base()
    X, y = small_binary(80, 6, seed=7)
    other = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), LAM)
    with pytest.raises(CertificateError, match="another problem"):
        cert.check(other)


def test_certificate_at_other_lam_is_rejected():
    J, cert = base()
    other = nsopt.RegularizedRisk(J.loss, R.L2(), LAM / 10)
    with pytest.raises(CertificateError, match="another problem"):
        cert.check(other)
    other = nsopt.RegularizedRisk(J.loss, R.L1(), LAM)
    with pytest.raises(CertificateError, match="another problem"):
        cert.check(other)


def test_no_evidence_checks_trivially_and_claims_need_evidence():
    J, cert = base()
    none = Certificate(upper=cert.upper, lower=-math.inf, gap=math.inf, source="none")
    assert none.check(J) == -math.inf
    with pytest.raises(CertificateError):
        dataclasses.replace(cert, evidence=None).check(J)


def test_query_point_check_calls_the_oracle_once_per_point():
    J, cert = case("multiclass-l2")[0], run("multiclass-l2", "bmrm").certificate
    ev = cert.evidence
    assert isinstance(ev, QueryPoints) and len(ev.points) >= 1
    calls = []
    loss = J.loss
    orig = type(loss).value_and_subgradient
    try:
        type(loss).value_and_subgradient = lambda self, w: (calls.append(1), orig(self, w))[1]
        cert.check(J)
    finally:
        type(loss).value_and_subgradient = orig
    assert len(calls) == int(np.count_nonzero(np.asarray(ev.weights).any(axis=1)))


# --- random tampering: caught or still true ------------------------------------------------
EVIDENCE = [("hinge-l2", "bmrm"), ("logistic-l1", "bmrm"), ("multiclass-l2", "bmrm"),
            ("multiclass-l2", "excessive-gap"), ("hinge-l2", "excessive-gap"),
            ("hinge-l2", "kbundle"), ("multiclass-l2", "kbundle"), ("logistic-l1", "sublbfgs")]
FIELDS = ["lower", "upper", "gap", "b_bar", "a_bar", "x", "evidence", "weights", "floor"]


def _tamper_array(a, op, index, delta):
    a = np.array(a, dtype=np.float64, copy=True)
    if op == "truncate":
        return a[:-1] if a.ndim == 1 else a[:-1]
    if op == "extend":
        return np.concatenate([a, np.zeros((1,) + a.shape[1:])])
    flat = a.reshape(-1)
    if flat.size == 0:
        return a
    i = index % flat.size
    flat[i] = math.nan if op == "nan" else flat[i] + delta
    return a


def tamper(cert, field, op, index, delta):
    if field in ("lower", "upper", "gap", "b_bar"):
        v = getattr(cert, field)
        v = math.nan if op == "nan" else v + (delta if op in ("plus", "minus") else 0.0)
        return dataclasses.replace(cert, **{field: v})
    if field in ("a_bar", "x"):
        return dataclasses.replace(cert, **{field: _tamper_array(getattr(cert, field), op, index, delta)})
    ev = cert.evidence
    if isinstance(ev, DualPoint):
        new = dataclasses.replace(ev, t=_tamper_array(ev.t, op, index, delta))
    elif isinstance(ev, SaddlePoint):
        new = dataclasses.replace(ev, alpha=_tamper_array(ev.alpha, op, index, delta))
    elif field == "weights":
        new = dataclasses.replace(ev, weights=_tamper_array(ev.weights, op, index, delta))
    elif field == "floor":
        new = dataclasses.replace(ev, floor=_tamper_array(ev.floor, op, index, delta))
    else:  # a query point's entry
        points = list(ev.points)
        if op == "truncate":
            points = points[:-1]
        elif op == "extend":
            points.append(np.zeros_like(points[0]))
        else:
            k = index % len(points)
            points[k] = _tamper_array(points[k], op, index // len(points), delta)
        new = dataclasses.replace(ev, points=tuple(points))
    return dataclasses.replace(cert, evidence=new)


@settings(max_examples=150, deadline=None)
# a dual point a bundle method formed lazily (bundle._DeferredDualPoint) must reach the
# certificate as a plain DualPoint that a forger can replace (full-suite find, 2026-11-24)
@example(which=("hinge-l2", "bmrm"), field="evidence", op="nan", index=0, size=1e-14)
@given(which=st.sampled_from(EVIDENCE), field=st.sampled_from(FIELDS),
       op=st.sampled_from(["nan", "plus", "minus", "truncate", "extend"]),
       index=st.integers(0, 10 ** 6), size=st.sampled_from([1e-14, 1e-9, 1e-6, 1e-3, 1.0, 100.0]))
def test_random_tampering_is_caught_or_still_true(which, field, op, index, size):
    J, f_star = case(which[0])
    cert = run(*which).certificate
    delta = -size if op == "minus" else size
    bad = tamper(cert, field, op, index, delta)
    try:
        bound = bad.check(J)
    except CertificateError:
        return
    # not caught: then what it proves is true, and at least its claim
    assert bound <= f_star + tol(f_star)
    assert bad.lower <= bound + 1e-9 * (1 + abs(bound))
    assert bad.lower <= f_star + tol(f_star)

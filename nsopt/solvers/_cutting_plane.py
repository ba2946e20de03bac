r"""What the BMRM family shares: the plane policy and the master solve.

BMRM, LS-BMRM and KBundle differ only in where they query the oracle next and which planes
they keep; this module holds the common part, so no solver file repeats it:

* :func:`new_bundle`: a :class:`~nsopt.bundle.PlaneBundle` for a ``RegularizedRisk``, with the
  loss's floor :math:`R \ge` ``loss.lower_bound`` as a first plane (fixed, or ordinary when the
  policy aggregates everything);
* :func:`add_planes`: apply the keep policy (drop planes idle for ``remove_inactive``
  iterations, compress to ``max_planes``) and add the plane of an evaluation;
* :func:`solve_master`: solve the master dual warm-started, returning a :class:`Master`
  (multipliers, proven bound, its evidence, the time spent); :func:`add_and_solve` does both.
"""
from __future__ import annotations

import math
import time
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from .._validation import Interval, NoneOr, Option, Options, Satisfies, check_planes
from ..bundle import PlaneBundle
from ..oracle import freeze
from ..inner import select
from ..losses._groups import contiguous_groups

__all__ = ["intercept_reason", "new_bundle", "add_planes", "solve_master", "add_and_solve", "PLANE_OPTIONS", "Master"]


PLANE_OPTIONS = {
    "inner": Option("auto", Options(("auto", "qp", "osqp", "lp", "smooth")),
                    doc="master-problem backend (nsopt.inner.select)"),
    "inner_rtol": Option(1e-2, Interval(Real, 0, 1, closed="left"),
                         doc="master duality gap target, relative to the outer gap"),
    "remove_inactive": Option(10, NoneOr(Interval(Integral, 1, None, closed="left")),
                              doc="drop planes idle this many iterations (None: never)"),
    "max_planes": Option(None, NoneOr(Interval(Integral, 3, None, closed="left")),
                         doc="hard cap on the bundle (aggregation when full)"),
    "planes": Option(None, NoneOr(Satisfies(check_planes, "a pair (A, b) of finite plane slopes "
                                                          "A (n x d) and offsets b (n,)")),
                     doc="warm start: cutting planes (A, b) of the same loss, "
                         "e.g. Result.info['planes'] of a run at another lam"),
}


class Master(NamedTuple):
    """The result of one model update: the master solution and bookkeeping.

    ``dual_value`` is the bound proven at the multipliers made exactly feasible
    (:meth:`PlaneBundle.certify`), ``evidence`` its proof (None: a plane without evidence, e.g.
    a user's warm-start plane, has a positive multiplier)."""

    alpha: np.ndarray
    dual_value: float
    w: np.ndarray
    a_bar: np.ndarray
    b_bar: float
    seconds: float
    n_iter: int
    evidence: object = None


def intercept_reason(problem, name: str) -> str | None:
    r"""Why the BMRM-family method ``name`` cannot solve ``problem`` with an intercept, or None.

    Their master problems carry the intercept as a box on ``b`` (the dual's equality relaxed
    to :math:`-B\|A_b^T\alpha\|_1`, :mod:`nsopt.inner.intercept`), which needs a quadratic or
    L1 regularizer and a proven bound B (:meth:`~nsopt.RegularizedRisk.intercept_bound`)."""
    if not getattr(problem, "fit_intercept", False):
        return None
    others = "use 'subbfgs', 'sublbfgs' or 'proximal-bundle', which treat the intercept as a free coordinate"
    if problem.reg.inner is None:
        return (f"method {name!r} with fit_intercept=True needs a quadratic (L2, QuadraticForm) or "
                f"L1 regularizer for its master problem with intercepts, got "
                f"{type(problem.base_reg).__name__}; {others}")
    if not math.isfinite(problem.intercept_bound()):
        return (f"method {name!r} with fit_intercept=True needs a proven bound on the optimal "
                f"intercept, and none is known for {type(problem.base_loss).__name__} with "
                f"{type(problem.base_reg).__name__} (RegularizedRisk.intercept_bound() is inf); "
                f"{others}")
    return None


def evidence_kind(problem) -> tuple[str, int | None]:
    """``("dual", m)`` for a margin loss (planes carry dual points), else ``("points", None)``."""
    loss = problem.loss
    if getattr(loss, "dual_upper", None) is not None:
        return "dual", loss.m
    return "points", None


def new_bundle(problem, fixed_floor: bool = True, planes=None, n_models: int = 1) -> PlaneBundle:
    """A bundle for ``problem``: the loss's floor plane, then the warm-start ``planes``
    (planes of the loss do not depend on ``lam``, so a run along a path reuses them).

    With ``n_models = P > 1`` (one model per group of examples) each block gets the floor 0
    when the loss is nonnegative (``loss.lower_bound == 0``: every partial risk is then
    nonnegative too); warm-start planes are not supported then.
    """
    kind, m = evidence_kind(problem)
    bundle = PlaneBundle(problem.dim, metric=problem.reg.gram_metric, n_blocks=n_models,
                         evidence=kind, n_examples=m)
    floor = problem.loss.lower_bound
    if n_models > 1:
        if planes is not None:
            raise ValueError("warm-start planes are for a single cutting-plane model (n_models=1)")
        if floor == 0.0:
            for p in range(n_models):
                bundle.add_floor(0.0, block=p)
        return bundle
    if math.isfinite(floor):
        bundle.add_floor(float(floor), fixed=fixed_floor)
    if planes is not None:
        A, b = planes
        if A.shape[1] != problem.dim:
            raise ValueError(f"warm-start planes have dimension {A.shape[1]}, expected {problem.dim}")
        for i, b_i in enumerate(b):
            bundle.add(A[i], b_i)
    return bundle


def bundle_planes(bundle: PlaneBundle) -> tuple[np.ndarray, np.ndarray]:
    """The ordinary (non-fixed) planes as ``(A, b)`` copies, for ``Result.info['planes']``
    (``A`` a scipy.sparse CSR matrix when the bundle stores sparse rows)."""
    k = bundle.n_fixed
    return bundle.rows(k), bundle.b[k:].copy()


def add_and_solve(problem, bundle: PlaneBundle, alpha: np.ndarray, ev, master, *,
                  outer_gap: float, inner_rtol: float, **policy) -> Master:
    """Add the loss plane of evaluation ``ev`` to ``bundle`` and re-solve the master dual:
    :func:`add_planes` then :func:`solve_master` (``policy``: the former's keywords)."""
    alpha, n_new = add_planes(bundle, alpha, ev, **policy)
    return solve_master(problem, bundle, alpha, n_new, master, outer_gap=outer_gap,
                        inner_rtol=inner_rtol)


def add_planes(bundle: PlaneBundle, alpha: np.ndarray, ev, *, remove_inactive=None,
               max_planes=None, keep_newest=None, groups=None) -> tuple[np.ndarray, int]:
    """Apply the keep policy and add the loss plane of evaluation ``ev`` to ``bundle``;
    return the multipliers aligned with the updated bundle and the number of planes added.

    ``alpha`` are the current multipliers (aligned with ``bundle``). ``keep_newest`` selects
    the aggregation policy used when the bundle is full (see :meth:`PlaneBundle.compress`).
    With ``groups = (values, subgradients)`` (multiple cutting-plane models) one plane per
    model is added instead, plane ``p`` to block ``p``, and ``max_planes`` applies per block.
    The bundle keeps what it needs of ``ev`` (the slope in sparse form when that is smaller):
    a caller that lets ``ev`` go before :func:`solve_master` frees its dense d-vectors.
    """
    if remove_inactive is not None and bundle.n > bundle.n_fixed and alpha.size == bundle.n:
        alpha = alpha[bundle.drop(bundle.age >= remove_inactive)]
    if groups is None:
        if max_planes is not None and bundle.n >= max_planes:
            alpha = bundle.compress(alpha, max_planes, keep_newest=keep_newest)
        bundle.add_at(ev.w, ev.loss_value, ev.loss_subgradient, dual=ev.loss_dual)
        n_new = 1
    else:
        values, subgradients = groups
        for p in range(len(values)):
            if max_planes is not None and alpha.size == bundle.n:
                alpha = bundle.compress(alpha, max_planes, keep_newest=keep_newest, block=p)
        t = ev.loss_dual
        if t is not None:  # part p's plane is that of t restricted to its rows
            cuts = contiguous_groups(t.size, len(values))  # the loss's own split
        for p, (value, a) in enumerate(zip(values, subgradients)):
            t_p = None
            if t is not None:
                t_p = np.zeros(t.size)
                t_p[cuts[p]:cuts[p + 1]] = t[cuts[p]:cuts[p + 1]]
            bundle.add_at(ev.w, value, a, block=p, dual=t_p)
        n_new = len(values)
    return alpha, n_new


def solve_master(problem, bundle: PlaneBundle, alpha: np.ndarray, n_new: int, master, *,
                 outer_gap: float, inner_rtol: float) -> Master:
    """Solve the master dual over ``bundle``, warm-started from ``alpha`` (zeros for the
    ``n_new`` planes just added), to ``inner_rtol`` times the outer gap."""
    warm = (np.append(alpha, np.zeros(n_new))
            if alpha.size == bundle.n - n_new and alpha.sum() > 0 else None)
    # a gap that rounding made <= 0 asks for a solve to rounding (tol None), never a negative tol
    tol = (inner_rtol * outer_gap
           if inner_rtol > 0 and math.isfinite(outer_gap) and outer_gap > 0 else None)
    reg, lam = problem.reg, problem.lam  # read once (an oracle forwards them: not free)
    t0 = time.perf_counter()
    sol = master.solve(bundle, reg, lam, warm=warm, tol=tol, deadline=problem.deadline)
    seconds = time.perf_counter() - t0
    bundle.update_ages(sol.alpha)
    value, a_bar, b_bar, evidence = bundle.certify(reg, lam, sol.alpha)
    return Master(sol.alpha, value, freeze(sol.w), a_bar, b_bar, seconds, sol.n_iter, evidence)


def master_solver(problem, option: str):
    return select(problem.reg, option)

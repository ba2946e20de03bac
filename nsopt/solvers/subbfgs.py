r"""subBFGS and subLBFGS: quasi-Newton for nonsmooth convex functions ([YVGS10]_ Algs. 1-2).

BFGS generalised in three places. The local model is pseudo-quadratic,

.. math::  M_t(p) = \tfrac12 p^T B_t^{-1} p + \sup_{g \in \partial J(w_t)} g^T p
           \qquad ([YVGS10]_ \text{ eq. 10}),

and its minimiser, a quasi-Newton *descent* direction :math:`p_t = -B_t\bar g_t` with
:math:`\bar g_t \in \partial J(w_t)`, is found by a bundle-type inner loop (Algorithm 2,
:func:`descent_direction`) that only asks the oracle for
:math:`\arg\sup_{g\in\partial J(w)} g^T p`; the step obeys the subgradient Wolfe conditions
(:mod:`nsopt.linesearch`) or is exact where the line function has an exact minimiser; and the
curvature pair is kept positive (:math:`s^T y > 0`, :math:`s^T y / y^T y \ge h`).
``SubBFGS`` stores :math:`B_t` densely, ``SubLBFGS`` as the last ``memory`` pairs (two-loop
recursion); they share the quasi-Newton loop (:mod:`nsopt.solvers._quasi_newton`, where the
stores live) and this module's iteration, :class:`SubgradientStep`, and differ only in the store.

On ``RegularizedRisk(loss, L1, lam)`` with a differentiable loss ``SubLBFGS`` plugs in OWL-QN's
iteration instead (:mod:`nsopt.solvers.owlqn`): the paper's OWL-QN* (Sec. 7.1.1, 8.4) by
default, with Algorithm 2 as its direction finder, or plain OWL-QN (Andrew & Gao 2007) for
comparison.
"""
from __future__ import annotations

import math
from numbers import Integral
from typing import NamedTuple

import numpy as np

from .._validation import Interval, Option, Options
from ._base import bare_oracle
from ._quasi_newton import DenseInverseHessian, LBFGSInverseHessian, QuasiNewton
from ._registry import register
from .owlqn import OrthantWiseStep, applies as _owlqn_applies

__all__ = ["SubBFGS", "SubLBFGS", "SubgradientStep", "descent_direction", "DescentDirection",
           "DenseInverseHessian", "LBFGSInverseHessian"]


# ----------------------------------------------------------------------------------------
# Algorithm 2: direction finding
# ----------------------------------------------------------------------------------------
class DescentDirection(NamedTuple):
    """What :func:`descent_direction` returns.

    ``p`` is :math:`p_t = -B\\bar g` (the candidate of least model value), ``slope`` its
    directional derivative :math:`\\sup_{g\\in\\partial J(w)} g^Tp_t` (< 0 iff descent),
    ``g_sup`` a subgradient attaining it, ``g_bar`` the aggregated subgradient (the
    minimum-norm estimate in the :math:`B` metric), ``n_inner`` the passes through lines 6-13,
    ``gap`` the final :math:`\\varepsilon^{(i)}`, ``success`` whether ``slope < 0``."""

    p: np.ndarray
    slope: float
    g_sup: np.ndarray
    g_bar: np.ndarray
    n_inner: int
    gap: float
    success: bool


class _Alg2:
    """The running state of Algorithm 2 at one point; ``observe`` records an argsup answer for
    the current candidate (lines 4, 10-11), ``mix`` takes one dual step (lines 7-9).

    With ``origin`` (where ``g1`` came from: ``(point, direction)``, direction None for the
    oracle's own subgradient, a vector p for ``sup_subgradient(point, p)``), ``recipe`` follows
    ``g_bar`` as a combination ``((weight, point, direction, g), ...)`` of the subgradients met,
    so a zero aggregate can be proven by the oracle (:class:`~nsopt.certificate.OraclePlanes`);
    None when some subgradient came without its origin."""

    def __init__(self, store, g1, origin=None):
        self.store = store
        self.g_bar = np.array(g1, dtype=np.float64)
        self.recipe = None if origin is None else ((1.0, origin[0], origin[1], self.g_bar),)
        self.o_next = None
        self.p = -store.dot(self.g_bar)                      # [YVGS10, Alg. 2, l. 3]
        self.pg = float(self.p @ self.g_bar)                 # p^T g_bar = -g_bar^T B g_bar
        self.min_M, self.best, self.eps = math.inf, None, math.inf
        self.n_inner = 0
        # linearization error at w of g_bar (0 while every subgradient is taken at w)
        self.lin_err, self.e_next = 0.0, 0.0

    def observe(self, slope, g, lin_err=0.0, origin=None):
        M = slope - 0.5 * self.pg                            # M(p^(i)), eq. 89
        if M < self.min_M:
            self.min_M, self.best = M, (self.p, slope, g, self.g_bar, self.lin_err, self.recipe)
        self.eps = self.min_M - 0.5 * self.pg                # l. 5 / l. 11 (eq. 79)
        self.g_next, self.slope_next, self.e_next = g, slope, lin_err
        self.o_next = origin

    def restart_from_best(self, slope, g, lin_err, origin=None):
        """A null step: the best candidate met a subgradient ``g`` of a point within rounding
        of w (``slope = g^T p``), whose linearization error at w is ``lin_err``. Continue from
        that candidate with ``g`` as its violator."""
        self.p, _, _, self.g_bar, self.lin_err, self.recipe = self.best
        self.pg = float(self.p @ self.g_bar)
        self.min_M, self.best = math.inf, None
        self.observe(slope, g, lin_err, origin)

    def keep_going(self, epsilon, k_max):                   # l. 6
        return ((self.slope_next > 0 or self.eps > epsilon) and self.eps > 0
                and self.n_inner + 1 < k_max)                        # i < k_max, i from 1

    def mix(self):
        """l. 7-9 with mu* of eq. 97, clipped to [0, 1] as eq. 73 is (the printed l. 7 and
        eq. 97 lack the clip); False when no dual progress is possible (mu* = 0)."""
        g, gp = self.g_next, self.slope_next
        Bg = self.store.dot(g)
        num = gp - self.pg
        den = float(g @ Bg) + 2.0 * gp - self.pg
        if not (num > 0 and den > 0):
            return False
        mu = min(1.0, num / den)
        self.g_bar = (1.0 - mu) * self.g_bar + mu * g
        if self.recipe is not None and self.o_next is not None:
            self.recipe = tuple((c * (1.0 - mu), x, p, gi) for c, x, p, gi in self.recipe) + (
                (mu, self.o_next[0], self.o_next[1], g),)
        else:
            self.recipe = None
        self.lin_err = (1.0 - mu) * self.lin_err + mu * self.e_next
        self.p = (1.0 - mu) * self.p - mu * Bg
        self.pg = float(self.p @ self.g_bar)
        self.n_inner += 1
        return True

    def run(self, oracle, w, epsilon, k_max):
        while self.keep_going(epsilon, k_max) and self.mix():
            p = self.p
            self.observe(*oracle.sup_subgradient(w, p), origin=(w, p))  # l. 10

    def result(self):
        p, slope, g, g_bar = self.best[:4]                      # l. 14
        return DescentDirection(p, slope, g, g_bar, self.n_inner, self.eps, slope < 0)


def descent_direction(oracle, w, g1, store, epsilon=1e-5, k_max=100) -> DescentDirection:
    r"""[YVGS10]_ Algorithm 2: a direction :math:`p = -B\bar g`, :math:`\bar g \in \partial J(w)`,
    approximately minimising the model :math:`\tfrac12 p^TB^{-1}p + \sup_{g\in\partial J(w)} g^Tp`.

    Starts from ``g1`` in the subdifferential and repeatedly asks ``oracle.sup_subgradient(w, p)``
    for the subgradient most violating the current candidate, moving :math:`\bar g` towards it
    by the exact dual line step :math:`\mu^*` (eq. 97). Stops when the candidate is a descent
    direction and the duality-gap bound :math:`\varepsilon^{(i)} \le` ``epsilon``, when
    :math:`\varepsilon^{(i)} \le 0`, or at ``i = k_max`` (``i`` counted from 1 as printed, so at
    most ``k_max - 1`` passes; ``k_max = 1`` is plain BFGS's :math:`-Bg`). ``store`` is anything with
    ``dot(v) = B v``. Returns a :class:`DescentDirection`; ``success`` is False ("failure",
    line 16) when the best candidate is not a descent direction.
    """
    alg = _Alg2(store, g1)
    alg.observe(*oracle.sup_subgradient(w, alg.p))             # l. 4-5
    alg.run(oracle, w, epsilon, k_max)
    return alg.result()


class _Stuck(NamedTuple):
    """Algorithm 2 found no descent direction: its aggregate ``g_bar`` is a
    ``lin_err``-subgradient at w (the stationarity certificate); ``recipe``: its combination
    (see :class:`_Alg2`)."""

    g_bar: np.ndarray
    lin_err: float
    recipe: tuple | None = None


class _Identity:
    @staticmethod
    def dot(v):
        return np.array(v, dtype=np.float64)


# ----------------------------------------------------------------------------------------
# The iteration: Algorithm 2, then the line search (the variant SubBFGS plugs in)
# ----------------------------------------------------------------------------------------
class SubgradientStep:
    r"""One iteration of [YVGS10]_ Alg. 1 (l. 5-15): the direction of Algorithm 2, the line
    search with null steps, the curvature pair; on a failure, Algorithm 2 again with
    :math:`B = I`. The :class:`~nsopt.solvers._quasi_newton.QuasiNewtonVariant` of
    :class:`SubBFGS` and :class:`SubLBFGS` (details in :class:`SubBFGS`'s Notes)."""

    name = "subbfgs"

    def __repr__(self):
        return "SubgradientStep()"

    def step(self, solver, problem, s):
        first = s.g_bar is None and solver.initial_epsilon is not None
        eps = solver.initial_epsilon if first else solver.epsilon
        counts = dict(n_inner=s.n_inner, n_null_steps=s.n_null_steps, n_line_evals=s.n_line_evals,
                      n_armijo_violations=s.n_armijo_violations)
        # [YVGS10, Alg. 1, l. 5]: direction; l. 9: line search (with null steps, see Notes)
        found = self._direction_and_step(solver, problem, s.w, s.fun, s.g, s.store, eps, counts,
                                         s.g_origin)
        n_failures, n_restarts, store = s.n_failures, s.n_restarts, s.store
        if isinstance(found, _Stuck):                                  # l. 6: failure
            n_failures += 1
            found = self._direction_and_step(solver, problem, s.w, s.fun, s.g, _Identity, eps,
                                             counts, s.g_origin)
            if isinstance(found, _Stuck):                              # stationary: stop
                gnorm = float(np.linalg.norm(found.g_bar))
                # g_bar = 0 exactly proves J(v) >= J(w) - eps for every v: a lower bound, on a
                # bare oracle only when its recipe sums to zero exactly (else nothing is proven)
                lower, evidence = s.lower_bound, s.evidence
                if gnorm == 0.0 and not bare_oracle(problem):
                    lower = s.fun - found.lin_err  # not offered without evidence (unchanged)
                elif gnorm == 0.0:
                    proof = solver.zero_evidence(problem, found.recipe, s.fun - found.lin_err)
                    if proof is not None:
                        lower, evidence = s.fun - found.lin_err, proof
                else:   # with a region, the eps-subgradient plane bounds f over it
                    value, proof = solver.region_evidence(problem, found.recipe, found.g_bar,
                                                          s.fun - found.lin_err - float(found.g_bar @ s.w))
                    if proof is not None and value > lower:
                        lower, evidence = value, proof
                return s._replace(stationary=True, n_failures=n_failures, lower_bound=lower,
                                  evidence=evidence, subgradient_norm=gnorm,
                                  linearization_error=found.lin_err, **counts)
            n_restarts += 1
            store = store.reset()
        d, ls, lin_err = found
        common = dict(n_failures=n_failures, n_restarts=n_restarts, g_bar=d.g_bar,
                      subgradient_norm=float(np.linalg.norm(d.g_bar)),
                      linearization_error=lin_err, **counts)
        if math.isinf(ls.eta):
            return s._replace(unbounded=True, eta=math.inf, **common)
        w_new = s.w + ls.eta * d.p                                     # l. 10-11
        ev = problem.evaluate(w_new)
        step = w_new - s.w
        g_new, g_origin = ev.subgradient, (ev.w, None)                 # l. 12
        if solver.curvature_subgradient == "argsup" or step @ (g_new - s.g) <= 0:
            g_new, g_origin = problem.sup_subgradient(w_new, d.p)[1], (ev.w, d.p)
        store, skipped, shifted = solver.curvature_update(store, step, g_new - s.g)  # l. 13-15
        # gtol: the aggregate at the previous point w was small. Moved to w_new, g_bar is an
        # eps'-subgradient there, eps' = eps + J(w_new) - J(w) - <g_bar, w_new - w> >= 0
        stationary = bare_oracle(problem) and common["subgradient_norm"] <= solver.gtol
        common["linearization_error"] = max(
            lin_err + ev.fun - s.fun - float(d.g_bar @ (ev.w - s.w)), 0.0)
        return s._replace(w=ev.w, fun=ev.fun, g=g_new, g_origin=g_origin, store=store, eta=ls.eta,
                          stationary=stationary, n_skipped_updates=s.n_skipped_updates + skipped,
                          n_shifts=s.n_shifts + shifted, **common)

    @staticmethod
    def _direction_and_step(solver, problem, w, f0, g1, store, eps, counts, origin=None):
        """Algorithm 2, then the line search; a step below rounding is a null step that
        feeds Algorithm 2 one more subgradient. Returns ``(direction, line search,
        linearization error of its g_bar at w)``, or :class:`_Stuck` (no descent found).
        ``origin``: where ``g1`` came from (for the evidence of a zero aggregate)."""
        k_max = solver.max_direction_iter
        alg = _Alg2(store, g1, origin)
        p = alg.p
        alg.observe(*problem.sup_subgradient(w, p), origin=(w, p))
        scale = max(1.0, float(np.abs(w).max(initial=0.0)))
        try:
            while True:
                alg.run(problem, w, eps, k_max)
                d = alg.result()
                if not d.success:
                    return _Stuck(alg.g_bar, alg.lin_err, alg.recipe)
                ls = solver.line_step(problem, w, f0, d.p, d.slope)
                counts["n_line_evals"] += ls.n_evals
                if math.isinf(ls.eta):
                    return d, ls, alg.best[4]
                reach = solver.kink_tol * scale / float(np.abs(d.p).max())
                if ls.eta > reach:
                    if not ls.value < f0:                             # rounding: give up
                        return _Stuck(alg.g_bar, alg.lin_err, alg.recipe)
                    if ls.exact and not ls.value <= f0 + solver.c1 * ls.eta * d.slope:
                        counts["n_armijo_violations"] += 1
                    return d, ls, alg.best[4]
                if alg.n_inner + 1 >= k_max:
                    return _Stuck(alg.g_bar, alg.lin_err, alg.recipe)
                # null step: probe the far side of the kinks within reach of w; its subgradient
                # g at w' = w + r p has linearization error J(w) - J(w') + r g^T p at w
                counts["n_null_steps"] += 1
                w_far = w + reach * d.p
                slope, g = problem.sup_subgradient(w_far, d.p)
                lin_err = max(f0 - problem.value(w_far) + reach * slope, 0.0)
                alg.restart_from_best(slope, g, lin_err, origin=(w_far, d.p))
                if not alg.mix():                                     # no dual progress
                    return _Stuck(alg.g_bar, alg.lin_err, alg.recipe)
                p = alg.p
                alg.observe(*problem.sup_subgradient(w, p), origin=(w, p))
        finally:
            counts["n_inner"] += alg.n_inner


#: the iteration of subBFGS / subLBFGS (stateless: one instance serves every run)
SUBGRADIENT_STEP = SubgradientStep()
#: the OWL-QN variants (OWL-QN* with Algorithm 2 as its direction finder)
OWLQN_VARIANTS = {"owlqn": OrthantWiseStep(), "owlqn*": OrthantWiseStep(descent_direction)}


# ----------------------------------------------------------------------------------------
# The solvers
# ----------------------------------------------------------------------------------------
@register
class SubBFGS(QuasiNewton):
    r"""subBFGS ([YVGS10]_ Alg. 1): BFGS for nonsmooth convex functions, dense :math:`B_t`.

    Minimises any convex :class:`~nsopt.Oracle` whose ``sup_subgradient`` is exact (every
    built-in loss, regularizer and combinator; a :class:`~nsopt.FunctionOracle` needs a
    ``sup_subgradient`` callable at its kinks).

    .. math::
        p_t = -B_t\bar g_t \;(\text{Alg. 2}), \quad w_{t+1} = w_t + \eta_t p_t, \quad
        B_{t+1} = (I - \rho s y^T) B_t (I - \rho y s^T) + \rho s s^T

    Parameters
    ----------
    epsilon : float >= 0, default 1e-5
        Direction-finding tolerance :math:`\varepsilon` (paper, Sec. 8).
    initial_epsilon : float >= 0 or None
        Tolerance at the starting point only (the paper uses 1.0 at :math:`w = 0` for
        multiclass and multilabel hinge losses, Sec. 8.1); None means ``epsilon``.
    max_direction_iter : int >= 1, default 100
        Algorithm 2's iteration limit :math:`k_{max}` (at most ``max_direction_iter - 1``
        passes per iteration, null steps
        included; 1 gives plain BFGS's direction :math:`-B_tg_t`). The paper gives none; the
        authors' early code used 1000; 100 bounds the cost of a failing search (each pass is
        one oracle call): on a 500 x 20 hinge-L2 problem subLBFGS needed 4.6k oracle calls to
        a 1e-6 gap with 100, 60k with 1000. Formerly ``k_max`` (deprecated alias).
    inverse_hessian_floor : float > 0, default 1e-8
        :math:`h`, the floor on the spectrum of :math:`B_t` ([YVGS10]_ eqs. 28-29): a lower
        bound on :math:`s^Ty/y^Ty` enforced by shifting the stored :math:`s` (Alg. 1, l. 14;
        the paper's value). Formerly ``h`` (deprecated alias).
    c1, c2 : float, 0 < c1 < c2 < 1, default 1e-4, 0.9
        Subgradient Wolfe constants. ``c1`` is the paper's; ``c2`` is not given (the usual
        quasi-Newton value). With an exact line search (23) is only checked and counted.
    line_search : {"auto", "exact", "wolfe"}, default "auto"
        ``"auto"``: exact where ``problem.restrict(w, p).minimize`` is implemented (every
        built-in loss with a built-in regularizer), else the subgradient Wolfe search.
    initial_scaling : {"identity", "gamma"}
        :math:`B_0 = I` (the paper) or :math:`(s^Ty/y^Ty)I` before the first update
        ([NW06]_ eq. 6.20); see :class:`SubLBFGS` for the measurement behind the default.
    curvature_subgradient : {"argsup", "oracle"}, default "argsup"
        :math:`g_{t+1}` for the curvature pair (Alg. 1, l. 12): the argsup along
        :math:`p_t` at :math:`w_{t+1}`, which maximises :math:`s^Ty` (one more oracle call),
        or the oracle's own subgradient, replaced by the argsup only if :math:`s^Ty \le 0`.
    gtol : float >= 0, default 1e-8
        On a problem without a certificate (not a ``RegularizedRisk``), stop when the
        aggregated subgradient :math:`\|\bar g_t\|_2 \le` ``gtol``.
    kink_tol : float in [0, 1], default 1e-10
        Points within ``kink_tol * max(1, |w|_inf)`` of :math:`w_t` count as :math:`w_t`
        for the kinks (see Notes: null steps; the OWL-QN variants snap such coordinates to 0).
    **common
        ``rtol, atol, max_iter, max_time, verbose`` (see :func:`nsopt.minimize`).

    Notes
    -----
    Notation: ``g`` = :math:`g_t`, ``g_bar`` = :math:`\bar g_t`, ``eta`` = :math:`\eta_t`,
    ``store`` = :math:`B_t` ([YVGS10]_ Algs. 1-2).

    Failure (no descent direction, Alg. 2 l. 16): the paper stops. nsopt counts it
    (``n_failures``) and retries Algorithm 2 with :math:`B = I` (a subgradient-descent step on
    the minimum-norm estimate); if that succeeds the step is taken and the quasi-Newton memory
    restarts (``n_restarts``); if not, :math:`w_t` is stationary to the solver's test and the
    state says ``stationary`` (status ``stationary``, with ``Result.subgradient_norm`` and
    ``Result.linearization_error``).

    Kinks in floating point: an exact line search lands on a hinge, which the oracle then sees
    a rounding error away, on one side only (the losses decide kinks by exact comparison), so
    the next direction may cross it at once and the exact step is ~1e-16. A step with
    :math:`\eta\|p\|_\infty \le \delta =` ``kink_tol`` :math:`\max(1, \|w\|_\infty)` is a
    *null step* (``n_null_steps``): the argsup along :math:`p` at :math:`w + \delta p/\|p\|_\infty`,
    past the kinks within rounding, joins Algorithm 2 as one more violating subgradient
    (from the :math:`\delta`-neighbourhood: the subdifferential with a tolerance) and the
    direction is re-optimised at the same point, as a bundle method's null step.
    A longer step that does not decrease :math:`J` (rounding) counts as a failure.

    Certificate: on a ``RegularizedRisk`` the shared plane certifier (source ``"planes"``).
    Elsewhere (source ``"zero-subgradient"``) the only bound is that of an aggregate
    subgradient that is *exactly* zero: :math:`g_t = 0` (then :math:`J \ge J(w_t)`), or Algorithm
    2's :math:`\bar g = 0` at a failure (then :math:`J \ge J(w_t) - \varepsilon`), claimed only
    when the combination of the oracle's subgradients it tracks (points, ``sup_subgradient``
    directions and weights) sums to zero in exact rational arithmetic, and carried as
    :class:`~nsopt.certificate.OraclePlanes` (``Certificate.check`` rebuilds it through the
    oracle: one or two calls per subgradient combined, at most ``k_max``); a :math:`\bar g`
    zero only after rounding proves nothing and is not claimed. With a region (``radius`` and
    ``centre``: a ball said to hold a minimiser) the loop's region certifier bounds the model
    of the oracle calls over it (source ``"region-planes"``), and at a failure the same
    aggregate, nonzero, proves :math:`J \ge \bar b + \min_C \langle\bar g, y\rangle` over the
    ball ``C`` (same evidence, with the region; source ``"eps-subgradient"``). Otherwise
    there is no lower bound; the run stops on ``gtol``, on stationarity, or on ``max_iter`` /
    ``max_time``. A ray along which :math:`J \to -\infty` stops the run with
    ``info["unbounded"] = True``.

    Cost per iteration: one evaluation at :math:`w_{t+1}`, one argsup there (for
    ``"argsup"``), one argsup per pass of Algorithm 2 (at least one), a line restriction, and
    the :math:`B` products: O(d^2) (dense) or O(memory d) (limited memory).

    ``Result.info``: ``n_inner`` (passes of Alg. 2, the paper's k), ``n_failures``,
    ``n_restarts``, ``n_null_steps``, ``n_skipped_updates`` (pairs with
    :math:`s^Ty \le 0`), ``n_shifts`` (l. 14 applied), ``n_armijo_violations`` (exact steps
    violating (23); accepted: they minimise :math:`J` on the line), ``n_line_evals``,
    ``unbounded``, ``mode``.

    References
    ----------
    .. [YVGS10] J. Yu, S. V. N. Vishwanathan, S. Günter, N. N. Schraudolph. A quasi-Newton
       approach to nonsmooth convex optimization problems in machine learning. JMLR
       11:1145-1200, 2010. Algorithms 1-2, Sec. 3.3-3.5, 7.1.1, 8.4.
    .. [NW06] J. Nocedal, S. J. Wright. Numerical Optimization, 2nd ed. Springer, 2006.
    .. [AG07] G. Andrew, J. Gao. Scalable training of L1-regularized log-linear models.
       ICML 2007.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    >>> res = nsopt.minimize(J, method="subbfgs", rtol=1e-4)
    >>> bool(res.success and res.gap <= 1e-4 * res.fun)
    True
    """

    name = "subbfgs"

    def variant_for(self, problem):
        """Every problem: Algorithm 2 and the subgradient line search (:class:`SubgradientStep`)."""
        return SUBGRADIENT_STEP


@register
class SubLBFGS(SubBFGS):
    r"""subLBFGS ([YVGS10]_ Sec. 3.5): :class:`SubBFGS` with the last ``memory`` curvature
    pairs instead of a dense :math:`B_t` (two-loop recursion, O(memory d) per product).

    Parameters
    ----------
    memory : int >= 1, default 15
        Pairs kept (the paper's value; insensitive in 5-25, Sec. 8.2). Not so on every
        problem: on nearly separable data, where many hinges meet at the optimum, a short
        memory zigzags across them (measured in docs/solvers.md, "Measurements"). Where
        :math:`d \le 2\,` ``memory`` and ``initial_scaling="identity"``, the run keeps the
        dense :math:`B_t` instead (:class:`SubBFGS`'s store: :math:`d^2` numbers, no more than
        ``memory`` pairs, and the same products as a memory that never drops a pair):
        on a 200 x 5 epsilon-insensitive problem with integer data at lam = 1e-6, 15 pairs
        stalled (Algorithm 2 found no descent direction in 100 passes, twice: status
        ``stationary`` at a gap of 8e-4 relative), the dense store certified 1e-4 in 14
        iterations (issue 11).
    initial_scaling : {"identity", "gamma"}, default "identity"
        :math:`H_0` of the two-loop recursion, which the paper leaves open: :math:`I`, as
        Algorithm 1's :math:`B_0` (then, with ``memory`` at least the number of iterations,
        the iterates equal :class:`SubBFGS`'s), or the LBFGS-standard
        :math:`(s^Ty/y^Ty)\,I` of the newest pair. On hinge losses the pairs that cross
        hinges have large :math:`y`, hence a tiny :math:`\gamma` and tiny steps (measured in
        docs/solvers.md, "Measurements").
    owlqn_variant : {"owlqn*", "owlqn", "none"}, default "owlqn*"
        On a ``RegularizedRisk`` whose regularizer is :math:`\|w\|_1` (``reg.l1_ratio == 1``)
        and whose loss is differentiable (``loss.differentiable``; e.g. ``Logistic``,
        ``SquaredHinge``), the iteration is OWL-QN's (:mod:`nsopt.solvers.owlqn`, plugged into
        the same loop; ``Result.info["mode"]`` names it): ``"owlqn*"`` is the paper's OWL-QN*
        (Sec. 7.1.1, 8.4): OWL-QN with its direction replaced by Algorithm 2 started from the
        pseudo-gradient :math:`g^{ow}`, the argsup oracle applying the sign rule at zero
        coordinates (:math:`\lambda\,\mathrm{sign}(p_j)` where :math:`w_j = 0`), with
        :math:`B` fitted to the logistic loss alone. ``"owlqn"`` is [AG07]_ itself,
        :math:`p = -B g^{ow}`. ``"none"`` treats the problem like any other (subLBFGS on
        :math:`J` with exact line searches).
    **options
        The other options of :class:`SubBFGS`.

    Notes
    -----
    Both OWL-QN variants then take OWL-QN's step ([AG07]_): the orthant projection
    :math:`\pi` keeps :math:`p_j` only where it has the sign of :math:`-g^{ow}_j` (so
    :math:`J'(w; p) = g^{ow\,T} p`), the orthant is :math:`\mathrm{sign}(w_j)`, or
    :math:`-\mathrm{sign}(g^{ow}_j)` where :math:`w_j = 0`, and the line search backtracks on the
    projected path (Armijo with ``c1`` on :math:`g^{ow\,T}(w(\eta) - w)`, halving, at most 50
    trials; first trial 1, or :math:`1/\|p\|_2` while no pair is stored). A coordinate that
    lands within ``kink_tol`` (relative) of 0 is set to 0. The curvature pairs use the logistic
    gradients. Whether OWL-QN* keeps :math:`\pi` and this line search is not stated in the
    paper ([YVGS10]_ Sec. 7.1.1); it keeps "the rest of OWL-QN". Measured on a9a
    (:math:`\lambda = 10^{-4}`), OWL-QN* *without* :math:`\pi` (moving zero coordinates
    off zero in the direction's own orthant) oscillated in its support and was several times
    slower, so nsopt applies :math:`\pi` to Algorithm 2's direction too, and drops it only
    when it would destroy descent (then the orthant at zeros is :math:`\mathrm{sign}(p_j)`).
    A failed search restarts from :math:`B = I` (``n_failures``, ``n_restarts``); if that
    fails too the point is stationary and the state says ``stationary`` (status ``stationary``, with ``Result.subgradient_norm`` and
    ``Result.linearization_error``).

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Logistic(X, y), nsopt.regularizers.L1(), lam=1e-2)
    >>> res = nsopt.minimize(J, method="sublbfgs", rtol=1e-4)
    >>> bool(res.success), res.info["mode"]
    (True, 'owlqn*')
    """

    name = "sublbfgs"
    options = {
        **SubBFGS.options,
        "memory": Option(15, Interval(Integral, 1, None, closed="left"),
                         doc="curvature pairs kept"),
        "owlqn_variant": Option("owlqn*", Options(("owlqn*", "owlqn", "none")),
                                doc="OWL-QN variant on L1 with a differentiable loss"),
    }

    def new_store(self, dim):
        """:math:`H_0` of a run: the last ``memory`` pairs (:class:`LBFGSInverseHessian`)."""
        if self.initial_scaling == "identity" and dim <= 2 * self.memory:
            return DenseInverseHessian.new(dim)  # every pair, in no more memory (see memory)
        return LBFGSInverseHessian.new(dim, self.initial_scaling, self.memory)

    def variant_for(self, problem):
        """OWL-QN's iteration (``owlqn_variant``) where it applies, else subLBFGS's."""
        if self.owlqn_variant != "none" and _owlqn_applies(problem.problem):
            return OWLQN_VARIANTS[self.owlqn_variant]
        return SUBGRADIENT_STEP

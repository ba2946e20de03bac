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
recursion); they share :meth:`SubBFGS.step` and differ only in that store.

On ``RegularizedRisk(Logistic, L1, lam)`` ``SubLBFGS`` runs the paper's OWL-QN* (Sec. 7.1.1,
8.4) by default, or plain OWL-QN (Andrew & Gao 2007) for comparison.
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from ..certificate import OraclePlanes, zero_aggregate
from ..linesearch import exact_line_search, wolfe_line_search
from ..problem import RegularizedRisk
from .._validation import Interval, NoneOr, Option, Options
from ._base import Solver
from ._registry import register

__all__ = ["SubBFGS", "SubLBFGS", "descent_direction", "DescentDirection",
           "DenseInverseHessian", "LBFGSInverseHessian"]


# ----------------------------------------------------------------------------------------
# The inverse-Hessian stores: the only difference between SubBFGS and SubLBFGS
# ----------------------------------------------------------------------------------------
class DenseInverseHessian(NamedTuple):
    r"""Dense :math:`B_t`, updated by [YVGS10]_ eq. 6 in O(d^2).

    ``scaling="identity"``: :math:`B_0 = I` (Alg. 1); ``"gamma"``: :math:`B_0` is replaced by
    :math:`(s^Ty/y^Ty)\,I` before the first update ([NW06]_ eq. 6.20)."""

    B: np.ndarray
    scaling: str = "identity"
    n_updates: int = 0

    @classmethod
    def new(cls, dim, scaling="identity", memory=None):
        """:math:`B_0 = I` (``memory`` is ignored: the signature is the stores' common one)."""
        return cls(np.eye(dim), scaling, 0)

    def dot(self, v):
        return self.B @ v

    def reset(self):
        return self.new(self.B.shape[0], self.scaling)

    def update(self, s, y):
        B = self.B
        if self.n_updates == 0 and self.scaling == "gamma":
            B = (s @ y) / (y @ y) * np.eye(B.shape[0])
        rho = 1.0 / (s @ y)
        By = B @ y
        # (I - rho s y^T) B (I - rho y s^T) + rho s s^T, expanded (B symmetric)
        B = (B - rho * (np.outer(s, By) + np.outer(By, s))
             + (rho * rho * (y @ By) + rho) * np.outer(s, s))
        return self._replace(B=B, n_updates=self.n_updates + 1)


class LBFGSInverseHessian(NamedTuple):
    r"""The last ``memory`` pairs :math:`(s_i, y_i)`; :math:`B v` by the two-loop recursion
    ([NW06]_ Alg. 7.4) in O(memory d). ``scaling="identity"``: :math:`H_0 = I` (then the
    products equal the dense store's while no pair has been dropped: [YVGS10]_ R31 of the
    notes); ``"gamma"``: :math:`H_0 = (s^Ty/y^Ty)\,I` from the newest pair ([NW06]_ eq. 7.20)."""

    s: tuple
    y: tuple
    rho: tuple
    memory: int
    scaling: str = "identity"

    @classmethod
    def new(cls, dim, scaling="identity", memory=15):
        return cls((), (), (), memory, scaling)

    def reset(self):
        return self._replace(s=(), y=(), rho=())

    def dot(self, v):
        q = np.array(v, dtype=np.float64)
        k = len(self.s)
        alpha = np.empty(k)
        for i in range(k - 1, -1, -1):
            alpha[i] = self.rho[i] * (self.s[i] @ q)
            q -= alpha[i] * self.y[i]
        if k and self.scaling == "gamma":
            q *= (self.s[-1] @ self.y[-1]) / (self.y[-1] @ self.y[-1])
        for i in range(k):
            beta = self.rho[i] * (self.y[i] @ q)
            q += (alpha[i] - beta) * self.s[i]
        return q

    def update(self, s, y):
        m = self.memory
        return self._replace(s=(self.s + (s,))[-m:], y=(self.y + (y,))[-m:],
                             rho=(self.rho + (1.0 / (s @ y),))[-m:])


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
        """l. 7-9 with mu* of eq. 97, clipped to [0, 1] (erratum 4 of the notes); False when no
        dual progress is possible (mu* = 0)."""
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


def _pseudo_gradient(w, loss_grad, lam):
    """OWL-QN's pseudo-gradient (Andrew & Gao 2007, eq. 4): the minimum-norm element of
    :math:`\\nabla L(w) + \\lambda\\,\\partial\\|w\\|_1`."""
    g = loss_grad + lam * np.sign(w)
    zero = w == 0
    gz = loss_grad[zero]
    g[zero] = np.where(gz + lam < 0, gz + lam, np.where(gz - lam > 0, gz - lam, 0.0))
    return g


def _bare(problem) -> bool:
    """Whether the run's problem is not a RegularizedRisk (seen through its CountingOracle)."""
    return not isinstance(getattr(problem, "oracle", problem), RegularizedRisk)


# ----------------------------------------------------------------------------------------
# The solvers
# ----------------------------------------------------------------------------------------
@register
class SubBFGS(Solver):
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
        for the kinks (see Notes: null steps; the OWL-QN modes snap such coordinates to 0).
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
    (from the :math:`\delta`-neighbourhood: the subdifferential with a tolerance, notes 002
    R8) and the direction is re-optimised at the same point, as a bundle method's null step.
    A longer step that does not decrease :math:`J` (rounding) counts as a failure.

    Certificate: on a ``RegularizedRisk`` the shared plane certifier (source ``"planes"``).
    Elsewhere (source ``"zero-subgradient"``) the only bound is that of an aggregate
    subgradient that is *exactly* zero: :math:`g_t = 0` (then :math:`J \ge J(w_t)`), or Algorithm
    2's :math:`\bar g = 0` at a failure (then :math:`J \ge J(w_t) - \varepsilon`), claimed only
    when the combination of the oracle's subgradients it tracks (points, ``sup_subgradient``
    directions and weights) sums to zero in exact rational arithmetic, and carried as
    :class:`~nsopt.certificate.OraclePlanes` (``Certificate.check`` rebuilds it through the
    oracle: one or two calls per subgradient combined, at most ``k_max``); a :math:`\bar g`
    zero only after rounding proves nothing and is not claimed. Otherwise there is no lower
    bound; the run stops on ``gtol``, on stationarity, or on ``max_iter`` / ``max_time``. A ray along which :math:`J \to -\infty` stops the run with
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
    certificate_source = "zero-subgradient"  # its own bound (bare oracles); the planes' on a risk
    requires = ("sup_subgradient",)
    history_fields = ("eta", "n_inner", "n_failures", "n_null_steps")
    _store = DenseInverseHessian
    options = {
        "epsilon": Option(1e-5, Interval(Real, 0, None, closed="left"),
                          doc="Alg. 2's tolerance on the direction's slope"),
        "initial_epsilon": Option(None, NoneOr(Interval(Real, 0, None, closed="left")),
                                  doc="epsilon of the first iteration (None: epsilon)"),
        "max_direction_iter": Option(100, Interval(Integral, 1, None, closed="left"),
                                     doc="k_max: Alg. 2's iteration limit per direction",
                                     renamed_from="k_max"),
        "inverse_hessian_floor": Option(1e-8, Interval(Real, 0, None, closed="neither"),
                                        doc="h: lower bound on s^Ty / y^Ty (Alg. 1, l. 14)",
                                        renamed_from="h"),
        "c1": Option(1e-4, Interval(Real, 0, 1, closed="neither"), doc="Armijo constant"),
        "c2": Option(0.9, Interval(Real, 0, 1, closed="neither"), doc="curvature constant"),
        "line_search": Option("auto", Options(("auto", "exact", "wolfe")),
                              doc="exact where the line knows its kinks, else Wolfe"),
        "initial_scaling": Option("identity", Options(("identity", "gamma")), doc="B_0"),
        "curvature_subgradient": Option("argsup", Options(("argsup", "oracle")),
                                        doc="g_{t+1} of the curvature pair"),
        "gtol": Option(1e-8, Interval(Real, 0, None, closed="left"),
                       doc="stop when ||g_bar|| <= gtol (no certificate)"),
        "kink_tol": Option(1e-10, Interval(Real, 0, 1, closed="both"),
                           doc="relative distance within which points count as the same kink"),
    }

    class State(NamedTuple):
        w: np.ndarray              # w_t
        fun: float                 # J(w_t)
        g: np.ndarray              # g_t in dJ(w_t): Alg. 2 starts from it, y_t uses it
        g_origin: tuple            # (w_t, p): g_t = sup_subgradient(w_t, p)[1], or the oracle's (p None)
        loss_grad: np.ndarray | None  # grad L(w_t) (OWL-QN modes only)
        store: object              # B_t: DenseInverseHessian or LBFGSInverseHessian
        g_bar: np.ndarray | None   # aggregated subgradient of the last direction search
        eta: float                 # last step size
        lower_bound: float         # an exactly zero aggregate's bound, else -inf (see Notes)
        evidence: object           # its proof (OraclePlanes), None without a bound or on a risk
        stationary: bool           # stationary by the solver's own test (see Notes)
        subgradient_norm: float    # ||g_bar|| of the last direction search (eps-subgradient at w)
        linearization_error: float  # its eps: J(v) >= J(w) + <g_bar, v - w> - eps for all v
        unbounded: bool            # J -> -inf along the last direction
        mode: str                  # "subbfgs", "owlqn*" or "owlqn"
        n_inner: int
        n_failures: int
        n_restarts: int
        n_null_steps: int
        n_skipped_updates: int
        n_shifts: int
        n_armijo_violations: int
        n_line_evals: int

    def __init__(self, **options):
        super().__init__(**options)
        c1, c2 = self.config["c1"], self.config["c2"]
        if not c1 < c2:
            raise ValueError(f"need c1 < c2, got c1={c1}, c2={c2}")

    # ------------------------------------------------------------------------------------
    def _mode(self, problem):
        return "subbfgs"

    def init(self, problem, x0):
        ev = problem.evaluate(x0)                                      # [YVGS10, Alg. 1, l. 3]
        store = self._store.new(problem.dim, self.initial_scaling, self.config.get("memory"))
        return self.State(w=ev.w, fun=ev.fun, g=ev.subgradient, g_origin=(ev.w, None),
                          loss_grad=ev.loss_subgradient,
                          store=store, g_bar=None, eta=0.0, lower_bound=-math.inf, evidence=None,
                          stationary=False, subgradient_norm=math.nan,
                          linearization_error=math.nan, unbounded=False,
                          mode=self._mode(problem),
                          n_inner=0, n_failures=0, n_restarts=0, n_null_steps=0,
                          n_skipped_updates=0, n_shifts=0, n_armijo_violations=0,
                          n_line_evals=0)

    def step(self, problem, s):
        if s.stationary:
            return s
        gnorm = float(np.linalg.norm(s.g))
        if gnorm <= self.gtol and _bare(problem):
            # g_t itself is a subgradient at w_t (eps = 0): stationary before any search; g_t = 0
            # proves J >= J(w_t) everywhere
            lower, evidence = s.lower_bound, s.evidence
            if gnorm == 0.0:
                lower, evidence = s.fun, self._zero_evidence(
                    problem, ((1.0, s.g_origin[0], s.g_origin[1], s.g),), s.fun)
            return s._replace(stationary=True, subgradient_norm=gnorm, linearization_error=0.0,
                              lower_bound=lower, evidence=evidence)
        if s.mode != "subbfgs":
            return self._owlqn_step(problem, s)
        first = s.g_bar is None and self.initial_epsilon is not None
        eps = self.initial_epsilon if first else self.epsilon
        counts = dict(n_inner=s.n_inner, n_null_steps=s.n_null_steps, n_line_evals=s.n_line_evals,
                      n_armijo_violations=s.n_armijo_violations)
        # [YVGS10, Alg. 1, l. 5]: direction; l. 9: line search (with null steps, see Notes)
        found = self._direction_and_step(problem, s.w, s.fun, s.g, s.store, eps, counts,
                                         s.g_origin)
        n_failures, n_restarts, store = s.n_failures, s.n_restarts, s.store
        if isinstance(found, _Stuck):                                  # l. 6: failure
            n_failures += 1
            found = self._direction_and_step(problem, s.w, s.fun, s.g, _Identity, eps, counts,
                                             s.g_origin)
            if isinstance(found, _Stuck):                              # stationary: stop
                gnorm = float(np.linalg.norm(found.g_bar))
                # g_bar = 0 exactly proves J(v) >= J(w) - eps for every v: a lower bound, on a
                # bare oracle only when its recipe sums to zero exactly (else nothing is proven)
                lower, evidence = s.lower_bound, s.evidence
                if gnorm == 0.0 and not _bare(problem):
                    lower = s.fun - found.lin_err  # not offered without evidence (unchanged)
                elif gnorm == 0.0:
                    proof = self._zero_evidence(problem, found.recipe, s.fun - found.lin_err)
                    if proof is not None:
                        lower, evidence = s.fun - found.lin_err, proof
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
        if self.curvature_subgradient == "argsup" or step @ (g_new - s.g) <= 0:
            g_new, g_origin = problem.sup_subgradient(w_new, d.p)[1], (ev.w, d.p)
        store, skipped, shifted = self._update(store, step, g_new - s.g)  # l. 13-15
        # gtol: the aggregate at the previous point w was small. Moved to w_new, g_bar is an
        # eps'-subgradient there, eps' = eps + J(w_new) - J(w) - <g_bar, w_new - w> >= 0
        stationary = (not isinstance(getattr(problem, "oracle", problem), RegularizedRisk)
                      and common["subgradient_norm"] <= self.gtol)
        common["linearization_error"] = max(
            lin_err + ev.fun - s.fun - float(d.g_bar @ (ev.w - s.w)), 0.0)
        return s._replace(w=ev.w, fun=ev.fun, g=g_new, g_origin=g_origin, store=store, eta=ls.eta,
                          stationary=stationary, n_skipped_updates=s.n_skipped_updates + skipped,
                          n_shifts=s.n_shifts + shifted, **common)

    def _update(self, store, s_vec, y):
        sy = float(s_vec @ y)
        if not (sy > 0 and math.isfinite(sy)):
            return store, 1, 0
        yy = float(y @ y)
        h = self.inverse_hessian_floor
        shifted = sy / yy < h
        if shifted:                                                    # l. 14
            s_vec = s_vec + (h - sy / yy) * y
        return store.update(s_vec, y), 0, int(shifted)

    def _line_search(self, problem, w, f0, p, slope, eta0=1.0):
        line = problem.restrict(w, p)
        kw = dict(c1=self.c1, c2=self.c2, eta0=eta0)
        if self.line_search == "wolfe":
            return wolfe_line_search(line, f0, slope, **kw)
        res = exact_line_search(line, f0=f0, slope0=slope, **kw)
        if self.line_search == "exact" and not res.exact:
            raise NotImplementedError(
                f"line_search='exact' but {type(line).__name__} has no exact minimiser; "
                "use line_search='auto' or 'wolfe'")
        return res

    def _zero_evidence(self, problem, recipe, lower):
        """:class:`~nsopt.certificate.OraclePlanes` for an aggregate subgradient ``recipe``
        (``(weight, point, direction, g)`` tuples) that sums to zero exactly, else None."""
        if recipe is None or not recipe:
            return None
        weights = np.array([c for c, _, _, _ in recipe])
        if not zero_aggregate(weights, np.array([g for _, _, _, g in recipe])):
            return None
        return OraclePlanes(tuple(x for _, x, _, _ in recipe), weights,
                            directions=tuple(p for _, _, p, _ in recipe),
                            floor_value=problem.lower_bound,
                            plane=(np.zeros(problem.dim), float(lower)))

    def _direction_and_step(self, problem, w, f0, g1, store, eps, counts, origin=None):
        """Algorithm 2, then the line search; a step below rounding is a null step that
        feeds Algorithm 2 one more subgradient. Returns ``(direction, line search,
        linearization error of its g_bar at w)``, or :class:`_Stuck` (no descent found).
        ``origin``: where ``g1`` came from (for the evidence of a zero aggregate)."""
        alg = _Alg2(store, g1, origin)
        p = alg.p
        alg.observe(*problem.sup_subgradient(w, p), origin=(w, p))
        scale = max(1.0, float(np.abs(w).max(initial=0.0)))
        try:
            while True:
                alg.run(problem, w, eps, self.max_direction_iter)
                d = alg.result()
                if not d.success:
                    return _Stuck(alg.g_bar, alg.lin_err, alg.recipe)
                ls = self._line_search(problem, w, f0, d.p, d.slope)
                counts["n_line_evals"] += ls.n_evals
                if math.isinf(ls.eta):
                    return d, ls, alg.best[4]
                reach = self.kink_tol * scale / float(np.abs(d.p).max())
                if ls.eta > reach:
                    if not ls.value < f0:                             # rounding: give up
                        return _Stuck(alg.g_bar, alg.lin_err, alg.recipe)
                    if ls.exact and not ls.value <= f0 + self.c1 * ls.eta * d.slope:
                        counts["n_armijo_violations"] += 1
                    return d, ls, alg.best[4]
                if alg.n_inner + 1 >= self.max_direction_iter:
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

    # ------------------------------------------------------------------------------------
    def _owlqn_step(self, problem, s):
        raise NotImplementedError  # SubLBFGS only

    def info(self, s):
        return {k: getattr(s, k) for k in (
            "n_inner", "n_failures", "n_restarts", "n_null_steps", "n_skipped_updates",
            "n_shifts", "n_armijo_violations", "n_line_evals", "unbounded", "mode")}


@register
class SubLBFGS(SubBFGS):
    r"""subLBFGS ([YVGS10]_ Sec. 3.5): :class:`SubBFGS` with the last ``memory`` curvature
    pairs instead of a dense :math:`B_t` (two-loop recursion, O(memory d) per product).

    Parameters
    ----------
    memory : int >= 1, default 15
        Pairs kept (the paper's value; insensitive in 5-25, Sec. 8.2). Not so on every
        problem: on nearly separable data, where many hinges meet at the optimum, a short
        memory zigzags across them. Measured on mushrooms (hinge + L2, :math:`\lambda=10^{-4}`,
        d = 112, 8 s cap): memory 5 / 15 / 25 stalled at relative gaps 4e-2 / 2e-2 / 1e-2;
        memory 50 and 100 certified 1e-3 after 1814 and 1379 oracle calls (dense
        :class:`SubBFGS`: 1278). Where d is small, prefer :class:`SubBFGS`.
    initial_scaling : {"identity", "gamma"}, default "identity"
        :math:`H_0` of the two-loop recursion, which the paper leaves open: :math:`I`, as
        Algorithm 1's :math:`B_0` (then, with ``memory`` at least the number of iterations,
        the iterates equal :class:`SubBFGS`'s), or the LBFGS-standard
        :math:`(s^Ty/y^Ty)\,I` of the newest pair. Measured: on hinge losses the pairs that
        cross hinges have large :math:`y`, hence a tiny :math:`\gamma` and tiny steps
        (L1-hinge, 120 x 8: stalled at a relative gap of 1e-5 with ``"gamma"``, 49 iterations
        to 1e-6 with ``"identity"``).
    owlqn_variant : {"owlqn*", "owlqn", "none"}, default "owlqn*"
        On ``RegularizedRisk(Logistic, L1, lam)`` (detected by ``isinstance`` on the problem,
        its loss and its regularizer; subclasses count): ``"owlqn*"`` is the paper's OWL-QN*
        (Sec. 7.1.1, 8.4): OWL-QN with its direction replaced by Algorithm 2 started from the
        pseudo-gradient :math:`g^{ow}`, the argsup oracle applying the sign rule at zero
        coordinates (:math:`\lambda\,\mathrm{sign}(p_j)` where :math:`w_j = 0`, R6), with
        :math:`B` fitted to the logistic loss alone. ``"owlqn"`` is [AG07]_ itself,
        :math:`p = -B g^{ow}`. ``"none"`` treats the problem like any other (subLBFGS on
        :math:`J` with exact line searches).
    **options
        The other options of :class:`SubBFGS`.

    Notes
    -----
    Both OWL-QN modes then take OWL-QN's step ([AG07]_): the orthant projection
    :math:`\pi` keeps :math:`p_j` only where it has the sign of :math:`-g^{ow}_j` (so
    :math:`J'(w; p) = g^{ow\,T} p`), the orthant is :math:`\mathrm{sign}(w_j)`, or
    :math:`-\mathrm{sign}(g^{ow}_j)` where :math:`w_j = 0`, and the line search backtracks on the
    projected path (Armijo with ``c1`` on :math:`g^{ow\,T}(w(\eta) - w)`, halving, at most 50
    trials; first trial 1, or :math:`1/\|p\|_2` while no pair is stored). A coordinate that
    lands within ``kink_tol`` (relative) of 0 is set to 0. The curvature pairs use the logistic
    gradients. Whether OWL-QN* keeps :math:`\pi` and this line search is not stated in the
    paper (notes 002, erratum 13); it keeps "the rest of OWL-QN". Measured on a9a
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
    _store = LBFGSInverseHessian
    options = {
        **SubBFGS.options,
        "memory": Option(15, Interval(Integral, 1, None, closed="left"),
                         doc="curvature pairs kept"),
        "owlqn_variant": Option("owlqn*", Options(("owlqn*", "owlqn", "none")),
                                doc="OWL-QN mode on L1 with a differentiable loss"),
    }

    def _mode(self, problem):
        J = getattr(problem, "oracle", problem)
        if (self.owlqn_variant != "none" and isinstance(J, RegularizedRisk)
                and J.reg.l1_ratio == 1.0 and J.loss.differentiable):
            return self.owlqn_variant
        return "subbfgs"

    def _owlqn_step(self, problem, s):
        lam, w = problem.lam, s.w
        g_ow = _pseudo_gradient(w, s.loss_grad, lam)
        snap = self.kink_tol * max(1.0, float(np.abs(w).max(initial=0.0)))
        counts = dict(n_inner=s.n_inner, n_failures=s.n_failures, n_restarts=s.n_restarts)
        for store in (s.store, s.store.reset()):      # quasi-Newton, then a restart from B = I
            if store is not s.store:
                counts["n_failures"] += 1
            if s.mode == "owlqn":
                p = -store.dot(g_ow)
            else:                                                      # Alg. 2 from g_ow
                d = descent_direction(problem, w, g_ow, store, self.epsilon,
                                      self.max_direction_iter)
                counts["n_inner"] += d.n_inner
                p = d.p
            # [AG07] projection pi: keep p_j only where it agrees in sign with -g_ow; then
            # J'(w; p) = g_ow^T p, and the orthant is sign(w), or -sign(g_ow) at zeros
            projected = np.where(p * g_ow < 0, p, 0.0)
            ok, slope_g = float(g_ow @ projected) < 0, g_ow
            orthant = np.where(w != 0, np.sign(w), -np.sign(g_ow))
            if s.mode == "owlqn*" and not ok and d.success:
                # pi destroyed descent: keep Alg. 2's direction, orthant by its signs at zeros
                projected, ok, slope_g = p, True, d.g_sup
                orthant = np.where(w != 0, np.sign(w), np.sign(p))
            p = projected
            if not ok:
                continue
            ev, eta = self._projected_backtracking(
                problem, s.fun, w, p, slope_g, orthant, snap,
                eta=1.0 if len(store.s) else 1.0 / float(np.linalg.norm(p)))
            if ev is not None:
                break
        else:                                                          # stationary: stop
            # for L1 + a smooth loss the pseudo-gradient is the least-norm subgradient at w
            return s._replace(stationary=True, subgradient_norm=float(np.linalg.norm(g_ow)),
                              linearization_error=0.0, **counts)
        if store is not s.store:
            counts["n_restarts"] += 1
        step, y = ev.w - w, ev.loss_subgradient - s.loss_grad
        store, skipped, shifted = self._update(store, step, y)
        return s._replace(w=ev.w, fun=ev.fun, g=ev.subgradient, g_origin=(ev.w, None),
                          loss_grad=ev.loss_subgradient,
                          store=store, eta=eta,
                          n_skipped_updates=s.n_skipped_updates + skipped,
                          n_shifts=s.n_shifts + shifted, **counts)

    def _projected_backtracking(self, problem, f0, w, p, slope_g, orthant, snap, eta):
        """[AG07]'s line search on the path P(w + eta p), P zeroing the coordinates that leave
        the orthant (and, nsopt's addition, those within ``kink_tol`` of 0: a coordinate that
        lands 1e-20 from 0 is a kink in all but rounding). Armijo with ``c1`` on
        ``slope_g^T (x - w)``; halving, 50 trials. Returns (evaluation, eta), or (None, 0)
        if no trial decreases J."""
        for _ in range(50):
            x = w + eta * p
            x[(np.sign(x) != orthant) | (np.abs(x) <= snap)] = 0.0
            ev = problem.evaluate(x)
            if ev.fun <= f0 + self.c1 * float(slope_g @ (x - w)) and ev.fun < f0:
                return ev, eta
            eta *= 0.5
        return None, 0.0

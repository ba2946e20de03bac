r"""Nesterov's excessive gap technique for L2-regularized hinge-type risks ([SZV09]_ Alg. 1, "Pragam").

The risk is read as a saddle function, :math:`R(w) = \max_{\alpha\in Q} \langle\alpha, b - Zw\rangle`,
so that

.. math::
    J(w) = \tfrac{\lambda}{2}\|w\|^2 + R(w) \;\ge\;
    D(\alpha) = \langle b, \alpha\rangle - \tfrac{1}{2\lambda}\|Z^T\alpha\|^2
    \qquad (w \in \mathbb{R}^d,\ \alpha \in Q),

and :math:`D` has an :math:`L`-Lipschitz gradient, :math:`L = \|Z\|_2^2/\lambda`. The method
keeps a primal iterate :math:`w_k` and a dual iterate :math:`\alpha_k` whose measured gap
:math:`J(w_k) - D(\alpha_k)` is at most :math:`4 L D_2 / ((k+1)(k+2))` (eq. 26), an
:math:`O(1/\sqrt\epsilon)` iteration bound against BMRM's :math:`O(1/\epsilon)`.

Saddle forms known here (:func:`saddle_form`): the binary hinge (box dual
:math:`[0, c_i]`), the Crammer-Singer multiclass hinge and its cost-scaled variants (a scaled
simplex per example), the hinge with an unregularized bias (box plus :math:`y^T\alpha = 0`,
:class:`~nsopt.losses.intercept.InterceptHinge`, solved by :func:`pragam_with_bias`, and used
for ``RegularizedRisk(Hinge(X, y), L2(), lam, fit_intercept=True)``), the Crammer-Singer hinge
with one bias per class (simplices cut by the class-balance equalities, a transportation
polytope, :func:`project_class_balance`), and any
loss with a ``saddle_form()`` method returning a :class:`SaddleForm`, among them a sharded
loss on Dask whose shards have forms (:mod:`nsopt.distributed_saddle`: the dual vector stays
on the workers, the form's ``vdot``, ``evidence`` and ``norm_sq`` stand in for numpy). The losses own their
forms (:mod:`nsopt.saddle`); :math:`\|Z\|_2` comes from :func:`nsopt._linalg.spectral_norm_sq`.
"""
from __future__ import annotations

import math
from numbers import Real
from typing import NamedTuple

import numpy as np
from numba import njit

from .._linalg import spectral_norm_sq
from ..losses._kernels import dot as _serial_dot
from ..losses.intercept import InterceptHinge
from ..problem import RegularizedRisk
from ..regularizers import L2
from ..saddle import SaddleForm, saddle_form
from .._validation import Boolean, Interval, NoneOr, Option
from ._base import Solver
from ._registry import register

__all__ = ["ExcessiveGap", "SaddleForm", "saddle_form", "pragam_with_bias", "InterceptFit",
           "project_class_balance", "ClassBalanceProjection"]


def _has_saddle_form(loss) -> bool:
    return callable(getattr(loss, "saddle_form", None))


# ----------------------------------------------------------------------------------------
# the solver
# ----------------------------------------------------------------------------------------
def _dot(a, b) -> float:
    # serial: a threaded BLAS dot on O(m) vectors costs more in wake-ups than in arithmetic
    return float(_serial_dot(np.ravel(a), np.ravel(b), 0.0))


def _sq(x) -> float:
    return _dot(x, x)


def _vdot(form, a, b) -> float:
    """The inner product of two dual points: the form's own where its points are not arrays
    (:mod:`nsopt.distributed_saddle`: blocks kept on the workers), else :func:`_dot`."""
    return _dot(a, b) if form.vdot is None else float(form.vdot(a, b))


@register
class ExcessiveGap(Solver):
    r"""Nesterov's excessive gap technique on the SVM-type dual ([SZV09]_ Alg. 1, "Pragam").

    Minimises :math:`J(w) = \tfrac\lambda2\|w\|^2 + R(w)` for a
    :class:`~nsopt.RegularizedRisk` with the :class:`~nsopt.regularizers.L2` regularizer and a
    loss with a saddle form :math:`R(w) = \max_{\alpha\in Q}\langle\alpha, b - Zw\rangle`
    (:class:`~nsopt.losses.Hinge`, ``MulticlassHinge``, ``ScaledMulticlassHinge``, or a loss
    with a ``saddle_form()`` method, see :class:`SaddleForm`). With :math:`d_2(\alpha) =
    \tfrac12\|\alpha - \alpha_c\|^2` and the three mappings ([SZV09]_ eqs. 23-25)

    .. math::
        \alpha_\mu(w) = \Pi_Q\big(\alpha_c + (b - Zw)/\mu\big),\quad
        w(\alpha) = Z^T\alpha/\lambda,\quad
        v(\alpha) = \Pi_Q\big(\alpha + \nabla D(\alpha)/L\big),\
        \nabla D(\alpha) = b - Z Z^T\alpha/\lambda,

    it starts at the prox-centre, :math:`w_0 = w(\alpha_c)`, :math:`\alpha_0 = v(\alpha_c)`, and
    iterates :math:`\beta = (1-\tau_k)\alpha_k + \tau_k\alpha_{\mu_k}(w_k)`,
    :math:`w_{k+1} = (1-\tau_k)w_k + \tau_k w(\beta)`, :math:`\alpha_{k+1} = v(\beta)`,
    :math:`\mu_{k+1} = (1-\tau_k)\mu_k`.

    Parameters
    ----------
    adaptive_lipschitz : bool, default True
        Estimate :math:`L` along the path by backtracking (below). False: the seed's fixed
        schedule with :math:`L = \|Z\|_2^2/\lambda` (``lipschitz``, or computed once).
        Formerly ``adaptive_L`` (deprecated alias).
    lipschitz : float > 0 or None
        :math:`L`; with ``adaptive_lipschitz`` only the first trial value. A fixed
        ``lipschitz`` below the curvature met along the path raises ``ValueError``.
    **common
        ``rtol, atol, max_iter, max_time, verbose`` (see :func:`nsopt.minimize`).

    Notes
    -----
    Notation: :math:`Z` the loss's linear map (for the hinge, row i is :math:`y_i x_i^T`),
    :math:`b` its offsets (ones), :math:`Q` the dual set (:math:`\prod_i [0, c_i]`, weights
    :math:`c_i` summing to 1: the mean gives the box :math:`[0, 1/m]`), ``alpha_c`` the
    prox-centre (0 for the box, :math:`c_i/k` per class for the simplices), ``mu`` the
    smoothing parameter, ``tau`` the step, ``residual`` :math:`= b - Zw_k` (for the hinge,
    :math:`1 - y_i\langle x_i, w_k\rangle`), kept by linearity like :math:`w_k` itself.

    Schedule ([SZV09]_ Alg. 1, eqs. 23-25): fixed, :math:`\tau_k = 2/(k+3)`, :math:`\mu_0 = 2L`, so
    :math:`\mu_k = 4L/((k+1)(k+2))` and the gap is at most :math:`\mu_k D_2 = 4 L D_2/((k+1)(k+2))`
    with :math:`D_2 = \max_Q d_2` (:math:`\tfrac12\sum_i c_i^2 = 1/(2m)` for the box, eq. 26).
    The step keeps the excessive gap :math:`J_{\mu_{k+1}}(w_{k+1}) \le D(\alpha_{k+1})` whenever
    :math:`\tau_k^2 L \le (1-\tau_k)\mu_k` and the gradient step at :math:`\beta` satisfies the
    descent inequality :math:`\|Z^T(v - \beta)\|^2 \le \lambda L \|v - \beta\|^2`; the initial
    condition needs :math:`\mu_0 \ge L`. Adaptive (after Nesterov's composite-gradient
    backtracking, [SZV09]_ ref. [14], whose details the seed omits): the descent inequality is
    *checked* at every step (it costs no extra product), :math:`L` doubles until it holds,
    :math:`\tau_k` is the largest step allowed, the root of :math:`\tau^2 L = (1-\tau)\mu_k`,
    :math:`\mu_0 = L_0`, and the next trial is :math:`\max(0.9 L, \text{measured curvature})`
    (on SVM data this takes 3-4 times fewer iterations than the global :math:`L`, with a
    backtrack every 5-10 steps).
    Both keep the invariant exactly, so :math:`J(w_k) - D(\alpha_k) \le \mu_k D_2`.

    Certificate (source ``"excessive-gap"``): :math:`D(\alpha_k)`, a lower bound on
    :math:`J^*` by weak duality for every :math:`\alpha_k\in Q`. Its evidence is a plane: the
    aggregate :math:`\bar a = -Z^T\alpha_k`, :math:`\bar b = \langle b, \alpha_k\rangle` is below
    :math:`R` and :math:`D(\alpha_k) = \bar b - \lambda\Omega^*(-\bar a/\lambda)`, so
    :meth:`~nsopt.Certificate.check` recomputes it unchanged. The primal iterates go through the
    problem's oracle (the base keeps the best); ``x0`` is evaluated once as an initial upper
    bound but does not move the start, which must be the prox-centre ([SZV09]_ Alg. 1).

    An unregularized intercept (``RegularizedRisk(Hinge(X, y), L2(), lam,
    fit_intercept=True)``, :math:`x = (w, b)`): minimising over the free bias inside the saddle
    form, :math:`\min_b \max_{\alpha\in Q}\langle\alpha, 1 - Zw - yb\rangle = \max_{\alpha\in
    Q,\, y^T\alpha = 0}\langle\alpha, 1 - Zw\rangle` (Sion: Q is compact), the method runs on
    :math:`w` with the dual set cut by :math:`y^T\alpha = 0` ([SZV09]_ Pragam-b, the machinery of
    :func:`pragam_with_bias`: :class:`~nsopt.losses.intercept.InterceptHinge`, projected in
    O(m)). Every iterate :math:`w_k` is evaluated at :math:`x_k = (w_k, b(w_k))` with the bias
    optimal for its scores (read off the residual, no extra pass), so ``Result.x`` is a point of
    the original problem. The bound is that of the loss plane with intercept at
    :math:`\alpha_k`, :math:`(\bar a_w, \bar a_b) = (-Z^T\alpha_k, -y^T\alpha_k)`, through the
    problem's regularizer: :math:`D(\alpha_k) - B|y^T\alpha_k|` with the proven box :math:`|b|
    \le B` (:meth:`~nsopt.RegularizedRisk.intercept_bound`), so a rounding residual of the
    equality costs B times it and :meth:`~nsopt.Certificate.check` recomputes the bound from
    the dual point.

    One bias per class (``RegularizedRisk(MulticlassHinge(X, y), L2(), lam,
    fit_intercept=True)``, :math:`x = (W, b)`, :math:`b \in \mathbb{R}^K`). The scores
    :math:`F + 1b^T` add :math:`\sum_{ij}\alpha_{ij}(b_j - b_{y_i})` to the saddle function, so
    the intercepts' block of :math:`Z` is :math:`Z_b^T\alpha = C - \alpha^T 1` with the class
    weights :math:`C_j = \sum_{y_i = j} c_i` (:func:`nsopt.saddle.saddle_form`); minimising over
    the free :math:`b` cuts :math:`Q` (row i on the simplex of total :math:`c_i`) by the K
    equalities :math:`\sum_i \alpha_{ij} = C_j`: the dual mass on class j equals the weight of
    its examples (rank K - 1, they sum to an identity). This transportation polytope is
    projected through its K-dimensional concave dual (:func:`project_class_balance`: per
    multiplier vector :math:`\nu` every row is a simplex projection of the shifted row
    :math:`v_i + \nu`; semismooth Newton with a line search, warm-started at the last bias).
    The prox-centre is :math:`\alpha_{c,ij} = c_i C_j` (in the cut set). The bias of the
    primal point comes from the multipliers of :math:`\alpha_\mu(w_{k})` (which the next step
    needs anyway): :math:`b_k = \mu_k\nu` minimises the smoothed risk over the bias, so
    :math:`R(w_k, b_k) \le \min_b R(w_k, b) + \mu_k D_2` and the measured gap stays within
    :math:`2\mu_k D_2`. The bound is that of the plane of the loss with intercepts at
    :math:`\alpha_k`, :math:`(-Z_w^T\alpha_k, \alpha_k^T 1 - C)`, so the projection's residual
    :math:`r` of the equalities costs :math:`B\|r\|_1`; its evidence is the
    :class:`~nsopt.certificate.SaddlePoint` :math:`\alpha_k`, checked in the loss's form with
    intercepts. Every class must have an example (else :math:`B = \infty`: refused).
    Other losses with an intercept (logistic, squared hinge, the cost-scaled multiclass hinges
    whose intercept bound is not proven) are refused: use ``"bmrm"`` or ``"proximal-bundle"``.

    Cost per iteration: 3 products with :math:`Z` or :math:`Z^T` plus one oracle call (two
    passes), two projections onto :math:`Q` (O(m) clipping; O(m) median search with a bias;
    O(m k) per pass of Michelot's method for the simplices; times the Newton steps and line
    search trials with per-class biases); a backtrack adds 2 products.

    ``Result.info``: ``lipschitz`` (last L), ``n_backtracks``, ``mu``; with per-class biases
    ``newton_steps`` (of all projections, cumulative).

    References
    ----------
    .. [SZV09] A. Saha, X. Zhang, S. V. N. Vishwanathan. Lower bounds for BMRM and faster rates
       for training SVMs. arXiv:0909.1334, 2009. Sec. 4, Algorithm 1, eqs. (20)-(26), App. B, C.
    .. [Nes05] Y. Nesterov. Excessive gap technique in nonsmooth convex minimization. SIAM J.
       Optim. 16(1):235-249, 2005.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(500, 30, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    >>> res = nsopt.solvers.ExcessiveGap(rtol=1e-4).solve(J)
    >>> bool(res.success and res.lower_bound <= res.fun), res.certificate.source
    (True, 'excessive-gap')
    """

    name = "excessive-gap"
    requires = ("regularized_risk",)
    self_certifying = True
    certificate_source = "excessive-gap"
    history_fields = ("mu", "lipschitz")
    options = {
        "adaptive_lipschitz": Option(True, Boolean(), doc="estimate L by backtracking",
                                     renamed_from="adaptive_L"),
        "lipschitz": Option(None, NoneOr(Interval(Real, 0, None, closed="neither")),
                            doc="Lipschitz constant of grad D (or first trial)"),
    }

    _shrink = 0.9  # adaptive L: the next trial is max(_shrink * L, measured curvature)

    class State(NamedTuple):
        w: np.ndarray              # w_k (w_0 = w(alpha_c) is not evaluated: x0 is)
        alpha: np.ndarray          # alpha_k in Q
        lower_bound: float         # D(alpha_k): a valid lower bound on J*
        a_bar: np.ndarray          # -Z^T alpha_k: the loss plane proving D(alpha_k)
        b_bar: float               # <b, alpha_k>
        evidence: object           # alpha_k as checkable evidence (DualPoint / SaddlePoint)
        residual: np.ndarray       # b - Z w_k
        mu: float                  # mu_k
        tau: float                 # tau_{k-1}, the last step (nan at k = 0)
        lipschitz: float           # L accepted by the last step
        curvature: float           # ||Z^T(v - beta)||^2 / (lam ||v - beta||^2) of the last step
        iteration: int             # k
        n_backtracks: int          # cumulative
        form: SaddleForm
        bias: object = None        # fit_intercept: InterceptHinge (binary) or _ClassBalance
        a_mu: object = None        # multiclass bias: alpha_mu(w_k), computed with x_k's bias

    @classmethod
    def unsupported_reason(cls, problem):
        what = (f"method {cls.name!r} needs a RegularizedRisk with the L2 regularizer and a "
                "hinge-type loss with a saddle form (Hinge, MulticlassHinge, ScaledMulticlassHinge, "
                "or a loss with a saddle_form() method)")
        if not isinstance(problem, RegularizedRisk):
            return f"{what}; got {type(problem).__name__}"
        if problem.fit_intercept:
            return _intercept_reason(cls.name, problem)
        if not _has_saddle_form(problem.loss):
            why = getattr(problem.loss, "no_saddle_form_reason", None)  # a sharded loss says
            return f"{what}; got loss {type(problem.loss).__name__}" + (f": {why}" if why else "")
        if not problem.reg.self_conjugate:
            return f"{what}; got regularizer {type(problem.reg).__name__}"
        return None

    # ------------------------------------------------------------------------------------
    def _dual_value(self, problem, form, v, zt_v, bias=None):
        # D(v) = b_bar - lam Omega*(-a_bar / lam) with Omega* = 0.5 ||.||^2 (L2 only)
        b_bar = _vdot(form, form.offset, v)
        if isinstance(bias, _ClassBalance):
            # the plane of the loss with intercepts, (-Z_w^T v, -Z_b^T v = v^T 1 - C): the
            # equalities' rounding residual is paid for by B ||v^T 1 - C||_1
            a_bar = np.concatenate((-zt_v, bias.slope(v)))
            return b_bar - problem.reg.scaled_conjugate(a_bar, problem.lam), a_bar, b_bar
        if bias is not None:
            # the plane of the loss with intercept, (-Z^T v, -y^T v): its intercept slope is 0
            # up to the projection's rounding, which the box term B |y^T v| pays for
            a_bar = np.append(-zt_v, -_dot(bias.y, v))
            return b_bar - problem.reg.scaled_conjugate(a_bar, problem.lam), a_bar, b_bar
        a_bar = -zt_v
        return b_bar - _sq(a_bar) / (2.0 * problem.lam), a_bar, b_bar

    @staticmethod
    def _point(problem, bias, w, residual):
        r"""The point the oracle is asked at: ``w``, or with an intercept ``(w, b)`` with the
        bias optimal for the scores :math:`f = y(1 - r)` read off the residual :math:`r = 1 -
        y\circ f` (no pass over the data; any b gives a valid upper bound)."""
        if bias is None:
            return w
        b = bias._fit(bias.y * (1.0 - residual))[0]
        return np.append(w, b)   # problem.join(w, b): the intercept is the last coordinate

    @staticmethod
    def _evidence(problem, form, v, a_bar, b_bar):
        """The proof of D(v): the form's own evidence when it makes one (dual points kept on
        Dask workers), for a margin loss (hinge: ``alpha_i = c_i t_i``) the dual point
        ``t = alpha / c``, else the saddle point ``alpha`` itself (all checked from the data)."""
        from ..certificate import DualPoint, SaddlePoint

        if form.evidence is not None:
            return form.evidence(v, (a_bar, b_bar))
        loss = problem.loss
        upper = getattr(loss, "dual_upper", None)
        if upper is not None and np.shape(v) == (loss.m,):
            c = loss.c
            t = np.clip(np.divide(v, c, out=np.zeros_like(v), where=c > 0), 0.0, upper)
            return DualPoint(t, plane=(a_bar, b_bar))
        return SaddlePoint(np.array(v, copy=True), plane=(a_bar, b_bar))

    def _gradient_step(self, problem, form, beta, zt_beta, grad, L, bias=None):
        """v(beta) = proj(beta + grad D(beta) / L) and whether the descent inequality
        ||Z^T(v - beta)||^2 <= lam L ||v - beta||^2 holds, with the measured curvature."""
        lam = problem.lam
        if isinstance(bias, _ClassBalance):
            v = bias.project(beta + grad / L, L, "gradient")
        else:
            v = form.project(beta + grad / L)
        zt_v = form.rmatvec(v)
        diff = v - beta
        dv, dz = _vdot(form, diff, diff), _sq(zt_v - zt_beta)
        # Z^T v - Z^T beta is a difference of separately rounded products: below this it is noise
        noise = (1e-13 * (math.sqrt(_sq(zt_v)) + math.sqrt(_sq(zt_beta)))) ** 2
        curvature = dz / (lam * dv) if dv > 0 and dz > noise else 0.0
        return v, zt_v, dz <= lam * L * dv * (1 + 1e-10) + noise, curvature

    def _too_small(self, L, curvature):
        return ValueError(
            f"lipschitz={L:.6g} is below the curvature of the dual met along the path "
            f"({curvature:.6g}); it must be >= ||Z||^2 / lam. Omit lipschitz, or use "
            "adaptive_lipschitz=True"
        )

    def init(self, problem, x0):
        bias = _bias_loss(problem)
        form = saddle_form(problem.loss) if bias is None else bias.saddle_form()
        lam = problem.lam
        fixed = not self.adaptive_lipschitz
        problem.evaluate(x0)                                 # an upper bound; not the start
        center = form.center                                 # [SZV09, Alg. 1, l. 1]: alpha_{-1}
        zt_c = form.rmatvec(center)
        grad = form.offset - form.matvec(zt_c) / lam         # grad D(alpha_c) = b - Z w_0
        if self.lipschitz is not None:
            L = self.lipschitz
        elif fixed:
            L = (form.norm_sq() if form.norm_sq is not None else
                 spectral_norm_sq(form.matvec, form.rmatvec, np.shape(form.center),
                                  np.size(zt_c))) / lam   # Z acts on w (no intercept in it)
        else:  # a first trial: the curvature along the gradient (a lower estimate)
            gg = _vdot(form, grad, grad)
            L = _sq(form.rmatvec(grad)) / (lam * gg) if gg > 0 else 0.0
            L = L if L > 0 else 1.0
        nb = 0
        while True:                                          # l. 1: alpha_0 = v(alpha_{-1})
            v, zt_v, ok, curv = self._gradient_step(problem, form, center, zt_c, grad, L, bias)
            if ok:
                break
            if fixed:
                raise self._too_small(L, curv)
            L, nb = 2.0 * L, nb + 1
        lower, a_bar, b_bar = self._dual_value(problem, form, v, zt_v, bias)
        mu = 2.0 * L if fixed else L
        a_mu = None
        if isinstance(bias, _ClassBalance):                  # alpha_mu(w_0) for the first step
            a_mu, _ = bias.smoothed(form, grad, mu)
        return self.State(                                   # l. 1: w_0 = w(alpha_{-1})
            w=zt_c / lam, alpha=v, lower_bound=lower, a_bar=a_bar, b_bar=b_bar,
            evidence=self._evidence(problem, form, v, a_bar, b_bar),
            residual=grad, mu=mu, tau=math.nan, lipschitz=L,
            curvature=curv, iteration=0, n_backtracks=nb, form=form, bias=bias, a_mu=a_mu,
        )

    def step(self, problem, s):
        form, lam, fixed = s.form, problem.lam, not self.adaptive_lipschitz
        if s.a_mu is not None:                                         # multiclass bias: kept
            a_mu = s.a_mu
        else:
            a_mu = form.project(form.center + s.residual / s.mu)      # alpha_mu(w_k), eq. (23)
        zt_mu = form.rmatvec(a_mu)
        zt_alpha = -s.a_bar[:s.w.size]
        L = s.lipschitz if fixed else max(self._shrink * s.lipschitz, s.curvature)
        nb = 0
        while True:
            if fixed:
                tau = 2.0 / (s.iteration + 3)                          # [SZV09, Alg. 1, l. 3]
            else:                                                      # tau^2 L = (1 - tau) mu
                tau = 2.0 / (1.0 + math.sqrt(1.0 + 4.0 * L / s.mu))
            beta = (1 - tau) * s.alpha + tau * a_mu                    # l. 3
            zt_beta = (1 - tau) * zt_alpha + tau * zt_mu
            grad = form.offset - form.matvec(zt_beta) / lam            # grad D(beta) = b - Z w(beta)
            v, zt_v, ok, curv = self._gradient_step(problem, form, beta, zt_beta, grad, L, s.bias)
            if ok:                                                     # l. 4: alpha_{k+1} = v(beta)
                break
            if fixed:
                raise self._too_small(L, curv)
            L, nb = 2.0 * L, nb + 1
        w = (1 - tau) * s.w + (tau / lam) * zt_beta                    # l. 4: w_{k+1}, eq. (24)
        residual = (1 - tau) * s.residual + tau * grad                 # b - Z w_{k+1}
        mu = (1 - tau) * s.mu                                          # l. 4: mu_{k+1}
        a_next = None
        if isinstance(s.bias, _ClassBalance):
            # alpha_mu(w_{k+1}) now (the next step's eq. 23): its multipliers give the bias
            a_next, b = s.bias.smoothed(form, residual, mu)
            problem.evaluate(np.concatenate((w, b)))                   # problem.join(w, b)
        else:
            problem.evaluate(self._point(problem, s.bias, w, residual))
        lower, a_bar, b_bar = self._dual_value(problem, form, v, zt_v, s.bias)
        return self.State(
            w=w, alpha=v, lower_bound=lower, a_bar=a_bar, b_bar=b_bar, residual=residual,
            evidence=self._evidence(problem, form, v, a_bar, b_bar),
            mu=mu, tau=tau, lipschitz=L, curvature=curv,
            iteration=s.iteration + 1, n_backtracks=s.n_backtracks + nb, form=form,
            bias=s.bias, a_mu=a_next,
        )

    def info(self, s):
        out = {"lipschitz": s.lipschitz, "n_backtracks": s.n_backtracks, "mu": s.mu}
        if isinstance(s.bias, _ClassBalance):
            out["newton_steps"] = s.bias.newton
        return out


# ----------------------------------------------------------------------------------------
# the hinge with an unregularized bias (Pragam-b): the solver on InterceptHinge
# ----------------------------------------------------------------------------------------
def _intercept_reason(name, problem) -> str | None:
    """Why ``ExcessiveGap`` cannot solve the ``fit_intercept=True`` problem, or None."""
    from ..losses.scalar import Hinge
    from ..losses.vector import MulticlassHinge

    base, reg = problem.base_loss, problem.base_reg
    others = ("'bmrm' or 'proximal-bundle' (any loss with a proven intercept bound), or "
              "'sublbfgs'")
    if type(base) not in (Hinge, MulticlassHinge):  # exact classes: a subclass may change the loss
        return (f"method {name!r} with fit_intercept=True handles the binary Hinge and the "
                "Crammer-Singer MulticlassHinge only (their duals with free biases are the box "
                "cut by y^T alpha = 0, [SZV09] Pragam-b, and a transportation polytope; other "
                "saddle forms would need a projection onto their dual set cut by the bias "
                f"equalities), got loss {type(base).__name__}; use {others}")
    if not reg.self_conjugate:
        return (f"method {name!r} with fit_intercept=True needs the L2 regularizer, got "
                f"{type(reg).__name__}; use {others}")
    if not math.isfinite(problem.intercept_bound()):  # a class without examples
        return (f"method {name!r} with fit_intercept=True needs a proven bound on the "
                f"intercept (RegularizedRisk.intercept_bound() is inf: for MulticlassHinge, "
                f"every class must have an example of positive weight); use {others}")
    return None


def _bias_loss(problem):
    """For ``fit_intercept=True`` the :class:`InterceptHinge` of the problem's hinge (its data
    and weights, no copy), or the :class:`_ClassBalance` of its multiclass hinge; else None."""
    raw = getattr(problem, "problem", problem)   # the loop's counting wrapper
    if not getattr(raw, "fit_intercept", False):
        return None
    # _intercept_reason admitted the binary Hinge or the MulticlassHinge: classes tell them apart
    if getattr(raw.base_loss, "n_classes", None) is not None:
        return _ClassBalance(raw.base_loss)
    hinge = raw.base_loss
    bias = InterceptHinge.__new__(InterceptHinge)
    bias.hinge, bias.data, bias.y, bias.c = hinge, hinge.data, hinge.y, hinge.c
    bias.dim, bias.m = hinge.dim, hinge.m
    return bias


class InterceptFit(NamedTuple):
    """``coef`` w, ``intercept`` b and the solver's :class:`~nsopt.Result` (gap history in
    ``result.history``; ``result.x`` is ``coef``)."""

    coef: np.ndarray
    intercept: float
    result: object


def pragam_with_bias(X, y, lam, *, sample_weight=None, callback=None, **options) -> InterceptFit:
    r"""Binary linear SVM with an unregularized bias by the excessive gap technique ("Pragam-b").

    .. math:: \min_{w, b}\ \tfrac\lambda2\|w\|^2 + \sum_i c_i\,[1 - y_i(\langle x_i, w\rangle + b)]_+

    solved as :class:`ExcessiveGap` on :math:`w` alone, with the bias minimised inside the loss
    (:class:`~nsopt.losses.intercept.InterceptHinge`; :math:`c_i = 1/m`, or the normalised
    ``sample_weight``). The dual set is the box
    :math:`[0, c]` with :math:`y^T\alpha = 0` ([SZV09]_ eq. 22), projected in O(m)
    (:func:`nsopt.inner._box_equality.project_box_equality`). ``options`` are those of
    :class:`ExcessiveGap` (``rtol``, ``max_iter``, ``adaptive_lipschitz``, ...).

    Returns
    -------
    InterceptFit
        ``coef`` (the best w seen), ``intercept`` (the optimal b for it) and ``result``, whose
        ``fun``/``lower_bound``/``gap`` bracket the optimum of the problem above.

    Notes
    -----
    ``nsopt.minimize(RegularizedRisk(Hinge(X, y), L2(), lam, fit_intercept=True),
    method="excessive-gap")`` runs the same iteration on the problem with intercept and
    reports ``x = (w, b)`` with a certificate of that problem; this function is the seed's
    Pragam-b on :math:`w` alone. With all labels equal the dual set is
    :math:`\{0\}` and the solution is :math:`w = 0` with a bias that classifies all correctly.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
    >>> fit = nsopt.solvers.excessive_gap.pragam_with_bias(X, y, 1e-2, rtol=1e-4)
    >>> bool(fit.result.success), fit.coef.shape
    (True, (20,))
    """
    loss = InterceptHinge(X, y, sample_weight)
    problem = RegularizedRisk(loss, L2(), lam)
    res = ExcessiveGap(**options).solve(problem, callback=callback)
    return InterceptFit(res.x, loss.intercept(res.x), res)


# ----------------------------------------------------------------------------------------
# the Crammer-Singer hinge with one unregularized bias per class
# ----------------------------------------------------------------------------------------
@njit(cache=True)
def _shifted_simplex_rows(V, nu, c, out, colsum, H):  # pragma: no cover - compiled
    """``out_i = proj_{c_i simplex}(V_i + nu)`` for every row; adds the column sums of ``out``
    to ``colsum`` and the projection's generalized Jacobian summed over the rows,
    ``diag(1_S) - 1_S 1_S^T / |S|`` (S the row's support), to ``H``; returns
    ``sum_i 0.5 ||out_i - V_i||^2 - <nu, out_i>``."""
    m, k = V.shape
    u = np.empty(k)
    idx = np.empty(k, np.int64)
    total = 0.0
    for i in range(m):
        z = c[i]
        if z <= 0.0:
            for j in range(k):
                out[i, j] = 0.0
                total += 0.5 * V[i, j] * V[i, j]
            continue
        # Michelot's method: theta rises monotonically to the simplex threshold, O(k) a pass
        ssum = 0.0
        for j in range(k):
            u[j] = V[i, j] + nu[j]
            idx[j] = j
            ssum += u[j]
        n = k
        theta = (ssum - z) / n
        while True:
            n2 = 0
            ssum = 0.0
            for a in range(n):
                j = idx[a]
                if u[j] > theta:
                    idx[n2] = j
                    n2 += 1
                    ssum += u[j]
            if n2 == n or n2 == 0:
                break
            n = n2
            theta = (ssum - z) / n
        n = 0
        rsum = 0.0
        for j in range(k):
            x = u[j] - theta
            if x > 0.0:
                out[i, j] = x
                idx[n] = j
                n += 1
                rsum += x
            else:
                out[i, j] = 0.0
        # the threshold's cancellation (|u| >> z) leaves the row sum off by ~eps |u|: spread
        # the difference over the support (a point of the simplex up to eps z)
        fix = (z - rsum) / n if n > 0 else 0.0
        for a in range(n):
            j = idx[a]
            x = out[i, j] + fix
            out[i, j] = x if x > 0.0 else 0.0
        for j in range(k):
            x = out[i, j]
            colsum[j] += x
            r = x - V[i, j]
            total += 0.5 * r * r - nu[j] * x
        if n > 0:
            inv = 1.0 / n
            for a in range(n):
                H[idx[a], idx[a]] += 1.0
                for b in range(n):
                    H[idx[a], idx[b]] -= inv
    return total


class ClassBalanceProjection(NamedTuple):
    """The result of :func:`project_class_balance`: the projection ``alpha`` (m x k), the
    multipliers ``nu`` (k, defined up to a common constant: normalised to mean 0), the
    residual ``colsum(alpha) - totals`` of the column equalities, and the Newton ``iterations``."""

    alpha: np.ndarray
    nu: np.ndarray
    residual: np.ndarray
    iterations: int


def project_class_balance(V, rows, cols, nu0=None, *, tol=1e-14, max_iter=100):
    r"""Euclidean projection onto the transportation polytope
    :math:`T = \{\alpha \in \mathbb{R}^{m\times k}_{\ge 0}:\ \alpha 1 = r,\ \alpha^T 1 = s\}`
    (row totals ``rows`` :math:`r \ge 0`, column totals ``cols`` :math:`s \ge 0`,
    :math:`1^T r = 1^T s`), by a semismooth Newton method on its k-dimensional concave dual.

    With multipliers :math:`\nu \in \mathbb{R}^k` on the column equalities,

    .. math::
        g(\nu) = \min_{\alpha 1 = r,\ \alpha\ge 0} \tfrac12\|\alpha - V\|^2
                 - \langle\nu, \alpha^T 1 - s\rangle,\qquad
        \alpha_i(\nu) = \Pi_{r_i\Delta}(v_i + \nu),\qquad
        \nabla g(\nu) = s - \alpha(\nu)^T 1,

    each row an independent simplex projection of the shifted row (sort-based, compiled).
    :math:`g` is concave and piecewise quadratic; its generalized Hessian is
    :math:`-\sum_i (\mathrm{diag}(1_{S_i}) - 1_{S_i}1_{S_i}^T/|S_i|)` with :math:`S_i` the
    support of row i. It is singular along :math:`1` (a common shift of :math:`\nu` moves
    no row), and :math:`\nabla g \perp 1`: the Newton system is solved with
    :math:`\bar h\,11^T/k` added (so the step stays :math:`\perp 1`) and a Levenberg term
    :math:`\delta = \bar h \min(1, \|\nabla g\|_1)` (:math:`\bar h` the mean diagonal), the step
    capped to the spread of :math:`V` and accepted by Armijo backtracking on :math:`g`. Within
    a piece the step is exact, so near the solution it ends in a few steps with the residual
    at rounding level. Stops at :math:`\|\nabla g\|_1 \le` ``tol`` :math:`\cdot 1^T s`, when
    the line search stalls (rounding) or after ``max_iter`` steps; the caller reads the
    ``residual`` (a certificate pays for it, it does not assume it is 0).

    Parameters
    ----------
    V : array (m, k)
    rows, cols : arrays (m,), (k,), nonnegative, equal sums
    nu0 : array (k,), optional
        Warm start for the multipliers.

    Returns
    -------
    ClassBalanceProjection

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt.solvers.excessive_gap import project_class_balance
    >>> V = np.array([[0.3, 0.1, 0.0], [0.2, 0.4, 0.0], [0.0, 0.0, 0.1]])
    >>> p = project_class_balance(V, np.full(3, 1 / 3), np.full(3, 1 / 3))
    >>> bool(np.allclose(p.alpha.sum(axis=0), 1 / 3) and np.allclose(p.alpha.sum(axis=1), 1 / 3))
    True
    """
    V = np.ascontiguousarray(V, dtype=np.float64)
    if V.ndim != 2:
        raise ValueError(f"V must be an m x k matrix, got shape {V.shape}")
    m, k = V.shape
    rows = np.ascontiguousarray(np.broadcast_to(np.asarray(rows, dtype=np.float64), (m,)))
    cols = np.ascontiguousarray(np.asarray(cols, dtype=np.float64))
    if cols.shape != (k,):
        raise ValueError(f"cols must have {k} entries (one per column of V), got shape {cols.shape}")
    if (rows < 0).any() or (cols < 0).any():
        raise ValueError("rows and cols must be nonnegative")
    mass = float(cols.sum())
    if not abs(float(rows.sum()) - mass) <= 1e-12 * max(1.0, mass):
        raise ValueError(f"rows and cols must have equal sums (the polytope is empty), got "
                         f"{float(rows.sum())!r} and {mass!r}")
    nu = np.zeros(k) if nu0 is None else np.array(nu0, dtype=np.float64).reshape(k)
    nu = np.where(np.isfinite(nu), nu, 0.0)
    nu -= nu.mean()
    out = np.empty_like(V)

    def dual(nu):
        colsum, H = np.zeros(k), np.zeros((k, k))
        val = _shifted_simplex_rows(V, nu, rows, out, colsum, H) + float(nu @ cols)
        return val, out.copy(), cols - colsum, H

    g, alpha, grad, H = dual(nu)
    span = float(np.ptp(V)) + float(rows.max(initial=0.0)) + 1e-300
    target = tol * max(mass, 1e-300)
    it = 0
    best = (float(np.abs(grad).sum()), nu, alpha, grad)
    for it in range(1, max_iter + 1):
        res = float(np.abs(grad).sum())
        if res <= target:
            it -= 1
            break
        hbar = max(float(np.trace(H)) / k, 1.0)
        A = H + (hbar / k) * np.ones((k, k))
        A[np.diag_indices(k)] += 1e-9 * hbar
        step = np.linalg.solve(A, grad)
        step -= step.mean()
        size = float(np.abs(step).max())
        if size > span:
            step *= span / size
        d0 = float(grad @ step)   # phi'(0) > 0 for phi(t) = g(nu + t step), concave
        if not d0 > 0.0:          # only at rounding level (A is positive definite)
            break
        # line search on phi(t) = g(nu + t step), concave with phi'(t) nonincreasing and
        # piecewise linear: accept t with Armijo's decrease and |phi'(t)| <= phi'(0) / 2 (a
        # strong Wolfe point: past the flat pieces, not beyond the maximum), else bracket the
        # root of phi' by regula falsi (Illinois)
        slack = 1e-15 * (abs(g) + 1.0)
        lo, dlo, hi, dhi = 0.0, d0, 1.0, None
        t, side = 1.0, 0
        for _ in range(60):
            g1, alpha1, grad1, H1 = dual(nu + t * step)
            dt = float(grad1 @ step)
            if g1 >= g + 1e-4 * t * d0 - slack and (abs(dt) <= 0.5 * d0 or (t == 1.0 and dt >= 0.0)):
                break
            if dt > 0.0:
                lo, dlo = t, dt
                if side == -1 and dhi is not None:
                    dhi *= 0.5        # Illinois: halve the stale end
                side = -1
            else:
                hi, dhi = t, dt
                if side == 1:
                    dlo *= 0.5
                side = 1
            if hi - lo <= 1e-13:
                break
            t = lo + (hi - lo) * (0.5 if dhi is None else dlo / (dlo - dhi))
        nu, g, alpha, grad, H = nu + t * step, g1, alpha1, grad1, H1
        r1 = float(np.abs(grad).sum())
        if r1 < best[0]:
            best = (r1, nu, alpha, grad)
        elif r1 >= res and t * size <= 1e-15 * (1.0 + float(np.abs(nu).max())):
            break                     # stalled at rounding level
    _, nu, alpha, grad = best
    nu = nu - nu.mean()
    return ClassBalanceProjection(alpha, nu, -grad, it)


class _ClassBalance:
    r"""The dual set of the Crammer-Singer hinge with one free bias per class: every row
    :math:`\alpha_i` on the simplex of total :math:`c_i`, and the intercepts' equalities
    :math:`Z_b^T\alpha = C - \alpha^T 1 = 0` (:func:`nsopt.saddle.saddle_form`: the dual mass on
    class j equals the weight :math:`C_j = \sum_{y_i = j} c_i` of its examples), a
    transportation polytope projected by :func:`project_class_balance`. Keeps, per call site,
    the last bias :math:`b = s\nu` (``s`` the scale of the projected point) to warm-start the
    next projection, and the bias of the smoothed primal at the last :math:`\alpha_\mu(w)`."""

    def __init__(self, loss):
        self.form = loss.saddle_form()
        self.y, self.c, self.k = loss.y, np.ascontiguousarray(loss.c, dtype=np.float64), loss.n_classes
        self.totals = np.bincount(self.y, weights=self.c, minlength=self.k).astype(np.float64)
        self.warm = {}
        self.newton = 0

    def project(self, V, scale=1.0, slot=None):
        b = self.warm.get(slot)
        p = project_class_balance(V, self.c, self.totals, None if b is None else b / scale)
        self.newton += p.iterations
        if slot is not None:
            self.warm[slot] = p.nu * scale
        return p.alpha

    def saddle_form(self):
        """The loss's form on the coefficients with :math:`Q` cut by the equalities (warm-free
        ``project``), the centre :meth:`center` and its radius."""
        return self.form._replace(project=self.project, center=self.center(),
                                  radius_sq=self.radius_sq())

    def smoothed(self, form, residual, mu):
        r""":math:`\alpha_\mu(w) = \Pi(\alpha_c + r/\mu)` (r = ``residual`` :math:`= b_0 -
        Z_w w`) and the bias :math:`b = \mu\nu` of its multipliers: :math:`\alpha_\mu(w)`
        maximises :math:`\langle\alpha, r - Z_b b\rangle - \mu d(\alpha)` over the uncut
        :math:`Q`, so :math:`b` minimises the smoothed risk over the bias and
        :math:`R(w, b) \le \min_{b'} R(w, b') + \mu D_2`."""
        a = self.project(form.center + residual / mu, mu, "smoothed")
        return a, self.warm["smoothed"].copy()

    def slope(self, alpha):
        r"""The intercepts' part of the loss plane :math:`-Z^T\alpha`: :math:`\alpha^T 1 - C`."""
        return np.asarray(alpha).sum(axis=0) - self.totals

    def center(self):
        r"""The prox-centre :math:`\alpha_{ij} = c_i C_j` (in the set: rows sum to :math:`c_i`,
        columns to :math:`C_j`, as :math:`\sum_i c_i = 1`)."""
        return np.outer(self.c, self.totals / max(float(self.c.sum()), 1e-300))

    def radius_sq(self):
        r""":math:`\tfrac12\sum_i c_i^2 (1 + \|C\|^2) \ge \max \tfrac12\|\alpha -
        \alpha_c\|^2` (:math:`\langle\alpha_i, \alpha_{c,i}\rangle \ge 0`)."""
        return 0.5 * float(self.c @ self.c) * (1.0 + float(self.totals @ self.totals))

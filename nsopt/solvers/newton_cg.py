r"""Truncated Newton method for L2-regularized smooth margin losses ([LWK08]_, [GL21]_).

.. math:: \min_w\; F(w) = \tfrac{\lambda}{2}\|w\|^2 + \sum_i c_i\, l(\langle x_i, w\rangle, y_i)

for a twice differentiable margin loss (logistic; squared hinge with its generalised Hessian).
Each iteration solves the Newton system approximately (conjugate gradient on Hessian-vector
products, or a Cholesky solve of the dense Hessian when the columns are few), then takes an
Armijo step on :math:`F` valued from the kept scores. The dual point :math:`t_i = -l'(z_i)`
of each iterate is the certificate.
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from .._threads import _one_blas_thread
from .._validation import Boolean, Interval, NoneOr, Option, Options
from ..certificate import DualPoint
from ..regularizers import own_scaled_conjugate
from . import _newton_cd_kernels as K
from ._base import Solver
from ._dcd_kernels import row_norms_sq
from ._newton_cg_kernels import (hess_vec, line_terms, margin_terms_conj, row_gradient,
                                 row_gram, row_scores)
from ._registry import register
from .newton_cd import loss_kind, prepare, rebalance

__all__ = ["NewtonCG"]

#: Armijo's constant and the largest halving count of the line search ([GL21]_)
_SIGMA, _MAX_HALVINGS = 0.01, 30
#: scores recomputed from ``w`` every this many iterations (no drift from the updates)
_REFRESH = 8
#: the dense Hessian is built from scratch again after this many updates (no drift)
_MAX_UPDATES = 8
#: weight of the Hessian diagonal in the preconditioner :math:`(1-\alpha)I + \alpha\,
#: \mathrm{diag}(H)` ([HCL18]_: 0.01)
_PRECONDITIONER_MIX = 0.01
#: the dense Hessian's cost model: BLAS syrk on a dense copy (``m n(n+1)/2`` multiply-adds,
#: the scaling copy included) is taken over the rows' pairs of nonzeros
#: (``sum_i n_i(n_i+1)/2``, a compiled scatter) when it needs at most this many times their
#: count (:func:`_dense_share`). Measured on one
#: thread (mushrooms, 8124 x 112, 21 nonzeros a row): 1.17 ns a pair against 0.072 ns a
#: syrk entry, 16x; letter (16 dense columns) takes syrk, mushrooms (27x) and a9a (77x) rows
_SYRK_ADVANTAGE = 16.0
#: consecutive iterations without descent (rounding) before the run reports ``stationary``
_MAX_FAILS = 3
#: line search, expansion: when the full step is accepted and its decrease is more than
#: _EXPAND_FIT times its quadratic model's -g^T d / 2 (F flatter along d than the model: the
#: logistic loss far from the optimum), the steps 2, 4, ... (at most _MAX_BETA) are tried
#: while F keeps decreasing
_EXPAND_FIT, _MAX_BETA = 1.1, 64.0
#: rounds of the model's dual point that pin the rows it sends below 0 (squared hinge, dense
#: model; :meth:`NewtonCG._pinned_rounds`)
_PIN_ROUNDS = 2
#: the model's dual point is computed when the Newton decrement is at most this many times
#: the gap to prove (:meth:`NewtonCG._step`), per loss kind: logistic (one pass, saves steps
#: at 10x), squared hinge (the pinned rounds cost about a late step: at 10x they fired
#: too early and cost 1.1-1.5x the CPU time on mushrooms)
_MODEL_GATE = {K.LOGISTIC: 10.0, K.SQUARED_HINGE: 1.0}
#: continuation (squared hinge, :meth:`NewtonCG._step`): the Newton model's lam starts at
#: max_i c_i ||x_i||^2 / _CONTINUATION (at least lam) and is multiplied by
#: _CONTINUATION_FACTOR (at least lam) once the model's Newton decrement is at most
#: _CONTINUATION_DECREMENT times F at the model's lam. Measured (steps to prove 1e-3 / 1e-4,
#: mushrooms, a9a, letter, lam 1e-4 ... 1e-6): 10, 0.1, 0.1 never more steps (mushrooms lam
#: 1e-5 / 1e-6: 17 -> 10, 21 -> 11); K0 5 or 20 fewer on mushrooms too but one more on
#: letter; a decrement of 0.05 or 0.01, or a factor of 0.3, saved less or cost steps on
#: letter. On a noise-free separable synthetic problem (1000 x 30, lam 1e-6) every variant
#: cost steps (20 -> 27, 16 -> 20 with an intercept): docs/solvers.md
_CONTINUATION, _CONTINUATION_DECREMENT, _CONTINUATION_FACTOR = 10.0, 0.1, 0.1


@register
class NewtonCG(Solver):
    r"""Truncated Newton method ([LWK08]_, liblinear's primal solver [GL21]_) for L2 with a
    smooth margin loss.

    Minimises :math:`F(w) = \tfrac{\lambda}{2}\|w\|^2 + \sum_i c_i\, l(\langle x_i,
    w\rangle, y_i)` (:class:`~nsopt.RegularizedRisk` with :class:`~nsopt.regularizers.L2`,
    optionally a free intercept, which is not penalised) for the logistic loss and the
    squared hinge, the losses whose conjugate the kernels know (asked of
    ``loss.conjugate_terms``, see :func:`~nsopt.solvers.newton_cd.loss_kind`).

    Iteration k, at :math:`w` with scores :math:`z = Xw`: the gradient :math:`g = \lambda w +
    X^T(c \circ l'(z))` and the Hessian :math:`H = \lambda I + X^T D X`, :math:`D_i = c_i
    l''(z_i)` (squared hinge: the generalised second derivative :math:`c_i 1[y_i z_i < 1]`,
    [LWK08]_ Sec. 4; the intercept's diagonal entry has no :math:`\lambda`), then

    1. **direction:** :math:`H d = -g`, solved in one of two ways (``model``):

       * ``"cg"``: preconditioned conjugate gradient, each iteration one Hessian-vector product
         :math:`\lambda v + X^T(D\circ Xv)` (two passes over the data,
         :func:`~nsopt.solvers._newton_cg_kernels.hess_vec`), preconditioner
         :math:`(1-\alpha)I + \alpha\,\mathrm{diag}(H)`, :math:`\alpha = 0.01` ([HCL18]_),
         stopped when :math:`\|Hd + g\| \le \eta\|g\|` (``cg_tol`` :math:`= \eta`, 0.1 as in
         [LWK08]_) or after ``max_cg`` iterations;
       * ``"gram"``: the dense :math:`H` and a Cholesky solve (LAPACK ``posv``): the exact
         Newton step. ``"auto"`` (default) takes it when there are at most 2000 columns and
         the rows' pairs of nonzeros are at most 40 times the nonzeros (the rule of
         :class:`~nsopt.solvers.NewtonCD`). :math:`X^T D X` is built by the cheaper of two
         ways under a cost model: BLAS syrk on a dense copy of X, :math:`m\,n(n+1)/2`
         multiply-adds, or the sparse rows' pairs of nonzeros,
         :math:`\sum_i n_i(n_i+1)/2` scattered adds
         (:func:`~nsopt.solvers._newton_cd_kernels.gram`); syrk is taken when its count is at
         most 16 times the pairs' (one thread, measured: 1.17 ns a pair, 0.072 ns a syrk
         entry with the scaling copy; letter's 16 dense columns take syrk, mushrooms' 21 of
         112 and a9a's 14 of 123 the rows). Rows of weight 0 are skipped. When fewer rows
         changed weight since the last Hessian than have a nonzero weight (the squared
         hinge's weights are :math:`c_i` or 0, and only the rows crossing the margin change),
         the Hessian is updated from the changed rows instead, and built from scratch again
         after 8 updates.
    2. **line search** ([GL21]_): the largest :math:`\beta \in \{1, 1/2, \dots\}` with
       :math:`F(w + \beta d) - F(w) \le \sigma\beta g^Td`, :math:`\sigma = 0.01`, valued from
       the kept scores :math:`z + \beta Xd` (one pass for :math:`Xd`, then O(m) per trial; the
       L2 term is a quadratic in :math:`\beta`). When the full step is accepted and its
       decrease exceeds the quadratic model's :math:`-g^Td/2` by more than 10% (:math:`F`
       flatter along :math:`d` than the model: the logistic loss far from its optimum, on
       nearly separable data), :math:`\beta = 2, 4, \dots, 64` are tried while :math:`F`
       keeps decreasing (mushrooms, logistic: 11-13 Newton steps became 6-7);
       **continuation** (squared hinge, ``continuation=True``): the Newton model (its
       gradient, Hessian and the line search's :math:`F`) uses :math:`\mu \ge \lambda`,
       starting at :math:`\max(\lambda, \max_i c_i\|x_i\|^2/10)` and divided by 10
       (down to :math:`\lambda`) once the model's Newton decrement is at most a tenth of
       its :math:`F_\mu`. From :math:`w = 0` every row is active and the first generalised
       Newton step (ridge regression on the labels) overshoots; the active set then swings
       (mushrooms, lam 1e-6: 4089, 2009, 1101, ... 1641, ... 423 rows, with 30 halvings)
       and :math:`F` is within 1e-3 only at step 18. The stages follow the path
       :math:`w^*(\mu)` instead: mushrooms lam 1e-5 / 1e-6 prove 1e-3 in 10 / 11 steps
       instead of 17 / 21 (a9a one fewer or the same, letter the same). The values, bounds
       and the certificate are always those of :math:`\lambda`; a stage step without
       descent ends the continuation;
    3. **certificate** at the new point: the dual point :math:`t_i = -y_i l'(z_i)` (the
       gradient's own: the loss gradient is :math:`a = -X^T(c\circ y\circ t)`), with an
       intercept moved onto :math:`\sum_i c_i y_i t_i = 0` (the class with the excess scaled
       toward 0, as in newton-cd), gives the Fenchel dual value
       :math:`-\sum_i c_i l^*(-y_i t_i) - \|a\|^2/(2\lambda)` (the L2 conjugate). For the
       squared hinge, :math:`t` is first scaled by the best :math:`s \ge 0` (the dual value is a
       concave quadratic in :math:`s`: closed form). It is the
       :class:`~nsopt.certificate.DualPoint` that :meth:`~nsopt.Certificate.check` recomputes;
       at the optimum :math:`w^* = -a/\lambda` and the gap is 0. That point lags the
       iterate (its gap is about :math:`\|\nabla F\|^2/(2\lambda)`), so once the Newton
       decrement :math:`-g^Td/2` is within 10 times (logistic; squared hinge: 1 time) the
       gap to prove, the **model's dual point** is tried too (``model_dual``,
       :meth:`_model_dual`): the linearised :math:`t - y\circ(D/c)\circ Xd`, whose slope
       matches the predicted iterate :math:`w + d` (squared hinge, dense model: the rows it
       sends below 0 pinned and the model solved again, at most 2 rounds), clipped to the
       box and valued exactly (one pass); for the squared hinge the best point of the cone
       of the step's dual points (the iterate's, the model's, the last kept) follows
       (:meth:`_combine`, no pass). The best bound is kept.

    The run stops on the proven gap (``rtol``, ``atol``), like every method. Newton's steps
    converge fast where dual coordinate descent's epochs grow with :math:`1/\lambda`, so
    :func:`nsopt.minimize.default_method` picks this method for these problems when dcd's
    conditioning is large (see there).

    Parameters
    ----------
    model : {"auto", "gram", "cg"}, default "auto"
        How the Newton system is solved (above).
    cg_tol : float, default 0.1
        Relative residual at which conjugate gradient stops (``model="cg"``).
    max_cg : int, default 500
        Conjugate-gradient iterations per Newton step at most.
    continuation : bool, default True
        The squared hinge's continuation in the model's :math:`\lambda` (above); the
        logistic loss ignores it. Off: the model is :math:`F`'s own from the start.
    model_dual : bool or None, default None
        Also certify with the Newton model's dual point near the end (above); False keeps
        the iterate's own dual point only (the iterates are the same). None: on for the
        logistic loss, off for the squared hinge (measured CPU, new over old, load ~7, best
        of 7: logistic 0.73-1.05, squared hinge 0.97-1.26: its saved late steps are cheap
        and the pinned rounds cost more than they save).
    **common
        ``rtol, atol, max_iter, max_time, verbose`` (see :func:`nsopt.minimize`); one
        iteration is one Newton step.

    Notes
    -----
    Cost per iteration: one pass for the gradient (and the Hessian diagonal), one for
    :math:`Xd`, and two per conjugate-gradient iteration (``"cg"``) or the dense Hessian
    (``"gram"``: a9a, about 14 passes' worth, plus a :math:`d^3/3` Cholesky factorisation;
    the sparse model reads the rows, CSR, for the scores and the gradient too);
    O(m) per line-search trial and for the certificate. Scores are updated as
    :math:`z + \beta Xd` and recomputed from ``w`` every 8 iterations; the accepted trial's
    loss terms (dual point, Hessian weights, and the logistic conjugate sum from the same
    exponentials, :func:`~nsopt.solvers._newton_cg_kernels.line_terms`) are the next
    iterate's. When the cost model takes syrk (dense data) only
    the dense copy of X is built (no CSR rows; CSC columns only for an intercept); init (the
    start's oracle call included) and the steps keep BLAS on one thread. The iterate is
    valued by the kernels (offered to the loop as ``w_best``). Three iterations in a row without
    descent (rounding at a gap below what floating point resolves) end the run as
    ``stationary``, with the gradient's norm. Compiled with numba.

    Written from the papers, not from liblinear's source. Only L2 (``reg.self_conjugate``)
    and the losses :func:`~nsopt.solvers.newton_cd.loss_kind` knows are taken; the others
    are refused by their protocol.

    ``Result.info``: ``cg_iterations`` (over all iterations; 0 with ``"gram"``),
    ``line_search_halvings``, ``line_search_expansions`` (doublings past the full step),
    ``model`` (``"gram"`` or ``"cg"``), ``hessian_updates`` (Hessians updated from the
    changed rows instead of built), ``model_duals`` (steps whose bound came from the
    model's dual point or the cone's combination), ``continuation_steps`` (steps made
    with the model's :math:`\mu > \lambda`).

    References
    ----------
    .. [LWK08] C.-J. Lin, R. C. Weng, S. S. Keerthi. Trust region Newton method for
       large-scale logistic regression. JMLR 9:627-650, 2008.
    .. [GL21] L. Galli, C.-J. Lin. A study on truncated Newton methods for linear
       classification. IEEE TNNLS 33(7):2828-2841, 2022.
    .. [HCL18] C.-Y. Hsia, W.-L. Chiang, C.-J. Lin. Preconditioned conjugate gradient methods
       in truncated Newton frameworks for large-scale linear classification. ACML 2018.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(500, 30, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Logistic(X, y), lam=1e-4)
    >>> res = nsopt.minimize(J, method="newton-cg", rtol=1e-8)
    >>> bool(res.success and res.certificate.check(J) <= res.fun), res.certificate.source
    (True, 'dual-point')
    """

    name = "newton-cg"
    requires = ("regularized_risk",)
    self_certifying = True
    certificate_source = "dual-point"
    history_fields = ("cg_iterations",)
    options = {
        "model": Option("auto", Options(("auto", "gram", "cg")),
                        doc="how the Newton system is solved: 'cg' (conjugate gradient on "
                            "Hessian-vector products), 'gram' (Cholesky of the dense Hessian), "
                            "'auto' (gram when the columns are few)"),
        "cg_tol": Option(0.1, Interval(Real, 0, 1, closed="neither"),
                         doc="relative residual ||Hd + g|| / ||g|| at which CG stops"),
        "max_cg": Option(500, Interval(Integral, 1, None, closed="left"),
                         doc="conjugate-gradient iterations per Newton step at most"),
        "continuation": Option(True, Boolean(),
                               doc="squared hinge: the Newton model's lam starts larger and "
                                   "falls 10x a stage to lam (the certificate is always lam's)"),
        "model_dual": Option(None, NoneOr(Boolean()),
                             doc="also certify with the Newton model's dual point (one more "
                                 "pass a step); None: for the logistic loss only"),
    }

    @classmethod
    def unsupported_reason(cls, problem):
        reason = super().unsupported_reason(problem)
        if reason is not None:
            return reason
        reg = problem.base_reg if problem.fit_intercept else problem.reg
        what = " (with or without an intercept)" if problem.fit_intercept else ""
        if not getattr(reg, "self_conjugate", False):
            return (f"method {cls.name!r} needs the L2 regularizer (lam/2)||w||^2{what}, got "
                    f"{type(reg).__name__}; use 'newton-cd' (L1), 'bmrm', 'ls-bmrm' or "
                    "'proximal-bundle', which take any regularizer")
        loss = problem.base_loss if problem.fit_intercept else problem.loss
        if loss_kind(loss) is None:
            return (f"method {cls.name!r} needs a twice differentiable binary margin loss whose "
                    f"conjugate it knows (Logistic, SquaredHinge){what}, got "
                    f"{type(loss).__name__}; use 'dcd', 'ls-bmrm' or 'proximal-bundle'")
        return None

    class State(NamedTuple):
        w: np.ndarray              # the iterate (coefficients, then the intercept)
        z: np.ndarray              # its scores Xw (+ b)
        D: np.ndarray              # Hessian weights c l''(z)
        t: np.ndarray              # the loss's dual point -y l'(z) at z (unscaled)
        grad: np.ndarray           # gradient of F at w (intercept last)
        hdiag: np.ndarray          # diagonal of the Hessian of F
        fun: float                 # F(w), by the kernels
        lower_bound: float         # the dual point's bound at w
        evidence: object           # DualPoint of the (scaled) t
        w_best: np.ndarray         # = w, valued by the kernels (settled by the loop)
        fun_best: float
        cg_iterations: int         # over all steps
        halvings: int              # line-search halvings so far
        fails: int                 # consecutive iterations without descent
        n_steps: int               # Newton steps made
        stationary: bool
        subgradient_norm: float
        linearization_error: float
        data: object               # newton_cd._Data
        dense: np.ndarray | None   # X as a dense m x n array (ones column last) on dense data
        hess: np.ndarray | None    # X^T diag(hess_D) X (gram model), kept for its update
        hess_D: np.ndarray | None  # the weights it holds
        hess_updates: int          # updates since it was last built from scratch
        updates: int               # updates over the run
        expansions: int            # line-search doublings past the full step
        staged: int                # steps made at a model lam above lam (continuation)
        model_duals: int           # steps whose bound came from the model's dual point
        unit: bool                 # every stored value of the sparse rows is 1 (row_gram)
        mu: float                  # the Newton model's lam (continuation), >= problem.lam

    # ------------------------------------------------------------------------------------
    def init(self, problem, x0):
        # all of it on one BLAS thread, the start's oracle call too: a threaded level-1 call
        # there left OpenBLAS's worker spinning through the run's setup (letter, lam 1e-6,
        # 2 cores under load: the run took 3x its one-thread time)
        with _one_blas_thread():
            data = prepare(problem, self.model, 0, dense_share=_dense_share(problem),
                           columns=False)
            dense = data.dense
            w = np.array(x0, dtype=np.float64)
            # the fallback answer F(x0), one oracle call; at the usual x0 = 0 the scores are
            # 0 without the pass X x0 (as dcd)
            if data.own_value and not np.any(w):
                problem.evaluate(x0, scores=np.zeros(data.y.size))
            else:
                problem.evaluate(x0)
            z = self._scores(data, dense, w)
            return self._at(problem, data, w, z, None, dense)

    @staticmethod
    def _scores(data, dense, w):
        """:math:`Xw` (+ b): BLAS on dense data, else over the rows (CSR)."""
        if dense is not None:
            return dense @ w
        z = np.empty(data.y.size)
        row_scores(*data.rows, w, data.has_b, z)
        return z

    def _at(self, problem, data, w, z, s, dense=None, terms=None):
        """The state at ``w`` with scores ``z``: loss, dual point, gradient pass, bound.
        ``terms``: ``(loss, conj, t, D)`` at ``z`` when a line-search trial computed them."""
        m, lam = data.y.size, problem.lam
        if terms is None:
            t, D = np.empty(m), np.empty(m)
            loss, conj = margin_terms_conj(data.kind, z, data.y, data.c, t, D)
        else:
            loss, conj, t, D = terms
        wp = w * data.pen
        fun = float(loss + 0.5 * lam * float(wp @ wp))
        n = w.size
        dense = s.dense if s is not None else dense
        cyt = data.c * data.y * t
        if dense is not None:     # the Hessian's diagonal is not used with the dense model
            grad, hdiag = -(cyt @ dense), np.zeros(n)
        elif data.gram:
            grad, hdiag = np.empty(n), np.zeros(n)
            row_gradient(*data.rows, cyt, data.has_b, grad)
        else:
            grad, hdiag = np.empty(n), np.empty(n)
            K.grad_hess(data.indptr, data.indices, data.values, cyt, D, data.has_b, 0.0, grad,
                        hdiag)
        lower, evidence = self._bound(problem, data, t, cyt, grad, conj)
        grad = grad + lam * wp           # a new array: the evidence keeps the loss's slope
        hdiag += lam * data.pen
        fields = dict(w=w, z=z, D=D, t=t, grad=grad, hdiag=hdiag, fun=fun, lower_bound=lower,
                      evidence=evidence, w_best=w, fun_best=fun)
        if not data.own_value:    # a loss that overrides its oracle: valued by the oracle
            fields.update(w_best=None, fun_best=math.inf)
            if s is not None and not np.array_equal(w, s.w):
                problem.evaluate(w)
        if s is None:
            return self.State(**fields, cg_iterations=0, halvings=0, fails=0, n_steps=0,
                              stationary=False, subgradient_norm=math.nan,
                              linearization_error=math.nan, data=data, dense=dense,
                              hess=None, hess_D=None, hess_updates=0, updates=0,
                              expansions=0, model_duals=0, staged=0,
                              unit=bool(data.gram and dense is None
                                        and np.all(data.rows[2] == 1.0)),
                              mu=_start_lam(problem, data, self.continuation))
        return s._replace(**fields)

    @staticmethod
    def _bound(problem, data, t, cyt, grad, conj):
        r"""The Fenchel dual value of ``t`` (on the intercept's equality when there is one;
        squared hinge: scaled by the best factor). ``conj``: :math:`\sum_i c_i\psi(t_i)`
        from the loss terms' kernel, used while ``t`` is unchanged (logistic, no intercept
        excess). Returns ``(bound, DualPoint)`` (``-inf, None`` when rounding leaves it
        infeasible)."""
        lam, kind = problem.lam, data.kind
        t0 = t
        t, a = rebalance(data, t, cyt, grad)
        if kind == K.SQUARED_HINGE:
            # D(s) = s sum c t - s^2/2 (sum c t^2 + ||a||^2 / lam): its maximiser on s >= 0
            ct, ctt = K.weighted_moments(t, data.c)
            curv = ctt + float(a @ a) / lam
            scale = max(ct, 0.0) / curv if curv > 0 else 1.0
            t, a = scale * t, scale * a
        if t is t0 and kind != K.SQUARED_HINGE:
            b = -float(conj)
        else:
            b = -float(K.conjugate_sum(kind, 1.0, t, data.c))
        with np.errstate(over="ignore", invalid="ignore"):
            conj = own_scaled_conjugate(problem.reg, a, lam)
        if not (math.isfinite(conj) and math.isfinite(b)):
            return -math.inf, None
        return b - conj, DualPoint(t, plane=(a, b))

    # ------------------------------------------------------------------------------------
    def step(self, problem, s):
        # small products and solves: BLAS threads woken for them cost more than they give
        with _one_blas_thread():
            return self._step(problem, s)

    def _step(self, problem, s):
        data, lam = s.data, s.mu              # the model's lam (continuation), >= problem.lam
        w, g = s.w, s.grad
        extra = lam - problem.lam
        if extra:
            g = g + extra * data.pen * w
            s = s._replace(grad=g, hdiag=s.hdiag + extra * data.pen)
        if data.gram:
            H, updated = self._loss_hessian(data, s)
            s = s._replace(hess=H, hess_D=s.D, hess_updates=s.hess_updates + 1 if updated else 0,
                           updates=s.updates + updated)
            direction, iters = self._dense_direction(data, s, H, lam), 0
        else:
            direction, iters = self._cg_direction(data, s, lam)
        q = self._scores(data, s.dense, direction)
        slope = float(g @ direction)
        pen = data.pen
        wd = float((w * pen) @ direction)
        dd = float((direction * pen) @ direction)
        ww = float((w * pen) @ w)
        beta, halvings, accepted, expansions = 1.0, 0, False, 0
        f0 = s.fun + 0.5 * extra * ww            # F at the model's lam
        m = data.y.size
        z_try, t, D = np.empty(m), np.empty(m), np.empty(m)
        if slope < 0:
            while halvings <= _MAX_HALVINGS:
                reg = 0.5 * lam * (ww + 2.0 * beta * wd + beta * beta * dd)
                loss, conj = line_terms(data.kind, s.z, q, beta, data.y, data.c, z_try, t, D)
                f_try = loss + reg
                if f_try - f0 <= _SIGMA * beta * slope:
                    accepted = True
                    break
                beta *= 0.5
                halvings += 1
            if accepted and beta == 1.0 and f0 - f_try > _EXPAND_FIT * -0.5 * slope:
                # longer steps while F keeps decreasing (O(m) each from the kept scores)
                z2, t2, D2 = np.empty(m), np.empty(m), np.empty(m)
                while beta < _MAX_BETA:
                    b2 = 2.0 * beta
                    reg2 = 0.5 * lam * (ww + 2.0 * b2 * wd + b2 * b2 * dd)
                    loss2, conj2 = line_terms(data.kind, s.z, q, b2, data.y, data.c, z2, t2, D2)
                    if not loss2 + reg2 < f_try:
                        break
                    beta, f_try, loss, conj = b2, loss2 + reg2, loss2, conj2
                    z_try, z2, t, t2, D, D2 = z2, z_try, t2, t, D2, D
                    expansions += 1
        counts = dict(n_steps=s.n_steps + 1, cg_iterations=s.cg_iterations + iters,
                      halvings=s.halvings + halvings, expansions=s.expansions + expansions,
                      staged=s.staged + bool(extra))
        # the model's dual point only where it can prove the gap soon: the Newton decrement
        # -g^T d / 2 (the model's predicted decrease, about F - F* near the optimum) within
        # _MODEL_GATE times the gap the run must prove
        target = max(self.atol, self.rtol * abs(s.fun))
        near = not extra and -0.5 * slope <= _MODEL_GATE.get(data.kind, 1.0) * target
        mu = s.mu
        if extra and -0.5 * slope <= _CONTINUATION_DECREMENT * abs(f0):
            mu = max(problem.lam, mu * _CONTINUATION_FACTOR)    # the model's stage is solved
        wanted = (data.kind == K.LOGISTIC) if self.model_dual is None else self.model_dual
        model = self._model_dual(problem, data, s, q) if wanted and near else None
        prev = s.evidence
        if not accepted and extra:            # no descent at the stage: the true lam at once
            z = self._scores(data, s.dense, w)
            s = self._at(problem, data, w, z, s)
            return s._replace(**counts, mu=problem.lam)
        if not accepted:                      # no descent: exact scores, try again
            fails = s.fails + 1
            z = self._scores(data, s.dense, w)
            s = self._at(problem, data, w, z, s)
            return s._replace(**counts, fails=fails, stationary=fails >= _MAX_FAILS, mu=mu,
                              subgradient_norm=float(np.linalg.norm(s.grad)),
                              linearization_error=0.0)
        w_new = w + beta * direction
        if (s.n_steps + 1) % _REFRESH == 0:
            s = self._at(problem, data, w_new, self._scores(data, s.dense, w_new), s)
        else:   # the accepted trial's scores and terms
            s = self._at(problem, data, w_new, z_try, s, terms=(loss, conj, t, D))
        if model is not None and model[0] > s.lower_bound:
            s = s._replace(lower_bound=model[0], evidence=model[1], model_duals=s.model_duals + 1)
        if model is not None and data.kind == K.SQUARED_HINGE:
            s = self._combine(problem, data, s, prev, model)
        return s._replace(**counts, fails=0, mu=mu)

    @staticmethod
    def _combine(problem, data, s, prev, model):
        r"""The best dual point in the cone of the step's dual points (squared hinge): the
        new iterate's, the model's (:meth:`_model_dual`) and the previous step's best,
        :math:`t = \sum_k x_k t_k`, :math:`x \ge 0` (feasible: :math:`t \ge 0`, and the
        intercept's equality is linear). The dual value is a concave quadratic in :math:`x`,
        :math:`\sum_k x_k \langle c, t_k\rangle - \tfrac12 x^T Q x`, :math:`Q_{kl} = \langle
        c\circ t_k, t_l\rangle + \langle a_k, a_l\rangle/\lambda` (the slopes :math:`a_k` are
        kept: no data pass), maximised exactly over the orthant (every face of at most three
        points solved). Generalises the best scaling (one point). The combined point is
        valued exactly by its conjugate sum and the regularizer's conjugate, and kept when
        better. Cost: O(m) per pair."""
        points = [e for e in (s.evidence, None if model is None else model[1], prev)
                  if e is not None]
        # distinct points only (the kept evidence may be one of the others)
        uniq = []
        for e in points:
            if all(e is not u for u in uniq):
                uniq.append(e)
        if len(uniq) < 2:
            return s
        lam, c = problem.lam, data.c
        T = [e.t for e in uniq]
        A = [e.plane[0] for e in uniq]
        k = len(uniq)
        lin = np.array([float(c @ t) for t in T])
        Q = np.empty((k, k))
        for i in range(k):
            ct = c * T[i]
            for j in range(i, k):
                Q[i, j] = Q[j, i] = float(ct @ T[j]) + float(A[i] @ A[j]) / lam
        best, best_x = -math.inf, None
        for mask in range(1, 1 << k):
            S = [i for i in range(k) if mask >> i & 1]
            try:
                xs = np.linalg.solve(Q[np.ix_(S, S)], lin[S])
            except np.linalg.LinAlgError:
                continue
            if not np.all(xs >= 0) or not np.all(np.isfinite(xs)):
                continue
            x = np.zeros(k)
            x[S] = xs
            val = float(lin @ x) - 0.5 * float(x @ Q @ x)
            if val > best:
                best, best_x = val, x
        if best_x is None:
            return s
        t = sum(xi * ti for xi, ti in zip(best_x, T) if xi != 0.0)
        a = sum(xi * ai for xi, ai in zip(best_x, A) if xi != 0.0)
        if np.isscalar(t):
            return s
        b = -float(K.conjugate_sum(data.kind, 1.0, t, c))
        with np.errstate(over="ignore", invalid="ignore"):
            conj = own_scaled_conjugate(problem.reg, a, lam)
        bound = b - conj
        if math.isfinite(bound) and bound > s.lower_bound:
            return s._replace(lower_bound=bound, evidence=DualPoint(t, plane=(a, b)),
                              model_duals=s.model_duals + (s.evidence is not model[1]))
        return s

    def _model_dual(self, problem, data, s, q):
        r"""The dual point of the Newton model's minimiser, with its exact bound:
        ``(bound, DualPoint)`` (``-inf, None`` when rounding leaves it infeasible).

        The model at :math:`w` (scores :math:`z`, dual point :math:`t_i = -y_i l'(z_i)`) is
        :math:`\min_d g^Td + \tfrac12 d^T(\lambda P + X^T D X)d`; at the full step
        :math:`d` (``q`` :math:`= Xd`) the linearised dual point is :math:`\tilde t = t -
        y\circ(D/c)\circ q` (:math:`dt_i/dz_i = -y_i l''(z_i)`), whose loss slope is
        :math:`a = -X^T(c\circ y\circ\tilde t) = \nabla L + X^TDXd`: when :math:`d` solves the
        model exactly, :math:`a = -\lambda(w + d)`, the L2 conjugate's matching point for
        the predicted iterate (the model's gap is 0). So :math:`\tilde t` follows the
        iterate the model predicts, while :math:`t(w + \beta d)` only certifies near the
        optimum (its gap is about :math:`\|\nabla F\|^2/(2\lambda)`). Clipped to the dual's
        box (:math:`t \ge 0`; logistic :math:`t \le 1`), its slope recomputed by one pass
        :math:`X^T(c\circ y\circ\tilde t)` and valued by :meth:`_bound` (intercept equality,
        the squared hinge's best scaling): exact whatever the model's accuracy, the value
        :meth:`~nsopt.Certificate.check` recomputes. Kept when better than the new
        iterate's own (as newton-cd's :meth:`~nsopt.solvers.NewtonCD._model_dual`)."""
        c, y, m = data.c, data.y, data.y.size
        curv = np.divide(s.D, c, out=np.zeros(m), where=c > 0)
        upper = 1.0 if data.kind == K.LOGISTIC else math.inf
        t = s.t - y * curv * q
        if data.gram and s.hess is not None and data.kind == K.SQUARED_HINGE:
            t = self._pinned_rounds(problem, data, s, t, curv)
        t = np.clip(t, 0.0, upper)
        cyt = c * y * t
        grad = self._loss_slope(data, s.dense, cyt)
        conj = K.conjugate_sum(data.kind, 1.0, t, c)
        return self._bound(problem, data, t, cyt, grad, conj)

    def _pinned_rounds(self, problem, data, s, t, curv):
        r"""Squared hinge, dense model: the rows the model's dual point sends below 0 are
        pinned at 0 (their loss taken out of the model, :math:`H \mathrel{-}= X_S^T
        \mathrm{diag}(D_S) X_S`) and the model solved again, ``_PIN_ROUNDS`` times at most:
        the pinned model's dual point keeps :math:`a = -\lambda(w + d)` with :math:`t_S = 0`,
        where clipping alone breaks it. Each round touches the newly pinned rows only for
        the Gram update :math:`X_S^T\mathrm{diag}(D_S)X_S` and the slope's change
        :math:`X_S^T(c\circ y\circ t)_S` (the gradient without them), then a Cholesky solve
        and one pass for :math:`Xd`. Returns the last linearised point (not clipped)."""
        lam, c, y = problem.lam, data.c, data.y
        pinned = np.zeros(t.size, dtype=bool)
        H, g = s.hess, s.grad
        rows = None
        for _ in range(_PIN_ROUNDS):
            new = np.flatnonzero((t < 0) & ~pinned & (s.D > 0))
            if not new.size:
                break
            pinned[new] = True
            if s.dense is not None:
                XS = s.dense[new]
            else:
                if rows is None:
                    rows = sp.csr_matrix((data.rows[2], data.rows[1], data.rows[0]),
                                         shape=(t.size, data.d))
                XS = rows[new].toarray()
                if data.has_b:
                    XS = np.hstack([XS, np.ones((new.size, 1))])
            B = XS * np.sqrt(s.D[new])[:, None]
            H = H - B.T @ B
            g = g + XS.T @ (c[new] * y[new] * s.t[new])
            d = self._dense_direction(data, s._replace(grad=g), H, lam)
            q = self._scores(data, s.dense, d)
            t = np.where(pinned, 0.0, s.t - y * curv * q)
        return t

    @staticmethod
    def _loss_slope(data, dense, cyt):
        r"""The loss's slope :math:`-X^T(c\circ y\circ t)` (intercept last): one pass."""
        if dense is not None:
            return -(cyt @ dense)
        n = data.d + int(data.has_b)
        grad = np.empty(n)
        if data.gram:
            row_gradient(*data.rows, cyt, data.has_b, grad)
        else:
            K.grad_hess(data.indptr, data.indices, data.values, cyt, np.zeros(cyt.size),
                        data.has_b, 0.0, grad, np.empty(n))
        return grad

    @staticmethod
    def _loss_hessian(data, s):
        r"""The loss's Hessian :math:`X^T \mathrm{diag}(D) X` at the state's weights ``s.D``
        (the intercept's column of ones last), and whether it was an update.

        Built from scratch over the rows of nonzero weight: on the dense copy by BLAS syrk
        (:math:`B^T B`, :math:`B = \sqrt{D} X`), else from the sparse rows by
        :func:`~nsopt.solvers._newton_cd_kernels.gram` (:math:`\sum_i n_i(n_i+1)/2` adds);
        :func:`_dense_share` chose between them. When fewer rows changed weight since the last
        Hessian than have a nonzero weight now (the squared hinge's generalised Hessian, whose
        weights are :math:`c_i` or 0: only the rows that cross the margin change), it is
        updated instead, :math:`H + X_S^T \mathrm{diag}(D_S - D'_S) X_S` over the changed
        rows :math:`S`, and built again after ``_MAX_UPDATES`` updates (no drift)."""
        D, dense = s.D, s.dense
        if s.hess is not None and s.hess_updates < _MAX_UPDATES:
            delta = D - s.hess_D
            changed = np.flatnonzero(delta)
            if changed.size < np.count_nonzero(D):
                if dense is None:
                    return s.hess + _row_gram(data, delta, s.unit), True
                H = s.hess.copy()
                dc = delta[changed]
                for rows, sign in ((changed[dc > 0], 1.0), (changed[dc < 0], -1.0)):
                    if rows.size:
                        B = dense[rows] * np.sqrt(np.abs(delta[rows]))[:, None]
                        H += sign * (B.T @ B)
                return H, True
        if dense is None:
            return _row_gram(data, D, s.unit), False
        active = np.flatnonzero(D)
        if active.size == D.size:
            B = dense * np.sqrt(D)[:, None]
        else:
            B = dense[active] * np.sqrt(D[active])[:, None]
        return B.T @ B, False    # numpy's syrk for a product with its own transpose

    @staticmethod
    def _dense_direction(data, s, H, lam):
        r"""The exact Newton step :math:`(H + \lambda P) d = -g` (Cholesky, LAPACK's posv;
        least squares when the intercept's curvature vanishes)."""
        n = s.w.size
        A = H.copy()
        A.flat[::n + 1] += lam * data.pen
        _, x, info = lapack.dposv(A, -s.grad, lower=0, overwrite_a=1, overwrite_b=0)
        if info == 0 and np.all(np.isfinite(x)):
            return x
        A = H.copy()
        A.flat[::n + 1] += lam * data.pen
        return np.linalg.lstsq(A, -s.grad, rcond=None)[0]

    def _cg_direction(self, data, s, lam):
        r"""Preconditioned conjugate gradient on :math:`Hd = -g` ([HCL18]_'s diagonal mix),
        to :math:`\|Hd + g\| \le \eta\|g\|`. Returns ``(d, iterations)``."""
        g = s.grad
        n, m = g.size, data.y.size
        pen = data.pen
        M = (1.0 - _PRECONDITIONER_MIX) + _PRECONDITIONER_MIX * s.hdiag
        M[M <= 0] = 1.0
        x = np.zeros(n)
        r = -g
        z = r / M
        p = z.copy()
        rz = float(r @ z)
        stop = self.cg_tol * float(np.linalg.norm(g))
        Hp, u = np.empty(n), np.empty(m)
        it = 0
        while it < self.max_cg and float(np.linalg.norm(r)) > stop:
            hess_vec(data.indptr, data.indices, data.values, s.D, p, data.has_b, u, Hp)
            Hp += lam * pen * p
            pHp = float(p @ Hp)
            it += 1
            if not pHp > 0.0:   # no curvature along p (intercept alone, D = 0)
                if it == 1:
                    x = p
                break
            alpha = rz / pHp
            x += alpha * p
            r -= alpha * Hp
            z = r / M
            rz_new = float(r @ z)
            p = z + (rz_new / rz) * p
            rz = rz_new
        return x, it

    def info(self, s):
        return {"cg_iterations": s.cg_iterations, "line_search_halvings": s.halvings,
                "model": "gram" if s.data.gram else "cg", "hessian_updates": s.updates,
                "line_search_expansions": s.expansions, "model_duals": s.model_duals,
                "continuation_steps": s.staged}


def _row_gram(data, D, unit=False):
    r""":math:`X^T \mathrm{diag}(D) X` from the sparse rows (rows of zero weight skipped;
    ``unit``: every stored value is 1), by :func:`~._newton_cg_kernels.row_gram`."""
    n = data.d + int(data.has_b)
    H = np.empty((n, n))
    row_gram(*data.rows, D, data.has_b, unit, H)
    return H


def _start_lam(problem, data, on):
    r"""The Newton model's first :math:`\lambda` (``continuation``, squared hinge only):
    :math:`\max(\lambda, \max_i c_i\|x_i\|^2 / K_0)`, :math:`K_0` =
    ``_CONTINUATION`` (the model starts where dcd's conditioning would be :math:`K_0`); else
    :math:`\lambda`. One pass over the nonzeros (dcd's compiled row norms on the rows)."""
    lam = problem.lam
    if not on or data.kind != K.SQUARED_HINGE:
        return lam
    if data.dense is not None:
        X = data.dense[:, :data.d]
        sq = np.einsum("ij,ij->i", X, X)
    elif data.gram:
        sq = row_norms_sq(data.rows[0], data.rows[2])
    else:
        sq = np.asarray(problem.problem.base_loss.data.row_norms_sq(), dtype=np.float64)
    top = float(np.max(data.c * sq.reshape(-1), initial=0.0))
    return max(lam, top / _CONTINUATION)


def _dense_share(problem):
    r"""``prepare``'s ``dense_share`` by the dense Hessian's cost model: 0 (X kept dense, the
    Hessian by BLAS syrk, :math:`m n(n+1)/2` multiply-adds) when that is at most
    ``_SYRK_ADVANTAGE`` times the rows' pairs of nonzeros (:math:`\sum_i n_i(n_i+1)/2`, the
    sparse rows' kernel), else None (the sparse rows). ``n`` counts the intercept's column of
    ones, a nonzero in every row."""
    risk = problem.problem
    base = risk.base_loss
    X = base.data.X
    has_b = int(bool(risk.fit_intercept))
    m = int(X.shape[0])
    n = int(base.dim) + has_b
    if sp.issparse(X):
        per_row = np.diff(base.data.csr.indptr).astype(np.float64)
    else:
        per_row = np.count_nonzero(np.asarray(X), axis=1).astype(np.float64)
    per_row += has_b
    pairs = 0.5 * float(per_row @ (per_row + 1.0))
    syrk = 0.5 * m * n * (n + 1.0)
    return 0.0 if syrk <= _SYRK_ADVANTAGE * pairs else None

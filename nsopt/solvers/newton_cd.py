r"""Newton coordinate descent for L1-regularized smooth margin losses (newGLMNET, [YHL12]_).

.. math:: \min_w\; F(w) = \lambda\|w\|_1 + \sum_i c_i\, l(\langle x_i, w\rangle, y_i)

for a twice differentiable margin loss (logistic; squared hinge with its generalised Hessian).
Each iteration minimises the quadratic model of the loss plus the exact L1 term by cyclic
coordinate descent (with shrinking), then takes an Armijo step on :math:`F` along the
model's minimiser. The dual point :math:`t_i = -l'(z_i)` of each iterate, scaled into the
dual's feasible set, is the certificate.
"""
from __future__ import annotations

import math
from numbers import Integral
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._threads import _one_blas_thread
from .._validation import Boolean, Interval, Option, Options
from ..certificate import DualPoint
from ..regularizers import scaled_conjugate
from . import _newton_cd_kernels as K
from ._base import Solver
from ._registry import register

__all__ = ["NewtonCD", "loss_kind"]

#: ``(kind, psi)``: the kernels' losses, known by their conjugate :math:`\psi(t) =
#: l^*(-yt, y)` on the dual box ``[0, dual_upper]`` (a margin loss is determined by it)
_PROBE = np.array([0.0, 0.125, 0.25, 0.5, 0.75, 1.0])
_KINDS = (
    (K.SQUARED_HINGE, math.inf, lambda t: 0.5 * t * t - t),
    (K.LOGISTIC, 1.0, lambda t: np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)
     + np.where(t < 1, (1 - t) * np.log1p(-np.where(t < 1, t, 0.0)), 0.0)),
)

#: Armijo's constant and the largest halving count of the line search ([YHL12]_ Alg. 3)
_SIGMA, _MAX_HALVINGS = 0.01, 30
#: the model's Hessian is :math:`X^T D X + \nu I` ([YHL12]_ eq. (13): positive definite)
_NU = 1e-12
#: a coordinate step is clipped to this (a column whose curvature vanishes)
_MAX_STEP = 10.0
#: scores recomputed from ``w`` every this many iterations (no drift from the updates)
_REFRESH = 8
#: the dense-Hessian model (``model="auto"``) when the columns are at most this many and the
#: rows' pairs of nonzeros (the Hessian's cost) at most this many times the nonzeros
_GRAM_MAX_COLUMNS, _GRAM_MAX_PAIRS = 2000, 40.0
#: rounds of (coordinate-descent sweeps, face Newton step) per dense model
_FACE_ROUNDS, _SWEEPS_PER_ROUND = 50, 3
#: the dense model is solved until its violations sum to this share of those at w
_GRAM_TOL = 1e-2
#: rounds of the model's dual point's correction (``dual_rounds``) at most, and the
#: violated columns it solves on at most
_MAX_DUAL_COLUMNS = 2000
#: the model's dual point is formed when the model's decrease is at most this many times the
#: gap that counts as closed (it can prove a gap about the primal one, no smaller) and the
#: gradient at most this many times lam (a9a, both losses, lam 1e-4 and 1e-5: the model's
#: point proved 1e-3 at steps with 1.3-17 lam, never at steps with 33-540 lam; each one
#: formed costs two passes)
_DUAL_GATE, _DUAL_RATIO = 3.0, 20.0
#: consecutive iterations without descent (rounding) before the run reports ``stationary``
_MAX_FAILS = 3


def loss_kind(loss) -> int | None:
    """The kernel's kind of ``loss`` (:data:`~._newton_cd_kernels.SQUARED_HINGE`,
    :data:`~._newton_cd_kernels.LOGISTIC`) asked of its protocol: a binary, differentiable
    margin loss (``binary``, ``differentiable``) with a Fenchel dual (``dual_upper``,
    ``conjugate_terms``) equal to one of the kernels'; None for any other."""
    upper = getattr(loss, "dual_upper", None)
    if (upper is None or not getattr(loss, "binary", False)
            or not getattr(loss, "differentiable", False)):
        return None
    try:
        conj = np.asarray(loss.conjugate_terms(_PROBE.copy()), dtype=np.float64)
    except Exception:  # noqa: BLE001 (a conjugate that takes no probe is not the kernels')
        return None
    for kind, u, psi in _KINDS:
        probe = _PROBE[_PROBE <= u]
        if upper == u and conj.shape == _PROBE.shape and np.allclose(
                conj[:probe.size], psi(probe), rtol=0, atol=1e-14):
            return kind
    return None


class _Data(NamedTuple):
    """What the kernels read, fixed for a run."""
    kind: int
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    y: np.ndarray
    c: np.ndarray
    pen: np.ndarray            # 1 per coefficient, 0 for the intercept
    has_b: bool
    d: int                     # coefficients (the intercept is column d)
    rng: np.ndarray
    rows: tuple                # the same data by rows (CSR: indptr, indices, values)
    gram: bool                 # models on a dense Hessian of the active columns
    own_value: bool            # the kernels value the iterates (else: an oracle call each)
    dense: np.ndarray | None = None  # X dense, ones column last (``prepare``'s dense_share)


def prepare(problem, model, random_state, dense_share=None, columns=True) -> _Data:
    """The kernels' data of ``problem`` (the loop's counting wrapper of a
    :class:`~nsopt.RegularizedRisk` whose loss :func:`loss_kind` knows): CSC columns, CSR rows,
    labels, weights, the intercept column; the dense-Hessian mode when ``model`` is
    ``"gram"``, or ``"auto"`` and the columns are few (see :class:`NewtonCD`); shared with
    :class:`~nsopt.solvers.newton_cg.NewtonCG`.

    ``dense_share`` (None: never): in the dense-Hessian mode, when the nonzeros are at least
    this share of the ``m x d`` entries, X is kept as one dense C-ordered array ``dense``
    (the intercept's column of ones last) and only the layouts the caller still reads are
    built: no CSR rows, and CSC columns only with an intercept (:func:`rebalance` reads them);
    the unbuilt ones are empty arrays. Building them was most of a short run's setup (letter,
    ``d = 16``: CSC conversion and index copies, several dense passes' worth).
    ``columns=False``: in the dense-Hessian mode the caller reads the rows only, and the CSC
    columns are built only for an intercept."""
    risk = problem.problem
    base = risk.base_loss
    kind = loss_kind(base)
    X = base.data.X
    d = base.dim
    has_b = bool(risk.fit_intercept)
    m = int(X.shape[0])
    pen = np.ones(d + int(has_b))
    if has_b:
        pen[d] = 0.0
    seed = (random_state * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D) % 2**64
    if sp.issparse(X):
        csr = base.data.csr
        if csr.data.dtype != np.float64:
            csr = csr.astype(np.float64)
        csr = csr.copy() if not csr.has_canonical_format else csr
        csr.sum_duplicates()
        per_row = np.diff(csr.indptr).astype(np.float64)
    else:
        X = np.asarray(X, dtype=np.float64)
        csr = None                          # built below when a layout reads it
        per_row = np.count_nonzero(X, axis=1).astype(np.float64)
    total = float(per_row.sum())
    nnz = max(total, 1.0)
    gram = (model == "gram" or (model == "auto" and d + has_b <= _GRAM_MAX_COLUMNS
            and float(per_row @ per_row) <= _GRAM_MAX_PAIRS * nnz))
    dense = None
    if gram and dense_share is not None and total >= dense_share * m * d:
        src = csr if csr is not None else X
        if has_b:
            dense = np.empty((m, d + 1))
            dense[:, :d] = src.toarray() if csr is not None else src
            dense[:, d] = 1.0
        else:
            dense = src.toarray() if csr is not None else np.ascontiguousarray(src)
    empty_i, empty_v = np.zeros(0, dtype=np.int64), np.zeros(0)
    if has_b or (dense is None and (columns or not gram)):
        csc = base.data.csc if sp.issparse(X) else sp.csc_matrix(X)
        if csc.data.dtype != np.float64:
            csc = csc.astype(np.float64)
        columns = (csc.indptr.astype(np.int64), csc.indices.astype(np.int64), csc.data)
    else:
        columns = (np.zeros(d + 1, dtype=np.int64), empty_i, empty_v)
    if dense is None:
        if csr is None:
            csr = sp.csr_matrix(X)
        rows = (csr.indptr.astype(np.int64), csr.indices.astype(np.int64), csr.data)
    else:
        rows = (np.zeros(m + 1, dtype=np.int64), empty_i, empty_v)
    data = _Data(kind, *columns,
                 np.ascontiguousarray(base.y, dtype=np.float64),
                 np.ascontiguousarray(base.c, dtype=np.float64), pen, has_b, d,
                 np.array([seed or 1], dtype=np.uint64), rows, gram,
                 bool(getattr(problem.loss, "scores_supported", False)), dense)
    if has_b:
        y, c = data.y, data.c
        if not (np.any(c[y > 0] > 0) and np.any(c[y < 0] > 0)) and kind == K.LOGISTIC:
            raise ValueError(
                "the logistic loss with fit_intercept=True has no minimiser when every "
                "example of positive weight has the same label (the intercept runs to "
                "infinity); give examples of both classes, or fit_intercept=False")
    return data


def rebalance(data, t, cyt, grad):
    r"""The dual point ``t`` (with ``cyt`` :math:`= c\circ y\circ t` and the loss gradient
    ``grad`` :math:`= -X^T(c\circ y\circ t)`, intercept last) moved onto the intercept's
    equality :math:`\sum_i c_i y_i t_i = 0`: the class with the excess scaled toward 0 (one
    pass over its columns). Returns ``(t, a)``, ``a`` the plane's slope with ``a[d] = 0``;
    ``(t, grad)`` without an intercept or excess."""
    if not data.has_b:
        return t, grad
    r = float(cyt.sum())                    # sum c y t, = -a_b
    if r == 0.0:
        return t, grad
    side = 1.0 if r > 0 else -1.0           # the class with the excess
    cls = data.y * side > 0
    mass = float(np.abs(cyt[cls]).sum())
    f = max(1.0 - abs(r) / mass, 0.0) if mass > 0 else 1.0
    part = np.where(cls, cyt, 0.0)
    a_cls = np.empty(grad.size)
    K.grad_hess(data.indptr, data.indices, data.values, part, np.zeros(t.size),
                True, 0.0, a_cls, np.empty(grad.size))
    a = grad + (f - 1.0) * a_cls             # the plane is linear in t
    a[data.d] = 0.0
    return np.where(cls, t * f, t), a


@register
class NewtonCD(Solver):
    r"""Newton coordinate descent (newGLMNET, [YHL12]_) for L1 with a smooth margin loss.

    Minimises :math:`F(w) = \lambda\|w\|_1 + \sum_i c_i\, l(\langle x_i, w\rangle, y_i)`
    (:class:`~nsopt.RegularizedRisk` with :class:`~nsopt.regularizers.L1`, optionally a free
    intercept) for the logistic loss and the squared hinge, the losses whose conjugate the
    kernels know (asked of ``loss.conjugate_terms``, see :func:`loss_kind`).

    Iteration k ([YHL12]_ Alg. 3), at :math:`w` with scores :math:`z = Xw`: the gradient
    :math:`\nabla = X^T(c \circ l'(z))` and the Hessian weights :math:`D_i = c_i l''(z_i)`
    (squared hinge: the generalised second derivative :math:`1[y_i z_i < 1]`, [YHL12]_ Sec.
    6), then

    1. **model:** :math:`d = \arg\min_d\ \nabla^T d + \tfrac12 d^T(X^TDX + \nu I)d +
       \lambda\|w + d\|_1`, approximately, on the columns not shrunk by the outer rule (a
       zero coordinate with :math:`|\nabla_j| < \lambda - M/m`, :math:`M` the previous
       iteration's largest violation of optimality), in one of two ways (``model``):

       * ``"columns"`` ([YHL12]_): cyclic coordinate descent in a random order with
         shrinking over the data's columns
         (:func:`~nsopt.solvers._newton_cd_kernels.inner_cd`, two column passes per sweep),
         to :math:`\sum_j v_j \le \epsilon_{in} \sum_j v_j^{(0)}` (the violations of the
         model's optimality conditions against those of the first iteration;
         :math:`\epsilon_{in}` starts at 1 and is divided by 4 whenever one sweep was enough:
         [YHL12]_ Sec. 5.1);
       * ``"gram"``: the model's Hessian on the active columns formed once, dense
         (:func:`~nsopt.solvers._newton_cd_kernels.gram`, :math:`\sum_i n_i^2/2`
         multiply-adds), then coordinate descent on it (O(n) per coordinate; glmnet's
         covariance updates, [FHT10]_ Sec. 2.2) alternated with Newton steps on the face of the
         current signs (a Cholesky solve, the step cut where a coordinate reaches 0), to a
         hundredth of the violations at :math:`w`. Coordinate descent alone crawls along
         flat valleys, columns that nearly sum to the same vector (a9a's one-hot groups: 100
         sweeps of the column method left the gradient 2.5x :math:`\lambda` off on some
         coordinates at :math:`\lambda = 10^{-5}`, and the dual point's bound 30% below
         :math:`J^*`); the face step crosses them in one solve. ``"auto"`` (default) takes
         it when there are at most 2000 columns and the rows' pairs of nonzeros are at most
         40 times the nonzeros.
    2. **line search:** the largest :math:`\beta \in \{1, 1/2, \dots\}` with
       :math:`F(w + \beta d) - F(w) \le \sigma\beta\Delta`, :math:`\Delta = \nabla^T d +
       \lambda(\|w + d\|_1 - \|w\|_1)`, :math:`\sigma = 0.01`, valued from the kept scores
       :math:`z + \beta Xd` (O(m) per trial, no data pass);
    3. **certificate** at the new point: the dual point :math:`t_i = -y_i l'(z_i)` (the
       gradient's own, :math:`\nabla = -X^T(c\circ y\circ t)`), with an intercept moved onto
       :math:`\sum_i c_i y_i t_i = 0` (the class with the excess scaled toward 0), then scaled
       by the best :math:`s \le \lambda/\|\nabla\|_\infty` (the dual's feasible set: the L1
       conjugate is the indicator of :math:`\|a\|_\infty \le \lambda`; the dual value
       :math:`-\sum_i c_i l^*(-y_i s t_i)` is concave in s). The bound is the
       :class:`~nsopt.certificate.DualPoint` of :math:`s t` (what
       :meth:`~nsopt.Certificate.check` recomputes), O(m + d) beyond the gradient pass.
       Near the optimum :math:`\|\nabla\|_\infty \to \lambda` and the gap closes with
       :math:`F`, but late: in flat directions (a9a's one-hot groups at small
       :math:`\lambda`) the gradient stays at several times :math:`\lambda` on a few
       coordinates while :math:`F` is within 1e-4 of :math:`F^*`, and the scaling loses most of
       the bound. So, once the model's decrease is within 3 times the gap to prove, the
       gradient within 20 times :math:`\lambda` and the iterate's point does not prove it, the
       **model's dual point** is tried too
       (:meth:`_model_dual`): the linearised :math:`t - y\circ(D/c)\circ X\delta` of a
       displacement :math:`\delta` whose model gradient :math:`\nabla + H\delta` is put in the
       box by a few pinned-set solves on the model's Hessian (the Fenchel dual of the model
       without its sign conditions), then clipped, given its exact plane and scaled like the
       iterate's. It is formed before the line search: when it closes the gap at :math:`w`
       the step ends there (no line search, no new point); otherwise the new point keeps the
       better of its own bound and it (the loop keeps the best over iterations). On a9a,
       logistic, :math:`\lambda = 10^{-5}`: 1e-3 proven after 6 Newton steps instead of 8.

    The run stops on the proven gap (``rtol``, ``atol``), like every method.

    Parameters
    ----------
    shrinking : bool, default True
        Shrink columns (outer rule above, and inside each coordinate-descent solve).
    max_sweeps : int, default 100
        Coordinate-descent sweeps per model at most.
    dual_rounds : int, default 10
        Pinned-set solves that correct the model's dual point (0: the iterate's scaled dual
        point only, as before the model's dual point existed).
    random_state : int, default 0
        Seed of the sweep orders (runs are reproducible).
    **common
        ``rtol, atol, max_iter, max_time, verbose`` (see :func:`nsopt.minimize`); one
        iteration is one Newton step.

    Notes
    -----
    Cost per iteration: one pass over the columns (gradient and Hessian diagonal); with
    ``model="columns"`` two per coordinate-descent sweep over the active columns, with
    ``"gram"`` the Hessian (a9a: about 14 passes' worth) and :math:`X d` (one pass over the
    active columns); O(m) per line-search trial and for the certificate. Scores are updated
    as :math:`z + \beta Xd` and recomputed from ``w`` every 8 iterations. Data is read by
    columns (CSC; dense data is copied to CSC and CSR once; the rows feed the dense
    Hessian). A free
    intercept is column ``d`` of ones with no penalty. Compiled with numba
    (:mod:`nsopt.solvers._newton_cd_kernels`).

    A coordinate step is clipped to 10 and the model's Hessian is :math:`X^TDX + \nu I`,
    :math:`\nu = 10^{-12}` ([YHL12]_). The iterate is valued by the kernels (offered to the
    loop as ``w_best``, settled by one oracle call before it is reported). Three iterations
    in a row without descent (rounding at a gap below what floating point resolves) end the
    run as ``stationary``, with the norm of the least-norm subgradient.

    ``Result.info``: ``n_active`` (columns in the last model), ``inner_sweeps`` (sweeps
    over all iterations), ``line_search_halvings`` (the same), ``model_duals`` (steps whose
    bound is the model's dual point's), ``nnz`` (nonzeros of x).

    References
    ----------
    .. [YHL12] G.-X. Yuan, C.-H. Ho, C.-J. Lin. An improved GLMNET for L1-regularized
       logistic regression. JMLR 13:1999-2030, 2012.
    .. [FHT10] J. Friedman, T. Hastie, R. Tibshirani. Regularization paths for generalized
       linear models via coordinate descent. J. Stat. Softw. 33(1), 2010.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(500, 30, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Logistic(X, y), nsopt.regularizers.L1(), lam=1e-2)
    >>> res = nsopt.minimize(J, method="newton-cd", rtol=1e-8)
    >>> bool(res.success and res.certificate.check(J) <= res.fun), res.certificate.source
    (True, 'dual-point')
    """

    name = "newton-cd"
    requires = ("regularized_risk",)
    self_certifying = True
    certificate_source = "dual-point"
    history_fields = ("n_active", "inner_sweeps")
    options = {
        "shrinking": Option(True, Boolean(), doc="shrink columns at zero whose gradient is "
                                                 "well inside [-lam, lam]"),
        "max_sweeps": Option(100, Interval(Integral, 1, None, closed="left"),
                             doc="coordinate-descent sweeps per Newton step at most"),
        "model": Option("auto", Options(("auto", "gram", "columns")),
                        doc="how the quadratic model is minimised: 'columns' (coordinate "
                            "descent over the data's columns, newGLMNET), 'gram' (on the dense "
                            "Hessian of the active columns, with Newton steps on the sign face), "
                            "'auto' (gram when the columns are few)"),
        "dual_rounds": Option(10, Interval(Integral, 0, None, closed="left"),
                              doc="correction rounds of the Newton model's dual point (0: no "
                                  "model dual point, only the iterate's, scaled)"),
        "random_state": Option(0, Interval(Integral, 0, None, closed="left"),
                               doc="seed of the coordinate orders"),
    }

    @classmethod
    def unsupported_reason(cls, problem):
        reason = super().unsupported_reason(problem)
        if reason is not None:
            return reason
        reg = problem.base_reg if problem.fit_intercept else problem.reg
        # with an intercept, say that it is not the reason
        what = " (with or without an intercept)" if problem.fit_intercept else ""
        if getattr(reg, "l1_ratio", None) != 1.0:
            return (f"method {cls.name!r} needs the L1 regularizer lam ||w||_1 (l1_ratio 1){what}, "
                    f"got {type(reg).__name__}; use 'bmrm', 'ls-bmrm' or 'proximal-bundle', which "
                    "take any regularizer")
        loss = problem.base_loss if problem.fit_intercept else problem.loss
        if loss_kind(loss) is None:
            return (f"method {cls.name!r} needs a twice differentiable binary margin loss whose "
                    f"conjugate it knows (Logistic, SquaredHinge){what}, got "
                    f"{type(loss).__name__}; use 'bmrm' or 'proximal-bundle'")
        return None

    class State(NamedTuple):
        w: np.ndarray              # the iterate (coefficients, then the intercept)
        z: np.ndarray              # its scores Xw (+ b)
        t: np.ndarray              # its dual point -y l'(z)
        D: np.ndarray              # Hessian weights c l''(z)
        grad: np.ndarray           # gradient of the loss at w (intercept last)
        hdiag: np.ndarray          # diagonal of X^T D X + nu I
        fun: float                 # F(w), by the kernels
        lower_bound: float         # the dual point's bound at w
        evidence: object           # DualPoint of the scaled t
        w_best: np.ndarray         # = w, valued by the kernels (settled by the loop)
        fun_best: float
        n_active: int              # columns in the last model
        inner_sweeps: int          # sweeps so far
        halvings: int              # line-search halvings so far
        inner_tol: float           # epsilon_in
        violation_max: float       # M: largest violation at the last model's start
        violation_init: float      # sum of violations at the first iteration
        fails: int                 # consecutive iterations without descent
        n_steps: int               # Newton steps made
        model_duals: int           # steps whose bound is the model's dual point's
        stationary: bool
        subgradient_norm: float
        linearization_error: float
        data: object               # _Data

    def _dual_certifier(self, problem):
        """The corrected dual point (:class:`~nsopt.certificate.L1DualCertifier`) only when
        ``certify_dual`` is given: the method's own dual point is the same construction,
        every iteration, without the correction rounds."""
        if "certify_dual" not in self._options:
            return None
        return super()._dual_certifier(problem)

    # ------------------------------------------------------------------------------------
    def init(self, problem, x0):
        problem.evaluate(x0)                       # the fallback answer: F(x0), one oracle call
        data = prepare(problem, self.model, self.random_state)
        w = np.array(x0, dtype=np.float64)
        z = K.scores(data.indptr, data.indices, data.values, w, data.has_b, data.y.size)
        return self._at(problem, data, w, z, None)

    def _at(self, problem, data, w, z, s, candidate=None):
        """The state at ``w`` with scores ``z``: loss, dual point, gradient pass, bound: the
        better of the iterate's and ``candidate`` (another dual point's ``(bound, evidence)``,
        or None)."""
        m = data.y.size
        t, D = np.empty(m), np.empty(m)
        loss = K.margin_terms(data.kind, z, data.y, data.c, t, D)
        fun = float(loss + problem.lam * K.penalty(w, data.pen))
        n = w.size
        grad, hdiag = np.empty(n), np.empty(n)
        cyt = data.c * data.y * t
        K.grad_hess(data.indptr, data.indices, data.values, cyt, D, data.has_b, _NU, grad, hdiag)
        lower, evidence = self._bound(problem, data, t, cyt, grad)
        model_duals = 0 if s is None else s.model_duals
        if candidate is not None and candidate[1] is not None and candidate[0] > lower:
            lower, evidence = candidate
            model_duals += 1
        fields = dict(w=w, z=z, t=t, D=D, grad=grad, hdiag=hdiag, fun=fun, lower_bound=lower,
                      evidence=evidence, w_best=w, fun_best=fun, model_duals=model_duals)
        if not data.own_value:    # a loss that overrides its oracle: valued by the oracle
            fields.update(w_best=None, fun_best=math.inf)
            if s is not None and not np.array_equal(w, s.w):
                problem.evaluate(w)
        if s is None:
            return self.State(**fields, n_active=n, inner_sweeps=0, halvings=0, inner_tol=1.0,
                              violation_max=math.inf, violation_init=math.nan, fails=0, n_steps=0,
                              stationary=False, subgradient_norm=math.nan,
                              linearization_error=math.nan, data=data)
        return s._replace(**fields)

    def _bound(self, problem, data, t, cyt, grad):
        r"""The dual point ``t`` made feasible: on the intercept's equality (when there is
        one), then scaled into :math:`\|a\|_\infty \le \lambda` by the best factor. Returns
        ``(bound, DualPoint)`` (``-inf, None`` when rounding leaves it infeasible)."""
        lam, kind, d = problem.lam, data.kind, data.d
        t, a = rebalance(data, t, cyt, grad)
        amax = float(np.max(np.abs(a[:d]), initial=0.0))
        top = lam / amax * (1.0 - 1e-12) if amax > 0 else math.inf
        tmax = float(np.max(t, initial=0.0))
        if tmax == 0.0:
            top = 1.0
        elif kind == K.LOGISTIC:
            top = min(top, (1.0 - 1e-12) / tmax)
        scale = self._best_scale(kind, t, data.c, top)
        t = scale * t
        a = scale * a
        b = -float(K.conjugate_sum(kind, 1.0, t, data.c))
        with np.errstate(over="ignore", invalid="ignore"):
            conj = scaled_conjugate(problem.reg, a, lam)
        if not math.isfinite(conj):
            return -math.inf, None
        return b - conj, DualPoint(t, plane=(a, b))

    @staticmethod
    def _best_scale(kind, t, c, top):
        """The maximiser of the concave :math:`s \\mapsto -\\sum_i c_i \\psi(s t_i)` on
        [0, top]: ``top`` when the slope there is >= 0 (usual near the optimum, where the
        slope at 1 is :math:`\\lambda\\|w\\|_1`), else the slope's root (closed form for the
        squared hinge, safeguarded Newton for the logistic loss:
        :func:`~._newton_cd_kernels.logistic_best_scale`)."""
        if kind == K.SQUARED_HINGE:
            ct, ctt = K.weighted_moments(t, c)
            best = ct / ctt if ctt > 0 else 0.0
            return min(best, top)
        return K.logistic_best_scale(t, c, top)

    # ------------------------------------------------------------------------------------
    def step(self, problem, s):
        data, lam = s.data, problem.lam
        w, grad = s.w, s.grad
        L = lam * data.pen
        # violations of the optimality conditions at w (the least-norm subgradient's entries)
        v = np.where(w > 0, np.abs(grad + L), np.where(w < 0, np.abs(grad - L),
                     np.maximum(np.abs(grad) - L, 0.0)))
        total = float(v.sum())
        first = not math.isfinite(s.violation_init)
        v_init = total if first else s.violation_init
        m = data.y.size
        keep = np.ones(w.size, dtype=bool)
        if self.shrinking and math.isfinite(s.violation_max):
            keep = ~((w == 0) & (L > 0) & (np.abs(grad) < L - s.violation_max / m))
        active = np.flatnonzero(keep).astype(np.int64)
        tol = s.inner_tol * v_init
        if data.gram:   # a cheap model: solved to a share of the violations at w
            tol = min(tol, _GRAM_TOL * total)
            with _one_blas_thread():   # small solves: BLAS threads cost more than they give
                wpd, q, sweeps, H, r = self._gram_model(data, s, active, lam, tol)
        else:
            H = None
            wpd = w.copy()
            q = np.zeros(m)
            sweeps = K.inner_cd(data.indptr, data.indices, data.values, s.D, grad, s.hdiag, w,
                                wpd, q, active, active.size, data.pen, lam, _NU, tol,
                                self.max_sweeps, _MAX_STEP, data.rng)
        inner_tol = s.inner_tol * 0.25 if sweeps == 1 else s.inner_tol
        direction = wpd - w
        reg_w = K.penalty(w, data.pen)
        delta = float(grad @ direction) + lam * (K.penalty(wpd, data.pen) - reg_w)
        candidate = None
        target = max(self.config["atol"], self.config["rtol"] * abs(s.fun))
        if (H is not None and self.dual_rounds and -delta <= _DUAL_GATE * target
                and s.fun - s.lower_bound > target
                and float(np.max(np.abs(grad[:data.d]), initial=0.0)) <= _DUAL_RATIO * lam):
            # the model's dual point: may prove what the iterate's cannot, here at w already
            with _one_blas_thread():
                candidate = self._model_dual(problem, data, s, active, H, r, wpd)
            if (candidate[1] is not None and candidate[0] > s.lower_bound
                    and s.fun - candidate[0] <= 0.5 * target):
                # closed at w (half the target: the loop's own valuation of w may differ by
                # rounding; a second visit finds no better bound and steps on)
                return s._replace(lower_bound=candidate[0], evidence=candidate[1],
                                  model_duals=s.model_duals + 1, n_steps=s.n_steps + 1,
                                  inner_sweeps=s.inner_sweeps + int(sweeps))
        beta, halvings, accepted = 1.0, 0, False
        if delta < 0:
            while halvings <= _MAX_HALVINGS:
                w_try = wpd if beta == 1.0 else w + beta * direction
                f_try = (K.line_loss(data.kind, s.z, q, beta, data.y, data.c)
                         + lam * K.penalty(w_try, data.pen))
                if f_try - s.fun <= _SIGMA * beta * delta:
                    accepted = True
                    break
                beta *= 0.5
                halvings += 1
        counts = dict(n_steps=s.n_steps + 1, n_active=int(active.size),
                      inner_sweeps=s.inner_sweeps + int(sweeps),
                      halvings=s.halvings + halvings, inner_tol=inner_tol,
                      violation_max=float(v[active].max(initial=0.0)), violation_init=v_init)
        if not accepted:                      # no descent: a tighter model, exact scores
            fails = s.fails + 1
            z = K.scores(data.indptr, data.indices, data.values, w, data.has_b, m)
            s = self._at(problem, data, w, z, s, candidate)
            counts["inner_tol"] = inner_tol * 0.25
            return s._replace(**counts, fails=fails,
                              stationary=fails >= _MAX_FAILS,
                              subgradient_norm=float(np.linalg.norm(v)), linearization_error=0.0)
        w_new = wpd if beta == 1.0 else w + beta * direction
        if (s.n_steps + 1) % _REFRESH == 0:
            z = K.scores(data.indptr, data.indices, data.values, w_new, data.has_b, m)
        else:
            z = s.z + beta * q
        s = self._at(problem, data, w_new, z, s, candidate)
        return s._replace(**counts, fails=0)

    def _gram_model(self, data, s, active, lam, tol):
        r"""The model's minimiser on the active columns from their dense Hessian: coordinate
        descent (O(n) per coordinate) alternated with Newton steps on the face of the current
        signs (a Cholesky solve; the step stops where a coordinate reaches 0), which cross the
        flat valleys coordinate descent crawls along (one-hot groups: columns that sum to the
        same vector). Both decrease the model. Returns ``(wpd, X(wpd - w), sweeps, H, r)``, ``H``
        the Hessian and ``r`` the model's gradient at ``wpd`` on the active columns."""
        d = data.d
        n = active.size
        pos = np.full(d + 1, -1, dtype=np.int64)
        pos[active] = np.arange(n)
        H = K.gram(*data.rows, s.D, pos[:d], n, int(pos[d]) if data.has_b else -1, _NU)
        r = s.grad[active].copy()
        x0 = s.w[active]
        x = x0.copy()
        L = lam * data.pen[active]
        order = np.arange(n, dtype=np.int64)
        sweeps = 0
        ridge = 1e-12 * float(np.trace(H)) / max(n, 1)
        for _ in range(_FACE_ROUNDS):
            sweeps += K.dense_cd(H, r, x, L, tol, _SWEEPS_PER_ROUND, _MAX_STEP, order, data.rng)
            if sweeps >= self.max_sweeps or K.violations(r, x, L) <= tol:
                break
            face = np.flatnonzero((x != 0) | (L == 0))
            if face.size == 0:
                continue
            sign = np.sign(x[face])
            rhs = -(r[face] + L[face] * sign)
            HF = H[np.ix_(face, face)]
            HF[np.diag_indices_from(HF)] += ridge
            try:
                delta = scipy.linalg.cho_solve(scipy.linalg.cho_factor(HF, check_finite=False),
                                               rhs, check_finite=False)
            except (np.linalg.LinAlgError, ValueError):
                delta = np.linalg.lstsq(HF, rhs, rcond=None)[0]
            xf = x[face]
            cross = (L[face] > 0) & (xf * (xf + delta) < 0)
            alpha, hit = 1.0, -1
            if np.any(cross):
                ratios = -xf[cross] / delta[cross]
                k = int(np.argmin(ratios))
                if ratios[k] < 1.0:
                    alpha, hit = float(ratios[k]), int(np.flatnonzero(cross)[k])
            new = xf + alpha * delta
            if hit >= 0:
                new[hit] = 0.0
            change = new - xf
            x[face] = new
            r += H[:, face] @ change
        wpd = s.w.copy()
        wpd[active] = x
        q = K.column_products(data.indptr, data.indices, data.values, x - x0, active,
                              data.has_b, data.y.size)
        return wpd, q, sweeps, H, r

    @staticmethod
    def _solve(H, e):
        """``(H + r I)^{-1} e`` for the positive semidefinite ``H``, ``r`` 1e-12 of its mean
        diagonal (Cholesky; least squares when rounding defeats it)."""
        n = e.size
        ridged = H + (1e-12 * float(np.trace(H)) / max(n, 1)) * np.eye(n)
        try:
            return scipy.linalg.cho_solve(scipy.linalg.cho_factor(ridged, check_finite=False), e,
                                          check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            return np.linalg.lstsq(ridged, e, rcond=None)[0]

    def _model_dual(self, problem, data, s, active, H, r, wpd):
        r"""The Newton model's dual point, corrected, with its bound: ``(bound, DualPoint)``
        (``bound = -inf, None`` when rounding leaves it infeasible).

        The model at :math:`w` is :math:`\min_\delta \nabla^T\delta + \tfrac12\delta^T H\delta
        + \lambda\|w+\delta\|_1`, :math:`H = X^T\mathrm{diag}(D)X`. Any displacement
        :math:`\delta` gives the linearised dual point :math:`t(\delta) = t - y\circ(D/c)\circ
        X\delta` (:math:`t_i = -y_i l'(z_i)` has :math:`dt_i/dz_i = -y_i l''(z_i)`), whose plane's
        slope is :math:`a = \nabla + H\delta`: feasible when :math:`\|a\|_\infty \le \lambda`.
        That is the model's optimality condition *without* its sign conditions (Fenchel: the
        metric projection of :math:`t` onto the dual's feasible set is the model's minimiser's
        image). The model is solved only to a share of its violations (its flat valleys:
        a9a's one-hot groups at small :math:`\lambda` leave coordinates at 3-4x
        :math:`\lambda` when the primal is within 1e-4), so its gradient is corrected first, in
        the model's dense space (no data pass): at most ``dual_rounds`` times, the active
        columns outside the box join the pinned set :math:`P` (with their sign :math:`\sigma`
        then), and :math:`H_{PP}\eta = a_P - \lambda p_P\sigma_P`, :math:`\delta_P
        \mathrel{-}= \eta` puts all of them on the box's face (a set that only grows: the
        rounds end, unlike re-solving only on the columns out now, which cycled and left
        1.26x :math:`\lambda` on a9a). The displacement with the least largest ratio
        :math:`|a_j|/(\lambda p_j)` is kept. Then one pass for :math:`X\delta`, the point
        clipped to the dual box and one pass for its exact slope; the bound is :meth:`_bound`'s
        (feasible scaling), exact whatever the corrections did: it is the value of the evidence
        :meth:`~nsopt.Certificate.check` recomputes. Cost: two passes, O(m) for the scaling and
        the rounds' Cholesky solves (at most the active columns)."""
        lam, m, n = problem.lam, data.y.size, s.w.size
        L = lam * data.pen[active]
        x = wpd[active] - s.w[active]
        a = r.copy()

        def ratio(a):   # the largest |a_j| / L_j (an unpenalised column: inf unless a_j = 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                return float(np.max(np.where(L > 0, np.abs(a) / L, np.where(a != 0, np.inf, 0.0)),
                                    initial=0.0))
        best, best_x = ratio(a), x.copy()
        pinned = np.zeros(a.size, dtype=bool)
        sign = np.zeros(a.size)
        for _ in range(self.dual_rounds):
            out = np.abs(a) > L * (1.0 + 1e-9)
            new = out & ~pinned
            if not np.any(out):
                break
            sign[new] = np.sign(a[new])
            pinned |= out
            V = np.flatnonzero(pinned)
            if V.size > _MAX_DUAL_COLUMNS:
                break
            e = a[V] - L[V] * sign[V]
            HV = H[np.ix_(V, V)]
            eta = self._solve(HV, e)
            if not np.all(np.isfinite(eta)):
                break
            x[V] -= eta
            a -= H[:, V] @ eta
            now = ratio(a)
            if now < best:
                best, best_x = now, x.copy()
        q = K.column_products(data.indptr, data.indices, data.values, best_x, active,
                              data.has_b, m)
        c, y = data.c, data.y
        curv = np.divide(s.D, c, out=np.zeros(m), where=c > 0)
        upper = 1.0 if data.kind == K.LOGISTIC else math.inf
        t = np.clip(s.t - y * curv * q, 0.0, upper)
        cyt = c * y * t
        grad = np.empty(n)
        K.grad_hess(data.indptr, data.indices, data.values, cyt, s.D, data.has_b, _NU, grad,
                    np.empty(n))
        return self._bound(problem, data, t, cyt, grad)

    def info(self, s):
        return {"n_active": s.n_active, "inner_sweeps": s.inner_sweeps,
                "line_search_halvings": s.halvings, "model_duals": s.model_duals,
                "nnz": int(np.count_nonzero(s.w[:s.data.d]))}

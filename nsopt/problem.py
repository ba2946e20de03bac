r"""The regularized risk :math:`J(w) = \lambda\Omega(w) + R(w)`, the problem every BMRM-type
solver understands; any other solver sees it as a plain :class:`~nsopt.Oracle`."""
from __future__ import annotations

import math

import numpy as np

from ._validation import check_positive, check_vector
from .oracle import Evaluation, Oracle
from .regularizers import L2, Regularizer

__all__ = ["RegularizedRisk", "InterceptRegularizer", "as_problem"]


class RegularizedRisk(Oracle):
    r"""Regularized risk :math:`J(w) = \lambda\,\Omega(w) + R(w)` ([TVSL10]_ eq. 1), optionally
    with an unregularized intercept.

    Parameters
    ----------
    loss : Oracle
        The empirical risk :math:`R(w)`, usually a loss from :mod:`nsopt.losses` (mean over
        examples). Its ``lower_bound`` (0 for the nonnegative losses) bounds the cutting-plane
        model from below, which is what makes L1 master problems bounded.
    reg : Regularizer, default ``L2()``
        :math:`\Omega`, known through its conjugate.
    lam : float > 0, default 1e-4
        Regularization strength; liblinear's ``C`` is ``1 / (m * lam)``.
    fit_intercept : bool, default False
        Add a free, unregularized intercept (see below).

    Notes
    -----
    **An unregularized intercept.** With ``fit_intercept=True`` the problem is

    .. math:: J(x) = \lambda\,\Omega(w) + R(w, b),\qquad x = (w, b),

    with the scores :math:`Xw + b` (scalar losses: one intercept) or :math:`XW + 1b^T` (vector
    losses: one intercept per class or output). Then

    * ``J.n_intercepts`` is 1 (scalar loss) or k (vector loss), ``J.dim = loss.dim +
      J.n_intercepts``; ``J.split(x) -> (coef, intercept)`` of shapes ``(loss.dim,)`` and
      ``(n_intercepts,)``, ``J.join(coef, intercept) -> x``. For a vector loss ``coef`` is the
      flattened d x k matrix, so ``x`` is the flattened (d+1) x k matrix whose last row is
      the intercepts.
    * ``value``, ``value_and_subgradient``, ``sup_subgradient`` and ``restrict`` work on the
      full ``x``: every solver that sees an oracle treats ``b`` as a free coordinate.
    * ``J.loss`` is the loss on ``x`` (the same class and data, scores shifted by ``b``, no
      copy of ``X``; :func:`nsopt.losses._intercept.with_intercept`) and ``J.base_loss`` the
      loss passed in; ``J.reg`` is :class:`InterceptRegularizer`, :math:`\Omega` on the
      coefficients only, and ``J.base_reg`` the regularizer passed in.
    * Certificates. A plane :math:`(a_w, a_b, c)` of :math:`R` bounds :math:`J` by
      :math:`\min_{w,b} \lambda\Omega(w) + \langle a_w, w\rangle + \langle a_b, b\rangle + c`,
      which is :math:`-\infty` unless :math:`a_b = 0`: the conjugate of :math:`\Omega` on the
      coefficients only is infinite off :math:`a_b = 0`, so the master problems of the BMRM
      family carry the equality :math:`\sum_i \alpha_i a_{i,b} = 0` on the plane multipliers.
      To keep bounds finite (before the planes make the equality feasible) and valid under
      rounding, the bound is taken over the box :math:`\|b\|_\infty \le B` that provably
      contains an optimal intercept (:meth:`intercept_bound`): the conjugate term gains
      :math:`B\|a_b\|_1` (``J.reg.scaled_conjugate``), and every bound stays
      :math:`\le J^*`. Where no such B is known (``inf``), bounds are finite only for
      :math:`a_b = 0` exactly.

    Raises ``ValueError`` for a loss that cannot take an intercept (ranking and pairwise
    losses, where a common bias cancels out; :class:`~nsopt.losses.Novelty`; user oracles).

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(200, 20, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam=1e-2)
    >>> J.value(np.zeros(20))
    1.0
    >>> Jb = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2, fit_intercept=True)
    >>> Jb.dim, Jb.n_intercepts, Jb.split(np.arange(21.0))[1]
    (21, 1, array([20.]))
    """

    def __init__(self, loss: Oracle, reg: Regularizer | None = None, lam: float = 1e-4, *,
                 fit_intercept: bool = False):
        if not isinstance(loss, Oracle):
            raise TypeError(f"loss must be an nsopt Oracle, got {type(loss).__name__}")
        reg = L2() if reg is None else reg
        if not isinstance(reg, Regularizer):
            raise TypeError(
                f"reg must be an nsopt Regularizer (see nsopt.regularizers), got {type(reg).__name__}"
            )
        if not isinstance(fit_intercept, (bool, np.bool_)):
            raise TypeError(f"fit_intercept must be True or False, got {fit_intercept!r}")
        self.lam = check_positive(
            lam, "lam", hint="to minimise a bare loss use ProximalBundle on the loss itself"
        )
        if loss.dim is None:
            raise ValueError("the loss must have a fixed dimension (loss.dim)")
        if reg.dim is not None and reg.dim != loss.dim:
            raise ValueError(f"the regularizer has dimension {reg.dim} but the loss {loss.dim}")
        self.base_loss, self.base_reg = loss, reg
        self.fit_intercept = bool(fit_intercept)
        if self.fit_intercept:
            from .losses._intercept import with_intercept

            loss = with_intercept(loss)  # ValueError for losses without a meaningful intercept
            self.n_intercepts = int(loss.n_intercepts)
            reg = InterceptRegularizer(reg, self.base_loss.dim, self.n_intercepts, self)
        else:
            self.n_intercepts = 0
        self.loss, self.reg = loss, reg
        self.dim = loss.dim
        floor = loss.lower_bound + self.lam * reg.lower_bound
        self.lower_bound = floor if math.isfinite(floor) else -math.inf
        self.finite = bool(loss.finite and reg.finite)
        self._intercept_bound = None

    def __repr__(self):
        extra = ", fit_intercept=True" if self.fit_intercept else ""
        return f"RegularizedRisk({self.base_loss!r}, {self.base_reg!r}, lam={self.lam:g}{extra})"

    # --- the intercept --------------------------------------------------------------------
    def split(self, x) -> tuple[np.ndarray, np.ndarray]:
        """``(coef, intercept)`` of ``x`` (views), shapes ``(loss.dim,)`` and
        ``(n_intercepts,)`` (empty without an intercept)."""
        x = check_vector(x, self.dim, "x")
        n = self.base_loss.dim
        return x[:n], x[n:]

    def join(self, coef, intercept=None) -> np.ndarray:
        """``x = (coef, intercept)``, the inverse of :meth:`split` (``intercept`` may be a
        scalar for one intercept, or None for zeros)."""
        coef = check_vector(coef, self.base_loss.dim, "coef")
        k = self.n_intercepts
        if intercept is None:
            intercept = np.zeros(k)
        intercept = np.atleast_1d(np.asarray(intercept, dtype=np.float64))
        if intercept.ndim != 1 or intercept.size != k:
            raise ValueError(f"intercept must have {k} entries (J.n_intercepts), got shape "
                             f"{intercept.shape}")
        return np.concatenate((coef, intercept))

    def intercept_bound(self) -> float:
        r"""B with :math:`\|b^*\|_\infty \le B` for some optimal intercept (``inf`` if none is
        known; 0 without an intercept). Computed once, O(nnz + m log).

        Derivation. Let :math:`V_0 = J(0)` and :math:`\ell` = ``loss.lower_bound``. At an
        optimum :math:`\lambda\Omega(w^*) \le J^* - \ell \le V_0 - \ell`, which bounds a norm
        of :math:`w^*` (L2: :math:`\|w^*\|_2 \le \sqrt{2(V_0-\ell)/\lambda}`; L1:
        :math:`\|w^*\|_1 \le (V_0-\ell)/\lambda`; elastic net with :math:`r > 0`: the L1 part),
        hence every score by Hoelder: :math:`|\langle x_i, w^*\rangle| \le S = \max_i
        \|x_i\|_* \|w^*\|` (for a vector loss, every column of :math:`W^*` is bounded by the
        norm of :math:`W^*`).

        * Scalar losses: :math:`R(w^*, b) \ge \rho(b) = \sum_i c_i \min_{|u - b| \le S}
          l(u, y_i)`, convex in b, and :math:`\rho(b^*) \le J^* \le V_0`. For the binary
          margin losses (:math:`l` nonincreasing in :math:`yu`) the inner minimum is at
          :math:`u = b + S y_i`; for the regression losses whose :math:`l(\cdot, y)` is
          minimal at :math:`u = y` (least squares, absolute deviation, Huber, quantile,
          epsilon-insensitive) at :math:`u = \mathrm{clip}(y_i, b - S, b + S)`. Every optimal
          intercept lies in the level set :math:`\{\rho \le V_0\}`, an interval found by
          doubling and bisection on :math:`\rho` (with a margin for rounding); B is the larger
          magnitude of its ends.
        * :class:`~nsopt.losses.MulticlassHinge` and :class:`~nsopt.losses.Softmax` with every
          class present: the loss depends on b only through differences, so some optimum has
          :math:`\max_j b_j = 0`; each example's loss is at least :math:`F_{ij} + b_j -
          F_{iy_i} - b_{y_i}` for every class j (a max, or a log-sum-exp, is at least each
          term; the margins are nonnegative), so :math:`c_y (b_j - b_y - 2S) \le V_0` for every
          class pair and :math:`b_y \ge -(2S + V_0/c_y)`: :math:`B = 2S + V_0 / \min_y c_y`
          (:math:`c_y` the weight of class y).
        * Other losses (Poisson, multilabel, scaled multiclass hinge, a class without examples,
          regularizers without a norm bound): ``inf``.
        """
        if not self.fit_intercept:
            return 0.0
        if self._intercept_bound is None:
            self._intercept_bound = _intercept_bound(self)
        return self._intercept_bound

    # --- oracle ---------------------------------------------------------------------------
    def _value(self, w):
        return self.lam * self.reg._value(w) + self.loss._value(w)
    def scores(self, w) -> np.ndarray | None:
        r"""The loss's scores at ``w`` (:math:`f = Xw`, or :math:`Xw + b` with an intercept;
        half a data pass; an m x k array :math:`XW` for a vector loss), or None when the loss
        is not evaluated from scores (a user oracle, a multivariate or structured loss, a loss
        that overrides its evaluation).

        Scores are linear in ``w``: a solver that keeps those of two points has those of any
        combination of them without a pass, and passes them to :meth:`_evaluate` (one pass,
        :math:`X^T g`, instead of two) and :meth:`restrict_scores` (no pass)."""
        if not getattr(self.loss, "scores_supported", False):
            return None
        return self.loss.scores(check_vector(w, self.dim, "w"))

    def restrict_scores(self, w, p, f: np.ndarray, q: np.ndarray):
        r""":meth:`restrict` given the scores ``f`` of ``w`` and ``q`` of ``p`` (both from
        :meth:`scores`, or linear combinations of such): the loss's line touches no data,
        the regularizer's costs O(d). ``f`` and ``q`` are kept, not copied."""
        w = check_vector(w, self.dim, "w")
        p = check_vector(p, self.dim, "p")
        return self.loss.restrict_scores(f, q) + self.lam * self.reg._restrict(w, p)

    def _evaluate(self, w, scores=None):
        """One evaluation at ``w`` (an :class:`~nsopt.oracle.Evaluation`); ``scores``: the
        loss's scores at ``w`` when known (:meth:`scores`), which saves the pass ``X w``."""
        with_dual = getattr(self.loss, "_value_subgradient_dual", None)
        if scores is not None and with_dual is not None:
            r, a, t = with_dual(w, scores=scores)
        elif with_dual is not None:  # margin losses: the plane's dual point (certificates)
            r, a, t = with_dual(w)
        else:
            (r, a), t = self.loss._value_and_subgradient(w), None
        omega, s = self.reg._value_and_subgradient(w)
        return Evaluation(w, self.lam * omega + r, None, float(r), a, t, parts=(self.lam, s))

    def _value_and_subgradient(self, w):
        ev = self._evaluate(w)
        return ev.fun, ev.subgradient

    def _evaluate_groups(self, w, n_groups: int):
        """One evaluation with the risk split over ``n_groups`` groups of examples:
        ``(Evaluation, values (P,), subgradients (P, d))`` (for multiple cutting-plane models)."""
        split = getattr(self.loss, "group_value_and_subgradients", None)
        if split is None:
            raise TypeError(f"{type(self.loss).__name__} does not decompose into groups of "
                            "examples (no group_value_and_subgradients)")
        with_dual = getattr(self.loss, "_group_evaluate", None)
        if with_dual is not None:
            values, subgradients, t = with_dual(w, n_groups)
        else:
            (values, subgradients), t = split(w, n_groups), None
        r, a = float(values.sum()), subgradients.sum(axis=0)
        omega, s = self.reg._value_and_subgradient(w)
        return (Evaluation(w, self.lam * omega + r, None, r, a, t, parts=(self.lam, s)), values,
                subgradients)

    def _sup_subgradient(self, w, p):
        s1, g1 = self.loss._sup_subgradient(w, p)
        s2, g2 = self.reg._sup_subgradient(w, p)
        return s1 + self.lam * s2, g1 + self.lam * g2

    def _restrict(self, w, p):
        return self.loss._restrict(w, p) + self.lam * self.reg._restrict(w, p)


def as_problem(problem) -> Oracle:
    """Accept an Oracle as the problem; reject anything else with a message saying what to do."""
    if isinstance(problem, Oracle):
        if problem.dim is None:
            raise ValueError("the problem must have a fixed dimension (problem.dim)")
        return problem
    raise TypeError(
        f"the problem must be an nsopt Oracle (e.g. RegularizedRisk(loss, reg, lam) or "
        f"FunctionOracle(fun, subgradient, dim)), got {type(problem).__name__}"
    )


class InterceptRegularizer(Regularizer):
    r""":math:`\Omega` of a problem with intercepts, on ``x = (w, b)``: the base regularizer on
    the coefficients ``w`` only (``value``, subgradients, lines), and for bounds the conjugate
    of :math:`\Omega(w) + \iota_{\|b\|_\infty \le B}(b)`,

    .. math:: \Omega^*(\mu_w, \mu_b) = \Omega_0^*(\mu_w) + B\|\mu_b\|_1 ,

    with B the problem's :meth:`RegularizedRisk.intercept_bound` (a box that contains an
    optimal intercept, so bounds over it bound :math:`J^*`); with ``B = inf`` the conjugate is
    the exact one, :math:`+\infty` unless :math:`\mu_b = 0`. ``inner`` is ``"intercept-qp"``
    (quadratic base conjugate) or ``"intercept-lp"`` (L1): master problems with the intercept
    rows (:mod:`nsopt.inner.intercept`); other base regularizers have none (``inner = None``:
    the BMRM family refuses them, any-oracle solvers still run).

    Not self-conjugate, no ``l1_ratio`` and no strong convexity: closed forms (k-bundle with
    two planes, proximal BMRM, Nesterov's method, OWL-QN, the L1 dual-point certificate)
    do not apply to it.
    """

    def __init__(self, base: Regularizer, n_coef: int, n_intercepts: int, problem=None):
        self.base, self.n_coef, self.n_intercepts = base, int(n_coef), int(n_intercepts)
        self.dim = self.n_coef + self.n_intercepts
        self._problem = problem
        self.lower_bound = base.lower_bound
        self.polyhedral = base.polyhedral
        self.finite = base.finite
        self.inner = {"qp": "intercept-qp", "lp": "intercept-lp"}.get(base.inner)

    @property
    def box(self) -> float:
        """B, the bound on the intercepts' magnitude (the problem's ``intercept_bound()``)."""
        return math.inf if self._problem is None else self._problem.intercept_bound()

    def _params(self):
        return {"base": repr(self.base), "n_intercepts": self.n_intercepts}

    def _value(self, w):
        return self.base._value(w[:self.n_coef])

    def _value_and_subgradient(self, w):
        v, g = self.base._value_and_subgradient(w[:self.n_coef])
        return v, np.concatenate((g, np.zeros(self.n_intercepts)))

    def _sup_subgradient(self, w, p):
        s, g = self.base._sup_subgradient(w[:self.n_coef], p[:self.n_coef])
        return s, np.concatenate((g, np.zeros(self.n_intercepts)))

    def _restrict(self, w, p):
        return self.base._restrict(w[:self.n_coef], p[:self.n_coef])

    def _box_term(self, mu_b) -> float:
        size = float(np.abs(mu_b).sum())
        return 0.0 if size == 0.0 else self.box * size

    def _conjugate(self, mu):
        return float(self.base._conjugate(mu[:self.n_coef])) + self._box_term(mu[self.n_coef:])

    def scaled_conjugate(self, a, lam: float) -> float:
        a = np.asarray(a, dtype=np.float64)
        return (float(self.base.scaled_conjugate(a[:self.n_coef], lam))
                + self._box_term(a[self.n_coef:]))

    def _conjugate_grad(self, mu):
        mu_b = mu[self.n_coef:]
        b = np.zeros(mu_b.size)
        b[mu_b != 0] = np.sign(mu_b[mu_b != 0]) * self.box
        return np.concatenate((self.base.conjugate_grad(mu[:self.n_coef]), b))

    def metric(self, a):
        a = np.asarray(a, dtype=np.float64)
        return np.concatenate((self.base.metric(a[:self.n_coef]), np.zeros(self.n_intercepts)))

    @property
    def gram_metric(self):
        """The metric of the coefficients' Gram matrix (zero on the intercepts): the bundle's
        ``G`` is then that of the coefficient parts; the intercept rows enter the master
        problem apart."""
        return self.metric if self.inner == "intercept-qp" else None


def _coef_radius(reg: Regularizer, level: float):
    """``(p, r)``: ``Omega(w) <= level`` implies ``||w||_p <= r`` (``p`` in {1, 2}), or None."""
    from .regularizers import L1, L2, ElasticNet

    level = max(level, 0.0)
    if isinstance(reg, L2):
        return 2, math.sqrt(2.0 * level)
    if isinstance(reg, L1):
        return 1, level
    if isinstance(reg, ElasticNet) and reg.l1_ratio > 0:
        return 1, level / reg.l1_ratio
    if isinstance(reg, ElasticNet):
        return 2, math.sqrt(2.0 * level / (1.0 - reg.l1_ratio))
    return None


def _max_dual_norm(data, p: int) -> float:
    """``max_i ||x_i||_q`` with ``1/p + 1/q = 1`` (``q = inf`` for ``p = 1``)."""
    X = data.X
    if p == 2:
        return math.sqrt(float(np.max(data.row_norms_sq(), initial=0.0)))
    A = abs(X)
    return float(np.max(A.max(axis=1).toarray() if hasattr(A, "toarray") else A.max(axis=1),
                        initial=0.0))


def _intercept_bound(J: RegularizedRisk) -> float:
    """See :meth:`RegularizedRisk.intercept_bound`."""
    from .losses import scalar as sc
    from .losses.vector import MulticlassHinge, Softmax

    # exact classes: a subclass may change the loss, and with it the argument below
    margin = (sc.Hinge, sc.SquaredHinge, sc.Logistic, sc.Exponential)  # nonincreasing in y u
    regression = (sc.LeastSquares, sc.LeastAbsoluteDeviation, sc.Huber, sc.Quantile,
                  sc.EpsilonInsensitive)                                 # minimal at u = y

    base = J.base_loss
    v0 = float(J.value(np.zeros(J.dim)))
    floor = float(base.lower_bound)
    if not (math.isfinite(v0) and math.isfinite(floor)):
        return math.inf
    slack = 1e-9 * (1.0 + abs(v0))  # rounding in the values computed here
    v0 += slack
    radius = _coef_radius(J.base_reg, (v0 - floor) / J.lam)
    if radius is None:
        return math.inf
    p, r = radius
    S = _max_dual_norm(base.data, p) * r * (1 + 1e-9)
    if type(base) in (MulticlassHinge, Softmax):
        k = base.n_outputs
        cy = np.bincount(base.y, weights=base.c, minlength=k)
        if not np.all(cy > 0):
            return math.inf
        return (2.0 * S + v0 / float(cy.min())) * (1 + 1e-6) + 1e-12
    y, c = getattr(base, "y", None), getattr(base, "c", None)
    if type(base) in margin:
        def rho(b):
            return base._value_kernel(b + S * y, y, c)
    elif type(base) in regression:
        def rho(b):
            return base._value_kernel(np.clip(y, b - S, b + S), y, c)
    else:
        return math.inf
    ends = []
    for sign in (1.0, -1.0):
        lo, hi = 0.0, 1.0
        while rho(sign * hi) <= v0:
            lo, hi = hi, 2.0 * hi
            if hi > 1e300:
                return math.inf
        for _ in range(60):  # rho(sign*lo) <= v0 < rho(sign*hi): bisect to hi - lo small
            mid = 0.5 * (lo + hi)
            if hi - lo <= 1e-9 * hi:
                break
            if rho(sign * mid) <= v0:
                lo = mid
            else:
                hi = mid
        ends.append(hi)
    return max(ends) * (1 + 1e-6) + 1e-12

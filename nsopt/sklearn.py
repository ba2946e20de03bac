r"""scikit-learn estimators over nsopt's losses, regularizers and solvers.

:class:`LinearClassifier`, :class:`LinearRegressor` and :class:`LinearRanker` fit a linear model
by minimising the regularized risk

.. math:: J(w, b) = \lambda\,\Omega(w) + \sum_i c_i\, l(\langle x_i, w\rangle + b,\ y_i),
          \qquad c_i = s_i / \textstyle\sum_j s_j

(the mean loss, weighted by the sample weights :math:`s`; the intercept :math:`b` is not
regularized) with any nsopt solver, and keep the solver's certificate: ``lower_bound_`` is a
proven lower bound on :math:`\min J` and ``gap_ = J(coef_, intercept_) - lower_bound_``.

Strength of the regularization: ``alpha`` (as :class:`~sklearn.linear_model.SGDClassifier`,
mean loss + ``alpha`` times the penalty) is nsopt's ``lam`` itself; ``C`` (as
:class:`~sklearn.svm.LinearSVC`, ``C`` times the summed loss + the penalty) is
``lam = 1 / (C * S)`` with ``S`` the sum of the sample weights (the number of samples without
weights). The penalties are nsopt's: ``"l2"`` is :math:`\tfrac12\|w\|_2^2`, ``"l1"`` is
:math:`\|w\|_1`, ``"elasticnet"`` is :math:`r\|w\|_1 + \tfrac{1-r}{2}\|w\|_2^2` with
``r = l1_ratio`` (exactly scikit-learn's SGD penalties), or any
:class:`nsopt.regularizers.Regularizer` instance. ``docs/sklearn.md`` has the table.

Importing this module needs scikit-learn (``pip install "nsopt[sklearn]"``); ``import nsopt``
does not import it.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils.extmath import safe_sparse_dot
    from sklearn.utils.metaestimators import available_if
    from sklearn.utils.multiclass import check_classification_targets, type_of_target
    from sklearn.utils.validation import (_check_sample_weight, check_is_fitted,
                                          validate_data)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "nsopt.sklearn needs scikit-learn >= 1.6, which is not installed (or too old): "
        'pip install "nsopt[sklearn]"'
    ) from exc

import joblib

from . import losses as _losses
from . import regularizers as _regs
from .minimize import STABLE_INTERCEPTS_METHOD, minimize
from .problem import RegularizedRisk
from .solvers import SOLVERS, methods_supporting

__all__ = ["LinearClassifier", "LinearRegressor", "LinearRanker"]


# ----------------------------------------------------------------------------------------
# shared parts
# ----------------------------------------------------------------------------------------
def _regularizer(penalty, l1_ratio):
    """The nsopt regularizer named by ``penalty`` (or ``penalty`` itself, an instance)."""
    if isinstance(penalty, _regs.Regularizer):
        return penalty
    if penalty == "l2":
        return _regs.L2()
    if penalty == "l1":
        return _regs.L1()
    if penalty == "elasticnet":
        return _regs.ElasticNet(l1_ratio)
    raise ValueError(
        f"penalty must be 'l2', 'l1', 'elasticnet' or an nsopt.regularizers.Regularizer "
        f"instance (e.g. nsopt.regularizers.Lp(1.5)), got {penalty!r}")


def _check_real(value, name, low=None, low_open=True, high=None, high_open=False):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    v = float(value)
    ok = math.isfinite(v)
    if ok and low is not None:
        ok = v > low if low_open else v >= low
    if ok and high is not None:
        ok = v < high if high_open else v <= high
    if not ok:
        lo = "" if low is None else ("(" if low_open else "[") + f"{low:g}, "
        hi = "inf)" if high is None else f"{high:g}" + (")" if high_open else "]")
        raise ValueError(f"{name} must be in {lo}{hi}, got {value!r}")
    return v


def _check_int(value, name, low):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


class _LinearModel(BaseEstimator):
    """What the three estimators share: the strength, the penalty, the solve, the warm start."""

    #: the loss -> default method table of each estimator (see _default_method)
    _smooth_losses: tuple = ()
    #: name of the strength parameter that is primary (the other, when not None, is used)
    _primary = "alpha"

    # --- strength -----------------------------------------------------------------------
    def _lam(self, total_weight: float) -> float:
        r"""nsopt's ``lam`` from ``alpha`` or ``C``: ``lam = alpha``, or ``1 / (C * S)`` with
        ``S`` the total sample weight (the number of terms the loss averages)."""
        secondary = "C" if self._primary == "alpha" else "alpha"
        use = secondary if getattr(self, secondary) is not None else self._primary
        value = getattr(self, use)
        if value is None:
            raise ValueError("alpha and C are both None: give one of them (alpha = lam, "
                             "C = 1 / (lam * n_samples))")
        v = _check_real(value, use, low=0.0)
        return v if use == "alpha" else 1.0 / (v * total_weight)

    def _method(self, J) -> str:
        """The named method, or the default: ``"newton-cg"`` for the L2 penalty with a binary
        logistic or squared hinge loss (truncated Newton; also when warm-starting, from the
        previous solution), ``"sublbfgs"`` for another smooth loss with the L2 penalty (not
        when warm-starting: it keeps no planes), ``"newton-cd"`` for the L1 penalty with a loss
        it takes (logistic, squared hinge; not when warm-starting), ``"proximal-bundle"`` with
        one intercept per class (:data:`nsopt.minimize.STABLE_INTERCEPTS_METHOD`), else
        ``"ls-bmrm"``; when the
        problem does not suit it (e.g. an intercept without a proven bound), the first of
        ``ls-bmrm, sublbfgs, proximal-bundle`` that nsopt says can solve it."""
        if self.method is None:
            smooth = self._loss_name() in self._smooth_losses
            quasi_newton = smooth and self.penalty == "l2" and not self.warm_start
            first = "sublbfgs" if quasi_newton else "ls-bmrm"
            if getattr(J, "n_intercepts", 0) > 1 and not quasi_newton:
                first = STABLE_INTERCEPTS_METHOD  # one bias per class: see its note
            able = methods_supporting(J)
            if self.penalty == "l1" and not self.warm_start and "newton-cd" in able:
                return "newton-cd"  # L1 with a smooth binary margin loss: newGLMNET
            if self.penalty == "l2" and "newton-cg" in able:
                return "newton-cg"  # L2 with a smooth binary margin loss: truncated Newton
            for name in (first, "ls-bmrm", "sublbfgs", "proximal-bundle"):
                if name in able:
                    return name
            return first  # nsopt's refusal will say why
        if not isinstance(self.method, str) or self.method.lower() not in SOLVERS:
            raise ValueError(f"method must be None or one of {sorted(SOLVERS)}, got {self.method!r}")
        return self.method.lower()

    def _loss_name(self) -> str:
        return str(self.loss).replace("-", "_")

    def _check_common(self):
        _check_real(self.tol, "tol", low=0.0, low_open=False)
        _check_int(self.max_iter, "max_iter", 1)
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise TypeError(f"solver_options must be None or a dict of the method's options, "
                            f"got {type(self.solver_options).__name__}")

    # --- solve --------------------------------------------------------------------------
    def _risk(self, loss, lam, fit_intercept) -> RegularizedRisk:
        reg = _regularizer(self.penalty, self.l1_ratio)
        return RegularizedRisk(loss, reg, lam, fit_intercept=bool(fit_intercept))

    def _solve(self, J, fingerprint):
        method = self._method(J)
        options = dict(self.solver_options or {})
        x0 = None
        state = getattr(self, "_warm_state", None)
        if self.warm_start and state is not None and state["x"].shape == (J.dim,):
            x0 = state["x"]
            same_loss = state["fingerprint"] == fingerprint
            # with one intercept too: the planes of the loss on (coef, intercept) are valid at
            # any strength. Several intercepts (multiclass) still have the interior-point
            # master, which can keep every evidence-free warm plane in its support so that no
            # bound is proven (the stall of nsopt's icpt branch): the solution alone then
            if (same_loss and state["planes"] is not None and "planes" in SOLVERS[method].options
                    and "planes" not in options and J.n_intercepts <= 1):
                options["planes"] = state["planes"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = minimize(J, method=method, x0=x0, rtol=self.tol, max_iter=self.max_iter,
                           **options)
        if not res.success:
            warnings.warn(
                f"{type(self).__name__} did not reach tol={self.tol:g} (certified relative gap "
                f"{res.relative_gap:.3g}, status {res.status.value}, {res.nit} iterations of "
                f"{method!r}); increase max_iter or tol, or change method", ConvergenceWarning)
        self._warm_state = {"x": np.array(res.x), "planes": res.info.get("planes"),
                            "fingerprint": fingerprint}
        coef, intercept = J.split(res.x)
        self.result_ = res
        self.n_iter_ = int(max(res.nit, 1))
        self.lower_bound_ = float(res.lower_bound)
        self.gap_ = float(res.gap)
        self.certificate_ = res.certificate
        self.lam_ = J.lam
        return np.asarray(coef, dtype=np.float64), np.asarray(intercept, dtype=np.float64)

    def _fingerprint(self, X, *arrays):
        """What the warm start's planes depend on: the loss and the data (planes of another
        loss are not under-estimators of this one, so they are reused only on the same data)."""
        loss_params = {k: v for k, v in self.get_params().items()
                       if k not in ("alpha", "C", "penalty", "l1_ratio", "method", "tol",
                                    "max_iter", "warm_start", "solver_options")}
        return joblib.hash((type(self).__name__, loss_params, X, arrays))

    def _scores(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False,
                          dtype=[np.float64, np.float32])
        return safe_sparse_dot(X, self.coef_.T, dense_output=True) + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _fit_data(est, X, y, sample_weight, y_numeric):
    X, y = validate_data(est, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=y_numeric,
                         multi_output=False)
    sw = None
    if sample_weight is not None:
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    return X, y, sw


def _canonical(X, y, sw):
    r"""The weighted sample as one canonical list of distinct examples.

    The risk depends on the data only through the weighted empirical distribution
    :math:`\sum_i c_i \delta_{(x_i, y_i)}`; this drops the examples of weight 0, merges equal
    examples (their weights add) and sorts them by content. So reordering the rows, repeating
    an example or giving it an integer weight, or adding examples of weight 0 gives the solver
    the very same problem, bit for bit, and the same model: the fitted model is a function of
    the weighted sample, not of how it was written down. Returns ``(X, y, weights)`` (the
    weights None when every example is distinct and unweighted).
    """
    m = X.shape[0]
    w = np.ones(m) if sw is None else np.asarray(sw, dtype=np.float64)
    yb = np.ascontiguousarray(y)
    if sp.issparse(X):
        X = X.tocsr()
        X.sum_duplicates()
        X.eliminate_zeros()
        ind, dat, ptr = X.indices, X.data, X.indptr
        keys = [ind[ptr[i]:ptr[i + 1]].tobytes() + b"|" + dat[ptr[i]:ptr[i + 1]].tobytes()
                + b"|" + yb[i:i + 1].tobytes() for i in range(m)]
    else:
        X = np.ascontiguousarray(X)
        keys = [X[i].tobytes() + yb[i:i + 1].tobytes() for i in range(m)]
    keep = [i for i in range(m) if w[i] > 0]
    keep.sort(key=keys.__getitem__)
    first, weights = [], []
    for i in keep:
        if first and keys[i] == keys[first[-1]]:
            weights[-1] += w[i]
        else:
            first.append(i)
            weights.append(w[i])
    rows = np.asarray(first, dtype=np.intp)
    weights = np.asarray(weights)
    if sw is None and rows.size == m:
        weights = None
    return X[rows], y[rows], weights


# ----------------------------------------------------------------------------------------
# classification
# ----------------------------------------------------------------------------------------
_BINARY_LOSSES = {"hinge": _losses.Hinge, "squared_hinge": _losses.SquaredHinge,
                  "logistic": _losses.Logistic, "log_loss": _losses.Logistic}
_MULTICLASS_LOSSES = {"multiclass_hinge": _losses.MulticlassHinge, "softmax": _losses.Softmax}


class LinearClassifier(ClassifierMixin, _LinearModel):
    r"""Linear classifier minimising a regularized classification loss with an nsopt solver.

    .. math:: \min_{w, b}\ \lambda\,\Omega(w) + \sum_i c_i\, l(\langle x_i, w\rangle + b, y_i),
              \qquad c_i = s_i / \textstyle\sum_j s_j,
              \qquad \lambda = \frac{1}{C\,\sum_j s_j}\ \text{or}\ \lambda = \alpha,

    which is :class:`~sklearn.svm.LinearSVC`'s / :class:`~sklearn.linear_model.LogisticRegression`'s
    :math:`\tfrac12\|w\|^2 + C \sum_i s_i\, l_i` divided by :math:`C\sum_j s_j` (same minimiser),
    with a certificate: ``lower_bound_ <= min J <= J(coef_, intercept_)``.

    Parameters
    ----------
    loss : {"hinge", "squared_hinge", "logistic", "multiclass_hinge", "softmax"}, default "hinge"
        ``"hinge"`` (:class:`~nsopt.losses.Hinge`, :math:`\max(0, 1 - yf)`), ``"squared_hinge"``
        (:math:`\tfrac12\max(0, 1 - yf)^2`, note the :math:`\tfrac12`), ``"logistic"`` (alias
        ``"log_loss"``) are binary: the labels are encoded as -1 (``classes_[0]``) and +1
        (``classes_[1]``); with more than two classes they raise ``ValueError`` (use a
        multiclass loss, or :class:`sklearn.multiclass.OneVsRestClassifier`).
        ``"multiclass_hinge"`` (Crammer-Singer, :class:`~nsopt.losses.MulticlassHinge`) and
        ``"softmax"`` (multinomial logistic, :class:`~nsopt.losses.Softmax`) take any number of
        classes (two included).
    penalty : {"l2", "l1", "elasticnet"} or nsopt Regularizer, default "l2"
        :math:`\Omega`: ``"l2"`` is :math:`\tfrac12\|w\|^2`, ``"l1"`` :math:`\|w\|_1`,
        ``"elasticnet"`` :math:`r\|w\|_1 + \tfrac{1-r}{2}\|w\|^2` (``r = l1_ratio``).
    C : float > 0, default 1.0
        Inverse strength, as LinearSVC: :math:`\lambda = 1 / (C \sum_j s_j)`
        (:math:`1/(C m)` without sample weights). Used unless ``alpha`` is given.
    alpha : float > 0 or None, default None
        Strength as SGDClassifier (mean loss + ``alpha`` times the penalty): :math:`\lambda =`
        ``alpha``. When not None it is used instead of ``C``.
    l1_ratio : float in [0, 1), default 0.15
        The L1 share of ``"elasticnet"``.
    fit_intercept : bool, default True
        Fit an unregularized intercept (one per class for the multiclass losses).
    method : str or None, default None
        Any nsopt solver (``nsopt.solvers.SOLVERS``). None: ``"newton-cg"`` for the binary
        squared hinge and logistic losses with ``penalty="l2"``, ``"sublbfgs"`` for the other
        smooth losses (softmax) with it, else ``"ls-bmrm"``
        (BMRM with exact line search, which also takes every penalty), and
        ``"ls-bmrm"`` with ``warm_start=True`` (its cutting planes are reused) except where
        ``"newton-cg"`` applies (it starts from the previous solution: Newton converges
        quadratically from a nearby start).
    tol : float >= 0, default 1e-4
        Stop when the certified gap is at most ``tol`` times the objective (nsopt's ``rtol``).
    max_iter : int >= 1, default 1000
        Iteration limit of the solver; reaching it warns (``ConvergenceWarning``).
    warm_start : bool, default False
        Start from the previous fit's solution and, on the same data and loss with a
        cutting-plane method, from its cutting planes (valid under-estimators of the loss at
        any ``alpha`` / ``C``, so a sweep over the strength reuses them).
    solver_options : dict or None
        More options of the method (e.g. ``{"memory": 20}`` for ``"sublbfgs"``).

    Attributes
    ----------
    classes_ : ndarray (k,)
    coef_ : ndarray (1, d) for two classes, (k, d) otherwise
    intercept_ : ndarray (1,) or (k,)
    n_features_in_ : int
    n_iter_ : int
    lower_bound_, gap_ : float
        The certificate's proven lower bound on :math:`\min J` and the gap to the objective at
        the returned model (for the multiclass losses with two classes, of the two-score model).
    certificate_ : nsopt.Certificate
    result_ : nsopt.Result
        The whole solver result (history, status, ...).
    lam_ : float
        The :math:`\lambda` used.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt.sklearn import LinearClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); y = np.where(X[:, 0] > 0, "yes", "no")
    >>> clf = LinearClassifier(C=10.0, fit_intercept=False).fit(X, y)
    >>> clf.score(X, y) > 0.95, bool(clf.gap_ <= 1e-4 * clf.result_.fun)
    (True, True)
    """

    _primary = "C"
    _smooth_losses = ("squared_hinge", "logistic", "log_loss", "softmax")

    def __init__(self, loss="hinge", *, penalty="l2", C=1.0, alpha=None, l1_ratio=0.15,
                 fit_intercept=True, method=None, tol=1e-4, max_iter=1000, warm_start=False,
                 solver_options=None):
        self.loss = loss
        self.penalty = penalty
        self.C = C
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.method = method
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.solver_options = solver_options

    def _multiclass_loss(self) -> bool:
        name = self._loss_name()
        if name in _MULTICLASS_LOSSES:
            return True
        if name in _BINARY_LOSSES:
            return False
        raise ValueError(f"loss must be one of {sorted(_BINARY_LOSSES) + sorted(_MULTICLASS_LOSSES)}"
                         f", got {self.loss!r}")

    def fit(self, X, y, sample_weight=None):
        """Fit the model; ``sample_weight`` weighs the examples (the risk is their weighted
        mean, so integer weights equal repeated examples)."""
        J, fingerprint, (multiclass, k, loss) = self._prepare(X, y, sample_weight)
        coef, intercept = self._solve(J, fingerprint)
        if multiclass:
            W = coef.reshape(loss.shape)          # d x k
            b = intercept if intercept.size else np.zeros(k)
            if k == 2:                            # scikit-learn's binary convention
                self.coef_ = (W[:, 1] - W[:, 0])[None, :]
                self.intercept_ = np.array([b[1] - b[0]])
            else:
                self.coef_ = np.ascontiguousarray(W.T)
                self.intercept_ = np.asarray(b, dtype=np.float64)
        else:
            self.coef_ = coef[None, :]
            self.intercept_ = intercept if intercept.size else np.zeros(1)
        return self

    def problem(self, X, y, sample_weight=None) -> RegularizedRisk:
        """The :class:`~nsopt.RegularizedRisk` that :meth:`fit` minimises on this data (the
        examples in their canonical order), e.g. to ``certificate_.check`` it."""
        return self._prepare(X, y, sample_weight)[0]

    def _prepare(self, X, y, sample_weight):
        multiclass = self._multiclass_loss()
        self._check_common()
        X, y, sw = _fit_data(self, X, y, sample_weight, y_numeric=False)
        check_classification_targets(y)
        self.classes_, yk = np.unique(y, return_inverse=True)
        X, yk, sw = _canonical(X, yk.astype(np.int64), sw)
        k = self.classes_.size
        if k < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes in the "
                             f"data, but the data contains only one class: {self.classes_[0]!r}")
        if np.unique(yk).size < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes with "
                             "a positive sample_weight, but only one class has any weight")
        if k > 2 and not multiclass:
            raise ValueError(
                f"Only binary classification is supported by loss={self.loss!r}. The type of "
                f"the target is {type_of_target(self.classes_[yk])} ({k} classes): use loss='multiclass_hinge' "
                "or 'softmax', or sklearn.multiclass.OneVsRestClassifier")
        total = float(X.shape[0] if sw is None else sw.sum())
        lam = self._lam(total)
        name = self._loss_name()
        if multiclass:
            loss = _MULTICLASS_LOSSES[name](X, yk, n_classes=k, sample_weight=sw)
            target = yk
        else:
            target = np.where(yk == 1, 1.0, -1.0)
            loss = _BINARY_LOSSES[name](X, target, sample_weight=sw)
        return (self._risk(loss, lam, self.fit_intercept), self._fingerprint(X, target, sw),
                (multiclass, k, loss))

    def decision_function(self, X):
        """Scores: shape (n,) for two classes (positive means ``classes_[1]``), else (n, k)."""
        f = self._scores(X)
        return f.ravel() if f.shape[1] == 1 else f

    def predict(self, X):
        f = self.decision_function(X)
        idx = (f > 0).astype(int) if f.ndim == 1 else f.argmax(axis=1)
        return self.classes_[idx]

    def _has_proba(self):
        return self._loss_name() in ("logistic", "log_loss", "softmax")

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities (logistic and softmax losses only), columns as ``classes_``."""
        f = self.decision_function(X)
        if f.ndim == 1:
            p = 0.5 * (1.0 + np.tanh(0.5 * f))
            return np.column_stack([1.0 - p, p])
        f = f - f.max(axis=1, keepdims=True)
        e = np.exp(f)
        return e / e.sum(axis=1, keepdims=True)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed stably."""
        from scipy.special import log_expit, log_softmax

        f = self.decision_function(X)
        if f.ndim == 1:
            return np.column_stack([log_expit(-f), log_expit(f)])
        return log_softmax(f, axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            tags.classifier_tags.multi_class = self._multiclass_loss()
        except ValueError:
            pass
        return tags


# ----------------------------------------------------------------------------------------
# regression
# ----------------------------------------------------------------------------------------
_REGRESSION_LOSSES = ("squared_error", "absolute_error", "epsilon_insensitive", "quantile",
                      "huber")


class LinearRegressor(RegressorMixin, _LinearModel):
    r"""Linear regression minimising a regularized loss with an nsopt solver.

    .. math:: \min_{w, b}\ \lambda\,\Omega(w) + \sum_i c_i\, l(\langle x_i, w\rangle + b, y_i),
              \qquad c_i = s_i / \textstyle\sum_j s_j,
              \qquad \lambda = \alpha\ \text{or}\ \lambda = \frac{1}{C\,\sum_j s_j},

    as :class:`~sklearn.linear_model.SGDRegressor` (mean loss + ``alpha`` times the penalty),
    with a certificate: ``lower_bound_ <= min J <= J(coef_, intercept_)``.

    Parameters
    ----------
    loss : {"squared_error", "absolute_error", "epsilon_insensitive", "quantile", "huber"}
        With :math:`r = f - y`: ``"squared_error"`` :math:`\tfrac12 r^2`
        (:class:`~nsopt.losses.LeastSquares`), ``"absolute_error"`` :math:`|r|`
        (:class:`~nsopt.losses.LeastAbsoluteDeviation`), ``"epsilon_insensitive"``
        :math:`\max(0, |r| - \epsilon)` (:class:`~nsopt.losses.EpsilonInsensitive`),
        ``"quantile"`` the pinball loss of level ``q = quantile``,
        :math:`\max(q\,(y - f), (1 - q)(f - y))`, whose minimiser estimates the q-quantile,
        as :class:`~sklearn.linear_model.QuantileRegressor` (:class:`~nsopt.losses.Quantile`
        with ``tau = q``), ``"huber"`` quadratic up to :math:`|r| = \epsilon` then linear
        (:class:`~nsopt.losses.Huber` with ``delta = epsilon``). Default ``"squared_error"``.
    penalty, l1_ratio, fit_intercept, method, tol, max_iter, warm_start, solver_options
        As :class:`LinearClassifier` (``method=None`` picks ``"sublbfgs"`` for the smooth
        losses squared_error and huber with ``penalty="l2"``, else ``"ls-bmrm"``).
    alpha : float > 0, default 1e-4
        :math:`\lambda` (SGDRegressor's ``alpha``). Used unless ``C`` is given.
    C : float > 0 or None, default None
        As LinearSVR: :math:`\lambda = 1 / (C\sum_j s_j)`. When not None it is used instead of
        ``alpha``.
    epsilon : float, default 0.1
        The insensitive band of ``"epsilon_insensitive"`` (>= 0) and the threshold of
        ``"huber"`` (> 0), as SGDRegressor.
    quantile : float in (0, 1), default 0.5
        The level of ``"quantile"`` (0.5: the median, half the absolute error).

    Attributes
    ----------
    coef_ : ndarray (d,)
    intercept_ : float
    n_features_in_, n_iter_, lower_bound_, gap_, certificate_, result_, lam_
        As :class:`LinearClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt.sklearn import LinearRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=200)
    >>> reg = LinearRegressor("absolute_error", alpha=1e-3, fit_intercept=False).fit(X, y)
    >>> np.round(reg.coef_, 1)
    array([ 1. , -2. ,  0.5])
    """

    _primary = "alpha"
    _smooth_losses = ("squared_error", "huber")

    def __init__(self, loss="squared_error", *, penalty="l2", alpha=1e-4, C=None, l1_ratio=0.15,
                 epsilon=0.1, quantile=0.5, fit_intercept=True, method=None, tol=1e-4,
                 max_iter=1000, warm_start=False, solver_options=None):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.C = C
        self.l1_ratio = l1_ratio
        self.epsilon = epsilon
        self.quantile = quantile
        self.fit_intercept = fit_intercept
        self.method = method
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.solver_options = solver_options

    def _make_loss(self, X, y, sw):
        name = self._loss_name()
        if name == "squared_error":
            return _losses.LeastSquares(X, y, sample_weight=sw)
        if name == "absolute_error":
            return _losses.LeastAbsoluteDeviation(X, y, sample_weight=sw)
        if name == "epsilon_insensitive":
            eps = _check_real(self.epsilon, "epsilon", low=0.0, low_open=False)
            return _losses.EpsilonInsensitive(X, y, eps, sample_weight=sw)
        if name == "quantile":
            q = _check_real(self.quantile, "quantile", low=0.0, high=1.0, high_open=True)
            # Quantile's tau is the level (Koenker's and QuantileRegressor's convention)
            return _losses.Quantile(X, y, q, sample_weight=sw)
        if name == "huber":
            return _losses.Huber(X, y, _check_real(self.epsilon, "epsilon", low=0.0),
                                 sample_weight=sw)
        raise ValueError(f"loss must be one of {list(_REGRESSION_LOSSES)}, got {self.loss!r}")

    def fit(self, X, y, sample_weight=None):
        """Fit the model; ``sample_weight`` weighs the examples (weighted mean loss)."""
        coef, intercept = self._solve(*self._prepare(X, y, sample_weight))
        self.coef_ = coef
        self.intercept_ = float(intercept[0]) if intercept.size else 0.0
        return self

    def problem(self, X, y, sample_weight=None) -> RegularizedRisk:
        """The :class:`~nsopt.RegularizedRisk` that :meth:`fit` minimises on this data (the
        examples in their canonical order), e.g. to ``certificate_.check`` it."""
        return self._prepare(X, y, sample_weight)[0]

    def _prepare(self, X, y, sample_weight):
        self._check_common()
        X, y, sw = _fit_data(self, X, y, sample_weight, y_numeric=True)
        X, y, sw = _canonical(X, y, sw)
        loss = self._make_loss(X, y, sw)
        lam = self._lam(float(X.shape[0] if sw is None else sw.sum()))
        return self._risk(loss, lam, self.fit_intercept), self._fingerprint(X, y, sw)

    def predict(self, X):
        return self._scores(X)


# ----------------------------------------------------------------------------------------
# ranking
# ----------------------------------------------------------------------------------------
_RANKING_LOSSES = ("roc_area", "preference_pairs", "ndcg")


def _query_groups(qid, m):
    """Row indices of each query (one query of every row when ``qid`` is None)."""
    if qid is None:
        return [np.arange(m)]
    _, inverse = np.unique(qid, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(inverse[order])) + 1)


def concordance(scores, relevance, qid=None) -> float:
    """The fraction of pairs of different relevance, within a query, that ``scores`` order
    as ``relevance`` does (ties count one half): the ROC area for two levels and no ``qid``.
    ``nan`` when no query has two levels."""
    scores, relevance = np.asarray(scores, dtype=np.float64), np.asarray(relevance)
    good = total = 0.0
    for rows in _query_groups(qid, scores.size):
        s, r = scores[rows], relevance[rows]
        for level in np.unique(r)[1:]:
            lower = np.sort(s[r < level])
            upper = s[r == level]
            below = np.searchsorted(lower, upper, side="left")
            ties = np.searchsorted(lower, upper, side="right") - below
            good += below.sum() + 0.5 * ties.sum()
            total += float(lower.size) * float(upper.size)
    return good / total if total else math.nan


class LinearRanker(_LinearModel):
    r"""Linear scoring function for ranking, fitted by minimising a regularized ranking loss.

    .. math:: \min_w\ \lambda\,\Omega(w) + R(w), \qquad
              \lambda = \alpha\ \text{or}\ \lambda = \frac{1}{C\,n_R},

    :math:`R` the mean of the loss's :math:`n_R` terms (pairs or queries). ``predict``
    returns the scores :math:`\langle x, w\rangle`; higher means more relevant.

    There is no intercept: every ranking loss compares scores, so a constant shift changes
    nothing (``intercept_`` is 0).

    Parameters
    ----------
    loss : {"roc_area", "preference_pairs", "ndcg"}, default "preference_pairs"
        ``"roc_area"``: :class:`~nsopt.losses.ROCArea` for two relevance levels (the larger
        is the positive class), the mean hinge over all pairs of different levels
        (:class:`~nsopt.losses.OrdinalRegression`, which is ROCArea for two levels) for more;
        it ranks the whole set, so ``qid`` is refused. ``"preference_pairs"``:
        :class:`~nsopt.losses.PreferencePairs` over every pair of different relevance within
        a query (all rows one query without ``qid``; the pairs are listed, so a query of
        ``n`` rows costs up to ``n^2/2`` pairs). ``"ndcg"``: :class:`~nsopt.losses.NDCG` per
        query (relevance >= 0).
    penalty, l1_ratio, method, tol, max_iter, warm_start, solver_options
        As :class:`LinearClassifier` (``method=None`` picks ``"ls-bmrm"``).
    alpha : float > 0, default 1e-3
        :math:`\lambda`. Used unless ``C`` is given.
    C : float > 0 or None, default None
        As SVM-rank: :math:`C` times the summed pair (or query) losses, so
        :math:`\lambda = 1/(C n_R)` with :math:`n_R` the number of pairs (roc_area,
        preference_pairs) or of queries kept (ndcg).
    k : int >= 1 or None, default None
        The truncation of NDCG@k (loss and score) for ``"ndcg"``; None: all positions.

    Attributes
    ----------
    coef_ : ndarray (d,)
    intercept_ : float, 0.0
    n_features_in_, n_iter_, lower_bound_, gap_, certificate_, result_, lam_
        As :class:`LinearClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt.sklearn import LinearRanker
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 4)); rel = np.digitize(X @ [2.0, 1.0, 0.0, 0.0], [-1, 1])
    >>> qid = np.repeat(np.arange(6), 20)
    >>> ranker = LinearRanker("ndcg", alpha=1e-2).fit(X, rel, qid=qid)
    >>> ranker.score(X, rel, qid=qid) > 0.9
    True
    """

    _primary = "alpha"

    def __init__(self, loss="preference_pairs", *, penalty="l2", alpha=1e-3, C=None,
                 l1_ratio=0.15, k=None, method=None, tol=1e-4, max_iter=1000,
                 warm_start=False, solver_options=None):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.C = C
        self.l1_ratio = l1_ratio
        self.k = k
        self.method = method
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.solver_options = solver_options

    def _make_loss(self, X, y, qid):
        name = self._loss_name()
        if name not in _RANKING_LOSSES:
            raise ValueError(f"loss must be one of {list(_RANKING_LOSSES)}, got {self.loss!r}")
        levels, level = np.unique(y, return_inverse=True)
        if name == "roc_area":
            if qid is not None:
                raise ValueError("loss='roc_area' ranks the whole set: qid is not used; for a "
                                 "ranking per query use loss='preference_pairs' or 'ndcg'")
            if levels.size < 2:
                raise ValueError("loss='roc_area' needs two relevance levels in y, got one "
                                 f"class only ({levels[0]!r})")
            if levels.size == 2:
                loss = _losses.ROCArea(X, np.where(level == 1, 1.0, -1.0))
                return loss, float(loss.n_pos) * float(loss.n_neg)
            loss = _losses.OrdinalRegression(X, level)
            return loss, loss.n_pairs
        if name == "preference_pairs":
            pairs = []
            for rows in _query_groups(qid, X.shape[0]):
                r = level[rows]
                i, j = np.nonzero(r[:, None] < r[None, :])
                pairs.append(np.column_stack([rows[i], rows[j]]))
            pairs = np.concatenate(pairs)
            if pairs.shape[0] == 0:
                raise ValueError("loss='preference_pairs' found no pair of different relevance "
                                 "within a query: every query has one class (a single "
                                 "relevance level)")
            loss = _losses.PreferencePairs(X, pairs)
            return loss, loss.n_pairs
        if np.any(y < 0):
            raise ValueError("loss='ndcg' needs relevance y >= 0 (the gains are 2**y - 1)")
        if all(np.unique(y[rows]).size < 2 for rows in _query_groups(qid, X.shape[0])):
            raise ValueError("loss='ndcg' needs a query with two relevance levels, but every "
                             "query has one class (a single relevance level) only")
        loss = _losses.NDCG(X, y, np.zeros(X.shape[0]) if qid is None else qid, k=self.k)
        return loss, loss.n_queries

    def fit(self, X, y, qid=None):
        """Fit the scoring function; ``qid`` (array (n,)) groups the rows into queries, as in
        LETOR / svmlight files (rows of a query need not be contiguous)."""
        coef, _ = self._solve(*self._prepare(X, y, qid))
        self.coef_ = coef
        self.intercept_ = 0.0
        return self

    def problem(self, X, y, qid=None) -> RegularizedRisk:
        """The :class:`~nsopt.RegularizedRisk` that :meth:`fit` minimises on this data."""
        return self._prepare(X, y, qid)[0]

    def _prepare(self, X, y, qid):
        self._check_common()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True,
                             multi_output=False)
        if qid is not None:
            qid = np.asarray(qid)
            if qid.shape != (X.shape[0],):
                raise ValueError(f"qid must have shape ({X.shape[0]},) (one query id per row of "
                                 f"X), got {qid.shape}")
        loss, n_terms = self._make_loss(X, y, qid)
        return self._risk(loss, self._lam(n_terms), False), self._fingerprint(X, y, qid)

    def predict(self, X):
        """The scores :math:`\\langle x, w\\rangle` (higher: more relevant)."""
        return self._scores(X)

    def score(self, X, y, qid=None):
        """The ranking metric of :meth:`predict`'s scores: mean NDCG (``k`` positions, all if
        None) over the queries for ``"ndcg"``, else the fraction of correctly ordered pairs
        of different relevance within a query (the ROC area for two levels)."""
        s = self.predict(X)
        y = np.asarray(y)
        if self._loss_name() == "ndcg":
            return _losses.ndcg_at_k(s, y, np.zeros(s.size) if qid is None else np.asarray(qid),
                                     k=self.k)
        return concordance(s, y, qid)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        if self._loss_name() == "ndcg":
            tags.target_tags.positive_only = True
        return tags

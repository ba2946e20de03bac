r"""Losses of one linear score :math:`f = \langle w, x\rangle` per example ([TVSL10]_ Table 5).

Each class gives :math:`l(f, y)`, its derivative and its kink convention; the chain rule,
sup-subgradient and line restriction come from :class:`~nsopt.losses._base.ScalarLoss`.

Kink convention (every loss): at a kink the subdifferential of :math:`l(\cdot, y)` is the
segment between the left and right derivatives. ``subgradient`` returns the default element
named in each class; ``sup_subgradient(w, p)`` takes, for each example, the right derivative
where :math:`\langle x_i, p\rangle > 0` and the left one where it is :math:`< 0`, which attains
:math:`R'(w; p)` ([YVGS10]_ Sec. 3).

References
----------
.. [TVSL10] C. H. Teo et al. Bundle methods for regularized risk minimization. JMLR 2010.
.. [YVGS10] J. Yu, S. V. N. Vishwanathan, S. Günter, N. N. Schraudolph. A quasi-Newton approach
   to nonsmooth convex optimization problems in machine learning. JMLR 2010.
"""
from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.special import xlogy

from .._validation import check_data, check_positive
from . import _kernels as k
from ._base import ScalarLoss

__all__ = [
    "Hinge",
    "SquaredHinge",
    "Logistic",
    "Exponential",
    "Huber",
    "LeastSquares",
    "LeastAbsoluteDeviation",
    "Quantile",
    "EpsilonInsensitive",
    "Poisson",
    "Novelty",
]


class Hinge(ScalarLoss):
    r"""Hinge loss :math:`l(f, y) = \max(0, 1 - y f)`, :math:`y \in \{-1, +1\}`.

    Derivative :math:`-y` where :math:`yf < 1`, :math:`0` where :math:`yf > 1`; at the kink
    :math:`yf = 1` the subdifferential is the segment between them: the default subgradient is
    0, and ``sup_subgradient`` picks the end steepest along the direction.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(128, 10, random_state=0)
    >>> nsopt.losses.Hinge(X, y).value(np.zeros(10))
    1.0
    """

    binary = True

    def saddle_form(self):
        r""":math:`\max(0, 1 - yf) = \max_{s\in[0,1]} s(1 - yf)`: :math:`Z = \mathrm{diag}(y)X`,
        :math:`b = 1`, :math:`Q = \prod_i [0, c_i]` with the example weights :math:`c`
        (:class:`~nsopt.saddle.SaddleForm`, [SZV09]_ Sec. 4)."""
        from ..saddle import SaddleForm

        dm, y, c = self.data, self.y, self.c
        return SaddleForm(
            matvec=lambda w: y * dm.dot(w), rmatvec=lambda a: dm.rdot(y * a),
            offset=np.ones(y.size), project=lambda v: np.clip(v, 0.0, c),
            center=np.zeros(y.size), radius_sq=0.5 * float(c @ c), weights=lambda a: y * a,
        )
    piecewise_linear = True
    kernels = (k.hinge_value, k.hinge_grad)

    def kinks(self):
        return self.y.copy()  # y z = 1  <=>  z = y for y = +-1

    def predict(self, X, w):
        return np.where(self.decision_function(X, w) >= 0, 1.0, -1.0)

    #: :math:`\max(0, 1 - yz) = \max_{t\in[0,1]} t(1 - yz)`, so :math:`l^*(-yt) = -t`
    dual_upper = 1.0

    def conjugate_terms(self, t):
        return -np.asarray(t, dtype=np.float64)


class SquaredHinge(ScalarLoss):
    r"""Squared hinge :math:`l(f, y) = \tfrac12 \max(0, 1 - y f)^2` (differentiable).

    Derivative :math:`-y \max(0, 1 - yf)` (erratum E8: the printed "f - y" holds only for
    :math:`y = \pm 1`). Piecewise quadratic with a breakpoint of the second derivative at
    :math:`yf = 1`, so line searches are exact.
    """

    differentiable = True

    binary = True
    piecewise_quadratic = True
    kernels = (k.squared_hinge_value, k.squared_hinge_grad)

    def kinks(self):
        return self.y.copy()

    predict = Hinge.predict

    #: :math:`\tfrac12\max(0, 1 - yz)^2 = \max_{t \ge 0} t(1 - yz) - t^2/2`
    dual_upper = math.inf

    def conjugate_terms(self, t):
        t = np.asarray(t, dtype=np.float64)
        return 0.5 * t * t - t


class Logistic(ScalarLoss):
    r"""Logistic loss :math:`l(f, y) = \log(1 + e^{-y f})` (smooth).

    Derivative :math:`-y / (1 + e^{y f})` (erratum E20: the printed :math:`-y/(1 + e^{-yf})` is
    wrong); both evaluated without overflow.
    """

    differentiable = True

    binary = True
    kernels = (k.logistic_value, k.logistic_grad)

    predict = Hinge.predict

    def predict_proba(self, X, w):
        """Probability of the positive class, :math:`1 / (1 + e^{-f})`."""
        f = self.decision_function(X, w)
        return 0.5 * (1.0 + np.tanh(0.5 * f))

    #: :math:`\log(1 + e^{-yz}) = \max_{t\in[0,1]} -tyz + H(t)`, :math:`H` the binary entropy
    dual_upper = 1.0

    def conjugate_terms(self, t):
        t = np.asarray(t, dtype=np.float64)
        return xlogy(t, t) + xlogy(1.0 - t, 1.0 - t)

    def dual_curvature(self, t):
        return np.asarray(t) * (1.0 - np.asarray(t))  # l'' = sigma(z)(1 - sigma(z))


def _predict_scores(self, X, w):
    """The score :math:`f = \\langle x, w\\rangle` of each row of ``X`` (the regression estimate)."""
    return self.decision_function(X, w)


def _band_kinks(self):
    """Kinks at ``y - h`` and ``y + h``, ``h`` the loss's parameter (``kernel_params[0]``)."""
    h = getattr(self, self.kernel_params[0])
    return np.stack([self.y - h, self.y + h], axis=1)


def _check_real(value, name: str) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


class Exponential(ScalarLoss):
    r"""Exponential loss :math:`l(f, y) = e^{-y f}`, :math:`y \in \{-1, +1\}` (smooth).

    Derivative :math:`-y\, e^{-y f}`. The loss of AdaBoost ([TVSL10]_ Table 5, after Cowell et
    al. 1999); ``lower_bound`` is 0 (the infimum, not attained).

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of -1 and +1
    sample_weight : array (m,), optional

    Notes
    -----
    Overflow: :math:`e^{-yf}` exceeds the float range when :math:`-yf > 709.78`. The value is
    then ``+inf`` (IEEE overflow, no exception) and the subgradient holds ``inf`` or ``nan``;
    a line search reads ``inf`` as "too far", and solvers stop with status
    ``numerical_error`` and return the best finite iterate. Increase ``lam`` or scale ``X``
    if that happens.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_dense_binary(64, 4, random_state=0)
    >>> nsopt.losses.Exponential(X, y).value(np.zeros(4))
    1.0
    """

    differentiable = True

    binary = True
    kernels = (k.exponential_value, k.exponential_grad)

    predict = Hinge.predict


class Huber(ScalarLoss):
    r"""Huber's robust loss ([TVSL10]_ Table 5, after Müller et al. 1997), with :math:`r = f - y`:

    .. math::
        l(f, y) = \begin{cases} \tfrac12 r^2 & |r| \le \delta \\
                  \delta\,(|r| - \delta/2) & |r| > \delta \end{cases}

    Differentiable, with derivative :math:`\mathrm{clip}(r, -\delta, \delta)`. The second
    derivative jumps at :math:`f = y \pm \delta` (``kinks()``, an ``(m, 2)`` array), so the
    function is piecewise quadratic and ``restrict(w, p).minimize`` is exact.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of real targets
    delta : float > 0, default 1.0
        Where the quadratic turns linear.
    sample_weight : array (m,), optional

    Notes
    -----
    Erratum E7: the Huber row of [TVSL10]_ Table 5 is garbled; with ``delta=1`` this class is
    the intended loss, :math:`\tfrac12 r^2` if :math:`|r| \le 1` else :math:`|r| - \tfrac12`, with
    derivative :math:`r` or :math:`\mathrm{sgn}(r)`. Tested in
    ``tests/test_losses_scalar.py::test_erratum_E7_huber``.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> nsopt.losses.Huber(np.eye(2), [0.5, 3.0]).value(np.zeros(2))  # (0.125 + 2.5) / 2
    1.3125
    """

    differentiable = True


    def __init__(self, X, y, delta=1.0, sample_weight=None):
        self.delta = check_positive(delta, "delta")
        super().__init__(X, y, sample_weight)

    piecewise_quadratic = True
    kernels = (k.huber_value, k.huber_grad)
    kernel_params = ("delta",)

    kinks = _band_kinks

    predict = _predict_scores


class LeastSquares(ScalarLoss):
    r"""Least mean squares :math:`l(f, y) = \tfrac12 (f - y)^2` ([TVSL10]_ Table 5).

    Derivative :math:`f - y`. With L2 regularization this is ridge regression (the posterior
    mean of Gaussian process regression, Williams 1998). Smooth, quadratic: line searches are
    exact.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of real targets
    sample_weight : array (m,), optional

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> nsopt.losses.LeastSquares(np.eye(2), [1.0, 3.0]).value(np.zeros(2))  # (0.5 + 4.5) / 2
    2.5
    """

    differentiable = True

    kernels = (k.least_squares_value, k.least_squares_grad)

    predict = _predict_scores


class LeastAbsoluteDeviation(ScalarLoss):
    r"""Least absolute deviation :math:`l(f, y) = |f - y|` ([TVSL10]_ Table 5).

    Derivative :math:`\mathrm{sgn}(f - y)`. Kink at :math:`f = y`, where the subdifferential is
    :math:`[-1, 1]`: the default subgradient is :math:`\mathrm{sgn}(0) = 0`, and
    ``sup_subgradient`` takes :math:`+1` where the score increases along the direction and
    :math:`-1` where it decreases. Piecewise linear: line searches are exact.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of real targets
    sample_weight : array (m,), optional

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> nsopt.losses.LeastAbsoluteDeviation(np.eye(2), [1.0, -3.0]).value(np.zeros(2))
    2.0
    """

    piecewise_linear = True
    kernels = (k.least_absolute_deviation_value, k.least_absolute_deviation_grad)

    def kinks(self):
        return self.y.copy()

    predict = _predict_scores


class Quantile(ScalarLoss):
    r"""Quantile regression (pinball) loss of level :math:`\tau` (Koenker 2005, [TVSL10]_ Table 5
    with its erratum below):

    .. math:: l(f, y) = \rho_\tau(y - f) = \max\big(\tau (y - f), (1 - \tau)(f - y)\big),
              \qquad \rho_\tau(r) = r\,(\tau - 1[r < 0]), \qquad 0 < \tau < 1.

    The minimiser estimates the :math:`\tau`-quantile of :math:`y` given :math:`x` (an
    intercept-only model fits the empirical :math:`\tau`-quantile of the sample): under-prediction
    costs :math:`\tau` per unit, over-prediction :math:`1 - \tau`, as scikit-learn's
    ``QuantileRegressor(quantile=tau)`` and ``mean_pinball_loss(alpha=tau)``. ``tau = 0.5`` is
    half the absolute deviation.

    Derivative :math:`1 - \tau` where :math:`f > y`, :math:`-\tau` where :math:`f < y`. At the
    kink :math:`f = y` the subdifferential is :math:`[-\tau, 1 - \tau]`: the default
    subgradient is the left end :math:`-\tau`, and ``sup_subgradient`` takes :math:`1 - \tau`
    where the score increases along the direction, :math:`-\tau` where it decreases.

    Erratum ([TVSL10]_ Table 5). The paper prints :math:`\max(\tau(f - y), (1 - \tau)(y - f))`
    with derivative ":math:`\tau` if :math:`f > y`, else :math:`\tau - 1`" and cites Koenker,
    whose pinball loss of level :math:`\tau` weighs under-prediction :math:`y > f` by
    :math:`\tau`: the printed loss is Koenker's of level :math:`1 - \tau`, and its minimiser
    is the :math:`(1 - \tau)`-quantile. nsopt follows Koenker and scikit-learn: the paper's
    ``tau`` is nsopt's ``1 - tau``.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of real targets
    tau : float in (0, 1)
        The quantile level: the fitted model estimates the :math:`\tau`-quantile.
    sample_weight : array (m,), optional

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> nsopt.losses.Quantile(np.eye(2), [1.0, -1.0], tau=0.9).value(np.zeros(2))  # (0.9 + 0.1) / 2
    0.5
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Quantile(np.ones((100, 1)), np.arange(100.0),
    ...                                                 tau=0.9), lam=1e-9)
    >>> bool(89 <= nsopt.minimize(J, method="ls-bmrm", rtol=1e-9).x[0] <= 90)  # the 0.9-quantile
    True
    """

    def __init__(self, X, y, tau, sample_weight=None):
        tau = _check_real(tau, "tau")
        if not 0.0 < tau < 1.0:
            raise ValueError(
                f"tau must be in the open interval (0, 1), got {tau}; "
                "tau = 0.5 is the median (absolute deviation)"
            )
        self.tau = tau
        super().__init__(X, y, sample_weight)

    piecewise_linear = True
    kernels = (k.quantile_value, k.quantile_grad)
    kernel_params = ("tau",)

    def kinks(self):
        return self.y.copy()

    def predict(self, X, w):
        """The estimated :math:`\\tau`-quantile of the target, :math:`f = \\langle x, w\\rangle`."""
        return self.decision_function(X, w)


class EpsilonInsensitive(ScalarLoss):
    r""":math:`\epsilon`-insensitive loss :math:`l(f, y) = \max(0, |f - y| - \epsilon)`
    ([TVSL10]_ Table 5, after Vapnik et al. 1997; support vector regression).

    Derivative :math:`\mathrm{sgn}(f - y)` where :math:`|f - y| > \epsilon`, 0 where
    :math:`|f - y| < \epsilon`. Kinks at :math:`f = y - \epsilon` (subdifferential
    :math:`[-1, 0]`) and :math:`f = y + \epsilon` (:math:`[0, 1]`); with :math:`\epsilon = 0`
    one kink at :math:`f = y` (:math:`[-1, 1]`). The default subgradient at a kink is 0;
    ``sup_subgradient`` takes the right derivative where the score increases along the
    direction, the left one where it decreases. ``kinks()`` is an ``(m, 2)`` array.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of real targets
    epsilon : float >= 0
        Half-width of the insensitive tube.
    sample_weight : array (m,), optional

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> nsopt.losses.EpsilonInsensitive(np.eye(2), [0.5, -3.0], epsilon=1.0).value(np.zeros(2))
    1.0
    """


    def __init__(self, X, y, epsilon, sample_weight=None):
        self.epsilon = check_positive(epsilon, "epsilon", strict=False)
        super().__init__(X, y, sample_weight)

    piecewise_linear = True
    kernels = (k.epsilon_insensitive_value, k.epsilon_insensitive_grad)
    kernel_params = ("epsilon",)

    kinks = _band_kinks

    predict = _predict_scores


class Poisson(ScalarLoss):
    r"""Poisson regression loss :math:`l(f, y) = e^f - y f`, :math:`y \ge 0` ([TVSL10]_ Table 5,
    after Cressie 1993): the negative log-likelihood of a count :math:`y` with mean
    :math:`e^f`, up to the constant :math:`\log y!`.

    Derivative :math:`e^f - y` (smooth). The loss can be negative, so ``lower_bound`` is not 0
    but the exact infimum over all scores, :math:`\sum_i c_i (y_i - y_i \log y_i)` (the term is 0
    for :math:`y_i = 0`), attained at :math:`f_i = \log y_i`, rounded down by the worst-case
    summation error (relative :math:`(m + 4)\epsilon_{mach}`) so that no computed value falls
    below it; it keeps BMRM's master problem bounded under L1.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of nonnegative counts (non-integer rates are accepted)
    sample_weight : array (m,), optional

    Notes
    -----
    Overflow: :math:`e^f` exceeds the float range when :math:`f > 709.78`. The value is then
    ``+inf`` (IEEE overflow, no exception) and the subgradient holds ``inf`` or ``nan``; a
    line search reads ``inf`` as "too far", and solvers stop with status
    ``numerical_error`` and return the best finite iterate.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> loss = nsopt.losses.Poisson(np.eye(2), [0.0, 2.0])
    >>> loss.value(np.zeros(2))
    1.0
    >>> round(float(loss.lower_bound), 6)  # (0 + 2 - 2 log 2) / 2
    0.306853
    """

    differentiable = True

    def __init__(self, X, y, sample_weight=None):
        super().__init__(X, y, sample_weight)
        negative = self.y < 0
        if negative.any():
            vals = np.unique(self.y[negative])[:5]
            raise ValueError(
                f"y must hold nonnegative counts for the Poisson loss; found {vals.tolist()}"
            )
        ylogy = xlogy(self.y, self.y)
        infimum = float(self.c @ (self.y - ylogy))
        # rounded down by the worst-case error of summing m terms, so that a computed value
        # never undercuts it (at f_i = log y_i the terms are exactly the infima)
        slack = (self.m + 4) * np.finfo(float).eps * float(self.c @ (self.y + np.abs(ylogy)))
        self.lower_bound = infimum - slack

    kernels = (k.poisson_value, k.poisson_grad)

    def predict(self, X, w):
        """The predicted mean count :math:`e^f` (``inf`` where it overflows)."""
        with np.errstate(over="ignore"):
            return np.exp(self.decision_function(X, w))


class Novelty(ScalarLoss):
    r"""Novelty detection loss :math:`l(f) = \max(0, \rho - f)` ([TVSL10]_ Table 5, after
    Schölkopf et al. 2001), without labels.

    Derivative :math:`-1` where :math:`f < \rho`, 0 where :math:`f > \rho`. At the kink
    :math:`f = \rho` the subdifferential is :math:`[-1, 0]`: the default subgradient is 0 (the
    paper's "0 if f >= rho, else -1"), and ``sup_subgradient`` takes 0 where the score
    increases along the direction, :math:`-1` where it decreases.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    rho : float, default 1.0
        The margin an example's score should reach; stored as the constant target ``y``.
    sample_weight : array (m,), optional

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> nsopt.losses.Novelty(np.ones((3, 2)), rho=2.0).value(np.array([0.5, 0.5]))
    1.0
    """

    piecewise_linear = True
    kernels = (k.novelty_value, k.novelty_grad)

    def __init__(self, X, rho=1.0, sample_weight=None):
        self.rho = _check_real(rho, "rho")
        X = check_data(X)
        super().__init__(X, np.full(X.shape[0], self.rho), sample_weight)

    def kinks(self):
        return self.y.copy()

    def predict(self, X, w):
        """+1 for a typical example (:math:`f \\ge \\rho`), -1 for a novelty."""
        return np.where(self.decision_function(X, w) >= self.rho, 1.0, -1.0)

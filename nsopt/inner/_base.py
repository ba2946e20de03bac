r"""What every master-problem solver shares: the result type, the base class, the checks.

The master problem of the BMRM family ([TVSL10]_ eq. (10), Thm. 2) is the dual over the simplex

.. math:: \max_{\alpha \in \Delta_n} D(\alpha) = b^T\alpha - \lambda\,\Omega^*(-A^T\alpha/\lambda),
          \qquad w(\alpha) = \nabla\Omega^*(-A^T\alpha/\lambda),

whose gradient is :math:`\nabla_i D(\alpha) = \langle a_i, w(\alpha)\rangle + b_i`, the value of
plane ``i`` at :math:`w(\alpha)`. With :math:`g = \nabla D(\alpha)` the Frank-Wolfe gap
:math:`\max_i g_i - \alpha^T g` equals the duality gap of the master problem,
:math:`\max_i(\langle a_i, w\rangle + b_i) + \lambda\Omega(w) - D(\alpha)` (Fenchel-Young holds with
equality at :math:`w = \nabla\Omega^*(\mu)`), so it is computed without evaluating :math:`\Omega`.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010.
"""
from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from .._validation import check_positive

__all__ = ["InnerSolution", "InnerSolver"]


class InnerSolution(NamedTuple):
    """The answer of a master-problem solver.

    Attributes
    ----------
    alpha : ndarray, shape (n,)
        Multipliers of the planes, exactly on the simplex up to rounding (``alpha >= 0``,
        ``sum(alpha) == 1``).
    dual_value : float
        :math:`D(\\alpha)`: the only value that may be used as a lower bound (weak duality holds
        at every feasible ``alpha``, however inexact the solve).
    w : ndarray, shape (d,)
        The primal point attached to ``alpha`` (the master minimiser when ``gap == 0``).
    gap : float
        The master duality gap :math:`\\max_i(\\langle a_i, w\\rangle + b_i) + \\lambda\\Omega(w) -
        D(\\alpha)`, ``>= 0`` up to rounding.
    n_iter : int
        Iterations of the backend (pair updates, OSQP/HiGHS iterations, gradient steps).
    """

    alpha: np.ndarray
    dual_value: float
    w: np.ndarray
    gap: float
    n_iter: int


class InnerSolver:
    """Base class of the master-problem solvers: one ``solve`` signature for all.

    A subclass sets ``name``, ``families`` (the values of ``reg.inner`` it can handle) and
    implements ``_solve(bundle, reg, lam, warm, tol)``, receiving checked arguments: ``lam > 0``,
    a non-empty bundle, ``warm`` a feasible multiplier vector of length ``bundle.n`` or ``None``,
    and ``tol`` a float or ``None``. Options are keyword-only arguments of ``__init__``, checked
    there; the solver object holds configuration only, so ``solve`` is re-entrant.
    """

    name: str = ""
    families: tuple[str, ...] = ()

    # --- contract -------------------------------------------------------------------------
    def supports(self, reg) -> bool:
        """Whether this backend can solve the master problem of ``reg``."""
        return getattr(reg, "inner", None) in self.families

    def solve(self, bundle, reg, lam, warm=None, tol=None) -> InnerSolution:
        """Solve the master dual over the planes of ``bundle``.

        Parameters
        ----------
        bundle : PlaneBundle
            The cutting planes, with ``bundle.n >= 1``.
        reg : Regularizer
            Must be supported by this backend (``self.supports(reg)``).
        lam : float
            Regularization constant, ``> 0``.
        warm : array_like, optional
            Previous multipliers; a shorter vector is padded with zeros for the planes added
            since. It is clipped at 0 and renormalised. ``None`` starts from one plane.
        tol : float, optional
            Absolute target for the master gap; ``None`` uses about ``1e-12 * (1 + |D|)``.

        Returns
        -------
        InnerSolution
        """
        self.check_regularizer(reg)
        lam = check_positive(lam, "lam", hint="the master problem needs a regularizer weight")
        n = int(getattr(bundle, "n", 0))
        if n == 0:
            raise ValueError(
                "the bundle is empty: add at least one plane before solving the master problem"
            )
        if tol is not None:
            tol = check_positive(tol, "tol", strict=False)
        return self._solve(bundle, reg, lam, warm_start(warm, n), tol)

    def check_regularizer(self, reg) -> None:
        if not self.supports(reg):
            raise ValueError(
                f"{type(self).__name__} cannot solve the master problem of "
                f"{type(reg).__name__} (reg.inner = {getattr(reg, 'inner', None)!r}); it handles "
                f"reg.inner in {self.families}. Use nsopt.inner.select(reg) to pick a backend."
            )

    def _solve(self, bundle, reg, lam, warm, tol) -> InnerSolution:  # pragma: no cover
        raise NotImplementedError(f"{type(self).__name__}._solve is not implemented")

    def __repr__(self):
        opts = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({opts})"


# --- helpers shared by the backends -------------------------------------------------------
def check_int_option(value, name: str, low: int = 1) -> int:
    """An integer option ``>= low`` (bools refused)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def warm_start(warm, n: int) -> np.ndarray | None:
    """A feasible start of length ``n`` from a previous multiplier vector, or ``None``."""
    if warm is None:
        return None
    warm = np.asarray(warm, dtype=np.float64).ravel()
    if warm.size > n:
        raise ValueError(
            f"warm has {warm.size} entries but the bundle has {n} planes; after dropping planes "
            "pass the multipliers of the kept ones (alpha[bundle.drop(mask)])"
        )
    alpha = np.zeros(n)
    alpha[: warm.size] = np.where(np.isfinite(warm), np.maximum(warm, 0.0), 0.0)
    s = alpha.sum()
    if not s > 0:
        return None
    return alpha / s


def plane_values(bundle, w: np.ndarray) -> np.ndarray:
    """``<a_i, w> + b_i`` for every plane: the gradient of the dual at the multipliers of ``w``."""
    return bundle.A @ w + bundle.b


def frank_wolfe_gap(alpha: np.ndarray, grad: np.ndarray) -> float:
    """``max_i grad_i - alpha^T grad``: the master duality gap when ``grad = A w + b``."""
    return float(np.max(grad) - alpha @ grad)


def default_tol(tol, dual_value: float) -> float:
    return 1e-12 * (1.0 + abs(dual_value)) if tol is None else tol

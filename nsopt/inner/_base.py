r"""What every master-problem solver shares: the result type, the base class, the checks.

The master problem of the BMRM family ([TVSL10]_ eq. (10), Thm. 2) is the dual over the simplex

.. math:: \max_{\alpha \in \Delta_n} D(\alpha) = b^T\alpha - \lambda\,\Omega^*(-A^T\alpha/\lambda),
          \qquad w(\alpha) = \nabla\Omega^*(-A^T\alpha/\lambda),

whose gradient is :math:`\nabla_i D(\alpha) = \langle a_i, w(\alpha)\rangle + b_i`, the value of
plane ``i`` at :math:`w(\alpha)`. With :math:`g = \nabla D(\alpha)` the Frank-Wolfe gap
:math:`\max_i g_i - \alpha^T g` equals the duality gap of the master problem,
:math:`\max_i(\langle a_i, w\rangle + b_i) + \lambda\Omega(w) - D(\alpha)` (Fenchel-Young holds with
equality at :math:`w = \nabla\Omega^*(\mu)`), so it is computed without evaluating :math:`\Omega`.

Multiple cutting-plane models ([UF12]_ Sec. 3.3): when ``bundle.n_blocks = P > 1`` the model is
:math:`\sum_p \max_{i \in p} \langle a_i, w\rangle + b_i` (``bundle.block`` gives the model of each
plane) and the same dual is maximised over the product of ``P`` simplices, one per model
(:math:`\alpha \ge 0`, :math:`\sum_{i\in p}\alpha_i = 1` for every ``p``). The gap becomes
:math:`\sum_p \max_{i\in p} g_i - \alpha^T g`, again the master duality gap by the same
Fenchel-Young argument. Every backend handles both; a model without a plane is an error.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010.
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
   CVWW 2012. Sec. 3.3.
"""
from __future__ import annotations

import functools
import math
import numbers
import time
from typing import NamedTuple

import numpy as np

from .._validation import check_positive
from ._simplex import Blocks

__all__ = ["InnerSolution", "InnerSolver", "bundle_blocks", "past"]


class InnerSolution(NamedTuple):
    """The answer of a master-problem solver.

    Attributes
    ----------
    alpha : ndarray, shape (n,)
        Multipliers of the planes, exactly on the simplex up to rounding (``alpha >= 0``,
        ``sum(alpha) == 1``); with several models on the product of simplices (the multipliers
        of each block sum to 1).
    dual_value : float
        :math:`D(\\alpha)`: the only value that may be used as a lower bound (weak duality holds
        at every feasible ``alpha``, however inexact the solve).
    w : ndarray, shape (d,)
        The primal point attached to ``alpha`` (the master minimiser when ``gap == 0``).
    gap : float
        The master duality gap :math:`\\max_i(\\langle a_i, w\\rangle + b_i) + \\lambda\\Omega(w) -
        D(\\alpha)`, ``>= 0`` up to rounding (with several models the max is the sum over the
        models of the max within each).
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
    implements ``_solve(bundle, reg, lam, warm, tol, deadline)``, receiving checked arguments: ``lam > 0``,
    a non-empty bundle whose models (``bundle.n_blocks``, ``bundle.block``; one model when the
    bundle has no ``n_blocks``) all hold a plane, ``warm`` a feasible multiplier vector of length
    ``bundle.n`` or ``None``, and ``tol`` a float or ``None``; :func:`bundle_blocks` gives the
    block structure. Options are keyword-only arguments of ``__init__``, checked
    there; the solver object holds configuration only, so ``solve`` is re-entrant.
    """

    name: str = ""
    families: tuple[str, ...] = ()

    # --- contract -------------------------------------------------------------------------
    def supports(self, reg) -> bool:
        """Whether this backend can solve the master problem of ``reg``."""
        return getattr(reg, "inner", None) in self.families

    def solve(self, bundle, reg, lam, warm=None, tol=None, deadline=None) -> InnerSolution:
        """Solve the master dual over the planes of ``bundle``.

        Parameters
        ----------
        bundle : PlaneBundle
            The cutting planes, with ``bundle.n >= 1`` and, with ``bundle.n_blocks > 1``, at
            least one plane in every model; the dual is then over the product of simplices.
        reg : Regularizer
            Must be supported by this backend (``self.supports(reg)``).
        lam : float
            Regularization constant, ``> 0``.
        warm : array_like, optional
            Previous multipliers; a shorter vector is padded with zeros for the planes added
            since. It is clipped at 0 and renormalised (per model; a model left with no weight
            starts uniform). ``None`` starts from one plane (per model).
        tol : float, optional
            Absolute target for the master gap, ``>= 0``; ``None`` uses about
            ``1e-12 * (1 + |D|)`` (callers pass ``None`` when their outer gap is rounding).
        deadline : float, optional
            A ``time.perf_counter()`` value: past it the backend returns its current (feasible)
            multipliers, whose dual value is still a valid bound. The solver loop passes the
            run's ``max_time`` deadline, so one master solve cannot overrun it.

        Returns
        -------
        InnerSolution
        """
        self.check_regularizer(reg)
        if not (type(lam) is float and 0.0 < lam < math.inf):  # the solvers' case: no re-check
            lam = check_positive(lam, "lam", hint="the master problem needs a regularizer weight")
        n = int(getattr(bundle, "n", 0))
        if n == 0:
            raise ValueError(
                "the bundle is empty: add at least one plane before solving the master problem"
            )
        blocks = bundle_blocks(bundle)
        if tol is not None and not (type(tol) is float and 0.0 <= tol < math.inf):
            tol = check_positive(tol, "tol", strict=False)
        return self._solve(bundle, reg, lam, warm_start(warm, n, blocks), tol, deadline)

    def check_regularizer(self, reg) -> None:
        if not self.supports(reg):
            raise ValueError(
                f"{type(self).__name__} cannot solve the master problem of "
                f"{type(reg).__name__} (reg.inner = {getattr(reg, 'inner', None)!r}); it handles "
                f"reg.inner in {self.families}. Use nsopt.inner.select(reg) to pick a backend."
            )

    def _solve(self, bundle, reg, lam, warm, tol, deadline=None) -> InnerSolution:  # pragma: no cover
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


def bundle_blocks(bundle) -> Blocks:
    """The block structure of ``bundle`` (one block when it has no ``n_blocks``), checked.

    Reads only ``bundle.n``, ``bundle.n_blocks`` and ``bundle.block``, so read-only views that
    forward attributes (e.g. a bundle with shifted offsets) work as the bundle itself.
    """
    n = int(bundle.n)
    n_blocks = int(getattr(bundle, "n_blocks", 1))
    if n_blocks == 1:
        return _single_blocks(n)
    labels = np.asarray(bundle.block, dtype=np.int64)
    if labels.shape != (n,) or (n and (labels.min() < 0 or labels.max() >= n_blocks)):
        raise ValueError(
            f"bundle.block must hold one model index in [0, {n_blocks}) per plane ({n} planes)"
        )
    blocks = Blocks(labels, n_blocks)
    empty = np.flatnonzero(blocks.counts == 0)
    if empty.size:
        raise ValueError(
            f"model(s) {empty.tolist()} of the bundle have no plane: the master problem over "
            f"a product of {n_blocks} simplices needs at least one plane per model; add each "
            "model's floor (bundle.add_fixed(0, floor, block=p)) or a first cut before solving"
        )
    return blocks


@functools.lru_cache(maxsize=256)
def _single_blocks(n: int) -> Blocks:
    """``Blocks.single(n)``, shared: a master solve asks for it twice per call and a run's
    bundle sizes repeat (every method reads a Blocks object, none writes to it)."""
    return Blocks.single(n)


def warm_start(warm, n: int, blocks: Blocks | None = None) -> np.ndarray | None:
    """A feasible start of length ``n`` from a previous multiplier vector, or ``None``.

    With several blocks each block is renormalised; a block left with no weight starts
    uniform, and ``None`` is returned only when no block has weight.
    """
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
    if blocks is not None and blocks.multi:
        sums = blocks.sums(alpha)
        if not np.any(sums > 0):
            return None
        for p in np.flatnonzero(~(sums > 0)):
            alpha[blocks.index[p]] = 1.0
        return blocks.normalize(alpha)
    s = alpha.sum()
    if not s > 0:
        return None
    return alpha / s


def plane_values(bundle, w: np.ndarray) -> np.ndarray:
    """``<a_i, w> + b_i`` for every plane: the gradient of the dual at the multipliers of ``w``."""
    return bundle.matvec(w) + bundle.b


def frank_wolfe_gap(alpha: np.ndarray, grad: np.ndarray, blocks: Blocks | None = None) -> float:
    """``max_i grad_i - alpha^T grad`` (with blocks ``sum_p max_{i in p} grad_i - alpha^T grad``):
    the master duality gap when ``grad = A w + b``."""
    if blocks is not None:
        return blocks.gap(alpha, grad)
    return float(np.max(grad) - alpha @ grad)


def past(deadline) -> bool:
    """Whether the ``time.perf_counter()`` deadline (None: none) has passed."""
    return deadline is not None and time.perf_counter() >= deadline


def default_tol(tol, dual_value: float) -> float:
    return 1e-12 * (1.0 + abs(dual_value)) if tol is None else tol

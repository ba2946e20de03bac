r"""The quadratic master problem through OSQP: the alternative backend to :class:`QPSimplex`.

.. math:: \min_{\alpha}\ \tfrac12\alpha^T (G/\lambda)\alpha - b^T\alpha
          \quad\text{s.t.}\quad 1^T\alpha = 1,\ \alpha \ge 0 .

OSQP (an ADMM method) returns a point that is feasible only to its tolerance, so the answer is
repaired (clipped at 0, renormalised) and the dual value and gap are recomputed exactly from the
repaired multipliers: the reported bound is valid whatever OSQP's status.

With several cutting-plane models (``bundle.n_blocks = P > 1``) the single equality becomes
``P`` rows :math:`E^T\alpha = 1` (:math:`E_{ip} = 1` when plane ``i`` is in model ``p``), and the
repair renormalises each block.

References
----------
.. [SBGBB20] B. Stellato, G. Banjac, P. Goulart, A. Bemporad, S. Boyd. OSQP: an operator
   splitting solver for quadratic programs. Math. Prog. Comp. 12:637-672, 2020.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive
from ._base import InnerSolver, bundle_blocks, check_int_option
from .qp_simplex import finish_quadratic

__all__ = ["OSQPSimplex"]


class OSQPSimplex(InnerSolver):
    r"""Master dual of a quadratic regularizer by OSQP, warm-started from the previous multipliers.

    Parameters
    ----------
    eps : float, default 1e-10
        OSQP's absolute and relative tolerances (``eps_abs = eps_rel``), ``> 0``.
    max_iter : int, default 20000
        OSQP's iteration limit, ``>= 1``.
    polish : bool, default True
        Let OSQP polish the solution on its guessed active set (usually exact to rounding).

    Notes
    -----
    Builds and factors the KKT system at every call (:math:`O(n^3)` for the dense :math:`G`), so
    it is slower than :class:`QPSimplex` on BMRM's small warm-started problems; it is here as an
    independent check and for users who prefer OSQP. ``tol`` is not used (OSQP stops on its own
    residuals); the returned ``gap`` tells how good the answer is. ADMM can stall on degenerate
    bundles (many more planes than dimensions at a small ``lam``, where :math:`G/\lambda` has a
    large spread of eigenvalues and a large null space): the answer is then only approximately
    optimal, but still feasible, its ``dual_value`` still a valid lower bound and its ``gap``
    honest. With ``bundle.n_blocks > 1`` the dual is over the product of simplices (one
    equality row per model). Requires the ``osqp`` package.
    """

    name = "osqp"
    families = ("qp",)

    def __init__(self, *, eps: float = 1e-10, max_iter: int = 20000, polish: bool = True):
        self.eps = check_positive(eps, "eps")
        self.max_iter = check_int_option(max_iter, "max_iter")
        if not isinstance(polish, (bool, np.bool_)):
            raise TypeError(f"polish must be True or False, got {type(polish).__name__}")
        self.polish = bool(polish)

    def _solve(self, bundle, reg, lam, warm, tol, deadline=None):
        import osqp  # a dependency, loaded on first use only
        G = bundle.G
        b = np.asarray(bundle.b, dtype=np.float64)
        n = b.size
        blocks = bundle_blocks(bundle)
        m = blocks.n_blocks
        P = sp.triu(sp.csc_matrix(G / lam), format="csc")
        sums = sp.csc_matrix(np.ones((1, n))) if m == 1 else blocks.indicator().T.tocsc()
        A = sp.vstack([sums, sp.identity(n, format="csc")], format="csc")
        lo = np.concatenate((np.ones(m), np.zeros(n)))
        hi = np.concatenate((np.ones(m), np.full(n, np.inf)))
        solver = osqp.OSQP()
        settings = dict(verbose=False, eps_abs=self.eps, eps_rel=self.eps, max_iter=self.max_iter)
        if deadline is not None:
            settings["time_limit"] = max(deadline - time.perf_counter(), 1e-3)
        polish_key = "polishing" if _osqp_major(osqp) >= 1 else "polish"
        settings[polish_key] = self.polish
        solver.setup(P, -b, A, lo, hi, **settings)
        if warm is not None:
            solver.warm_start(x=warm)
        # raise_error=False (osqp >= 1): a non-converged run still returns its iterate, which
        # is repaired below and certified by its own dual value
        res = solver.solve(raise_error=False) if polish_key == "polishing" else solver.solve()
        x = res.x
        alpha = None
        if x is not None and np.all(np.isfinite(x)):
            alpha = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
            alpha = blocks.normalize(alpha) if np.all(blocks.sums(alpha) > 0) else None
        if alpha is None:  # OSQP failed outright: fall back to the start, still a valid bound
            alpha = warm if warm is not None else blocks.argmax_vertex(b)
        n_iter = int(getattr(res.info, "iter", 0))
        return finish_quadratic(bundle, reg, lam, alpha, n_iter, blocks)


def _osqp_major(osqp) -> int:
    try:
        return int(str(getattr(osqp, "__version__", "0")).split(".")[0])
    except ValueError:  # pragma: no cover
        return 0

r"""Master-problem solvers of the BMRM family: the dual over the simplex.

.. math:: \max_{\alpha\in\Delta_n} D(\alpha) = b^T\alpha - \lambda\Omega^*(-A^T\alpha/\lambda),
          \qquad w = \nabla\Omega^*(-A^T\alpha/\lambda)

With several cutting-plane models (``bundle.n_blocks = P > 1``, one per part :math:`R_p` of
:math:`R = \sum_p R_p`; ``bundle.block`` labels the planes) every backend maximises the same
:math:`D` over the product of ``P`` simplices, one per model ([UF12]_ Sec. 3.3, P-BMRM).

Every backend has the signature ``solve(bundle, reg, lam, warm=None, tol=None) ->
InnerSolution``; :func:`select` picks one from ``reg.inner``. Only ``InnerSolution.dual_value``
may be used as a lower bound, never the primal model value (DESIGN.md Sec. 6).

=================  ==================  =========================================================
backend            ``reg.inner``       method
=================  ==================  =========================================================
:class:`QPSimplex`     ``"qp"``        compiled SMO pair updates on ``G = A M A^T`` (default)
:class:`OSQPSimplex`   ``"qp"``        OSQP, repaired to exact feasibility
:class:`LPSimplex`     ``"lp"``        HiGHS LP of the L1 norm, multipliers repaired to feasibility
:class:`SmoothSimplex` ``"smooth"``    restarted FISTA with projection onto the simplex
:class:`InterceptQP`   ``"intercept-qp"`` one intercept: the QP at fixed b, warm-started, along b; else Clarabel
:class:`InterceptLP`   ``"intercept-lp"`` HiGHS LP with the intercept columns
=================  ==================  =========================================================

References
----------
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
   CVWW 2012. Sec. 3.3.
"""
from __future__ import annotations

from ._base import InnerSolution, InnerSolver
from ._simplex import project_simplex
from .intercept import InterceptLP, InterceptQP
from .lp import LPSimplex
from .osqp import OSQPSimplex
from .qp_simplex import QPSimplex
from .smooth_simplex import SmoothSimplex

__all__ = [
    "InnerSolution",
    "InnerSolver",
    "QPSimplex",
    "OSQPSimplex",
    "LPSimplex",
    "SmoothSimplex",
    "InterceptQP",
    "InterceptLP",
    "select",
    "project_simplex",
]

BACKENDS = {cls.name: cls for cls in (QPSimplex, OSQPSimplex, LPSimplex, SmoothSimplex,
                                      InterceptQP, InterceptLP)}
_AUTO = {"qp": QPSimplex, "lp": LPSimplex, "smooth": SmoothSimplex,
         "intercept-qp": InterceptQP, "intercept-lp": InterceptLP}


def select(reg, option="auto") -> InnerSolver:
    """The master-problem solver for ``reg``.

    Parameters
    ----------
    reg : Regularizer
        Its ``inner`` attribute (``"qp"``, ``"lp"`` or ``"smooth"``) names the family of master
        problem.
    option : str or InnerSolver, default "auto"
        ``"auto"`` picks by ``reg.inner``: ``"qp"`` -> :class:`QPSimplex`, ``"lp"`` ->
        :class:`LPSimplex`, ``"smooth"`` -> :class:`SmoothSimplex`, ``"intercept-qp"`` ->
        :class:`InterceptQP`, ``"intercept-lp"`` -> :class:`InterceptLP`. ``"qp"``, ``"osqp"``,
        ``"lp"`` and ``"smooth"`` force a backend with its default options; an
        :class:`InnerSolver` instance is used as given (to pass options).

    Returns
    -------
    InnerSolver

    Raises
    ------
    ValueError
        If the option is unknown or the backend cannot handle ``reg`` (e.g. ``"qp"`` needs
        ``reg.inner == "qp"``, a quadratic conjugate).
    """
    if isinstance(option, InnerSolver):
        solver = option
    elif option == "auto":
        inner = getattr(reg, "inner", None)
        if inner not in _AUTO:
            raise ValueError(
                f"{type(reg).__name__}.inner is {inner!r}; it must be one of {sorted(_AUTO)} for "
                "nsopt.inner.select to pick a master-problem solver"
            )
        return _AUTO[inner]()
    elif isinstance(option, str) and option in BACKENDS:
        solver = BACKENDS[option]()
    else:
        raise ValueError(
            f"unknown inner solver {option!r}; choose 'auto', one of {sorted(BACKENDS)}, or pass "
            "an InnerSolver instance"
        )
    solver.check_regularizer(reg)
    return solver

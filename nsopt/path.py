r"""Regularization paths that reuse solutions and cutting planes.

Along a decreasing sequence of :math:`\lambda` the previous solution is a good start
([UF12]_ Sec. 3.2, "REUSE"). nsopt also carries the cutting planes over: a plane of the loss
:math:`R` does not depend on :math:`\lambda`, so every plane from the previous run stays a
valid under-estimator and the first master problem at the next :math:`\lambda` already has a
good model.

References
----------
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization. CVWW 2012.
"""
from __future__ import annotations

from .minimize import minimize
from .problem import RegularizedRisk
from .solvers import SOLVERS

__all__ = ["path"]


def path(problem: RegularizedRisk, lams, method: str = "bmrm", x0=None, *,
         reuse_planes: bool = True, **options) -> list:
    r"""Solve :math:`\min_w \lambda\Omega(w) + R(w)` for every ``lam`` in ``lams``, largest first.

    Each solve starts from the previous solution and, for the cutting-plane methods (``bmrm``,
    ``ls-bmrm``, ``kbundle``, ``proximal-bundle``), from its planes. Returns the results in
    the order solved (decreasing ``lam``); ``result.info["lam"]`` records each one's ``lam``.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(400, 20, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    >>> results = nsopt.path(J, [1e-2, 1e-3, 1e-4], rtol=1e-4)
    >>> [r.success for r in results]
    [True, True, True]
    """
    if not isinstance(problem, RegularizedRisk):
        raise TypeError("path needs a RegularizedRisk (its loss and regularizer are reused)")
    lams = sorted((float(v) for v in lams), reverse=True)
    if method not in SOLVERS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(SOLVERS)}")
    uses_planes = reuse_planes and "planes" in SOLVERS[method].options
    results, x, planes = [], x0, None
    for lam in lams:
        J = RegularizedRisk(problem.loss, problem.reg, lam)
        opts = dict(options)
        if uses_planes and planes is not None:
            opts["planes"] = planes
        res = minimize(J, method=method, x0=x, **opts)
        res.info["lam"] = lam
        results.append(res)
        x = res.x
        planes = res.info.get("planes")
    return results

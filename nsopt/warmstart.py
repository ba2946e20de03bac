r"""Warm starts: a few passes of SGD, and regularization paths that reuse solutions and planes.

Both come from Uřičář & Franc ([UF12]_ Sec. 3.2): a good starting point helps only solvers
with a prox term (BMRM's next iterate ignores where it started), and along a decreasing
sequence of :math:`\lambda` the previous solution is a good start ("REUSE"). nsopt also carries
the cutting planes over: a plane of the loss :math:`R` does not depend on :math:`\lambda`, so
every plane from the previous run stays a valid under-estimator and the first master problem
at the next :math:`\lambda` already has a good model.

References
----------
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization. CVWW 2012.
"""
from __future__ import annotations

import math

import numpy as np

from .problem import RegularizedRisk
from .regularizers import L2

__all__ = ["path", "sgd_start"]


def sgd_start(problem: RegularizedRisk, passes: int = 10, batch_size: int = 64,
              random_state=0) -> np.ndarray:
    r"""The best of ``passes`` epochs of mini-batch stochastic subgradient descent.

    Pegasos steps :math:`\eta_t = 1/(\lambda (t + t_0))` on :math:`J(w) = \tfrac\lambda2\|w\|^2
    + R(w)`, with the projection onto the ball :math:`\|w\| \le \sqrt{2 J(0)/\lambda}`, which
    holds the minimiser (Shalev-Shwartz et al. 2007). :math:`J` is evaluated after every pass
    and the best point is returned ([UF12]_ Sec. 3.2: "the iterate with the minimal F").

    Needs a loss with ``batch_subgradient(w, rows)`` (the scalar losses) and L2.
    """
    inner = getattr(problem, "oracle", problem)  # a solver passes its counting wrapper
    if not isinstance(inner, RegularizedRisk) or type(problem.reg) is not L2:
        raise TypeError("sgd_start needs RegularizedRisk(loss, L2(), lam)")
    loss = problem.loss
    if not hasattr(loss, "batch_subgradient"):
        raise TypeError(f"{type(loss).__name__} has no batch_subgradient(w, rows): SGD needs "
                        "per-example subgradients (the scalar losses have them)")
    lam, m, d = problem.lam, loss.m, problem.dim
    rng = np.random.default_rng(random_state)
    w = np.zeros(d)
    best_w, best_f = w.copy(), problem.value(w)
    radius = math.sqrt(2.0 * best_f / lam)
    t0 = max(1.0, 1.0 / lam / max(1.0, radius))  # damp the first, huge steps
    t = 0
    for _ in range(passes):
        order = rng.permutation(m)
        for start in range(0, m, batch_size):
            rows = order[start:start + batch_size]
            g = lam * w + loss.batch_subgradient(w, rows)
            t += 1
            w = w - g / (lam * (t + t0))
            norm = float(np.linalg.norm(w))
            if norm > radius:
                w *= radius / norm
        f = problem.value(w)
        if f < best_f:
            best_w, best_f = w.copy(), f
    return best_w


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
    from .minimize import minimize
    from .solvers import SOLVERS

    if not isinstance(problem, RegularizedRisk):
        raise TypeError("path needs a RegularizedRisk (its loss and regularizer are reused)")
    lams = sorted((float(v) for v in lams), reverse=True)
    if method not in SOLVERS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(SOLVERS)}")
    uses_planes = reuse_planes and "planes" in SOLVERS[method](**options).config
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

r"""Starting points: the regularizer's minimiser (the default) and a few passes of SGD.

The SGD start comes from Uřičář & Franc ([UF12]_ Sec. 3.2): a good starting point helps only
solvers with a prox term (BMRM's next iterate ignores where it started).

References
----------
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization. CVWW 2012.
"""
from __future__ import annotations

import math

import numpy as np

from ..oracle import CountingOracle
from ..problem import RegularizedRisk

__all__ = ["default_start", "sgd_start"]


def default_start(problem) -> np.ndarray:
    """Zeros, or for a RegularizedRisk the minimiser of the regularizer, ``grad Omega*(0)``
    (zeros for the norms, the uniform point or the prior for entropies: always in the
    domain)."""
    if isinstance(problem, RegularizedRisk):
        return np.array(problem.reg.conjugate_grad(np.zeros(problem.dim)), dtype=np.float64)
    return np.zeros(problem.dim)


def sgd_start(problem: RegularizedRisk, passes: int = 10, batch_size: int = 64,
              random_state=0) -> np.ndarray:
    r"""The best of ``passes`` epochs of mini-batch stochastic subgradient descent.

    Pegasos steps :math:`\eta_t = 1/(\lambda (t + t_0))` on :math:`J(w) = \tfrac\lambda2\|w\|^2
    + R(w)`, with the projection onto the ball :math:`\|w\| \le \sqrt{2 J(0)/\lambda}`, which
    holds the minimiser (Shalev-Shwartz et al. 2007). :math:`J` is evaluated after every pass
    and the best point is returned ([UF12]_ Sec. 3.2: "the iterate with the minimal F").

    Needs a loss with ``batch_subgradient(w, rows)`` (the scalar losses) and L2.
    """
    # a solver passes the loop's counting wrapper (its value calls are counted): the problem
    # itself is its .problem
    risk = problem.problem if isinstance(problem, CountingOracle) else problem
    if not isinstance(risk, RegularizedRisk) or not problem.reg.self_conjugate:
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

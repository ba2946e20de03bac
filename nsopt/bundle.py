r"""PlaneBundle: the one place where cutting planes are stored.

A cutting plane of the risk :math:`R` at :math:`w_i` is :math:`R(v) \ge \langle a_i, v\rangle + b_i`
with :math:`a_i \in \partial R(w_i)` and :math:`b_i = R(w_i) - \langle a_i, w_i\rangle`
([TVSL10]_ Alg. 2, l. 4). The bundle keeps the planes as rows of a preallocated array ``A``
(capacity x d), their offsets ``b``, an inactivity counter ``age`` per plane and the Gram
matrix :math:`G_{ij} = a_i^T M a_j` kept current at O(n d) per :meth:`add`, where ``M`` is the
metric of a quadratic regularizer (identity for L2, :math:`Q^{-1}` for ``QuadraticForm``).

Every solver of the BMRM family, and the plane certifier, uses this class; none indexes its
arrays directly.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["PlaneBundle"]


class PlaneBundle:
    """Cutting planes ``(a_i, b_i)`` with their Gram matrix and inactivity counters.

    Parameters
    ----------
    dim : int
        Dimension of the planes' slopes.
    metric : callable ``a -> M a``, optional
        The metric of the Gram matrix; identity when omitted.
    capacity : int
        Initial storage; it doubles when full (a hard cap is the solver's ``max_planes``).
    """

    def __init__(self, dim: int, metric: Callable[[np.ndarray], np.ndarray] | None = None,
                 capacity: int = 32):
        self.dim = int(dim)
        self.metric = metric
        capacity = max(int(capacity), 2)
        self._A = np.zeros((capacity, self.dim))
        self._MA = self._A if metric is None else np.zeros((capacity, self.dim))
        self._b = np.zeros(capacity)
        self._age = np.zeros(capacity, dtype=np.int64)
        self._G = np.zeros((capacity, capacity))
        self.n = 0
        self.n_fixed = 0  # leading planes that drop/compress never remove (e.g. the loss's floor)

    # --- views (read-only by convention) ------------------------------------------------
    @property
    def A(self) -> np.ndarray:
        """Slopes, one plane per row (n x d)."""
        return self._A[: self.n]

    @property
    def MA(self) -> np.ndarray:
        """Slopes mapped by the metric, ``M a_i`` per row (n x d)."""
        return self._MA[: self.n]

    @property
    def b(self) -> np.ndarray:
        return self._b[: self.n]

    @property
    def age(self) -> np.ndarray:
        return self._age[: self.n]

    @property
    def G(self) -> np.ndarray:
        """Gram matrix ``A M A^T`` (n x n)."""
        return self._G[: self.n, : self.n]

    def __len__(self) -> int:
        return self.n

    # --- mutation -----------------------------------------------------------------------
    def _grow(self) -> None:
        cap = 2 * self._A.shape[0]
        A = np.zeros((cap, self.dim)); A[: self.n] = self.A
        if self.metric is None:
            MA = A
        else:
            MA = np.zeros((cap, self.dim)); MA[: self.n] = self.MA
        b = np.zeros(cap); b[: self.n] = self.b
        age = np.zeros(cap, dtype=np.int64); age[: self.n] = self.age
        G = np.zeros((cap, cap)); G[: self.n, : self.n] = self.G
        self._A, self._MA, self._b, self._age, self._G = A, MA, b, age, G

    def add(self, a: np.ndarray, b: float) -> int:
        """Append the plane ``<a, v> + b``; return its index. Costs O(n d) for the Gram row."""
        if self.n == self._A.shape[0]:
            self._grow()
        i = self.n
        self._A[i] = a
        if self.metric is not None:
            self._MA[i] = self.metric(np.asarray(a, dtype=np.float64))
        self._b[i] = b
        self._age[i] = 0
        row = self._A[: i + 1] @ self._MA[i]
        self._G[i, : i + 1] = row
        self._G[: i + 1, i] = row
        self.n = i + 1
        return i

    def add_fixed(self, a: np.ndarray, b: float) -> int:
        """Add a plane that is never dropped or aggregated (only before any ordinary plane)."""
        if self.n != self.n_fixed:
            raise RuntimeError("fixed planes must be added before any other plane")
        i = self.add(a, b)
        self.n_fixed += 1
        return i

    def add_at(self, w: np.ndarray, value: float, a: np.ndarray) -> int:
        """Add the plane of a function with ``value`` and subgradient ``a`` at ``w``."""
        return self.add(a, float(value) - float(a @ w))

    def drop(self, mask: np.ndarray) -> np.ndarray:
        """Remove the planes where ``mask`` is True; return the kept indices (old numbering)."""
        mask = np.array(mask, dtype=bool)
        mask[: self.n_fixed] = False
        keep = np.flatnonzero(~mask)
        k = keep.size
        if k == self.n:
            return keep
        self._A[:k] = self._A[keep]
        if self.metric is not None:
            self._MA[:k] = self._MA[keep]
        self._b[:k] = self._b[keep]
        self._age[:k] = self._age[keep]
        self._G[:k, :k] = self._G[np.ix_(keep, keep)]
        self.n = k
        return keep

    def aggregate(self, alpha: np.ndarray, index=None) -> tuple[np.ndarray, float, float]:
        r"""Kiwiel's aggregation ([TVSL10]_ Sec. 3.1): the planes in ``index`` (all when None)
        become one plane :math:`(\hat a, \hat b) = \sum_{i \in I} \alpha_i (a_i, b_i) / \hat\alpha`.

        Returns ``(a_hat, b_hat, alpha_hat)``; the aggregated plane is stored last, and the
        matching multiplier vector (for a warm start) is the old one restricted to the kept
        planes followed by ``alpha_hat``. Any convex combination of cutting planes is a
        cutting plane, so the model stays a lower bound.
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        idx = np.arange(self.n) if index is None else np.asarray(index)
        weights = alpha[idx]
        alpha_hat = float(weights.sum())
        if alpha_hat <= 0:
            weights = np.full(idx.size, 1.0 / idx.size)
        else:
            weights = weights / alpha_hat
        a_hat = weights @ self._A[idx]
        b_hat = float(weights @ self._b[idx])
        mask = np.zeros(self.n, dtype=bool)
        mask[idx] = True
        self.drop(mask)
        self.add(a_hat, b_hat)
        return a_hat, b_hat, alpha_hat

    def compress(self, alpha: np.ndarray, max_planes: int, keep_newest: int | None = None) -> np.ndarray:
        """Make room for one more plane when ``n >= max_planes``, keeping the dual value.

        With ``keep_newest=None`` (BMRM's policy) planes with zero multiplier are dropped first
        (they do not enter ``D(alpha)``) and, if still full, the older half of the non-fixed
        planes is aggregated into one. With ``keep_newest=k`` (the k-bundle policy, [TVSL10]_
        Sec. 3.1) every non-fixed plane but the ``k`` newest is aggregated into one, placed
        first. Either way ``D`` at the returned multipliers equals ``D(alpha)`` (requirement C8
        of the notes), and those multipliers are aligned with the new planes.
        """
        alpha = np.asarray(alpha, dtype=np.float64)[: self.n]
        if self.n < max_planes:
            return alpha
        if keep_newest is None:
            keep = self.drop(alpha <= 0.0)
            alpha = alpha[keep]
            if self.n < max_planes:
                return alpha
            n_old = max(2, (self.n - self.n_fixed) // 2)
        else:
            n_old = self.n - self.n_fixed - int(keep_newest)
            if n_old < 1:
                raise ValueError("nothing to aggregate: keep_newest leaves no old plane")
        index = np.arange(self.n_fixed, self.n_fixed + n_old)
        rest = np.ones(self.n, dtype=bool)
        rest[index] = False
        _, _, alpha_hat = self.aggregate(alpha, index)
        alpha = np.concatenate([alpha[rest], [alpha_hat]])
        # move the aggregate (stored last) to the front of the non-fixed planes: oldest first
        order = np.concatenate([np.arange(self.n_fixed), [self.n - 1],
                                np.arange(self.n_fixed, self.n - 1)])
        self._permute(order)
        return alpha[order]

    def _permute(self, order: np.ndarray) -> None:
        n = self.n
        self._A[:n] = self._A[order]
        if self.metric is not None:
            self._MA[:n] = self._MA[order]
        self._b[:n] = self._b[order]
        self._age[:n] = self._age[order]
        self._G[:n, :n] = self._G[np.ix_(order, order)]

    def update_ages(self, alpha: np.ndarray, tol: float = 0.0) -> None:
        """Reset the age of planes with multiplier > tol, increment the others'."""
        active = np.asarray(alpha)[: self.n] > tol
        self._age[: self.n] = np.where(active, 0, self._age[: self.n] + 1)

    # --- evaluation ---------------------------------------------------------------------
    def combine(self, alpha: np.ndarray) -> tuple[np.ndarray, float]:
        """The convex combination ``(a_bar, b_bar) = (A^T alpha, b^T alpha)``."""
        alpha = np.asarray(alpha, dtype=np.float64)[: self.n]
        return alpha @ self.A, float(alpha @ self.b)

    def model(self, w: np.ndarray) -> float:
        """The cutting-plane model ``max_i <a_i, w> + b_i`` (``-inf`` when empty)."""
        if self.n == 0:
            return -np.inf
        return float(np.max(self.A @ w + self.b))

    def lower_bound(self, reg, lam: float, alpha: np.ndarray) -> float:
        r"""The dual value :math:`\bar b - \lambda \Omega^*(-\bar a / \lambda)` at multipliers
        ``alpha`` on the simplex: a lower bound on :math:`\min_w \lambda\Omega(w) + R(w)` by weak
        duality, whatever the quality of ``alpha`` ([TVSL10]_ Thm. 2)."""
        a_bar, b_bar = self.combine(alpha)
        return b_bar - lam * reg.conjugate(-a_bar / lam)

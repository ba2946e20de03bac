r"""PlaneBundle: the one place where cutting planes are stored.

A cutting plane of the risk :math:`R` at :math:`w_i` is :math:`R(v) \ge \langle a_i, v\rangle + b_i`
with :math:`a_i \in \partial R(w_i)` and :math:`b_i = R(w_i) - \langle a_i, w_i\rangle`
([TVSL10]_ Alg. 2, l. 4). The bundle keeps the planes as rows of a preallocated array ``A``
(capacity x d), their offsets ``b``, an inactivity counter ``age`` per plane and the Gram
matrix :math:`G_{ij} = a_i^T M a_j` kept current at O(n d) per :meth:`add`, where ``M`` is the
metric of a quadratic regularizer (identity for L2, :math:`Q^{-1}` for ``QuadraticForm``).

Multiple cutting-plane models ([UF12]_ Sec. 3.3, P-BMRM): when the risk is a sum
:math:`R = \sum_{p=1}^P R_p` (e.g. one part per group of examples), every plane carries the index
``block`` of the part :math:`R_p` it bounds, and the model is
:math:`\sum_p \max_{i:\ \mathrm{block}_i = p} \langle a_i, w\rangle + b_i`, tighter than the single
model over the summed planes. Its master dual is over a product of ``n_blocks`` simplices, one per
model (each block's multipliers are ``>= 0`` and sum to 1); the backends of :mod:`nsopt.inner`
read ``bundle.block`` and ``bundle.n_blocks``. With ``n_blocks=1`` (the default) everything is the
single model of [TVSL10]_.

Every solver of the BMRM family, and the plane certifier, uses this class; none indexes its
arrays directly.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010.
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
   CVWW 2012. Sec. 3.3 (multiple cutting-plane models).
"""
from __future__ import annotations

import numbers
from typing import Callable

import numpy as np

__all__ = ["PlaneBundle"]


class PlaneBundle:
    """Cutting planes ``(a_i, b_i)`` with their Gram matrix, inactivity counters and models.

    Parameters
    ----------
    dim : int
        Dimension of the planes' slopes.
    metric : callable ``a -> M a``, optional
        The metric of the Gram matrix; identity when omitted.
    capacity : int
        Initial storage; it doubles when full (a hard cap is the solver's ``max_planes``).
    n_blocks : int, default 1
        Number of cutting-plane models ``P`` ([UF12]_ Sec. 3.3): plane ``i`` belongs to model
        ``block[i]`` in ``[0, n_blocks)``, and the multipliers of the master dual sum to 1 within
        each model. ``1`` is the single model.

    Attributes
    ----------
    n : int
        Number of planes.
    n_fixed : int
        Leading planes that :meth:`drop`, :meth:`aggregate` and :meth:`compress` never remove
        (e.g. the loss's floor, one per model).
    n_blocks : int
        Number of models.
    """

    def __init__(self, dim: int, metric: Callable[[np.ndarray], np.ndarray] | None = None,
                 capacity: int = 32, n_blocks: int = 1):
        if not isinstance(n_blocks, numbers.Integral) or isinstance(n_blocks, bool) or n_blocks < 1:
            raise ValueError(f"n_blocks must be an integer >= 1, got {n_blocks!r}")
        self.dim = int(dim)
        self.metric = metric
        self.n_blocks = int(n_blocks)
        capacity = max(int(capacity), 2)
        self._A = np.zeros((capacity, self.dim))
        self._MA = self._A if metric is None else np.zeros((capacity, self.dim))
        self._b = np.zeros(capacity)
        self._age = np.zeros(capacity, dtype=np.int64)
        self._block = np.zeros(capacity, dtype=np.int64)
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
    def block(self) -> np.ndarray:
        """Model index of every plane (int, length n, values in ``[0, n_blocks)``)."""
        return self._block[: self.n]

    @property
    def G(self) -> np.ndarray:
        """Gram matrix ``A M A^T`` (n x n)."""
        return self._G[: self.n, : self.n]

    def __len__(self) -> int:
        return self.n

    # --- mutation -----------------------------------------------------------------------
    def _check_block(self, block) -> int:
        if (not isinstance(block, numbers.Integral) or isinstance(block, bool)
                or not 0 <= block < self.n_blocks):
            raise ValueError(
                f"block must be an integer in [0, {self.n_blocks}) (the bundle has n_blocks = "
                f"{self.n_blocks} models), got {block!r}"
            )
        return int(block)

    def _grow(self) -> None:
        cap = 2 * self._A.shape[0]
        A = np.zeros((cap, self.dim)); A[: self.n] = self.A
        if self.metric is None:
            MA = A
        else:
            MA = np.zeros((cap, self.dim)); MA[: self.n] = self.MA
        b = np.zeros(cap); b[: self.n] = self.b
        age = np.zeros(cap, dtype=np.int64); age[: self.n] = self.age
        block = np.zeros(cap, dtype=np.int64); block[: self.n] = self.block
        G = np.zeros((cap, cap)); G[: self.n, : self.n] = self.G
        self._A, self._MA, self._b, self._age, self._block, self._G = A, MA, b, age, block, G

    def add(self, a: np.ndarray, b: float, block: int = 0) -> int:
        """Append the plane ``<a, v> + b`` of model ``block``; return its index.

        Costs O(n d) for the Gram row. ``block`` outside ``[0, n_blocks)`` is a ``ValueError``.
        """
        block = self._check_block(block)
        if self.n == self._A.shape[0]:
            self._grow()
        i = self.n
        self._A[i] = a
        if self.metric is not None:
            self._MA[i] = self.metric(np.asarray(a, dtype=np.float64))
        self._b[i] = b
        self._age[i] = 0
        self._block[i] = block
        row = self._A[: i + 1] @ self._MA[i]
        self._G[i, : i + 1] = row
        self._G[: i + 1, i] = row
        self.n = i + 1
        return i

    def add_fixed(self, a: np.ndarray, b: float, block: int = 0) -> int:
        """Add a plane of model ``block`` that is never dropped or aggregated (only before any
        ordinary plane; with several models, typically one floor plane per model)."""
        if self.n != self.n_fixed:
            raise RuntimeError("fixed planes must be added before any other plane")
        i = self.add(a, b, block)
        self.n_fixed += 1
        return i

    def add_at(self, w: np.ndarray, value: float, a: np.ndarray, block: int = 0) -> int:
        """Add the plane of model ``block`` of a function with ``value`` and subgradient ``a``
        at ``w``."""
        return self.add(a, float(value) - float(a @ w), block)

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
        self._block[:k] = self._block[keep]
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

        With several models the planes in ``index`` must all belong to one model (a
        ``ValueError`` otherwise): the weights :math:`\alpha_i / \hat\alpha` are then renormalised
        within that model, the aggregate is a cutting plane of that model's part :math:`R_p` and
        belongs to the same block, and ``alpha_hat`` keeps the block's multipliers summing to 1.
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        idx = np.arange(self.n) if index is None else np.asarray(index)
        if idx.size == 0:
            raise ValueError("aggregate needs at least one plane in index")
        labels = np.unique(self._block[idx])
        if labels.size > 1:
            raise ValueError(
                f"aggregate combines planes of one model only; index holds planes of models "
                f"{labels.tolist()} (a convex combination across models is not a plane of either)"
            )
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
        self.add(a_hat, b_hat, int(labels[0]))
        return a_hat, b_hat, alpha_hat

    def compress(self, alpha: np.ndarray, max_planes: int, keep_newest: int | None = None,
                 block: int = 0) -> np.ndarray:
        """Make room for one more plane when the bundle is full, keeping the dual value.

        ``max_planes`` is the capacity of the whole bundle when ``n_blocks == 1`` and of EACH
        model when ``n_blocks > 1``: room is then made in model ``block`` (that of the plane
        about to be added), which is full when it holds ``max_planes`` planes (fixed ones
        included); only its planes are dropped or aggregated, the other models are untouched.

        With ``keep_newest=None`` (BMRM's policy) planes with zero multiplier are dropped first
        (they do not enter ``D(alpha)``) and, if still full, the older half of the non-fixed
        planes is aggregated into one. With ``keep_newest=k`` (the k-bundle policy, [TVSL10]_
        Sec. 3.1) every non-fixed plane but the ``k`` newest is aggregated into one, placed
        first (at the place of the oldest plane it replaces). Either way ``D`` at the returned
        multipliers equals ``D(alpha)`` (requirement C8 of the notes), those multipliers are
        aligned with the new planes, and each model's multipliers keep their sum.
        """
        alpha = np.asarray(alpha, dtype=np.float64)[: self.n]
        block = self._check_block(block)
        multi = self.n_blocks > 1
        in_block = (self.block == block) if multi else np.ones(self.n, dtype=bool)
        if int(np.count_nonzero(in_block)) < max_planes:
            return alpha
        fixed = np.arange(self.n) < self.n_fixed
        if keep_newest is None:
            keep = self.drop(in_block & (alpha <= 0.0))
            alpha = alpha[keep]
            in_block = in_block[keep]
            fixed = fixed[keep]
            if int(np.count_nonzero(in_block)) < max_planes:
                return alpha
            movable = np.flatnonzero(in_block & ~fixed)
            n_old = max(2, movable.size // 2)
            if movable.size < 2:
                raise ValueError(
                    f"cannot make room in model {block}: it has {movable.size} non-fixed plane(s) "
                    f"and max_planes = {max_planes}")
        else:
            movable = np.flatnonzero(in_block & ~fixed)
            n_old = movable.size - int(keep_newest)
            if n_old < 1:
                raise ValueError("nothing to aggregate: keep_newest leaves no old plane")
        index = movable[:n_old]
        rest = np.ones(self.n, dtype=bool)
        rest[index] = False
        _, _, alpha_hat = self.aggregate(alpha, index)
        alpha = np.concatenate([alpha[rest], [alpha_hat]])
        # move the aggregate (stored last) to where the oldest plane it replaces was
        first = int(np.count_nonzero(rest[: index[0]]))
        order = np.concatenate([np.arange(first), [self.n - 1], np.arange(first, self.n - 1)])
        self._permute(order)
        return alpha[order]

    def _permute(self, order: np.ndarray) -> None:
        n = self.n
        self._A[:n] = self._A[order]
        if self.metric is not None:
            self._MA[:n] = self._MA[order]
        self._b[:n] = self._b[order]
        self._age[:n] = self._age[order]
        self._block[:n] = self._block[order]
        self._G[:n, :n] = self._G[np.ix_(order, order)]

    def update_ages(self, alpha: np.ndarray, tol: float = 0.0) -> None:
        """Reset the age of planes with multiplier > tol, increment the others'."""
        active = np.asarray(alpha)[: self.n] > tol
        self._age[: self.n] = np.where(active, 0, self._age[: self.n] + 1)

    # --- evaluation ---------------------------------------------------------------------
    def combine(self, alpha: np.ndarray) -> tuple[np.ndarray, float]:
        r"""The combination ``(a_bar, b_bar) = (A^T alpha, b^T alpha)`` over all planes.

        For ``alpha`` on the simplex it is a convex combination of planes of :math:`R`, hence a
        plane of :math:`R`. With several models and ``alpha`` in the product of simplices it is
        :math:`\sum_p \sum_{i \in p} \alpha_i (a_i, b_i)`: each inner sum is a convex combination
        of planes of :math:`R_p`, hence a plane of :math:`R_p`, and the sum over ``p`` is a plane
        of :math:`R = \sum_p R_p`: the plain sum is right in both cases.
        """
        alpha = np.asarray(alpha, dtype=np.float64)[: self.n]
        return alpha @ self.A, float(alpha @ self.b)

    def model(self, w: np.ndarray) -> float:
        r"""The cutting-plane model at ``w``: :math:`\max_i \langle a_i, w\rangle + b_i`, or with
        several models :math:`\sum_p \max_{i \in p} \langle a_i, w\rangle + b_i` (``-inf`` when
        a model has no plane)."""
        if self.n == 0:
            return -np.inf
        values = self.A @ w + self.b
        if self.n_blocks == 1:
            return float(np.max(values))
        maxima = np.full(self.n_blocks, -np.inf)
        np.maximum.at(maxima, self.block, values)
        return float(maxima.sum())

    def lower_bound(self, reg, lam: float, alpha: np.ndarray) -> float:
        r"""The dual value :math:`\bar b - \lambda \Omega^*(-\bar a / \lambda)` at multipliers
        ``alpha`` on the simplex: a lower bound on :math:`\min_w \lambda\Omega(w) + R(w)` by weak
        duality, whatever the quality of ``alpha`` ([TVSL10]_ Thm. 2).

        With several models ``alpha`` must lie in the product of simplices (each model's
        multipliers ``>= 0``, summing to 1). The formula is unchanged: :meth:`combine` gives a
        plane :math:`(\bar a, \bar b)` of :math:`R = \sum_p R_p` (a sum over ``p`` of convex
        combinations of planes of :math:`R_p`), so :math:`\lambda\Omega(w) + R(w) \ge
        \lambda\Omega(w) + \langle\bar a, w\rangle + \bar b \ge \bar b - \lambda\Omega^*(-\bar
        a/\lambda)` for every ``w`` (Fenchel-Young).
        """
        a_bar, b_bar = self.combine(alpha)
        return b_bar - lam * reg.conjugate(-a_bar / lam)

r"""Euclidean projection onto the simplex, and the block structure of a product of simplices,
written once for every master-problem solver."""
from __future__ import annotations

import numpy as np

__all__ = ["project_simplex", "Blocks"]


def project_simplex(v, z: float = 1.0) -> np.ndarray:
    r"""Euclidean projection onto the simplex :math:`\{x \ge 0,\ \sum_i x_i = z\}`.

    .. math:: P(v) = \arg\min_{x \ge 0,\ 1^T x = z} \|x - v\|_2 = \max(v - \theta, 0),

    with the threshold :math:`\theta` found by sorting, :math:`O(n \log n)` (Held, Wolfe and
    Crowder 1974; Duchi, Shalev-Shwartz, Singer and Chandra 2008, Fig. 1).

    Parameters
    ----------
    v : array_like, shape (n,)
        The point to project, ``n >= 1``, finite.
    z : float
        The simplex's total, ``> 0``.

    Returns
    -------
    ndarray, shape (n,)
        The projection; its entries sum to ``z`` up to rounding.

    Examples
    --------
    >>> project_simplex([0.5, 0.5, 2.0]).tolist()
    [0.0, 0.0, 1.0]
    """
    v = np.asarray(v, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("cannot project an empty vector onto the simplex")
    if not z > 0:
        raise ValueError(f"the simplex total z must be > 0, got {z}")
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - z
    k = np.arange(1, v.size + 1)
    rho = np.flatnonzero(u - css / k > 0)[-1]
    theta = css[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0)


class Blocks:
    r"""The block structure of the master dual: a product of ``n_blocks`` simplices.

    Plane ``i`` belongs to block ``labels[i]``; the feasible set is
    :math:`\{\alpha \ge 0:\ \sum_{i \in p} \alpha_i = 1\ \forall p\}` ([UF12]_ Sec. 3.3, one
    simplex per cutting-plane model). With ``n_blocks == 1`` every method does exactly the
    arithmetic of the single simplex (``x / x.sum()``, ``np.max``, :func:`project_simplex`), so
    a one-model bundle gives bit-for-bit the results of the single-model code.

    Parameters
    ----------
    labels : array_like of int, shape (n,)
        Block of every plane, in ``[0, n_blocks)``; every block must hold at least one plane.
    n_blocks : int

    References
    ----------
    .. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
       CVWW 2012. Sec. 3.3.
    """

    def __init__(self, labels, n_blocks: int):
        self.n_blocks = int(n_blocks)
        self.labels = np.ascontiguousarray(labels, dtype=np.int64)
        self.n = self.labels.size
        self.counts = np.bincount(self.labels, minlength=self.n_blocks)
        self.index = ([np.arange(self.n)] if self.n_blocks == 1 else
                      [np.flatnonzero(self.labels == p) for p in range(self.n_blocks)])

    @classmethod
    def single(cls, n: int) -> "Blocks":
        return cls(np.zeros(n, dtype=np.int64), 1)

    @property
    def multi(self) -> bool:
        return self.n_blocks > 1

    def sums(self, x) -> np.ndarray:
        """Per-block sums of ``x``, shape (n_blocks,)."""
        x = np.asarray(x, dtype=np.float64)
        if self.n_blocks == 1:
            return np.array([x.sum()])
        return np.bincount(self.labels, weights=x, minlength=self.n_blocks)

    def normalize(self, x) -> np.ndarray:
        """``x`` scaled so that every block sums to 1 (blocks of positive sum only)."""
        if self.n_blocks == 1:
            return x / x.sum()
        return x / self.sums(x)[self.labels]

    def maxima(self, g) -> np.ndarray:
        """Per-block maxima of ``g``, shape (n_blocks,)."""
        g = np.asarray(g, dtype=np.float64)
        if self.n_blocks == 1:
            return np.array([np.max(g)])
        out = np.full(self.n_blocks, -np.inf)
        np.maximum.at(out, self.labels, g)
        return out

    def gap(self, alpha, grad) -> float:
        r"""Frank-Wolfe gap over the product: :math:`\sum_p \max_{i\in p} g_i - \alpha^T g`."""
        if self.n_blocks == 1:
            return float(np.max(grad) - alpha @ grad)
        return float(self.maxima(grad).sum() - alpha @ grad)

    def violation(self, alpha, grad) -> float:
        r""":math:`\max_p (\max_{i\in p} g_i - \min_{i\in p,\ \alpha_i>0} g_i)`: zero exactly at a
        maximiser (KKT), and an upper bound on the gap divided by ``n_blocks``."""
        if self.n_blocks == 1:
            return float(grad.max() - grad[alpha > 0].min())
        low = np.full(self.n_blocks, np.inf)
        pos = alpha > 0
        np.minimum.at(low, self.labels[pos], grad[pos])
        return float(np.max(self.maxima(grad) - low))

    def project(self, v) -> np.ndarray:
        """Euclidean projection onto the product of simplices, block by block."""
        if self.n_blocks == 1:
            return project_simplex(v)
        v = np.asarray(v, dtype=np.float64).ravel()
        out = np.empty_like(v)
        for idx in self.index:
            out[idx] = project_simplex(v[idx])
        return out

    def argmax_vertex(self, score) -> np.ndarray:
        """The vertex of the product with, in every block, the plane of largest ``score``."""
        alpha = np.zeros(self.n)
        for idx in self.index:
            alpha[idx[int(np.argmax(score[idx]))]] = 1.0
        return alpha

    def indicator(self):
        """The n x n_blocks 0/1 matrix ``E`` (CSC) with ``E[i, labels[i]] = 1``."""
        import scipy.sparse as sp

        return sp.csc_matrix((np.ones(self.n), (np.arange(self.n), self.labels)),
                             shape=(self.n, self.n_blocks))

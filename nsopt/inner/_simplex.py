r"""Euclidean projection onto the simplex, written once for every master-problem solver."""
from __future__ import annotations

import numpy as np

__all__ = ["project_simplex"]


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

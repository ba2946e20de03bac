r"""Contiguous groups of examples: the partial risks :math:`R_p` of P-BMRM ([UF12]_ Sec. 3.3).

Every loss that splits over its examples (scalar, vector, structured) and the merging of the
natural groups of the multivariate losses use the same boundaries, so one ``n_groups`` means
one split everywhere.

References
----------
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization with
   multiple cutting plane models. 2012.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["contiguous_groups", "cached_group_parts"]


def contiguous_groups(m: int, n_groups: int) -> np.ndarray:
    """Boundaries of ``n_groups`` contiguous, non-empty groups of ``m`` items.

    Returns ``bounds`` (int64, shape ``(n_groups + 1,)``, ``bounds[0] = 0``,
    ``bounds[-1] = m``): group ``p`` is ``bounds[p]:bounds[p + 1]``. The sizes differ by at
    most one; the boundaries are ``k m / P`` rounded down as ``np.linspace`` computes them
    (the cutting-plane solvers restrict a loss's dual point to its groups with this function).
    """
    if not isinstance(n_groups, numbers.Integral) or isinstance(n_groups, bool):
        raise TypeError(f"n_groups must be an integer, got {type(n_groups).__name__}")
    n_groups = int(n_groups)
    if not 1 <= n_groups <= m:
        raise ValueError(f"cannot split {m} examples into {n_groups} non-empty groups: "
                         f"n_groups must be in 1 .. {m} (the number of examples)")
    return np.linspace(0, m, n_groups + 1).astype(np.int64)


def cached_group_parts(owner, n_groups: int, make_part) -> tuple[np.ndarray, list]:
    """``(bounds, parts)``: :func:`contiguous_groups` of ``owner.m`` and ``make_part(s, e)``
    for each group, built once per ``n_groups`` and kept on ``owner`` (the data of a group
    is sliced from ``X`` only on the first call)."""
    bounds = contiguous_groups(owner.m, n_groups)
    cached = owner.__dict__.get("_group_parts")
    if cached is None or len(cached) != len(bounds) - 1:
        cached = [make_part(s, e) for s, e in zip(bounds[:-1], bounds[1:])]
        owner.__dict__["_group_parts"] = cached
    return bounds, cached

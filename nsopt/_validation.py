"""Every input check of nsopt, in one place.

The checks run at the boundaries only (oracle and loss constructors, ``RegularizedRisk``,
``Solver.__init__`` and ``Solver.solve``), never inside an iteration. Messages say what is
wrong and what to do about it.
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_vector",
    "check_data",
    "check_binary_labels",
    "check_targets",
    "check_positive",
    "check_tolerances",
    "check_lengths",
]


def _all_finite(a: np.ndarray) -> bool:
    # cheap test first (one reduction), element-wise pass only to explain a failure
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.sum(a))) or bool(np.isfinite(a).all())


def check_vector(x, dim=None, name="x", *, copy=False, finite=True) -> np.ndarray:
    """Return ``x`` as a 1-D float64 C-contiguous array, checking length and finiteness."""
    try:
        arr = np.array(x, dtype=np.float64, copy=copy) if copy else np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D array of numbers, got {type(x).__name__}") from exc
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D, got an array of shape {arr.shape}; "
            "matrix variables are passed flattened in C order (see the loss's .shape)"
        )
    if dim is not None and arr.shape[0] != dim:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {dim}")
    if finite and not _all_finite(arr):
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{name} contains NaN or inf (first at index {bad[0]})")
    return np.ascontiguousarray(arr)


def check_data(X, name="X"):
    """Return ``X`` as a C-ordered float64 ndarray or a CSR matrix, checking 2-D and finiteness."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sum_duplicates()
        X.sort_indices()
        data = X.data
        shape = X.shape
    else:
        try:
            X = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a 2-D array or a scipy.sparse matrix") from exc
        if X.ndim != 2:
            raise ValueError(
                f"{name} must be 2-D (examples x features), got shape {X.shape}; "
                "reshape a single feature with X.reshape(-1, 1)"
            )
        X = np.ascontiguousarray(X)
        data = X
        shape = X.shape
    if shape[0] == 0:
        raise ValueError(f"{name} has no rows (examples)")
    if shape[1] == 0:
        raise ValueError(f"{name} has no columns (features)")
    if not _all_finite(data):
        if sp.issparse(X):
            k = int(np.flatnonzero(~np.isfinite(X.data))[0])
            row = int(np.searchsorted(X.indptr, k, side="right") - 1)
            where = f"row {row}, column {X.indices[k]}"
        else:
            r, c = np.argwhere(~np.isfinite(X))[0]
            where = f"row {r}, column {c}"
        raise ValueError(f"{name} contains NaN or inf (first at {where})")
    return X


def check_lengths(m: int, y, name="y") -> None:
    if len(y) != m:
        raise ValueError(f"X has {m} rows but {name} has {len(y)} entries; they must match")


def check_targets(y, m: int, name="y") -> np.ndarray:
    """Real-valued targets: 1-D, finite, one per example."""
    y = check_vector(y, None, name)
    check_lengths(m, y, name)
    return y


def check_binary_labels(y, m: int, name="y") -> np.ndarray:
    """Binary labels in {-1, +1} as float64; anything else is an error naming the bad values."""
    y = check_targets(y, m, name)
    bad = (y != 1.0) & (y != -1.0)
    if bad.any():
        vals = np.unique(y[bad])[:5]
        raise ValueError(
            f"{name} must contain only -1 and +1 for a binary loss; found {vals.tolist()}"
            " (map two-class labels with np.where(y == positive, 1.0, -1.0))"
        )
    return y


def check_sample_weight(sample_weight, m: int) -> np.ndarray:
    """Example weights normalised to sum 1 (the uniform ``1/m`` when None): nonnegative, finite,
    length ``m``, with a positive sum."""
    if sample_weight is None:
        return np.full(m, 1.0 / m)
    s = check_vector(sample_weight, m, "sample_weight")
    if (s < 0).any() or s.sum() <= 0:
        raise ValueError("sample_weight must be nonnegative with a positive sum")
    return s / s.sum()


def check_positive(value, name: str, *, strict=True, hint: str = "") -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (strict and value == 0):
        op = ">" if strict else ">="
        raise ValueError(f"{name} must be {op} 0, got {value}" + (f"; {hint}" if hint else ""))
    return value


def check_tolerances(rtol, atol) -> tuple[float, float]:
    rtol = check_positive(rtol, "rtol", strict=False)
    atol = check_positive(atol, "atol", strict=False)
    if rtol == 0 and atol == 0:
        raise ValueError("rtol and atol are both 0: the solver could never stop on its gap")
    return rtol, atol

r"""Synthetic data sets for examples, tests and benchmarks.

Every generator takes ``random_state`` (an int seed, ``None``, or a ``numpy.random.Generator``)
and returns the same arrays for the same seed. Labels follow the conventions of the losses:
binary labels in {-1, +1} (float64), class labels 0..k-1 (int64), multilabel targets as an
``m x k`` 0/1 float64 matrix, relevance grades in {0, 1, 2} (float64) with int64 query ids.

Public names: :func:`make_sparse_binary`, :func:`make_dense_binary`, :func:`make_regression`,
:func:`make_multiclass`, :func:`make_multilabel`, :func:`make_ranking`, :func:`normalize_rows`.
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from ._validation import as_real_array, canonical_csr

__all__ = [
    "make_sparse_binary",
    "make_dense_binary",
    "make_regression",
    "make_multiclass",
    "make_multilabel",
    "make_ranking",
    "normalize_rows",
]


def _rng(random_state):
    if isinstance(random_state, np.random.RandomState):
        raise TypeError(
            "random_state must be an int, None or a numpy.random.Generator "
            "(np.random.default_rng(seed)), not a legacy RandomState"
        )
    return np.random.default_rng(random_state)


def _count(value, name, minimum=1):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _fraction(value, name, low, high, closed_high=False):
    ok = isinstance(value, numbers.Real) and low <= value and (value <= high if closed_high else value < high)
    if not ok:
        bracket = "]" if closed_high else ")"
        raise ValueError(f"{name} must be in [{low}, {high}{bracket}, got {value!r}")
    return float(value)


def make_sparse_binary(
    n_samples=2000,
    n_features=123,
    density=0.11,
    noise=0.1,
    random_state=0,
    *,
    positive_fraction=0.24,
):
    r"""Sparse binary classification data shaped like a9a (UCI Adult, LIBSVM encoding).

    The features are one-hot encodings of categorical attributes, as in a9a: the columns are
    split into ``g = ceil(density * n_features)`` contiguous groups (attributes), and each
    example switches on at most one column per group, with skewed category frequencies. Each
    group is present with probability ``density * n_features / g``, so the expected fraction of
    non-zeros is ``density``. Labels come from a hidden linear model,
    ``y = sign(<w, x> - b)`` with ``w ~ N(0, I)`` and ``b`` a quantile of the scores, then each
    label is flipped with probability ``noise``; ``b`` is chosen so that about
    ``positive_fraction`` of the final labels are ``+1`` (a9a: 24.1% positive, 75.9% negative).

    Parameters
    ----------
    n_samples : int, default 2000
    n_features : int, default 123
    density : float in (0, 1], default 0.11
        Expected fraction of non-zero entries (a9a: 0.1128).
    noise : float in [0, 0.5), default 0.1
        Probability that a label is flipped.
    random_state : int, None or numpy.random.Generator, default 0
    positive_fraction : float in (0, 1), default 0.24 (keyword-only)
        Expected fraction of ``+1`` labels after the flips. When ``noise`` alone gives more
        positives than this (``noise > positive_fraction``), it is as close as possible.

    Returns
    -------
    X : scipy.sparse.csr_matrix, float64, shape (n_samples, n_features)
        Entries 0 or 1; canonical CSR.
    y : ndarray, float64, shape (n_samples,)
        Labels in {-1, +1}.

    Examples
    --------
    >>> X, y = make_sparse_binary(1000, random_state=0)
    >>> X.shape, X.format, np.unique(X.data).tolist()
    ((1000, 123), 'csr', [1.0])
    >>> np.unique(y).tolist()
    [-1.0, 1.0]
    >>> bool(0.18 < np.mean(y == 1) < 0.30)
    True
    """
    m = _count(n_samples, "n_samples")
    d = _count(n_features, "n_features")
    density = _fraction(density, "density", 0.0, 1.0, closed_high=True)
    if density == 0.0:
        raise ValueError("density must be > 0")
    noise = _fraction(noise, "noise", 0.0, 0.5)
    positive_fraction = _fraction(positive_fraction, "positive_fraction", 0.0, 1.0)
    rng = _rng(random_state)

    n_groups = max(1, min(d, int(np.ceil(density * d - 1e-9))))
    p_present = min(1.0, density * d / n_groups)
    # group sizes: each >= 1, summing to d, uneven like a9a's attributes
    cuts = np.sort(rng.choice(np.arange(1, d), size=n_groups - 1, replace=False)) if n_groups > 1 else []
    bounds = np.concatenate([[0], cuts, [d]]).astype(np.int64)
    cols = np.empty((m, n_groups), dtype=np.int64)
    for g in range(n_groups):
        size = bounds[g + 1] - bounds[g]
        probs = rng.dirichlet(np.full(size, 0.7))
        cols[:, g] = bounds[g] + rng.choice(size, size=m, p=probs)
    present = rng.random((m, n_groups)) < p_present
    counts = present.sum(axis=1)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    X = sp.csr_matrix((np.ones(int(indptr[-1])), cols[present], indptr), shape=(m, d))
    X.has_sorted_indices = True

    w = rng.standard_normal(d)
    scores = X @ w  # identical rows get the same score, hence the same clean label
    # P(+1) = q (1 - noise) + (1 - q) noise = positive_fraction, solved for q
    q = float(np.clip((positive_fraction - noise) / (1.0 - 2.0 * noise), 0.0, 1.0))
    threshold = np.quantile(scores, 1.0 - q)
    y = np.where(scores > threshold, 1.0, -1.0) if q > 0 else -np.ones(m)
    flip = rng.random(m) < noise
    y[flip] = -y[flip]
    return X, y


def make_dense_binary(n_samples=200, n_features=20, separable=False, random_state=0, *, margin=0.5, noise=0.1):
    r"""Dense Gaussian binary classification data from a hidden linear model through the origin.

    ``x ~ N(0, I)``, ``y = sign(<w, x>)`` for a hidden unit vector ``w``. With
    ``separable=True`` every point is then moved along ``w`` so that ``y <w, x> >= margin``:
    the data are linearly separable (without a bias) with margin at least ``margin``. Otherwise
    each label is flipped with probability ``noise``.

    Parameters
    ----------
    n_samples : int, default 200
    n_features : int, default 20
    separable : bool, default False
    random_state : int, None or numpy.random.Generator, default 0
    margin : float > 0, default 0.5 (keyword-only; separable data)
    noise : float in [0, 0.5), default 0.1 (keyword-only; non-separable data)

    Returns
    -------
    X : ndarray, float64, shape (n_samples, n_features)
    y : ndarray, float64, shape (n_samples,)
        Labels in {-1, +1}; both classes occur when ``n_samples >= 2``.

    Examples
    --------
    >>> X, y = make_dense_binary(100, 5, separable=True, random_state=1)
    >>> X.shape, y.shape, np.unique(y).tolist()
    ((100, 5), (100,), [-1.0, 1.0])
    """
    m = _count(n_samples, "n_samples")
    d = _count(n_features, "n_features")
    if not (isinstance(margin, numbers.Real) and margin > 0):
        raise ValueError(f"margin must be > 0, got {margin!r}")
    noise = _fraction(noise, "noise", 0.0, 0.5)
    rng = _rng(random_state)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((m, d))
    scores = X @ w
    y = np.where(scores >= 0, 1.0, -1.0)
    if m >= 2 and np.all(y == y[0]):
        k = int(np.argmin(np.abs(scores)))
        y[k] = -y[k]
    if separable:
        shift = np.maximum(0.0, margin - y * scores)  # distance still missing along w
        X += (y * shift)[:, None] * w[None, :]
    else:
        flip = rng.random(m) < noise
        if m >= 2 and np.unique(np.where(flip, -y, y)).size < 2:
            flip[:] = False  # keep both classes
        y[flip] = -y[flip]
    return X, y


def make_regression(
    n_samples=200,
    n_features=20,
    noise=0.1,
    random_state=0,
    *,
    n_informative=None,
    outlier_fraction=0.0,
    return_coef=False,
):
    r"""Dense linear regression data, optionally with gross outliers.

    ``y = X w + noise * e`` with ``x ~ N(0, I)``, ``e ~ N(0, 1)`` and ``w`` zero outside
    ``n_informative`` random coordinates. A fraction ``outlier_fraction`` of the targets is
    then shifted by ``+-10 * (std(y) + 1)``, which separates the robust losses (least absolute
    deviation, Huber, quantile) from least squares.

    Parameters
    ----------
    n_samples : int, default 200
    n_features : int, default 20
    noise : float >= 0, default 0.1
        Standard deviation of the Gaussian noise.
    random_state : int, None or numpy.random.Generator, default 0
    n_informative : int, optional (keyword-only)
        Number of non-zero coefficients; default all.
    outlier_fraction : float in [0, 1), default 0 (keyword-only)
    return_coef : bool, default False (keyword-only)
        Also return the true coefficients ``w``.

    Returns
    -------
    X : ndarray, float64, shape (n_samples, n_features)
    y : ndarray, float64, shape (n_samples,)
    w : ndarray, float64, shape (n_features,)
        Only with ``return_coef=True``.

    Examples
    --------
    >>> X, y, w = make_regression(50, 3, noise=0.0, random_state=0, return_coef=True)
    >>> X.shape, y.shape, bool(np.allclose(X @ w, y))
    ((50, 3), (50,), True)
    """
    m = _count(n_samples, "n_samples")
    d = _count(n_features, "n_features")
    if not (isinstance(noise, numbers.Real) and noise >= 0):
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    k = d if n_informative is None else _count(n_informative, "n_informative", minimum=0)
    if k > d:
        raise ValueError(f"n_informative={k} exceeds n_features={d}")
    outlier_fraction = _fraction(outlier_fraction, "outlier_fraction", 0.0, 1.0)
    rng = _rng(random_state)
    X = rng.standard_normal((m, d))
    w = np.zeros(d)
    support = rng.choice(d, size=k, replace=False)
    w[support] = rng.standard_normal(k) * 2.0
    y = X @ w + float(noise) * rng.standard_normal(m)
    n_out = int(round(outlier_fraction * m))
    if n_out:
        rows = rng.choice(m, size=n_out, replace=False)
        y[rows] += rng.choice([-1.0, 1.0], size=n_out) * 10.0 * (np.std(y) + 1.0)
    return (X, y, w) if return_coef else (X, y)


def make_multiclass(n_samples=300, n_features=10, n_classes=3, random_state=0, *, class_sep=2.0):
    r"""Dense multiclass data: Gaussian blobs around random class centres.

    Class ``c`` has centre ``class_sep * u_c`` with ``u_c`` a random unit vector; examples are
    ``centre + N(0, I)``. Classes are balanced (sizes differ by at most one), and examples come
    in random order.

    Parameters
    ----------
    n_samples : int >= n_classes, default 300
    n_features : int, default 10
    n_classes : int >= 2, default 3
    random_state : int, None or numpy.random.Generator, default 0
    class_sep : float >= 0, default 2.0 (keyword-only)

    Returns
    -------
    X : ndarray, float64, shape (n_samples, n_features)
    y : ndarray, int64, shape (n_samples,)
        Class labels 0, ..., n_classes - 1, every class present.

    Examples
    --------
    >>> X, y = make_multiclass(90, 4, n_classes=3, random_state=0)
    >>> X.shape, y.dtype, np.bincount(y).tolist()
    ((90, 4), dtype('int64'), [30, 30, 30])
    """
    m = _count(n_samples, "n_samples")
    d = _count(n_features, "n_features")
    k = _count(n_classes, "n_classes", minimum=2)
    if m < k:
        raise ValueError(f"n_samples={m} is smaller than n_classes={k}; every class needs an example")
    if not (isinstance(class_sep, numbers.Real) and class_sep >= 0):
        raise ValueError(f"class_sep must be >= 0, got {class_sep!r}")
    rng = _rng(random_state)
    centres = rng.standard_normal((k, d))
    centres *= class_sep / np.linalg.norm(centres, axis=1, keepdims=True)
    y = rng.permutation(np.arange(m) % k).astype(np.int64)
    X = centres[y] + rng.standard_normal((m, d))
    return X, y


def make_multilabel(n_samples=300, n_features=20, n_labels=5, random_state=0):
    r"""Dense multilabel data: each label is a noisy linear threshold of the features.

    ``Y[i, j] = 1`` when ``<w_j, x_i> + 0.5 e_ij > t_j`` with ``x ~ N(0, I)``, random unit
    ``w_j``, ``e ~ N(0, 1)``, and thresholds ``t_j`` set so that label ``j`` is on for a
    fraction between 20% and 50% of the examples (mean cardinality about ``0.35 * n_labels``).

    Parameters
    ----------
    n_samples : int, default 300
    n_features : int, default 20
    n_labels : int, default 5
    random_state : int, None or numpy.random.Generator, default 0

    Returns
    -------
    X : ndarray, float64, shape (n_samples, n_features)
    Y : ndarray, float64, shape (n_samples, n_labels)
        0/1 indicator matrix (the layout :func:`nsopt.io.load_svmlight` returns for multilabel
        files).

    Examples
    --------
    >>> X, Y = make_multilabel(100, 8, n_labels=4, random_state=0)
    >>> X.shape, Y.shape, np.unique(Y).tolist()
    ((100, 8), (100, 4), [0.0, 1.0])
    """
    m = _count(n_samples, "n_samples")
    d = _count(n_features, "n_features")
    k = _count(n_labels, "n_labels")
    rng = _rng(random_state)
    X = rng.standard_normal((m, d))
    W = rng.standard_normal((d, k))
    W /= np.linalg.norm(W, axis=0, keepdims=True)
    scores = X @ W + 0.5 * rng.standard_normal((m, k))
    rates = rng.uniform(0.2, 0.5, size=k)
    thresholds = np.array([np.quantile(scores[:, j], 1.0 - rates[j]) for j in range(k)])
    Y = (scores > thresholds).astype(np.float64)
    return X, Y


def make_ranking(n_queries=20, docs_per_query=15, n_features=10, random_state=0):
    r"""Learning-to-rank data: documents grouped by query, graded relevance 0/1/2.

    Each query has ``docs_per_query`` documents ``x = q + N(0, I)`` around a query-specific
    offset ``q``. Relevance is graded by a hidden linear scorer plus noise, per query: the top
    15% of a query's documents get 2, the next 20% get 1, the rest 0 (close to the OHSUMED
    grade mix, 15% / 19% / 66%), so every query with at least 3 documents has all grades.

    Parameters
    ----------
    n_queries : int, default 20
    docs_per_query : int, default 15
    n_features : int, default 10
    random_state : int, None or numpy.random.Generator, default 0

    Returns
    -------
    X : ndarray, float64, shape (n_queries * docs_per_query, n_features)
    relevance : ndarray, float64, shape (n_queries * docs_per_query,)
        Grades in {0, 1, 2}.
    qid : ndarray, int64, shape (n_queries * docs_per_query,)
        Query ids 1, ..., n_queries, each in one contiguous run (as in LETOR files).

    Examples
    --------
    >>> X, rel, qid = make_ranking(4, 10, 3, random_state=0)
    >>> X.shape, np.unique(rel).tolist(), np.unique(qid).tolist()
    ((40, 3), [0.0, 1.0, 2.0], [1, 2, 3, 4])
    """
    nq = _count(n_queries, "n_queries")
    nd = _count(docs_per_query, "docs_per_query")
    d = _count(n_features, "n_features")
    rng = _rng(random_state)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    offsets = rng.standard_normal((nq, d))
    X = np.repeat(offsets, nd, axis=0) + rng.standard_normal((nq * nd, d))
    scores = (X @ w + 0.3 * rng.standard_normal(nq * nd)).reshape(nq, nd)
    order = np.argsort(-scores, axis=1, kind="stable")
    grade_by_rank = np.zeros(nd)
    n_two = int(round(0.15 * nd)) if nd >= 3 else 0
    n_one = int(round(0.20 * nd)) if nd >= 3 else 0
    n_two, n_one = max(n_two, 1 if nd >= 3 else 0), max(n_one, 1 if nd >= 3 else 0)
    grade_by_rank[:n_two] = 2.0
    grade_by_rank[n_two : n_two + n_one] = 1.0
    relevance = np.empty((nq, nd))
    np.put_along_axis(relevance, order, np.broadcast_to(grade_by_rank, (nq, nd)), axis=1)
    qid = np.repeat(np.arange(1, nq + 1, dtype=np.int64), nd)
    return X, relevance.ravel(), qid


def normalize_rows(X):
    r"""Scale every row of ``X`` to unit Euclidean norm (zero rows stay zero).

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix, shape (m, d)

    Returns
    -------
    ndarray (float64) for dense input, or a CSR matrix (float64) for sparse input; ``X`` is
    not modified.

    Examples
    --------
    >>> normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    array([[0.6, 0.8],
           [0. , 0. ]])
    """
    if sp.issparse(X):
        X = canonical_csr(X, "X").copy()  # scaled in place below: never the caller's arrays
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        X.data *= np.repeat(scale, np.diff(X.indptr))
        return X
    X = as_real_array(X, "X", what="a 2-D array of real numbers or a scipy.sparse matrix")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (examples x features), got shape {X.shape}")
    norms = np.linalg.norm(X, axis=1)
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return X * scale[:, None]

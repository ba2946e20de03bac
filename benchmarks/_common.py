"""Shared helpers of the benchmark scripts: data loading, the raw-pass floor, peers.

Every ratio a script prints is measured in the same run, on the same machine, with the same
data. Run a script on an otherwise idle machine; numba and BLAS use every core.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import nsopt


def load(name: str):
    """A shared data set with binary labels mapped to {-1, +1}; exits cleanly when absent."""
    try:
        X, y = nsopt.io.load_dataset(name)[:2]
    except FileNotFoundError as exc:
        print(f"skipped: {exc}")
        sys.exit(0)
    labels = np.unique(y)
    if labels.size == 2 and not np.array_equal(labels, [-1.0, 1.0]):
        y = np.where(y == labels[-1], 1.0, -1.0)
    return X.tocsr(), y


def best_time(fn, repeat: int = 5) -> float:
    """Smallest wall time of ``repeat`` calls (seconds)."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def raw_pass_seconds(X, repeat: int = 50) -> float:
    """One raw data pass with scipy: ``X @ w`` plus ``X.T @ g`` (the floor of an oracle call)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal(X.shape[1])
    g = rng.standard_normal(X.shape[0])

    def one():
        X @ w
        X.T @ g

    one()
    return best_time(lambda: [one() for _ in range(10)], repeat=max(1, repeat // 10)) / 10


def hinge_l2_objective(X, y, lam, w):
    return 0.5 * lam * float(w @ w) + float(np.maximum(0.0, 1.0 - y * (X @ w)).mean())


def liblinear_time_to(X, y, lam, target, loss="hinge", penalty="l2", max_tries=8):
    """Seconds liblinear (scikit-learn LinearSVC / LogisticRegression, no intercept,
    C = 1/(m lam)) needs to reach objective <= target, shrinking its tolerance by 10 until
    it does; returns (seconds, objective reached, tol used) or (nan, best objective, None)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    m = X.shape[0]
    C = 1.0 / (m * lam)
    best = np.inf
    tol = 1e-1
    for _ in range(max_tries):
        clf = LinearSVC(C=C, loss=loss, penalty=penalty, dual=True, fit_intercept=False,
                        tol=tol, max_iter=100000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            clf.fit(X, y)
            seconds = time.perf_counter() - t0
        obj = hinge_l2_objective(X, y, lam, clf.coef_.ravel())
        best = min(best, obj)
        if obj <= target:
            return seconds, obj, tol
        tol /= 10
    return float("nan"), best, None


def cvxpy_hinge_l2(X, y, lam):
    """Seconds and objective of cvxpy + Clarabel (default tolerances) on hinge + L2."""
    import cvxpy as cp

    m, d = X.shape
    w = cp.Variable(d)
    obj = 0.5 * lam * cp.sum_squares(w) + cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / m
    prob = cp.Problem(cp.Minimize(obj))
    t0 = time.perf_counter()
    prob.solve(solver=cp.CLARABEL)
    seconds = time.perf_counter() - t0
    return seconds, hinge_l2_objective(X, y, lam, np.asarray(w.value).ravel())

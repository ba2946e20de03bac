"""Time per oracle call of every loss on a9a-sized data, against one raw data pass.

For each loss: seconds of one ``value_and_subgradient`` call and its ratio to one raw pass
(``X @ w`` plus ``X.T @ g`` with scipy) on the same data, measured in one run. Binary and
regression losses use a9a itself (regression targets are the labels), multiclass losses a9a's
rows with 5 synthetic classes, multivariate losses a9a with its labels (ranking: 300 queries).
ROCArea's scaling is measured in benchmarks/roc_scaling.py.

Usage: python benchmarks/losses.py
"""
from __future__ import annotations

import numpy as np

import nsopt
from _common import best_time, load, raw_pass_seconds


def main():
    X, y = load("a9a")
    m, d = X.shape
    raw = raw_pass_seconds(X)
    rng = np.random.default_rng(0)
    y01 = (y > 0).astype(float)
    classes = rng.integers(0, 5, m)
    Y = (rng.random((m, 5)) < 0.3).astype(float)
    qid = np.sort(rng.integers(0, 300, m))
    rel = rng.integers(0, 3, m).astype(float)
    L = nsopt.losses
    losses = {
        "Hinge": L.Hinge(X, y), "SquaredHinge": L.SquaredHinge(X, y), "Logistic": L.Logistic(X, y),
        "Exponential": L.Exponential(X, y), "Huber": L.Huber(X, y), "LeastSquares": L.LeastSquares(X, y),
        "LeastAbsoluteDeviation": L.LeastAbsoluteDeviation(X, y), "Quantile": L.Quantile(X, y, 0.3),
        "EpsilonInsensitive": L.EpsilonInsensitive(X, y, 0.1), "Poisson": L.Poisson(X, y01),
        "Novelty": L.Novelty(X),
        "MulticlassHinge(k=5)": L.MulticlassHinge(X, classes), "Softmax(k=5)": L.Softmax(X, classes),
        "MultilabelHinge(k=5)": L.MultilabelHinge(X, Y),
        "ROCArea": L.ROCArea(X, y), "OrdinalRegression": L.OrdinalRegression(X, rel.astype(int)),
        "FBeta": L.FBeta(X, y), "PRBEP": L.PRBEP(X, y), "NDCG(300 queries)": L.NDCG(X, rel, qid, k=10),
    }
    print(f"a9a-sized data: m={m}, d={d}, nnz={X.nnz}; one raw pass = {raw * 1e3:.3f} ms")
    print(f"{'loss':>24} {'ms/call':>9} {'/ raw pass':>10}")
    for name, loss in losses.items():
        w = 0.01 * rng.standard_normal(loss.dim)
        loss.value_and_subgradient(w)  # compile
        t = best_time(lambda: loss.value_and_subgradient(w), repeat=7)
        print(f"{name:>24} {t * 1e3:>9.3f} {t / raw:>10.2f}")


if __name__ == "__main__":
    main()

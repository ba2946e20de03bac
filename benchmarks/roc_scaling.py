"""Timing of the ROC-area oracle ([TVSL10] Alg. 7): doubling m should roughly double the time.

Requirement A3 of the 000 notes: from m = 1e5 to m = 2e5 the time of one oracle call grows
by at most about 2.3x (O(m log m); the all-pairs formula would grow 4x). Times are medians of
repeated calls, measured in the same run, for the three costly calls: value and subgradient
(one sort), sup_subgradient (one lexicographic sort) and one line derivative (one
lexicographic sort, no pass over X).

    PYTHONPATH=. python benchmarks/roc_scaling.py [--repeats 15] [--d 20]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from nsopt.losses.multivariate import ROCArea


def _median_time(fn, repeats):
    fn()  # warm-up (compilation, caches)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def measure(m, d, repeats, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    w_true = rng.standard_normal(d)
    y = np.where(X @ w_true + rng.standard_normal(m) > 0.7, 1.0, -1.0)
    loss = ROCArea(X, y)
    w = 0.1 * rng.standard_normal(d)
    p = rng.standard_normal(d)
    line = loss.restrict(w, p)
    return {
        "value_and_subgradient": _median_time(lambda: loss.value_and_subgradient(w), repeats),
        "sup_subgradient": _median_time(lambda: loss.sup_subgradient(w, p), repeats),
        "line.derivative": _median_time(lambda: line.derivative(0.3, 1), repeats),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs=2, default=[100_000, 200_000])
    args = parser.parse_args(argv)
    m1, m2 = args.sizes
    t1 = measure(m1, args.d, args.repeats)
    t2 = measure(m2, args.d, args.repeats)
    print(f"ROCArea, dense X with d = {args.d}; median of {args.repeats} calls")
    print(f"{'call':<24}{'m = %d' % m1:>14}{'m = %d' % m2:>14}{'ratio':>8}")
    for name in t1:
        print(f"{name:<24}{t1[name] * 1e3:>12.2f}ms{t2[name] * 1e3:>12.2f}ms{t2[name] / t1[name]:>8.2f}")
    print("O(m log m) predicts a ratio of about 2.1; the O(m^2) pair formula would give 4.")


if __name__ == "__main__":
    main()

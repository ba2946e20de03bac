"""Small problems stay small: every method on piecewise-linear losses with L2, 200 x 5 and 1000 x 20.

Losses: least absolute deviation, hinge, epsilon-insensitive (0.1), quantile (tau 0.3), and
(not in the default list) logistic, multiclass hinge on three classes (``mchinge``: the
tertiles of the score); regularizers ``--regs l2 l1``; data:
``gauss`` (standard normal features, noisy linear targets) and ``int`` (features in {0..4} and
targets on a small integer grid: many exact ties, the degenerate case where the master QP used
to crawl at the rounding level). Every method runs once per cell to a certified relative gap of
``--rtol`` (1e-4) or ``--max-time``; a cell prints seconds, and the row its ratio worst / best.
The target of issue 11 is a ratio of at most 10 in every row.

``--clock cpu`` times a cell by the CPU time of the process instead of the wall clock: on a
shared machine a run shorter than the scheduler's time slice (a few ms) is rarely preempted
while a longer one waits its turn several times, so wall-clock ratios between a 3 ms and a
50 ms run grow with the load (measured 2-3x at load 10 on 2 cores). ``--repeats N`` keeps the
fastest of N runs of every cell.

``--ndcg``: instead, one NDCG oracle call (``value_and_subgradient``) on OHSUMED Fold 1
(training set, when the shared data is there), in raw data passes (``X @ w`` + ``X.T @ g``
with scipy; CPU time of the process, so that the load of a shared machine cancels, each ratio
against 20 raw passes timed just before), at ``k = 10`` and untruncated, for ``w`` of
every scale from 0 to 10 N(0, 1) (the merge's work depends on how the scores spread against
the gains): the merge with its forced orders by position (the default), the same with one
ratio range for all positions (the rule before the fix of the high-spread case), and the
per-query assignments (scipy's ``linear_sum_assignment``, at two scales only: it is slow).
Medians of 5 ratios, each of 5 calls. Target (issue 11): at most 10 everywhere.

A method that does not take the problem prints ``n/a``; one that does not certify within
``--max-time`` prints ``(x)`` and counts as infinitely slow in the ratio.

Usage: python benchmarks/small.py [--sizes 200x5 1000x20] [--lams 1e-2 1e-6] [--max-time 60]
       [--data gauss int] [--losses lad hinge eps quantile logistic mchinge] [--regs l2 l1]
       [--methods ...] [--clock wall|cpu] [--repeats 1] [--ndcg]
"""
from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np

import nsopt
from nsopt.losses import (EpsilonInsensitive, Hinge, LeastAbsoluteDeviation, Logistic,
                          MulticlassHinge, Quantile)
from nsopt.regularizers import L1, L2
from nsopt.solvers._base import ProblemNotSupported
from nsopt.solvers._registry import SOLVERS, methods_supporting

LOSSES = {
    "lad": lambda X, y, yb: LeastAbsoluteDeviation(X, y),
    "hinge": lambda X, y, yb: Hinge(X, yb),
    "eps": lambda X, y, yb: EpsilonInsensitive(X, y, 0.1),
    "quantile": lambda X, y, yb: Quantile(X, y, 0.3),
    "logistic": lambda X, y, yb: Logistic(X, yb),
    "mchinge": lambda X, y, yb: MulticlassHinge(
        X, np.searchsorted(np.quantile(y, [1 / 3, 2 / 3]), y, side="right"), n_classes=3),
}
REGS = {"l2": L2, "l1": L1}


def make_data(kind: str, m: int, d: int, seed: int = 1):
    """``(X, y, y_binary)`` of one synthetic problem (see the module docstring)."""
    rng = np.random.default_rng(seed)
    if kind == "gauss":
        X = rng.standard_normal((m, d))
        score = X @ rng.standard_normal(d)
        y = score + 0.3 * rng.standard_normal(m)
    elif kind == "int":
        X = rng.integers(0, 5, (m, d)).astype(float)
        score = X @ np.arange(1.0, d + 1.0)
        y = score + rng.integers(0, 3, m)
    else:
        raise ValueError(f"data kind must be 'gauss' or 'int', got {kind!r}")
    yb = np.where(score - np.median(score) + rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y, yb


def ndcg_oracle(name="OHSUMED_Fold1_trainingset.txt", repeat=5,
                scales=(0.0, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 1.0, 10.0)):
    """Print one NDCG oracle call's cost in raw passes at every score spread (see above)."""
    from nsopt.losses import multivariate as mv

    def cpu_seconds(fn, calls):  # CPU time of the process (all threads) per call
        t0 = time.process_time()
        for _ in range(calls):
            fn()
        return (time.process_time() - t0) / calls

    try:
        X, rel, qid = nsopt.io.load_dataset(name)[:3]
    except FileNotFoundError as exc:
        print(f"skipped: {exc}")
        return
    X = X.tocsr()
    w0 = np.random.default_rng(0).standard_normal(X.shape[1])
    variants = (("by position", {}), ("one range", {"_MERGE_PRUNE": 1}),
                ("per-query LSA", {"_MAX_MERGE_STATES": 0}))
    for k in (10, None):
        loss = mv.NDCG(X, rel, qid, k=k)
        print(f"{name} ({loss.n_queries} queries, m={X.shape[0]}), k={k}: raw passes per oracle "
              "call (CPU time / a raw pass's, measured in turn), merge with forced orders by "
              "position | with one ratio range for all positions | per-query assignment",
              flush=True)
        for scale in scales:
            w = scale * w0
            f = X @ w
            row = []
            for label, patch in variants:
                if label == "per-query LSA" and scale not in (scales[0], 1e-2):
                    row.append(f"{label}: {'-':>6s}")
                    continue
                saved = {key: getattr(mv, key) for key in patch}
                try:
                    for key, val in patch.items():
                        setattr(mv, key, val)
                    loss.value_and_subgradient(w)  # compile / warm up
                    ratios = []
                    for _ in range(repeat):  # the raw pass measured beside each call
                        raw = cpu_seconds(lambda: (X @ w, X.T @ f), 20)
                        ratios.append(cpu_seconds(lambda: loss.value_and_subgradient(w), 5) / raw)
                finally:
                    for key, val in saved.items():
                        setattr(mv, key, val)
                row.append(f"{label}: {float(np.median(ratios)):6.1f}")
            print(f"  w ~ {scale:g} N(0, 1) (score spread {float(np.std(f)):.3g}): "
                  + "; ".join(row), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["200x5", "1000x20"])
    ap.add_argument("--lams", nargs="+", type=float, default=[1e-2, 1e-6])
    ap.add_argument("--data", nargs="+", default=["gauss", "int"])
    ap.add_argument("--losses", nargs="+", default=["lad", "hinge", "eps", "quantile"])
    ap.add_argument("--regs", nargs="+", default=["l2"])
    ap.add_argument("--methods", nargs="+", default=sorted(SOLVERS))
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--max-time", type=float, default=60.0)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--ndcg", action="store_true")
    args = ap.parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.ndcg:
        ndcg_oracle()
        return
    print(f"{'size':8s} {'data':5s} {'loss':8s} {'reg':3s} {'lam':>6s} "
          + " ".join(f"{m:>15s}" for m in args.methods) + "  worst/best")
    for size in args.sizes:
        m, d = (int(v) for v in size.split("x"))
        for kind in args.data:
            X, y, yb = make_data(kind, m, d)
            for loss, reg, lam in itertools.product(args.losses, args.regs, args.lams):
                cells, times = [], []
                for method in args.methods:
                    J = nsopt.RegularizedRisk(LOSSES[loss](X, y, yb), REGS[reg](), lam=lam)
                    if J.dim and method not in methods_supporting(J):
                        cells.append("n/a")
                        continue
                    # warm up (numba compilation is not the method's time)
                    nsopt.minimize(J, method=method, rtol=args.rtol, max_iter=3)
                    try:
                        secs = math.inf
                        for _ in range(max(args.repeats, 1)):
                            t0 = clock()
                            res = nsopt.minimize(J, method=method, rtol=args.rtol,
                                                 max_time=args.max_time)
                            secs = min(secs, clock() - t0)
                            if not res.success:
                                break  # one run to max_time is enough
                    except ProblemNotSupported:
                        cells.append("n/a")
                        continue
                    ok = res.success
                    cells.append(f"{secs:8.3f}{'' if ok else '(x)'}")
                    times.append(secs if ok else np.inf)
                ratio = max(times) / min(times) if times else np.nan
                print(f"{size:8s} {kind:5s} {loss:8s} {reg:3s} {lam:6.0e} "
                      + " ".join(f"{c:>15s}" for c in cells) + f"  {ratio:8.1f}", flush=True)


if __name__ == "__main__":
    main()

"""The bundle family on a9a, mushrooms and letter.scale: iterations and seconds to a fixed
certified relative gap, for lam in {1e-3, 1e-4, 1e-5, 1e-6}, all in one run.

Columns: BMRM (k = inf with inactive-plane removal), KBundle k = 50, 10, 2, LS-BMRM, proximal
BMRM, and the speed-up of LS-BMRM and proximal BMRM over BMRM (BMRM seconds / method seconds;
below 1 means slower). A run stopped by the iteration or time cap shows as ">N". The papers'
qualitative findings being checked: iterations ordered k = inf <= 50 <= 10 <= 2 ([TVSL10]
Fig. 5), LS-BMRM needs no more iterations than BMRM (Fig. 8), proximal BMRM speeds BMRM up at
small lam ([UF12] Table 2, up to ~10x on their problems).

Usage: python benchmarks/bundles.py [--data a9a mushrooms letter.scale] [--lams ...]
       [--rtol 1e-3] [--max-iter 5000] [--max-time 60]
"""
from __future__ import annotations

import argparse

import numpy as np

import nsopt
from _common import load

METHODS = [
    ("bmrm", "bmrm", {}),
    ("k=50", "kbundle", {"bundle_size": 50}),
    ("k=10", "kbundle", {"bundle_size": 10}),
    ("k=2", "kbundle", {"bundle_size": 2}),
    ("ls-bmrm", "ls-bmrm", {}),
    ("prox", "proximal-bundle", {}),
    ("prox P=16", "proximal-bundle", {"n_models": 16}),
]


def problem(name):
    if name == "letter.scale":
        X, y = nsopt.io.load_dataset(name)[:2]
        loss = nsopt.losses.MulticlassHinge(X, y.astype(int) - 1)
    else:
        X, y = load(name)
        loss = nsopt.losses.Hinge(X, y)
    return loss


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["a9a", "mushrooms", "letter.scale"])
    ap.add_argument("--lams", type=float, nargs="+", default=[1e-3, 1e-4, 1e-5, 1e-6])
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--max-iter", type=int, default=5000)
    ap.add_argument("--max-time", type=float, default=60.0)
    args = ap.parse_args(argv)
    if nsopt.io.find_data_dir() is None:
        print("skipped: no data directory (../shared/data or NSOPT_DATA)")
        return
    labels = [m[0] for m in METHODS]
    print(f"certified relative gap {args.rtol:g}; cells: iterations / seconds")
    print(f"{'data':>13} {'lam':>7} " + " ".join(f"{c:>14}" for c in labels)
          + f" {'LS speedup':>10} {'prox speedup':>12} {'P16 speedup':>12}")
    for name in args.data:
        loss = problem(name)
        nsopt.minimize(nsopt.RegularizedRisk(loss, lam=1e-2), max_iter=2)  # compile kernels
        for lam in args.lams:
            J = nsopt.RegularizedRisk(loss, lam=lam)
            cells, secs = [], {}
            for label, method, opts in METHODS:
                res = nsopt.minimize(J, method=method, rtol=args.rtol, max_iter=args.max_iter,
                                     max_time=args.max_time, **opts)
                mark = "" if res.success else ">"
                cells.append(f"{mark}{res.nit}/{res.time:.2f}s")
                secs[label] = res.time if res.success else np.inf
            ls = secs["bmrm"] / secs["ls-bmrm"]
            px = secs["bmrm"] / secs["prox"]
            p16 = secs["bmrm"] / secs["prox P=16"]
            print(f"{name:>13} {lam:>7.0e} " + " ".join(f"{c:>14}" for c in cells)
                  + f" {ls:>10.2f} {px:>12.2f} {p16:>12.2f}")


if __name__ == "__main__":
    main()

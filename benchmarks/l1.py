r"""L1-regularized linear models: BMRM's LP master before and after its stabilisation (issue 11).

BMRM with the L1 norm solves an LP master problem; unstabilised ([TVSL10] Alg. 2, option
``line_search=False``, printed ``bmrm-kelley``) it is Kelley's cutting-plane method and stalls.
``bmrm`` (its default ``line_search="auto"``: OCAS's line search and query point on an LP master)
is set against ``newton-cd``, ``ls-bmrm``, ``proximal-bundle``, ``sublbfgs`` and the default
method, and the
peers Cyanure (proves a duality gap; ``n_threads=1``, no intercept) and glum (logistic only,
uncertified), exactly as in ``benchmarks/peers.py`` (whose cell runner, timing and reference
bracket this script reuses; see its docstring for what is timed and how peers are judged).

Problems: ``logistic-l1`` and ``sqhinge-l1`` on a9a at lam 1e-4 and 1e-5 by default; levels
1e-3 and 1e-4 (relative gaps, certified for nsopt).

Measured (a9a, ``--methods default bmrm --max-time 30``, one run each on a 2-core machine
shared with other jobs, so seconds are noisy: the raw pass took 0.85-3.7 ms across runs;
Cyanure's time from the same run). Certified seconds / iterations, ratio to Cyanure:

=================  ============================  ============================
cell, level        before (LP from scratch,      after (hot LP, secant line
                   generic line search)          search, honest certifier)
=================  ============================  ============================
logistic 1e-4 1e-3 6.61 s, 91 it, 85 pass/it,    2.81 s, 91 it, 14 pass/it, 4.7x
                   4.8x (Cyanure 1.39 s)         (Cyanure 0.60 s)
logistic 1e-4 1e-4 22.9 s, 152 it, 11x           4.40 s, 149 it, 6.2x
logistic 1e-5 1e-3 14.9 s, 160 it, 20x           3.48 s, 154 it, 4.0x
logistic 1e-5 1e-4 22.1 s, 225 it, 36x           5.49 s, 227 it, 6.2x
sqhinge 1e-4 1e-3  8.32 s, 101 it, 22x           1.60 s, 102 it, 2.7x
sqhinge 1e-4 1e-4  11.4 s, 170 it, 29x           2.76 s, 171 it, 4.8x
sqhinge 1e-5 1e-3  18.9 s, 187 it, 46x           3.33 s, 188 it, 4.2x
sqhinge 1e-5 1e-4  26.2 s, 284 it, 43x           5.64 s, 281 it, 7.2x
=================  ============================  ============================

An iteration went from 80-180 raw passes to 7-14 (the master LP 12-38% of the time); the
iteration counts are unchanged, and they, not the cost of an iteration, are now what keeps
the L1 path 3-7x behind Cyanure (glum: 0.2-0.9 s on logistic).

Compiled line kernels (``ScalarLine``: the derivative in one loop over the kept scores, no
scores allocated, no log1p for the logistic loss; the value likewise): ``--methods default``,
two before/after pairs, each pair run back to back (load 3.5-5); certified seconds, time per
iteration and ratio to Cyanure from the same run. Iterations and gaps are unchanged; Cyanure's
own time moved 0.17-0.67 s between runs, so the ratios carry that noise, the times per
iteration less of it:

==================  ==============================  =============================
cell, level         before (pair 1 ; pair 2)        after (pair 1 ; pair 2)
==================  ==============================  =============================
logistic 1e-4 1e-3  12.3 ; 13.2 ms/it, 4.2x ; 5.1x  9.1 ; 10.7 ms/it, 1.8x ; 3.6x
logistic 1e-4 1e-4  16.2 ; 14.8 ms/it, 8.8x ; 8.4x  9.7 ; 10.7 ms/it, 3.4x ; 4.8x
logistic 1e-5 1e-3  13.2 ; 17.7 ms/it, 3.3x ; 7.5x  12.2 ; 8.6 ms/it, 6.8x ; 5.2x
logistic 1e-5 1e-4  12.0 ; 12.8 ms/it, 4.1x ; 8.0x  12.4 ; 9.1 ms/it, 9.3x ; 8.3x
sqhinge 1e-4 1e-3   16.0 ; 7.9 ms/it, 2.5x ; 2.6x   5.9 ; 4.9 ms/it, 3.2x ; 3.0x
sqhinge 1e-4 1e-4   16.7 ; 10.5 ms/it, 10x ; 6.1x   5.9 ; 5.1 ms/it, 5.5x ; 5.1x
sqhinge 1e-5 1e-3   17.2 ; 13.0 ms/it, 5.3x ; 5.8x  6.7 ; 6.6 ms/it, 4.1x ; 2.4x
sqhinge 1e-5 1e-4   27.2 ; 14.2 ms/it, 12x ; 9.0x   7.8 ; 9.3 ms/it, 8.6x ; 7.6x
==================  ==============================  =============================

One line derivative on a9a (32561 scores, same machine): logistic 1.04-1.18 ms -> 0.46-0.55
ms, squared hinge 0.19 ms -> 0.09 ms (its snapping to the kinks no longer allocates). A
search makes 4-7 derivative passes and one value pass; the value pass stays (the search
nearly always ends on a secant root it has not evaluated: 141 of 150 searches on logistic
1e-4), so a fused value-and-derivative pass (``ScalarLine.value_and_derivative``) would save
nothing there and is not used by the search (tried: fusing on steps that land on an L1 kink,
where the search often stops, took 5 fused passes to save 1 value pass on logistic 1e-4 1e-4,
3 for none on squared hinge; a fused pass costs 1.1-1.2 ms against 0.5 + 1.0 for the two).

**newton-cd** (``nsopt.solvers.NewtonCD``, the default for these problems since it exists):
Newton steps on the quadratic model plus the L1 term, certified by the scaled dual point.
``--methods default newton-cd bmrm``, one run, load 18-21 (raw pass 3.5 ms); certified
seconds (Newton steps), ratio to Cyanure and to glum from the same run:

==================  ============================  ============
cell, level         newton-cd, x Cyanure / glum   bmrm
==================  ============================  ============
logistic 1e-4 1e-3  0.42 s (6), 0.18x / 0.49x     3.13 s (91)
logistic 1e-4 1e-4  0.47 s (7), 0.16x / 0.55x     5.35 s (149)
logistic 1e-5 1e-3  0.83 s (8), 0.25x / 0.78x     7.13 s (154)
logistic 1e-5 1e-4  0.77 s (8), 0.25x / 0.34x     11.9 s (227)
sqhinge 1e-4 1e-3   0.46 s (6), 0.21x             2.60 s (102)
sqhinge 1e-4 1e-4   0.43 s (6), 0.20x             4.81 s (171)
sqhinge 1e-5 1e-3   0.77 s (9), 0.18x             7.02 s (188)
sqhinge 1e-5 1e-4   0.79 s (10), 0.19x            13.6 s (281)
==================  ============================  ============

Usage: python benchmarks/l1.py [--sets a9a] [--lams 1e-4 1e-5] [--problems logistic-l1 ...]
       [--methods default bmrm bmrm-kelley ...] [--max-time 20] [--out FILE.csv|.md]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the cell runner of benchmarks/peers.py)

import nsopt  # noqa: E402

#: name -> (registered method, its options): the variants timed here
VARIANTS = {
    "bmrm-kelley": ("bmrm", {"line_search": False}),  # before: Alg. 2 as published (Kelley)
}

METHODS = ["default", "newton-cd", "bmrm", "bmrm-kelley", "ls-bmrm", "proximal-bundle", "sublbfgs"]


def make_run(method, J, level, max_time):
    """:func:`peers.make_run` that also knows the :data:`VARIANTS`."""
    if method in VARIANTS:
        name, opts = VARIANTS[method]
        res = nsopt.minimize(J, method=name, rtol=level, max_time=max_time, **opts)
        return res
    return _plain_make_run(method, J, level, max_time)


_plain_make_run = peers.make_run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", nargs="+", default=["a9a"])
    ap.add_argument("--lams", nargs="+", type=float, default=[1e-4, 1e-5])
    ap.add_argument("--problems", nargs="+", default=["logistic-l1", "sqhinge-l1"])
    ap.add_argument("--methods", nargs="+", default=METHODS)
    ap.add_argument("--peers", nargs="+", default=["cyanure", "glum"])
    ap.add_argument("--levels", nargs="+", type=float, default=[1e-3, 1e-4])
    ap.add_argument("--max-time", type=float, default=20.0)
    ap.add_argument("--ref-time", type=float, default=60.0)
    ap.add_argument("--no-cvxpy", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    peers.make_run = make_run  # the cell runner calls it by its module name
    rows = []
    for sname in args.sets:
        data = peers.load(sname)
        if data is None:
            continue
        X, y = data
        raw = peers.raw_pass_seconds(X)
        print(f"== {sname}: {X.shape[0]} x {X.shape[1]}, one raw pass {raw * 1e3:.2f} ms")
        for pname in args.problems:
            for lam in args.lams:
                J = peers.problem(X, y, pname, lam)
                peers.warm_up(J, [m for m in args.methods if m not in VARIANTS])
                rows += peers._cell(sname, pname, lam, J, X, y, raw, args.methods,
                                    args.peers, args.levels, args)
    if args.out:
        peers._write(args.out, rows, [])
    return rows


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()

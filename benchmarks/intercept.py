"""The master problem with an intercept: warm-started path solve against the interior point.

For BMRM and LS-BMRM on hinge + L2 with ``fit_intercept=True`` (a synthetic 20000 x 300 data
set with an offset to find, and a9a when ``/work/shared/data`` holds it), one run with each
backend of :class:`nsopt.inner.InterceptQP`:

* ``path``: the default with one intercept, a root finding on the intercept whose every step
  is a warm-started simplex QP (SMO + face polish, :class:`nsopt.inner.QPSimplex`);
* ``ipm``: the box QP by Clarabel, not warm-started (the backend before the path solve),

and, as the reference, the same method without intercept (``fit_intercept=False``). Each
method runs with its default plane policy (``drop``: planes idle for 10 iterations are
removed, a few dozen are kept) and with every plane kept (``all``: ``remove_inactive=None``,
the bundle grows by one plane per iteration, where the interior point's cost per solve grows
with the cube of the bundle while the warm path solve stays a few pair updates).

Columns: iterations, total seconds, master seconds, mean master milliseconds per iteration,
planes at the end, final certified relative gap. The ratio line gives ipm / path.

Usage: python benchmarks/intercept.py [--lam 1e-4] [--rtol 1e-3] [--max-iter 300]
       [--data synthetic a9a]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import nsopt
import nsopt.inner as inner
from nsopt.inner import QPSimplex
from nsopt.inner.intercept import InterceptQP


def synthetic(m=20000, d=300, seed=0):
    """Gaussian features shifted by 0.5, labels of a noisy linear rule with an offset."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d)) + 0.5
    w = rng.standard_normal(d) / np.sqrt(d)
    z = X @ w + 0.3 * rng.standard_normal(m)
    y = np.where(z > np.quantile(z, 0.7), 1.0, -1.0)
    return X, y


def load(name):
    if name == "synthetic":
        return synthetic()
    try:
        X, y = nsopt.io.load_dataset(name)[:2]
    except FileNotFoundError as exc:
        print(f"{name} skipped: {exc}")
        return None
    labels = np.unique(y)
    return X.tocsr(), np.where(y == labels[-1], 1.0, -1.0)


class Clock:
    """Wall time of the master solves of a run."""

    seconds = 0.0


def timed(cls):
    """``cls`` (an InnerSolver) with its ``solve`` timed into :class:`Clock`."""

    class Timed(cls):
        def solve(self, *args, **kwargs):
            t0 = time.perf_counter()
            try:
                return super().solve(*args, **kwargs)
            finally:
                Clock.seconds += time.perf_counter() - t0

    return Timed


def run(X, y, lam, method, backend, rtol, max_iter, **options):
    Clock.seconds = 0.0
    saved = dict(inner._AUTO)
    inner._AUTO["intercept-qp"] = lambda: timed(InterceptQP)(method=backend or "auto")
    inner._AUTO["qp"] = timed(QPSimplex)
    try:
        J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam,
                                  fit_intercept=backend is not None)
        t0 = time.perf_counter()
        res = nsopt.minimize(J, method=method, rtol=rtol, max_iter=max_iter, **options)
        total = time.perf_counter() - t0
    finally:
        inner._AUTO.update(saved)
    master = Clock.seconds
    planes = res.info.get("planes")
    return dict(nit=res.nit, total=total, master=master,
                per_iter=1e3 * master / max(res.nit, 1),
                planes=0 if planes is None else planes[1].size, gap=res.relative_gap,
                ok=res.certificate.check(J) > -np.inf)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lam", type=float, default=1e-4)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--max-iter", type=int, default=300)
    ap.add_argument("--data", nargs="+", default=["synthetic", "a9a"])
    args = ap.parse_args(argv)
    head = (f"{'data':>9} {'method':>8} {'planes':>7} {'master':>10} {'iter':>5} {'total s':>8} "
            f"{'master s':>8} {'ms/iter':>8} {'planes':>6} {'rel gap':>8} check")
    print(f"lam = {args.lam:g}, rtol = {args.rtol:g}")
    print(head)
    for name in args.data:
        data = load(name)
        if data is None:
            continue
        X, y = data
        for method, keep in (("bmrm", "drop"), ("ls-bmrm", "drop"), ("bmrm", "all")):
            options = {"remove_inactive": None} if keep == "all" else {}
            rows = {}
            for label, backend in (("path", "path"), ("ipm", "ipm"), ("no icpt", None)):
                r = rows[label] = run(X, y, args.lam, method, backend, args.rtol, args.max_iter,
                                      **options)
                print(f"{name:>9} {method:>8} {keep:>7} {label:>10} {r['nit']:5d} {r['total']:8.2f} "
                      f"{r['master']:8.2f} {r['per_iter']:8.2f} {r['planes']:6d} "
                      f"{r['gap']:8.1e} {r['ok']}")
                sys.stdout.flush()
            p, i = rows["path"], rows["ipm"]
            print(f"{name:>9} {method:>8} {keep:>7} {'ipm/path':>10} {'':>5} {i['total'] / p['total']:8.2f} "
                  f"{i['master'] / max(p['master'], 1e-12):8.2f} "
                  f"{i['per_iter'] / max(p['per_iter'], 1e-12):8.2f}")


if __name__ == "__main__":
    main()

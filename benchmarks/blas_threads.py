r"""BLAS threads in nsopt's runs: where they cost and where they pay (issues 10 and 11).

OpenBLAS's worker threads busy-wait for a while after each threaded call: a solver loop that
alternates small BLAS calls (level 1-2, a 30 x 30 ``eigh``) with single-threaded compiled
kernels finds its core taken by a spinning worker. Large level-3 blocks (a Gram matrix
``B^T B`` with thousands of columns) are where threads can gain.

Each case runs ``--repeats`` times per setting, the settings alternating (ABAB, then BABA),
all in one process and one run; printed per setting: the median wall seconds and the median
*process CPU* seconds (``time.process_time``: every thread of the process, so spinning
workers count even when the machine is loaded), and the ratios to the first setting.

Settings: ``threads`` (``blas_threads="keep"``: BLAS as configured, where OpenBLAS starts
one thread per core, in the solvers' own one-thread blocks too: the Newton steps, the
dual-point certifier), ``one`` (``threadpoolctl.threadpool_limits(1, "blas")`` around the
run) and ``auto`` (nsopt's default, ``blas_threads="auto"``).

Cases: the any-oracle functions of ``benchmarks/any_oracle.py`` (with the box of that
script, level-bundle and proximal-bundle to a certified ``--rtol`` or ``--max-iter``
iterations: the same work in every setting), dcd and proximal-bundle
on the L2 hinge and logistic risks of ``benchmarks/peers.py`` (a9a, letter), and large dense
blocks: ls-bmrm on dense logistic risks of 1e6 to 2e7 entries, newton-cg on a dense
4000 x 2000 logistic risk (its Gram mode), and a bare ``B^T B`` (numpy's syrk) and Cholesky at
that size (no nsopt run: there ``auto`` is ``threads``).

Usage: python benchmarks/blas_threads.py [--cases ...] [--repeats 3] [--rtol 1e-6]
       [--max-iter 300] [--settings threads auto one]
Do not set OPENBLAS_NUM_THREADS: the script compares the settings itself.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import threadpoolctl

import nsopt

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))


def _any_oracle_case(fname, method, rtol, max_iter):
    import any_oracle as AO

    built = AO.build(fname, "full")
    if built is None:
        return None
    f, expression = built
    _, _, x_ref = AO.cvxpy_solve(f, expression, None, "CLARABEL")
    region = AO.Region("box", x_ref)
    options = AO.region_options(method, region)
    return lambda **kw: nsopt.minimize(f, method=method, rtol=rtol, max_iter=max_iter, **options,
                                       **kw)


def _peers_case(sname, pname, method, lam, rtol, max_iter):
    import peers as P

    with contextlib.redirect_stdout(None):
        data = P.load(sname)
    if data is None:
        return None
    J = P.problem(*data, pname, lam)
    return lambda **kw: nsopt.minimize(J, method=method, rtol=rtol, max_iter=max_iter, **kw)


def _dense_newton(m=4000, d=2000):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, d)) / np.sqrt(d)
    y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(m) > 0, 1.0, -1.0)
    J = nsopt.RegularizedRisk(nsopt.losses.Logistic(X, y), lam=1e-4)
    return lambda **kw: nsopt.minimize(J, method="newton-cg", rtol=1e-6, model="gram", **kw)


def _dense_risk(m, d, method, rtol=1e-4, max_iter=300):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((m, d)) / np.sqrt(d)
    y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(m) > 0, 1.0, -1.0)
    J = nsopt.RegularizedRisk(nsopt.losses.Logistic(X, y), lam=1e-3)
    return lambda **kw: nsopt.minimize(J, method=method, rtol=rtol, max_iter=max_iter, **kw)


def _syrk(m=4000, d=2000):
    B = np.random.default_rng(0).standard_normal((m, d))

    def run(**kw):
        H = B.T @ B
        H[np.diag_indices_from(H)] += 1.0
        np.linalg.cholesky(H)
    return run


def cases(rtol, max_iter):
    out = {}
    for fname in ("l1-fit", "max-affine", "chebyshev", "max-eigenvalue", "hinge-synthetic"):
        for method in ("level-bundle", "proximal-bundle"):
            out[f"{fname} {method}"] = (lambda fname=fname, method=method:
                                        _any_oracle_case(fname, method, rtol, max_iter))
    for sname in ("letter", "a9a"):
        for pname in ("hinge-l2", "logistic-l2"):
            for method in ("dcd", "proximal-bundle"):
                out[f"{sname} {pname} {method}"] = (
                    lambda sname=sname, pname=pname, method=method:
                    _peers_case(sname, pname, method, 1e-4, rtol, max_iter))
    out["a9a logistic-l1 newton-cd"] = lambda: _peers_case("a9a", "logistic-l1", "newton-cd",
                                                            1e-4, 1e-4, max_iter)
    for m, d in ((2000, 500), (8000, 1000), (20000, 1000)):
        out[f"dense {m}x{d} logistic ls-bmrm"] = (lambda m=m, d=d:
                                                  _dense_risk(m, d, "ls-bmrm", max_iter=100))
    out["dense 4000x2000 logistic newton-cg"] = _dense_newton
    out["dense 4000x2000 syrk+cholesky"] = _syrk
    return out


def timed(run, setting):
    kw = {"blas_threads": "auto" if setting == "auto" else "keep"}
    ctx = (threadpoolctl.threadpool_limits(limits=1, user_api="blas") if setting == "one"
           else contextlib.nullcontext())
    with ctx:
        c0, t0 = time.process_time(), time.perf_counter()
        res = run(**kw)
        t1, c1 = time.perf_counter(), time.process_time()
    status = getattr(getattr(res, "status", None), "value", "")
    return t1 - t0, c1 - c0, status


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="*", default=None, help="substrings of case names")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=300,
                    help="iteration cap: the same work in every setting (never a time cap)")
    ap.add_argument("--settings", nargs="*", default=["threads", "auto", "one"],
                    choices=["threads", "auto", "one"])
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print("BLAS:", [(i["prefix"], i["num_threads"]) for i in threadpoolctl.threadpool_info()
                    if i["user_api"] == "blas"])
    settings = args.settings
    print(f"{'case':44s} " + " ".join(f"{s + ' wall':>11s} {s + ' cpu':>10s}" for s in settings)
          + "   cpu ratios / wall ratios to " + settings[0])
    for name, make in cases(args.rtol, args.max_iter).items():
        if args.cases and not any(c in name for c in args.cases):
            continue
        run = make()
        if run is None:
            print(f"{name:44s} skipped (no data)")
            continue
        timed(run, settings[0])   # warm-up: numba compilation, caches
        walls = {s: [] for s in settings}
        cpus = {s: [] for s in settings}
        statuses = set()
        for r in range(args.repeats):
            order = settings if r % 2 == 0 else settings[::-1]
            for s in order:
                w, c, st = timed(run, s)
                walls[s].append(w)
                cpus[s].append(c)
                statuses.add(st)
        wm = {s: statistics.median(walls[s]) for s in settings}
        cm = {s: statistics.median(cpus[s]) for s in settings}
        base = settings[0]
        print(f"{name:44s} " + " ".join(f"{wm[s]:11.3f} {cm[s]:10.3f}" for s in settings)
              + "   " + " ".join(f"{cm[s] / cm[base]:.2f}" for s in settings[1:])
              + " / " + " ".join(f"{wm[s] / wm[base]:.2f}" for s in settings[1:])
              + f"   {','.join(sorted(statuses))}", flush=True)


if __name__ == "__main__":
    main()

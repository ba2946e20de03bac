r"""Where ``dcd`` beats ``ls-bmrm``: the measurement behind the default method's rule (issue 11).

For each data set, L2 loss (hinge, squared hinge, logistic; no intercept) and lam, both
methods run to a *proven* relative gap ``rtol`` (the default 1e-3, and ``--rtols``); printed:
the conditioning ``kappa = max_i c_i ||x_i||^2 / lam`` (liblinear's :math:`C R^2` for
uniform weights :math:`c_i = 1/m`; :func:`nsopt.minimize.dcd_conditioning`), seconds and
iterations / epochs of each, their ratio dcd / ls-bmrm (below 1: dcd faster), and which
method ``nsopt.minimize`` picks by default (:func:`nsopt.minimize.default_method`).

Times are CPU seconds of the whole ``minimize`` call (run with ``OMP_NUM_THREADS=1
NUMBA_NUM_THREADS=1``: on a shared machine wall time swings with the load). Short runs are repeated (up to 3 times while the total stays under 0.5 s) and the smallest
time is kept; numba's compilation is done by a warm-up run per data set and left out. A run not certified within ``--max-time`` is marked
``*`` and its time is a lower bound.

Data sets (``--sets``): ``a9a``, ``mushrooms``, ``letter`` (``letter.scale``, class 1 against
the other 25) from the shared data folder, skipped when absent.

Usage: OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/default_method.py [--sets a9a mushrooms letter]
       [--losses Hinge SquaredHinge Logistic] [--lams 1e-3 1e-4 1e-5 1e-6] [--rtols 1e-3]
       [--max-time 20]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (data loading and short-run repetition)

import nsopt  # noqa: E402
from nsopt.minimize import dcd_conditioning, default_method  # noqa: E402

METHODS = ("dcd", "ls-bmrm")


def run(J, method, rtol, max_time):
    """``(CPU seconds, Result)``: the smallest of up to three short runs. CPU time
    (``time.process_time``; run with one thread) is the steadier measure on a shared machine."""
    def one():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c0 = time.process_time()
            r = nsopt.minimize(J, method=method, rtol=rtol, max_time=max_time)
            cpu = time.process_time() - c0
        return cpu, r
    return peers.repeat_short(one)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", nargs="+", default=["a9a", "mushrooms", "letter"])
    ap.add_argument("--losses", nargs="+", default=["Hinge", "SquaredHinge", "Logistic"])
    ap.add_argument("--lams", nargs="+", type=float, default=[1e-3, 1e-4, 1e-5, 1e-6])
    ap.add_argument("--rtols", nargs="+", type=float, default=[1e-3])
    ap.add_argument("--max-time", type=float, default=20.0)
    args = ap.parse_args(argv)
    rows = []
    print(f"{'data':<9} {'loss':<12} {'lam':>6} {'kappa':>9} {'rtol':>6} | {'dcd cpu':>8} "
          f"{'epochs':>6} | {'lsb cpu':>9} {'it':>5} | {'dcd/lsb':>7} | default")
    for sname in args.sets:
        data = peers.load(sname)
        if data is None:
            continue
        X, y = data
        for lname in args.losses:
            loss = getattr(nsopt.losses, lname)(X, y)
            for method in METHODS:  # compile the kernels outside the timings
                nsopt.minimize(nsopt.RegularizedRisk(loss, lam=1e-2), method=method, max_iter=3)
            for lam in args.lams:
                J = nsopt.RegularizedRisk(loss, lam=lam)
                kappa = dcd_conditioning(J)
                chosen = default_method(J)
                for rtol in args.rtols:
                    res = {m: run(J, m, rtol, args.max_time) for m in METHODS}
                    (td, rd), (tl, rl) = res["dcd"], res["ls-bmrm"]
                    fd = "" if rd.success else "*"
                    fl = "" if rl.success else "*"
                    ratio = td / tl
                    print(f"{sname:<9} {lname:<12} {lam:>6.0e} {kappa:>9.3g} {rtol:>6.0e} | "
                          f"{td:>7.3f}{fd:1} {rd.info['epochs']:>6d} | {tl:>8.3f}{fl:1} "
                          f"{rl.nit:>5d} | {ratio:>7.2f} | {chosen}", flush=True)
                    rows.append(dict(data=sname, loss=lname, lam=lam, kappa=kappa, rtol=rtol,
                                     dcd=td, dcd_ok=rd.success, epochs=rd.info["epochs"],
                                     lsbmrm=tl, lsbmrm_ok=rl.success, it=rl.nit, ratio=ratio,
                                     default=chosen))
    _summary(rows)
    return rows


def _summary(rows):
    """The threshold on kappa that the measured cells support: the largest kappa at which
    dcd won, the smallest at which it lost."""
    won = [r["kappa"] for r in rows if r["ratio"] < 1 and r["dcd_ok"]]
    lost = [r["kappa"] for r in rows if r["ratio"] >= 1 or not r["dcd_ok"]]
    print(f"\ndcd faster at kappa in {sorted({float(f'{k:.3g}') for k in won})}")
    print(f"ls-bmrm faster at kappa in {sorted({float(f'{k:.3g}') for k in lost})}")
    wrong = [r for r in rows if (r["default"] == "dcd") != (r["ratio"] < 1)]
    print(f"cells where the default picked the slower method: {len(wrong)} of {len(rows)}")
    for r in wrong:
        print(f"  {r['data']} {r['loss']} lam {r['lam']:g} rtol {r['rtol']:g}: kappa "
              f"{r['kappa']:.3g}, dcd/ls-bmrm {r['ratio']:.2f}, default {r['default']}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()

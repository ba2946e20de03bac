"""Which method certifies a Crammer-Singer multiclass hinge + L2 first (the default's question
for multiclass problems, issue 11).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
    NSOPT_DATA=../shared/data python benchmarks/multiclass.py [--lams 1e-2 1e-3 1e-4 1e-5]
        [--rtol 1e-3] [--max-time 30] [--methods ls-bmrm bmrm proximal-bundle excessive-gap]
        [--classes 3 5 10 18 26]

Data: letter (letter.scale, 26 classes, 15000 x 16) from the shared data folder when present,
and synthetic problems with 5 classes (2000 x 20) and 3 classes (300 x 5); with ``--classes``,
letter's rows of its first k classes and a synthetic 4000 x 16 set with k classes, per k. For each lam: CPU
seconds of the whole ``minimize`` call to a proven relative gap ``--rtol`` (``*``: not
certified within ``--max-time``, the time is a lower bound), iterations in parentheses, and the
method ``nsopt.minimize`` picks by default. numba's compilation is left out (a short warm-up
run per method and problem).
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.minimize import default_method


def synthetic(m, d, k, seed):
    """Labels from a random linear model plus noise (every class present)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = np.argmax(X @ rng.standard_normal((d, k)) + 0.5 * rng.standard_normal((m, k)), axis=1)
    y[:k] = np.arange(k)
    return X, y


def data_sets(classes=None):
    """letter and two synthetic sets; with ``classes`` (a list of k), instead letter's rows of
    its first k classes and a synthetic 4000 x 16 set with k classes, for each k: the number
    of classes varied at a fixed kind of data."""
    sets = {}
    data_dir = nsopt.io.find_data_dir()
    path = None if data_dir is None else data_dir / "letter.scale.xz"
    letter = None
    if path is not None and path.is_file():
        X, y = nsopt.io.load_svmlight(path, n_features=16)[:2]
        letter = (X, y.astype(int) - 1)
    if classes:
        for k in classes:
            if letter is not None:
                keep = letter[1] < k
                sets[f"letter, first {k} (m={int(keep.sum())})"] = (letter[0][keep],
                                                                   letter[1][keep])
            sets[f"synthetic 4000x16 (k={k})"] = synthetic(4000, 16, k, k)
        return sets
    if letter is not None:
        sets["letter (k=26)"] = letter
    sets["synthetic 2000x20 (k=5)"] = synthetic(2000, 20, 5, 0)
    sets["synthetic 300x5 (k=3)"] = synthetic(300, 5, 3, 1)
    return sets


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lams", type=float, nargs="+", default=[1e-2, 1e-3, 1e-4, 1e-5])
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--max-time", type=float, default=30.0)
    parser.add_argument("--classes", type=int, nargs="+", default=None,
                        help="instead: letter's first k classes and a synthetic set, per k")
    parser.add_argument("--methods", nargs="+",
                        default=["ls-bmrm", "bmrm", "proximal-bundle", "excessive-gap"])
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"rtol {args.rtol}, CPU seconds (iterations); * = not certified in {args.max_time} s")
    print(f"{'problem':<34} {'lam':>7} {'default':<16} " + " ".join(f"{m:>18}" for m in args.methods))
    for name, (X, y) in data_sets(args.classes).items():
        for lam in args.lams:
            J = nsopt.RegularizedRisk(L.MulticlassHinge(X, y), R.L2(), lam)
            cells = []
            for method in args.methods:
                nsopt.minimize(J, method=method, rtol=0.1, max_iter=3)   # compile
                t0 = time.process_time()
                res = nsopt.minimize(J, method=method, rtol=args.rtol, max_time=args.max_time)
                mark = "" if res.success else "*"
                cells.append(f"{time.process_time() - t0:.2f}{mark} ({res.nit})")
            print(f"{name:<34} {lam:>7.0e} {default_method(J):<16} "
                  + " ".join(f"{c:>18}" for c in cells), flush=True)


if __name__ == "__main__":
    main()

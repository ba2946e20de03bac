"""Time to read a LIBSVM file: ``nsopt.io.load_svmlight`` against scikit-learn's
``load_svmlight_file`` (Cython) on the shared data sets, decompression included for both.

    NSOPT_DATA=../shared/data python benchmarks/parsing.py [--sets a9a mushrooms] [--repeats 5]

Prints the best of ``--repeats`` wall times per set and the ratio nsopt / scikit-learn from the
same run. The files are decompressed into memory once per call (both readers get the same bytes
object), so the ratio compares parsing, not disk speed.
"""
from __future__ import annotations

import argparse
import io
import lzma

import numpy as np
from _common import best_time

import nsopt


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["a9a", "mushrooms", "letter.scale"])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    data_dir = nsopt.io.find_data_dir()
    if data_dir is None:
        print("skipped: no data folder (set NSOPT_DATA)")
        return
    try:
        from sklearn.datasets import load_svmlight_file
    except ImportError:
        load_svmlight_file = None
    print(f"{'set':<14} {'rows':>7} {'nnz':>9} {'nsopt (s)':>10} {'sklearn (s)':>12} {'ratio':>6}")
    for name in args.sets:
        path = data_dir / f"{name}.xz"
        if not path.is_file():
            print(f"{name:<14} not present")
            continue
        raw = lzma.decompress(path.read_bytes())
        X, y = nsopt.io.load_svmlight(io.BytesIO(raw))[:2]
        ours = best_time(lambda: nsopt.io.load_svmlight(io.BytesIO(raw)), args.repeats)
        theirs = np.nan
        if load_svmlight_file is not None:
            X2, y2 = load_svmlight_file(io.BytesIO(raw))
            assert X2.shape[0] == X.shape[0] and X2.nnz == X.nnz, "the readers disagree"
            theirs = best_time(lambda: load_svmlight_file(io.BytesIO(raw)), args.repeats)
        print(f"{name:<14} {X.shape[0]:>7} {X.nnz:>9} {ours:>10.3f} {theirs:>12.3f} "
              f"{ours / theirs:>6.2f}")


if __name__ == "__main__":
    main()

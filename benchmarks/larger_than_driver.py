"""A data set larger than the driver's memory, solved to a certified gap on Dask (issue 12).

The parent process starts a ``LocalCluster`` (worker processes with no limit of their own),
then runs the driver in a child process whose data segment is capped with
``RLIMIT_DATA`` (``--driver-gb``, default 1.5 GB: it bounds every anonymous mapping the
driver makes, numpy arrays included). The driver builds the problem with
:func:`nsopt.distributed.from_builders`: each shard's dense rows are generated on its worker
(``--m`` x ``--d`` float64 in all, default 4e6 x 100 = 3.2 GB, twice the cap), solves it to
a certified relative gap and checks the certificate on the workers. It prints the data size,
the cap, proof that the cap is real (allocating the data in the driver raises MemoryError),
the driver's peak resident memory, and the run.

Usage: ``python benchmarks/larger_than_driver.py [--m 4000000] [--d 100] [--shards 8]
[--driver-gb 1.5] [--rtol 1e-3] [--method bmrm]``.
"""
from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import argparse  # noqa: E402
import functools  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def dense_shard(m, d, seed):
    """Runs on a worker: ``m`` dense rows of a noisy linear classification problem."""
    import nsopt

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    w = np.random.default_rng(12345).standard_normal(d)  # the same truth in every shard
    y = np.where(X @ w + 2.0 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return nsopt.losses.Hinge(X, y)


def driver(args):
    import nsopt
    import nsopt.distributed as nd
    from distributed import Client

    cap = resource.getrlimit(resource.RLIMIT_DATA)[0]
    data_bytes = args.m * args.d * 8
    print(f"data: {args.m} x {args.d} dense float64 = {data_bytes / 2**30:.2f} GiB; driver "
          f"RLIMIT_DATA = {cap / 2**30:.2f} GiB", flush=True)
    try:
        np.ones((args.m, args.d))
        print("the cap is NOT real: the driver could allocate the data", flush=True)
        return 1
    except MemoryError:
        print("the cap is real: allocating the data in the driver raises MemoryError", flush=True)
    sizes = np.diff(np.linspace(0, args.m, args.shards + 1).astype(int))
    with Client(args.driver) as client:
        t0 = time.perf_counter()
        J = nd.from_builders([functools.partial(dense_shard, int(mk), args.d, k)
                              for k, mk in enumerate(sizes)], lam=args.lam, client=client)
        built = time.perf_counter() - t0
        res = nsopt.minimize(J, method=args.method, rtol=args.rtol, max_time=args.max_time)
        t1 = time.perf_counter()
        bound = res.certificate.check(J)
        checked = time.perf_counter() - t1
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"built {args.shards} shards on the workers in {built:.1f} s", flush=True)
    print(f"{args.method}: status {res.status.value}, {res.nit} iterations, {res.time:.1f} s, "
          f"fun {res.fun:.8g}, lower bound {res.lower_bound:.8g}, relative gap "
          f"{res.gap / abs(res.fun):.2e} (rtol {args.rtol:g})")
    print(f"certificate.check on the workers: bound {bound:.8g} ({checked:.1f} s)")
    print(f"driver peak resident memory: {peak / 2**30:.2f} GiB "
          f"({peak / data_bytes:.1%} of the data)")
    return 0 if res.success else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=4_000_000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--driver-gb", type=float, default=1.5)
    ap.add_argument("--lam", type=float, default=1e-4)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--method", default="bmrm")
    ap.add_argument("--max-time", type=float, default=600.0)
    ap.add_argument("--driver", default=None, help=argparse.SUPPRESS)  # the child's role
    args = ap.parse_args()
    if args.driver is not None:
        return driver(args)

    from distributed import LocalCluster

    with LocalCluster(n_workers=args.workers, processes=True, threads_per_worker=1,
                      dashboard_address=None, memory_limit=0) as cluster:
        cap = int(args.driver_gb * 2**30)

        def limit():  # in the child only: the workers above are not affected
            resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))

        argv = [sys.executable, os.path.abspath(__file__), "--driver", cluster.scheduler_address]
        for name in ("m", "d", "shards", "lam", "rtol", "method", "max_time"):
            argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
        return subprocess.run(argv, preexec_fn=limit).returncode


if __name__ == "__main__":
    sys.exit(main())

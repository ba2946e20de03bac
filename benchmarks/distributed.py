"""Dask overhead of nsopt.distributed, one run (issue 12; numbers in docs/distributed.md).

For a9a (hinge, L2, lam = 1e-4) and a synthetic oracle-bound problem built on the workers
(sparse, a9a-like one-hot rows; default m = 4e5, d = 1e4, 10 nonzeros a row: the issue's
m = 2e6 scaled down 5x for a shared 2-core machine, ``--m`` to change it), this prints:

* the in-memory oracle call (``value_and_subgradient``), in ms;
* a bare round trip to every shard (``ping``: Dask's overhead alone), in ms;
* the sharded oracle call with 1 worker (1 shard) and 2 workers (2 shards), in ms, and its
  overhead over the in-memory call;
* bmrm and proximal-bundle, time per iteration with 1 and 2 workers (fixed iterations), the
  ratio, and a run to a certified relative gap of 1e-3 with 2 workers;
* ls-bmrm's traffic per iteration (round trips, bytes out and in: ``ShardedLoss.traffic``)
  with the breakpoint search on the shards (``line_search="select"``, the default) and with
  every breakpoint gathered to the driver (``"gather"``, the search before), 2 workers;
* ls-bmrm's traffic per iteration on a9a with squared hinge and logistic losses, the line
  search with the curvature on the shards vs true derivatives only, and with the hinge, the
  ordered reduction (values bitwise those of one machine) vs the parallel one;
* the ordered reduction against the parallel one on a9a (``--only-reduction``): ms, round
  trips and bytes per oracle call with 2 and 8 shards, ms per iteration, and every method's
  difference from the one-machine run with 2, 4, 8 shards;
* the driver's CPU per oracle call against the number of shards (``--only-overhead``: 1,
  2, 4, 8 tiny shards on 2 workers, so only Dask's and the reduction's work counts);
* the whole runs of bmrm and proximal-bundle to a certified 1e-3 with 1 and 2 workers
  (``--certified-speedup``): time, iterations, speed-up per iteration and per run, and
  where each run's CPU went per iteration (driver threads, worker kernels, page faults);
* the certificate: forming the sharded dual point at the end of a run, and ``check`` with it
  against ``check`` with the query points it was formed from (time, bytes back).

Usage: ``python benchmarks/distributed.py [--m 400000] [--iters 20] [--skip-a9a]
[--only-traffic] [--only-curvature] [--only-reduction] [--only-overhead]
[--certified-speedup --repeats 3]``.
"""
from __future__ import annotations

import os
import sys

# this file is named like Dask's package: run as a script, its directory must not shadow it
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import argparse  # noqa: E402
import functools  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import nsopt  # noqa: E402
import nsopt.distributed as nd  # noqa: E402


def _synthetic_shard(m, d, seed):
    """Runs on a worker: one shard of the synthetic problem (never on the driver)."""
    X, y = nsopt.datasets.make_sparse_binary(m, d, density=10.0 / d, random_state=seed)
    return nsopt.losses.Hinge(X, y)


def _time(fn, reps):
    fn()  # warm (numba compilation, first transfers)
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return 1e3 * statistics.median(out)


#: "nsopt": nd.local_client (direct actor calls, Dask's periodic work quieted); "default": a
#: plain Client(LocalCluster) (actor calls relayed by the scheduler, Dask's default config)
CLIENT = "nsopt"


def _client(n_workers):
    import distributed

    if CLIENT == "nsopt":
        return nd.local_client(n_workers)
    cluster = distributed.LocalCluster(n_workers=n_workers, processes=True, threads_per_worker=1,
                                       dashboard_address=None)
    return distributed.Client(cluster)


def _per_call(J, w, reps):
    """Per oracle call (medians of ``reps``): the call's wall time, each shard's kernel time
    on its worker (``_ShardActor.timed``: wall, no round trip), and the driver's and every
    worker's CPU (process time, all threads) per call."""
    loss = J.loss
    walls = []
    cpu0, wcpu0 = time.process_time(), loss._map("cpu")
    for _ in range(reps):
        t = time.perf_counter()
        J.value_and_subgradient(w)
        walls.append(time.perf_counter() - t)
    driver = (time.process_time() - cpu0) / reps
    workers = [(b - a) / reps for a, b in zip(wcpu0, loss._map("cpu"))]
    kernels = [loss._map("timed", "value_and_subgradient", w) for _ in range(reps)]
    shard = [statistics.median(k[i][0] for k in kernels) for i in range(loss.n_shards)]
    return 1e3 * statistics.median(walls), [1e3 * x for x in shard], 1e3 * driver, \
        [1e3 * x for x in workers]


def oracle_table(name, make_problem, in_memory, reps):
    w = np.full(in_memory.dim, 0.01) if in_memory is not None else None
    rows = []
    base = _time(lambda: in_memory.value_and_subgradient(w), reps) if in_memory is not None else None
    for n in (1, 2):
        client = _client(n)
        try:
            J = make_problem(client, n)
            w = np.full(J.dim, 0.01)
            ping = _time(lambda: J.loss._map("ping"), reps)
            J.value_and_subgradient(w)  # warm
            call, shard, driver, workers = _per_call(J, w, reps)
            rows.append((n, J.loss.n_shards, ping, call, shard, driver, workers))
        finally:
            client.close()
            client.cluster.close()
    print(f"\n{name}: oracle call (median of {reps}), ms; client {CLIENT}")
    if base is not None:
        print(f"  in memory                       {base:8.2f}")
    for n, k, ping, call, shard, driver, workers in rows:
        extra = f"  overhead {call - base:6.2f}" if base is not None else ""
        print(f"  {n} worker(s), {k} shard(s): ping {ping:6.2f}  call {call:8.2f}{extra}")
        print(f"      shard kernels on the workers {' '.join(f'{x:.2f}' for x in shard)}; "
              f"CPU per call: driver {driver:.2f}, worker processes "
              f"{' '.join(f'{x:.2f}' for x in workers)}")
    if len(rows) == 2:
        print(f"  oracle call speed-up 2 vs 1 worker: {rows[0][3] / rows[1][3]:.2f}x")
    return base, rows


def _rounds(make_problem, repeats):
    """``(round, n, problem)`` for ``repeats`` rounds of a fresh 1-worker then 2-worker
    cluster (runs compared under the same load, not far apart); each cluster is closed when
    the caller moves on."""
    for rep in range(repeats):
        for n in (1, 2):
            client = _client(n)
            try:
                yield rep, n, make_problem(client, n)
            finally:
                client.close()
                client.cluster.close()


def iteration_table(name, make_problem, iters, certify, repeats=1):
    """bmrm and proximal-bundle, seconds per iteration with 1 and 2 workers: ``repeats``
    rounds, each with a fresh 1-worker then 2-worker cluster (the ratio of the medians is of
    runs made under the same load, not far apart); and without the end-of-run certificate's
    dual points (``dual_form``: one pass ``X_k w`` per query point it weighs, once per run)."""
    print(f"\n{name}: time per iteration ({iters} iterations, rtol=0), s; client {CLIENT}")
    per, loop = {}, {}
    for rep, n, J in _rounds(make_problem, repeats):
        loss = J.loss
        certifying = [0.0]
        plain_map = loss._map

        def timed_map(method, *args, _plain=plain_map, _cert=certifying, **kw):
            t = time.perf_counter()
            try:
                return _plain(method, *args, **kw)
            finally:
                if method == "dual_form":
                    _cert[0] += time.perf_counter() - t

        loss._map = timed_map
        for method in ("bmrm", "proximal-bundle"):
            nsopt.minimize(J, method=method, rtol=0.0, max_iter=2)  # warm
            certifying[0] = 0.0
            t = time.perf_counter()
            res = nsopt.minimize(J, method=method, rtol=0.0, max_iter=iters)
            seconds = time.perf_counter() - t
            nit = max(res.nit, 1)
            per.setdefault((method, n), []).append(seconds / nit)
            loop.setdefault((method, n), []).append((seconds - certifying[0]) / nit)
            print(f"  {method:16s} {n} worker(s): {seconds / nit:8.4f} s/iter, "
                  f"{(seconds - certifying[0]) / nit:8.4f} without the certificate's "
                  f"dual points ({certifying[0]:.3f} s once per run); "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        del loss._map
        if certify and n == 2 and rep == repeats - 1:
            for method in ("bmrm", "proximal-bundle"):
                t = time.perf_counter()
                res = nsopt.minimize(J, method=method, rtol=1e-3, max_time=600)
                seconds = time.perf_counter() - t
                res.certificate.check(J)
                print(f"  {method:16s} 2 workers to rtol 1e-3: {res.status.name}, "
                      f"{res.nit} it, {seconds:.1f} s, gap/fun {res.gap / res.fun:.2e} "
                      f"(certificate checked)")
    _print_speedups((("", per), (" without the certificate", loop)), repeats)


def _print_speedups(tables, repeats):
    """For bmrm and proximal-bundle, each ``(label, table)``: the ratio of the medians of the
    1-worker and 2-worker times (``table[(method, n)]``), and the ratio of every round."""
    for method in ("bmrm", "proximal-bundle"):
        for label, table in tables:
            ratios = [a / b for a, b in zip(table[(method, 1)], table[(method, 2)])]
            one, two = (statistics.median(table[(method, n)]) for n in (1, 2))
            print(f"  {method:16s} speed-up 2 vs 1 worker{label}: {one / two:.2f}x "
                  f"(medians of {repeats}; per round {' '.join(f'{r:.2f}' for r in ratios)})")


#: the shard methods whose CPU the breakdown counts on the workers (``_count_on_worker``)
COUNTED = ("value_and_subgradient", "dual_form", "dual_check")


def _count_on_worker():
    """Runs on a worker (``client.run``): wrap the shard actor's methods of :data:`COUNTED` to
    add up, per method, the calls, the CPU of the thread that ran them (``thread_time``) and
    the minor page faults of the process during them (``ru_minflt``). Idempotent: a second
    call only resets the counts."""
    import resource

    import nsopt.distributed as ndd

    cls = ndd._ShardActor
    ndd._BENCH_COUNTS = {}
    if getattr(cls, "_bench_counted", False):
        return
    for name in COUNTED:
        def wrap(self, *args, _f=getattr(cls, name), _n=name):
            c, f = time.thread_time(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            try:
                return _f(self, *args)
            finally:
                row = ndd._BENCH_COUNTS.setdefault(_n, [0, 0.0, 0])
                row[0] += 1
                row[1] += time.thread_time() - c
                row[2] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f
        setattr(cls, name, wrap)
    cls._bench_counted = True


def _worker_counts():
    """Runs on a worker: the counts of :func:`_count_on_worker` since the last reading, and
    this process's CPU seconds (every thread), then resets the counts."""
    import nsopt.distributed as ndd

    out = {k: list(v) for k, v in getattr(ndd, "_BENCH_COUNTS", {}).items()}
    ndd._BENCH_COUNTS = {}
    return out, time.process_time()


def certified_table(name, make_problem, rtol, repeats):
    """bmrm and proximal-bundle run to a *certified* relative gap ``rtol`` with 1 and with 2
    workers: the whole run's time (from the first oracle call to the checked certificate,
    its end-of-run dual points included), the iterations, and the speed-up per iteration
    and per run. ``repeats`` rounds, each a fresh 1-worker then 2-worker cluster.

    With each run, where its CPU went, per iteration (clocks and counts, not wall time: the
    machine may be shared): the driver's process CPU, split into its main thread (the
    solver, the master problem, handing calls to Dask) and its other threads (Dask's event
    loop: comms, serialization, the in-process scheduler); every worker process's CPU and,
    inside it, the CPU of the shards' oracle calls and end-of-run dual points (the thread
    that ran them) with their minor page faults; the rest of a worker's CPU is Dask's (its
    event loop, messages, hand-over to the actor's thread); the round trips."""
    print(f"\n{name}: to a certified rtol {rtol:g}, whole runs; client {CLIENT}")
    per_it, per_run = {}, {}
    for _, n, J in _rounds(make_problem, repeats):
        client = J.loss.client
        client.run(_count_on_worker)
        for method in ("bmrm", "proximal-bundle"):
            nsopt.minimize(J, method=method, rtol=0.0, max_iter=2)  # warm
            before = client.run(_worker_counts)
            calls0 = J.loss.traffic["calls"]
            cpu0, main0 = time.process_time(), time.thread_time()
            t = time.perf_counter()
            res = nsopt.minimize(J, method=method, rtol=rtol, max_time=1200)
            seconds = time.perf_counter() - t
            cpu, main = time.process_time() - cpu0, time.thread_time() - main0
            after = client.run(_worker_counts)
            trips = J.loss.traffic["calls"] - calls0
            res.certificate.check(J)
            per_run.setdefault((method, n), []).append(seconds)
            per_it.setdefault((method, n), []).append(seconds / max(res.nit, 1))
            nit = max(res.nit, 1)
            print(f"  {method:16s} {n} worker(s): {res.status.name}, {res.nit} it, "
                  f"{seconds:6.2f} s, {1e3 * seconds / nit:6.1f} ms/iter, "
                  f"gap/fun {res.gap / res.fun:.2e} (checked); "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            print(f"      CPU per iteration: driver {1e3 * cpu / nit:.1f} ms (main thread "
                  f"{1e3 * main / nit:.1f}, master {1e3 * res.info.get('inner_time', 0.0) / nit:.1f} "
                  f"wall; other threads {1e3 * (cpu - main) / nit:.1f}); "
                  f"{trips / nit:.2f} round trips")
            for addr in sorted(after):
                counts, total = after[addr][0], after[addr][1] - before[addr][1]
                inside = sum(v[1] for v in counts.values())
                parts = ", ".join(f"{k} {v[0] / nit:.2f} calls {1e3 * v[1] / nit:.1f} ms "
                                  f"({v[2] / max(v[0], 1):.0f} page faults a call)"
                                  for k, v in sorted(counts.items()))
                print(f"      worker {addr.rsplit(':', 1)[-1]}: {1e3 * total / nit:.1f} ms: "
                      f"{parts}; Dask's rest {1e3 * (total - inside) / nit:.1f} ms", flush=True)
    _print_speedups(((" per iteration", per_it), (" per run", per_run)), repeats)


def traffic_table(name, make_problem, iters, n_shards=(2, 4)):
    """ls-bmrm's traffic per iteration, breakpoints selected on the shards vs gathered, and
    the certificate's cost (2 workers)."""
    import dataclasses

    from nsopt.certificate import QueryPoints

    print(f"\n{name}: ls-bmrm traffic per iteration ({iters} iterations, rtol=0, 2 workers)")
    client = _client(2)
    try:
        for n in n_shards:
            J = make_problem(client, n)
            loss = J.loss
            for mode in ("gather", "select"):
                loss.line_search = mode
                nsopt.minimize(J, method="ls-bmrm", rtol=0.0, max_iter=2)  # warm
                before = loss.traffic
                t = time.perf_counter()
                res = nsopt.minimize(J, method="ls-bmrm", rtol=0.0, max_iter=iters)
                sec = (time.perf_counter() - t) / max(res.nit, 1)
                d = {k: (loss.traffic[k] - before[k]) / max(res.nit, 1) for k in before}
                print(f"  {n} shards, {mode:6s}: {d['calls']:6.1f} round trips, "
                      f"out {d['bytes_out'] / 1e3:9.1f} kB, in {d['bytes_in'] / 1e3:9.1f} kB, "
                      f"{1e3 * sec:8.1f} ms/iter")
            loss.line_search = "select"
            ev = res.certificate.evidence
            if not isinstance(ev, nd.ShardedDualPoint):
                continue
            points, W, floor, _ = ev.recipe
            qp = QueryPoints(tuple(points), W, floor)
            t = time.perf_counter()
            formed = loss.adopt_evidence(qp, J)
            form = time.perf_counter() - t
            for label, cert in (("sharded dual point", res.certificate),
                                ("query points", dataclasses.replace(
                                    res.certificate, evidence=qp, a_bar=None, b_bar=None))):
                before = loss.traffic
                t = time.perf_counter()
                bound = cert.check(J)
                sec = time.perf_counter() - t
                moved = loss.traffic["bytes_in"] - before["bytes_in"]
                print(f"  {n} shards, check with {label:18s}: {1e3 * sec:8.1f} ms, "
                      f"in {moved / 1e3:9.1f} kB, bound {bound:.12g}")
            print(f"  {n} shards, forming the sharded dual point ({len(points)} query points):"
                  f" {1e3 * form:8.1f} ms")
            del formed
    finally:
        client.close()
        client.cluster.close()


def curvature_table(X, y, iters, n_shards=2):
    """ls-bmrm's traffic per iteration on a9a with squared hinge and logistic losses: the exact
    line search with the curvature on the shards (jump sums of phi'' for squared hinge,
    Newton on (phi', phi'') for logistic) vs true derivatives only (the search before); and
    the hinge with the ordered reduction (bitwise one-machine values) vs the parallel one."""
    print(f"\na9a: ls-bmrm per iteration ({iters} iterations, rtol=0, inner_rtol=0, "
          f"{n_shards} shards, 2 workers)")
    client = _client(2)
    try:
        cases = [(nsopt.losses.SquaredHinge, "curvature_search", (False, True)),
                 (nsopt.losses.Logistic, "curvature_search", (False, True)),
                 (nsopt.losses.Hinge, "reduction", ("parallel", "ordered"))]
        for cls, knob, values in cases:
            J = nsopt.RegularizedRisk(cls(X, y), nsopt.regularizers.L2(), 1e-4)
            Js = nd.shard(J, n_shards, client=client)
            loss = Js.loss
            for value in values:
                setattr(loss, knob, value)
                nsopt.minimize(Js, method="ls-bmrm", rtol=0.0, max_iter=2)  # warm
                before = loss.traffic
                t = time.perf_counter()
                res = nsopt.minimize(Js, method="ls-bmrm", rtol=0.0, max_iter=iters,
                                     inner_rtol=0.0)
                sec = (time.perf_counter() - t) / max(res.nit, 1)
                d = {k: (loss.traffic[k] - before[k]) / max(res.nit, 1) for k in before}
                print(f"  {cls.__name__:12s} {knob}={value!s:8s}: {d['calls']:6.1f} round trips,"
                      f" out {d['bytes_out'] / 1e3:7.1f} kB, in {d['bytes_in'] / 1e3:7.1f} kB,"
                      f" {1e3 * sec:7.1f} ms/iter")
            loss.close()
    finally:
        client.close()
        client.cluster.close()


def reduction_table(X, y, reps, iters, n_shards=(2, 8)):
    """The ordered reduction (values and subgradients bitwise those of one machine) against
    the parallel one on a9a with 2 workers: ms per oracle call (median of ``reps``, the two
    reductions alternated in 3 rounds, ratio per round), round trips and bytes per call
    (exact), ms per iteration of bmrm and subbfgs; then every method's largest relative
    difference from the one-machine run after ``iters`` iterations (0 = bitwise)."""
    print("\na9a (hinge, lam = 1e-4): reduction 'ordered' vs 'parallel', 2 workers")
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), 1e-4)
    rng = np.random.default_rng(0)
    w, p = 0.01 * rng.normal(size=J.dim), rng.normal(size=J.dim)
    calls = {"value_and_subgradient": lambda P: P.value_and_subgradient(w),
             "value": lambda P: P.value(w), "sup_subgradient": lambda P: P.sup_subgradient(w, p)}
    for name, fn in calls.items():
        print(f"  in memory {name:22s} {_time(lambda: fn(J), reps):7.2f} ms")
    client = _client(2)
    methods = [("bmrm", dict(inner_rtol=0.0)), ("ls-bmrm", dict(inner_rtol=0.0)),
               ("kbundle", dict(inner_rtol=0.0)), ("proximal-bundle", {}), ("subbfgs", {}),
               ("sublbfgs", {})]
    try:
        for P in n_shards:
            Js = nd.shard(J, P, client=client)
            loss = Js.loss
            for name, fn in calls.items():
                ms = {"parallel": [], "ordered": []}
                for _ in range(3):
                    for red in ("parallel", "ordered"):
                        loss.reduction = red
                        ms[red].append(_time(lambda: fn(Js), reps))
                traffic = {}
                for red in ("parallel", "ordered"):
                    loss.reduction = red
                    before = loss.traffic
                    fn(Js)
                    traffic[red] = {k: loss.traffic[k] - before[k] for k in before}
                ratios = " ".join(f"{o / q:.2f}" for q, o in zip(ms["parallel"], ms["ordered"]))
                print(f"  {P} shards {name:22s} parallel {min(ms['parallel']):7.2f} ms, "
                      f"ordered {min(ms['ordered']):7.2f} ms (best of 3), ratio per round "
                      f"{ratios}; round trips {traffic['parallel']['calls']} / "
                      f"{traffic['ordered']['calls']}, bytes out+in "
                      f"{traffic['parallel']['bytes_out'] + traffic['parallel']['bytes_in']} / "
                      f"{traffic['ordered']['bytes_out'] + traffic['ordered']['bytes_in']}")
            for method in ("bmrm", "subbfgs"):
                opts = dict(methods)[method]
                for red in ("parallel", "ordered"):
                    loss.reduction = red
                    t = time.perf_counter()
                    res = nsopt.minimize(Js, method=method, rtol=0.0, max_iter=iters, **opts)
                    print(f"  {P} shards {method:8s} {red:8s} "
                          f"{1e3 * (time.perf_counter() - t) / max(res.nit, 1):7.1f} ms/iter")
            loss.close()
        print(f"  largest relative difference from one machine after {iters} iterations "
              "(last point; parallel / ordered)")
        for method, opts in methods:
            ref = nsopt.minimize(J, method=method, rtol=0.0, max_iter=iters, **opts)
            row = []
            for P in (2, 4, 8):
                Js = nd.shard(J, P, client=client)
                for red in ("parallel", "ordered"):
                    Js.loss.reduction = red
                    res = nsopt.minimize(Js, method=method, rtol=0.0, max_iter=iters, **opts)
                    row.append(float(np.max(np.abs(res.x - ref.x))
                                     / max(1.0, float(np.max(np.abs(ref.x))))))
                Js.loss.close()
            print(f"  {method:16s} " + "  ".join(f"{P}: {row[2 * i]:.1e} / {row[2 * i + 1]:.1e}"
                                                 for i, P in enumerate((2, 4, 8))))
    finally:
        client.close()
        client.cluster.close()


def overhead_table(d, reps, shards=(1, 2, 4, 8), rows=2000):
    """The driver's CPU per oracle call (process time, every thread: what a loaded machine
    does not inflate much) against the number of shards, on 2 workers, with tiny shards
    (``rows`` rows each, d columns, built on the workers) so that the workers' kernels do
    not matter: the intercept and the per-shard slope of a least-squares line are the
    projection's inputs (docs/distributed.md, "Projection to 16, 64, 256 workers"). Also
    the driver's CPU per bare round trip (``ping``) and per ordered call."""
    print(f"\ndriver CPU per call, ms (median of 3 blocks of {reps} calls; d = {d}, "
          f"{rows} rows a shard, 2 workers); load {os.getloadavg()[0]:.1f}")
    client = _client(2)
    xs, ys = [], []
    try:
        for P in shards:
            builders = [functools.partial(_synthetic_shard, rows, d, seed) for seed in range(P)]
            J = nd.from_builders(builders, lam=1e-4, client=client)
            loss, w = J.loss, np.full(d, 0.01)

            def cpu_per(fn):
                fn()  # warm
                blocks = []
                for _ in range(3):
                    t = time.process_time()
                    for _ in range(reps):
                        fn()
                    blocks.append((time.process_time() - t) / reps)
                return 1e3 * statistics.median(blocks)

            ping = cpu_per(lambda: loss._map("ping"))
            call = cpu_per(lambda: J.value_and_subgradient(w))
            loss.reduction = "ordered"
            ordered = cpu_per(lambda: J.value_and_subgradient(w))
            loss.reduction = "parallel"
            xs.append(P)
            ys.append(call)
            print(f"  {P} shard(s): ping {ping:6.2f}  oracle call {call:6.2f}  "
                  f"ordered call {ordered:6.2f}  load {os.getloadavg()[0]:.1f}", flush=True)
            loss.close()
    finally:
        client.close()
        client.cluster.close()
    slope, intercept = np.polyfit(xs, ys, 1)
    print(f"  least squares: {intercept:.2f} ms + {slope:.2f} ms per shard")


def _category(filename):
    """Who owns a profiled function: nsopt's solver or oracle code, Dask (distributed, tornado,
    asyncio, the serializers), numerical libraries, or the rest."""
    f = filename.replace("\\", "/")
    if "/nsopt/distributed" in f:
        return "nsopt.distributed (futures, reduction)"
    if "/nsopt/" in f:
        return "nsopt (solver, master, planes)"
    for key in ("/distributed/", "/tornado/", "/asyncio/", "msgpack", "cloudpickle", "pickle",
                "/dask/", "selectors", "socket", "threading", "/concurrent/", "queue"):
        if key in f:
            return "Dask (client, comms, scheduler, serialization)"
    if any(k in f for k in ("/numpy/", "/scipy/", "highspy", "numba")):
        return "numpy / scipy / compiled"
    if f.startswith("~") or f.startswith("<"):  # built-ins: attributed to their caller below
        return "built-ins"
    return "other"


def _own_time(stats):
    """``{category: seconds}`` of own time (tottime) in ``pstats.Stats``; a built-in's time goes
    to the category of the callers that called it most."""
    out = {}
    for (filename, _, name), (_, _, tottime, _, callers) in stats.stats.items():
        cat = _category(filename)
        if cat == "built-ins" and callers:
            top = max(callers.items(), key=lambda kv: kv[1][2])[0]
            cat = _category(top[0])
            if cat == "built-ins":
                cat = "other"
        out[cat] = out.get(cat, 0.0) + tottime
    return out


def _call_each(client, actors, method, args):
    """The shards' calls as before ``nsopt.distributed._call_all``: each actor call handed to
    the event loop on its own, each answer fetched by its own ``ActorFuture.result()``."""
    return nd._results([getattr(a, method)(*args) for a in actors])


def profile_driver(make_problem, iters, n_workers=2, top=25):
    """cProfile (each thread's CPU time) of the driver's two threads during ``iters``
    iterations of bmrm and of proximal-bundle (rtol 0): the main thread (the solver, the futures it waits on) and the
    Dask client's event-loop thread (comms, (de)serialization; with a LocalCluster the
    scheduler runs there too). Per iteration: the driver's CPU (every thread), each thread's
    own time by owner, round trips; then the functions of most own time."""
    import cProfile
    import pstats
    import threading

    client = _client(n_workers)
    try:
        J = make_problem(client, n_workers)
        loss = J.loss
        for method in ("bmrm", "proximal-bundle"):
            nsopt.minimize(J, method=method, rtol=0.0, max_iter=3)  # warm
            # each thread's own CPU (time.thread_time), not wall time: waits cost nothing
            main_prof, loop_prof = cProfile.Profile(time.thread_time), cProfile.Profile(time.thread_time)
            done = threading.Event()

            def on_loop(fn):
                done.clear()
                client.loop.add_callback(lambda: (fn(), done.set()))
                done.wait(10)

            cpu0, own0, wall0 = time.process_time(), time.thread_time(), time.perf_counter()
            res = nsopt.minimize(J, method=method, rtol=0.0, max_iter=iters)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            own, nit = time.thread_time() - own0, max(res.nit, 1)
            print(f"\n{method}, {n_workers} workers, {res.nit} iterations, not profiled: "
                  f"{1e3 * wall / nit:.1f} ms per iteration, driver CPU (every thread) "
                  f"{1e3 * cpu / nit:.1f} ms: main thread {1e3 * own / nit:.1f} ms, the other "
                  f"threads (Dask's event loop) {1e3 * (cpu - own) / nit:.1f} ms; "
                  f"load {os.getloadavg()[0]:.1f}")
            on_loop(loop_prof.enable)
            calls0 = loss.traffic["calls"]
            cpu0, wall0 = time.process_time(), time.perf_counter()
            main_prof.enable()
            res = nsopt.minimize(J, method=method, rtol=0.0, max_iter=iters)
            main_prof.disable()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            on_loop(loop_prof.disable)
            nit = max(res.nit, 1)
            trips = (loss.traffic["calls"] - calls0) / nit
            print(f"{method}, profiled: {1e3 * wall / nit:.1f} ms "
                  f"per iteration, driver CPU (every thread) {1e3 * cpu / nit:.1f} ms, "
                  f"{trips:.2f} round trips; load {os.getloadavg()[0]:.1f}")
            if os.environ.get("NSOPT_PROFILE_DUMP"):  # for pstats / snakeviz
                for label, prof in (("main", main_prof), ("loop", loop_prof)):
                    prof.dump_stats(os.path.join(os.environ["NSOPT_PROFILE_DUMP"],
                                                 f"{method}-{label}.pstats"))
            for label, prof in (("main thread", main_prof), ("event-loop thread", loop_prof)):
                st = pstats.Stats(prof)
                own = _own_time(st)
                total = sum(own.values())
                print(f"  {label}: {1e3 * total / nit:.2f} ms of CPU per iteration (profiled)")
                for cat, t in sorted(own.items(), key=lambda kv: -kv[1]):
                    print(f"    {1e3 * t / nit:7.2f} ms  {cat}")
            for label, prof in (("main thread", main_prof), ("event-loop thread", loop_prof)):
                print(f"  {label}, functions by own time:")
                st = pstats.Stats(prof)
                rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
                for (filename, line, name), (cc, nc, tottime, cumtime, _) in rows:
                    short = "/".join(filename.replace("\\", "/").split("/")[-2:])
                    print(f"    {1e3 * tottime / nit:7.3f} ms own {1e3 * cumtime / nit:8.3f} ms cum "
                          f"{nc / nit:7.1f} calls  {short}:{line} {name}")
    finally:
        client.close()
        client.cluster.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=400_000)
    ap.add_argument("--d", type=int, default=10_000)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--skip-a9a", action="store_true")
    ap.add_argument("--repeats", type=int, default=1,
                    help="rounds of the iteration table (1 then 2 workers each)")
    ap.add_argument("--client", choices=("nsopt", "default"), default="nsopt",
                    help="nsopt: nd.local_client (direct actor calls, Dask's periodic work "
                         "quieted); default: Client(LocalCluster()) as Dask makes it")
    ap.add_argument("--only-traffic", action="store_true",
                    help="only ls-bmrm's traffic and the certificate's cost (and the a9a "
                         "oracle table)")
    ap.add_argument("--only-curvature", action="store_true",
                    help="only ls-bmrm's line searches with squared hinge and logistic losses "
                         "and the hinge's reductions (a9a)")
    ap.add_argument("--only-reduction", action="store_true",
                    help="only the ordered vs parallel reduction on a9a (cost per call and "
                         "per iteration, every method's difference from one machine)")
    ap.add_argument("--only-overhead", action="store_true",
                    help="only the driver's CPU per oracle call against the number of shards "
                         "(1, 2, 4, 8 tiny shards on 2 workers)")
    ap.add_argument("--profile-driver", action="store_true",
                    help="the synthetic problem, 2 workers: cProfile of the driver's main and "
                         "event-loop threads per bmrm / proximal-bundle iteration")
    ap.add_argument("--per-call-results", action="store_true",
                    help="hand each shard's call and answer to Dask's event loop on its own "
                         "(the driver before one hand-over per round trip), for comparison")
    ap.add_argument("--certified-speedup", action="store_true",
                    help="only the synthetic problem's whole runs to a certified 1e-3 with 1 "
                         "and 2 workers (--repeats rounds)")
    ap.add_argument("--certify", action="store_true",
                    help="also run the synthetic problem to a certified 1e-3 (2 workers)")
    args = ap.parse_args(argv)
    global CLIENT
    CLIENT = args.client
    if args.only_overhead:
        overhead_table(args.d, args.reps)
        return

    if not args.skip_a9a and nsopt.io.find_data_dir() is not None:
        X, y = nsopt.io.load_dataset("a9a")[:2]
        if args.only_reduction:
            reduction_table(X.tocsr(), y, args.reps, args.iters)
            return
        if args.only_curvature:
            curvature_table(X.tocsr(), y, args.iters)
            return
        J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X.tocsr(), y), nsopt.regularizers.L2(), 1e-4)
        oracle_table("a9a (m=32561, d=123, hinge)", lambda c, n: nd.shard(J, n, client=c), J,
                     args.reps)
        traffic_table("a9a", lambda c, n: nd.shard(J, n, client=c), args.iters)
        curvature_table(X.tocsr(), y, args.iters)
        if not args.only_traffic:
            iteration_table("a9a", lambda c, n: nd.shard(J, n, client=c), args.iters, False,
                            args.repeats)

    m, d = args.m, args.d

    def synthetic(client, n):
        # two shards' worth of rows whatever the workers: the same problem for 1 and 2 workers
        half = m // 2
        builders = [functools.partial(_synthetic_shard, half, d, seed) for seed in (1, 2)]
        return nd.from_builders(builders, lam=1e-4, client=client)

    name = f"synthetic (m={m:.0e}, d={d:.0e}, ~{10 * m:.0e} nonzeros, hinge, built on the workers)"
    if args.only_traffic:
        traffic_table(name, synthetic, args.iters, n_shards=(2,))
        return
    if args.certified_speedup:
        certified_table(name, synthetic, 1e-3, args.repeats)
        return
    if args.per_call_results:
        nd._call_all = _call_each
    if args.profile_driver:
        profile_driver(synthetic, args.iters)
        return
    # the same problem in memory, for the baseline only (the sharded one is built on the workers)
    import scipy.sparse as sp

    parts = [_synthetic_shard(m // 2, d, seed) for seed in (1, 2)]
    whole = nsopt.RegularizedRisk(nsopt.losses.Hinge(
        sp.vstack([p.data.X for p in parts]).tocsr(), np.concatenate([p.y for p in parts])),
        lam=1e-4)
    del parts
    oracle_table(name, synthetic, whole, max(5, args.reps // 3))
    del whole
    iteration_table(name, synthetic, args.iters, args.certify, args.repeats)


if __name__ == "__main__":
    main()

# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Swapping solvers on one problem
#
# Every nsopt solver takes the same problem and returns the same `Result`, with a proven
# lower bound. So comparing solvers is one loop: change `method=`, keep everything else. We
# train one L2-regularized linear SVM,
#
# $$J(w) = \frac{\lambda}{2}\|w\|^2 + \frac1m\sum_{i=1}^m \max(0, 1 - y_i\langle x_i, w\rangle),$$
#
# with six methods and compare them three ways: by **iterations**, by **oracle calls** (one
# call = one value and subgradient of the risk, or one line-search evaluation) and by
# **time**. They rank differently, and the reasons say a lot about the methods.
#
# Open this file as a notebook with `jupytext --to notebook 04_swapping_solvers.py` (the
# figures appear inline), or run it as a script.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import nsopt
import nsopt.plot
from nsopt.losses import Hinge

SMALL = os.environ.get("NSOPT_TUTORIAL_SMALL") == "1"  # set by the test suite

# %% [markdown]
# ## The problem
#
# Synthetic data shaped like the Adult set (a9a): sparse one-hot features, labels in
# $\{-1, +1\}$, 10% label noise. `methods_supporting(J)` lists the methods that can solve
# this problem: all the methods for regularized risks, since the hinge loss has a saddle
# form (which `excessive-gap` needs) and an exact line search (which `ls-bmrm` uses).

# %%
m, d = (1500, 40) if SMALL else (3000, 60)
X, y = nsopt.datasets.make_sparse_binary(m, d, random_state=0)
lam = 1e-3
J = nsopt.RegularizedRisk(Hinge(X, y), lam=lam)
print(J)
print("methods for this problem:", nsopt.solvers.methods_supporting(J))

# %% [markdown]
# The compiled kernels (numba) are compiled on their first call, or loaded from the on-disk
# cache. A tiny warm-up solve with each method keeps that one-off cost out of the timings
# below, so that `Result.time` measures the algorithm.

# %%
methods = ["bmrm", "ls-bmrm", "kbundle", "proximal-bundle", "sublbfgs", "excessive-gap"]
Xw, yw = nsopt.datasets.make_sparse_binary(50, d, random_state=1)
for method in methods:
    nsopt.minimize(nsopt.RegularizedRisk(Hinge(Xw, yw), lam=lam), method=method, max_iter=5)

# %% [markdown]
# ## One loop, six solvers
#
# Each run stops when its *proven* relative gap `(fun - lower_bound) / |fun|` is below
# `rtol`. Every row of a run's `history` holds the iteration, the time, the number of oracle
# calls so far (`nfev`), `fun` (the best value found) and `lower_bound`.

# %%
rtol = 1e-4
runs = {method: nsopt.minimize(J, method=method, rtol=rtol, max_iter=3000) for method in methods}

print(f"{'method':16s} {'status':10s} {'iterations':>10s} {'calls':>6s} {'calls/it':>8s} "
      f"{'time (s)':>8s} {'ms/it':>6s}  bound from")
for method, r in runs.items():
    print(f"{method:16s} {r.status.value:10s} {r.nit:10d} {r.nfev:6d} {r.nfev / max(r.nit, 1):8.2f} "
          f"{r.time:8.3f} {1e3 * r.time / max(r.nit, 1):6.2f}  {r.certificate.source}")

best_lower = max(r.lower_bound for r in runs.values())
best_upper = min(r.fun for r in runs.values())
print(f"\nall runs together: {best_lower:.8f} <= J* <= {best_upper:.8f}")
assert all(r.success for r in runs.values())
assert all(r.lower_bound <= best_upper and best_lower <= r.fun for r in runs.values())

# %% [markdown]
# The last line is a check that costs nothing: every run's bracket `[lower_bound, fun]`
# holds the same optimum, so every lower bound must be below every value found. Different
# algorithms, different certificates (`bundle-dual`, `planes`, `excessive-gap`: the column
# "bound from"), one number.
#
# ## Against iterations
#
# `nsopt.plot.convergence(runs, x="iteration")` draws each run's relative gap on a log scale
# (top) and its bracket, `fun` solid and `lower_bound` dashed (bottom).

# %%
fig = nsopt.plot.convergence(runs, x="iteration")
fig.axes[0].axhline(rtol, color="gray", linestyle=":")
fig.axes[0].set_xscale("log")
plt.show()

# %% [markdown]
# An *iteration* means different things. A BMRM iteration is one oracle call plus a master
# QP over all the planes kept so far; a `sublbfgs` iteration is a direction search plus a
# line search with several calls; an `excessive-gap` iteration is a gradient step on the
# dual, one call. Counting iterations favours methods that do a lot per iteration.
#
# ## Against oracle calls
#
# On large data the oracle (a pass over `X`) is what costs: `x="nfev"` counts every call
# that reaches it, line-search evaluations included.

# %%
fig = nsopt.plot.convergence(runs, x="nfev", bounds=False)
fig.axes[0].axhline(rtol, color="gray", linestyle=":")
fig.axes[0].set_xscale("log")
plt.show()

# %%
calls_per_it = {method: r.nfev / max(r.nit, 1) for method, r in runs.items()}
print("oracle calls per iteration:", {k: round(v, 2) for k, v in calls_per_it.items()})
assert calls_per_it["sublbfgs"] > calls_per_it["bmrm"]

# %% [markdown]
# The quasi-Newton method moves to the right: its line searches cost calls. The
# cutting-plane methods make about one call per iteration (one more for the start, and a
# few for `ls-bmrm`'s line search, which is exact for the hinge loss and mostly free).
#
# ## Against time
#
# Time adds what happens between oracle calls. BMRM's master problem grows with every plane
# it keeps, `kbundle` keeps at most $k$ planes and aggregates the rest, the proximal bundle
# method solves a small QP around its centre, and `excessive-gap` does a projection on a box
# of size $m$. On this small problem the oracle is cheap (the data fits in cache), so the
# bookkeeping shows; on a9a-sized data the oracle dominates and the `nfev` picture is closer
# to the time picture.

# %%
fig = nsopt.plot.convergence(runs, x="time", bounds=False)
fig.axes[0].axhline(rtol, color="gray", linestyle=":")
fig.axes[0].set_xscale("log")
plt.show()

# %%
ranking = {x: sorted(methods, key=lambda k: (runs[k].nit, runs[k].nfev, runs[k].time)[i])
           for i, x in enumerate(["iterations", "calls", "time"])}
for x, order in ranking.items():
    print(f"fastest to rtol by {x:10s}: {' < '.join(order)}")

# %% [markdown]
# ## One run on its own: `Result.plot()`
#
# `res.plot()` is `nsopt.plot.convergence(res)`, and `print(res)` shows the certificate
# block: the bracket, the gap, the status and what it proves.

# %%
res = runs["proximal-bundle"]
print(res)
res.plot(x="nfev")
plt.show()

# %% [markdown]
# ## What to take away
#
# * Swapping a solver is changing one string; the certificates make the comparison fair,
#   since each run *proves* its gap instead of claiming it.
# * Which is "fastest" depends on what you count. Iterations flatter methods that work hard per
#   iteration (line searches, big master problems); oracle calls are the honest unit when one
#   pass over the data is expensive; time is what you pay, and it includes each method's
#   bookkeeping.
# * Time the second run, not the first: the first call of a compiled kernel compiles it (or
#   loads it from numba's cache).
# * `nsopt compare DATA --methods bmrm,proximal-bundle,sublbfgs --lam ...` does this loop
#   from the command line and writes the same plot.

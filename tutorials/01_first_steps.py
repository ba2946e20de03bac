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
# # First steps with nsopt
#
# We train a linear classifier by minimizing the regularized risk
#
# $$J(w) = \frac{\lambda}{2}\|w\|^2 + \frac1m\sum_{i=1}^m \max(0, 1 - y_i\langle x_i, w\rangle)$$
#
# with BMRM. We watch the gap between the best value found and a proven lower bound
# shrink, see what that certificate means, and compare with an L1 regularizer, which gives
# sparse weights.
#
# Open this file as a notebook with `jupytext --to notebook 01_first_steps.py` (the figures
# then appear inline), or run it as a script: `python tutorials/01_first_steps.py`.

# %%
import matplotlib.pyplot as plt
import numpy as np

import nsopt
from nsopt.losses import Hinge
from nsopt.regularizers import L1, L2

# %% [markdown]
# ## The data and the problem
#
# `make_sparse_binary` makes data shaped like the UCI Adult set (a9a): one-hot features and
# labels in {-1, +1} from a hidden linear model with 10% label noise. Here we use 2000
# examples and 30 features.

# %%
X, y = nsopt.datasets.make_sparse_binary(2000, 30, random_state=0)
print(X.shape, f"{X.nnz / X.shape[0]:.1f} nonzeros per row", f"{np.mean(y == 1):.0%} positive")

lam = 1e-2
J = nsopt.RegularizedRisk(Hinge(X, y), L2(), lam=lam)
print(J)

# %% [markdown]
# ## Running BMRM step by step
#
# `solver.iterate(problem)` yields the solver's state after every iteration. BMRM's state
# holds `fun_best`, the smallest `J(w)` seen so far, and `lower_bound`, the value of the dual
# of its cutting-plane model. That value is a proven lower bound on the optimum `J*`. The
# loop stops on the solver's own rule, here `gap <= 1e-4 * fun`.

# %%
solver = nsopt.solvers.BMRM(rtol=1e-4)
fun, lower = [], []
for state in solver.iterate(J):
    fun.append(state.fun_best)
    lower.append(state.lower_bound)
fun, lower = np.array(fun), np.array(lower)
gap = fun - lower

for k in [0, 1, 2, 5, 10, 20, len(gap) - 1]:
    if k < len(gap):
        print(f"iteration {k:3d}: fun {fun[k]:.6f}  lower bound {lower[k]:.6f}  gap {gap[k]:.2e}")

# %% [markdown]
# Two things hold at every iteration, not only at the end:
#
# * the lower bound never decreases, and `fun` never increases, because both are the best
#   so far;
# * `lower_bound <= J* <= fun`, so the gap bounds how far the current point is from
#   optimal.

# %%
assert np.all(np.diff(lower) >= 0) and np.all(np.diff(fun) <= 0)
assert np.all(lower <= fun)
assert gap[-1] <= 1e-4 * fun[-1]

# %% [markdown]
# ## Plot: the two curves close in on the optimum

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
it = np.arange(len(fun))
ax1.plot(it, fun, label="fun: best J(w) so far")
ax1.plot(it, lower, label="lower bound (proven)")
ax1.set_xlabel("iteration")
ax1.set_ylabel("J")
ax1.set_ylim(0.0, 1.05)
ax1.legend()
ax2.semilogy(it, gap / fun)
ax2.axhline(1e-4, color="gray", linestyle="--", label="rtol")
ax2.set_xlabel("iteration")
ax2.set_ylabel("relative gap (fun - lower) / fun")
ax2.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The certificate
#
# `nsopt.minimize` runs the same loop and returns a `Result`. Its certificate rests on one
# fact: every oracle call at a point `w_i` gives a plane below the risk,
# `R(v) >= <a_i, v> + b_i` for all `v`, and so does any average of planes. Minimizing
# `lam * Omega(v) + <a_bar, v> + b_bar` over `v` in closed form, with the conjugate
# `Omega*`, gives a number that no `J(v)` can go below:
#
# $$J^\star \ge \bar b - \lambda\,\Omega^*(-\bar a/\lambda).$$
#
# The certificate carries `(a_bar, b_bar)`, and `check` recomputes the bound from them without
# trusting the solver.

# %%
res = nsopt.minimize(J, method="bmrm", rtol=1e-4)
print(res)
print(f"the optimum lies in [{res.lower_bound:.6f}, {res.fun:.6f}]")
bound = res.certificate.check(J)
assert np.isclose(bound, res.lower_bound)
assert np.isclose(J.value(res.x), res.fun)

rng = np.random.default_rng(1)
others = [J.value(res.x + 0.1 * rng.normal(size=J.dim)) for _ in range(200)]
print(f"200 perturbed points: the smallest J is {min(others):.6f} >= {res.lower_bound:.6f}")
assert min(others) >= res.lower_bound

accuracy = np.mean(np.where(X @ res.x >= 0, 1, -1) == y)
print(f"training accuracy {accuracy:.1%}")

# %% [markdown]
# ## L1 instead of L2: sparse weights
#
# Replacing `L2()` by `L1()` changes only the regularizer. BMRM's master problem becomes a
# linear program, solved by HiGHS. The certificate works the same way: the conjugate of the
# L1 norm is the indicator of the unit inf-ball. L1 sets many weights exactly to zero. L1 has
# no curvature, so BMRM needs more iterations to reach the same tolerance, and we ask for a
# looser one here.

# %%
lam_l1 = 3e-2
res_l2 = nsopt.minimize(nsopt.RegularizedRisk(Hinge(X, y), L2(), lam=lam_l1), rtol=1e-3)
res_l1 = nsopt.minimize(nsopt.RegularizedRisk(Hinge(X, y), L1(), lam=lam_l1), rtol=1e-3)
for name, r in [("L2", res_l2), ("L1", res_l1)]:
    acc = np.mean(np.where(X @ r.x >= 0, 1, -1) == y)
    print(f"{name}: {r.status.value} after {r.nit:3d} iterations, gap {r.gap:.1e}, "
          f"{np.count_nonzero(r.x):2d} of {J.dim} weights nonzero, accuracy {acc:.1%}")
assert res_l1.success and res_l2.success
assert np.count_nonzero(res_l1.x) < np.count_nonzero(res_l2.x)

# %% [markdown]
# ## Where to go next
#
# * `docs/oracles.md`: write your own loss as an oracle and check it with
#   `nsopt.testing.check_oracle`.
# * `docs/solvers.md`: BMRM's options and the `Result` fields.
# * `nsopt solve a9a --lam 1e-4` runs the same solver from the command line on a LIBSVM file.

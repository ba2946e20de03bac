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
# # Regularizers by their conjugates: L2, L1 and entropy on the simplex
#
# nsopt knows a regularizer $\Omega$ through its **Fenchel conjugate**
#
# $$\Omega^*(\mu) = \sup_w\ \langle w, \mu\rangle - \Omega(w),$$
#
# and the point that attains the sup, the *dual connection* $w = \nabla\Omega^*(\mu)$
# (`reg.conjugate(mu)`, `reg.conjugate_grad(mu)`). This notebook shows why that is all a
# solver needs, and how the conjugate decides what the solution $w$ looks like:
#
# | $\Omega(w)$ | $\Omega^*(\mu)$ | $w$ from $\mu$ | what it does to $w$ |
# |---|---|---|---|
# | $\frac12\|w\|_2^2$ (`L2`) | $\frac12\|\mu\|_2^2$ | $w = \mu$ | shrinks, keeps every coordinate |
# | $\|w\|_1$ (`L1`) | $0$ if $\|\mu\|_\infty \le 1$, else $+\infty$ | $w_j \ne 0$ only where $\lvert\mu_j\rvert = 1$ | sparse |
# | $\sum_j w_j\log w_j$ on the simplex (`NegEntropy(normalized=True)`) | $\log\sum_j e^{\mu_j}$ | $w = \mathrm{softmax}(\mu)$ | a distribution: $w > 0$, $\sum_j w_j = 1$, spread |
#
# Open this file as a notebook with `jupytext --to notebook 05_regularizers_and_conjugates.py`
# (the figures appear inline), or run it as a script.

# %%
import matplotlib.pyplot as plt
import numpy as np

import nsopt
from nsopt.losses import Hinge
from nsopt.regularizers import L1, L2, NegEntropy

# %% [markdown]
# ## The certificate is a Fenchel dual point
#
# For $J(w) = \lambda\Omega(w) + R(w)$, every oracle call gives a plane below the risk,
# $R(v) \ge \langle a, v\rangle + b$, and so does an average $(\bar a, \bar b)$ of planes.
# Minimizing $\lambda\Omega(v) + \langle\bar a, v\rangle + \bar b$ over $v$ is a conjugate:
#
# $$J^\star \ \ge\ \bar b - \lambda\,\Omega^*(\mu), \qquad \mu = -\bar a/\lambda .$$
#
# This is the lower bound of every run on a regularized risk (`res.certificate` holds
# $\bar a$, $\bar b$). Subtracting it from $J(x)$ splits the gap into two nonnegative parts:
#
# $$J(x) - \big(\bar b - \lambda\Omega^*(\mu)\big)
#   = \lambda\underbrace{\big[\Omega(x) + \Omega^*(\mu) - \langle x, \mu\rangle\big]}_{\text{Fenchel-Young gap} \ \ge\ 0}
#   + \underbrace{\big[R(x) - \langle\bar a, x\rangle - \bar b\big]}_{\text{plane below } R \ \ge\ 0}.$$
#
# At an optimum both vanish: the **Fenchel-Young equality** $\Omega(x) + \Omega^*(\mu) =
# \langle x, \mu\rangle$ holds, i.e. $x \in \partial\Omega^*(\mu)$, and $x$ is read off the dual
# point through the dual connection. So the shape of $\partial\Omega^*$ is the shape of the
# solution.
#
# ## The data: weighting experts
#
# Twelve "experts" vote $\pm1$ on each example, with a confidence between 0.5 and 1; expert
# $j$ is right with probability $p_j$, from a coin flip (0.45) to fairly good (0.75). A linear
# classifier $\mathrm{sign}\langle x_i, w\rangle$ on the votes is a weighted vote, and the three
# regularizers weight the experts in three different ways. The votes are scaled by 4 so that
# the hinge's kink at margin 1 is within reach of a weighted vote with $\sum_j w_j = 1$.

# %%
rng = np.random.default_rng(0)
m, d = 600, 12
p_right = np.linspace(0.45, 0.75, d)
y = rng.choice([-1.0, 1.0], size=m)
votes = np.where(rng.random((m, d)) < p_right, y[:, None], -y[:, None])
X = 4.0 * votes * rng.uniform(0.5, 1.0, size=(m, d))
print("accuracy of each expert:", np.round(np.mean(votes == y[:, None], axis=0), 2))

# %% [markdown]
# ## Three regularizers, one solver
#
# BMRM takes any of them: its master problem is the dual over the kept planes, and it only
# needs $\Omega^*$ and $\nabla\Omega^*$ (a QP for L2, an LP for L1, a smooth problem on the
# simplex for the entropy). The values of $\lambda$ are picked so that each regularizer
# visibly acts.

# %%
setups = {
    "L2": (L2(), 0.03),
    "L1": (L1(), 0.2),
    "entropy (simplex)": (NegEntropy(normalized=True), 0.03),
}
rtol = 1e-6  # tight enough that the L1 dual point sits on its box where w_j != 0
runs, problems = {}, {}
for name, (reg, lam) in setups.items():
    problems[name] = nsopt.RegularizedRisk(Hinge(X, y), reg, lam=lam)
    runs[name] = nsopt.minimize(problems[name], method="bmrm", rtol=rtol, max_iter=3000)
    r = runs[name]
    acc = np.mean(np.sign(X @ r.x) == y)
    print(f"{name:18s} {r.status.value:10s} {r.nit:4d} iterations, gap {r.gap:.1e}, "
          f"{np.count_nonzero(r.x):2d} nonzero weights, sum(w) = {r.x.sum():.3f}, accuracy {acc:.1%}")
assert all(r.success for r in runs.values())

# %% [markdown]
# ## What each one does to $w$

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), sharex=True)
for ax, (name, r) in zip(axes, runs.items()):
    ax.bar(np.arange(d), r.x, color=np.where(r.x >= 0, "C0", "C3"))
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set(title=name, xlabel="expert (worst to best)")
axes[0].set_ylabel("weight $w_j$")
fig.tight_layout()
plt.show()

# %% [markdown]
# * **L2** keeps every expert and gives the coin-flip ones small weights of either sign: a
#   negative weight trusts an expert's *opposite* vote, which fits noise.
# * **L1** sets most weak experts' weights to exactly zero: a sparse vote of the good ones.
# * **Entropy on the simplex** gives a probability distribution: no weight is negative or
#   zero, they sum to 1, and the mass spreads over the good experts in proportion to
#   $e^{\mu_j}$ rather than picking a few.
#
# ## The dual connection, seen
#
# Take each run's dual point $\mu = -\bar a/\lambda$ from its certificate and plot $w_j$
# against $\mu_j$: the solution lies on the graph of $\partial\Omega^*$.

# %%
mus = {name: -runs[name].certificate.a_bar / setups[name][1] for name in runs}

fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
grid = np.linspace(mus["L2"].min() - 0.05, mus["L2"].max() + 0.05, 2)
ax = axes[0]
ax.plot(grid, grid, "k-", lw=0.8, label=r"$\nabla\Omega^*(\mu) = \mu$")
ax.plot(mus["L2"], runs["L2"].x, "o", label="solution")
ax = axes[1]
ax.plot([-1.5, -1, -1, 1, 1, 1.5], [-0.3, -0.3, 0, 0, 0.3, 0.3], "w", alpha=0)  # frame only
ax.plot([-1, -1], [-0.3, 0], "k-", lw=0.8)
ax.plot([-1, 1], [0, 0], "k-", lw=0.8)
ax.plot([1, 1], [0, 0.3], "k-", lw=0.8, label=r"$\partial\Omega^*$: normal cone of the box")
ax.plot(mus["L1"], runs["L1"].x, "o", label="solution")
ax = axes[2]
mu_e = mus["entropy (simplex)"]
ax.semilogy(mu_e, runs["entropy (simplex)"].x, "o", label="solution")
ax.semilogy(np.sort(mu_e), NegEntropy(normalized=True).conjugate_grad(np.sort(mu_e)), "k-",
            lw=0.8, label=r"softmax$(\mu)$")
for ax, name in zip(axes, runs):
    ax.set(title=name, xlabel=r"$\mu_j = -\bar a_j/\lambda$", ylabel="$w_j$")
    ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# * L2: $w = \mu$, the identity.
# * L1: $\Omega^*$ is the indicator of the box $\|\mu\|_\infty \le 1$. The bound is finite
#   only if $\mu$ is in the box, and $\partial\Omega^*(\mu)$ is the normal cone there:
#   $w_j = 0$ inside, $w_j \ge 0$ only where $\mu_j = 1$, $w_j \le 0$ only where $\mu_j = -1$.
#   That is where sparsity comes from: a coordinate whose $|\mu_j|$ stays below 1 is zero.
# * Entropy: $w = \mathrm{softmax}(\mu)$, a straight line on a log scale, $\log w_j = \mu_j -
#   \log\sum_k e^{\mu_k}$: every weight is positive, and $\lambda$ sets how sharply it
#   concentrates (a smaller $\lambda$ gives a larger $\mu = -\bar a/\lambda$).

# %%
mu_l1, w_l1 = mus["L1"], runs["L1"].x
print("L1: max |mu_j| =", f"{np.abs(mu_l1).max():.6f}",
      "; |mu_j| where w_j != 0:", np.round(np.abs(mu_l1[w_l1 != 0]), 4))
assert np.abs(mu_l1).max() <= 1.0 + 1e-9  # else the bound would be -inf
assert np.all(np.abs(mu_l1[w_l1 != 0]) > 0.99)
assert np.all(np.sign(w_l1[w_l1 != 0]) == np.sign(mu_l1[w_l1 != 0]))

# %% [markdown]
# ## The Fenchel-Young equality at the solution, in numbers
#
# For each run: the Fenchel-Young gap $\Omega(x) + \Omega^*(\mu) - \langle x, \mu\rangle$ at
# the returned $x$ (zero at an optimum), the plane's gap $R(x) - \langle\bar a, x\rangle -
# \bar b$, and the check that $\lambda\cdot$(first) + (second) is the reported gap. At
# $w = \nabla\Omega^*(\mu)$ itself the equality holds to rounding, by construction.

# %%
print(f"{'regularizer':18s} {'FY gap at x':>12s} {'plane gap':>10s} {'lam*FY+plane':>13s} "
      f"{'reported gap':>12s} {'FY at grad':>10s}")
for name, r in runs.items():
    reg, lam = setups[name]
    J, mu, c = problems[name], mus[name], r.certificate
    fy = reg.value(r.x) + reg.conjugate(mu) - r.x @ mu
    plane = J.loss.value(r.x) - c.a_bar @ r.x - c.b_bar
    w_mu = reg.conjugate_grad(mu)
    fy_at_grad = reg.value(w_mu) + reg.conjugate(mu) - w_mu @ mu if name != "L1" else 0.0
    print(f"{name:18s} {fy:12.2e} {plane:10.2e} {lam * fy + plane:13.3e} {r.gap:12.3e} {fy_at_grad:10.1e}")
    scale = 1e-9 * (1 + abs(r.fun))
    assert fy >= -scale and plane >= -scale
    assert abs(lam * fy + plane - r.gap) <= scale
    assert lam * fy <= r.gap + scale  # so FY(x, mu) <= gap / lam -> 0 as the gap closes
    assert abs(fy_at_grad) <= 1e-12 * (1 + abs(reg.conjugate(mu)))

# %% [markdown]
# (For L1, `conjugate_grad` returns $0$, one element of the normal cone; the informative
# element is the solution itself, as the plot shows.)
#
# Both parts are at most the gap, which the solver drove below `rtol * fun`: the returned
# $x$ satisfies the Fenchel-Young equality to within $\text{gap}/\lambda$. This is how one
# certificate serves every regularizer: the solver never needs $\Omega$'s structure beyond
# $\Omega^*$ and $\nabla\Omega^*$, and what $\partial\Omega^*$ looks like (the identity, a box's
# normal cone, a softmax) is what the solution looks like.
#
# `KL(prior)` is the entropy relative to a prior $\pi$: $\Omega^*(\mu) = \log\sum_j \pi_j
# e^{\mu_j}$, $w \propto \pi \odot e^{\mu}$: the same spreading, around $\pi$ instead of the
# uniform distribution.

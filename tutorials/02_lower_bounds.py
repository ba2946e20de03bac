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
# # Lower bounds: where cutting planes are slow, and a dual method that is not
#
# BMRM needs $O(1/(\lambda\epsilon))$ iterations to certify a gap $\epsilon$. Saha, Zhang and
# Vishwanathan (arXiv:0909.1334, "SZV09") show that this is tight: on one instance the gap after
# $t$ iterations is exactly $1/(2\lambda t)$. They also train SVMs with Nesterov's excessive gap
# technique ("Pragam"), whose certified gap falls as $O(1/k^2)$.
#
# This notebook
#
# 1. builds the lower-bound instance (corrected: the matrix printed in the paper is singular),
# 2. watches BMRM's gap follow $1/(2\lambda t)$ exactly,
# 3. explains why no cutting-plane method with a vertex oracle can do better there, and why a
#    dual method solves the instance at once,
# 4. runs `ExcessiveGap` on SVM data and compares its measured gap with $O(1/k^2)$.
#
# Run it as a script (`python tutorials/02_lower_bounds.py`) or open it as a notebook with
# `jupytext --to notebook 02_lower_bounds.py` (the figures then appear inline).

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
from scipy.linalg import hadamard

import nsopt
from nsopt.inner import project_simplex
from nsopt.losses import Hinge
from nsopt.oracle import Oracle
from nsopt.solvers import BMRM, ExcessiveGap
from nsopt.saddle import SaddleForm

# %% [markdown]
# ## The instance
#
# Take the $d \times d$ Hadamard matrix $H_d$ ($d = 2^k$, entries $\pm1$, $H_d H_d^T = dI$) and
# its scaled columns $a_i$, the columns of $A = H_d/\sqrt d$: they are orthonormal. The problem is
#
# $$J(w) = \max_{i \le d}\ \langle a_i, w\rangle + c + \frac\lambda2\|w\|^2,
#   \qquad c = \frac{1}{2\lambda d},$$
#
# with minimum $J^* = 0$ at $w^* = -Ae/(\lambda d)$. The "loss" is a maximum of $d$ linear
# functions. Its oracle is a *vertex* oracle: it returns one column $a_i$ with $i$ a maximiser,
# as any max-type or hinge loss does.
#
# (The paper prints $A = \frac{1}{\sqrt d}\begin{pmatrix} H_{d/2} & -H_{d/2}\\ -H_{d/2} &
# H_{d/2}\end{pmatrix}$, whose columns come in pairs $a_{j+d/2} = -a_j$; the second cut is then
# forced to be $-a_1$ and BMRM is optimal after two steps. `tests/test_lower_bound_hadamard.py`
# keeps that erratum as a regression test.)
#
# The oracle also declares its *saddle form* $\max_{\alpha\in\Delta_d}\langle\alpha,
# c\,e + A^T w\rangle$, which is what the dual method below uses.

# %%
class HadamardMax(Oracle):
    """R(w) = max_i <a_i, w> + c, answering with one column (a vertex of the subdifferential)."""

    def __init__(self, A, shift):
        self.A, self.shift, self.dim = A, shift, A.shape[0]

    def _value_and_subgradient(self, w):
        s = self.A.T @ w
        i = int(np.argmax(s))
        return float(s[i] + self.shift), self.A[:, i].copy()

    def saddle_form(self):
        A, d = self.A, self.A.shape[1]
        return SaddleForm(matvec=lambda w: -(A.T @ w), rmatvec=lambda a: -(A @ a),
                          offset=np.full(d, self.shift), project=project_simplex,
                          center=np.full(d, 1.0 / d), radius_sq=0.5 * (1 - 1 / d))


d, lam = 64, 0.05
A = hadamard(d) / math.sqrt(d)
print("max |A^T A - I| =", np.abs(A.T @ A - np.eye(d)).max())
J_hard = nsopt.RegularizedRisk(HadamardMax(A, 1 / (2 * lam * d)), lam=lam)

# %% [markdown]
# ## BMRM's gap is exactly $1/(2\lambda t)$
#
# We run BMRM with an exact master problem (`inner_rtol=0`) for $d - 1$ iterations. Its first
# plane comes from the start $w_0 = 0$, so history row $j$ holds the gap $\epsilon_t$ after
# $t = j + 1$ planes.

# %%
res_bmrm = BMRM(inner_rtol=0.0, rtol=0.0, atol=1e-300, max_iter=d - 2).solve(J_hard)
eps = res_bmrm.history["gap"]
t = np.arange(1, eps.size + 1)
print("max |eps_t * 2 lam t - 1| over t < d:", np.abs(eps * 2 * lam * t - 1).max())

# %% [markdown]
# ## Why no cutting-plane method with a vertex oracle can beat $1/(2\lambda t)$ here
#
# Every answer of the oracle is a column: at $w$ it returns $a_i$ with $i$ a maximiser, and the
# plane $R(v) \ge \langle a_i, v\rangle + b$ has $b = R(w) - \langle a_i, w\rangle = c$. So after
# $t$ oracle calls, *wherever they were made*, a method knows at most $t$ distinct planes
# $\langle a_i, v\rangle + c$. The best lower bound these planes prove is the cutting-plane dual
#
# $$\max_{\alpha\in\Delta_t}\ c - \frac{1}{2\lambda}\Big\|\sum_{i\le t}\alpha_i a_i\Big\|^2
#   = c - \frac{1}{2\lambda t},$$
#
# because the columns are orthonormal and $\|\sum\alpha_i a_i\|^2 = \|\alpha\|^2 \ge 1/t$ on
# the simplex. Since $J^* = 0 = c - 1/(2\lambda d)$, the certified gap after $t$ calls is at least
# $1/(2\lambda t) - 1/(2\lambda d)$: to certify $\epsilon$ one needs $t \gtrsim 1/(2\lambda\epsilon)$
# calls, which is Theorem 5's $O(1/(\lambda\epsilon))$ up to its constant. BMRM meets the bound
# with equality because its primal side never improves on $J(w_0) = c$: each master minimiser
# $w_t = -\frac{1}{\lambda t}\sum_{i \le t} a_i$ has $J(w_t) = c + 1/(2\lambda t)$, and it sees a
# fresh orthogonal column at every step (the used columns give $-1/(\lambda t)$, the unused
# ones $0$). Line searches, aggregation or a proximal term change where the oracle is called, not
# what it can answer, so they cannot beat the bound on the certificate either.
#
# ## Why a dual method solves it at once
#
# A dual method does not learn $R$ one plane at a time: it works with the saddle form over *all*
# $d$ pieces, $D(\alpha) = c - \frac{1}{2\lambda}\|A\alpha\|^2$ on the whole simplex. The excessive
# gap technique starts at the prox-centre $\alpha_c = e/d$, the centre of the simplex. By the
# symmetry of the instance that is the dual optimum: $w(\alpha_c) = -A e/(\lambda d) = w^*$, and
# $\nabla D(\alpha_c)$ is a constant vector, so the projected gradient step does not move. One
# iteration certifies $J^*$. The instance is hard for cutting planes because of *how they pick
# cuts*, not because the problem is hard.

# %%
res_eg_hard = ExcessiveGap(rtol=0.0, atol=1e-12, max_iter=5).solve(J_hard)
print(f"ExcessiveGap on the instance: {res_eg_hard.nit} iteration(s), fun = {res_eg_hard.fun:.2e}, "
      f"lower bound = {res_eg_hard.lower_bound:.2e}")
print(f"BMRM after {res_bmrm.nit + 1} planes: gap = {res_bmrm.gap:.4f} = 1/(2 lam (d-1)) "
      f"= {1 / (2 * lam * (d - 1)):.4f}")

# %% [markdown]
# ## ExcessiveGap on SVM data: $O(1/k^2)$
#
# On a binary hinge-loss SVM, $R(w) = \max_{\alpha\in[0,1/m]^m}\sum_i\alpha_i(1 - y_i\langle
# x_i, w\rangle)$, the dual is $D(\alpha) = \sum_i\alpha_i - \frac{1}{2\lambda}\|\sum_i\alpha_i
# y_i x_i\|^2$ with an $L$-Lipschitz gradient, $L = \|YX\|_2^2/\lambda$, and the prox-function
# $\frac12\|\alpha\|^2$ has $D_2 = \max \frac12\|\alpha\|^2 = 1/(2m)$ on the box. With the
# seed's fixed schedule ($\tau_k = 2/(k+3)$, $\mu_k = 4L/((k+1)(k+2))$) the measured gap obeys
#
# $$J(w_k) - D(\alpha_k) \le \frac{4 L D_2}{(k+1)(k+2)}$$
#
# at every $k$. The default (`adaptive_lipschitz=True`) estimates $L$ along the path by backtracking on a
# checked descent inequality; the same bound holds with its own $\mu_k$, and it is usually much
# faster because the curvature met along the path is far below $\|YX\|_2^2/\lambda$.

# %%
X, y = nsopt.datasets.make_sparse_binary(1000, 60, random_state=0)
lam_svm = 1e-3
J_svm = nsopt.RegularizedRisk(Hinge(X, y), lam=lam_svm)
m = X.shape[0]
L = np.linalg.norm((X.multiply(y[:, None])).toarray(), 2) ** 2 / lam_svm
runs = {
    "ExcessiveGap, fixed L": ExcessiveGap(adaptive_lipschitz=False, lipschitz=L, rtol=1e-5, max_iter=1000).solve(J_svm),
    "ExcessiveGap, adaptive L": ExcessiveGap(rtol=1e-5, max_iter=1500).solve(J_svm),
    "BMRM": BMRM(rtol=1e-5, max_iter=1500).solve(J_svm),
}
for name, r in runs.items():
    rel = r.history["gap"] / np.abs(r.history["fun"])
    first = int(np.argmax(rel <= 1e-3))
    print(f"{name:26s} iterations to rel. gap 1e-3: {first:5d}   final gap {r.gap:.2e} after {r.nit}")
r = runs["ExcessiveGap, adaptive L"]
k, gap = r.history["iteration"], r.history["gap"]
tail = (k >= k.max() // 10) & (gap > 0)
print(f"fitted slope of log(gap) vs log(k) over the tail: {np.polyfit(np.log(k[tail]), np.log(gap[tail]), 1)[0]:.2f}")

# %% [markdown]
# ## The picture
#
# Left: BMRM's gap on the lower-bound instance lies on $1/(2\lambda t)$. Right: the measured
# gap of `ExcessiveGap` on the SVM with the a-priori bound $4LD_2/((k+1)(k+2))$ and BMRM's gap
# for reference. BMRM is often fast on real data (its worst case is the left panel); the excessive
# gap method has the better guarantee and a certificate at every step.

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ax1.loglog(t, eps, "o", ms=3, label="BMRM gap $\\epsilon_t$")
ax1.loglog(t, 1 / (2 * lam * t), "-", label="$1/(2\\lambda t)$")
ax1.set(xlabel="planes $t$", ylabel="gap", title=f"Hadamard instance, d = {d}, $\\lambda$ = {lam}")
ax1.legend()
kk = np.arange(1, 1001)
ax2.loglog(kk, 4 * L / (2 * m) / ((kk + 1) * (kk + 2)), "k--", label="$4LD_2/((k+1)(k+2))$")
for name, r in runs.items():
    it = r.history["iteration"]
    ax2.loglog(it[1:], r.history["gap"][1:], label=name)
ax2.set(xlabel="iteration $k$", ylabel="certified gap", title=f"SVM, m = {m}, $\\lambda$ = {lam_svm}")
ax2.legend(fontsize=8)
fig.tight_layout()
plt.show()

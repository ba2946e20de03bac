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
# # Multivariate losses: train for the score you report
#
# The hinge loss is a surrogate for the error rate, a sum over examples. Many scores are not
# sums over examples: the **area under the ROC curve** counts misordered (negative, positive)
# pairs, and the **F1 score** is a ratio of counts over the whole set. On unbalanced data
# (here 24% positives) a classifier tuned for accuracy is not the best one for either.
#
# Joachims (2005) and Teo et al. (2010, "TVSL10") train for such scores directly with convex
# upper bounds that couple all the examples:
#
# * `ROCArea(X, y)`: $R(w) = \frac{1}{m_+m_-}\sum_{y_i < y_j}\max(0, 1 + f_i - f_j)$,
#   $f = Xw$, a hinge on every (negative $i$, positive $j$) pair, which bounds $1 -
#   \mathrm{AUC}$. Value and subgradient in $O(m\log m)$ by one sort, not $O(m_+m_-)$;
# * `FBeta(X, y)`: $R(w) = \max_{y'\in\{\pm1\}^m}\big[1 - F_1(y, y') + \sum_i (y'_i -
#   y_i) f_i\big]$, a structured hinge over all $2^m$ labellings, which bounds $1 - F_1$ of the
#   predictions $\mathrm{sign}(Xw)$; the max is found in $O(m \log m)$ (TVSL10 Alg. 11).
#
# Both are oracles like any other, so the same solvers and certificates apply. We train three
# linear models on the same data, with the hinge loss, `ROCArea` and `FBeta`, and report the
# AUC and the F1 score of each on held-out data.
#
# Open this file as a notebook with `jupytext --to notebook 06_multivariate_losses.py` (the
# figures appear inline), or run it as a script.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import rankdata

import nsopt
from nsopt.losses import FBeta, Hinge, ROCArea

SMALL = os.environ.get("NSOPT_TUTORIAL_SMALL") == "1"  # set by the test suite

# %% [markdown]
# ## The data
#
# The UCI Adult set as LIBSVM ships it (`a9a`: 123 binary features, income above 50K as the
# positive class), from the shared data folder (`nsopt.io.find_data_dir()`: the environment
# variable `NSOPT_DATA`, or `../shared/data`). We train on a random subset of the training file
# and test on the whole test file. Without the data folder the notebook runs on synthetic data
# of the same shape, and says so.

# %%
m_train = 2000 if SMALL else 4000
rng = np.random.default_rng(0)
try:
    X_all, y_all = nsopt.io.load_dataset("a9a")
    X_test, y_test = nsopt.io.load_dataset("a9a.t")
    source = "a9a (UCI Adult)"
except FileNotFoundError as err:
    print("NOTE: the shared data folder is not here, so this notebook runs on SYNTHETIC data "
          "(nsopt.datasets.make_sparse_binary); the numbers below are not a9a's.\n ", err)
    X_all, y_all = nsopt.datasets.make_sparse_binary(m_train + 8000, 123, random_state=0)
    X_test, y_test = X_all[m_train:], y_all[m_train:]
    X_all, y_all = X_all[:m_train], y_all[:m_train]
    source = "synthetic"
idx = rng.choice(X_all.shape[0], size=min(m_train, X_all.shape[0]), replace=False)
X, y = X_all[idx], y_all[idx]
print(f"{source}: train {X.shape[0]} x {X.shape[1]}, {np.mean(y > 0):.0%} positive; "
      f"test {X_test.shape[0]} examples, {np.mean(y_test > 0):.0%} positive")

# %% [markdown]
# ## The scores
#
# AUC by the Mann-Whitney statistic (ranks, ties counted half) and F1 of the predictions
# $\mathrm{sign}(f)$, in a few lines of numpy.

# %%
def auc(scores, labels):
    """Area under the ROC curve: the fraction of (negative, positive) pairs ordered right."""
    ranks = rankdata(scores)
    pos = labels > 0
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def f1(scores, labels, threshold=0.0):
    """F1 score of the predictions scores > threshold."""
    predicted = scores > threshold
    true_pos = np.sum(predicted & (labels > 0))
    return 2 * true_pos / (predicted.sum() + np.sum(labels > 0))


# %% [markdown]
# ## Three losses, one solver
#
# The hinge loss and `ROCArea` are means (over examples, over pairs), with the usual
# $\lambda$. `FBeta` is not divided by $m$ (as in the paper and SVMperf): its margin term is a
# sum over the examples while $1 - F_1 \in [0, 1]$ is not, so it wants a larger $\lambda$; we
# take $\lambda = 3m$. Each run certifies its own gap, `rtol = 1e-3`.

# %%
lam = 1e-3
problems = {
    "hinge (accuracy)": nsopt.RegularizedRisk(Hinge(X, y), lam=lam),
    "ROCArea": nsopt.RegularizedRisk(ROCArea(X, y), lam=lam),
    "FBeta (F1)": nsopt.RegularizedRisk(FBeta(X, y), lam=3.0 * X.shape[0]),
}
runs = {name: nsopt.minimize(J, method="bmrm", rtol=1e-3, max_iter=2000) for name, J in problems.items()}

print(f"{'trained with':18s} {'status':10s} {'iter':>5s} {'time':>6s} | held out: {'AUC':>6s} {'F1':>6s} {'accuracy':>8s}")
scores = {}
for name, r in runs.items():
    s = X_test @ r.x
    scores[name] = s
    print(f"{name:18s} {r.status.value:10s} {r.nit:5d} {r.time:5.2f}s | {'':10s} {auc(s, y_test):6.4f} "
          f"{f1(s, y_test):6.4f} {np.mean(np.where(s > 0, 1, -1) == y_test):8.2%}")
assert all(r.success for r in runs.values())
for column, score in [("AUC", auc), ("F1", f1),
                      ("accuracy", lambda s, t: np.mean(np.where(s > 0, 1, -1) == t))]:
    print(f"best held-out {column:8s}: {max(scores, key=lambda n: score(scores[n], y_test))}")

# %% [markdown]
# ## What each model is good at
#
# Read the table by columns. On a9a the model trained with `ROCArea` orders the test examples
# best (AUC), the one trained with `FBeta` has the best F1, and the hinge model the best
# accuracy. The AUC margins are small (a few thousandths) and vary with the subset; the F1
# margin is not.
#
# The `ROCArea` model's F1 at threshold 0 is poor, and that is no fault of the model: the
# pairwise loss only sees differences $f_j - f_i$, so it is blind to a shift of all scores
# and says nothing about where to cut. Choosing the threshold on the *training* data fixes
# that (to an F1 close to the `FBeta` model's) and leaves its AUC as it is:

# %%
train_scores = X @ runs["ROCArea"].x
candidates = np.quantile(train_scores, np.linspace(0.01, 0.99, 197))
best = candidates[np.argmax([f1(train_scores, y, t) for t in candidates])]
print(f"ROCArea model: F1 at threshold 0 = {f1(scores['ROCArea'], y_test):.4f}, at the threshold "
      f"chosen on the training data ({best:+.3f}) = {f1(scores['ROCArea'], y_test, best):.4f}")

# %% [markdown]
# ## ROC curves and the scores, drawn

# %%
def roc_curve(scores, labels):
    order = np.argsort(-scores, kind="stable")
    pos = labels[order] > 0
    tpr = np.concatenate([[0.0], np.cumsum(pos) / pos.sum()])
    fpr = np.concatenate([[0.0], np.cumsum(~pos) / (~pos).sum()])
    return fpr, tpr


fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
for name, s in scores.items():
    fpr, tpr = roc_curve(s, y_test)
    ax1.plot(fpr, tpr, label=f"{name}: AUC {auc(s, y_test):.4f}")
ax1.plot([0, 1], [0, 1], color="gray", lw=0.6, linestyle=":")
ax1.set(xlabel="false positive rate", ylabel="true positive rate", title=f"ROC on held-out {source}")
ax1.legend(fontsize=8, loc="lower right")

names = list(scores)
at = np.arange(len(names))
ax2.bar(at - 0.2, [auc(scores[n], y_test) for n in names], width=0.4, label="AUC")
ax2.bar(at + 0.2, [f1(scores[n], y_test) for n in names], width=0.4, label="F1 (threshold 0)")
ax2.set_xticks(at, names, fontsize=8)
ax2.set(ylim=(0.5, 0.95), title="held-out scores of each model")
ax2.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Convergence: a multivariate loss is an oracle like any other
#
# The three runs side by side. The `FBeta` oracle is a max over labellings of the whole set,
# with very flat regions and many kinks; BMRM needs more planes for it than for the hinge,
# but its certificate is the same kind: a proven lower bound on each problem's optimum.

# %%
fig = nsopt.plot.convergence(runs, x="iteration", bounds=False)
fig.axes[0].set_title("relative gap of each training problem")
plt.show()

# %% [markdown]
# ## Takeaways
#
# * Train for the score you will report: pairwise (`ROCArea`) for ranking, the
#   structured F1 loss (`FBeta`) for F1 at the decision threshold, the hinge for accuracy.
# * These losses are not sums over examples, but nsopt computes their value and subgradient
#   in $O(m\log m)$ and solves them with the same solvers and certificates.
# * Mind the scaling: `FBeta` (like SVMperf's losses) is not divided by $m$, so its $\lambda$
#   is on another scale than a mean loss's.
# * Related: `PRBEP` (precision-recall break-even point), `OrdinalRegression`,
#   `PreferencePairs` and `NDCG` (ranking, with queries), all in `nsopt.losses`.

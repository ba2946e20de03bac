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
# # Structured prediction: labelling sequences with a chain
#
# In sequence labelling each position $t$ of a sequence $x = (x_1, \dots, x_T)$ gets a state
# $y_t \in \{0, \dots, S-1\}$ (a part of speech, a phoneme, a gene region). Neighbouring
# states are related, so predicting each position on its own wastes information. A **chain
# model** scores a whole labelling,
#
# $$\langle w, \phi(x, y)\rangle = \sum_{t=1}^T \langle E_{y_t}, x_t\rangle
#   + \sum_{t=2}^T A_{y_{t-1}y_t},$$
#
# with emission weights $E$ ($S \times F$) and transition scores $A$ ($S \times S$), and
# predicts the best labelling by Viterbi, $O(TS^2)$. It is trained with the
# margin-rescaled structured hinge loss (Taskar et al.; TVSL10 eq. 24),
#
# $$l(x, y, w) = \max_{y'}\ \Delta(y, y') + \langle w, \phi(x, y') - \phi(x, y)\rangle,
#   \qquad \Delta(y, y') = \frac1T\sum_t [y_t \ne y'_t],$$
#
# a max over all $S^T$ labellings that Viterbi computes too, because the Hamming loss adds
# to the per-position scores (*loss-augmented inference*). The maximiser $\bar y$ gives the
# subgradient $\phi(x, \bar y) - \phi(x, y)$, and the loss bounds the Hamming loss of the
# prediction: $l(x, y, w) \ge \Delta(y, y^*)$.
#
# `nsopt.losses.structured.ChainHinge` is this loss with a compiled Viterbi;
# `StructuredHinge` takes your own joint features and inference.
#
# Open this file as a notebook with `jupytext --to notebook 07_structured_prediction.py` (the
# figures appear inline), or run it as a script.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import nsopt
import nsopt.plot
from nsopt.losses import MulticlassHinge
from nsopt.losses.structured import ChainHinge, StructuredHinge

# %% [markdown]
# ## A synthetic task
#
# Three states follow a "sticky" Markov chain (a state stays with probability 0.9), and each
# position shows a noisy 4-dimensional feature vector around its state's mean. The noise is
# large: one position alone says little about its state, a run of positions says a lot.

# %%
rng = np.random.default_rng(0)
S, F, T = 3, 4, 20
P = np.array([[0.90, 0.08, 0.02],
              [0.05, 0.90, 0.05],
              [0.02, 0.08, 0.90]])
means = 0.8 * rng.standard_normal((S, F))


def sample(n):
    X_seqs, Y_seqs = [], []
    for _ in range(n):
        y = [rng.integers(S)]
        for _ in range(T - 1):
            y.append(rng.choice(S, p=P[y[-1]]))
        y = np.array(y)
        X_seqs.append(means[y] + rng.standard_normal((T, F)))
        Y_seqs.append(y)
    return X_seqs, Y_seqs


X_train, Y_train = sample(60)
X_test, Y_test = sample(200)
print(f"{len(X_train)} training and {len(X_test)} test sequences of length {T}, {S} states, {F} features")

# %% [markdown]
# ## Training the chain
#
# `ChainHinge(X_seqs, Y_seqs, n_states)` is an oracle on $w = (E, A)$ flattened
# (`split_weights(w)` gives them back). Loss-augmented Viterbi runs over all sequences in one
# compiled pass.

# %%
chain = ChainHinge(X_train, Y_train, n_states=S)
J = nsopt.RegularizedRisk(chain, lam=1e-2)
res = nsopt.minimize(J, method="bmrm", rtol=1e-3)
print(res)


def hamming(predicted, truth):
    """The fraction of mislabelled positions."""
    return float(np.mean(np.concatenate([p != y for p, y in zip(predicted, truth)])))


train_error = hamming(chain.predict(X_train, res.x), Y_train)
print(f"training risk {chain.value(res.x):.4f} >= training Hamming error {train_error:.4f}")
assert chain.value(res.x) >= train_error  # the structured hinge bounds the Hamming loss

# %% [markdown]
# ## Against labelling each position on its own
#
# The baseline sees the same emission features but no transitions: a multiclass SVM
# (Crammer-Singer, `MulticlassHinge`) on the positions, as if they were independent.

# %%
X_pos, y_pos = np.vstack(X_train), np.concatenate(Y_train)
independent = MulticlassHinge(X_pos, y_pos, n_classes=S)
res_ind = nsopt.minimize(nsopt.RegularizedRisk(independent, lam=1e-3), method="bmrm", rtol=1e-3)
W = res_ind.x.reshape(independent.shape)  # (F, S)

pred_chain = chain.predict(X_test, res.x)
pred_ind = [np.argmax(x @ W, axis=1) for x in X_test]
err_chain, err_ind = hamming(pred_chain, Y_test), hamming(pred_ind, Y_test)
print(f"held-out Hamming error: each position on its own {err_ind:.1%}, chain {err_chain:.1%}")
assert err_chain < err_ind

# %% [markdown]
# The chain makes far fewer mistakes. Where does that come from? Look at the learned
# transition scores next to the log-probabilities of the true chain, and at one test sequence.

# %%
E, A = chain.split_weights(res.x)
fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(13, 3.6),
                                    gridspec_kw={"width_ratios": [1, 1, 2.2]})
for ax, M, title in [(ax1, np.log(P), "log P (true chain)"), (ax2, A, "learned A")]:
    im = ax.imshow(M, cmap="viridis")
    ax.set(title=title, xlabel="to state", ylabel="from state", xticks=range(S), yticks=range(S))
    fig.colorbar(im, ax=ax, shrink=0.8)
# a telling sequence: the one where the chain gains most over the independent labels
k = int(np.argmax([np.sum(pi != y) - np.sum(pc != y) for pc, pi, y in zip(pred_chain, pred_ind, Y_test)]))
rows = np.vstack([Y_test[k], pred_ind[k], pred_chain[k]])
ax3.imshow(rows, cmap="viridis", aspect="auto", vmin=0, vmax=S - 1)
ax3.set_yticks(range(3), ["truth", "independent", "chain"])
ax3.set(xlabel="position t", title=f"test sequence {k} (colour = state)")
fig.tight_layout()
plt.show()

# %% [markdown]
# The learned $A$ has large diagonal entries: staying in a state is rewarded, as in the true
# chain. The independent classifier flips between states wherever the noise pushes one
# position across a boundary; the chain smooths those flips away, because a switch of state
# costs a transition score that one noisy position cannot pay for.
#
# ## Convergence
#
# The structured hinge is a max over exponentially many labellings, but to BMRM it is an
# oracle like the others: a value, a subgradient, a plane. `res.plot()` shows the certified
# gap closing.

# %%
res.plot()
plt.show()

# %% [markdown]
# ## Your own model: `StructuredHinge`
#
# For another structure (trees, matchings, alignments), give `StructuredHinge` your joint
# feature map $\phi(x, y)$ and your loss-augmented inference $(x, y, w) \mapsto (\bar y,
# \Delta(y, \bar y))$. To check the idea, plug in the chain's own `joint_feature` and
# `loss_augmented_argmax`: the two oracles agree, value and subgradient.

# %%
examples = list(zip(X_train, Y_train))
generic = StructuredHinge(chain.joint_feature, chain.loss_augmented_argmax, examples, chain.dim,
                          label_loss=chain.label_loss)
w = rng.standard_normal(chain.dim)
(v1, g1), (v2, g2) = generic.value_and_subgradient(w), chain.value_and_subgradient(w)
print(f"StructuredHinge {v1:.12f}, ChainHinge {v2:.12f}, max |g1 - g2| = {np.abs(g1 - g2).max():.1e}")
assert np.isclose(v1, v2, rtol=1e-12) and np.allclose(g1, g2, atol=1e-12)

t0 = time.perf_counter()
generic.value_and_subgradient(w)
t1 = time.perf_counter()
chain.value_and_subgradient(w)
t2 = time.perf_counter()
print(f"one oracle call: StructuredHinge {1e3 * (t1 - t0):.1f} ms (a Python loop over the "
      f"sequences), ChainHinge {1e3 * (t2 - t1):.2f} ms (compiled)")

# %% [markdown]
# The generic oracle calls your inference once per example per evaluation, in Python;
# `ChainHinge` does the same work in one compiled pass. With `label_loss=` the generic class
# also checks every $\Delta$ your inference returns, which catches inference bugs early; with
# `all_argmax=` (all tied maximisers) its `sup_subgradient` is exact at ties, which the
# quasi-Newton solvers need. Check a new model's oracle with `nsopt.testing.check_oracle`
# (tutorial 08).

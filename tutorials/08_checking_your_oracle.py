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
# # Checking your own oracle with hypothesis
#
# A solver trusts its oracle: a wrong subgradient gives a wrong plane, and a wrong plane gives
# a "proven" lower bound that is false. `nsopt.testing` checks an oracle against the laws every
# convex function obeys, and gives hypothesis strategies that draw the points where oracles
# go wrong: **kinks**.
#
# At a kink the subdifferential $\partial f(x)$ is a set, not a point, and the directional
# derivative is its support function,
#
# $$f'(x; p) = \lim_{h \downarrow 0}\frac{f(x + hp) - f(x)}{h} = \max_{g \in \partial f(x)}\langle g, p\rangle .$$
#
# The oracle's `sup_subgradient(x, p)` must return this max and a $g$ attaining it (line
# searches and the quasi-Newton methods rely on it). Off the kinks $\partial f(x) =
# \{\nabla f(x)\}$ and any code that returns the gradient is right, so **random points cannot
# tell a correct `sup_subgradient` from a wrong one**: they almost never land on a kink.
#
# Open this file as a notebook with `jupytext --to notebook 08_checking_your_oracle.py` (the
# figures appear inline), or run it as a script.

# %%
import matplotlib.pyplot as plt
import numpy as np
from hypothesis import Phase, given, settings

import nsopt
from nsopt.testing import KinkPlanes, MaxPieces, check_oracle, kink_points, points

#: the same examples on every run, no example database on disk
quick = settings(max_examples=30, derandomize=True, database=None, deadline=None)

# %% [markdown]
# ## A user's function: the worst of a few affine scenarios
#
# $$f(x) = \max_{k} \ \langle a_k, x\rangle + b_k .$$
#
# Its subdifferential is the hull of the slopes of the pieces that attain the max, $I(x)$, so
#
# $$f'(x; p) = \max_{k \in I(x)} \langle a_k, p\rangle .$$
#
# The slopes are in $\{-1, 0, 1\}$ and the offsets multiples of $1/4$, so the values at the
# points drawn below are computed exactly and ties are real ties (see "exactness" in
# `help(kink_points)`).

# %%
A = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
b = np.array([0.0, 0.25, -1.0, -0.5, -0.75])
d = A.shape[1]


def value_and_subgradient(x):
    v = A @ x + b
    k = int(np.argmax(v))
    return float(v[k]), A[k].copy()


def sup_subgradient(x, p):
    v = A @ x + b
    tied = np.flatnonzero(v >= v.max() - 1e-12 * (1.0 + np.abs(v).max()))  # I(x)
    k = tied[int(np.argmax(A[tied] @ p))]                                  # steepest along p
    return float(A[k] @ p), A[k].copy()


oracle = nsopt.FunctionOracle(value_and_subgradient=value_and_subgradient,
                              sup_subgradient=sup_subgradient, dim=d)

# %% [markdown]
# ## `check_oracle`: the laws of a convex oracle
#
# `check_oracle(oracle)` draws (point, direction) pairs and checks: finite values; the
# subgradient inequality $f(v) \ge f(x) + \langle g, v - x\rangle$; `sup_subgradient` against
# one-sided difference quotients; `restrict` (the function on a line) against the oracle. It
# returns `None` when every law holds and raises an `AssertionError` naming the law, the point
# and the numbers when one fails.

# %%
check_oracle(oracle)
print("check_oracle on 20 random points: every law holds")

# %% [markdown]
# ## The same with hypothesis
#
# hypothesis draws many inputs, and when a test fails it *shrinks* the input to a simple
# failing example. `nsopt.testing.points(d)` draws points; we check the oracle at each.

# %%
plain_seen = []


@quick
@given(x=points(d, scale=4.0))
def test_on_points(x):
    plain_seen.append(x)
    check_oracle(oracle, points=x, n=4)


test_on_points()
print(f"hypothesis, {len(plain_seen)} plain points: every law holds")

# %% [markdown]
# ## A planted bug
#
# A natural mistake: `sup_subgradient` returns the slope of the first maximiser, `np.argmax`,
# and ignores the other tied pieces. It is right wherever one piece is on top, that is,
# almost everywhere.

# %%
def sup_subgradient_buggy(x, p):
    v = A @ x + b
    k = int(np.argmax(v))  # bug: the first maximiser, not the steepest tied one along p
    return float(A[k] @ p), A[k].copy()


buggy = nsopt.FunctionOracle(value_and_subgradient=value_and_subgradient,
                             sup_subgradient=sup_subgradient_buggy, dim=d)


@quick
@given(x=points(d, scale=4.0))
def test_buggy_on_points(x):
    check_oracle(buggy, points=x, n=4)


check_oracle(buggy, n=100)
print("the buggy oracle passes on 100 random points")
# hypothesis mixes constants of the code it has imported into its draws (6.13x and later),
# so one of its plain points may land on a kink by chance
try:
    test_buggy_on_points()
    print("and on hypothesis's plain points")
except AssertionError:
    print("hypothesis's plain points hit a kink by chance this time")

# %% [markdown]
# ## Kink points for your function
#
# `kink_points(oracle, kinks=...)` draws points *on* kinks. You say what the kinks are; for a
# maximum of affine pieces, give the pieces: `MaxPieces(slopes, intercepts)`. The strategy
# draws a point $x$ and an axis $\pm e_j$, follows the line $x + t(\pm e_j)$, on which the
# pieces are lines $\alpha_k + t\beta_k$, and stops at the first breakpoint of their upper
# envelope,
#
# $$t^\star = \min_{k:\ \beta_k > \beta_i}\frac{\alpha_i - \alpha_k}{\beta_k - \beta_i},$$
#
# with $i$ the piece on top just after $t = 0$: there piece $i$ and the minimising $k$ tie
# *at the top*, so $\partial f \supseteq [a_i, a_k]$. (For kinks on hyperplanes, as in a sum
# of absolute values, give `KinkPlanes(normals, offsets)`: below.)

# %%
kinks = kink_points(oracle, kinks=lambda x: MaxPieces(A, b))
kink_seen = []


@quick
@given(x=kinks)
def test_on_kinks(x):
    kink_seen.append(x)
    check_oracle(oracle, points=x, n=4)


test_on_kinks()
print(f"the correct oracle passes at {len(kink_seen)} kink points")


@quick
@given(x=kinks)
def test_buggy_on_kinks(x):
    check_oracle(buggy, points=x, n=4)


try:
    test_buggy_on_kinks()
    caught = False
except AssertionError as err:
    caught = True
    print("caught at a kink:\n ", str(err).splitlines()[0])
    for note in getattr(err, "__notes__", []):  # hypothesis's report of the shrunk example
        if note.startswith(("Falsifying", "Failing")):
            print("  ", note)
assert caught, "the kink strategy should catch the bug"

# %% [markdown]
# The message names the law (`directional derivative`), the point, the direction, the
# oracle's answer `s` and the difference quotient it should match; hypothesis adds the
# shrunk example. At that point two pieces tie, the buggy oracle answers with the slope of
# one of them, and the function rises along $p$ with the slope of the other.
#
# ## Where the points fall
#
# The plain points (grey) are scattered over the plane; the kink points (red) lie on the
# ridges where pieces meet, the only places where the bug shows.

# %%
g = np.linspace(-4.5, 4.5, 301)
G1, G2 = np.meshgrid(g, g)
F = np.max(A[:, 0, None, None] * G1 + A[:, 1, None, None] * G2 + b[:, None, None], axis=0)
top = np.argmax(A[:, 0, None, None] * G1 + A[:, 1, None, None] * G2 + b[:, None, None], axis=0)
fig, ax = plt.subplots(figsize=(6, 5.4))
ax.contourf(G1, G2, top, levels=np.arange(len(b) + 1) - 0.5, cmap="Pastel1", alpha=0.8)
cs = ax.contour(G1, G2, F, levels=12, colors="k", linewidths=0.4)
P_plain, P_kink = np.array(plain_seen), np.array(kink_seen)
inside = lambda P: P[np.all(np.abs(P) <= 4.5, axis=1)]
ax.plot(*inside(P_plain).T, "o", color="0.4", ms=4, label="points(d)")
ax.plot(*inside(P_kink).T, "o", color="C3", ms=4, label="kink_points(kinks=MaxPieces)")
ax.set(xlabel="$x_1$", ylabel="$x_2$", title="f = max of 5 affine pieces (colour: the piece on top)")
ax.legend(loc="lower left", fontsize=8)
plt.show()

# %%
# every kink point really is one: two pieces with different slopes tie at the top, and the
# one-sided derivatives along their difference disagree
for x in kink_seen:
    v = A @ x + b
    tied = np.flatnonzero(v == v.max())
    assert len(tied) >= 2
    p = A[tied[1]] - A[tied[0]]
    assert oracle.sup_subgradient(x, p)[0] > -oracle.sup_subgradient(x, -p)[0]
print(f"all {len(kink_seen)} kink points have >= 2 tied pieces and f'(x; p) != -f'(x; -p)")

# %% [markdown]
# ## Kinks on hyperplanes: a sum of absolute values
#
# Least absolute deviations, $f(x) = \frac1m\sum_i |\langle c_i, x\rangle - t_i|$, is kinked
# on the hyperplanes $\langle c_i, x\rangle = t_i$: that is `KinkPlanes(C, t)`. The strategy
# puts the point on up to `max_kinks` of them at once, each time solving one equation for a
# coordinate no earlier plane uses. At a kink the term's subdifferential is
# $[-1, 1]\,c_i$, so $f'(x; p)$ takes $|\langle c_i, p\rangle|$ there; the classic bug is
# `np.sign(0) = 0`.

# %%
rng = np.random.default_rng(0)
m, d2 = 6, 3
C = rng.choice([-2.0, -1.0, 1.0, 2.0], size=(m, d2))
t = rng.integers(-8, 9, size=m) / 4


def lad_sup(x, p, buggy=False):
    r, q = C @ x - t, C @ p
    s = np.sign(r) if buggy else np.where(r != 0, np.sign(r), np.sign(q))  # steepest along p
    return float(s @ q) / m, C.T @ s / m


def lad(buggy):
    return nsopt.FunctionOracle(lambda x: float(np.abs(C @ x - t).mean()),
                                lambda x: C.T @ np.sign(C @ x - t) / m, dim=d2,
                                sup_subgradient=lambda x, p: lad_sup(x, p, buggy))


lad_kinks = kink_points(lad(False), max_kinks=2, kinks=lambda x: KinkPlanes(C, t))
no_shrinking = settings(quick, phases=[Phase.explicit, Phase.generate])  # report, don't shrink
for name, candidate in [("correct", lad(False)), ("np.sign(0) = 0", lad(True))]:
    for strategy_name, strategy in [("points", points(d2, scale=4.0)), ("kink_points", lad_kinks)]:
        @no_shrinking
        @given(x=strategy)
        def test(x):
            check_oracle(candidate, points=x, n=4)
        try:
            test()
            print(f"{name:15s} on {strategy_name:12s}: passes")
        except AssertionError as err:
            print(f"{name:15s} on {strategy_name:12s}: caught ({str(err).split(' fails')[0]})")

# %% [markdown]
# ## In your test suite
#
# ```python
# from hypothesis import given
# from nsopt.testing import MaxPieces, check_oracle, kink_points
#
# @given(kink_points(my_oracle, kinks=lambda x: MaxPieces(my_slopes, my_offsets)))
# def test_my_oracle_at_kinks(x):
#     check_oracle(my_oracle, points=x)
# ```
#
# * `kinks` is a callable of the drawn point, so a function whose pieces depend on where you
#   are can describe them locally; it may also return a point on a kink it computed itself.
# * Make the data dyadic (entries that are small multiples of powers of two) when you can:
#   the strategy's points are then exactly on the kinks, and an oracle that decides ties
#   exactly sees them as ties. On other data the points are on the kinks up to rounding, and
#   your oracle needs a tie tolerance, as `sup_subgradient` above has.
# * nsopt's own losses know their kinks: `kink_points(loss)` needs no `kinks=`.
# * `nsopt.testing.piecewise_linear_max(d)` draws whole random max-affine functions (as
#   `nsopt.Max` oracles, with their data) for testing code that consumes oracles, such as a
#   solver of your own.

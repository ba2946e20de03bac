r"""The element-wise value and gradient kernels take ``start``, the running sum's first value
(:func:`nsopt.losses._kernels.elementwise`), so a sharded sum continues from the shards
before it (the ordered reduction of :mod:`nsopt.distributed`, without Dask here).

Properties, for losses covering the kernels' one template, on random scores (some on a kink),
labels and sample weights: ``start=0`` is bitwise the kernel without it and the plain loop
of the loss's element function (the kernel before ``start``: the same operations in the same
order); the sum over any split continued through ``start`` is bitwise the one-pass sum, the
gradient's ``out`` too; ``_continued_sum`` (what a shard runs) gives the same bits.
"""
from __future__ import annotations

import copy

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from nsopt.distributed import _continued_sum
from nsopt.losses import _kernels as k
from nsopt.losses.scalar import Hinge, Huber, Logistic, Quantile


def _binary(rng, m):
    return np.where(rng.random(m) < 0.5, -1.0, 1.0)


def _real(rng, m):
    return 3.0 * rng.standard_normal(m)


#: loss class -> (element function, labels, keyword parameters). Every kernel comes from one
#: template (``elementwise``); four losses cover it (kinks or none, a parameter or none), as
#: each kernel called with ``start`` is one more compile (~0.5-1 s on a fresh cache, in CI)
LOSSES = {
    Hinge: (k.hinge, _binary, {}),
    Logistic: (k.logistic, _binary, {}),
    Huber: (k.huber, _real, {"delta": 0.75}),
    Quantile: (k.quantile, _real, {"tau": 0.3}),
}


@st.composite
def sums(draw):
    """A loss, its scores (a fifth on the loss's kinks), labels, weights, sides and a split."""
    cls = draw(st.sampled_from(sorted(LOSSES, key=lambda c: c.__name__)))
    element, labels, params = LOSSES[cls]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.integers(1, 50))
    X = np.eye(m)
    weights = rng.random(m) + 0.01 if draw(st.booleans()) else None
    loss = cls(X, labels(rng, m), sample_weight=weights, **params)
    z = draw(st.sampled_from([1e-3, 1.0, 30.0])) * rng.standard_normal(m)
    kinks = loss.kinks()
    if kinks is not None:  # scores exactly on a kink, where the sides differ
        at = rng.random(m) < 0.2
        z[at] = np.asarray(kinks).reshape(m, -1)[at, 0]
    side = rng.choice([-1.0, 0.0, 1.0], size=m)
    cuts = sorted(draw(st.lists(st.integers(0, m), min_size=1, max_size=3)))
    return loss, element, z, side, [0, *cuts, m]


def _params(loss):
    return [getattr(loss, n) for n in loss.kernel_params]


@given(sums())
def test_start_zero_is_the_kernel_without_start(case):
    loss, element, z, side, _ = case
    value, grad = loss.kernels
    y, c, p = loss.y, loss.c, _params(loss)
    r = 0.0  # the loop of the kernel before it took start
    for i in range(z.size):
        r += c[i] * element(z[i], y[i], 0.0, *p)[0]
    assert value(z, y, c, *p, 0.0) == value(z, y, c, *p) == r or np.isnan(r)
    out0, out = np.empty(z.size), np.empty(z.size)
    g0, g = grad(z, y, c, side, out0, *p, 0.0), grad(z, y, c, side, out, *p)
    assert g0 == g or (np.isnan(g0) and np.isnan(g))
    np.testing.assert_array_equal(out0, out)


@given(sums())
def test_continued_over_any_split_is_the_one_pass_sum(case):
    loss, _, z, side, bounds = case
    value, grad = loss.kernels
    y, c, p = loss.y, loss.c, _params(loss)
    whole_out = np.empty(z.size)
    whole_v, whole_g = value(z, y, c, *p), grad(z, y, c, side, whole_out, *p)
    v = g = 0.0
    out = np.empty(z.size)
    for s, e in zip(bounds[:-1], bounds[1:]):
        v = value(z[s:e], y[s:e], c[s:e], *p, v)
        g = grad(z[s:e], y[s:e], c[s:e], side[s:e], out[s:e], *p, g)
    assert (v == whole_v or np.isnan(whole_v) and np.isnan(v))
    assert (g == whole_g or np.isnan(whole_g) and np.isnan(g))
    np.testing.assert_array_equal(out, whole_out)


@given(sums())
def test_a_shard_continues_the_sum_bitwise(case):
    """``_continued_sum`` (what a shard runs) on the rows after a cut, from the sum of the
    rows before it: the one-pass kernel's bits, for the value and for the gradient kernel."""
    loss, _, z, _, bounds = case
    cut, m = bounds[1], z.size
    value, grad = loss.kernels
    y, c, p = loss.y, loss.c, _params(loss)
    tail = copy.copy(loss)  # the shard after the cut: its rows, the whole problem's weights
    tail.y, tail.c = y[cut:], c[cut:]
    for kernel, head, want in [
            ("value", value(z[:cut], y[:cut], c[:cut], *p), value(z, y, c, *p)),
            ("grad", grad(z[:cut], y[:cut], c[:cut], np.zeros(cut), np.empty(cut), *p),
             grad(z, y, c, np.zeros(m), np.empty(m), *p))]:
        got = _continued_sum(tail, z[cut:], head, kernel)
        assert got == want or (np.isnan(got) and np.isnan(want)), kernel

r"""The compiled line kernels of the scalar losses (:data:`nsopt.losses._kernels.LINE_KERNELS`)
give the numbers of the path they replace.

:class:`~nsopt.losses._base.ScalarLine` evaluates :math:`\varphi(\eta) = \sum_i c_i
l(f_i + \eta q_i, y_i)` and :math:`\varphi'(\eta; \pm)` in one loop over the kept scores
(the logistic derivative without log1p, value and derivative fused in one pass). The
reference is the path through the loss's value and gradient kernels on the materialised
(snapped) scores, which the line took before and still takes for losses without line kernels:
``value``, ``derivative`` and ``value_and_derivative`` must agree with it to 1e-15 relative
(they are the same operations in the same order; measured: to the bit) on random scores,
directions, labels and sample weights, including steps that put scores on a kink.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsopt.losses._base import ScalarLine
from nsopt.losses._kernels import LINE_KERNELS
from nsopt.losses.scalar import (Exponential, Huber, LeastSquares, Logistic, Poisson,
                                 SquaredHinge)


def _binary(rng, m):
    return np.where(rng.random(m) < 0.5, -1.0, 1.0)


#: name -> (loss class, labels from a generator, keyword parameters)
LOSSES = {
    "logistic": (Logistic, _binary, {}),
    "squared-hinge": (SquaredHinge, _binary, {}),
    "least-squares": (LeastSquares, lambda rng, m: 3.0 * rng.standard_normal(m), {}),
    "huber": (Huber, lambda rng, m: 3.0 * rng.standard_normal(m), {"delta": 0.75}),
    "exponential": (Exponential, _binary, {}),
    "poisson": (Poisson, lambda rng, m: rng.poisson(2.0, m).astype(float), {}),
}


def _reference(line):
    """A line of the same loss and scores that goes through the loss's kernels."""
    ref = ScalarLine(line.loss, line.f, line.q)
    ref._fused = None
    return ref


def _close(a, b):
    """Equal to 1e-15 relative; an overflow (inf, or inf - inf = nan) in both counts as equal."""
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return a == b or abs(a - b) <= 1e-15 * max(abs(a), abs(b))


@st.composite
def lines(draw, name):
    """A line of loss ``name`` on random scores ``f``, direction ``q`` (some zeros), labels
    and sample weights, and steps: random ones and those that put an example on a kink."""
    seed = draw(st.integers(0, 2**32 - 1))
    m = draw(st.integers(1, 60))
    rng = np.random.default_rng(seed)
    cls, labels, params = LOSSES[name]
    scale = draw(st.sampled_from([1e-3, 1.0, 30.0]))
    f = scale * rng.standard_normal(m)
    q = scale * rng.standard_normal(m)
    q[rng.random(m) < 0.2] = 0.0
    weights = rng.random(m) + 0.01 if draw(st.booleans()) else None
    loss = cls(np.eye(m), labels(rng, m), sample_weight=weights, **params)
    line = ScalarLine(loss, f, q)
    etas = [0.0, *(draw(st.floats(-50, 50, allow_nan=False)) for _ in range(3))]
    kinks = loss.kinks()
    if kinks is not None:
        k = np.asarray(kinks).reshape(m, -1)
        nz = np.flatnonzero(q)
        if nz.size:
            i = nz[draw(st.integers(0, nz.size - 1))]
            etas.append(float((k[i, 0] - f[i]) / q[i]))  # a computed breakpoint: snapping
    return line, etas


@pytest.mark.parametrize("name", sorted(LOSSES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_line_kernels_match_the_gradient_kernel_path(name, data):
    line, etas = data.draw(lines(name))
    assert line._fused is not None  # the compiled path is the one under test
    ref = _reference(line)
    for eta in etas:
        for side in (1, -1):
            d, r = line.derivative(eta, side), ref.derivative(eta, side)
            assert _close(d, r), (eta, side, d, r)
            v, d2 = line.value_and_derivative(eta, side)
            assert _close(v, ref.value(eta)) and _close(d2, r), (eta, side, v, d2)
        assert _close(line.value(eta), ref.value(eta))


@given(seed=st.integers(0, 2**32 - 1), t=st.floats(-800, 800, allow_nan=False))
@settings(max_examples=100, deadline=None)
def test_logistic_slope_is_the_derivative_half_of_the_loss(seed, t):
    """The derivative-only logistic function (no log1p) is the loss's derivative to the bit,
    for scores whose exp would overflow too."""
    from nsopt.losses._kernels import logistic, logistic_slope
    y = 1.0 if seed % 2 else -1.0
    assert logistic_slope(t, y, 0.0) == logistic(t, y, 0.0)[1]


def test_line_kernels_cover_the_differentiable_losses():
    """Every differentiable scalar loss of the table has line kernels; a nonsmooth one
    (hinge) and a loss whose kernels are overridden keep the gradient-kernel path, with the
    same answers through ``value_and_derivative``'s fallback."""
    from nsopt.losses.scalar import Hinge
    m = 5
    rng = np.random.default_rng(0)
    for cls, labels, params in LOSSES.values():
        assert cls.kernels[1] in LINE_KERNELS
    hinge = Hinge(np.eye(m), _binary(rng, m))
    f, q = rng.standard_normal(m), rng.standard_normal(m)
    line = ScalarLine(hinge, f, q)
    assert line._fused is None
    assert line.value_and_derivative(0.3, -1) == (line.value(0.3), line.derivative(0.3, -1))

    class Doubled(Logistic):
        def _grad_kernel(self, z, y, c, side, out):
            r = super()._grad_kernel(z, y, c, side, out)
            out *= 2.0
            return 2.0 * r

    loss = Doubled(np.eye(m), _binary(rng, m))
    line = ScalarLine(loss, f, q)
    assert line._fused is None  # the override is honoured
    plain = ScalarLine(Logistic(np.eye(m), loss.y), f, q)
    assert _close(line.derivative(0.3), 2.0 * plain.derivative(0.3))


def test_side_must_be_a_sign():
    m = 3
    line = ScalarLine(Logistic(np.eye(m), np.ones(m)), np.zeros(m), np.ones(m))
    for call in (line.derivative, line.value_and_derivative):
        with pytest.raises(ValueError, match="side must be"):
            call(0.0, 0)


# --- the running sums' start (the ordered reduction of nsopt.distributed) --------------------
def _bits(x):
    return np.asarray(x, dtype=np.float64).tobytes()


@pytest.mark.parametrize("name", sorted(LOSSES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_line_kernels_start_zero_is_the_plain_kernel_bitwise(name, data):
    """``start=0.0`` given explicitly is the kernel called without it, to the bit (0.0 + x is
    x), and both are the gradient-kernel path's numbers to the bit (the path the kernels
    replaced: the same operations in the same order; the kernels before ``start`` existed
    were checked equal to these on 10,800 draws)."""
    line, etas = data.draw(lines(name))
    val, der, _, args, params = line._fused
    ref = _reference(line)
    for eta in etas:
        for side in (1.0, -1.0):
            plain = der(*args, eta, side, *params)
            assert _bits(der(*args, eta, side, *params, 0.0)) == _bits(plain)
            assert _bits(plain) == _bits(ref.derivative(eta, int(side)))
        plain = val(*args[:4], eta, *params)
        assert _bits(val(*args[:4], eta, *params, 0.0)) == _bits(plain)
        assert _bits(plain) == _bits(ref.value(eta))


@pytest.mark.parametrize("name", sorted(LOSSES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_line_kernels_continued_over_any_split_are_the_one_pass_kernel(name, data):
    """The value and derivative kernels run block after block over any contiguous split of
    the examples (empty blocks included), each block's running sum started at the previous
    block's result, give the one-pass kernels' numbers bitwise: a sharded line continues them
    shard after shard (``nsopt.distributed._continued_line_derivative``)."""
    line, etas = data.draw(lines(name))
    val, der, _, (f, q, y, c, kinks), params = line._fused
    m = f.size
    cuts = sorted(data.draw(st.lists(st.integers(0, m), max_size=5)))
    bounds = list(zip([0, *cuts], [*cuts, m]))
    for eta in etas:
        for side in (1.0, -1.0):
            d, v = 0.0, 0.0
            for s, e in bounds:
                block = (f[s:e], q[s:e], y[s:e], c[s:e], kinks[s:e])
                d = der(*block, eta, side, *params, d)
                v = val(*block[:4], eta, *params, v)
            assert _bits(d) == _bits(der(f, q, y, c, kinks, eta, side, *params))
            assert _bits(v) == _bits(val(f, q, y, c, eta, *params))

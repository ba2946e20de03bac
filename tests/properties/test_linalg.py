"""nsopt._linalg: the blockwise helpers give numpy's values without its d-sized temporaries."""
from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from nsopt._linalg import distance, lincomb

finite = st.floats(-1e150, 1e150, allow_nan=False, allow_subnormal=True)
scalars = st.floats(-1e3, 1e3, allow_nan=False)


@st.composite
def pairs(draw):
    n = draw(st.integers(0, 300))
    x = draw(arrays(np.float64, n, elements=finite))
    y = draw(arrays(np.float64, n, elements=finite))
    return x, y


@given(pairs(), scalars, scalars, st.integers(1, 64), st.sampled_from([None, "x", "y"]))
@example((np.array([1e308, 1.0]), np.array([1e308, 2.0])), 1.5, 1.5, 1, "y")  # overflow: inf
def test_lincomb_is_numpys_expression_bit_for_bit(xy, a, b, block, out):
    x, y = (v.copy() for v in xy)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = a * x + b * y
        target = {"x": x, "y": y, None: None}[out]
        got = lincomb(a, x, b, y, out=target, block=block)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)  # equal bits, inf and nan included
    if out is not None:
        assert got is target


@given(pairs(), st.integers(1, 64))
@example((np.array([1.0 + 2.0**-52, 1.0]), np.array([1.0, 1.0])), 1)  # no cancellation
def test_distance_is_the_norm_of_the_difference(xy, block):
    x, y = xy
    x, y = x / 1e10, y / 1e10  # keep the squares finite
    ref = float(np.linalg.norm(x - y))
    assert np.isclose(distance(x, y, block=block), ref, rtol=1e-12, atol=0.0)

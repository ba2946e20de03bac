"""The multiclass line's walk from ``lo`` (``VectorLine.jumps_from``, ``margin_events_window``,
``LineFunction.sweep_from``): the exact search over a window of each example's envelope finds
the full envelope's minimiser, ties included; the window's jumps added to the oracle's slope
at ``lo`` are the derivative; a search stopped early builds no full envelope.

Scores are given directly (``X`` the identity, so ``F = W`` and ``Q = P`` bit for bit), dyadic
so that ties between classes, at ``eta = 0`` and between kinks are exact, or scaled by 0.1 or
1/3 so that they hold up to rounding.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import nsopt
from nsopt.losses._vector_base import VectorLine
from nsopt.losses.vector import MulticlassHinge, ScaledMulticlassHinge
from nsopt.oracle import LineFunction, SumLine, _minimize_by_jumps, _minimize_piecewise
from nsopt.regularizers import L2

DYADIC = (0.0, 0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -2.0)


@st.composite
def margin_lines(draw):
    """A margin loss on m examples (X = I: the scores are the point), its scores F and Q, the
    weight lam of the L2 term. Classes may be equal (a copied column) and F may tie at 0."""
    m = draw(st.integers(1, 5))
    k = draw(st.integers(2, 5))
    y = np.array([draw(st.integers(0, k - 1)) for _ in range(m)])
    F = np.array(draw(st.lists(st.sampled_from(DYADIC), min_size=m * k, max_size=m * k)))
    Q = np.array(draw(st.lists(st.sampled_from(DYADIC), min_size=m * k, max_size=m * k)))
    F, Q = F.reshape(m, k), Q.reshape(m, k)
    # not dyadic: ties up to rounding (kinks an ulp apart, or next to 0)
    F = F * draw(st.sampled_from((1.0, 1.0, 0.1, 1.0 / 3.0)))
    Q = Q * draw(st.sampled_from((1.0, 1.0, 0.1, 1.0 / 3.0)))
    if draw(st.booleans()):  # two equal classes: parallel lines through every point
        a, b = draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))
        F[:, b], Q[:, b] = F[:, a], Q[:, a]
    weights = np.array([draw(st.sampled_from((0.0, 1.0, 1.0, 2.0))) for _ in range(m)])
    if not weights.any():
        weights[0] = 1.0
    kind = draw(st.sampled_from(["cs", "margin", "slack"]))
    X = np.eye(m)
    if kind == "cs":
        loss = MulticlassHinge(X, y, n_classes=k, sample_weight=weights)
    else:
        cost = np.array(draw(st.lists(st.sampled_from((0.5, 1.0, 2.0)), min_size=k * k,
                                      max_size=k * k))).reshape(k, k)
        np.fill_diagonal(cost, 0.0)
        loss = ScaledMulticlassHinge(X, y, cost, rescaling=kind, sample_weight=weights)
    lam = draw(st.sampled_from((1e-3, 0.1, 1.0)))
    return loss, F, Q, lam


def _lines(loss, F, Q, lam, full):
    """The regularized risk's line through W = F along P = Q; ``full``: its loss line has found
    every kink (the full envelope) before the search, as before the walk."""
    J = nsopt.RegularizedRisk(loss, L2(), lam)
    line = J.restrict(F.ravel(), Q.ravel())
    vline = line.lines[0]
    assert isinstance(vline, VectorLine)
    if full:
        vline.jumps()
    return line, vline


def _close(a, b, rtol=1e-12):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


@given(margin_lines())
def test_walked_search_equals_the_full_envelope_search_and_brute_force(case):
    loss, F, Q, lam = case
    walked, wl = _lines(loss, F, Q, lam, full=False)
    full, _ = _lines(loss, F, Q, lam, full=True)
    eta = walked.minimize()
    eta_full = full.minimize()
    assert wl._raw is None  # the walk found its kinks without the full envelope
    assert _close(eta, eta_full), (eta, eta_full)
    scale = 1e-12 * (1.0 + abs(walked.value(eta)))
    # the derivatives at the minimiser, as the walked line gives them and the full one
    for side in (1, -1):
        assert _close(walked.derivative(eta, side), full.derivative(eta_full, side), 1e-10)
    assert walked.derivative(eta, 1) >= -1e-12 and (eta == 0 or walked.derivative(eta, -1) <= 1e-12)
    # brute force: no point of a grid over [0, 2 eta + 1], nor any kink, is lower
    kinks, _ = full.lines[0].jumps()
    grid = np.concatenate((np.linspace(0.0, 2.0 * eta + 1.0, 401), kinks[kinks >= 0]))
    assert walked.value(eta) <= min(full.value(t) for t in grid) + scale


@given(margin_lines(), st.sampled_from((0.0, 0.25, -0.5)), st.sampled_from((0.25, 1.0, 3.0)))
def test_window_jumps_from_the_oracle_slope_at_lo_are_the_derivative(case, lo, width):
    """phi'(eta+) = phi'(lo+) (the oracle's tie rule) + the window's jumps in (lo, eta], at
    every point of the window between two kinks (not within rounding of one, where the tie
    rule decides); the window reaches at least its horizon."""
    loss, F, Q, _ = case
    hi = lo + width
    kinks_w, jumps_w, reach = VectorLine(loss, F, Q).jumps_from(lo, hi)
    assert reach >= hi and np.all(jumps_w > 0)
    full = VectorLine(loss, F, Q)
    d_lo = VectorLine(loss, F, Q).derivative(lo, 1)
    kinks, _ = full.jumps()
    cuts = np.unique(np.concatenate(([lo, hi], kinks[(kinks > lo) & (kinks < hi)])))
    for eta in (cuts[:-1] + cuts[1:]) / 2:
        if np.any(np.abs(kinks - eta) < 1e-9):  # kinks an ulp apart: the tie rule decides
            continue
        expect = d_lo + jumps_w[(kinks_w > lo) & (kinks_w <= eta)].sum()
        assert _close(full.derivative(eta, 1), expect, 1e-12), (eta, expect)
    assert not VectorLine(loss, F, Q).jumps_from(lo, lo)[0].size  # nothing asked, none found


def test_a_kink_rounded_past_zero_is_counted_once():
    """After an exact step the iterate sits on hinges, and the next line's kinks there round to
    eta = 1e-16 or so: the full envelope's jumps counted them again on top of the oracle's
    slope at 0, the sweep's check failed and the search fell back to bisection over all kinks.
    The window counts them once: the sweep's answer is the bisection's (1e-12), with no
    full envelope and at most 3 passes over the scores."""
    rng = np.random.default_rng(4)
    m, d, k = 300, 6, 5
    X = rng.standard_normal((m, d))
    y = rng.integers(0, k, m)
    y[:k] = np.arange(k)
    loss = MulticlassHinge(X, y)
    J = nsopt.RegularizedRisk(loss, L2(), 1e-3)
    w, p1, p2 = (rng.standard_normal(loss.dim) * 0.1 for _ in range(3))
    w = w + J.restrict(w, p1).minimize() * p1  # on hinges now
    if J.restrict(w, p2).derivative(0.0, 1) >= 0:
        p2 = -p2
    full = J.restrict(w, p2)
    kinks, _ = full.lines[0].jumps()
    assert np.min(np.abs(kinks)) < 1e-13  # the case: a kink rounded next to 0
    assert _minimize_by_jumps(full, 0.0, math.inf) is None  # the full sweep's fallback
    expect = _minimize_piecewise(full, np.sort(kinks), 0.0, math.inf)
    walked = J.restrict(w, p2)
    eta = _minimize_by_jumps(walked, 0.0, math.inf)
    assert eta is not None and walked.lines[0]._raw is None
    assert _close(eta, expect), (eta, expect)
    assert walked.lines[0]._passes <= 3


class _Kinks(LineFunction):
    """A piecewise-linear line with kinks ``etas`` (jumps ``steps``) and slope ``d0`` at 0 that
    answers windows only, and records them."""

    def __init__(self, etas, steps, d0):
        self.etas, self.steps, self.d0, self.asked = np.array(etas), np.array(steps), d0, []

    def derivative(self, eta, side=1):
        past = self.etas <= eta if side == 1 else self.etas < eta
        return self.d0 + float(self.steps[past].sum())

    def jumps(self):
        return self.etas, self.steps

    def jumps_from(self, lo, horizon):
        self.asked.append(horizon)
        inside = (self.etas > lo) & (self.etas <= horizon)
        return self.etas[inside], self.steps[inside], horizon


class _Quadratic(LineFunction):
    def __init__(self, c1, c2):
        self.c1, self.c2 = c1, c2

    def derivative(self, eta, side=1):
        return self.c1 + self.c2 * eta

    def affine_derivative(self):
        return self.c1, self.c2


def test_window_protocol_bound_and_doubling():
    """The search asks for no kink first, then for those up to the quadratic's bound
    lo - phi'(lo+)/s; a minimiser at the bound itself (its kink left out of the open window's
    end) doubles the window; a line without windows is asked once for all (reach inf)."""
    line = SumLine([_Kinks([0.5, 1.0, 3.0], [0.25, 1.0, 1.0], -1.0), _Quadratic(0.0, 1.0)])
    assert line.minimize() == pytest.approx(0.75)  # -1 + 0.25 + eta = 0 on (0.5, 1)
    assert line.lines[0].asked == [0.0, 1.0]
    # the minimiser is the kink at the bound 1.0: the first window ends there
    line = SumLine([_Kinks([1.0, 3.0], [1.0, 1.0], -1.0), _Quadratic(0.0, 1.0)])
    assert line.minimize() == 1.0
    assert line.lines[0].asked == [0.0, 1.0, 2.0]
    # the default jumps_from of a line with jumps() only: all kinks, reach inf
    plain = LineFunction()
    plain.jumps = lambda: (np.array([2.0]), np.array([1.0]))
    etas, steps, reach = plain.jumps_from(0.0, 1.0)
    assert reach == math.inf and etas.tolist() == [2.0]

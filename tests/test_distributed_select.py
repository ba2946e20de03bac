"""The distributed breakpoint selection of nsopt.distributed (issue 12), property-tested
without a cluster: the shards' actors run in this process behind a stand-in of Dask's actor
handles, so hypothesis can try many lines, splits and search parameters quickly. What is
checked: the step equals the one-machine exact line search's, for any split, any interval and
any number of pivots and samples per round (down to one of each)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
import nsopt.distributed as nd
from nsopt.distributed import ShardedLoss, _digest, _ShardActor, _Shard, _slice_loss


class _Done:
    def __init__(self, value):
        self.value = value

    def result(self, timeout=None):
        return self.value


class _LocalActor:
    """What a Dask actor handle offers: every method call returns a future."""

    def __init__(self, actor):
        self._actor = actor

    def __getattr__(self, name):
        method = getattr(self._actor, name)
        return lambda *args: _Done(method(*args))


def _local_sharded(problem, cuts):
    loss = problem.loss
    bounds = [0, *cuts, loss.m]
    shards = []
    for k, (s, e) in enumerate(zip(bounds[:-1], bounds[1:])):
        part = _slice_loss(loss, s, e)
        shards.append(_Shard(k, _LocalActor(_ShardActor(k, f"rows {s}:{e}", loss=part)), None,
                             e - s, _digest(part), f"rows {s}:{e}"))
    sharded = ShardedLoss(None, shards, loss.dim, type(loss))
    return nsopt.RegularizedRisk(sharded, problem.reg, problem.lam)


LOSSES = [nsopt.losses.Hinge, nsopt.losses.SquaredHinge, nsopt.losses.Logistic,
          nsopt.losses.LeastAbsoluteDeviation]


@st.composite
def lines(draw):
    m = draw(st.integers(8, 120))
    d = draw(st.integers(2, 12))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) * (rng.random((m, d)) < 0.6)
    loss_cls = draw(st.sampled_from(LOSSES))
    y = np.where(rng.random(m) < 0.4, 1.0, -1.0)
    if loss_cls is nsopt.losses.LeastAbsoluteDeviation:
        y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=m)
    reg = draw(st.sampled_from([nsopt.regularizers.L2(), nsopt.regularizers.ElasticNet(0.5)]))
    J = nsopt.RegularizedRisk(loss_cls(X, y), reg, draw(st.sampled_from([1e-3, 1e-1])))
    n_cuts = draw(st.integers(0, min(4, m - 1)))
    cuts = sorted(draw(st.lists(st.integers(1, m - 1), min_size=n_cuts, max_size=n_cuts,
                                unique=True)))
    w, p = rng.normal(size=d), rng.normal(size=d)
    lo = draw(st.sampled_from([0.0, 0.05, -0.3]))
    hi = draw(st.sampled_from([math.inf, 0.4, 2.0]))
    return J, cuts, w, p, lo, hi


@settings(max_examples=60, deadline=None)
@given(lines(), st.integers(1, 5), st.integers(1, 9), st.integers(1, 6))
def test_selected_step_equals_the_one_machine_step(case, pivots, jump_pivots, samples):
    J, cuts, w, p, lo, hi = case
    Js = _local_sharded(J, cuts)
    Js.loss.line_pivots, Js.loss.jump_pivots, Js.loss.line_samples = pivots, jump_pivots, samples
    expected = J.restrict(w, p).minimize(lo, hi)
    eta = Js.restrict(w, p).minimize(lo, hi)
    # lam > 0 and a quadratic part in both regularizers: the minimiser is unique
    assert eta == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert lo <= eta <= hi


def test_rounds_move_constant_numbers_per_shard():
    """Whatever the number of examples, a round moves at most 2K + (K+1)(samples+1) numbers
    per shard, and the rounds grow like the logarithm of the kinks."""
    rng = np.random.default_rng(0)
    moved = {}
    for m in (200, 20000):
        X = rng.normal(size=(m, 10))
        y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
        J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
        Js = _local_sharded(J, [m // 3, 2 * m // 3])
        w = rng.normal(size=10)
        p = -J.subgradient(w)  # a descent direction: the search has kinks to go through
        line = Js.restrict(w, p)
        before = dict(Js.loss.traffic)
        eta = line.minimize()
        assert eta == pytest.approx(J.restrict(w, p).minimize(), rel=1e-10, abs=1e-14)
        calls = Js.loss.traffic["calls"] - before["calls"]
        moved[m] = (calls, Js.loss.traffic["bytes_in"] - before["bytes_in"])
        k = max(Js.loss.line_pivots, Js.loss.jump_pivots)
        assert moved[m][1] <= calls * 3 * 8 * (2 * k + (k + 1) * (Js.loss.line_samples + 1))
    assert moved[200][0] >= 3
    assert moved[20000][0] <= moved[200][0] + 4  # 100x the kinks: a few more rounds
    assert moved[20000][1] <= 4 * moved[200][1]


def test_line_search_option_is_checked():
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(np.eye(4), np.array([1.0, -1, 1, -1])))
    Js = _local_sharded(J, [2])
    with pytest.raises(ValueError, match="line_search must be 'select' or 'gather'"):
        Js.loss.line_search = "bisect"
    assert isinstance(Js.loss, nd.ShardedLoss)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 3), st.sampled_from([0.0, 0.2, -0.5]))
def test_squared_hinge_jump_sums_give_the_true_derivatives(seed, n_cuts, origin):
    """A squared hinge shard's derivative read from the curvature's running sums equals its
    true derivative (the kernel's, a pass over the line) at any pivot, to rounding."""
    rng = np.random.default_rng(seed)
    m, d = 60, 4
    X = rng.normal(size=(m, d))
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    J = nsopt.RegularizedRisk(nsopt.losses.SquaredHinge(X, y), lam=1e-2)
    Js = _local_sharded(J, sorted(rng.choice(np.arange(1, m), n_cuts, replace=False)))
    w, p = rng.normal(size=d), rng.normal(size=d)
    line = Js.restrict(w, p).sharded  # the loss's line (the risk's adds the regularizer's)
    assert line.quadratic_jumps and not line.piecewise_linear and not line.newton
    pivots = sorted(origin + np.abs(rng.normal(size=5)) * 2)
    for s in Js.loss._shards:
        actor = s.actor._actor
        ders, gaps = actor.line_select_quad(line.key, pivots, origin, math.inf, 4, origin)
        true = actor._lines[line.key][0]
        scale = 1e-12 * (1 + float(np.sum(np.abs(actor.loss.c * true.q *
                                                  (np.abs(true.f) + 10 * np.abs(true.q) + 1)))))
        for v, (right, left) in zip(pivots, ders):
            assert right == left
            assert abs(right - true.derivative(v, 1)) <= scale
        assert len(gaps) == len(pivots) + 1


@pytest.mark.parametrize("loss_cls", [nsopt.losses.SquaredHinge, nsopt.losses.Logistic])
def test_curvature_search_saves_round_trips(loss_cls):
    """Squared hinge (jump sums of phi'') and logistic (Newton on (phi', phi'')): the same step
    as the one-machine search and as the search with true derivatives only, in fewer round
    trips, each moving O(1) numbers per shard whatever the shard's size."""
    rng = np.random.default_rng(3)
    m, d = 20000, 10
    X = rng.normal(size=(m, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=m) > 0, 1.0, -1.0)
    J = nsopt.RegularizedRisk(loss_cls(X, y), lam=1e-3)
    Js = _local_sharded(J, [m // 3, 2 * m // 3])
    w = 0.1 * rng.normal(size=d)
    p = -J.subgradient(w)
    expected = J.restrict(w, p).minimize()
    counts = {}
    for fast in (False, True):
        Js.loss.curvature_search = fast
        line = Js.restrict(w, p)
        before = Js.loss.traffic
        eta = line.minimize()
        assert eta == pytest.approx(expected, rel=1e-10, abs=1e-14)
        calls = Js.loss.traffic["calls"] - before["calls"]
        counts[fast] = (calls, Js.loss.traffic["bytes_in"] - before["bytes_in"])
    assert counts[True][0] < counts[False][0]
    k = Js.loss.jump_pivots
    assert counts[True][1] <= counts[True][0] * 3 * 8 * (2 * k + (k + 1) * (Js.loss.line_samples + 1))


@pytest.mark.parametrize("loss_cls", [nsopt.losses.Hinge, nsopt.losses.Logistic,
                                      nsopt.losses.LeastAbsoluteDeviation])
def test_ordered_chain_gives_the_one_machine_sum_also_after_a_rebuild(loss_cls):
    """reduction="ordered": the value is the one-machine kernel's to the last bit for any
    split; a shard that lost its kept scores (rebuilt from its source) computes them again
    from w and continues the same sum."""
    rng = np.random.default_rng(7)
    m, d = 500, 6
    X = rng.normal(size=(m, d))
    y = np.where(rng.random(m) < 0.3, 1.0, -1.0)
    if loss_cls is nsopt.losses.LeastAbsoluteDeviation:
        y = X @ rng.normal(size=d)
    J = nsopt.RegularizedRisk(loss_cls(X, y), lam=1e-2)
    Js = _local_sharded(J, [97, 250, 251, 400])
    Js.loss.reduction = "ordered"
    for w in (np.zeros(d), rng.normal(size=d)):
        assert Js.value_and_subgradient(w)[0] == J.value_and_subgradient(w)[0]
        assert Js.value(w) == J.value(w)
        first = Js.loss._map("value_and_subgradient_keep", w)[0][0]
        del Js.loss._shards[2].actor._actor._kept  # as on a rebuilt shard
        Js.loss._chain_w = w
        assert Js.loss._chain(first, "chain") == J.loss.value(w)

"""Memory on d = 10^6 sparse features (issue item 6): the planes follow the slopes' sparsity.

Peaks are tracemalloc's (numpy reports its buffers to it), 25 iterations each, hinge + L2 on
1000 rows with 10^4 nonzeros. Before the change: bmrm 537 MB, ls-bmrm 552, kbundle 408,
proximal-bundle 424, sublbfgs 800 (dense 32 x d preallocated bundles, a dense copy of the
planes in Result.info)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt

MB = 1e6
#: measured (2026-11-24): bmrm 65, ls-bmrm 146, kbundle 65, proximal-bundle 104, sublbfgs
#: ~430 MB. What is left is dense d-vectors (8 MB each): the point being evaluated, its loss
#: subgradient a and J's subgradient, the previous evaluation (kept for the convexity check),
#: the best point and the aggregate a_bar. Iterates are no longer copied by the counting oracle
#: (frozen arrays), J's subgradient is composed in place, L2's conjugate term needs no -a/lam,
#: and the result shares the certificate's x. The issue's 50 MB needs sparse loss subgradients
#: through the oracle protocol (not done). These bounds guard against regressions.
BOUND = {"bmrm": 80, "ls-bmrm": 170, "kbundle": 80, "proximal-bundle": 125, "sublbfgs": 480}


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(0)
    m, d = 1000, 1_000_000
    # a Generator (not a legacy seed, which makes scipy permute all m*d positions: 8 GB)
    X = sp.random(m, d, density=1e4 / (m * d), format="csr", rng=np.random.default_rng(1))
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-3)
    J.value_and_subgradient(np.zeros(d))  # the data's one-time column copy is not the solver's
    return J


def peak(J, method, **opts):
    tracemalloc.start()
    try:
        res = nsopt.minimize(J, method=method, max_iter=25, rtol=1e-12, **opts)
        return tracemalloc.get_traced_memory()[1] / MB, res
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("method", sorted(BOUND))
def test_peak_memory_follows_sparsity(big, method):
    mb, res = peak(big, method)
    assert res.nit == 25
    assert mb < BOUND[method], f"{method}: peak {mb:.0f} MB"


def test_kbundle_keeps_only_its_planes(big):
    _, res = peak(big, "kbundle", bundle_size=2, closed_form=False)
    assert res.info.get("n_planes", res.history["n_planes"][-1]) <= 2 + 1  # k planes + the floor


def test_bundle_stores_sparse_rows_without_preallocating():
    from nsopt.bundle import PlaneBundle

    d = 1_000_000
    bundle = PlaneBundle(d)
    assert bundle.sparse_storage
    a = np.zeros(d)
    a[::1000] = 1.0
    for _ in range(40):
        bundle.add(a, 0.0)
    assert bundle.n == 40 and bundle.G[0, 0] == pytest.approx(1000.0)
    assert np.allclose(bundle.matvec(np.ones(d)), 1000.0)


def test_frozen_iterates_are_kept_without_a_copy_and_callers_arrays_are_copied():
    from nsopt.oracle import CountingOracle, freeze

    f = nsopt.FunctionOracle(lambda w: float(w @ w), lambda w: 2 * w, dim=3)
    oracle = CountingOracle(f)
    mine = np.array([1.0, 2.0, 3.0])
    ev = oracle.evaluate(mine)
    assert ev.w is not mine and not ev.w.flags.writeable
    mine[0] = 100.0  # the caller's array is theirs: the evaluation is unaffected
    assert ev.w[0] == 1.0 and ev.fun == 14.0
    it = freeze(np.array([0.5, 0.0, 0.0]))
    assert oracle.evaluate(it).w is it
    with pytest.raises(ValueError):
        it[0] = 1.0  # a frozen iterate cannot change under the evaluation that keeps it

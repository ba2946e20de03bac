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
#: measured after the change: bmrm 106, ls-bmrm ~130 (154 once the best point valued on a
#: line is re-evaluated by the oracle before it is reported), kbundle ~90, proximal-bundle ~110,
#: sublbfgs ~380-430 MB. The remaining peak is a dozen dense d-vectors per iteration (iterate,
#: subgradients, the aggregate, the reported x), not the planes; the issue's 50 MB needs sparse
#: subgradients through the oracle protocol (not done). These bounds guard against regressions.
BOUND = {"bmrm": 150, "ls-bmrm": 180, "kbundle": 150, "proximal-bundle": 150, "sublbfgs": 480}


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(0)
    m, d = 1000, 1_000_000
    X = sp.random(m, d, density=1e4 / (m * d), format="csr", random_state=0)
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-3)


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

"""nsopt.distributed.from_dask: shards from the row blocks of a dask.array or the partitions of a
dask.dataframe, computed on the workers (issue 12), under a LocalCluster of 2 processes."""
import numpy as np
import pytest
import scipy.sparse as sp

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import nsopt  # noqa: E402
import nsopt.distributed as nd  # noqa: E402

from test_distributed import client  # noqa: E402,F401  (a LocalCluster of 2 processes)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 8))
    y = np.where(X @ rng.normal(size=8) + 0.3 * rng.normal(size=300) > 0, 1.0, -1.0)
    return X, y


def _close(J, Js, rng):
    for _ in range(3):
        w = rng.normal(size=J.dim)
        f, g = J.value_and_subgradient(w)
        fs, gs = Js.value_and_subgradient(w)
        assert fs == pytest.approx(f, rel=1e-13)
        np.testing.assert_allclose(gs, g, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss", ["Hinge", "Logistic"])
def test_dask_array_blocks_give_the_in_memory_function(client, data, loss, sparse):
    X, y = data
    chunks = (100, 120, 80)
    Xd = da.from_array(X, chunks=(chunks, 8))
    if sparse:
        Xd = Xd.map_blocks(sp.csr_matrix, dtype=np.float64)
    Js = nd.from_dask(Xd, da.from_array(y, chunks=(chunks,)), loss=loss, lam=1e-2, client=client)
    J = nsopt.RegularizedRisk(getattr(nsopt.losses, loss)(X, y), nsopt.regularizers.L2(), 1e-2)
    assert Js.loss.n_shards == 3 and Js.loss.m == 300
    _close(J, Js, np.random.default_rng(0))
    res = nsopt.minimize(Js, method="ls-bmrm", rtol=1e-4)
    ref = nsopt.minimize(J, method="ls-bmrm", rtol=1e-4)
    assert res.status is nsopt.Status.CONVERGED
    assert res.certificate.check(Js) <= res.fun
    assert max(res.lower_bound, ref.lower_bound) <= min(res.fun, ref.fun) + 1e-12


def test_dask_dataframe_partitions_with_a_label_column(client, data):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = data
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(8)]).assign(label=y)
    Js = nd.from_dask(dd.from_pandas(frame, npartitions=4), "label", loss="SquaredHinge",
                      lam=1e-2, client=client)
    J = nsopt.RegularizedRisk(nsopt.losses.SquaredHinge(X, y), nsopt.regularizers.L2(), 1e-2)
    assert Js.loss.n_shards == 4 and Js.dim == 8
    _close(J, Js, np.random.default_rng(1))


def test_bad_collections_name_the_argument(client, data):
    X, y = data
    yd = da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match=r"chunked along rows only.*rechunk"):
        nd.from_dask(da.from_array(X, chunks=(100, 4)), yd, client=client)
    with pytest.raises(ValueError, match=r"y's chunks \(150, 150\) must equal X's row chunks"):
        nd.from_dask(da.from_array(X, chunks=(100, 8)), da.from_array(y, chunks=150), client=client)
    with pytest.raises(TypeError, match="X must be a dask.array.Array or a dask.dataframe"):
        nd.from_dask(X, yd, client=client)
    with pytest.raises(TypeError, match="y must be a 1-d dask.array.Array"):
        nd.from_dask(da.from_array(X, chunks=(100, 8)), y, client=client)


def test_nan_in_one_block_names_its_shard(client, data):
    X, y = data
    X = X.copy()
    X[250, 3] = np.nan
    with pytest.raises(nd.ShardError, match="shard 2") as info:
        nd.from_dask(da.from_array(X, chunks=(100, 8)), da.from_array(y, chunks=100),
                     client=client)
    assert info.value.shard == 2


def _block_made_off_the_driver(k, driver_pid):
    """Rows of block k, generated where the task runs; refuses to run in the driver process."""
    import os

    if os.getpid() == driver_pid:
        raise RuntimeError("a block was computed on the driver")
    rng = np.random.default_rng(k)
    X = rng.normal(size=(50, 6))
    return np.hstack([X, np.sign(X[:, :1] + 0.1)])


def test_blocks_are_computed_on_the_workers_only(client):
    import os

    import dask

    blocks = [da.from_delayed(dask.delayed(_block_made_off_the_driver)(k, os.getpid()),
                              shape=(50, 7), dtype=np.float64) for k in range(4)]
    Z = da.concatenate(blocks, axis=0)
    Js = nd.from_dask(Z[:, :6], Z[:, 6], loss="Hinge", lam=1e-2, client=client)
    assert Js.loss.m == 200 and Js.loss.n_shards == 4
    res = nsopt.minimize(Js, method="bmrm", rtol=1e-3)
    assert res.status is nsopt.Status.CONVERGED and res.certificate.check(Js) <= res.fun
    # the same function, built in memory here for comparison
    Z_local = np.vstack([_block_made_off_the_driver(k, -1) for k in range(4)])
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(Z_local[:, :6], Z_local[:, 6]),
                              nsopt.regularizers.L2(), 1e-2)
    _close(J, Js, np.random.default_rng(2))

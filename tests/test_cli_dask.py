"""``nsopt solve DATA --dask [ADDRESS] --shards N`` (nsopt/cli.py on nsopt.distributed)."""
from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import nsopt  # noqa: E402
from nsopt.cli import load_model, main  # noqa: E402

from test_cli_models import certificate, dump, error_of  # noqa: E402


@pytest.fixture(scope="module")
def address():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=None)
    yield cluster.scheduler_address
    cluster.close()


def _solve(argv, tmp_path, capsys, name):
    model = tmp_path / f"{name}.npz"
    assert main(argv + ["--no-live", "--model", str(model)]) == 0
    return certificate(capsys.readouterr().out), load_model(model)


@pytest.mark.parametrize("loss", ["hinge", "logistic", "least-absolute-deviation"])
def test_sharded_run_proves_the_same_optimum(address, tmp_path, capsys, loss):
    """The sharded run certifies, and its bracket meets the one-machine run's."""
    X, y = nsopt.datasets.make_sparse_binary(600, 30, random_state=3)
    if loss == "least-absolute-deviation":
        y = X @ np.linspace(-1.0, 1.0, 30) + 0.1 * np.sign(y)
    train = dump(tmp_path / "train.svm", X, y)
    argv = ["solve", train, "--loss", loss, "--lam", "1e-2", "--rtol", "1e-4", "--method", "ls-bmrm"]
    one, model_one = _solve(argv, tmp_path, capsys, "one")
    many, model_many = _solve(argv + ["--dask", address, "--shards", "3"], tmp_path, capsys,
                              "many")
    assert many["status"] == "converged" == one["status"]
    lo = max(float(one["lower bound"]), float(many["lower bound"]))
    hi = min(float(one["fun"]), float(many["fun"]))
    assert lo <= hi + 1e-12  # both brackets hold the optimum
    assert abs(float(many["fun"]) - float(one["fun"])) <= 2e-4 * abs(float(one["fun"]))
    assert model_many.weights.shape == model_one.weights.shape == (30,)
    # the saved model predicts on the driver: the same scores as the model's own weights
    np.testing.assert_allclose(model_many.decision_function(X), X @ model_many.weights, atol=1e-12)


def test_the_note_names_shards_and_workers(address, tmp_path, capsys):
    X, y = nsopt.datasets.make_sparse_binary(100, 5, random_state=1)
    assert main(["solve", dump(tmp_path / "t.svm", X, y), "--dask", address, "--shards", "3",
                 "--no-live", "--lam", "1e-1"]) == 0
    assert f"dask: 3 shards on 2 workers ({address})" in capsys.readouterr().out


def test_shards_without_dask_is_a_usage_error(tmp_path, capsys):
    X, y = nsopt.datasets.make_sparse_binary(50, 5, random_state=0)
    code, err = error_of(["solve", dump(tmp_path / "t.svm", X, y), "--shards", "2"], capsys)
    assert code == 2 and "--shards 2 needs --dask" in err


def test_multiclass_on_dask(address, tmp_path, capsys):
    """A vector loss (multiclass hinge) on shards: certified, the same bracket as one machine."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    y = np.argmax(X[:, :3] + 0.3 * rng.normal(size=(240, 3)), axis=1).astype(float)
    train = dump(tmp_path / "m.svm", X, y)
    argv = ["solve", train, "--lam", "1e-2", "--rtol", "1e-4"]
    one, model_one = _solve(argv, tmp_path, capsys, "one")
    many, model_many = _solve(argv + ["--dask", address, "--shards", "2"], tmp_path, capsys, "many")
    assert many["status"] == "converged" == one["status"]
    assert max(float(one["lower bound"]), float(many["lower bound"])) <= \
        min(float(one["fun"]), float(many["fun"])) + 1e-12
    assert model_many.kind == "multiclass" and model_many.weights.shape == (4, 3)


def test_too_many_shards_names_the_option(address, tmp_path, capsys):
    X, y = nsopt.datasets.make_sparse_binary(5, 3, random_state=0)
    code, err = error_of(["solve", dump(tmp_path / "s.svm", X, y), "--dask", address,
                          "--shards", "9"], capsys)
    assert code == 2 and "--shards 9" in err and "n_shards must be in 1 .. 5" in err

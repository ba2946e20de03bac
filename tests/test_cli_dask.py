"""``nsopt solve DATA --dask [ADDRESS] --shards N`` (nsopt/cli.py on nsopt.distributed)."""
from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import nsopt  # noqa: E402
from nsopt.cli import load_model, main  # noqa: E402

from test_cli_models import certificate, dump, error_of  # noqa: E402
from test_distributed import TEST_CONFIG, preload_nsopt  # noqa: E402


@pytest.fixture(scope="module")
def address():
    preload_nsopt()  # workers forked from a server that imported nsopt once
    with dask.config.set(TEST_CONFIG):
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
    # 5 lines in 9 byte ranges, read on the workers: a range in which no line starts
    assert code == 2 and "--shards 9" in err and "use fewer shards" in err


def _refuse_driver_parsing(monkeypatch):
    """From now on the driver's svmlight readers raise: a run that passes read DATA only on
    the workers (separate processes, where nothing is patched)."""
    from nsopt import cli, io

    def refuse(*args, **kwargs):
        raise AssertionError("the driver parsed the data")
    for module, name in [(io, "load_svmlight"), (io, "load_dataset"), (io, "iter_svmlight"),
                         (cli, "_load"), (cli, "_read")]:
        monkeypatch.setattr(module, name, refuse)


@pytest.mark.parametrize("loss", ["hinge", "least-absolute-deviation"])
def test_data_read_only_on_the_workers_with_the_one_machine_metrics(address, tmp_path, capsys,
                                                                     monkeypatch, loss):
    """Binary labels 1/2 (mapped to -1/+1 on the workers) or regression targets, a bias
    feature, 3 byte ranges of the file: the driver never parses DATA; the model's shape and
    classes are the one-machine run's, both brackets hold the optimum, and the training metric
    printed (from the shards' sums) is the one-machine command line's metric (``_metrics`` on
    the data in memory) at the saved weights. (The iterates themselves part at rounding on
    this small binary-feature problem, bmrm and the parallel sums alike: not compared.)"""
    from nsopt.cli import _metrics

    X, y = nsopt.datasets.make_sparse_binary(600, 30, random_state=5)
    if loss == "hinge":
        y, metric = np.where(y > 0, 2.0, 1.0), "train accuracy"
    else:
        y, metric = X @ np.linspace(-1.0, 1.0, 30) + 0.1 * np.sign(y), "train RMSE"
    train = dump(tmp_path / "train.svm", X, y)
    argv = ["solve", train, "--loss", loss, "--lam", "1e-2", "--rtol", "1e-4",
            "--method", "bmrm", "--bias", "1"]
    one, model_one = _solve(argv, tmp_path, capsys, "one")
    _refuse_driver_parsing(monkeypatch)
    model = tmp_path / "many.npz"
    assert main(argv + ["--dask", address, "--shards", "3", "--no-live", "--model",
                        str(model)]) == 0
    text = capsys.readouterr().out
    many, model_many = certificate(text), load_model(model)
    assert "DATA never read here" in text and "dask: 3 shards on 2 workers" in text
    assert many["status"] == "converged" == one["status"]
    assert model_many.weights.shape == model_one.weights.shape == (31,)
    np.testing.assert_array_equal(model_many.classes, model_one.classes)
    assert max(float(one["lower bound"]), float(many["lower bound"])) <= \
        min(float(one["fun"]), float(many["fun"])) + 1e-12  # both brackets hold the optimum
    monkeypatch.undo()  # the driver's own metrics at the sharded run's weights
    name = metric.split()[1]
    expected = _metrics(model_many, X, y)[name]
    assert many[metric] == (f"{100 * expected:.2f}" if name == "accuracy" else f"{expected:.6g}")
    if loss == "hinge":
        assert "train AUC" not in many and "train AUC" in one  # the AUC needs every score


def test_metric_sums_of_the_shards_equal_the_metrics_in_memory(address, tmp_path):
    """ShardedLoss.metric_sums through the command line's helper: accuracy exactly, RMSE and
    MAE to rounding, against nsopt.cli._metrics on the data in memory."""
    import nsopt.distributed as nd
    from nsopt.cli import LinearModel, _metrics, _sharded_metrics

    X, y = nsopt.datasets.make_sparse_binary(300, 12, random_state=2)
    w = np.random.default_rng(0).normal(size=12)
    for kind, labels in [("binary", np.where(y > 0, 5.0, -3.0)), ("regression", X @ w + y)]:
        path = dump(tmp_path / f"{kind}.svm", X, labels)
        J = nd.load_svmlight(path, loss="Hinge" if kind == "binary" else "LeastSquares",
                             client=address, n_shards=3, binary_labels=kind == "binary")
        try:
            got = _sharded_metrics(J.loss, kind, w)
        finally:
            J.loss.close()
        classes = np.array([-3.0, 5.0]) if kind == "binary" else np.empty(0)
        model = LinearModel(kind=kind, loss="", weights=w, classes=classes, bias=-1.0,
                            n_features=12, lam=1.0, reg="l2")
        want = _metrics(model, X, labels)
        want.pop("AUC", None)
        assert got.keys() == want.keys()
        for name in want:
            assert got[name] == pytest.approx(want[name], rel=1e-13), name
        if kind == "binary":
            assert got["accuracy"] == want["accuracy"] and J.loss.classes == (-3.0, 5.0)


def test_one_label_read_on_the_workers_is_a_usage_error(address, tmp_path, capsys):
    X, _ = nsopt.datasets.make_sparse_binary(20, 4, random_state=0)
    code, err = error_of(["solve", dump(tmp_path / "one.svm", X, np.ones(20)), "--dask", address,
                          "--shards", "2"], capsys)
    assert code == 2 and "one.svm" in err and "a single label (1)" in err


@pytest.mark.parametrize("loss", ["hinge", "least-absolute-deviation"])
def test_a_data_set_name_and_the_test_data_are_read_only_on_the_workers(
        address, tmp_path, capsys, monkeypatch, loss):
    """DATA given by name (found in NSOPT_DATA: the driver looks the file up, the workers read
    it) and --test DATA (a file with a feature training never saw) read and scored on the
    workers, every driver-side reader patched to raise: the test metric printed (from the
    parts' sums) is the one-machine command line's, at the same weights; the AUC is said to be
    unavailable, once."""
    from nsopt.cli import _metrics

    X, y = nsopt.datasets.make_sparse_binary(400, 20, random_state=7)
    Xt, yt = nsopt.datasets.make_sparse_binary(150, 22, random_state=8)  # 2 features more
    if loss == "hinge":
        y, yt, metric = np.where(y > 0, 2.0, 1.0), np.where(yt > 0, 2.0, 1.0), "test accuracy"
    else:
        w = np.linspace(-1.0, 1.0, 22)
        y, yt, metric = X @ w[:20] + 0.1 * y, Xt @ w + 0.1 * yt, "test RMSE"
    monkeypatch.setenv("NSOPT_DATA", str(tmp_path))
    dump(tmp_path / "toy.svm", X, y)
    test = dump(tmp_path / "toy-test.svm", Xt, yt)
    argv = ["solve", "toy.svm", "--test", test, "--loss", loss, "--lam", "1e-2",
            "--rtol", "1e-4", "--method", "bmrm"]
    assert main(argv + ["--no-live"]) == 0
    one = _lines(capsys.readouterr().out)
    _refuse_driver_parsing(monkeypatch)
    model = tmp_path / "many.npz"
    assert main(argv + ["--dask", address, "--shards", "2", "--no-live", "--model",
                        str(model)]) == 0
    text = capsys.readouterr().out
    many, model = _lines(text), load_model(model)
    assert "DATA never read here" in text and "--test DATA never read here" in text
    assert "features 21..22 do not occur in training" in text
    assert text.count("no AUC") == (loss == "hinge")
    assert many["status"] == "converged" == one["status"]
    assert max(float(one["lower bound"]), float(many["lower bound"])) <= \
        min(float(one["fun"]), float(many["fun"])) + 1e-12  # both brackets hold the optimum
    monkeypatch.undo()  # the driver's own metrics at the sharded run's weights
    name = metric.split()[1]
    expected = _metrics(model, Xt, yt)[name]
    assert many[metric] == (f"{100 * expected:.2f}%" if name == "accuracy"
                            else f"{expected:.6g}")
    assert "test AUC" not in many and "train AUC" not in many
    if loss == "hinge":
        assert "test AUC" in one


def _lines(text):
    """``{name: value}`` of the certificate's lines ``name  value`` (the value: the first
    word after the name's words)."""
    import re

    out = {}
    for line in text.splitlines():
        found = re.match(r"\s*(status|fun|lower bound|(?:train|test) [A-Za-z ]+?)\s+(\S+)", line)
        if found:
            out.setdefault(found.group(1), found.group(2))
    return out


def test_bad_test_data_read_on_the_workers_is_a_usage_error(address, tmp_path, capsys):
    """--test read on the workers is checked before the solve, as the driver checks it: a
    label training never saw, a malformed line (named by file and line number)."""
    X, y = nsopt.datasets.make_sparse_binary(60, 5, random_state=0)
    train = dump(tmp_path / "train.svm", X, y)
    unknown = dump(tmp_path / "unknown.svm", X[:9], np.where(np.arange(9) == 4, 3.0, y[:9]))
    code, err = error_of(["solve", train, "--test", unknown, "--dask", address], capsys)
    assert code == 2 and "unknown.svm has labels [3.0] not in the training labels" in err
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:1\n-1 2:1\n1 3:x\n-1 1:2\n")
    code, err = error_of(["solve", train, "--test", str(bad), "--dask", address], capsys)
    assert code == 2 and "bad.svm" in err and "line 3" in err

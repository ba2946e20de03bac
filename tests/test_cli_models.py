"""``nsopt solve`` on multiclass, multilabel and regression data, ``--bias``, the model file
(``--model``) and ``nsopt predict`` (nsopt/cli.py), run in-process through ``main``."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt.cli import LinearModel, load_model, main

LAM = 1e-2


def dump(path, X, y, multilabel=False):
    nsopt.io.dump_svmlight(X, y, path, multilabel=multilabel)
    return str(path)


def error_of(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err


def certificate(text):
    """The values of the certificate block (and predict's metric lines), by name."""
    out = {}
    for line in text.splitlines():
        parts = line.strip().split()
        for n in (3, 2, 1):
            name = " ".join(parts[:n])
            if len(parts) > n and name in {
                    "fun", "lower bound", "status", "train accuracy", "test accuracy", "train AUC",
                    "train Hamming loss", "train exact match", "train RMSE", "test Hamming loss",
                    "accuracy", "AUC", "Hamming loss", "exact match", "RMSE", "MAE"}:
                out.setdefault(name, parts[n].rstrip("%"))
                break
    return out


def npz(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def multiclass_data(m=150, d=6, seed=0):
    """Three blobs with labels 1, 2 and 5 (not 0..k-1)."""
    X, y = nsopt.datasets.make_multiclass(m, d, n_classes=3, random_state=seed)
    return X, np.array([1.0, 2.0, 5.0])[y]


def crammer_singer(X, y_index, W):
    F = X @ W
    margins = F - F[np.arange(len(y_index)), y_index][:, None] + 1.0
    margins[np.arange(len(y_index)), y_index] = 0.0
    return np.mean(margins.max(axis=1))


# --- multiclass


def test_multiclass_solve_model_and_predict(tmp_path, capsys):
    X, y = multiclass_data()
    train = dump(tmp_path / "mc.svm", X, y)
    model_path = tmp_path / "mc.npz"
    assert main(["solve", train, "--lam", str(LAM), "--rtol", "1e-4", "--model", str(model_path),
                 "--no-live"]) == 0
    text = capsys.readouterr().out
    assert "3 classes (1, 2, 5)" in text and "multiclass-hinge" in text
    z = npz(model_path)
    assert str(z["kind"]) == "multiclass" and str(z["loss"]) == "multiclass-hinge"
    assert z["classes"].tolist() == [1.0, 2.0, 5.0] and float(z["bias"]) == -1.0
    assert int(z["n_features"]) == X.shape[1] and float(z["lam"]) == LAM and str(z["reg"]) == "l2"
    W = z["weights"]
    assert W.shape == (X.shape[1], 3)
    # the saved fun is J at the saved weights (labels 1, 2, 5 -> classes 0, 1, 2)
    index = np.searchsorted([1.0, 2.0, 5.0], y)
    J = 0.5 * LAM * np.sum(W * W) + crammer_singer(X, index, W)
    assert float(z["fun"]) == pytest.approx(J, rel=1e-9)
    assert float(z["lower_bound"]) <= float(z["fun"])
    assert float(z["gap"]) <= 1e-4 * float(z["fun"]) and str(z["status"]) == "converged"
    expected = np.mean(np.array([1.0, 2.0, 5.0])[np.argmax(X @ W, axis=1)] == y)
    assert float(certificate(text)["train accuracy"]) == pytest.approx(100 * expected, abs=0.006)

    preds = tmp_path / "preds.txt"
    assert main(["predict", str(model_path), train, "--output", str(preds)]) == 0
    out = capsys.readouterr()
    assert float(certificate(out.out)["accuracy"]) == pytest.approx(100 * expected, abs=0.006)
    written = np.array([float(v) for v in preds.read_text().split()])
    assert np.array_equal(written, np.array([1.0, 2.0, 5.0])[np.argmax(X @ W, axis=1)])
    assert f"{len(y)} predictions written" in out.err


def test_softmax_and_test_accuracy(tmp_path, capsys):
    X, y = multiclass_data()
    Xt, yt = multiclass_data(m=60, seed=1)
    Xt = Xt.copy()
    Xt[:, -1] = 0.0  # the test file has fewer columns
    train, test = dump(tmp_path / "tr.svm", X, y), dump(tmp_path / "te.svm", Xt, yt)
    model_path = tmp_path / "sm.npz"
    assert main(["solve", train, "--loss", "softmax", "--lam", str(LAM), "--test", test,
                 "--model", str(model_path), "--quiet"]) == 0
    cert = certificate(capsys.readouterr().out)
    z = npz(model_path)
    W = z["weights"]
    F = X @ W
    index = np.searchsorted([1.0, 2.0, 5.0], y)
    logsumexp = np.log(np.exp(F - F.max(1, keepdims=True)).sum(1)) + F.max(1)
    J = 0.5 * LAM * np.sum(W * W) + np.mean(logsumexp - F[np.arange(len(y)), index])
    assert str(z["loss"]) == "softmax" and float(z["fun"]) == pytest.approx(J, rel=1e-9)
    test_acc = np.mean(np.array([1.0, 2.0, 5.0])[np.argmax(Xt @ W, axis=1)] == yt)
    assert float(cert["test accuracy"]) == pytest.approx(100 * test_acc, abs=0.006)


def test_multiclass_test_label_unknown(tmp_path, capsys):
    X, y = multiclass_data(m=60)
    train = dump(tmp_path / "tr.svm", X, y)
    test = dump(tmp_path / "te.svm", X[:5], np.full(5, 7.0))
    code, err = error_of(["solve", train, "--test", test, "--quiet"], capsys)
    assert code == 2 and "labels [7.0] not in the training labels [1.0, 2.0, 5.0]" in err


def test_real_valued_labels_without_a_loss(tmp_path, capsys):
    X, y = nsopt.datasets.make_regression(40, 3, random_state=0)
    code, err = error_of(["solve", dump(tmp_path / "r.svm", X, y)], capsys)
    assert code == 2 and "not all integers" in err and "--loss least-squares" in err


# --- multilabel


def multilabel_data(m=120, d=8, k=4, seed=0):
    return nsopt.datasets.make_multilabel(m, d, n_labels=k, random_state=seed)


def test_multilabel_with_bias_solve_and_predict(tmp_path, capsys):
    X, Y = multilabel_data()
    train = dump(tmp_path / "ml.svm", X, Y, multilabel=True)
    assert "," in open(train).read()  # label lists like 0,3: read as multilabel without a flag
    model_path = tmp_path / "ml.npz"
    assert main(["solve", train, "--lam", str(LAM), "--bias", "2", "--model", str(model_path),
                 "--quiet"]) == 0
    cert = certificate(capsys.readouterr().out)
    z = npz(model_path)
    assert str(z["kind"]) == "multilabel" and str(z["loss"]) == "multilabel-hinge"
    assert float(z["bias"]) == 2.0 and z["classes"].tolist() == [0, 1, 2, 3]
    W = z["weights"]
    assert W.shape == (X.shape[1] + 1, 4)
    F = X @ W[:-1] + 2.0 * W[-1]  # the bias feature: a constant 2, its weight last
    # the multilabel hinge by its definition, max(0, 1 + max_irrelevant f - min_relevant f)
    rel = np.where(Y == 1, F, np.inf).min(1)
    irr = np.where(Y == 0, F, -np.inf).max(1)
    pair = (Y.sum(1) > 0) & (Y.sum(1) < Y.shape[1])
    risk = np.mean(np.where(pair, np.maximum(0.0, 1.0 + irr - rel), 0.0))
    assert float(z["fun"]) == pytest.approx(0.5 * LAM * np.sum(W * W) + risk, rel=1e-9)
    predicted = F > F.mean(axis=1, keepdims=True)
    hamming = np.mean(predicted != Y)
    assert float(cert["train Hamming loss"]) == pytest.approx(hamming, abs=1e-6)

    preds = tmp_path / "p.txt"
    assert main(["predict", str(model_path), train, "-o", str(preds)]) == 0
    assert float(certificate(capsys.readouterr().out)["Hamming loss"]) == pytest.approx(hamming, abs=1e-6)
    lines = preds.read_text().splitlines()
    assert lines == [",".join(map(str, np.flatnonzero(row))) for row in predicted]


def test_multilabel_flag_for_single_labels(tmp_path, capsys):
    X, Y = multilabel_data(m=60)
    one = np.zeros_like(Y)
    one[np.arange(len(Y)), np.arange(len(Y)) % Y.shape[1]] = 1.0  # exactly one label each
    path = dump(tmp_path / "one.svm", X, one, multilabel=True)
    for flag, kind in (([], "multiclass"), (["--multilabel"], "multilabel")):
        model_path = tmp_path / f"{kind}.npz"
        assert main(["solve", path, "--lam", "0.1", "--quiet", "--model", str(model_path)] + flag) == 0
        assert str(npz(model_path)["kind"]) == kind
    capsys.readouterr()
    code, err = error_of(["solve", path, "--loss", "multilabel-hinge"], capsys)
    assert code == 2 and "--multilabel" in err
    code, err = error_of(["solve", path, "--multilabel", "--loss", "hinge"], capsys)
    assert code == 2 and "not a multilabel loss" in err


# --- binary: bias, AUC, extra features, unlabelled data, old model files


def binary_data(m=150, d=8, seed=0):
    w = np.random.default_rng(123).normal(size=d)
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(m, d)), 3)
    y = np.where(X @ w + 1.0 + 0.5 * rng.normal(size=m) > 0, 1.0, -1.0)  # an offset: bias helps
    return X, y


def test_bias_is_a_regularized_constant_feature(tmp_path, capsys):
    """--bias 2 solves the same problem as the data with an explicit last column of 2s: the
    two certified brackets [lower bound, fun] overlap, and fun is J at the saved weights with
    the bias weight regularized."""
    X, y = binary_data()
    plain = dump(tmp_path / "b.svm", X, y)
    explicit = dump(tmp_path / "b2.svm", np.hstack([X, np.full((len(y), 1), 2.0)]), y)
    brackets = []
    for argv, name in (([plain, "--bias", "2"], "bias.npz"), ([explicit], "col.npz")):
        assert main(["solve", *argv, "--lam", str(LAM), "--rtol", "1e-6", "--quiet", "--model",
                     str(tmp_path / name)]) == 0
        z = npz(tmp_path / name)
        brackets.append((float(z["lower_bound"]), float(z["fun"])))
    capsys.readouterr()
    (lo1, hi1), (lo2, hi2) = brackets
    assert max(lo1, lo2) <= min(hi1, hi2)
    z = npz(tmp_path / "bias.npz")
    w = z["weights"]
    assert w.shape == (X.shape[1] + 1,) and float(z["bias"]) == 2.0
    J = 0.5 * LAM * w @ w + np.mean(np.maximum(0.0, 1.0 - y * (X @ w[:-1] + 2.0 * w[-1])))
    assert float(z["fun"]) == pytest.approx(J, rel=1e-9)
    assert abs(w[-1]) > 1e-3  # the bias is used


def pairwise_auc(scores, positive):
    s_pos, s_neg = scores[positive][:, None], scores[~positive][None, :]
    return np.mean((s_pos > s_neg) + 0.5 * (s_pos == s_neg))


def test_predict_binary_accuracy_auc_and_extra_features(tmp_path, capsys):
    X, y = binary_data()
    labels = np.where(y > 0, 4.0, 3.0)  # labels 3 and 4: 4 is the positive class
    model_path = tmp_path / "b.npz"
    assert main(["solve", dump(tmp_path / "b.svm", X, labels), "--lam", str(LAM), "--bias", "1",
                 "--model", str(model_path), "--quiet"]) == 0
    capsys.readouterr()
    Xt, yt = binary_data(m=80, seed=1)
    yt = np.where(yt > 0, 4.0, 3.0)
    extra = np.round(np.random.default_rng(5).normal(size=(80, 3)), 3)  # 3 features unknown to the model
    test = dump(tmp_path / "t.svm", np.hstack([Xt, extra]), yt)
    preds = tmp_path / "p.txt"
    assert main(["predict", str(model_path), test, "--output", str(preds)]) == 0
    out = capsys.readouterr()
    assert f"features {X.shape[1] + 1}..{X.shape[1] + 3} are ignored, as liblinear does" in out.err
    assert f"({np.count_nonzero(extra)} nonzero values)" in out.err
    w = npz(model_path)["weights"]
    scores = Xt @ w[:-1] + w[-1]  # the extra features ignored, bias 1
    predicted = np.where(scores >= 0, 4.0, 3.0)
    cert = certificate(out.out)
    assert float(cert["accuracy"]) == pytest.approx(100 * np.mean(predicted == yt), abs=0.006)
    auc = pairwise_auc(scores, yt == 4.0)
    assert float(cert["AUC"]) == pytest.approx(auc, abs=1e-4)
    assert 0.5 < auc <= 1.0
    assert np.array_equal(np.array(preds.read_text().split(), dtype=float), predicted)
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    assert auc == pytest.approx(sklearn_metrics.roc_auc_score(yt == 4.0, scores), abs=1e-12)


def test_predict_unlabelled_data(tmp_path, capsys):
    """Labels none of which is a class of the model (LIBSVM's placeholder 0): no accuracy."""
    X, y = binary_data(m=60)
    model_path = tmp_path / "b.npz"
    assert main(["solve", dump(tmp_path / "b.svm", X, y), "--lam", "0.1", "--model",
                 str(model_path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["predict", str(model_path), dump(tmp_path / "u.svm", X, np.zeros(60)),
                 "-o", "-"]) == 0
    out = capsys.readouterr()
    assert "taken as unlabelled" in out.err and "accuracy" not in out.out
    w = npz(model_path)["weights"]
    assert out.out.split() == [("1" if s >= 0 else "-1") for s in X @ w]


def test_model_written_by_the_old_out_option(tmp_path, capsys):
    """An .npz of `solve --out` before model files had a format (w, labels, options) still
    predicts, as a binary model without bias."""
    X, y = binary_data(m=60)
    w = np.random.default_rng(0).normal(size=X.shape[1])
    old = tmp_path / "old.npz"
    np.savez(old, w=w, labels=np.array([-1.0, 1.0]), fun=1.0, status="converged",
             options=json.dumps({"loss": "hinge", "reg": "l2", "lam": 0.1,
                                 "n_features": X.shape[1]}))
    model = load_model(old)
    assert model.kind == "binary" and model.bias == -1.0 and model.n_features == X.shape[1]
    assert main(["predict", str(old), dump(tmp_path / "b.svm", X, y)]) == 0
    expected = np.mean(np.where(X @ w >= 0, 1.0, -1.0) == y)
    assert float(certificate(capsys.readouterr().out)["accuracy"]) == pytest.approx(100 * expected, abs=0.006)


# --- regression


def test_regression_solve_and_predict(tmp_path, capsys):
    X, y = nsopt.datasets.make_regression(120, 5, noise=0.5, random_state=0)
    data = dump(tmp_path / "r.svm", X, y + 3.0)  # an offset for the bias
    model_path = tmp_path / "r.npz"
    assert main(["solve", data, "--loss", "least-squares", "--bias", "1", "--lam", "1e-3",
                 "--rtol", "1e-5", "--model", str(model_path), "--quiet"]) == 0
    cert = certificate(capsys.readouterr().out)
    z = npz(model_path)
    w = z["weights"]
    assert str(z["kind"]) == "regression" and w.shape == (6,) and z["classes"].size == 0
    f = X @ w[:-1] + w[-1]
    J = 0.5e-3 * w @ w + np.mean(0.5 * (f - y - 3.0) ** 2)
    assert float(z["fun"]) == pytest.approx(J, rel=1e-9)
    rmse = np.sqrt(np.mean((f - y - 3.0) ** 2))
    assert float(cert["train RMSE"]) == pytest.approx(rmse, rel=1e-5)
    assert main(["predict", str(model_path), data, "-o", "-"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert float(out[0].split()[1]) == pytest.approx(rmse, rel=1e-5) and out[0].startswith("RMSE")
    assert np.allclose(np.array(out[2:], dtype=float), f, rtol=1e-13, atol=1e-13)


# --- the model file: round trip and errors


def test_load_model_round_trip(tmp_path, capsys):
    X, y = multiclass_data(m=60)
    model_path = tmp_path / "m.npz"
    assert main(["solve", dump(tmp_path / "m.svm", X, y), "--lam", "0.1", "--bias", "0.5",
                 "--reg", "elastic-net", "--model", str(model_path), "--quiet"]) == 0
    capsys.readouterr()
    model = load_model(model_path)
    assert isinstance(model, LinearModel)
    z = npz(model_path)
    assert (model.kind, model.loss, model.bias, model.n_features, model.lam, model.reg) == (
        "multiclass", "multiclass-hinge", 0.5, X.shape[1], 0.1, "elastic-net")
    assert np.array_equal(model.weights, z["weights"]) and np.array_equal(model.weights.ravel(), z["w"])
    assert model.info["l1_ratio"] == 0.5 and model.info["status"] == str(z["status"])
    Xb = np.hstack([X, np.full((60, 1), 0.5)])
    assert np.allclose(model.decision_function(X), Xb @ z["weights"], rtol=1e-12, atol=1e-12)
    assert np.array_equal(model.predict(sp.csr_matrix(X)),
                          np.array([1.0, 2.0, 5.0])[np.argmax(Xb @ z["weights"], axis=1)])


def test_predict_errors(tmp_path, capsys):
    X, y = multiclass_data(m=60)
    data = dump(tmp_path / "m.svm", X, y)
    model_path = tmp_path / "m.npz"
    assert main(["solve", data, "--lam", "0.1", "--model", str(model_path), "--quiet"]) == 0
    capsys.readouterr()

    code, err = error_of(["predict", str(tmp_path / "none.npz"), data], capsys)
    assert code == 2 and "no such model file" in err and "none.npz" in err
    code, err = error_of(["predict", data, data], capsys)  # a LIBSVM file as the model
    assert code == 2 and "not an nsopt model file (not an .npz archive)" in err
    result = tmp_path / "result.npz"
    nsopt.minimize(nsopt.RegularizedRisk(nsopt.losses.Hinge(X, np.where(y > 1, 1.0, -1.0)), lam=0.1),
                   max_iter=3).save(result)
    code, err = error_of(["predict", str(result), data], capsys)
    assert code == 2 and "saved Result" in err and "nsopt.load_result" in err
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    code, err = error_of(["predict", str(tmp_path / "other.npz"), data], capsys)
    assert code == 2 and "has no 'w' entry" in err
    z = npz(model_path)
    z["weights"] = z["weights"][:-1]  # one feature short
    np.savez(tmp_path / "damaged.npz", **z)
    code, err = error_of(["predict", str(tmp_path / "damaged.npz"), data], capsys)
    assert code == 2 and "damaged" in err and f"shape ({X.shape[1]}, 3)" in err
    code, err = error_of(["predict", str(model_path), str(tmp_path / "nodata.svm")], capsys)
    assert code == 2 and "no such file" in err
    Xm, Ym = multilabel_data(m=20, d=X.shape[1])
    code, err = error_of(["predict", str(model_path), dump(tmp_path / "ml.svm", Xm, Ym, True)], capsys)
    assert code == 2 and "is multilabel, the model" in err and "multiclass" in err
    code, err = error_of(["predict", str(model_path), data, "--output", "/no/such/dir/p.txt"], capsys)
    assert code == 2 and "--output" in err and "does not exist" in err


def test_multilabel_detected_from_an_empty_label(tmp_path, capsys):
    """A first line without labels (it starts with a feature) is multilabel syntax too."""
    path = tmp_path / "ml.svm"
    path.write_text(" 1:0.3 2:1\n0,1 1:1 2:0.5\n1,2 2:2\n0 1:-1\n2 1:1 2:1\n")
    model_path = tmp_path / "m.npz"
    assert main(["solve", str(path), "--lam", "0.1", "--quiet", "--model", str(model_path)]) == 0
    capsys.readouterr()
    z = npz(model_path)
    assert str(z["kind"]) == "multilabel" and z["classes"].tolist() == [0, 1, 2]
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:0.3\n2 x:1\n")
    code, err = error_of(["solve", str(bad)], capsys)  # a malformed line: the first reading's error
    assert code == 2 and "line 2" in err


@given(st.lists(st.tuples(st.integers(-3, 3), st.booleans()), min_size=2, max_size=40))
def test_auc_is_the_pairwise_probability(pairs):
    """_auc (mid-ranks) equals its definition over all positive-negative pairs, ties counting
    one half (scores from a small set of integers: many ties); NaN with a single class."""
    from nsopt.cli import _auc

    scores = np.array([s for s, _ in pairs], dtype=float)
    positive = np.array([p for _, p in pairs])
    if positive.all() or not positive.any():
        assert math.isnan(_auc(scores, positive))
    else:
        assert _auc(scores, positive) == pytest.approx(pairwise_auc(scores, positive), abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["binary", "multiclass", "multilabel", "regression"]),
       d=st.integers(1, 5), k=st.integers(2, 4), bias=st.sampled_from([-1.0, 0.5, 3.0]),
       seed=st.integers(0, 2**16))
def test_save_and_load_model_round_trip(tmp_path_factory, kind, d, k, bias, seed):
    """Whatever the kind, the file gives back the same model: weights bit for bit, classes,
    bias, and the same predictions on data with extra features (which it ignores)."""
    from nsopt.cli import save_model

    rng = np.random.default_rng(seed)
    rows = d + (bias > 0)
    vector = kind in ("binary", "regression")
    weights = rng.normal(size=(rows,) if vector else (rows, k))
    classes = {"binary": np.array([-1.0, 1.0]), "multiclass": np.arange(k) * 2.5 - 1,
               "multilabel": np.arange(k, dtype=float), "regression": np.empty(0)}[kind]
    model = LinearModel(kind=kind, loss="some-loss", weights=weights, classes=classes, bias=bias,
                        n_features=d, lam=0.25, reg="l2", info={"note": "x"})
    res = nsopt.Result(x=weights.ravel(), fun=1.0, lower_bound=0.5, gap=0.5, nit=3, nfev=4,
                       status=nsopt.Status.MAX_ITER, success=False, message="", time=0.1,
                       history={}, certificate=None)
    path = tmp_path_factory.mktemp("m") / "m.npz"
    save_model(path, model, res)
    back = load_model(path)
    assert back.kind == kind and back.bias == bias and back.n_features == d and back.lam == 0.25
    assert np.array_equal(back.weights, weights) and np.array_equal(back.classes, classes)
    assert back.info["note"] == "x" and back.info["status"] == "max_iter"
    X = rng.normal(size=(6, d + 2))  # two features the model never saw
    assert np.array_equal(back.predict(X), model.predict(X[:, :d]))

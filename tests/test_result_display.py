"""How a Result shows itself (str, HTML, the CLI block), its history as a table, and its
round trip through Result.save / nsopt.load_result (nsopt/result.py)."""
from __future__ import annotations

import dataclasses
import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import nsopt
from nsopt.result import Result, Status


@pytest.fixture(scope="module")
def problem():
    X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
    return nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam=1e-2)


@pytest.fixture(scope="module")
def runs(problem):
    return {m: nsopt.minimize(problem, method=m, rtol=1e-4) for m in ("bmrm", "sublbfgs")}


@pytest.fixture(scope="module")
def res(runs):
    return runs["bmrm"]


def no_bound(res):
    """``res`` as if no lower bound were known, with NaN and inf where a run can have them."""
    h = dict(res.history)
    lower = h["lower_bound"].copy()
    lower[:3] = -np.inf
    h["lower_bound"], h["gap"] = lower, h["fun"] - lower
    cert = nsopt.Certificate(upper=res.fun, lower=-math.inf, gap=math.inf)
    return dataclasses.replace(res, lower_bound=-math.inf, gap=math.inf, history=h,
                               status=Status.STATIONARY, success=False,
                               message=Status.STATIONARY.message, certificate=cert,
                               subgradient_norm=math.nan, linearization_error=0.25)


# -- display -----------------------------------------------------------------------------------
def test_repr_stays_one_line(res):
    text = repr(res)
    assert "\n" not in text and text.startswith("Result(method='bmrm', status=converged")


def test_str_is_the_certificate_block(res):
    text = str(res)
    assert text == res.summary()
    lines = text.splitlines()
    assert lines[0] == "certificate"
    assert f"{res.fun:.10g}" in lines[1] and f"{res.lower_bound:.10g}" in lines[2]
    assert "bundle-dual" in lines[2]                       # the certificate's source
    assert float(lines[3].split()[1]) == pytest.approx(res.gap, rel=1e-3)
    assert float(lines[4].split()[2]) == pytest.approx(res.gap / abs(res.fun), rel=1e-3)
    assert lines[5].split()[1] == "converged" and Status.CONVERGED.message in lines[5]
    assert lines[6].split()[1] == str(res.nit)
    assert f"({res.nfev} oracle calls, method bmrm)" in lines[6]
    assert lines[7].split()[1] == f"{res.time:.3f}s"
    assert lines[8].startswith(f"the optimum lies in [lower bound, fun] = "
                               f"[{res.lower_bound:.10g}, {res.fun:.10g}]")


def test_str_without_a_bound(res):
    text = str(no_bound(res))
    assert "no lower bound is known" in text and "the optimum lies in" not in text
    assert "stationary" in text and Status.STATIONARY.message in text


def test_summary_takes_rtol_and_extra_lines(res):
    lines = res.summary(rtol=1e-4, extra=[("train accuracy", "93.40%")]).splitlines()
    assert lines[4].endswith("gap / |fun| (rtol 0.0001)")
    assert lines[-2].split() == ["train", "accuracy", "93.40%"]
    assert lines[-1].startswith("the optimum lies in")


def test_cli_prints_the_same_block(res):
    from nsopt.cli import print_certificate

    out = io.StringIO()
    print_certificate(res, out, rtol=1e-3, accuracy=0.934, test_accuracy=0.9)
    assert out.getvalue() == res.summary(rtol=1e-3, extra=[("train accuracy", "93.40%"),
                                                          ("test accuracy", "90.00%")]) + "\n"


def test_relative_gap(res):
    assert res.relative_gap == res.gap / abs(res.fun)
    assert dataclasses.replace(res, gap=0.0, fun=0.0).relative_gap == 0.0
    assert dataclasses.replace(res, gap=1.0, fun=0.0).relative_gap == math.inf


def test_html_is_a_small_escaped_table(res):
    text = res._repr_html_()
    assert text.startswith("<table") and text.endswith("</table>")
    assert text.count("<tr>") == 9
    for shown in (f"{res.lower_bound:.10g}, {res.fun:.10g}", f"{res.gap:.4g}", "converged",
                  str(res.nit), str(res.nfev), "bmrm", "bundle-dual", f"{res.time:.3f} s"):
        assert shown in text, shown
    assert "lower_bound &lt;= J* &lt;= fun" in text
    odd = dataclasses.replace(res, method="<script>&x")
    assert "<script>" not in odd._repr_html_() and "&lt;script&gt;&amp;x" in odd._repr_html_()


# -- history -----------------------------------------------------------------------------------
def test_history_is_still_a_dict_of_arrays(res):
    assert isinstance(res.history, dict)
    assert all(isinstance(v, np.ndarray) for v in res.history.values())
    assert res.history["gap"][-1] == res.gap


@pytest.mark.parametrize("method", ["bmrm", "sublbfgs"])
def test_history_table(runs, method):
    res = runs[method]
    table = res.history_table()
    assert table.dtype.names == tuple(res.history)
    assert len(table) == res.nit + 1
    for c, v in res.history.items():
        np.testing.assert_array_equal(table[c], v)
        assert table.dtype[c] == v.dtype


def test_to_pandas(res, tmp_path):
    pd = pytest.importorskip("pandas")
    df = res.to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == list(res.history)
    np.testing.assert_array_equal(df["gap"].to_numpy(), res.history["gap"])
    # the spelling, on a run and on a loaded result
    res.save(tmp_path / "r.npz")
    for r in (res, nsopt.load_result(tmp_path / "r.npz")):
        frame = r.history.to_pandas()
        assert list(frame.columns) == list(res.history)
        np.testing.assert_array_equal(frame["lower_bound"].to_numpy(), res.history["lower_bound"])
        np.testing.assert_array_equal(r.history.table()["nfev"], res.history["nfev"])


def test_to_pandas_without_pandas(res, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        res.to_pandas()


# -- to_dict, save, load -----------------------------------------------------------------------
def test_to_dict_is_json(res):
    d = res.to_dict()
    back = json.loads(json.dumps(d))
    assert back["x"] == res.x.tolist() and back["status"] == "converged"
    assert back["history"]["gap"] == res.history["gap"].tolist()
    assert back["certificate"] == {
        "source": "bundle-dual", "lower": res.lower_bound, "upper": res.fun, "gap": res.gap,
        "b_bar": res.certificate.b_bar, "fingerprint": res.certificate.fingerprint,
        "evidence": res.certificate.evidence.kind, "a_bar": res.certificate.a_bar.tolist()}
    assert back["info"] == {k: v for k, v in res.info.items() if k != "planes"}
    assert back["info_dropped"] == ["planes"]


def test_info_keeps_plain_data_only(res):
    info = {"n": np.int64(3), "f": np.float64(0.5), "ok": np.bool_(True), "s": "text",
            "arr": np.zeros(3), "tup": (1, 2.5), "status": Status.MAX_ITER,
            "nested": {"w": np.ones(2), "f": 1.5, "pair": (np.zeros(2), 1)}, 7: "int key"}
    d = dataclasses.replace(res, info=info).to_dict()
    assert d["info"] == {"n": 3, "f": 0.5, "ok": True, "s": "text", "tup": [1, 2.5],
                         "status": "max_iter", "nested": {"f": 1.5}}
    assert sorted(d["info_dropped"]) == sorted(["arr", "nested.w", "nested.pair", "7"])
    json.dumps(d)


def assert_same(a, b):
    np.testing.assert_array_equal(a.x, b.x)
    for name in ("fun", "lower_bound", "gap", "nit", "nfev", "status", "success", "message",
                 "time", "method", "subgradient_norm", "linearization_error"):
        va, vb = getattr(a, name), getattr(b, name)
        assert va == vb or (va != va and vb != vb), name   # NaN equals NaN here
    assert list(a.history) == list(b.history)
    for c in a.history:
        np.testing.assert_array_equal(a.history[c], b.history[c])
        assert a.history[c].dtype == b.history[c].dtype
    assert b.info == json.loads(json.dumps(a.to_dict()["info"]))


@pytest.mark.parametrize("method", ["bmrm", "sublbfgs"])
@pytest.mark.parametrize("as_path", [str, Path], ids=["str", "Path"])
def test_save_load_round_trip(runs, method, as_path, tmp_path):
    res = runs[method]
    path = as_path(tmp_path / "run.npz")
    res.save(path)
    back = nsopt.load_result(path)
    assert isinstance(back, Result) and back.info == res.to_dict()["info"]
    assert_same(res, back)
    cert = back.certificate
    assert (cert.source, cert.lower, cert.upper, cert.gap, cert.fingerprint) == (
        res.certificate.source, res.lower_bound, res.fun, res.gap, res.certificate.fingerprint)
    np.testing.assert_array_equal(cert.a_bar, res.certificate.a_bar)
    assert cert.evidence is None and str(back) == str(res)


def test_round_trip_of_nan_and_inf(res, tmp_path):
    odd = no_bound(res)
    odd.save(tmp_path / "odd.npz")
    back = nsopt.load_result(tmp_path / "odd.npz")
    assert_same(odd, back)
    assert back.lower_bound == -math.inf and back.gap == math.inf
    assert math.isnan(back.subgradient_norm) and back.linearization_error == 0.25
    assert np.all(back.history["lower_bound"][:3] == -np.inf)
    assert back.status is Status.STATIONARY and not back.success


def test_saved_file_needs_no_pickle(res, tmp_path):
    path = tmp_path / "run.npz"
    res.save(path)
    assert not (tmp_path / "run.npz.npz").exists()
    with np.load(path, allow_pickle=False) as data:
        np.testing.assert_array_equal(data["x"], res.x)
        np.testing.assert_array_equal(data["history.gap"], res.history["gap"])
        meta = json.loads(str(data["nsopt_result"]))
    assert meta["fun"] == res.fun and meta["status"] == "converged"


def test_loaded_certificate_cannot_be_rechecked(res, problem, tmp_path):
    assert res.certificate.check(problem) >= res.lower_bound * (1 - 1e-9)
    res.save(tmp_path / "run.npz")
    with pytest.raises(nsopt.CertificateError, match="without evidence"):
        nsopt.load_result(tmp_path / "run.npz").certificate.check(problem)


def test_load_rejects_other_files(res, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a result\n")
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    npy = tmp_path / "array.npy"
    np.save(npy, np.zeros(3))
    other = tmp_path / "other.npz"
    np.savez(other, w=np.zeros(3), fun=1.0)
    for path in (text, empty, npy, other):
        with pytest.raises(ValueError, match="not an nsopt result") as info:
            nsopt.load_result(path)
        assert str(path) in str(info.value)
    with pytest.raises(FileNotFoundError):
        nsopt.load_result(tmp_path / "missing.npz")

"""Bad inputs give clear errors naming the argument; user data is never modified (issue 9, item 7).

Each test asserts the exception type and that the message names the argument (and the value or
position where there is one). The no-mutation tests compare the caller's arrays bitwise.
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses
from nsopt import regularizers as R
from nsopt._validation import check_callback

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 3))
Y_BIN = np.array([1.0, -1, 1, -1, 1, -1])
Y_CLASS = np.array([0, 1, 2, 1, 0, 2])


def _risk():
    return nsopt.RegularizedRisk(losses.Hinge(X, Y_BIN), lam=0.1)


# --- 1. complex, string and object input ---------------------------------------------------
COMPLEX_CASES = {
    "Hinge-X": (lambda: losses.Hinge(X + 0j, Y_BIN), "X"),
    "Hinge-X-sparse": (lambda: losses.Hinge(sp.csr_matrix(X + 1j), Y_BIN), "X"),
    "LeastSquares-y": (lambda: losses.LeastSquares(X, Y_BIN + 1j), "y"),
    "Hinge-sample_weight": (lambda: losses.Hinge(X, Y_BIN, sample_weight=np.ones(6) + 0j),
                            "sample_weight"),
    "Softmax-y": (lambda: losses.Softmax(X, Y_CLASS + 0j), "y"),
    "MultilabelHinge-Y": (lambda: losses.MultilabelHinge(X, np.ones((6, 2)) + 0j), "Y"),
    "ScaledMulticlassHinge-cost": (
        lambda: losses.ScaledMulticlassHinge(X, Y_CLASS, (1 - np.eye(3)) + 0j), "cost"),
    "ROCArea-X": (lambda: losses.ROCArea(X + 0j, Y_BIN), "X"),
    "NDCG-relevance": (lambda: losses.NDCG(X, np.arange(6.0) + 1j, np.zeros(6)), "relevance"),
    "Novelty-X": (lambda: losses.Novelty(X + 1j), "X"),
    "QuadraticForm-Q": (lambda: R.QuadraticForm(np.eye(3) + 0j), "Q"),
    "KL-prior": (lambda: R.KL(np.full(3, 1 / 3) + 0j), "prior"),
    "value-w": (lambda: losses.Hinge(X, Y_BIN).value(np.zeros(3) + 0j), "w"),
    "minimize-x0": (lambda: nsopt.minimize(_risk(), x0=np.zeros(3, complex)), "x0"),
    "dump_svmlight-X": (lambda: nsopt.io.dump_svmlight(X + 1j, Y_BIN, io.BytesIO()), "X"),
    "normalize_rows-X": (lambda: nsopt.datasets.normalize_rows(X + 1j), "X"),
    "object-array-with-complex": (
        lambda: losses.LeastSquares(X, np.array([1.0, 2.0, 1j, 0, 0, 0], dtype=object)), r"y"),
}


@pytest.mark.parametrize("case", sorted(COMPLEX_CASES))
def test_issue9_complex_input_is_rejected_naming_the_argument(case):
    make, name = COMPLEX_CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning would mean numpy truncated first
        with pytest.raises(TypeError, match=rf"^{name} (has complex dtype|holds a complex number)"):
            make()


@pytest.mark.parametrize("make, pattern", [
    (lambda: losses.LeastSquares(X, ["1"] * 6), r"^y must be a 1-D array of real numbers, got an array of dtype <U1"),
    (lambda: losses.Hinge(np.array([["a", "b", "c"]] * 6), Y_BIN), r"^X must be .*dtype <U1"),
    (lambda: losses.Hinge(_object_with(X, (2, 1), "x"), Y_BIN), r"^X must be .*X\[2, 1\] is str 'x'"),
    (lambda: losses.LeastSquares(X, [1.0, None, 0, 0, 0, 0]), r"^y must be .*y\[1\] is NoneType"),
    (lambda: losses.Hinge([[1.0, 2.0], [3.0]], Y_BIN[:2]), r"^X must be .*got list"),
    (lambda: losses.Hinge(X, Y_BIN).value("abc"), r"^w must be a 1-D array of real numbers"),
])
def test_strings_and_objects_are_rejected_naming_the_argument(make, pattern):
    with pytest.raises(TypeError, match=pattern):
        make()


def _object_with(A, where, value):
    B = A.astype(object)
    B[where] = value
    return B


def test_object_arrays_of_real_numbers_are_accepted():
    a = losses.Hinge(X.astype(object), Y_BIN.astype(object))
    b = losses.Hinge(X, Y_BIN)
    w = np.array([0.3, -0.2, 0.1])
    assert a.value(w) == b.value(w)


# --- 2. a caller's sparse matrix is never modified -----------------------------------------
def _messy_csr():
    """Unsorted indices and a duplicate entry (row 0 column 0 twice)."""
    data = np.array([1.0, 2.0, 3.0, 4.0, -1.5, 0.5])
    indices = np.array([2, 0, 0, 1, 2, 0], dtype=np.int32)
    indptr = np.array([0, 3, 4, 6], dtype=np.int32)
    return sp.csr_matrix((data, indices, indptr), shape=(3, 3))


def _snapshot(A):
    return (A.data.copy(), A.indices.copy(), A.indptr.copy(), A.has_canonical_format,
            A.has_sorted_indices, A.nnz)


def _assert_unchanged(A, snap):
    data, indices, indptr, canonical, sorted_, nnz = snap
    assert A.data.tobytes() == data.tobytes()
    assert A.indices.tobytes() == indices.tobytes()
    assert A.indptr.tobytes() == indptr.tobytes()
    assert A.nnz == nnz
    assert A.has_canonical_format == canonical and A.has_sorted_indices == sorted_


@pytest.mark.parametrize("make", [
    lambda A: losses.Hinge(A, [1.0, -1.0, 1.0]),
    lambda A: losses.LeastSquares(A, [1.0, 2.0, 3.0]),
    lambda A: losses.MulticlassHinge(A, [0, 1, 1]),
    lambda A: losses.ROCArea(A, [1.0, -1.0, 1.0]),
    lambda A: nsopt.datasets.normalize_rows(A),
    lambda A: nsopt.io.dump_svmlight(A, [1.0, -1.0, 1.0], io.BytesIO()),
], ids=["Hinge", "LeastSquares", "MulticlassHinge", "ROCArea", "normalize_rows", "dump_svmlight"])
def test_issue9_unsorted_duplicate_csr_is_not_modified(make):
    A = _messy_csr()
    assert not A.has_canonical_format
    snap = _snapshot(A)
    make(A)
    _assert_unchanged(A, snap)


def test_canonical_csr_is_shared_not_copied():
    A = sp.csr_matrix(X)
    loss = losses.Hinge(A, Y_BIN)
    assert np.shares_memory(loss.data.X.data, A.data)  # the fast path makes no copy


@st.composite
def messy_csr(draw):
    m = draw(st.integers(1, 6))
    d = draw(st.integers(1, 5))
    nnz = draw(st.integers(0, 12))
    rows = np.sort(np.array(draw(st.lists(st.integers(0, m - 1), min_size=nnz, max_size=nnz)),
                           dtype=np.int64))
    cols = np.array(draw(st.lists(st.integers(0, d - 1), min_size=nnz, max_size=nnz)), dtype=np.int32)
    vals = np.array(draw(st.lists(st.floats(-4, 4, allow_nan=False), min_size=nnz, max_size=nnz)))
    indptr = np.searchsorted(rows, np.arange(m + 1)).astype(np.int32)
    return sp.csr_matrix((vals, cols, indptr), shape=(m, d))  # rows' columns in drawn order


@settings(max_examples=40, deadline=None)
@given(A=messy_csr(), seed=st.integers(0, 2**16))
def test_issue9_losses_on_messy_csr_equal_canonical_and_leave_it_unchanged(A, seed):
    rng = np.random.default_rng(seed)
    m, d = A.shape
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    canonical = sp.csr_matrix(A.toarray())
    snap = _snapshot(A)
    w = rng.standard_normal(d)
    for cls in (losses.Hinge, losses.Logistic, losses.LeastAbsoluteDeviation):
        f1, g1 = cls(A, y).value_and_subgradient(w)
        f2, g2 = cls(canonical, y).value_and_subgradient(w)
        np.testing.assert_allclose(f1, f2, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-12)
    _assert_unchanged(A, snap)


def test_dense_input_is_not_modified():
    A, y, s = X.copy(), Y_BIN.copy(), np.arange(1.0, 7.0)
    loss = losses.Hinge(A, y, sample_weight=s)
    nsopt.minimize(nsopt.RegularizedRisk(loss, lam=0.1), x0=np.ones(3), max_iter=3)
    assert A.tobytes() == X.tobytes() and y.tobytes() == Y_BIN.tobytes()
    assert s.tobytes() == np.arange(1.0, 7.0).tobytes()


# --- 3. callbacks --------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [5, "print", [print]])
def test_issue9_non_callable_callback_fails_before_the_first_step(bad):
    calls = []
    loss = nsopt.FunctionOracle(lambda w: calls.append(1) or float(w @ w), lambda w: 2 * w, dim=2)
    with pytest.raises(TypeError, match=rf"^callback must be None or a callable.*got {type(bad).__name__}"):
        nsopt.minimize(loss, method="subbfgs", x0=np.ones(2), callback=bad)
    assert calls == []  # no oracle call was made


def test_check_callback_accepts_none_and_callables():
    assert check_callback(None) is None
    assert check_callback(print) is print


# --- 4. FunctionOracle: what user callables return -------------------------------------------
def _fo(**kw):
    kw.setdefault("dim", 2)
    return nsopt.FunctionOracle(**kw)


W = np.array([0.5, -1.25])


@pytest.mark.parametrize("returned, exc, what", [
    ([1.0, 2.0], TypeError, r"a list of length 2"),
    (None, TypeError, r"NoneType None"),
    ("1.0", TypeError, r"str '1.0'"),
    (1j, TypeError, r"complex 1j"),
    (np.ones(2), TypeError, r"an array of shape \(2,\) and dtype float64"),
    (np.array([1.0 + 0j]), TypeError, r"an array of shape \(1,\) and dtype complex128"),
])
def test_issue9_function_oracle_bad_value_names_fun_and_point(returned, exc, what):
    f = _fo(fun=lambda w: returned, subgradient=lambda w: w)
    with pytest.raises(exc, match=rf"^the user callable fun returned {what} at w = \[ 0\.5 , -1\.25\]"):
        f.value(W)


@pytest.mark.parametrize("returned, exc, what", [
    (np.ones(3), ValueError, r"an array of shape \(3,\) and dtype float64 .*vector of length 2"),
    ("ab", TypeError, r"str 'ab'"),
    (None, TypeError, r"NoneType None"),
    (np.ones(2) + 1j, TypeError, r"an array of shape \(2,\) and dtype complex128"),
    (np.array([True, False]), TypeError, r"an array of shape \(2,\) and dtype bool"),
    ([1.0], ValueError, r"a list of length 1"),
])
def test_issue9_function_oracle_bad_subgradient_names_it(returned, exc, what):
    f = _fo(fun=lambda w: 1.0, subgradient=lambda w: returned)
    with pytest.raises(exc, match=rf"^the user callable subgradient returned {what}"):
        f.subgradient(W)


@pytest.mark.parametrize("returned, pattern", [
    (1.0, r"value_and_subgradient returned float 1.0 .*pair"),
    ((1.0, 2.0, 3.0), r"value_and_subgradient returned a tuple of length 3"),
    ((None, np.zeros(2)), r"value_and_subgradient \(first element\) returned NoneType"),
    ((1.0, np.zeros(5)), r"value_and_subgradient \(second element\) returned an array of shape \(5,\)"),
])
def test_issue9_function_oracle_bad_value_and_subgradient(returned, pattern):
    f = _fo(value_and_subgradient=lambda w: returned)
    with pytest.raises((TypeError, ValueError), match=rf"^the user callable {pattern}"):
        f.value_and_subgradient(W)


def test_issue9_function_oracle_bad_sup_subgradient():
    f = _fo(fun=lambda w: 1.0, subgradient=lambda w: w, sup_subgradient=lambda w, p: (1j, w))
    with pytest.raises(TypeError, match=r"^the user callable sup_subgradient \(first element\) returned complex"):
        f.sup_subgradient(W, np.ones(2))
    f = _fo(fun=lambda w: 1.0, subgradient=lambda w: w, sup_subgradient=lambda w, p: 0.0)
    with pytest.raises(TypeError, match=r"^the user callable sup_subgradient returned float"):
        f.sup_subgradient(W, np.ones(2))


def test_function_oracle_accepts_numpy_scalars_size_one_arrays_and_matrix_gradients():
    f = _fo(fun=lambda w: np.float32(2.0), subgradient=lambda w: [[1, 2]])
    assert f.value_and_subgradient(W) == (2.0, pytest.approx([1.0, 2.0]))
    f = _fo(fun=lambda w: np.array([[3.0]]), subgradient=lambda w: np.array([1, 2], dtype=np.int32))
    value, g = f.value_and_subgradient(W)
    assert value == 3.0 and g.dtype == np.float64


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_issue9_nan_or_inf_values_pass_through_unchanged(bad):
    f = _fo(fun=lambda w: bad, subgradient=lambda w: np.array([bad, 0.0]))
    value, g = f.value_and_subgradient(W)
    assert (math.isnan(value) if math.isnan(bad) else value == bad)
    assert g[0] is not None and (np.isnan(g[0]) if math.isnan(bad) else g[0] == bad)
    res = nsopt.minimize(f, method="subbfgs", x0=W, max_iter=5)
    assert res.status.value == "numerical_error"


@pytest.mark.parametrize("bad, exc", [(math.nan, ValueError), (math.inf, ValueError),
                                      ("0", TypeError), (True, TypeError)])
def test_issue9_function_oracle_lower_bound(bad, exc):
    with pytest.raises(exc, match=r"^lower_bound must be a real number"):
        _fo(fun=lambda w: 1.0, subgradient=lambda w: w, lower_bound=bad)
    assert _fo(fun=lambda w: 1.0, subgradient=lambda w: w).lower_bound == -math.inf


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "2"])
def test_function_oracle_dim(bad):
    with pytest.raises(ValueError, match=rf"^dim must be a positive integer or None, got {bad!r}"):
        _fo(fun=lambda w: 1.0, subgradient=lambda w: w, dim=bad)


# --- 5. truncated compressed files ---------------------------------------------------------
TEXT = b"".join(b"%d 1:%d 3:0.5\n" % ((-1) ** i, i) for i in range(3000))
COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
            ".lzma": lambda b: lzma.compress(b, format=lzma.FORMAT_ALONE)}


@pytest.mark.parametrize("ext", sorted(COMPRESS))
@pytest.mark.parametrize("how", ["half", "tail", "garbage"])
def test_issue9_truncated_compressed_file_names_the_file(tmp_path, ext, how):
    data = COMPRESS[ext](TEXT)
    data = {"half": data[: len(data) // 2], "tail": data[:-4], "garbage": b"not compressed\n" * 9}[how]
    path = tmp_path / f"part{ext}"
    path.write_bytes(data)
    with pytest.raises(nsopt.io.CorruptFileError,
                       match=rf"^{re.escape(str(path))}: the compressed file is truncated or corrupt") as info:
        nsopt.io.load_svmlight(path)
    assert isinstance(info.value, ValueError) and info.value.source == str(path)
    assert isinstance(info.value.__cause__, (EOFError, OSError, lzma.LZMAError))
    with pytest.raises(nsopt.io.CorruptFileError, match=rf"^{re.escape(str(path))}"):
        for _ in nsopt.io.iter_svmlight(path, n_features=3, block_bytes=4096):
            pass


def test_issue9_truncated_file_through_load_dataset(tmp_path):
    path = tmp_path / "a9a.gz"
    path.write_bytes(gzip.compress(TEXT)[:100])
    with pytest.raises(nsopt.io.CorruptFileError, match=rf"{re.escape(str(path.name))}: the compressed file is truncated"):
        nsopt.io.load_dataset("a9a", data_dir=tmp_path)


# --- 6. no invalid escape sequences anywhere -----------------------------------------------
def test_issue9_every_module_compiles_and_imports_with_warnings_as_errors():
    root = pathlib.Path(nsopt.__file__).parent
    code = (
        "import pathlib, pkgutil, importlib, warnings\n"
        "warnings.simplefilter('error')\n"
        f"root = pathlib.Path({str(root)!r})\n"
        "for p in sorted(root.rglob('*.py')):\n"
        "    compile(p.read_text(encoding='utf-8'), str(p), 'exec')\n"  # from source, not .pyc
        "import nsopt\n"
        "for m in pkgutil.walk_packages(nsopt.__path__, 'nsopt.'):\n"
        "    if m.name != 'nsopt.__main__':\n"
        "        importlib.import_module(m.name)\n"
    )
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


# --- 7. more bad inputs a demanding user tries ----------------------------------------------
MORE_CASES = [
    ("multiclass label too large", lambda: losses.MulticlassHinge(X, [0, 1, 2, 5, 1, 0], n_classes=3),
     ValueError, r"^y must hold class labels 0 \.\. 2 \(n_classes = 3\); found \[5\]"),
    ("multiclass negative label", lambda: losses.Softmax(X, [0, 1, 2, -1, 1, 0]),
     ValueError, r"^y must hold class labels .*negative labels \[-1\.0\]"),
    ("multiclass fractional label", lambda: losses.MulticlassHinge(X, [0, 1, 2, 1.5, 1, 0]),
     ValueError, r"^y must hold integer class labels .*\[1\.5\]"),
    ("binary label 0", lambda: losses.Hinge(X, [0, 1, 0, 1, 0, 1]),
     ValueError, r"^y must contain only -1 and \+1 .*found \[0\.0\]"),
    ("y wrong length", lambda: losses.Hinge(X, Y_BIN[:5]),
     ValueError, r"^X has 6 rows but y has 5 entries"),
    ("y 2-D", lambda: losses.LeastSquares(X, Y_BIN[:, None]), ValueError, r"^y must be 1-D"),
    ("X 0 rows", lambda: losses.Hinge(np.zeros((0, 3)), np.zeros(0)), ValueError, r"^X has no rows"),
    ("X 0 columns", lambda: losses.Hinge(np.zeros((6, 0)), Y_BIN), ValueError, r"^X has no columns"),
    ("X 1-D", lambda: losses.Hinge(np.ones(6), Y_BIN), ValueError, r"^X must be 2-D"),
    ("X None", lambda: losses.Hinge(None, Y_BIN), TypeError, r"^X must be .*got NoneType"),
    ("X NaN", lambda: losses.Hinge(np.where(X > 1, np.nan, X), Y_BIN),
     ValueError, r"^X contains NaN or inf \(first at row 2, column 0\)"),
    ("X sparse inf", lambda: losses.Hinge(sp.csr_matrix(np.where(X > 1, np.inf, X)), Y_BIN),
     ValueError, r"^X contains NaN or inf \(first at row 2, column 0\)"),
    ("lam NaN", lambda: nsopt.RegularizedRisk(losses.Hinge(X, Y_BIN), lam=math.nan),
     ValueError, r"^lam must be > 0, got nan"),
    ("lam negative", lambda: nsopt.RegularizedRisk(losses.Hinge(X, Y_BIN), lam=-1),
     ValueError, r"^lam must be > 0, got -1\.0"),
    ("lam bool", lambda: nsopt.RegularizedRisk(losses.Hinge(X, Y_BIN), lam=True),
     TypeError, r"^lam must be a real number, got bool"),
    ("lam str", lambda: nsopt.RegularizedRisk(losses.Hinge(X, Y_BIN), lam="0.1"),
     TypeError, r"^lam must be a real number, got str"),
    ("reg a class", lambda: nsopt.RegularizedRisk(losses.Hinge(X, Y_BIN), R.L2),
     TypeError, r"^reg must be an nsopt Regularizer"),
    ("sample_weight NaN", lambda: losses.Hinge(X, Y_BIN, sample_weight=[math.nan] + [1] * 5),
     ValueError, r"^sample_weight contains NaN or inf \(first at index 0\)"),
    ("sample_weight negative", lambda: losses.Hinge(X, Y_BIN, sample_weight=[1, 1, -2, 1, 1, 1]),
     ValueError, r"^sample_weight must be nonnegative; sample_weight\[2\] = -2\.0"),
    ("sample_weight all zero", lambda: losses.Hinge(X, Y_BIN, sample_weight=np.zeros(6)),
     ValueError, r"^sample_weight must have a positive sum"),
    ("sample_weight wrong length", lambda: losses.Hinge(X, Y_BIN, sample_weight=np.ones(5)),
     ValueError, r"^sample_weight has length 5, expected 6"),
    ("x0 NaN", lambda: nsopt.minimize(_risk(), x0=[math.nan, 0, 0]),
     ValueError, r"^x0 contains NaN or inf \(first at index 0\)"),
    ("x0 wrong length", lambda: nsopt.minimize(_risk(), x0=[0, 0]), ValueError, r"^x0 has length 2, expected 3"),
    ("x0 str", lambda: nsopt.minimize(_risk(), x0="abc"), TypeError, r"^x0 must be a 1-D array of real numbers"),
    ("unknown option", lambda: nsopt.minimize(_risk(), max_iters=3),
     TypeError, r"unknown option\(s\) \['max_iters'\]"),
    ("max_iter float", lambda: nsopt.minimize(_risk(), max_iter=1.5), TypeError,
     r"^(LSBMRM|DCD) option max_iter=1\.5: must be None or an integer in \[0, inf\)"),
    ("rtol str", lambda: nsopt.minimize(_risk(), rtol="1e-3"), TypeError,
     r"^(LSBMRM|DCD) option rtol='1e-3': must be a real number in \[0, inf\)"),
    ("rtol NaN", lambda: nsopt.minimize(_risk(), rtol=math.nan), ValueError,
     r"^(LSBMRM|DCD) option rtol=nan: must be a real number in \[0, inf\)"),
    ("method", lambda: nsopt.minimize(_risk(), method="bfgs"), ValueError, r"^unknown method 'bfgs'"),
    ("problem a function", lambda: nsopt.minimize(lambda w: 0.0), TypeError, r"^the problem must be an nsopt Oracle"),
    ("Huber delta NaN", lambda: losses.Huber(X, Y_BIN, delta=math.nan), ValueError, r"^delta must be > 0, got nan"),
    ("Quantile tau", lambda: losses.Quantile(X, Y_BIN, tau=2), ValueError, r"^tau must be in the open interval \(0, 1\), got 2\.0"),
    ("Q not square", lambda: R.QuadraticForm(np.ones(3)), ValueError, r"^Q must be a non-empty square"),
    ("Q str", lambda: R.QuadraticForm([["a"]]), TypeError, r"^Q must be a square matrix of real numbers"),
    ("prior negative", lambda: R.KL(np.array([-1.0, 1, 1])), ValueError, r"^prior must be strictly positive.*prior\[0\] = -1\.0"),
    ("pairs out of range", lambda: losses.PreferencePairs(X, [[0, 9]]), ValueError, r"^pairs\[0\] = \[0, 9\] is out of range"),
    ("Y not 0/1", lambda: losses.MultilabelHinge(X, np.full((6, 2), 2.0)), ValueError, r"^Y must contain only 0 and 1; found \[2\.0\]"),
    ("dump y str", lambda: nsopt.io.dump_svmlight(X, ["a"] * 6, io.BytesIO()), TypeError, r"^y must be a 1-D array of real labels"),
]


@pytest.mark.parametrize("label, make, exc, pattern", MORE_CASES, ids=[c[0] for c in MORE_CASES])
def test_bad_input_names_the_argument(label, make, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make()


def test_multilabel_y_sparse_is_not_modified_by_dump():
    Y = sp.csr_matrix((np.array([1.0, 0.0, 1.0]), np.array([1, 0, 0]), np.array([0, 2, 3, 3])), shape=(3, 2))
    snap = _snapshot(Y)
    nsopt.io.dump_svmlight(np.eye(3), Y, io.BytesIO(), multilabel=True)
    _assert_unchanged(Y, snap)


def test_issue9_structured_joint_feature_rows_are_not_modified():
    """A user's joint_feature may return a cached sparse row (unsorted, with a duplicate):
    nsopt must not canonicalise it in place."""
    returned = []

    def joint_feature(x, y):
        row = sp.csr_matrix((np.array([1.0, float(x), 2.0]), np.array([1, 0, 1]), np.array([0, 3])),
                            shape=(1, 2))
        returned.append((row, _snapshot(row)))
        return row

    def argmax(x, y, w):
        return 1 - y, 1.0

    loss = losses.StructuredHinge(joint_feature, argmax, [(1, 0), (2, 1)], dim=2)
    loss.value_and_subgradient(np.array([0.1, -0.2]))
    assert returned
    for row, snap in returned:
        _assert_unchanged(row, snap)

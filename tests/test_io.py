"""Tests of nsopt.io: the svmlight / LIBSVM reader and writer, and the shared data sets."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt.io as nio
from nsopt.io import (
    KNOWN_DATASETS,
    SvmlightFormatError,
    dump_svmlight,
    find_data_dir,
    iter_svmlight,
    load_dataset,
    load_svmlight,
)

COMPRESSIONS = ["", ".gz", ".bz2", ".xz", ".lzma"]


def _load_text(text, **kwargs):
    return load_svmlight(io.BytesIO(text.encode()), **kwargs)


def _assert_same_csr(A, B):
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    assert A.shape == B.shape
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)


def _random_data(rng, m=40, d=12, density=0.3):
    X = sp.random(m, d, density=density, format="csr", random_state=rng, dtype=np.float64)
    X.data = rng.standard_normal(X.nnz) * 10.0 ** rng.integers(-8, 8, size=X.nnz)
    X.sort_indices()
    y = rng.choice([-1.0, 1.0, 2.5, 1e-17, 3e100], size=m)
    return X, y


# ---------------------------------------------------------------------------------------------
# basic reading


def test_basic_example():
    X, y = _load_text("+1 1:0.5 3:2\n-1 2:1\n")
    assert sp.isspmatrix_csr(X) and X.dtype == np.float64 and y.dtype == np.float64
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 2], [0, 1, 0]])
    np.testing.assert_array_equal(y, [1, -1])
    assert X.has_canonical_format


def test_comments_blank_lines_tabs_and_crlf():
    lf = "# header comment\n\n1 1:1 2:2 # docid = 7\n   \n-1\t3:3\t#x\n0 # nothing but a label\n"
    crlf = lf.replace("\n", "\r\n")
    X1, y1 = _load_text(lf)
    X2, y2 = _load_text(crlf)
    _assert_same_csr(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(X1.toarray(), [[1, 2, 0], [0, 0, 3], [0, 0, 0]])
    np.testing.assert_array_equal(y1, [1, -1, 0])


def test_crlf_in_text_mode_file_and_no_final_newline(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(b"1 1:1\r\n2 2:2")
    X, y = load_svmlight(path)
    np.testing.assert_array_equal(X.toarray(), [[1, 0], [0, 2]])
    with open(path, newline="") as f:  # text mode, '\r' kept
        X2, y2 = load_svmlight(f)
    _assert_same_csr(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_empty_input():
    X, y = _load_text("")
    assert X.shape == (0, 0) and y.shape == (0,)
    X, y = _load_text("# only a comment\n\n", n_features=5)
    assert X.shape == (0, 5)


def test_explicit_zeros_are_not_stored():
    X, y = _load_text("1 1:0 2:3 3:0.0\n2 4:-0\n")
    assert X.shape == (2, 4) and X.nnz == 1
    np.testing.assert_array_equal(X.toarray(), [[0, 3, 0, 0], [0, 0, 0, 0]])


def test_number_formats():
    X, y = _load_text("-1.5e-3 1:+.5 2:5. 3:-2E+2 4:1e-320 5:007\n")
    np.testing.assert_array_equal(X.toarray(), [[0.5, 5.0, -200.0, 1e-320, 7.0]])
    assert y[0] == -1.5e-3


def test_float32_dtype():
    X, y = _load_text("1 1:0.1\n", dtype=np.float32)
    assert X.dtype == np.float32 and y.dtype == np.float64


def test_n_features_pads():
    X, y = _load_text("1 1:1\n-1 2:1\n", n_features=10)
    assert X.shape == (2, 10)


def test_n_features_overflow_names_the_line():
    text = "1 1:1\n# c\n1 5:1\n1 2:1 9:1\n"
    with pytest.raises(SvmlightFormatError, match=r"line 4: feature index 9 exceeds n_features=5") as e:
        _load_text(text, n_features=5)
    assert e.value.lineno == 4


def test_qid_ignored_unless_asked():
    X, y = _load_text("2 qid:1 1:1\n0 qid:2 2:1\n")
    X2, y2, q = _load_text("2 qid:1 1:1\n0 qid:2 2:1\n", query_id=True)
    _assert_same_csr(X, X2)
    np.testing.assert_array_equal(q, [1, 2])
    assert q.dtype == np.int64


def test_ohsumed_like_line():
    line = "2 qid:1 1:3.0 2:0.5 3:0.75 #docid = 40626\r\n"
    X, y, q = _load_text(line * 3, query_id=True)
    assert X.shape == (3, 3) and q.tolist() == [1, 1, 1] and y.tolist() == [2, 2, 2]


def test_multilabel_reading():
    text = "1,3 1:1\n 2:1\n0 3:1\nqid:4 1:2\n2,0 \n"
    X, Y = _load_text(text, multilabel=True)
    np.testing.assert_array_equal(Y, [[0, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 0, 1, 0]])
    assert Y.dtype == np.float64
    np.testing.assert_array_equal(X.toarray()[:, 0], [1, 0, 0, 2, 0])
    X, Y = _load_text(text, multilabel=True, n_labels=6)
    assert Y.shape == (5, 6)
    with pytest.raises(SvmlightFormatError, match="line 1: label 3 exceeds"):
        _load_text(text, multilabel=True, n_labels=3)


def test_multilabel_with_qid():
    X, Y, q = _load_text("1 qid:3 1:1\nqid:4 2:1\n", multilabel=True, query_id=True)
    np.testing.assert_array_equal(q, [3, 4])
    np.testing.assert_array_equal(Y, [[0, 1], [0, 0]])


def test_bad_arguments():
    with pytest.raises(TypeError, match="path_or_file"):
        load_svmlight(42)
    with pytest.raises(ValueError, match="n_features"):
        _load_text("1 1:1\n", n_features=-1)
    with pytest.raises(ValueError, match="multilabel=True"):
        _load_text("1 1:1\n", n_labels=3)
    with pytest.raises(ValueError, match="floating"):
        _load_text("1 1:1\n", dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# malformed input: the error names the line and the problem

BAD_LINES = [
    ("abc 1:1", {}, "label 'abc' is not a number"),
    ("1:2 3:1", {}, "label '1:2' is not a number"),
    ("1,2 1:1", {}, "multilabel=True"),
    ("nan 1:1", {}, "not finite"),
    ("1 1:1 2", {}, "token '2' has no ':'"),
    ("1 1:1 2 3:1", {}, "token '2' has no ':'"),
    ("1 1.5:1", {}, "feature index '1.5' in '1.5:1' is not an integer"),
    ("1 x:1", {}, "feature index 'x'"),
    ("1 :5", {}, "feature index ''"),
    ("1 0:1", {}, "feature index 0 in '0:1' must be >= 1"),
    ("1 -2:1", {}, "feature index -2 in '-2:1' must be >= 1"),
    ("1 1:abc", {}, "value 'abc' of feature 1 is not a number"),
    ("1 2:", {}, "value '' of feature 2 is not a number"),
    ("1 1:1_0", {}, "value '1_0' of feature 1 is not a number"),
    ("1 1:2:3", {}, "more than one ':'"),
    ("1 1:nan", {}, "not finite"),
    ("1 1:inf", {}, "not finite"),
    ("1 2:-Infinity", {}, "not finite"),
    ("1 1:1e999", {}, "not finite"),
    ("1 2:1 2:3", {}, "duplicate feature index 2"),
    ("1 3:1 2:1", {}, "not increasing: 2 after 3"),
    ("1 1:1 qid:3", {}, "position 3: a qid: token must come right after the label"),
    ("1 1:1 qid:3", {"query_id": True}, "no qid"),
    ("1 qid:x 1:1", {"query_id": True}, "query id in 'qid:x' is not an integer"),
    ("1 qid:1.5 1:1", {"query_id": True}, "not an integer"),
    ("1 1:1", {"query_id": True}, "no qid"),
    ("1,a 1:1", {"multilabel": True}, "label 'a' in '1,a' is not a non-negative integer"),
    ("-1 1:1", {"multilabel": True}, "not a non-negative integer"),
    ("1,,2 1:1", {"multilabel": True}, "not a non-negative integer"),
    ("1 1:1\x002", {}, "not a number"),
    ("1 1:\u00bd", {}, "not a number"),
]


def _good_line(kwargs, i):
    qid = f" qid:{i}" if kwargs.get("query_id") else ""
    return f"{i % 3}{qid} 1:{i}.25 4:-{i} 7:1e-3"


@pytest.mark.parametrize("n_before", [0, 3, 4000])
@pytest.mark.parametrize("bad, kwargs, message", BAD_LINES, ids=[repr(b[0]) for b in BAD_LINES])
def test_malformed_line_is_named(bad, kwargs, message, n_before):
    before = [_good_line(kwargs, i) for i in range(n_before)]
    if n_before:
        before[1:1] = ["# a comment line", ""]  # comment and blank lines count as lines
    lines = before + [bad] + [_good_line(kwargs, i) for i in range(5)]
    lineno = len(before) + 1
    with pytest.raises(SvmlightFormatError) as e:
        _load_text("\n".join(lines) + "\n", **kwargs)
    assert e.value.lineno == lineno
    assert f"line {lineno}:" in str(e.value)
    assert message in str(e.value)
    assert isinstance(e.value, ValueError)


def test_error_names_the_file(tmp_path):
    path = tmp_path / "bad.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("1 1:1\n1 1:x\n")
    with pytest.raises(SvmlightFormatError, match=r"bad\.txt\.gz, line 2: value 'x'"):
        load_svmlight(path)


def test_line_numbers_across_blocks():
    lines = [f"1 {i % 5 + 1}:1" for i in range(300)]
    lines[237] = "1 2:1 1:1"
    data = ("\n".join(lines) + "\n").encode()
    with pytest.raises(SvmlightFormatError) as e:
        for _ in iter_svmlight(io.BytesIO(data), n_features=5, block_bytes=100):
            pass
    assert e.value.lineno == 238


# ---------------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("suffix", COMPRESSIONS)
def test_round_trip_sparse_in_every_compression(tmp_path, suffix):
    rng = np.random.default_rng(0)
    X, y = _random_data(rng)
    path = tmp_path / f"data.svm{suffix}"
    dump_svmlight(X, y, path)
    X2, y2 = load_svmlight(path, n_features=X.shape[1])
    _assert_same_csr(X, X2)
    np.testing.assert_array_equal(y, y2)
    opener = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, ".lzma": lzma.open}[suffix]
    with opener(path, "rb") as f:  # really compressed as the suffix says
        assert f.read().decode("ascii").count("\n") == X.shape[0]


@pytest.mark.parametrize("suffix", COMPRESSIONS)
def test_round_trip_dense_with_qid(tmp_path, suffix):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((25, 6))
    X[rng.random(X.shape) < 0.4] = 0.0
    X[3] = 0.0  # an all-zero row
    y = rng.integers(0, 3, size=25).astype(float)
    qid = np.repeat([1, 5, 9, 1000000000000], [5, 10, 6, 4])
    path = tmp_path / f"rank.txt{suffix}"
    dump_svmlight(X, y, path, qid=qid)
    X2, y2, q2 = load_svmlight(path, n_features=6, query_id=True)
    np.testing.assert_array_equal(X2.toarray(), X)
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(q2, qid)


@pytest.mark.parametrize("suffix", COMPRESSIONS)
def test_round_trip_multilabel(tmp_path, suffix):
    rng = np.random.default_rng(2)
    X, _ = _random_data(rng, m=30, d=8)
    Y = (rng.random((30, 5)) < 0.3).astype(float)
    Y[0] = 0.0
    X = X.tolil()
    X[0, :] = 0.0  # no labels and no features: written as "1:0"
    X = X.tocsr()
    X.eliminate_zeros()
    path = tmp_path / f"ml.svm{suffix}"
    dump_svmlight(X, Y, path, multilabel=True)
    X2, Y2 = load_svmlight(path, n_features=8, multilabel=True, n_labels=5)
    _assert_same_csr(X, X2)
    np.testing.assert_array_equal(Y2, Y)
    # sparse indicator input and qid
    qid = np.arange(30)
    dump_svmlight(X, sp.csr_matrix(Y), path, qid=qid, multilabel=True)
    X3, Y3, q3 = load_svmlight(path, n_features=8, multilabel=True, n_labels=5, query_id=True)
    _assert_same_csr(X, X3)
    np.testing.assert_array_equal(Y3, Y)
    np.testing.assert_array_equal(q3, qid)


def test_round_trip_through_file_objects():
    rng = np.random.default_rng(3)
    X, y = _random_data(rng)
    for buf in (io.BytesIO(), io.StringIO()):
        dump_svmlight(X, y, buf)
        buf.seek(0)
        X2, y2 = load_svmlight(buf, n_features=X.shape[1])
        _assert_same_csr(X, X2)
        np.testing.assert_array_equal(y, y2)
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb") as f:
        dump_svmlight(X, y, f)
    X3, y3 = load_svmlight(gzip.GzipFile(fileobj=io.BytesIO(gz.getvalue())), n_features=X.shape[1])
    _assert_same_csr(X, X3)


def test_dump_format_and_checks():
    buf = io.StringIO()
    dump_svmlight(np.array([[0.5, 0.0, 3.0]]), [-1.0], buf, qid=[7])
    assert buf.getvalue() == "-1 qid:7 1:0.5 3:3\n"
    with pytest.raises(ValueError, match="NaN or inf"):
        dump_svmlight([[np.nan]], [1.0], io.StringIO())
    with pytest.raises(ValueError, match="shape"):
        dump_svmlight([[1.0]], [1.0, 2.0], io.StringIO())
    with pytest.raises(ValueError, match="only 0 and 1"):
        dump_svmlight([[1.0]], [[2.0]], io.StringIO(), multilabel=True)
    with pytest.raises(ValueError, match="qid"):
        dump_svmlight([[1.0]], [1.0], io.StringIO(), qid=[1.5])


def test_iter_svmlight_stacks_to_load():
    rng = np.random.default_rng(4)
    X, y = _random_data(rng, m=200)
    buf = io.BytesIO()
    dump_svmlight(X, y, buf, qid=np.arange(200))
    data = buf.getvalue()
    parts = list(iter_svmlight(io.BytesIO(data), n_features=12, query_id=True, block_bytes=500))
    assert len(parts) > 5
    _assert_same_csr(sp.vstack([p[0] for p in parts]), X)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), y)
    np.testing.assert_array_equal(np.concatenate([p[2] for p in parts]), np.arange(200))
    with pytest.raises(ValueError, match="n_features"):
        next(iter_svmlight(io.BytesIO(data), n_features=None))


# ---------------------------------------------------------------------------------------------
# the vectorised parser agrees with the line-by-line parser

_pieces = st.sampled_from(list("0123456789:.-+eE") + [" ", "\t", "\r", "nan", "inf", "x", "_", "\x00"])
INDEX_PIECES = ["1", "2", "3", "10", "0", "-1", "+3", "1.5", "x", "", "qid", "007", "1e1", "9" * 16]
VALUE_PIECES = [
    "1", "-2.5", ".5", "5.", "1e5", "1e", "nan", "inf", "-inf", "1_0", "abc", "", "0x10", "1-2", "+.5",
    "1e-320", "\x00", "1.2.3", "1,5", "\u00bd", "0", "-0", "1:2", "4.9e-324", "1e999", "+-1", "0.1",
]
_index_like = st.sampled_from(INDEX_PIECES)
_value_like = st.sampled_from(VALUE_PIECES)
_near_token = st.builds(lambda i, c, v: i + c + v, _index_like, st.sampled_from([":", ":", ":", "", "::"]), _value_like)
_near_row = st.builds(
    lambda toks, sep, end: sep.join(toks) + end,
    st.lists(_near_token, max_size=5),
    st.sampled_from([" ", "  ", "\t", " \r "]),
    st.sampled_from(["", " ", "\r"]),
)
_rows = st.lists(st.one_of(_near_row, st.lists(_pieces, max_size=25).map("".join)), min_size=1, max_size=6)


@settings(max_examples=500, deadline=None)
@given(_rows)
def test_fast_parser_is_sound(rows):
    """Whatever the vectorised parser accepts, the line-by-line parser accepts identically."""
    fast = nio._parse_features_fast(rows)
    if fast is None:
        return
    slow = nio._parse_features_slow(rows, list(range(1, len(rows) + 1)), "<test>")
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def test_fast_parser_agrees_on_every_near_valid_token():
    """Exhaustive over index x separator x value pieces, alone and after a valid token."""
    accepted = 0
    for i in INDEX_PIECES:
        for c in (":", "", "::"):
            for v in VALUE_PIECES:
                for rows in ([i + c + v], ["1:1 " + i + c + v + "\r"]):
                    fast = nio._parse_features_fast(rows)
                    try:
                        slow = nio._parse_features_slow(rows, [1], "<test>")
                    except SvmlightFormatError:
                        assert fast is None, rows
                        continue
                    if fast is not None:
                        accepted += 1
                        for a, b in zip(fast, slow):
                            np.testing.assert_array_equal(a, b)
    assert accepted > 50


_valid_value = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-(10**20), 10**20).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=8).map(str),
)


@st.composite
def _valid_rows(draw):
    rows = []
    for _ in range(draw(st.integers(1, 5))):
        idx = sorted(draw(st.sets(st.integers(1, 10**12), max_size=6)))
        vals = [draw(_valid_value) for _ in idx]
        sep = draw(st.sampled_from([" ", "  ", "\t", " \r"]))
        rows.append(sep.join(f"{i}:{v}" for i, v in zip(idx, vals)) + draw(st.sampled_from(["", " ", "\r"])))
    return rows


@settings(max_examples=200, deadline=None)
@given(_valid_rows())
def test_fast_parser_takes_valid_rows(rows):
    slow = nio._parse_features_slow(rows, list(range(1, len(rows) + 1)), "<test>")
    fast = nio._parse_features_fast(rows)
    assert fast is not None
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------
# locating data


def test_load_dataset_not_found_says_where(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        load_dataset("a9a", data_dir=tmp_path)
    assert str(tmp_path) in str(e.value) and "'a9a'" in str(e.value)


def test_load_dataset_uses_known_options(tmp_path):
    X = sp.csr_matrix(np.eye(3, 123))
    dump_svmlight(X, [1.0, -1.0, 1.0], tmp_path / "a9a.t.xz")
    X2, y2 = load_dataset("a9a.t", data_dir=tmp_path)
    assert X2.shape == (3, 123)
    X3, _ = load_dataset("a9a.t.xz", data_dir=tmp_path)
    _assert_same_csr(X2, X3)
    # unknown names load with the defaults (width from the data)
    dump_svmlight(X, [1.0, -1.0, 1.0], tmp_path / "mine.svm.gz")
    X4, _ = load_dataset("mine.svm", data_dir=tmp_path)
    assert X4.shape == (3, 3)
    # ranking sets return qid
    dump_svmlight(np.ones((2, 25)), [0.0, 2.0], tmp_path / "OHSUMED_Fold1_testset.txt", qid=[1, 1])
    out = load_dataset("OHSUMED_Fold1_testset.txt", data_dir=tmp_path)
    assert len(out) == 3 and out[0].shape == (2, 25)


def test_find_data_dir_honours_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("NSOPT_DATA", str(tmp_path))
    assert find_data_dir() == tmp_path.resolve()
    dump_svmlight(np.eye(2), [1.0, 2.0], tmp_path / "mushrooms.bz2")
    X, y = load_dataset("mushrooms")
    assert X.shape == (2, 112)


def test_find_data_dir_none_when_nowhere(tmp_path, monkeypatch):
    monkeypatch.setattr(nio, "_candidate_data_dirs", lambda: [("nowhere", tmp_path / "missing")])
    assert find_data_dir() is None
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_dataset("a9a")


# ---------------------------------------------------------------------------------------------
# the real data sets (../shared/data): against scikit-learn's reader and the README table

# file: (rows, features, nnz, label counts or number of labels / classes, number of queries)
README_TABLE = {
    "a9a": (32561, 123, 451592, {-1: 24720, 1: 7841}, None),
    "a9a.t": (16281, 123, 225731, {-1: 12435, 1: 3846}, None),
    "mushrooms": (8124, 112, 170604, {1: 3916, 2: 4208}, None),
    "letter.scale": (15000, 16, 240000, 26, None),
    "letter.scale.t": (5000, 16, 80000, 26, None),
    "yeast_train.svm": (1500, 103, 154500, (14, 4.228), None),
    "yeast_test.svm": (917, 103, 94450, (14, 4.252), None),
    "OHSUMED_Fold1_trainingset.txt": (9219, 25, 194068, {0: 6052, 1: 1765, 2: 1402}, 63),
    "OHSUMED_Fold1_validationset.txt": (3538, 25, 75430, {0: 2457, 1: 546, 2: 535}, 21),
    "OHSUMED_Fold1_testset.txt": (3383, 25, 72948, {0: 2794, 1: 274, 2: 315}, 22),
}


def _real_file(name):
    data_dir = find_data_dir()
    if data_dir is None:
        pytest.skip("shared data folder not found (set NSOPT_DATA)")
    path = data_dir / f"{name}.xz"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(README_TABLE))
def test_real_data_matches_sklearn_and_readme(name):
    path = _real_file(name)
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    rows, features, nnz, labels, n_queries = README_TABLE[name]
    options = KNOWN_DATASETS[name]
    out = load_dataset(name)
    X, y = out[0], out[1]

    ref = sklearn_datasets.load_svmlight_file(
        lzma.open(path, "rb"),
        n_features=features,
        multilabel=options.get("multilabel", False),
        query_id=options.get("query_id", False),
    )
    X_ref = ref[0].tocsr()
    X_ref.eliminate_zeros()  # scikit-learn stores explicit zeros; nsopt does not
    _assert_same_csr(X, X_ref)
    if options.get("multilabel"):
        Y_ref = np.zeros((rows, options["n_labels"]))
        for i, labs in enumerate(ref[1]):
            Y_ref[i, [int(v) for v in labs]] = 1.0
        np.testing.assert_array_equal(y, Y_ref)
    else:
        np.testing.assert_array_equal(y, ref[1])
    if options.get("query_id"):
        assert len(out) == 3
        np.testing.assert_array_equal(out[2], ref[2])
        assert out[2].dtype == np.int64
        assert len(np.unique(out[2])) == n_queries
    else:
        assert len(out) == 2

    assert X.shape == (rows, features)
    assert X.nnz == nnz
    assert X.has_canonical_format
    if isinstance(labels, dict):
        values, counts = np.unique(y, return_counts=True)
        assert dict(zip(values.tolist(), counts.tolist())) == labels
    elif isinstance(labels, tuple):
        n_labels, cardinality = labels
        assert y.shape == (rows, n_labels)
        assert y.sum(axis=1).mean() == pytest.approx(cardinality, abs=5e-4)
    else:
        assert len(np.unique(y)) == labels


# ---------------------------------------------------------------------------------------------
# byte ranges of one file (nsopt.distributed reads one large file on many workers)
@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.sampled_from(["", "+1 1:2", "-1 3:0.5 7:1", "x" * 9, "\r"]),
                      max_size=12),
       trailing=st.booleans(),
       cuts=st.lists(st.floats(0, 1), max_size=6))
def test_line_ranges_cover_every_line_once(tmp_path_factory, lines, trailing, cuts):
    """Cutting a file at any byte offsets and reading each range with LineRange gives the
    file back: every line exactly once, in order; each range begins at a line start, and
    lines_before counts the lines before it."""
    data = ("\n".join(lines) + ("\n" if trailing and lines else "")).encode()
    path = tmp_path_factory.mktemp("ranges") / "f.svm"
    path.write_bytes(data)
    offsets = sorted({0, len(data), *(int(c * len(data)) for c in cuts)})
    out = b""
    for start, stop in zip(offsets[:-1], offsets[1:]):
        with nio.LineRange(path, start, stop) as r:
            part = r.read()
            assert r.begin in (0, len(data)) or data[r.begin - 1:r.begin] == b"\n"
            assert r.lines_before() == data[:r.begin].count(b"\n")
        out += part
    assert out == data


def test_line_range_loads_its_lines_and_refuses_compressed_files(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("+1 1:1\n-1 2:2\n+1 3:3\n")
    X, y = nio.load_svmlight(nio.LineRange(path, 3, 10), n_features=3)  # starts inside line 1
    assert y.tolist() == [-1.0] and X.toarray().tolist() == [[0.0, 2.0, 0.0]]
    assert nio.byte_ranges(10, 3) == [(0, 3), (3, 6), (6, 10)]
    (tmp_path / "d.svm.gz").write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(ValueError, match=r"d\.svm\.gz is compressed"):
        nio.LineRange(tmp_path / "d.svm.gz", 0, 5)
    with pytest.raises(ValueError, match="start=5, stop=2"):
        nio.LineRange(path, 5, 2)

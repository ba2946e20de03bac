r"""Read and write data in the svmlight / LIBSVM text format.

One example per line::

    <label> [qid:<int>] <index>:<value> <index>:<value> ... [# comment]

Indices are 1-based and strictly increasing within a line. The label is a number, or for
multilabel files a comma-separated list of non-negative integers (``1,3``; an empty field
means no labels). Text after ``#`` is a comment; blank lines are skipped; ``\r\n`` line endings
are accepted. Files ending in ``.gz``, ``.bz2``, ``.xz`` (or ``.lzma``) are decompressed on the
fly; a truncated or corrupt compressed file raises :class:`CorruptFileError` (a
``ValueError``) naming the file, with the decompressor's own error as ``__cause__``.

The reader parses a block of lines at a time: a vectorised pass (numpy on the bytes of the
block) handles well-formed blocks, and a line-by-line pass takes over in a block where the
vectorised checks fail, to name the line and the problem. Both accept exactly the same input.

Public names: :func:`load_svmlight`, :func:`iter_svmlight`, :func:`dump_svmlight`,
:func:`load_dataset`, :func:`find_data_dir`, :data:`KNOWN_DATASETS`,
:class:`SvmlightFormatError`, :class:`CorruptFileError`.
"""
from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import numbers
import operator
import os
import warnings
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._validation import as_real_array, canonical_csr

__all__ = [
    "SvmlightFormatError",
    "CorruptFileError",
    "load_svmlight",
    "iter_svmlight",
    "dump_svmlight",
    "LineRange",
    "byte_ranges",
    "load_dataset",
    "dataset_path",
    "find_data_dir",
    "KNOWN_DATASETS",
]

# ---------------------------------------------------------------------------------------------
# errors and small helpers

_MAX_INDEX = 2**53  # larger indices do not survive a float64 round trip
_BLOCK_BYTES = 1 << 22  # bytes read and parsed at a time
_COMPRESSORS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, ".lzma": lzma.open}

# ASCII characters that str.split() treats as whitespace
_WS = b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
_IS_WS = np.zeros(256, dtype=bool)
_IS_WS[list(_WS)] = True
_IS_DIGIT = np.zeros(256, dtype=bool)
_IS_DIGIT[list(b"0123456789")] = True
_TO_SPACE_TABLE = np.arange(256, dtype=np.uint8)
_TO_SPACE_TABLE[list(_WS + b":")] = 32


class SvmlightFormatError(ValueError):
    """Malformed svmlight / LIBSVM input.

    Attributes
    ----------
    source : str
        The file name (or ``"<stream>"``).
    lineno : int
        The 1-based number of the offending line in the (decompressed) file.
    problem : str
        What is wrong with it.
    """

    def __init__(self, source, lineno, problem):
        self.source = source
        self.lineno = lineno
        self.problem = problem
        super().__init__(f"{source}, line {lineno}: {problem}")


class CorruptFileError(ValueError):
    """A compressed file (``.gz``, ``.bz2``, ``.xz``, ``.lzma``) that is truncated or corrupt.

    The message names the file; the decompressor's exception (``EOFError``,
    ``gzip.BadGzipFile``, ``lzma.LZMAError``, ``OSError``, ``zlib.error``) is ``__cause__``.

    Attributes
    ----------
    source : str
        The file name (or ``"<stream>"``).
    """

    def __init__(self, source, cause):
        self.source = source
        super().__init__(
            f"{source}: the compressed file is truncated or corrupt ({type(cause).__name__}: "
            f"{cause}); download or compress it again"
        )


_DECOMPRESSING = (gzip.GzipFile, bz2.BZ2File, lzma.LZMAFile)


def _read(f, n, source):
    """``f.read(n)``, turning a decompressor's failure into a CorruptFileError naming the file."""
    try:
        return f.read(n)
    except (EOFError, zlib.error, lzma.LZMAError) as exc:
        raise CorruptFileError(source, exc) from exc
    except OSError as exc:  # BadGzipFile, bz2's "Invalid data stream"; not other I/O errors
        if isinstance(f, _DECOMPRESSING) or isinstance(exc, gzip.BadGzipFile):
            raise CorruptFileError(source, exc) from exc
        raise


def _show(token, limit=40):
    return repr(token if len(token) <= limit else token[:limit] + "...")


def _parse_float(s):
    """float(s), refusing the forms numeric literals allow but data files do not ('1_0')."""
    if "_" in s:
        raise ValueError(s)
    return float(s)


def _is_int(s):
    t = s[1:] if s[:1] in "+-" else s
    return t.isascii() and t.isdigit()


def _source_name(path_or_file):
    if isinstance(path_or_file, (str, os.PathLike)):
        return os.fspath(path_or_file)
    name = getattr(path_or_file, "name", None)
    return name if isinstance(name, str) else "<stream>"


@contextlib.contextmanager
def _open_read(path_or_file):
    if isinstance(path_or_file, (str, os.PathLike)):
        path = os.fspath(path_or_file)
        opener = _COMPRESSORS.get(os.path.splitext(path)[1].lower(), open)
        with opener(path, "rb") as f:
            yield f
    elif hasattr(path_or_file, "read"):
        yield path_or_file
    else:
        raise TypeError(
            "path_or_file must be a path (str or os.PathLike) or an open file object, "
            f"got {type(path_or_file).__name__}"
        )


def _read_line_blocks(f, block_bytes=_BLOCK_BYTES, source="<stream>"):
    """Yield (lineno of the first line, list of lines as str) over the whole file."""
    lineno = 1
    rest = None
    while True:
        chunk = _read(f, block_bytes, source)
        if not chunk:
            break
        if rest is not None:
            chunk = rest + chunk
        cut = chunk.rfind(b"\n" if isinstance(chunk, bytes) else "\n")
        if cut < 0:
            rest = chunk
            continue
        rest = chunk[cut + 1 :]
        block = chunk[: cut + 1]
        if isinstance(block, bytes):
            block = block.decode("utf-8", errors="replace")
        lines = block.split("\n")
        lines.pop()  # the empty string after the final newline
        yield lineno, lines
        lineno += len(lines)
    if rest:
        if isinstance(rest, bytes):
            rest = rest.decode("utf-8", errors="replace")
        yield lineno, rest.split("\n")


# ---------------------------------------------------------------------------------------------
# parsing one block


class _Block:
    """The parsed rows of one block of lines (features still 1-based)."""

    __slots__ = ("linenos", "labels", "qids", "counts", "indices", "values")


def _parse_block(lines, lineno0, source, multilabel, query_id):
    linenos, labels, qids, rests = [], [], [], []
    for k, line in enumerate(lines):
        if "#" in line:
            line = line[: line.find("#")]
        parts = line.split(None, 1)
        if not parts:
            continue
        first = parts[0]
        if multilabel and ":" in first:
            # empty label field: the line starts with a feature (or qid) token
            labels.append("")
            rest = line.lstrip()
        else:
            labels.append(first)
            rest = parts[1] if len(parts) == 2 else ""
        if rest.startswith("qid:"):
            qparts = rest.split(None, 1)
            qids.append(qparts[0])
            rest = qparts[1] if len(qparts) == 2 else ""
        elif query_id:
            raise SvmlightFormatError(
                source,
                lineno0 + k,
                "no qid:<int> token after the label (query_id=True needs one on every line)",
            )
        linenos.append(lineno0 + k)
        rests.append(rest)

    block = _Block()
    if multilabel:
        block.labels = [_parse_label(t, True, source, n) for t, n in zip(labels, linenos)]
    else:
        block.labels = _parse_labels(labels, linenos, source)
    block.qids = _parse_qids(qids, linenos, source) if query_id else None
    parsed = _parse_features_fast(rests)
    if parsed is None:
        parsed = _parse_features_slow(rests, linenos, source)
    block.linenos = np.asarray(linenos, dtype=np.int64)
    block.counts, block.indices, block.values = parsed
    return block


def _plain_ascii(text):
    """True if text is ASCII without control characters other than whitespace."""
    if not text.isascii():
        return False
    u = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return not np.any(((u < 32) & ~_IS_WS[u]) | (u == 127))


def _fromstring(text, dtype):
    """Whitespace-separated numbers, or None if numpy cannot read all of it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return np.fromstring(text, dtype=dtype, sep=" ")
    except (ValueError, DeprecationWarning, AttributeError):
        return None


def _parse_labels(tokens, linenos, source):
    text = " ".join(tokens)
    if _plain_ascii(text):
        y = _fromstring(text, np.float64)
        if y is not None and y.size == len(tokens) and np.isfinite(y).all():
            return y
    return np.array([_parse_label(t, False, source, n) for t, n in zip(tokens, linenos)], dtype=np.float64)


def _parse_label(token, multilabel, source, lineno):
    if multilabel:
        if not token:
            return ()
        out = []
        for piece in token.split(","):
            if not piece.isascii() or not piece.isdigit():
                raise SvmlightFormatError(
                    source,
                    lineno,
                    f"label {_show(piece)} in {_show(token)} is not a non-negative integer "
                    "(multilabel labels are comma-separated class indices like 1,3)",
                )
            out.append(int(piece))
        return tuple(out)
    try:
        value = _parse_float(token)
    except ValueError:
        hint = ""
        if "," in token:
            hint = " (a comma-separated label list: pass multilabel=True)"
        elif ":" in token:
            hint = " (each line must start with its label)"
        raise SvmlightFormatError(source, lineno, f"label {_show(token)} is not a number{hint}") from None
    if not np.isfinite(value):
        raise SvmlightFormatError(source, lineno, f"label {_show(token)} is not finite")
    return value


def _parse_qids(tokens, linenos, source):
    return np.array([_parse_qid(t, source, n) for t, n in zip(tokens, linenos)], dtype=np.int64)


def _parse_qid(token, source, lineno):
    text = token[4:]
    if not _is_int(text):
        raise SvmlightFormatError(source, lineno, f"query id in {_show(token)} is not an integer")
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise SvmlightFormatError(source, lineno, f"query id in {_show(token)} does not fit in int64")
    return value


def _spans(n, begin, end):
    """Boolean mask of the positions in the half-open spans [begin_k, end_k) (disjoint, sorted)."""
    marks = np.zeros(n + 1, dtype=np.int8)
    marks[begin] = 1
    marks[end] -= 1
    return np.cumsum(marks[:-1], dtype=np.int8).view(bool)


def _parse_features_fast(rests):
    """Vectorised parse of the feature parts of a block; None if any check fails.

    Returns (counts per row, indices (1-based, int64), values (float64)). Sound: whatever it
    accepts, the line-by-line parser accepts with the same result (tested).
    """
    text = "\n".join(rests)
    n_rows = len(rests)
    if not text.isascii():
        return None
    raw = text.encode("ascii")
    u = np.frombuffer(raw, dtype=np.uint8)
    is_ws = _IS_WS[u]
    if np.any(((u < 32) & ~is_ws) | (u == 127)):
        return None
    nonws = ~is_ws
    start_mask = nonws.copy()
    start_mask[1:] &= is_ws[:-1]
    end_mask = nonws.copy()
    end_mask[:-1] &= is_ws[1:]
    starts = np.flatnonzero(start_mask)
    ends = np.flatnonzero(end_mask) + 1
    colons = np.flatnonzero(u == 58)
    n_tokens = starts.size
    if n_tokens == 0:
        return np.zeros(n_rows, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
    # exactly one colon per token, with a non-empty index before it and a value after it
    if colons.size != n_tokens:
        return None
    if not (np.all(colons > starts) and np.all(colons + 1 < ends)):
        return None
    # indices: 1 to 15 digits (so exact as float64)
    if np.any(colons - starts > 15) or not _IS_DIGIT[u[_spans(u.size, starts, colons)]].all():
        return None
    # numbers: index, value, index, value, ... (numpy's parser is correctly rounded, as float())
    numbers_ = _fromstring(_TO_SPACE_TABLE[u].tobytes(), np.float64)
    if numbers_ is None or numbers_.size != 2 * n_tokens:
        return None
    values = numbers_[1::2]
    if not np.isfinite(values).all():
        return None
    indices = numbers_[0::2].astype(np.int64)
    if indices.min() < 1:
        return None
    newlines = np.flatnonzero(u == 10)
    row_of_token = np.searchsorted(newlines, starts)
    if n_tokens > 1:
        same_row = row_of_token[1:] == row_of_token[:-1]
        if np.any((np.diff(indices) <= 0) & same_row):
            return None
    counts = np.bincount(row_of_token, minlength=n_rows).astype(np.int64)
    return counts, indices, np.ascontiguousarray(values)


def _parse_features_slow(rests, linenos, source):
    """Line-by-line parse with an error naming the line and the problem."""
    counts = np.zeros(len(rests), dtype=np.int64)
    indices, values = [], []
    for r, (rest, lineno) in enumerate(zip(rests, linenos)):
        prev = 0
        tokens = rest.split()
        for position, token in enumerate(tokens, start=2):
            index_text, colon, value_text = token.partition(":")
            if not colon:
                raise SvmlightFormatError(source, lineno, f"token {_show(token)} has no ':' (expected index:value)")
            if index_text == "qid":
                raise SvmlightFormatError(
                    source,
                    lineno,
                    f"{_show(token)} at position {position}: a qid: token must come right after the label",
                )
            if not _is_int(index_text):
                raise SvmlightFormatError(
                    source, lineno, f"feature index {_show(index_text)} in {_show(token)} is not an integer"
                )
            index = int(index_text)
            if index < 1:
                raise SvmlightFormatError(
                    source,
                    lineno,
                    f"feature index {index} in {_show(token)} must be >= 1 (LIBSVM indices are 1-based)",
                )
            if index > _MAX_INDEX:
                raise SvmlightFormatError(source, lineno, f"feature index {index} is too large")
            if ":" in value_text:
                raise SvmlightFormatError(source, lineno, f"token {_show(token)} has more than one ':'")
            try:
                value = _parse_float(value_text)
            except ValueError:
                raise SvmlightFormatError(
                    source, lineno, f"value {_show(value_text)} of feature {index} is not a number"
                ) from None
            if not np.isfinite(value):
                raise SvmlightFormatError(
                    source, lineno, f"value {_show(value_text)} of feature {index} is not finite (NaN or inf)"
                )
            if index <= prev:
                what = "duplicate feature index" if index == prev else "feature indices not increasing:"
                detail = f"{index}" if index == prev else f"{index} after {prev}"
                raise SvmlightFormatError(
                    source, lineno, f"{what} {detail} (indices must be strictly increasing within a line)"
                )
            prev = index
            indices.append(index)
            values.append(value)
        counts[r] = len(tokens)
    return counts, np.asarray(indices, dtype=np.int64), np.asarray(values, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# assembling blocks into arrays


def _check_options(n_features, n_labels, dtype, multilabel):
    for name, value in (("n_features", n_features), ("n_labels", n_labels)):
        if value is not None and (
            not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0
        ):
            raise ValueError(f"{name} must be None or a non-negative integer, got {value!r}")
    if n_labels is not None and not multilabel:
        raise ValueError("n_labels applies to multilabel files only: pass multilabel=True")
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype must be a floating-point type, got {dtype}")
    return dtype


def _assemble(blocks, source, n_features, multilabel, n_labels, query_id, dtype):
    if blocks:
        linenos = np.concatenate([b.linenos for b in blocks])
        counts = np.concatenate([b.counts for b in blocks])
        indices = np.concatenate([b.indices for b in blocks])
        values = np.concatenate([b.values for b in blocks])
        if multilabel:
            labels = [lab for b in blocks for lab in b.labels]
        else:
            labels = np.concatenate([b.labels for b in blocks])
        qids = np.concatenate([b.qids for b in blocks]) if query_id else None
    else:
        linenos = counts = indices = np.zeros(0, np.int64)
        values = np.zeros(0, np.float64)
        labels = [] if multilabel else np.zeros(0, np.float64)
        qids = np.zeros(0, np.int64)
    n_rows = counts.size
    max_index = int(indices.max()) if indices.size else 0
    if n_features is None:
        width = max_index
    else:
        if max_index > n_features:
            k = int(np.argmax(indices > n_features))
            row = int(np.searchsorted(np.cumsum(counts), k, side="right"))
            raise SvmlightFormatError(
                source,
                int(linenos[row]),
                f"feature index {int(indices[k])} exceeds n_features={n_features}",
            )
        width = int(n_features)

    # explicit zeros are not stored
    keep = values != 0
    if not keep.all():
        row_ids = np.repeat(np.arange(n_rows), counts)
        counts = np.bincount(row_ids[keep], minlength=n_rows).astype(np.int64)
        indices, values = indices[keep], values[keep]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    index_dtype = np.int32 if max(width, indptr[-1]) < 2**31 else np.int64
    X = sp.csr_matrix(
        (values.astype(dtype, copy=False), (indices - 1).astype(index_dtype), indptr.astype(index_dtype)),
        shape=(n_rows, width),
    )
    X.has_sorted_indices = True
    X.has_canonical_format = True

    if multilabel:
        k = max((max(lab) + 1 for lab in labels if lab), default=0)
        if n_labels is not None:
            if k > n_labels:
                row = next(i for i, lab in enumerate(labels) if lab and max(lab) >= n_labels)
                raise SvmlightFormatError(
                    source, int(linenos[row]), f"label {max(labels[row])} exceeds n_labels={n_labels} - 1"
                )
            k = int(n_labels)
        y = np.zeros((n_rows, k), dtype=np.float64)
        rows = np.repeat(np.arange(n_rows), [len(lab) for lab in labels])
        cols = np.fromiter((c for lab in labels for c in lab), dtype=np.int64, count=rows.size)
        y[rows, cols] = 1.0
    else:
        y = np.asarray(labels, dtype=np.float64)
    if query_id:
        return X, y, np.asarray(qids, dtype=np.int64)
    return X, y


# ---------------------------------------------------------------------------------------------
# public reader


def load_svmlight(
    path_or_file,
    n_features=None,
    multilabel=False,
    query_id=False,
    dtype=np.float64,
    *,
    n_labels=None,
):
    """Load a data set in svmlight / LIBSVM text format.

    Parameters
    ----------
    path_or_file : str, os.PathLike or file object
        A path (``.gz``, ``.bz2``, ``.xz`` and ``.lzma`` files are decompressed by their
        extension) or a file object opened for reading, binary or text (not closed).
    n_features : int, optional
        Number of columns of ``X``. Default: the largest index in the file. Pass it for test
        files, which may not use the last feature; an index larger than ``n_features`` is an error.
    multilabel : bool, default False
        Labels are comma-separated lists of non-negative integer class indices (``1,3``, or an
        empty field for none); ``y`` is then an ``m x k`` 0/1 indicator matrix.
    query_id : bool, default False
        Return the ``qid:`` of every line (each line must have one). When False, ``qid:``
        tokens are accepted and ignored.
    dtype : floating dtype, default float64
        dtype of ``X.data``.
    n_labels : int, optional (keyword-only)
        Multilabel only: number of columns ``k`` of ``y``. Default: the largest label + 1.

    Returns
    -------
    X : scipy.sparse.csr_matrix, shape (m, n_features)
        Canonical CSR (sorted indices, no duplicates); explicit zeros are not stored.
    y : ndarray, float64, shape (m,), or (m, k) 0/1 for ``multilabel``
    qid : ndarray, int64, shape (m,)
        Only when ``query_id=True``.

    Raises
    ------
    CorruptFileError
        (a ``ValueError``) when a compressed file is truncated or corrupt, naming the file.
    SvmlightFormatError
        (a ``ValueError``) on malformed input, naming the line and the problem: a label that is
        not a number, a token without ``:``, an index that is not an integer >= 1, a value that
        is not a finite number, indices not strictly increasing within a line, a ``qid:`` token
        anywhere but right after the label, an index beyond ``n_features``.

    Examples
    --------
    >>> import io
    >>> text = b"+1 1:0.5 3:2 # a comment\\n-1 qid:7 2:1\\n"
    >>> X, y = load_svmlight(io.BytesIO(text), n_features=4)
    >>> X.toarray()
    array([[0.5, 0. , 2. , 0. ],
           [0. , 1. , 0. , 0. ]])
    >>> y
    array([ 1., -1.])
    """
    dtype = _check_options(n_features, n_labels, dtype, multilabel)
    source = _source_name(path_or_file)
    with _open_read(path_or_file) as f:
        blocks = [
            _parse_block(lines, lineno0, source, multilabel, query_id)
            for lineno0, lines in _read_line_blocks(f, source=source)
        ]
    return _assemble(blocks, source, n_features, multilabel, n_labels, query_id, dtype)


class LineRange(io.RawIOBase):
    """The lines of an uncompressed file whose first byte lies in ``[start, stop)``, as a
    binary file object (for :func:`load_svmlight`).

    Cutting a file at any byte offsets ``0 = b_0 < b_1 < ... < b_n = size`` and reading each
    ``[b_k, b_{k+1})`` this way gives every line exactly once, in order (the convention of
    Hadoop's line records): a range that starts inside a line skips that line's rest, which
    belongs to the range before; a range whose end falls inside a line reads it to its end.
    Only the range's own bytes (and the one line crossing ``stop``) are read.

    Parameters
    ----------
    path : str or os.PathLike
        An uncompressed file (a compressed stream cannot be entered at a byte offset).
    start, stop : int
        Byte offsets, ``0 <= start <= stop``; ``stop`` past the end means the end.

    Attributes
    ----------
    begin : int
        The byte offset of the range's first line (``start`` moved to a line start).
    """

    def __init__(self, path, start, stop):
        super().__init__()
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext in _COMPRESSORS:
            raise ValueError(f"byte ranges need an uncompressed file: {path} is compressed "
                             f"({ext}); read it whole, or decompress it first")
        start, stop = operator.index(start), operator.index(stop)
        if not 0 <= start <= stop:
            raise ValueError(f"need 0 <= start <= stop, got start={start}, stop={stop}")
        self.path, self.stop = path, stop
        self._f = open(path, "rb")
        if start > 0:
            self._f.seek(start - 1)
            if self._f.read(1) != b"\n":
                self._f.readline()  # the rest of a line that began before start
        self.begin = self._f.tell()
        self._pos = self.begin
        self._done = self.begin >= stop
        self._last = b"\n"

    @property
    def name(self):
        return self.path

    def readable(self):
        return True

    def readinto(self, b):
        if self._done:
            return 0
        if self._pos < self.stop:
            data = self._f.read(min(len(b), self.stop - self._pos))
        elif self._last == b"\n":  # the range ended on a line end
            data = b""
        else:  # past stop: the rest of the line that crosses it, and no more
            data = self._f.read(len(b))
            cut = data.find(b"\n")
            if cut >= 0:
                data = data[: cut + 1]
                self._done = True
        if not data:
            self._done = True
            return 0
        n = len(data)
        b[:n] = data
        self._pos += n
        self._last = data[-1:]
        return n

    def lines_before(self) -> int:
        """The number of lines before the range (one pass over ``[0, begin)``): what turns a
        line number within the range into the file's."""
        count = 0
        with open(self.path, "rb") as f:
            left = self.begin
            while left > 0:
                chunk = f.read(min(left, _BLOCK_BYTES))
                if not chunk:
                    break
                count += chunk.count(b"\n")
                left -= len(chunk)
        return count

    def close(self):
        if not self.closed:
            self._f.close()
        super().close()


def byte_ranges(size: int, n: int) -> list[tuple[int, int]]:
    """``n`` contiguous byte ranges ``[(start, stop)]`` covering ``[0, size)`` as evenly as
    whole bytes allow (for :class:`LineRange`)."""
    size, n = operator.index(size), operator.index(n)
    if size < 0 or n < 1:
        raise ValueError(f"need size >= 0 and n >= 1, got size={size}, n={n}")
    cuts = [size * k // n for k in range(n + 1)]
    return list(zip(cuts[:-1], cuts[1:]))


def iter_svmlight(
    path_or_file,
    n_features,
    multilabel=False,
    query_id=False,
    dtype=np.float64,
    *,
    n_labels=None,
    block_bytes=_BLOCK_BYTES,
):
    """Stream a svmlight / LIBSVM file in blocks of whole lines.

    Yields the same tuples as :func:`load_svmlight` (``(X, y)`` or ``(X, y, qid)``), one per
    block of about ``block_bytes`` bytes of text, so a file larger than memory can be
    processed piece by piece. ``n_features`` is required (every block has that many columns),
    and so is ``n_labels`` for multilabel files. Stacking the blocks
    (``scipy.sparse.vstack``, ``numpy.concatenate``) gives what :func:`load_svmlight` returns.

    Examples
    --------
    >>> import io
    >>> text = b"1 1:1\\n2 2:1\\n3 1:2\\n"
    >>> [X.shape for X, y in iter_svmlight(io.BytesIO(text), n_features=2, block_bytes=6)]
    [(1, 2), (1, 2), (1, 2)]
    """
    if n_features is None:
        raise ValueError("iter_svmlight needs n_features, so that every block has the same width")
    if multilabel and n_labels is None:
        raise ValueError("iter_svmlight needs n_labels for multilabel files")
    dtype = _check_options(n_features, n_labels, dtype, multilabel)
    source = _source_name(path_or_file)
    with _open_read(path_or_file) as f:
        for lineno0, lines in _read_line_blocks(f, block_bytes, source):
            block = _parse_block(lines, lineno0, source, multilabel, query_id)
            yield _assemble([block], source, n_features, multilabel, n_labels, query_id, dtype)


# ---------------------------------------------------------------------------------------------
# writer


def _format_numbers(values):
    # shortest repr that round-trips; integral values without the ".0"
    out = []
    for v in values.tolist():
        s = repr(float(v))
        out.append(s[:-2] if s.endswith(".0") else s)
    return out


@contextlib.contextmanager
def _open_write(path_or_file):
    if isinstance(path_or_file, (str, os.PathLike)):
        path = os.fspath(path_or_file)
        opener = _COMPRESSORS.get(os.path.splitext(path)[1].lower(), open)
        with opener(path, "wb") as f:
            yield lambda text: f.write(text.encode("ascii"))
    elif hasattr(path_or_file, "write"):
        f = path_or_file
        if isinstance(f, io.TextIOBase):
            yield f.write
        else:
            yield lambda text: f.write(text.encode("ascii"))
    else:
        raise TypeError(
            "path_or_file must be a path (str or os.PathLike) or a file object open for writing, "
            f"got {type(path_or_file).__name__}"
        )


def dump_svmlight(X, y, path_or_file, qid=None, multilabel=False):
    """Write ``(X, y)`` (and ``qid``) in svmlight / LIBSVM text format.

    Parameters
    ----------
    X : array or scipy.sparse matrix, shape (m, d)
        Zero entries are not written; indices are written 1-based.
    y : array, shape (m,), or (m, k) 0/1 indicator (dense or sparse) for ``multilabel``
    path_or_file : str, os.PathLike or file object
        A path (compressed by a ``.gz``, ``.bz2``, ``.xz`` or ``.lzma`` extension) or a file
        object open for writing, binary or text (not closed).
    qid : array of int, shape (m,), optional
        Written as ``qid:<int>`` after each label.
    multilabel : bool, default False
        ``y`` is an indicator matrix; each line's label is the comma-separated list of its
        columns holding a 1.

    Notes
    -----
    Values are written with the shortest representation that reads back to the same float64,
    so ``load_svmlight`` returns exactly what was written. A multilabel row with no labels, no
    features and no qid would be a blank line, which readers skip; it is written as ``1:0``
    (an explicit zero, which :func:`load_svmlight` does not store), so the row survives.

    Examples
    --------
    >>> import io
    >>> buf = io.StringIO()
    >>> dump_svmlight([[0.5, 0.0], [0.0, 2.0]], [1, -1], buf)
    >>> print(buf.getvalue(), end="")
    1 1:0.5
    -1 2:2
    """
    if sp.issparse(X):
        X = canonical_csr(X, "X")
        if X.nnz and not X.data.all():
            X = X.copy()  # never drop zeros from the caller's matrix
            X.eliminate_zeros()
    else:
        X = as_real_array(X, "X", what="a 2-D array of real numbers or a scipy.sparse matrix")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (examples x features), got shape {X.shape}")
        X = sp.csr_matrix(X)
    m = X.shape[0]
    if not np.isfinite(X.data).all():
        raise ValueError("X contains NaN or inf, which the svmlight format cannot hold")

    if multilabel:
        if sp.issparse(y):
            Y = canonical_csr(y, "y").copy()  # a copy: eliminate_zeros below must not touch y
        else:
            Y = sp.csr_matrix(as_real_array(y, "y", what="an (m, k) 0/1 indicator matrix"))
        if Y.ndim != 2 or Y.shape[0] != m:
            raise ValueError(f"multilabel y must be an (m, k) indicator matrix with m={m} rows, got {Y.shape}")
        Y.eliminate_zeros()
        Y.sort_indices()
        if not np.all(Y.data == 1):
            raise ValueError("multilabel y must hold only 0 and 1")
        label_text = [",".join(map(str, Y.indices[Y.indptr[i] : Y.indptr[i + 1]].tolist())) for i in range(m)]
    else:
        y = as_real_array(y, "y", what="a 1-D array of real labels")
        if y.shape != (m,):
            raise ValueError(f"y must have shape ({m},) to match X, got {y.shape}; for an indicator matrix pass multilabel=True")
        if not np.isfinite(y).all():
            raise ValueError("y contains NaN or inf")
        label_text = _format_numbers(y)

    if qid is not None:
        qid = np.asarray(qid)
        integral = qid.dtype.kind in "iu" or (
            qid.dtype.kind == "f" and bool(np.all(np.isfinite(qid) & (qid == np.round(qid))))
        )
        if qid.shape != (m,) or not integral:
            raise ValueError(f"qid must be {m} integers, got shape {qid.shape} and dtype {qid.dtype}")
        label_text = [f"{lab} qid:{q}" for lab, q in zip(label_text, qid.astype(np.int64).tolist())]

    value_text = _format_numbers(X.data)
    index_text = (X.indices.astype(np.int64) + 1).tolist()
    pairs = [f"{i}:{v}" for i, v in zip(index_text, value_text)]
    indptr = X.indptr.tolist()
    with _open_write(path_or_file) as write:
        chunk = []
        for i in range(m):
            features = " ".join(pairs[indptr[i] : indptr[i + 1]])
            label = label_text[i]
            if not features and not label:
                features = "1:0"
            line = f"{label} {features}".rstrip() if label else features
            chunk.append(line + "\n")
            if len(chunk) >= 10000:
                write("".join(chunk))
                chunk = []
        if chunk:
            write("".join(chunk))


# ---------------------------------------------------------------------------------------------
# the shared data sets

#: Loading options of the data sets in ``../shared/data`` (by name without compression suffix).
KNOWN_DATASETS = {
    "a9a": {"n_features": 123},
    "a9a.t": {"n_features": 123},
    "mushrooms": {"n_features": 112},
    "letter.scale": {"n_features": 16},
    "letter.scale.t": {"n_features": 16},
    "yeast_train.svm": {"n_features": 103, "multilabel": True, "n_labels": 14},
    "yeast_test.svm": {"n_features": 103, "multilabel": True, "n_labels": 14},
    "OHSUMED_Fold1_trainingset.txt": {"n_features": 25, "query_id": True},
    "OHSUMED_Fold1_validationset.txt": {"n_features": 25, "query_id": True},
    "OHSUMED_Fold1_testset.txt": {"n_features": 25, "query_id": True},
}


def _known_options(name):
    if name in KNOWN_DATASETS:
        return dict(KNOWN_DATASETS[name])
    if name.startswith("OHSUMED"):
        return {"n_features": 25, "query_id": True}
    if name.startswith("yeast"):
        return {"n_features": 103, "multilabel": True, "n_labels": 14}
    return {}


def _user_data_dir():
    """``(description, directory)`` of the user data folder: ``$XDG_DATA_HOME/nsopt`` when
    ``XDG_DATA_HOME`` is set (the XDG base directory convention of Linux desktops), else
    ``~/.nsopt/data`` (every platform)."""
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return "the user data folder $XDG_DATA_HOME/nsopt", Path(xdg) / "nsopt"
    return "the user data folder ~/.nsopt/data", Path.home() / ".nsopt" / "data"


def _candidate_data_dirs():
    """``(description, directory)`` in the order :func:`find_data_dir` tries them. Nothing is
    looked up relative to the package's own location (after ``pip install`` it is inside
    ``site-packages``)."""
    out = []
    env = os.environ.get("NSOPT_DATA")
    if env:
        out.append(("$NSOPT_DATA", Path(env)))
    out.append(_user_data_dir())
    out.append(("../shared/data from the working directory", Path.cwd() / ".." / "shared" / "data"))
    return out


def find_data_dir():
    """Return the first data folder that exists, or None if there is none.

    Tried in order:

    1. the folder named by the environment variable ``NSOPT_DATA``;
    2. the user data folder: ``$XDG_DATA_HOME/nsopt`` when ``XDG_DATA_HOME`` is set, else
       ``~/.nsopt/data``;
    3. ``../shared/data`` relative to the current working directory (a checkout next to the
       shared data, as in the project's own test runs).

    Nothing is looked up relative to the installed package (``site-packages``).

    Examples
    --------
    >>> d = find_data_dir()
    >>> d is None or d.is_dir()
    True
    """
    for _, directory in _candidate_data_dirs():
        if directory.is_dir():
            return directory.resolve()
    return None


def load_dataset(name, data_dir=None):
    """Load one of the data sets of the shared data folder by name.

    Parameters
    ----------
    name : str
        The file name, with or without its compression suffix: ``"a9a"``, ``"a9a.t"``,
        ``"mushrooms"``, ``"letter.scale"``, ``"yeast_train.svm"``,
        ``"OHSUMED_Fold1_trainingset.txt"``, ... (see :data:`KNOWN_DATASETS`).
    data_dir : str or os.PathLike, optional
        Where to look. Default: :func:`find_data_dir`.

    Returns
    -------
    ``(X, y)``, or ``(X, y, qid)`` for the ranking sets (OHSUMED), as :func:`load_svmlight`
    returns them, loaded with the right ``n_features`` (test files do not use every feature)
    and flags (yeast is multilabel with 14 labels, OHSUMED has ``qid``). Other files load
    with the defaults of :func:`load_svmlight`.

    Raises
    ------
    FileNotFoundError
        Naming every place looked in (:func:`find_data_dir`'s order: ``NSOPT_DATA``, the user
        data folder, ``../shared/data`` from the working directory) and where to put the file.
        Without ``data_dir`` every one of those folders that exists is searched, not only the
        first.
    """
    path, options = dataset_path(name, data_dir)
    return load_svmlight(path, **options)


def dataset_path(name, data_dir=None):
    """Where the data set ``name`` is, without reading it: ``(path, options)``, the file
    :func:`load_dataset` would read and the :func:`load_svmlight` options it would read it
    with (``n_features``, ``multilabel``, ``n_labels``, ``query_id``; see
    :data:`KNOWN_DATASETS`). For readers elsewhere (``nsopt solve NAME --dask`` has the
    workers read the file). Looks where :func:`load_dataset` looks, and raises the same
    FileNotFoundError.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "a9a.xz"), "wb").close()
    >>> path, options = dataset_path("a9a", data_dir=d)
    >>> path.name, options
    ('a9a.xz', {'n_features': 123})
    """
    name = os.fspath(name)
    base = name
    for suffix in _COMPRESSORS:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    if data_dir is not None:
        places = [("data_dir", Path(data_dir))]
    else:
        places = [(what, d) for what, d in _candidate_data_dirs()]
    tried = []
    for what, directory in places:
        for candidate in [name] + [base + s for s in _COMPRESSORS] + [base]:
            path = directory / candidate
            if path.is_file():
                return path, _known_options(base)
        tried.append(f"{directory} ({what}{'' if directory.is_dir() else ', does not exist'})")
    if data_dir is not None:
        hint = f"Put {name} (or {base}.xz, .gz, .bz2) in {Path(data_dir)}"
    else:
        user = _user_data_dir()[1]
        hint = (f"Put {name} (or {base}.xz, .gz, .bz2) in {user}, or set NSOPT_DATA to the "
                "folder that holds it, or pass data_dir")
    raise FileNotFoundError(
        f"data set {name!r} not found (as {base!r} or with .gz/.bz2/.xz/.lzma); looked in: "
        + "; ".join(tried)
        + f". {hint}."
    )

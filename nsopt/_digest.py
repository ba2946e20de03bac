r"""XXH64, compiled: the digest of large arrays in a certificate's fingerprint.

:func:`nsopt.certificate.fingerprint` hashes a problem's data at the end of every run and in
every :meth:`~nsopt.Certificate.check`. With blake2b over the raw bytes (about 1 GB/s, plus a
copy per array for ``tobytes``) that was 11-13 ms on a9a: 15-30% of a 30-150 ms dual
coordinate descent run. XXH64 (Yann Collet's xxHash, 64-bit variant, the reference
specification `xxhash_spec.md`) reads the array's own buffer at several GB/s.

Why a non-cryptographic hash is enough here. The fingerprint is not what makes a certificate
true: :meth:`~nsopt.Certificate.check` rebuilds the bound from the evidence with the data of the
problem it is given and re-evaluates ``J(x)`` there, so a certificate accepted against some data
proves its bound *for that data*, whatever the fingerprint says. The fingerprint adds the
statement "this is the problem the run solved", against mistakes (another data set, data
mutated in place after the run); an accidental collision of a 64-bit digest has probability
about :math:`2^{-64}`. Someone forging data to collide with a fingerprint gains nothing the
rebuilt bound would not already refuse.

Why written here and not imported: the ``xxhash`` package would be one more compiled
dependency (a C extension per platform) for a 40-line algorithm that numba, already required,
compiles to the same speed (a9a: 0.99 ms here, 1.02 ms with the package); it is checked against
the specification's published values, and against the package when that is installed
(``tests/test_fingerprint.py``).
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["xxh64", "array_digest"]

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)


@njit(cache=True, inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, inline="always")
def _round(acc, lane):
    acc = acc + lane * _P2
    acc = _rotl(acc, 31)
    return acc * _P1


@njit(cache=True, inline="always")
def _merge(acc, val):
    acc = acc ^ _round(np.uint64(0), val)
    return acc * _P1 + _P4


@njit(cache=True)
def _xxh64(words, tail, n, seed):
    """XXH64 of ``n`` bytes given as ``words`` (the first ``n // 8`` little-endian 64-bit
    words) and ``tail`` (the last ``n % 8`` bytes)."""
    nw = words.shape[0]
    i = 0
    if n >= 32:
        v1 = seed + _P1 + _P2
        v2 = seed + _P2
        v3 = seed
        v4 = seed - _P1
        while i + 4 <= nw:
            v1 = _round(v1, words[i])
            v2 = _round(v2, words[i + 1])
            v3 = _round(v3, words[i + 2])
            v4 = _round(v4, words[i + 3])
            i += 4
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = seed + _P5
    h = h + np.uint64(n)
    while i < nw:
        h = h ^ _round(np.uint64(0), words[i])
        h = _rotl(h, 27) * _P1 + _P4
        i += 1
    j = 0
    nt = tail.shape[0]
    if nt >= 4:
        k = (np.uint64(tail[0]) | (np.uint64(tail[1]) << np.uint64(8))
             | (np.uint64(tail[2]) << np.uint64(16)) | (np.uint64(tail[3]) << np.uint64(24)))
        h = h ^ (k * _P1)
        h = _rotl(h, 23) * _P2 + _P3
        j = 4
    while j < nt:
        h = h ^ (np.uint64(tail[j]) * _P5)
        h = _rotl(h, 11) * _P1
        j += 1
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    h = h ^ (h >> np.uint64(32))
    return h


def xxh64(buf, seed: int = 0) -> int:
    """XXH64 of the bytes of ``buf`` (bytes, or a C-contiguous array: its buffer, read in
    place) as an int. Words are read little-endian as the specification says (a big-endian
    machine byte-swaps a copy)."""
    b = np.frombuffer(buf, dtype=np.uint8) if isinstance(buf, (bytes, bytearray, memoryview)) \
        else np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
    n = b.size
    n8 = n - n % 8
    words = b[:n8].view("<u8")
    if words.ctypes.data % 8 or not words.dtype.isnative:  # unaligned view, big-endian host
        words = words.astype(np.uint64)
    return int(_xxh64(words, b[n8:], np.uint64(n), np.uint64(seed)))


def array_digest(a: np.ndarray) -> bytes:
    """Eight bytes: XXH64 of ``a``'s values in C order (a non-contiguous array is copied)."""
    return xxh64(a).to_bytes(8, "little")

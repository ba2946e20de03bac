"""The certificate's fingerprint (nsopt/certificate.py) read through XXH64 (nsopt/_digest.py).

The fingerprint must change with any value of the data, in place or not, so that a certificate
checked against other data (or the same arrays mutated after the run) is rejected; the digest
is the published XXH64; certificates carrying the earlier blake2b form still check.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt._digest import array_digest, xxh64
from nsopt.certificate import FINGERPRINT_VERSION, CertificateError, fingerprint


# --- XXH64 ---------------------------------------------------------------------------------
def test_xxh64_published_values():
    """The specification's values (xxhash 4.1: ``xxh64_intdigest``)."""
    assert xxh64(b"") == 0xEF46DB3751D8E999
    assert xxh64(b"abc") == 0x44BC2CF5AD770999


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=0, max_size=200), st.integers(0, 2**64 - 1))
def test_xxh64_matches_the_library(data, seed):
    """Every length class (stripes of 32, words of 8, a 4-byte and single tail bytes) against
    the xxhash package where it is installed."""
    xxhash = pytest.importorskip("xxhash")
    assert xxh64(data, seed) == xxhash.xxh64_intdigest(data, seed)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(0, 10**6), st.integers(0, 2**31))
def test_one_changed_byte_changes_the_digest(n, where, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n)
    before = array_digest(a)
    b = a.copy()
    b.view(np.uint8)[where % (8 * n)] ^= np.uint8(1 + seed % 255)
    assert array_digest(b) != before
    assert array_digest(a) == before  # a value function: same values, same digest


def test_digest_reads_values_not_layout():
    """An unaligned, a strided and an F-ordered array hash as their values in C order."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((7, 5))
    raw = np.zeros(a.size * 8 + 1, dtype=np.uint8)
    unaligned = raw[1:].view(np.float64).reshape(a.shape)
    unaligned[...] = a
    assert unaligned.ctypes.data % 8 != 0
    assert array_digest(unaligned) == array_digest(a) == xxh64(a.tobytes()).to_bytes(8, "little")
    assert array_digest(np.asfortranarray(a)) == array_digest(a)
    wide = np.zeros((7, 10))
    wide[:, ::2] = a
    assert array_digest(wide[:, ::2]) == array_digest(a)


# --- the fingerprint guards the certificate -------------------------------------------------
def _solved(method="dcd", loss="Hinge", **kwargs):
    X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=1)
    J = nsopt.RegularizedRisk(getattr(nsopt.losses, loss)(X, y), lam=1e-2)
    res = nsopt.minimize(J, method=method, rtol=1e-6, **kwargs)
    assert res.success
    return J, res


@pytest.mark.parametrize("method", ["dcd", "ls-bmrm"])
@pytest.mark.parametrize("what", ["X.data", "y", "c", "lam"])
def test_mutating_the_data_after_the_solve_fails_the_check(method, what):
    """The arrays the run solved, changed in place by one value after the run: the check
    rejects the certificate for its fingerprint; restored, it checks again."""
    J, res = _solved(method)
    cert = res.certificate
    assert cert.fingerprint.startswith(FINGERPRINT_VERSION)
    assert cert.check(J) <= res.fun
    if what == "lam":
        old = J.lam
        J.lam = old * (1 + 1e-12)
        with pytest.raises(CertificateError, match="fingerprint"):
            cert.check(J)
        J.lam = old
    else:
        arr = {"X.data": J.loss.data.X.data, "y": J.loss.y, "c": J.loss.c}[what]
        i = arr.size // 2
        old = arr[i]
        arr[i] = -old if old != 0 else 1.0
        with pytest.raises(CertificateError, match="fingerprint"):
            cert.check(J)
        arr[i] = old
    assert cert.check(J) <= res.fun


def test_other_data_of_the_same_shape_is_rejected():
    J, res = _solved()
    X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=2)
    other = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    with pytest.raises(CertificateError, match="fingerprint"):
        res.certificate.check(other)


def test_legacy_fingerprints_still_check():
    """A certificate issued with the earlier form (blake2b over the raw bytes, no prefix)
    checks against its problem and is rejected on another."""
    J, res = _solved()
    old = dataclasses.replace(res.certificate, fingerprint=fingerprint(J, legacy=True))
    assert not old.fingerprint.startswith(FINGERPRINT_VERSION)
    assert old.check(J) == pytest.approx(res.certificate.check(J), rel=1e-12)
    J.loss.y[0] = -J.loss.y[0]
    with pytest.raises(CertificateError, match="fingerprint"):
        old.check(J)


def test_fingerprint_is_a_function_of_the_values():
    """Equal data built apart (dense C and F order, a sparse copy) give equal fingerprints;
    the new form differs from the legacy one only by the way arrays are read."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 6))
    y = np.where(rng.standard_normal(40) > 0, 1.0, -1.0)
    a = nsopt.RegularizedRisk(nsopt.losses.Logistic(X, y), lam=1e-3)
    b = nsopt.RegularizedRisk(nsopt.losses.Logistic(np.asfortranarray(X), y.copy()), lam=1e-3)
    assert fingerprint(a) == fingerprint(b)
    c = nsopt.RegularizedRisk(nsopt.losses.Logistic(X, y), lam=2e-3)
    assert fingerprint(a) != fingerprint(c)
    assert fingerprint(a) != fingerprint(a, legacy=True)

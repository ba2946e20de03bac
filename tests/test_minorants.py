"""Extra affine minorants (``Oracle.minorants``): the catalogue's offers and the combinators'
hold below f everywhere (hypothesis, brute force at random points), ``check_oracle`` and the
counting oracle catch a planted wrong one, level-bundle with them certifies and brackets
Clarabel's optimum, and ``Certificate.check`` rebuilds them (a forged row is rejected)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nsopt
from nsopt.certificate import CertificateError, OraclePlanes
from nsopt.oracle import CountingOracle, NonConvexError
from nsopt.testing import check_oracle

import catalogue as C

cp = pytest.importorskip("cvxpy")


def _build(kind, seed, k):
    if kind == "max-affine":
        A, b = C.max_affine_data(n_pieces=25, d=4, seed=seed)
        return C.max_affine_ridge(A, b, mu=0.05, minorants=k)
    if kind == "l1-fit":
        A, b, _ = C.l1_fit_data(m=30, d=4, seed=seed)
        return C.l1_fit(A, b, minorants=k)
    if kind == "chebyshev":
        t, y = C.chebyshev_data(30 + seed, "step" if seed % 2 else "abs")
        return C.chebyshev_fit(t, y, degree=4, minorants=k)
    return C.max_eigenvalue(*C.max_eigenvalue_data(n=6, k=3, seed=seed), minorants=k)


KINDS = ["max-affine", "chebyshev", "max-eigenvalue"]


def _below(f, G, c, ys):
    for y in ys:
        lin = G @ y + c
        fy = f.value(y)
        assert np.all(lin <= fy + 1e-10 * (1 + abs(fy) + np.abs(G) @ np.abs(y))), (lin, fy)


@pytest.mark.parametrize("kind", KINDS + ["l1-fit"])
@given(seed=st.integers(0, 50), k=st.integers(1, 6), scale=st.sampled_from([0.1, 1.0, 5.0]))
def test_catalogue_minorants_lie_below_f_everywhere(kind, seed, k, scale):
    f, _ = _build(kind, seed, k)
    rng = np.random.default_rng(seed)
    w = scale * rng.standard_normal(f.dim)
    G, c = f.minorants(w)
    assert G.shape == (min(k, G.shape[0]), f.dim) and 1 <= G.shape[0] <= k
    _below(f, G, c, scale * rng.standard_normal((30, f.dim)))
    # the same answer again (a certificate rebuilds it by calling again)
    G2, c2 = f.minorants(w.copy())
    assert np.array_equal(G, G2) and np.array_equal(c, c2)
    # a minorant exact somewhere: the eigenvalue's next eigenvector, the next piece, touch
    # their own piece at w (max-affine without the ridge term's gap: G w + c = piece(w) + mu/2 |w|^2)
    assert np.all(G @ w + c <= f.value(w) + 1e-10 * (1 + abs(f.value(w))))


def test_catalogue_without_minorants_offers_none():
    for kind in KINDS + ["l1-fit"]:
        f, _ = _build(kind, 0, 0)
        assert not f.offers_minorants and f.minorants(np.zeros(f.dim)) is None


@given(seed=st.integers(0, 30), c=st.sampled_from([0.0, 0.5, 3.0]))
def test_combinators_pass_minorants_on_exactly(seed, c):
    rng = np.random.default_rng(seed)
    f, _ = _build("max-affine", seed, 3)
    g, _ = _build("max-eigenvalue", seed, 2)
    h, _ = _build("max-affine", seed + 1, 0)         # offers none
    M = rng.standard_normal((3, 4))
    shift = rng.standard_normal(3)
    w = rng.standard_normal(4)
    ys = rng.standard_normal((20, 4)) * 2
    # c * f: scaled exactly (c = 0 offers none)
    Gf, cf = f.minorants(w)
    scaled = c * f
    if c == 0:
        assert scaled.minorants(w) is None
    else:
        Gs, cs = scaled.minorants(w)
        np.testing.assert_allclose(Gs, c * Gf) and np.testing.assert_allclose(cs, c * cf)
    # g(M w + shift): G M and c + G shift
    comp = g.compose(M, shift)          # 4 variables -> the 3 of g
    Gg, cg = g.minorants(M @ w + shift)
    Gc, cc = comp.minorants(w)
    np.testing.assert_allclose(Gc, Gg @ M)
    np.testing.assert_allclose(cc, cg + Gg @ shift)
    _below(comp, Gc, cc, ys)
    # f + h + f: each offering term's minorants plus the others' planes at w
    total = f + h + f
    Gt, ct = total.minorants(w)
    assert Gt.shape[0] == 2 * Gf.shape[0]
    _below(total, Gt, ct, ys)
    # Max of f and h: f's minorants (and the planes of other active pieces)
    mx = nsopt.Max([f, h])
    Gm, cm = mx.minorants(w)
    _below(mx, Gm, cm, ys)
    assert not nsopt.Max([h, h]).offers_minorants


def _planted(shift):
    f, _ = _build("max-affine", 3, 3)

    def planes(x):  # noqa: the honest minorants, shifted
        G, c = f.minorants(x)
        return G, c + shift                 # lifted: no longer below f

    vs = f.value_and_subgradient
    return nsopt.FunctionOracle(value_and_subgradient=lambda x: vs(x), dim=f.dim,
                                minorants=planes)


def test_check_oracle_catches_a_planted_wrong_minorant():
    check_oracle(_planted(0.0), n=4)          # the honest ones pass
    with pytest.raises(AssertionError, match="minorants"):
        check_oracle(_planted(0.5), n=4)
    bad_shape = nsopt.FunctionOracle(lambda x: float(x @ x), lambda x: 2 * x, dim=3,
                                     minorants=lambda x: (np.zeros((2, 4)), np.zeros(2)))
    with pytest.raises(ValueError, match="minorants"):
        check_oracle(bad_shape, n=2)


def test_counting_oracle_checks_minorants_and_does_not_count_them():
    counted = CountingOracle(_planted(0.0))
    w = np.zeros(4)
    counted.evaluate(w)
    G, c = counted.minorants(w)
    assert counted.nfev == 1 and G.shape[0] == 3
    wrong = CountingOracle(_planted(5.0))
    wrong.evaluate(w)
    with pytest.raises(NonConvexError, match="minorant"):
        wrong.minorants(w)


def _clarabel(expr, dim, lb, ub):
    x = cp.Variable(dim)
    prob = cp.Problem(cp.Minimize(expr(x)), [x >= lb, x <= ub])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(prob.value)


def _certified_bracket(f, expr, method, **options):
    """Run ``method`` on ``f`` over the box [-2, 2]^d to a relative 1e-7: success, Clarabel's
    optimum bracketed, the gap within the tolerance and the certificate checked."""
    bounds = (-2.0, 2.0)
    fs = _clarabel(expr, f.dim, *bounds)
    res = nsopt.minimize(f, method=method, bounds=bounds, rtol=1e-7, max_iter=500, **options)
    tol = 1e-7 * (1 + abs(fs))
    assert res.success, res.message
    assert res.lower_bound - tol <= fs <= res.fun + tol
    assert res.gap <= 1e-7 * abs(res.fun) + 1e-12
    assert res.certificate.check(f, bounds=bounds) >= res.lower_bound - 1e-9 * (1 + abs(fs))
    return res


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_level_bundle_with_minorants_certifies_and_brackets_clarabel(kind, seed):
    f, expr = _build(kind, seed, 4)
    _certified_bracket(f, expr, "level-bundle")
    plain = _certified_bracket(f, expr, "level-bundle", minorants=False)
    assert plain.certificate.evidence.minorants is None   # none recorded when not used


@pytest.mark.parametrize("kind", KINDS)
def test_trust_region_bundle_with_minorants_certifies_and_brackets_clarabel(kind):
    f, expr = _build(kind, 1, 4)
    _certified_bracket(f, expr, "proximal-bundle")


def test_trust_region_bundle_records_minorant_rows_that_check_rebuilds():
    f, _ = _build("max-affine", 0, 4)
    res = nsopt.minimize(f, method="proximal-bundle", bounds=(-2.0, 2.0), rtol=1e-7)
    rows = res.certificate.evidence.minorants
    assert rows is not None and any(j is not None for j in rows)
    res.certificate.check(f, bounds=(-2.0, 2.0))
    vs = f.value_and_subgradient
    bare = nsopt.FunctionOracle(value_and_subgradient=lambda x: vs(x), dim=f.dim)
    with pytest.raises(CertificateError, match="offers no minorants"):
        res.certificate.check(bare, bounds=(-2.0, 2.0))
    off = nsopt.minimize(f, method="proximal-bundle", bounds=(-2.0, 2.0), rtol=1e-7,
                         minorants=False)
    assert off.certificate.evidence.minorants is None


def _certified_with_rows():
    """A level-bundle certificate whose evidence holds minorant rows (found over seeds)."""
    for seed in range(6):
        f, _ = _build("max-affine", seed, 4)
        res = nsopt.minimize(f, method="level-bundle", bounds=(-2.0, 2.0), rtol=1e-7)
        rows = res.certificate.evidence.minorants
        if rows is not None and any(j is not None for j in rows):
            return f, res
    pytest.fail("no certificate used a minorant")


def test_forged_minorant_rows_are_rejected_by_check():
    f, res = _certified_with_rows()
    cert, ev = res.certificate, res.certificate.evidence
    box = {"bounds": (-2.0, 2.0)}
    cert.check(f, **box)
    i = next(i for i, j in enumerate(ev.minorants) if j is not None)

    def forged(rows=None, **fields):
        rows = list(ev.minorants) if rows is None else rows
        return dataclasses.replace(cert, evidence=dataclasses.replace(
            ev, minorants=tuple(rows), **fields))

    rows = list(ev.minorants)
    rows[i] = 99                                          # a row the oracle does not offer
    with pytest.raises(CertificateError, match="offers"):
        forged(rows).check(f, **box)
    rows[i] = 1.5                                         # not an int
    with pytest.raises(CertificateError, match="not an int"):
        forged(rows).check(f, **box)
    with pytest.raises(CertificateError, match="one per"):
        forged(rows=list(ev.minorants)[:-1] or [None, None]).check(f, **box)
    # the same function without its minorants: the recorded rows cannot be rebuilt
    plain, _ = _build("max-affine", 0, 0)
    vs = f.value_and_subgradient
    bare = nsopt.FunctionOracle(value_and_subgradient=lambda x: vs(x), dim=f.dim)
    with pytest.raises(CertificateError, match="offers no minorants"):
        cert.check(bare, **box)


def test_forged_minorant_plane_cannot_prove_more_than_its_oracle():
    """A certificate that claims the bound of a plane lifted above f: check rebuilds the honest
    plane from (point, row) and the claimed lower bound is not proven."""
    f, _ = _build("max-affine", 2, 3)
    lb, ub = np.full(f.dim, -2.0), np.full(f.dim, 2.0)
    x = np.zeros(f.dim)
    G, c = f.minorants(x)
    honest = float(c[0] + np.minimum(G[0] * lb, G[0] * ub).sum())
    fx = f.value(x)
    ev = OraclePlanes((x,), np.array([1.0]), lb=lb, ub=ub, minorants=(0,))
    cert = nsopt.Certificate(lower=honest + 0.5, upper=fx, gap=fx - honest - 0.5, x=x,
                             evidence=ev, source="level-lp")
    with pytest.raises(CertificateError):
        cert.check(f, bounds=(lb, ub))
    ok = dataclasses.replace(cert, lower=honest, gap=fx - honest)
    assert ok.check(f, bounds=(lb, ub)) == pytest.approx(honest, rel=1e-9, abs=1e-9)


class _Offers:
    """A problem whose minorants are the given rows (what add_oracle_minorants asks)."""
    offers_minorants = True

    def __init__(self, G, c):
        self.G, self.c = G, c

    def minorants(self, w):
        return self.G, self.c


def _one_by_one(bundle, w, G, c, room):
    """The row-by-row loop the batch add replaced: each row added unless a plane equals it."""
    n = 0
    for j in range(G.shape[0]):
        if room is not None and n >= room:
            break
        twins = np.flatnonzero(bundle.b == c[j])
        if twins.size and (bundle.A[twins] == G[j]).all(axis=1).any():
            continue
        bundle.add_minorant(w, j, G[j], float(c[j]))
        n += 1
    return n


def _recipes(bundle):
    """Per plane, what proves it: the floor, a query point, or (minorant, row, its point)."""
    out = []
    for ev in bundle._ev:
        (key, weight), = ev.items()
        p = bundle._points.get(key)
        out.append(("floor",) if key < 0 else ("minorant", p[1], p[0].tobytes(), weight)
                   if type(p) is tuple else ("point", p.tobytes(), weight))
    return out


@given(seed=st.integers(0, 10_000), k=st.integers(0, 9), room=st.sampled_from([None, 0, 2, 5]),
       gram=st.booleans())
def test_batch_add_of_minorants_equals_adding_them_one_by_one(seed, k, room, gram):
    """add_oracle_minorants (one add_minorants) builds the bundle of the row-by-row loop: the
    same rows skipped (equal to a plane kept, or to an earlier row of the call), the same
    slopes, offsets, Gram matrix (bit for bit), evidence, model values and box bound."""
    from nsopt.bundle import PlaneBundle
    from nsopt.solvers._region import add_oracle_minorants, box_min

    rng = np.random.default_rng(seed)
    d = 3
    w = rng.standard_normal(d)
    start = rng.integers(-2, 3, size=(4, d)).astype(float)   # small integers: twins happen
    G = rng.integers(-2, 3, size=(k, d)).astype(float)
    c = rng.integers(-1, 2, size=k).astype(float)
    if k >= 3:
        G[2], c[2] = G[0], c[0]                               # a repeated row
        G[1], c[1] = start[1], 0.5                            # a bundle plane's twin
    bundles = []
    for _ in range(2):
        bundle = PlaneBundle(d, evidence="points", gram=gram)
        bundle.add_floor(-3.0)
        for i, a in enumerate(start):
            bundle.add_at(np.full(d, float(i)), 0.5, a)
        bundles.append(bundle)
    seen = []
    n_batch = add_oracle_minorants(_Offers(G, c), bundles[0], w, room,
                                   lambda rows, A, b: seen.append((rows, A.copy(), b.copy())))
    n_loop = _one_by_one(bundles[1], w, G, c, room)
    one, two = bundles
    assert n_batch == n_loop and one.n == two.n
    assert np.array_equal(one.A, two.A) and np.array_equal(one.b, two.b)
    if gram:
        assert np.array_equal(one.G, two.G)
    else:
        with pytest.raises(AttributeError, match="gram=False"):
            one.G
    assert _recipes(one) == _recipes(two)
    assert [j for rows, _, _ in seen for j in rows] == [r[1] for r in _recipes(one)
                                                         if r[0] == "minorant"]
    lb, ub = -np.ones(d), np.ones(d)
    for y in rng.uniform(-1, 1, size=(5, d)):
        assert one.model(y) == two.model(y)
    alpha = one.feasible(rng.random(one.n))
    (a1, b1), (a2, b2) = one.combine(alpha), two.combine(alpha)
    assert b1 + box_min(a1, lb, ub) == b2 + box_min(a2, lb, ub)


@pytest.mark.parametrize("rows", ["A_ub", "A_eq"])
def test_level_bundle_with_rows_takes_minorants(rows):
    """The variant with rows adds the oracle's minorants too: certified 1e-7, Clarabel's
    optimum over the box and the row bracketed, check passes with the rows, the evidence
    holds minorant rows, and fewer oracle calls than without them."""
    f, expr = _build("max-affine", 0, 4)
    lb, ub = -2.0, 2.0
    x = cp.Variable(f.dim)
    free = cp.Problem(cp.Minimize(expr(x)), [x >= lb, x <= ub])
    free.solve(solver=cp.CLARABEL)
    a, t = np.ones((1, f.dim)), np.array([float(np.sum(x.value)) - 0.5])  # binding
    row = x @ np.ones(f.dim) <= t[0] if rows == "A_ub" else x @ np.ones(f.dim) == t[0]
    prob = cp.Problem(cp.Minimize(expr(x)), [x >= lb, x <= ub, row])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    fs = float(prob.value)
    given = {rows: a, "b_ub" if rows == "A_ub" else "b_eq": t}
    runs = {}
    for use in (True, False):
        res = nsopt.minimize(f, method="level-bundle", bounds=(lb, ub), rtol=1e-7,
                             max_iter=500, minorants=use, **given)
        tol = 1e-7 * (1 + abs(fs))
        assert res.success, res.message
        assert res.lower_bound - tol <= fs <= res.fun + tol
        assert res.gap <= 1e-7 * abs(res.fun) + 1e-12
        assert res.certificate.check(f, bounds=(lb, ub), **given) >= res.lower_bound - tol
        runs[use] = res
    assert any(j is not None for j in runs[True].certificate.evidence.minorants or ())
    assert runs[False].certificate.evidence.minorants is None
    assert runs[True].nfev < runs[False].nfev

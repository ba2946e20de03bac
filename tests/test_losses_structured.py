"""Structured hinge losses ([TVSL10] eq. 24): BMRM certificates against cvxpy on chains small
enough to enumerate every label sequence, learning synthetic chains, the user-inference
StructuredHinge (exact sup-subgradient with all_argmax, sparse features, checks of the
user's callables), groups for multiple cutting-plane models, and bad input.

The brute-force laws on random tiny chains (inference, Lemma 8, majorization, subgradients at
ties) are the hypothesis suite in tests/properties/test_losses_structured.py.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt.losses.structured import ChainHinge, StructuredHinge
from nsopt.regularizers import L2
from nsopt.testing import check_oracle


# --- data -----------------------------------------------------------------------------------
def make_chains(m=60, n_states=3, n_features=5, length=(5, 12), noise=0.3, stay=0.7, seed=0,
                sparse=False):
    """Sequences from a sticky Markov chain; each position's features are its state's mean
    plus Gaussian noise (small noise: separable)."""
    rng = np.random.default_rng(seed)
    means = 2.0 * rng.standard_normal((n_states, n_features))
    X, Y = [], []
    for _ in range(m):
        T = int(rng.integers(length[0], length[1] + 1))
        y = np.empty(T, dtype=np.int64)
        y[0] = rng.integers(n_states)
        for t in range(1, T):
            y[t] = y[t - 1] if rng.random() < stay else rng.integers(n_states)
        x = means[y] + noise * rng.standard_normal((T, n_features))
        X.append(sp.csr_matrix(x) if sparse else x)
        Y.append(y)
    return X, Y


def accuracy(loss, X, Y, w):
    pred = loss.predict(X, w)
    return float(np.mean(np.concatenate([p == y for p, y in zip(pred, Y)])))


def enumerate_chain(x, y, n_states):
    """All labellings y' of one sequence: Delta(y, y') and phi(x, y') - phi(x, y)."""
    L = np.array(list(itertools.product(range(n_states), repeat=len(y))))
    K, T = L.shape

    def phi(labels):
        onehot = np.eye(n_states)[labels]
        emission = np.einsum("kts,tf->ksf", onehot, x).reshape(len(labels), -1)
        trans = np.zeros((len(labels), n_states, n_states))
        for t in range(1, T):
            np.add.at(trans, (np.arange(len(labels)), labels[:, t - 1], labels[:, t]), 1.0)
        return np.hstack([emission, trans.reshape(len(labels), -1)])

    return (L != y).mean(axis=1), phi(L) - phi(np.asarray(y)[None, :])


def cvxpy_chain_optimum(X, Y, n_states, lam, weights=None):
    """min_w lam/2 ||w||^2 + sum_i c_i max_{y'} [Delta + <w, phi' - phi>], every y' a constraint."""
    import cvxpy as cp

    m = len(X)
    c = np.full(m, 1.0 / m) if weights is None else weights / weights.sum()
    tables = [enumerate_chain(x, y, n_states) for x, y in zip(X, Y)]
    w = cp.Variable(tables[0][1].shape[1])
    risk = sum(ci * cp.max(D @ w + delta) for ci, (delta, D) in zip(c, tables))
    prob = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(w) + risk))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


# --- the multiclass problem as a structured one -----------------------------------------------
K, D_FEAT = 3, 4


def mc_phi(x, label):
    out = np.zeros(K * D_FEAT)
    out[D_FEAT * label:D_FEAT * (label + 1)] = x
    return out


def mc_scores(x, label, w):
    return w.reshape(K, D_FEAT) @ x + (np.arange(K) != label)


def mc_argmax(x, label, w):
    j = int(np.argmax(mc_scores(x, label, w)))
    return j, float(j != label)


def mc_all_argmax(x, label, w):
    s = mc_scores(x, label, w)
    return [(j, float(j != label)) for j in np.flatnonzero(s >= s.max() - 1e-12 * max(1.0, abs(s.max())))]


def mc_label_loss(label, other):
    return float(label != other)


def mc_examples(m=20, seed=0, dyadic=False):
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, (m, D_FEAT)) / 2.0 if dyadic else rng.standard_normal((m, D_FEAT))
    return list(zip(X, rng.integers(0, K, m)))


# ==============================================================================================
# Chain model: certificates, learning
# ==============================================================================================
@pytest.mark.parametrize("lam", [1e-1, 1e-2])
@pytest.mark.parametrize("weighted", [False, True], ids=["mean", "weighted"])
def test_bmrm_certificate_brackets_cvxpy_optimum(lam, weighted):
    """A tiny chain problem where every label sequence is an explicit cvxpy constraint
    (max of affine functions): lower_bound <= J* <= fun."""
    X, Y = make_chains(m=6, n_states=3, n_features=2, length=(2, 4), noise=1.0, seed=1)
    weights = np.arange(1.0, 7.0) if weighted else None
    loss = ChainHinge(X, Y, 3, sample_weight=weights)
    J = nsopt.RegularizedRisk(loss, L2(), lam)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-4)
    f_star = cvxpy_chain_optimum(X, Y, 3, lam, weights)
    tol = 1e-8 * max(1.0, abs(f_star))
    assert res.status is nsopt.Status.CONVERGED, res
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.fun - f_star <= res.gap + tol
    assert res.gap <= 1e-4 * res.fun
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))


def test_bmrm_learns_separable_chains():
    """Separable synthetic chains: certified convergence, and the Viterbi prediction of the
    learnt model labels almost every training position correctly."""
    X, Y = make_chains(m=80, n_states=4, n_features=6, noise=0.3, seed=2)
    loss = ChainHinge(X, Y, 4)
    assert accuracy(loss, X, Y, np.zeros(loss.dim)) < 0.5
    res = nsopt.minimize(nsopt.RegularizedRisk(loss, L2(), 1e-3), method="bmrm", rtol=1e-4)
    assert res.success and res.status is nsopt.Status.CONVERGED
    assert res.lower_bound <= res.fun and res.gap <= 1e-4 * res.fun
    assert accuracy(loss, X, Y, res.x) >= 0.99
    X_test, Y_test = make_chains(m=40, n_states=4, n_features=6, noise=0.3, seed=2)[0], None
    assert len(loss.predict(X_test, res.x)) == 40


def test_transitions_are_learnt():
    """States cycle 0 -> 1 -> 2 -> 0; only the first position's features reveal the state, every
    later position has the same features (a constant). A per-position classifier cannot beat
    chance after position 1; the chain model labels everything through its transition scores."""
    rng = np.random.default_rng(3)
    X, Y = [], []
    for _ in range(40):
        T = int(rng.integers(4, 9))
        y = (rng.integers(3) + np.arange(T)) % 3
        x = np.zeros((T, 4))
        x[:, 3] = 1.0
        x[0, :3] = np.eye(3)[y[0]]
        X.append(x)
        Y.append(y)
    loss = ChainHinge(X, Y, 3)
    res = nsopt.minimize(nsopt.RegularizedRisk(loss, L2(), 1e-3), method="bmrm", rtol=1e-4)
    assert res.status is nsopt.Status.CONVERGED
    assert accuracy(loss, X, Y, res.x) == 1.0
    _, A = loss.split_weights(res.x)
    assert all(A[s, (s + 1) % 3] > A[s, r] for s in range(3) for r in range(3) if r != (s + 1) % 3)


def test_dense_and_sparse_sequences_agree():
    X, Y = make_chains(m=15, seed=4)
    dense = ChainHinge(X, Y, 3)
    sparse = ChainHinge([sp.csr_matrix(x) for x in X], Y, 3)
    mixed = ChainHinge([sp.csc_matrix(x) if i % 2 else x for i, x in enumerate(X)], Y, 3)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w, p = rng.standard_normal((2, dense.dim))
        f, g = dense.value_and_subgradient(w)
        for other in (sparse, mixed):
            f2, g2 = other.value_and_subgradient(w)
            assert f2 == pytest.approx(f, rel=1e-12)
            np.testing.assert_allclose(g2, g, rtol=1e-12, atol=1e-14)
            assert other.sup_subgradient(w, p)[0] == pytest.approx(dense.sup_subgradient(w, p)[0], rel=1e-12)
        for a, b in zip(dense.predict(X, w), sparse.predict([sp.csr_matrix(x) for x in X], w)):
            np.testing.assert_array_equal(a, b)


def test_sample_weights_equal_duplicated_sequences():
    X, Y = make_chains(m=6, seed=5)
    counts = np.array([1, 0, 3, 2, 1, 1])
    weighted = ChainHinge(X, Y, 3, sample_weight=counts.astype(float))
    dup = ChainHinge([x for x, k in zip(X, counts) for _ in range(k)],
                     [y for y, k in zip(Y, counts) for _ in range(k)], 3)
    w = np.random.default_rng(1).standard_normal(weighted.dim)
    f, g = weighted.value_and_subgradient(w)
    f2, g2 = dup.value_and_subgradient(w)
    assert f == pytest.approx(f2, rel=1e-12)
    np.testing.assert_allclose(g, g2, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_chain_check_oracle_including_ties(sparse):
    """The oracle laws (nsopt.testing.check_oracle), at random points and at w = 0 and dyadic
    points, where many label sequences tie: the difference quotients there confirm that
    sup_subgradient is the directional derivative."""
    X, Y = make_chains(m=8, n_states=3, n_features=3, length=(2, 5), seed=6, sparse=sparse)
    X = [np.round(2 * x) / 2 if not sparse else sp.csr_matrix(np.round(2 * x.toarray()) / 2) for x in X]
    loss = ChainHinge(X, Y, 3)
    check_oracle(loss, n=12, seed=1)
    rng = np.random.default_rng(2)
    ties = np.vstack([np.zeros(loss.dim), rng.integers(-2, 3, (4, loss.dim)) / 2.0])
    check_oracle(loss, points=ties, n=10, seed=3)


def test_lower_bound_and_values_at_zero():
    """At w = 0 every wrong position can be flipped: the loss of a sequence is 1 (all
    positions wrong, Delta = 1), so R(0) = 1; the lower bound 0 is declared."""
    X, Y = make_chains(m=10, seed=7)
    loss = ChainHinge(X, Y, 3)
    assert loss.lower_bound == 0.0
    assert nsopt.RegularizedRisk(loss, L2(), 1.0).lower_bound == 0.0
    assert loss.value(np.zeros(loss.dim)) == pytest.approx(1.0, rel=1e-15)
    X1, Y1 = [np.ones((3, 2))], [np.array([0, 1, 0])]
    one = ChainHinge(X1, Y1, 2)
    y_hat, delta = one.loss_augmented_argmax(X1[0], Y1[0], np.zeros(one.dim))
    np.testing.assert_array_equal(y_hat, [1, 0, 1])
    assert delta == 1.0


def test_groups_partition_and_sum():
    X, Y = make_chains(m=11, seed=8)
    loss = ChainHinge(X, Y, 3)
    groups = loss.groups(4)
    assert [len(g) for g in groups] == [2, 3, 3, 3]  # boundaries floor(k m / P)
    np.testing.assert_array_equal(np.concatenate(groups), np.arange(11))
    w = np.random.default_rng(3).standard_normal(loss.dim)
    values, G = loss.group_value_and_subgradients(w, 4)
    f, g = loss.value_and_subgradient(w)
    assert values.sum() == pytest.approx(f, rel=1e-12)
    np.testing.assert_allclose(G.sum(axis=0), g, rtol=1e-12, atol=1e-14)
    # group k's value is the weighted loss of its own sequences
    for k, ix in enumerate(groups):
        part = ChainHinge([X[i] for i in ix], [Y[i] for i in ix], 3)
        assert values[k] == pytest.approx(part.value(w) * len(ix) / 11, rel=1e-12)
    with pytest.raises(ValueError, match="n_groups must be in 1 .. 11"):
        loss.groups(12)
    with pytest.raises(ValueError, match="1 .. 11"):
        loss.group_value_and_subgradients(w, 0)
    with pytest.raises(TypeError, match="integer"):
        loss.groups(2.0)


def test_restrict_is_generic_line_without_exact_minimize():
    X, Y = make_chains(m=5, seed=9)
    loss = ChainHinge(X, Y, 3)
    w, p = np.random.default_rng(4).standard_normal((2, loss.dim))
    line = loss.restrict(w, p)
    assert line.value(0.3) == pytest.approx(loss.value(w + 0.3 * p), rel=1e-15)
    with pytest.raises(NotImplementedError):
        line.minimize()


# ==============================================================================================
# StructuredHinge with user inference
# ==============================================================================================
def test_structured_multiclass_matches_brute_force():
    ex = mc_examples()
    loss = StructuredHinge(mc_phi, mc_argmax, ex, K * D_FEAT, mc_label_loss)
    w = np.random.default_rng(0).standard_normal(K * D_FEAT)
    f, g = loss.value_and_subgradient(w)
    ref_f, ref_g = 0.0, np.zeros(K * D_FEAT)
    for x, y in ex:
        s = mc_scores(x, y, w) - w.reshape(K, D_FEAT)[y] @ x
        j = int(np.argmax(s))
        ref_f += s[j] / len(ex)
        ref_g += (mc_phi(x, j) - mc_phi(x, y)) / len(ex)
    assert f == pytest.approx(ref_f, rel=1e-12)
    np.testing.assert_allclose(g, ref_g, rtol=1e-12, atol=1e-15)
    check_oracle(loss, n=10)


def test_structured_sup_subgradient_exact_with_all_argmax_at_ties():
    """At w = 0 every wrong class ties (0/1 loss). With all_argmax the sup-subgradient is the
    brute-force max over the tied classes and equals the one-sided difference quotient (the
    loss is piecewise linear, so a small step is exact); without it only <g, p> <= R'(w; p)."""
    ex = mc_examples(dyadic=True)
    exact = StructuredHinge(mc_phi, mc_argmax, ex, K * D_FEAT, mc_label_loss, all_argmax=mc_all_argmax)
    plain = StructuredHinge(mc_phi, mc_argmax, ex, K * D_FEAT, mc_label_loss)
    rng = np.random.default_rng(1)
    w = np.zeros(K * D_FEAT)
    strictly_less = 0
    for _ in range(10):
        p = rng.standard_normal(K * D_FEAT)
        ref = np.mean([max((mc_phi(x, j) - mc_phi(x, y)) @ p for j in range(K) if j != y) for x, y in ex])
        s, g = exact.sup_subgradient(w, p)
        assert s == pytest.approx(ref, rel=1e-12)
        assert g @ p == pytest.approx(s, rel=1e-12)
        h = 1e-6
        assert (exact.value(w + h * p) - exact.value(w)) / h == pytest.approx(s, rel=1e-6)
        s_plain, _ = plain.sup_subgradient(w, p)
        assert s_plain <= s + 1e-12
        strictly_less += s_plain < s - 1e-9
    assert strictly_less > 0  # the documented caveat is real: the plain subgradient is not enough
    check_oracle(exact, points=np.vstack([w, rng.integers(-2, 3, (3, K * D_FEAT)) / 2.0]), n=8)


def test_structured_sparse_features_agree_with_dense():
    ex = mc_examples(seed=2)
    dense = StructuredHinge(mc_phi, mc_argmax, ex, K * D_FEAT, all_argmax=mc_all_argmax)
    sparse_phi = lambda x, label: sp.csr_matrix(mc_phi(x, label))
    mixed_phi = lambda x, label: sp.coo_matrix(mc_phi(x, label)) if label == 1 else mc_phi(x, label)
    rng = np.random.default_rng(3)
    w, p = rng.standard_normal((2, K * D_FEAT))
    for phi in (sparse_phi, mixed_phi):
        other = StructuredHinge(phi, mc_argmax, ex, K * D_FEAT, all_argmax=mc_all_argmax)
        f, g = other.value_and_subgradient(w)
        assert f == pytest.approx(dense.value(w), rel=1e-12)
        np.testing.assert_allclose(g, dense.subgradient(w), rtol=1e-12, atol=1e-15)
        assert other.sup_subgradient(np.zeros_like(w), p)[0] == pytest.approx(
            dense.sup_subgradient(np.zeros_like(w), p)[0], rel=1e-12)
        values, G = other.group_value_and_subgradients(w, 3)
        assert values.sum() == pytest.approx(f, rel=1e-12)
        np.testing.assert_allclose(G.sum(axis=0), g, rtol=1e-12, atol=1e-14)


def test_structured_chain_via_user_inference_matches_chain_model():
    """StructuredHinge fed with the chain model's own per-sequence pieces reproduces it (the
    Python loop over examples against the batch kernel), and BMRM reaches the same optimum."""
    X, Y = make_chains(m=12, seed=10)
    chain = ChainHinge(X, Y, 3)
    generic = StructuredHinge(chain.joint_feature, chain.loss_augmented_argmax, list(zip(X, Y)),
                              chain.dim, chain.label_loss)
    rng = np.random.default_rng(5)
    for _ in range(3):
        w = rng.standard_normal(chain.dim)
        f, g = chain.value_and_subgradient(w)
        f2, g2 = generic.value_and_subgradient(w)
        assert f2 == pytest.approx(f, rel=1e-12)
        np.testing.assert_allclose(g2, g, rtol=1e-12, atol=1e-14)
    r1 = nsopt.minimize(nsopt.RegularizedRisk(chain, L2(), 1e-2), method="bmrm", rtol=1e-6)
    r2 = nsopt.minimize(nsopt.RegularizedRisk(generic, L2(), 1e-2), method="bmrm", rtol=1e-6)
    assert r1.lower_bound <= r2.fun + 1e-12 and r2.lower_bound <= r1.fun + 1e-12


def test_structured_bmrm_certificate_on_multiclass_vs_cvxpy():
    import cvxpy as cp

    ex = mc_examples(m=30, seed=6)
    lam = 0.05
    loss = StructuredHinge(mc_phi, mc_argmax, ex, K * D_FEAT, mc_label_loss)
    res = nsopt.minimize(nsopt.RegularizedRisk(loss, L2(), lam), method="bmrm", rtol=1e-4)
    w = cp.Variable(K * D_FEAT)
    risk = sum(cp.max(cp.hstack([(mc_phi(x, j) - mc_phi(x, y)) @ w + float(j != y) for j in range(K)]))
               for x, y in ex) / len(ex)
    prob = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(w) + risk))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    tol = 1e-8 * max(1.0, abs(prob.value))
    assert res.status is nsopt.Status.CONVERGED
    assert res.lower_bound - tol <= prob.value <= res.fun + tol


def test_structured_lemma8_fails_for_slack_rescaling():
    """The Lemma 8 identity is tested for margin rescaling in the hypothesis suite; as the notes
    say, it fails when Gamma is not constant. Slack rescaling, Gamma = Delta: the per-example sum
    of max_y' Delta (1 + <w, phi' - phi>) differs from the joint max of
    Delta(Y, Y') (1 + <w, Phi' - Phi>) on this instance, so the identity is not vacuous."""
    ex = mc_examples(m=2, seed=7)
    w = np.random.default_rng(8).standard_normal(K * D_FEAT)

    def piece(x, y, j):
        return float(j != y), (mc_phi(x, j) - mc_phi(x, y)) @ w

    per_example = sum(max(d * (1 + s) for d, s in (piece(x, y, j) for j in range(K))) for x, y in ex)
    joint = max(
        sum(piece(x, y, j)[0] for (x, y), j in zip(ex, js)) * (1 + sum(piece(x, y, j)[1] for (x, y), j in zip(ex, js)))
        for js in itertools.product(range(K), repeat=len(ex))
    )
    margin_sum = len(ex) * StructuredHinge(mc_phi, mc_argmax, ex, K * D_FEAT).value(w)
    margin_joint = max(
        sum(sum(piece(x, y, j)) for (x, y), j in zip(ex, js)) for js in itertools.product(range(K), repeat=len(ex))
    )
    assert margin_sum == pytest.approx(margin_joint, rel=1e-12)
    assert abs(per_example - joint) > 1e-3


# ==============================================================================================
# Bad input
# ==============================================================================================
def _seqs():
    return [np.ones((3, 2)), np.zeros((2, 2))], [np.array([0, 1, 2]), np.array([1, 1])]


@pytest.mark.parametrize("make, error, message", [
    (lambda X, Y: ChainHinge(X, Y[:1], 3), ValueError, "X_seqs has 2 sequences but Y_seqs has 1"),
    (lambda X, Y: ChainHinge(X, [Y[0], np.array([1, 1, 0])], 3), ValueError,
     r"Y_seqs\[1\] has 3 labels but the sequence has 2 positions"),
    (lambda X, Y: ChainHinge(X, Y, 2), ValueError, r"Y_seqs\[0\] has labels outside 0 .. 1 .*\[2\]"),
    (lambda X, Y: ChainHinge(X, [Y[0], np.array([-1, 0])], 3), ValueError, r"outside 0 .. 2 .*\[-1\]"),
    (lambda X, Y: ChainHinge(X, [Y[0], np.array([0.5, 1])], 3), ValueError, "integer state labels"),
    (lambda X, Y: ChainHinge([X[0], np.ones((2, 3))], Y, 3), ValueError,
     r"X_seqs\[1\] has 3 features but X_seqs\[0\] has 2"),
    (lambda X, Y: ChainHinge([X[0], np.ones((0, 2))], [Y[0], np.array([])], 3), ValueError,
     r"X_seqs\[1\] is empty"),
    (lambda X, Y: ChainHinge([X[0], np.ones(2)], Y, 3), ValueError, r"X_seqs\[1\] must be 2-D"),
    (lambda X, Y: ChainHinge([X[0], np.array([[np.nan, 1.0], [0, 0]])], Y, 3), ValueError, "NaN"),
    (lambda X, Y: ChainHinge(X, Y, 1), ValueError, "n_states must be an integer >= 2"),
    (lambda X, Y: ChainHinge([], [], 3), ValueError, "X_seqs is empty"),
    (lambda X, Y: ChainHinge(X, Y, 3, sample_weight=[1.0]), ValueError, "sample_weight has length 1, expected 2"),
    (lambda X, Y: ChainHinge(X, Y, 3, sample_weight=[1.0, -1.0]), ValueError, "nonnegative"),
])
def test_chain_bad_input(make, error, message):
    X, Y = _seqs()
    with pytest.raises(error, match=message):
        make(X, Y)


def test_chain_bad_input_at_use():
    X, Y = _seqs()
    loss = ChainHinge(X, Y, 3)
    with pytest.raises(ValueError, match="w has length 5, expected 15"):
        loss.value(np.zeros(5))
    with pytest.raises(ValueError, match=r"X_seqs\[0\] has 4 features but the model was built with 2"):
        loss.predict([np.ones((2, 4))], np.zeros(loss.dim))
    with pytest.raises(ValueError, match="3 labels but the sequence has 2"):
        loss.loss_augmented_argmax(np.ones((2, 2)), [0, 1, 2], np.zeros(loss.dim))


def _mc(**kwargs):
    args = dict(joint_feature=mc_phi, loss_augmented_argmax=mc_argmax, examples=mc_examples(m=5),
                dim=K * D_FEAT)
    args.update(kwargs)
    return StructuredHinge(**args)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(joint_feature=lambda x, y: np.zeros(5)), ValueError,
     r"joint_feature\(x, y\) for examples\[0\] returned an array of shape \(5,\); .* shape \(12,\)"),
    (dict(joint_feature=lambda x, y: sp.csr_matrix(np.zeros((12, 1)))), ValueError,
     r"sparse matrix of shape \(12, 1\)"),
    (dict(joint_feature=lambda x, y: np.full(12, np.inf)), ValueError, "NaN or inf"),
    (dict(joint_feature=lambda x, y: "abc"), TypeError, "numeric vector"),
    (dict(joint_feature=None), TypeError, "joint_feature must be callable"),
    (dict(dim=0), ValueError, "dim must be a positive integer"),
    (dict(examples=[]), ValueError, "examples is empty"),
    (dict(examples=[(1, 2, 3)]), ValueError, r"examples\[0\] must be a pair \(x, y\)"),
    (dict(label_loss=lambda y, z: 1.0), ValueError, r"label_loss\(y, y\) = 1.0 .* Delta\(y, y\) = 0"),
    (dict(sample_weight=np.ones(4)), ValueError, "sample_weight has length 4, expected 5"),
    (dict(tie_rtol=0.5), ValueError, "tie_rtol"),
])
def test_structured_bad_construction(kwargs, error, message):
    with pytest.raises(error, match=message):
        _mc(**kwargs)


@pytest.mark.parametrize("kwargs, error, message", [
    # a feature of the wrong length for the inferred label only
    (dict(joint_feature=lambda x, y: mc_phi(x, y) if y == 0 else np.zeros(7),
          examples=[(np.ones(D_FEAT), 0)]), ValueError,
     r"joint_feature\(x, y_hat\) for examples\[0\] returned an array of shape \(7,\)"),
    (dict(loss_augmented_argmax=lambda x, y, w: ((y + 1) % K, -1.0)), ValueError,
     "the label loss Delta must be finite and >= 0"),
    (dict(loss_augmented_argmax=lambda x, y, w: (y + 1) % K), TypeError, r"must return a pair \(y_hat, delta\)"),
    (dict(label_loss=lambda y, z: 2.0 * (y != z)), ValueError, r"returned delta = 1.0 .* label_loss\(y, y_hat\) = 2.0"),
])
def test_structured_bad_callables_at_evaluation(kwargs, error, message):
    with pytest.raises(error, match=message):
        _mc(**kwargs).value(np.ones(K * D_FEAT))


def test_structured_inference_that_does_not_maximise():
    """The true label (class 0) scores 4 at this w, the returned class 1 only 0 + Delta = 1: its
    per-example value would be -3 < 0, impossible for an exact maximiser."""
    w = np.zeros(K * D_FEAT)
    w[:D_FEAT] = 1.0
    bad = _mc(loss_augmented_argmax=lambda x, y, w: ((y + 1) % K, 1.0), examples=[(np.ones(D_FEAT), 0)])
    assert bad.value(np.zeros(K * D_FEAT)) == 1.0  # at w = 0 class 1 is a maximiser
    with pytest.raises(ValueError, match="must return an exact maximiser"):
        bad.value(w)


def test_structured_bad_all_argmax():
    w = np.zeros(K * D_FEAT)
    p = np.ones(K * D_FEAT)
    with pytest.raises(ValueError, match="all_argmax returned no maximiser"):
        _mc(all_argmax=lambda x, y, w: []).sup_subgradient(w, p)
    w1 = np.zeros(K * D_FEAT)
    w1[:D_FEAT] = 1.0
    ex = [(np.ones(D_FEAT), 0)]
    with pytest.raises(ValueError, match="all_argmax must return the maximisers"):
        _mc(examples=ex, all_argmax=lambda x, y, w: [(1, 1.0)]).sup_subgradient(w1, p)
    with pytest.raises(TypeError, match=r"\(y_hat, delta\) pairs"):
        _mc(all_argmax=lambda x, y, w: [1]).sup_subgradient(w, p)

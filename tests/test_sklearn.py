"""nsopt.sklearn: the estimators against scikit-learn's own models, the alpha / C mapping,
labels, sample weights, the certificate, warm starts, Pipeline and GridSearchCV."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

pytest.importorskip("sklearn", minversion="1.6")

from sklearn import config_context  # noqa: E402
from sklearn.linear_model import LogisticRegression, QuantileRegressor, Ridge  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import nsopt  # noqa: E402
from nsopt.sklearn import LinearClassifier, LinearRanker, LinearRegressor, concordance  # noqa: E402

def binary_data(m=120, d=6, seed=0, labels=("no", "yes")):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    score = X @ rng.normal(size=d) + 0.5 * rng.normal(size=m)
    return X, np.where(score > 0, labels[1], labels[0])


def objective(est, X, y_signed, lam):
    """J at the fitted model, computed here from its definition (L2 hinge)."""
    f = X @ est.coef_.ravel() + est.intercept_[0]
    w = est.coef_.ravel()
    return lam * 0.5 * w @ w + np.mean(np.maximum(0.0, 1.0 - y_signed * f))


# --- import -----------------------------------------------------------------------------
def test_import_nsopt_does_not_import_sklearn_module():
    code = "import sys, nsopt; print('nsopt.sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_import_without_sklearn_says_how_to_install():
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "try:\n    import nsopt.sklearn\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 'pip install "nsopt[sklearn]"' in out.stdout


# --- the strength: C and alpha ----------------------------------------------------------
def test_C_and_alpha_give_the_same_problem():
    X, y = binary_data()
    C = 0.5
    a = LinearClassifier(C=C, fit_intercept=False, tol=1e-8).fit(X, y)
    b = LinearClassifier(alpha=1.0 / (C * X.shape[0]), fit_intercept=False, tol=1e-8).fit(X, y)
    assert a.lam_ == pytest.approx(b.lam_, rel=1e-15)
    assert np.allclose(a.coef_, b.coef_, atol=1e-5)


def test_C_with_sample_weights_is_C_times_the_weighted_sum():
    X, y = binary_data()
    sw = np.random.default_rng(1).integers(1, 4, size=X.shape[0]).astype(float)
    est = LinearClassifier(C=2.0, fit_intercept=False).fit(X, y, sample_weight=sw)
    assert est.lam_ == pytest.approx(1.0 / (2.0 * sw.sum()))


def test_certificate_brackets_the_objective_computed_here():
    X, y = binary_data()
    est = LinearClassifier(C=1.0, fit_intercept=False, tol=1e-3).fit(X, y)
    ys = np.where(y == est.classes_[1], 1.0, -1.0)
    J = objective(est, X, ys, est.lam_)
    assert J == pytest.approx(est.result_.fun, rel=1e-10)
    assert est.lower_bound_ <= J
    assert est.gap_ <= 1e-3 * J
    est.certificate_.check(est.problem(X, y))


def test_logistic_matches_sklearn_logistic_regression():
    """LogisticRegression minimises 1/2||w||^2 + C sum log-loss: the same minimiser."""
    X, y = binary_data(seed=3)
    C = 0.1
    ours = LinearClassifier("logistic", C=C, fit_intercept=False, tol=1e-10).fit(X, y)
    ref = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
    assert np.allclose(ours.coef_, ref.coef_, atol=1e-5)
    assert np.allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-5)


def test_softmax_matches_sklearn_multinomial():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 4))
    y = np.argmax(X @ rng.normal(size=(4, 3)) + 0.3 * rng.normal(size=(150, 3)), axis=1)
    C = 0.2
    ours = LinearClassifier("softmax", C=C, fit_intercept=False, tol=1e-10).fit(X, y)
    ref = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
    assert np.allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-5)


def test_ridge_mapping_alpha():
    """Ridge minimises ||y - Xw||^2 + a ||w||^2 = 2m (mean 1/2 r^2 + (a/m) 1/2 ||w||^2)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 5))
    y = X @ rng.normal(size=5) + rng.normal(size=80)
    a = 3.0
    ours = LinearRegressor(alpha=a / X.shape[0], fit_intercept=False, tol=1e-12).fit(X, y)
    ref = Ridge(alpha=a, fit_intercept=False).fit(X, y)
    assert np.allclose(ours.coef_, ref.coef_, atol=1e-6)


def test_quantile_l1_matches_sklearn_quantile_regressor():
    """QuantileRegressor minimises mean pinball + alpha ||w||_1: lam = alpha, penalty l1."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(100, 4))
    y = X @ np.array([1.0, 0.0, -2.0, 0.5]) + rng.standard_t(3, size=100)
    ours = LinearRegressor("quantile", quantile=0.7, penalty="l1", alpha=0.01,
                           fit_intercept=False, tol=1e-8).fit(X, y)
    ref = QuantileRegressor(quantile=0.7, alpha=0.01, fit_intercept=False).fit(X, y)
    J = lambda w: (np.mean(np.maximum(0.7 * (y - X @ w), -0.3 * (y - X @ w)))  # noqa: E731
                   + 0.01 * np.abs(w).sum())
    assert J(ours.coef_) <= J(ref.coef_) + 1e-6 * J(ref.coef_)
    assert ours.lower_bound_ <= J(ref.coef_) + 1e-12


# --- labels -------------------------------------------------------------------------------
@pytest.mark.parametrize("labels", [("no", "yes"), (0, 1), (-1, 1), (2, 5)])
@pytest.mark.parametrize("loss", ["hinge", "logistic", "multiclass_hinge", "softmax"])
def test_any_binary_labels_give_the_same_model(labels, loss):
    X, y = binary_data()
    ref = LinearClassifier(loss, fit_intercept=False).fit(X, y == "yes")
    y2 = np.where(y == "yes", labels[1], labels[0])
    est = LinearClassifier(loss, fit_intercept=False).fit(X, y2)
    assert list(est.classes_) == sorted(labels)
    assert np.allclose(est.decision_function(X), ref.decision_function(X))
    assert set(est.predict(X)) <= set(labels)


def test_binary_loss_refuses_three_classes_and_names_the_alternatives():
    X, _ = binary_data()
    y = np.arange(X.shape[0]) % 3
    with pytest.raises(ValueError, match="multiclass_hinge"):
        LinearClassifier("hinge", fit_intercept=False).fit(X, y)


def test_predict_proba_only_for_probabilistic_losses():
    assert hasattr(LinearClassifier("logistic"), "predict_proba")
    assert hasattr(LinearClassifier("softmax"), "predict_proba")
    assert not hasattr(LinearClassifier("hinge"), "predict_proba")
    assert not hasattr(LinearClassifier("multiclass_hinge"), "predict_proba")


def test_multiclass_coef_shape_and_predict_is_argmax():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(90, 3))
    y = np.array(["a", "b", "c"])[np.argmax(X, axis=1)]
    est = LinearClassifier("multiclass_hinge", fit_intercept=False).fit(X, y)
    assert est.coef_.shape == (3, 3) and est.intercept_.shape == (3,)
    assert np.array_equal(est.predict(X), est.classes_[est.decision_function(X).argmax(1)])
    assert est.score(X, y) > 0.9


# --- sparse input, weights ----------------------------------------------------------------
def test_sparse_and_dense_agree():
    X, y = binary_data()
    X[np.abs(X) < 0.8] = 0.0
    a = LinearClassifier(fit_intercept=False, tol=1e-6).fit(X, y)
    b = LinearClassifier(fit_intercept=False, tol=1e-6).fit(sp.csr_matrix(X), y)
    assert np.allclose(a.coef_, b.coef_, atol=1e-8)


def test_zero_weight_is_dropping_the_sample():
    X, y = binary_data(m=60)
    sw = np.ones(60)
    sw[:10] = 0.0
    a = LinearRegressor("absolute_error", alpha=1e-2, fit_intercept=False, tol=1e-8)
    b = LinearRegressor("absolute_error", alpha=1e-2, fit_intercept=False, tol=1e-8)
    t = X[:, 0] - X[:, 1]
    a.fit(X, t, sample_weight=sw)
    b.fit(X[10:], t[10:])
    Ja, Jb = a.result_.fun, b.result_.fun
    assert Ja == pytest.approx(Jb, rel=1e-6)


# --- ranking --------------------------------------------------------------------------------
@given(st.lists(st.integers(0, 3), min_size=2, max_size=25),
       st.integers(0, 10_000))
def test_concordance_is_the_pair_count(rel, seed):
    rel = np.array(rel)
    s = np.random.default_rng(seed).integers(0, 4, size=rel.size).astype(float)  # with ties
    i, j = np.nonzero(rel[:, None] < rel[None, :])
    expected = (np.sum(s[i] < s[j]) + 0.5 * np.sum(s[i] == s[j])) / i.size if i.size else np.nan
    assert concordance(s, rel) == pytest.approx(expected, nan_ok=True)


def test_roc_area_ranker_score_is_the_auc():
    X, y = binary_data(labels=(0, 1))
    y = y.astype(int)
    est = LinearRanker("roc_area", alpha=1e-2).fit(X, y)
    assert est.score(X, y) == pytest.approx(roc_auc_score(y, est.predict(X)))
    assert est.score(X, y) > 0.9


def test_ranker_qid_through_gridsearch_with_metadata_routing():
    X, rel, qid = nsopt.datasets.make_ranking(12, 15, 5, random_state=0)
    with config_context(enable_metadata_routing=True):
        ranker = LinearRanker("ndcg", k=5).set_fit_request(qid=True).set_score_request(qid=True)
        grid = GridSearchCV(ranker, {"alpha": [1e-1, 1e-3]}, cv=3).fit(X, rel, qid=qid)
    assert grid.best_params_["alpha"] in (1e-1, 1e-3)
    best = grid.best_estimator_
    assert best.score(X, rel, qid=qid) == pytest.approx(
        nsopt.losses.ndcg_at_k(best.predict(X), rel, qid, k=5))


def test_preference_pairs_only_within_queries():
    """Pairs across queries are not formed: two queries with shifted features rank alike."""
    X, rel, qid = nsopt.datasets.make_ranking(6, 10, 4, random_state=1)
    est = LinearRanker("preference_pairs", alpha=1e-2).fit(X, rel, qid=qid)
    n_pairs = sum(int(np.sum(rel[qid == q][:, None] < rel[qid == q][None, :]))
                  for q in np.unique(qid))
    assert est.result_.fun >= est.lower_bound_
    assert LinearRanker("preference_pairs", C=1.0).fit(X, rel, qid=qid).lam_ == 1.0 / n_pairs


# --- Pipeline, GridSearchCV, warm start -----------------------------------------------------
def test_pipeline_and_gridsearch():
    X, y = binary_data(m=150)
    pipe = make_pipeline(StandardScaler(), LinearClassifier(fit_intercept=False))
    grid = GridSearchCV(pipe, {"linearclassifier__C": [0.01, 1.0]}, cv=3).fit(X, y)
    assert grid.best_score_ > 0.8


def sweep(X, y, alphas, warm, fit_intercept=False):
    est = LinearClassifier(alpha=alphas[0], method="ls-bmrm", fit_intercept=fit_intercept,
                           warm_start=warm, tol=1e-4)
    out = []
    for a in alphas:
        est.set_params(alpha=a).fit(X, y)
        out.append((est.n_iter_, est.result_.fun, est.lower_bound_))
    return out


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_warm_start_saves_iterations_and_keeps_the_certificate(fit_intercept):
    """Warm: the previous solution and its cutting planes (with an intercept too)."""
    X, y = binary_data(m=400, d=20, seed=8)
    X = X + 0.5                                   # an intercept to find
    alphas = [1e-1, 3e-2, 1e-2, 3e-3, 1e-3]
    cold = sweep(X, y, alphas, False, fit_intercept)
    warm = sweep(X, y, alphas, True, fit_intercept)
    for (_, fc, lc), (_, fw, lw) in zip(cold, warm):
        assert lw <= fc and lc <= fw          # each bound is below the other's objective
    assert sum(w[0] for w in warm[1:]) < sum(c[0] for c in cold[1:])


def test_warm_start_on_other_data_does_not_reuse_planes():
    """Planes of one data set's loss are not under-estimators of another's."""
    X, y = binary_data(m=200, seed=9)
    X2, y2 = binary_data(m=200, seed=10)
    est = LinearClassifier(method="ls-bmrm", fit_intercept=False, warm_start=True, tol=1e-4)
    est.fit(X, y)
    est.fit(X2, y2)
    cold = LinearClassifier(method="ls-bmrm", fit_intercept=False, tol=1e-4).fit(X2, y2)
    assert est.lower_bound_ <= cold.result_.fun
    assert est.result_.info.get("planes") is not None


def test_bad_parameters_are_named():
    X, y = binary_data()
    with pytest.raises(ValueError, match="penalty"):
        LinearClassifier(penalty="l3", fit_intercept=False).fit(X, y)
    with pytest.raises(ValueError, match="method"):
        LinearClassifier(method="newton", fit_intercept=False).fit(X, y)
    with pytest.raises(ValueError, match="C"):
        LinearClassifier(C=-1.0, fit_intercept=False).fit(X, y)
    with pytest.raises(ValueError, match="loss"):
        LinearRegressor("hinge", fit_intercept=False).fit(X, X[:, 0])


def test_any_regularizer_instance_as_penalty():
    X, y = binary_data()
    est = LinearClassifier(penalty=nsopt.regularizers.Lp(1.5), fit_intercept=False).fit(X, y)
    assert est.score(X, y) > 0.8 and est.lower_bound_ <= est.result_.fun


def shifted_binary(m=200, seed=11):
    """Labels that need an intercept: the boundary is x_0 = 1.5, far from the origin."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 4)) + 1.0
    return X, (X[:, 0] + 0.3 * rng.normal(size=m) > 1.5).astype(int)


def test_logistic_intercept_matches_sklearn():
    """LogisticRegression does not regularize its intercept either: the same minimiser."""
    X, y = shifted_binary()
    ours = LinearClassifier("logistic", C=0.5, tol=1e-8).fit(X, y)
    ref = LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000).fit(X, y)
    assert abs(ref.intercept_[0]) > 1.0                # the intercept matters here
    assert np.allclose(ours.intercept_, ref.intercept_, atol=1e-4)
    assert np.allclose(ours.coef_, ref.coef_, atol=1e-4)


def test_softmax_intercepts_match_sklearn_multinomial():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(150, 3)) + 2.0
    y = np.digitize(X[:, 0] + 0.2 * rng.normal(size=150), [1.5, 2.5])
    ours = LinearClassifier("softmax", C=1.0, tol=1e-6).fit(X, y)
    assert ours.gap_ <= 1e-6 * ours.result_.fun
    ref = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(X, y)
    assert np.allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-4)


def test_squared_error_intercept_matches_ridge():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(90, 4))
    y = X @ rng.normal(size=4) + 7.0 + rng.normal(size=90)
    a = 2.0
    ours = LinearRegressor(alpha=a / X.shape[0], tol=1e-9).fit(X, y)
    ref = Ridge(alpha=a).fit(X, y)
    assert ours.intercept_ == pytest.approx(ref.intercept_, abs=1e-5)
    assert np.allclose(ours.coef_, ref.coef_, atol=1e-5)


@pytest.mark.parametrize("loss", ["hinge", "multiclass_hinge"])
def test_hinge_intercept_is_certified_and_needed(loss):
    X, y = shifted_binary()
    with_b = LinearClassifier(loss, C=1.0, tol=1e-4).fit(X, y)
    without = LinearClassifier(loss, C=1.0, tol=1e-4, fit_intercept=False).fit(X, y)
    with_b.certificate_.check(with_b.problem(X, y))
    # the unregularized bias can only lower the optimum: J*_b <= J*_0 <= J(without)
    assert with_b.lower_bound_ <= without.result_.fun
    assert with_b.score(X, y) > without.score(X, y)


def test_docstring_examples():
    import doctest

    import nsopt.sklearn

    failed, attempted = doctest.testmod(nsopt.sklearn, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert attempted >= 3 and failed == 0


def test_elasticnet_matches_sklearn_elastic_net():
    """sklearn's ElasticNet minimises mean 1/2 r^2 + a (r |w|_1 + (1 - r)/2 |w|^2): lam = a."""
    from sklearn.linear_model import ElasticNet

    rng = np.random.default_rng(14)
    X = rng.normal(size=(100, 5))
    y = X @ np.array([2.0, 0.0, -1.0, 0.0, 0.5]) + 0.3 * rng.normal(size=100)
    ours = LinearRegressor(penalty="elasticnet", l1_ratio=0.5, alpha=0.1, fit_intercept=False,
                           tol=1e-6).fit(X, y)
    ref = ElasticNet(alpha=0.1, l1_ratio=0.5, fit_intercept=False, tol=1e-12).fit(X, y)
    assert np.allclose(ours.coef_, ref.coef_, atol=1e-3)
    assert ours.lower_bound_ <= ours.result_.fun


@pytest.mark.parametrize("loss", ["log_loss", "squared_hinge"])
def test_l1_smooth_loss_defaults_to_newton_cd(loss):
    """penalty='l1' with a loss newton-cd takes picks it (as ``nsopt.minimize`` does); the hinge
    (not differentiable) and a warm start keep the cutting-plane default."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 6))
    y = np.where(X @ rng.standard_normal(6) + 0.3 * rng.standard_normal(120) > 0, 1, -1)
    est = LinearClassifier(loss=loss, penalty="l1", alpha=1e-2, fit_intercept=False, tol=1e-6)
    est.fit(X, y)
    assert est.result_.method == "newton-cd" and est.result_.success
    ref = LinearClassifier(loss=loss, penalty="l1", alpha=1e-2, fit_intercept=False, tol=1e-6,
                           method="bmrm").fit(X, y)
    assert abs(est.result_.fun - ref.result_.fun) <= 2e-6 * abs(ref.result_.fun)
    hinge = LinearClassifier(loss="hinge", penalty="l1", alpha=1e-2, fit_intercept=False)
    assert hinge.fit(X, y).result_.method != "newton-cd"
    warm = LinearClassifier(loss=loss, penalty="l1", alpha=1e-2, fit_intercept=False,
                            warm_start=True)
    assert warm.fit(X, y).result_.method != "newton-cd"

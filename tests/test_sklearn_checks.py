"""scikit-learn's own estimator checks, in full, on every estimator of ``nsopt.sklearn``.

One instance per loss (each loss at least once), with the penalties l2 and l1 spread
over them; the real defaults except ``tol=1e-3`` (a certified relative gap of 1e-3).
A check that sklearn skips (pandas or the array API absent from the environment) is reported
as skipped by pytest, never as an expected failure.
"""
from __future__ import annotations

import pytest

pytest.importorskip("sklearn", minversion="1.6")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from nsopt.sklearn import LinearClassifier, LinearRanker, LinearRegressor  # noqa: E402

ESTIMATORS = [
    LinearClassifier("hinge", tol=1e-3),
    LinearClassifier("hinge", penalty="l1", tol=1e-3),
    LinearClassifier("squared_hinge", tol=1e-3),
    LinearClassifier("logistic", tol=1e-3),
    LinearClassifier("multiclass_hinge", tol=1e-3),
    LinearClassifier("softmax", tol=1e-3),
    LinearRegressor("squared_error", tol=1e-3),
    LinearRegressor("absolute_error", tol=1e-3),
    LinearRegressor("epsilon_insensitive", penalty="l1", tol=1e-3),
    LinearRegressor("quantile", quantile=0.3, tol=1e-3),
    LinearRegressor("huber", tol=1e-3),
    LinearRanker("roc_area", tol=1e-3),
    LinearRanker("preference_pairs", penalty="l1", tol=1e-3),
    LinearRanker("ndcg", tol=1e-3),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)

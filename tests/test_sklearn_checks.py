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

import nsopt  # noqa: E402
from nsopt.sklearn import LinearClassifier, LinearRanker, LinearRegressor  # noqa: E402

INTERCEPT = "fit_intercept" in __import__("inspect").signature(nsopt.RegularizedRisk).parameters


def _icpt(flag: bool) -> bool:
    """``fit_intercept=flag`` where nsopt has an intercept, else False (it would raise)."""
    return flag and INTERCEPT


ESTIMATORS = [
    LinearClassifier("hinge", tol=1e-3, fit_intercept=_icpt(True)),
    LinearClassifier("hinge", penalty="l1", tol=1e-3, fit_intercept=_icpt(True)),
    LinearClassifier("squared_hinge", tol=1e-3, fit_intercept=_icpt(True)),
    LinearClassifier("logistic", tol=1e-3, fit_intercept=_icpt(True)),
    LinearClassifier("multiclass_hinge", tol=1e-3, fit_intercept=_icpt(True)),
    LinearClassifier("softmax", tol=1e-3, fit_intercept=_icpt(True)),
    LinearRegressor("squared_error", tol=1e-3, fit_intercept=_icpt(True)),
    LinearRegressor("absolute_error", tol=1e-3, fit_intercept=_icpt(True)),
    LinearRegressor("epsilon_insensitive", penalty="l1", tol=1e-3, fit_intercept=_icpt(True)),
    LinearRegressor("quantile", quantile=0.3, tol=1e-3, fit_intercept=_icpt(True)),
    LinearRegressor("huber", tol=1e-3, fit_intercept=_icpt(True)),
    LinearRanker("roc_area", tol=1e-3),
    LinearRanker("preference_pairs", penalty="l1", tol=1e-3),
    LinearRanker("ndcg", tol=1e-3),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)

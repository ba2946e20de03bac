"""Real data (slow; skipped when ../shared/data is absent): BMRM on a9a against liblinear."""
import pytest

import nsopt

pytestmark = pytest.mark.slow


def test_bmrm_certifies_a9a_and_agrees_with_liblinear(a9a):
    """Issue: hinge + L2 at lam = 1e-4; BMRM certifies a relative gap of 1e-3 and liblinear's
    objective, run to high accuracy, lies inside BMRM's certified bracket."""
    sklearn_svm = pytest.importorskip("sklearn.svm")
    X, y = a9a
    m, lam = X.shape[0], 1e-4
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-3)
    assert res.success and res.gap <= 1e-3 * res.fun
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))

    clf = sklearn_svm.LinearSVC(C=1.0 / (m * lam), loss="hinge", dual=True, fit_intercept=False,
                                tol=1e-8, max_iter=200000)
    clf.fit(X, y)
    j_lib = J.value(clf.coef_.ravel())
    # liblinear's objective is a value of J: never below the proven bound ...
    assert res.lower_bound <= j_lib + 1e-12
    # ... and, run to high accuracy, within BMRM's certified gap of BMRM's value
    assert abs(res.fun - j_lib) <= res.gap
    print(f"a9a lam=1e-4: BMRM {res.fun:.8f} in [{res.lower_bound:.8f}, {res.fun:.8f}], "
          f"liblinear {j_lib:.8f}, {res.nit} iterations")


def test_ls_bmrm_and_sublbfgs_agree_on_a9a_logistic(a9a):
    X, y = a9a
    J = nsopt.RegularizedRisk(nsopt.losses.Logistic(X, y), nsopt.regularizers.L2(), 1e-4)
    a = nsopt.minimize(J, method="ls-bmrm", rtol=1e-4, max_time=120)
    b = nsopt.minimize(J, method="sublbfgs", rtol=1e-4, max_time=120)
    assert a.success and b.success
    assert a.lower_bound <= b.fun + 1e-12 and b.lower_bound <= a.fun + 1e-12

"""One compiled variant per kernel: numba compiles a kernel anew for every argument type, and
an array's read-only flag and an omitted default argument are part of the type. A kernel
called with a mix of the user's arrays, frozen iterates and fresh arrays, or with and without
``start``, was compiled two to five times (the level set's projection: five variants of
about 9 s each). The wrappers now pass read-only views (:func:`nsopt._linalg.kernel_input`)
and ``start`` always. The count is taken in a fresh interpreter: other tests of the same
process call the kernels directly, with types of their own."""
import json
import subprocess
import sys
import textwrap

import numpy as np

import nsopt
from nsopt.inner._box_equality import project_box_equality
from nsopt.inner.level_master import project_level_set

SCRIPT = textwrap.dedent("""
    import json
    import numpy as np, scipy.sparse as sp
    import nsopt
    from nsopt.inner import level_master, _box_equality
    from nsopt.losses._kernels import FUSED_KERNELS

    def ro(a):
        a = np.array(a, dtype=np.float64); a.flags.writeable = False; return a

    A, r = np.array([[1.0, 1.0], [1.0, -2.0]]), np.array([1.0, 0.5])
    lb, ub, c = np.full(2, -5.0), np.full(2, 5.0), np.array([2.0, 2.0])
    for flags in (0, 5, 10, 31):
        args = [ro(a) if flags >> k & 1 else a.copy() for k, a in enumerate((A, r, lb, ub, c))]
        level_master.project_level_set(*args)
    m = np.array([0.9, 0.2, 0.5])
    _box_equality.project_box_equality(m, sigma=[1.0, -1.0, -1.0], lower=0.0, upper=0.5)
    _box_equality.project_box_equality(ro(m), sigma=ro([1, -1, -1]), lower=ro([0, 0, 0]), upper=0.5)

    rng = np.random.default_rng(0)
    X = sp.random(30, 6, density=0.5, format="csr", random_state=1)
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    loss = nsopt.losses.Logistic(X, y)
    w = rng.normal(size=6)
    for point in (w, ro(w)):                     # a user's point, a solver's frozen iterate
        loss.value_and_subgradient(point); loss.value(point)
        line = loss.restrict(point, rng.normal(size=6))
        line.value(0.3); line.derivative(0.3)
    z = X @ w
    loss._grad_kernel(z, y, loss.c, np.zeros(30), np.empty(30))     # the in-memory path
    value, grad = loss.kernels
    value(z, y, loss.c, 0.25)                    # the sharded sums: a start given
    grad(z, y, loss.c, np.zeros(30), np.empty(30), 0.25)
    print(json.dumps({
        "project_finish": len(level_master._project_finish.signatures),
        "box_project": len(_box_equality._project.signatures),
        "value": len(value.signatures), "grad": len(grad.signatures),
        "fused": len(FUSED_KERNELS[grad].signatures)}))
""")


def _readonly(a):
    a = np.array(a, dtype=np.float64)
    a.flags.writeable = False
    return a


def test_each_kernel_compiles_one_variant_in_a_fresh_process():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=600, check=True).stdout
    counts = json.loads(out.strip().splitlines()[-1])
    assert counts == dict(project_finish=1, box_project=1, value=1, grad=1, fused=1), counts


def test_read_only_inputs_give_the_same_answers():
    A, r = np.array([[1.0, 1.0], [1.0, -2.0]]), np.array([1.0, 0.5])
    lb, ub, c = np.full(2, -5.0), np.full(2, 5.0), np.array([2.0, 2.0])
    x0, mult0 = project_level_set(A, r, lb, ub, c)
    x1, mult1 = project_level_set(*map(_readonly, (A, r, lb, ub, c)))
    np.testing.assert_array_equal(x0, x1)
    np.testing.assert_array_equal(mult0, mult1)
    np.testing.assert_allclose(x0, [0.5, 0.5], atol=1e-12)     # the docstring's example
    m = np.array([0.9, 0.2, 0.5])
    plain = project_box_equality(m, sigma=[1.0, -1.0, -1.0], lower=0.0, upper=0.5)
    frozen = project_box_equality(_readonly(m), sigma=_readonly([1, -1, -1]),
                                  lower=_readonly([0, 0, 0]), upper=0.5)
    np.testing.assert_array_equal(plain, frozen)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 4))
    import scipy.sparse as sp
    loss = nsopt.losses.Hinge(sp.csr_matrix(X), np.where(rng.random(20) < 0.5, -1.0, 1.0))
    w = rng.normal(size=4)
    f0, g0 = loss.value_and_subgradient(w)
    f1, g1 = loss.value_and_subgradient(_readonly(w))
    assert f0 == f1 and np.array_equal(g0, g1)
    assert w.flags.writeable            # the caller's array keeps its flag: a view was frozen

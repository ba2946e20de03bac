"""nsopt: minimise nonsmooth convex functions with certificates.

An :class:`Oracle` answers questions about a convex function, regularizers are known
through their Fenchel conjugates, and every solver returns the same :class:`Result` with a
proven lower bound and the gap.
"""
from . import datasets, io, losses, regularizers, solvers
from .certificate import Certificate, CertificateError
from .minimize import minimize
from .oracle import (CountingOracle, FunctionOracle, LineFunction, Max, NonConvexError, Oracle,
                     OracleNumericalError)
from .problem import RegularizedRisk
from .result import Result, Status, load_result
from .path import path
from .grade import certify

__version__ = "0.1.0"

__all__ = [
    "Oracle", "LineFunction", "FunctionOracle", "Max", "CountingOracle",
    "RegularizedRisk", "minimize", "path", "Result", "Status", "load_result", "Certificate",
    "CertificateError", "certify",
    "NonConvexError", "OracleNumericalError",
    "losses", "regularizers", "solvers", "io", "datasets", "plot", "to_cvxpy", "from_cvxpy",
]


def __getattr__(name):
    # nsopt.plot is imported on first use, so that importing nsopt never imports matplotlib
    # (nsopt.plot itself imports it only when a plot is drawn)
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    if name in ("to_cvxpy", "from_cvxpy"):  # nsopt.cvx imports cvxpy only when called
        from . import cvx

        return getattr(cvx, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

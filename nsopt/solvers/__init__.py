"""Solvers: interchangeable, one loop (:mod:`nsopt.solvers._base`), one result type.

``SOLVERS`` maps each method name of :func:`nsopt.minimize` to its class.
"""
from ._base import Option, ProblemNotSupported, Solver
from .bmrm import BMRM
from .excessive_gap import ExcessiveGap
from .kbundle import KBundle
from .ls_bmrm import LSBMRM
from .proximal_bundle import ProxBMRM, ProximalBundle, TrustRegionBundle
from .subbfgs import SubBFGS, SubLBFGS

SOLVERS = {cls.name: cls for cls in (BMRM, LSBMRM, KBundle, ProximalBundle, SubBFGS, SubLBFGS, ExcessiveGap)}


def methods_supporting(problem) -> list[str]:
    """The method names whose requirements ``problem`` meets."""
    return [name for name, cls in SOLVERS.items() if cls.unsupported_reason(problem) is None]


__all__ = ["SOLVERS", "Solver", "Option", "ProblemNotSupported", "BMRM", "LSBMRM", "KBundle", "ProximalBundle", "ProxBMRM",
           "TrustRegionBundle", "SubBFGS", "SubLBFGS", "ExcessiveGap", "methods_supporting"]

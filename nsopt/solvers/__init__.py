"""Solvers: interchangeable, one loop (:mod:`nsopt.solvers._base`), one result type.

``SOLVERS`` maps each method name of :func:`nsopt.minimize` to its class.
"""
from ._base import Option, ProblemNotSupported, Solver
from .bmrm import BMRM

SOLVERS = {cls.name: cls for cls in (BMRM,)}


def methods_supporting(problem) -> list[str]:
    """The method names whose requirements ``problem`` meets."""
    from ..problem import RegularizedRisk

    out = []
    for name, cls in SOLVERS.items():
        if "regularized_risk" in cls.requires and not isinstance(problem, RegularizedRisk):
            continue
        out.append(name)
    return out


__all__ = ["SOLVERS", "Solver", "Option", "ProblemNotSupported", "BMRM", "methods_supporting"]

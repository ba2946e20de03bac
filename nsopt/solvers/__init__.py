"""Solvers: interchangeable, one loop (:mod:`nsopt.solvers._base`), one result type.

``SOLVERS`` maps each method name of :func:`nsopt.minimize` to its class; each solver module
registers its class (:func:`nsopt.solvers._registry.register`) when imported below.
"""
from ._base import Option, ProblemNotSupported, Solver
from ._registry import SOLVERS, methods_supporting
from .bmrm import BMRM
from .ls_bmrm import LSBMRM
from .kbundle import KBundle
from .proximal_bundle import ProxBMRM, ProximalBundle, TrustRegionBundle
from .subbfgs import SubBFGS, SubLBFGS
from .excessive_gap import ExcessiveGap
from .level_bundle import LevelBundle
from . import _polyhedral  # noqa: F401  (LevelBundle's variant with rows A_ub x <= b_ub)
from .dcd import DCD
from .dcd_probe import DCDProbe
from .newton_cd import NewtonCD
from .newton_cg import NewtonCG

__all__ = ["SOLVERS", "Solver", "Option", "ProblemNotSupported", "BMRM", "LSBMRM", "KBundle", "ProximalBundle", "ProxBMRM",
           "TrustRegionBundle", "SubBFGS", "SubLBFGS", "ExcessiveGap", "LevelBundle", "DCD", "DCDProbe", "NewtonCD", "NewtonCG",
           "methods_supporting"]

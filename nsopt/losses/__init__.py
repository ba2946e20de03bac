"""Losses: each an :class:`~nsopt.Oracle` on ``w`` with the data bound at construction.

``__all__`` is the catalogue (DESIGN.md Sec. 4) and :data:`LOSSES` its registry: every loss
class exported here, under its lowercase-hyphenated name (``"squared-hinge"``, as the solvers'
method strings), like :data:`nsopt.solvers.SOLVERS`. :func:`get_loss` looks a name up and also
accepts underscores (``"squared_hinge"``). Exporting a loss class registers it.
:class:`nsopt.losses.intercept.InterceptHinge`, the hinge with its bias minimised out
(Pragam-b's loss), is imported from its module: it lacks the exact ``sup_subgradient`` and line
of the catalogue losses.
"""
import re

from ._base import ScalarLine, ScalarLoss
from ._vector_base import VectorLine, VectorLoss
from .multivariate import (FBeta, NDCG, OrdinalRegression, PRBEP, PreferencePairs, ROCArea,
                           ndcg_at_k)
from .structured import ChainHinge, StructuredHinge
from .vector import MulticlassHinge, MultilabelHinge, ScaledMulticlassHinge, Softmax
from .scalar import (EpsilonInsensitive, Exponential, Hinge, Huber, LeastAbsoluteDeviation,
                     LeastSquares, Logistic, Novelty, Poisson, Quantile, SquaredHinge)

__all__ = ["LOSSES", "get_loss", "ScalarLoss", "ScalarLine", "VectorLoss", "VectorLine",
           "MulticlassHinge", "ScaledMulticlassHinge", "Softmax", "MultilabelHinge", "Hinge",
           "SquaredHinge", "Logistic", "Exponential", "Huber", "LeastSquares",
           "LeastAbsoluteDeviation", "Quantile", "EpsilonInsensitive", "Poisson", "Novelty",
           "ROCArea", "FBeta", "PRBEP", "OrdinalRegression", "PreferencePairs", "NDCG",
           "ndcg_at_k", "StructuredHinge", "ChainHinge"]


def _name(cls: type) -> str:
    """``SquaredHinge`` -> ``squared-hinge``, ``ROCArea`` -> ``roc-area``, ``PRBEP`` -> ``prbep``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", cls.__name__).lower()


#: name -> class of every exported loss (the base classes and lines are not losses)
LOSSES: dict[str, type] = {
    _name(obj): obj for obj in map(globals().get, __all__)
    if isinstance(obj, type) and obj not in (ScalarLoss, VectorLoss, ScalarLine, VectorLine)
}


def get_loss(name: str) -> type:
    """The loss class registered as ``name`` in :data:`LOSSES`; ``_`` may stand for ``-``."""
    key = str(name).strip().lower().replace("_", "-")
    try:
        return LOSSES[key]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; the losses are {', '.join(sorted(LOSSES))}") from None

"""Losses: each an :class:`~nsopt.Oracle` on ``w`` with the data bound at construction.

``__all__`` is the catalogue (DESIGN.md Sec. 4). :class:`nsopt.losses.intercept.InterceptHinge`,
the hinge with its bias minimised out (Pragam-b's loss), is imported from its module: it lacks
the exact ``sup_subgradient`` and line of the catalogue losses.
"""
from ._base import ScalarLine, ScalarLoss
from ._vector_base import VectorLine, VectorLoss
from .multivariate import (FBeta, NDCG, OrdinalRegression, PRBEP, PreferencePairs, ROCArea,
                           ndcg_at_k)
from .structured import ChainHinge, StructuredHinge
from .vector import MulticlassHinge, MultilabelHinge, ScaledMulticlassHinge, Softmax
from .scalar import (EpsilonInsensitive, Exponential, Hinge, Huber, LeastAbsoluteDeviation,
                     LeastSquares, Logistic, Novelty, Poisson, Quantile, SquaredHinge)

__all__ = ["ScalarLoss", "ScalarLine", "VectorLoss", "VectorLine", "MulticlassHinge",
           "ScaledMulticlassHinge", "Softmax", "MultilabelHinge", "Hinge", "SquaredHinge", "Logistic", "Exponential",
           "Huber", "LeastSquares", "LeastAbsoluteDeviation", "Quantile", "EpsilonInsensitive",
           "Poisson", "Novelty", "ROCArea", "FBeta", "PRBEP", "OrdinalRegression",
           "PreferencePairs", "NDCG", "ndcg_at_k", "StructuredHinge", "ChainHinge"]

"""Losses: each an :class:`~nsopt.Oracle` on ``w`` with the data bound at construction."""
from ._base import ScalarLine, ScalarLoss
from .scalar import (EpsilonInsensitive, Exponential, Hinge, Huber, LeastAbsoluteDeviation,
                     LeastSquares, Logistic, Novelty, Poisson, Quantile, SquaredHinge)

__all__ = ["ScalarLoss", "ScalarLine", "Hinge", "SquaredHinge", "Logistic", "Exponential",
           "Huber", "LeastSquares", "LeastAbsoluteDeviation", "Quantile", "EpsilonInsensitive",
           "Poisson", "Novelty"]

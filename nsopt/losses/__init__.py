"""Losses: each an :class:`~nsopt.Oracle` on ``w`` with the data bound at construction."""
from ._base import ScalarLine, ScalarLoss
from .scalar import Hinge, Logistic, SquaredHinge

__all__ = ["ScalarLoss", "ScalarLine", "Hinge", "SquaredHinge", "Logistic"]

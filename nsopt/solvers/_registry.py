"""The solver registry: method names of :func:`nsopt.minimize` to solver classes.

A solver module registers its class with :func:`register` when it is imported
(``nsopt.solvers`` imports them all); the registry imports no solver, so the solver loop can
ask it which methods fit a problem without an import cycle.
"""
from __future__ import annotations

__all__ = ["SOLVERS", "register", "methods_supporting"]

#: method name -> solver class, in registration order
SOLVERS: dict = {}


def register(cls):
    """Class decorator: make ``cls`` available as ``method=cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name to register under")
    SOLVERS[cls.name] = cls
    return cls


def methods_supporting(problem, **options) -> list[str]:
    """The method names that can solve ``problem`` with ``options``: the problem meets the
    method's requirements and every option it cannot run without (``required_options``, e.g.
    level-bundle's ``bounds``) is among ``options`` (not None). What this lists, ``minimize``
    accepts with the same options."""
    return [name for name, cls in SOLVERS.items()
            if cls.unsupported_reason(problem) is None
            and all(options.get(o) is not None for o in cls.required_options)]

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
    level-bundle's ``bounds`` or ``radius``: an entry may be a tuple of alternatives) is among
    ``options`` (not None), and the method takes every option named, even as None (``bounds``
    is a constraint only some methods keep; ``minimize`` hands every named option to the
    method, which refuses names it does not know). What this lists, ``minimize`` accepts with
    the same options."""
    def given(need):  # a name, or a tuple of alternatives any one of which will do
        names = (need,) if isinstance(need, str) else need
        return any(options.get(o) is not None for o in names)

    return [name for name, cls in SOLVERS.items()
            if cls.unsupported_reason(problem) is None
            and all(given(need) for need in cls.required_options)
            and all(o in cls.option_table() for o in options)]

"""python-blosc2's ``blosc2.exceptions`` names, for code that catches them.

``MissingOperands`` is :class:`ndpack.MissingOperandsError` (a ValueError there, with
``.expr`` and ``.missing_ops``).  ndpack's own exceptions live in :mod:`ndpack.errors`.

Examples
--------
>>> import ndpack, ndpack.exceptions
>>> ndpack.exceptions.MissingOperands is ndpack.MissingOperandsError
True
>>> issubclass(ndpack.exceptions.MissingOperands, ValueError)
True
"""

from ndpack.engine.persist import MissingOperandsError as MissingOperands

__all__ = ["MissingOperands"]

"""Engine: lazy expressions evaluated chunk by chunk.

Imports point down only: the engine uses ``ndpack.storage``'s public classes and the
Array protocol (``shape``, ``dtype``, ``__getitem__``), never the C binding.
"""

from ndpack.engine import operators as _operators  # noqa: F401  (installs the operators)
from ndpack.engine.lazyexpr import LazyExpr, evaluate, lazyexpr

__all__ = ["LazyExpr", "lazyexpr", "evaluate"]

"""Engine: lazy expressions evaluated chunk by chunk.

Imports point down only: the engine uses ``ndpack.storage``'s public classes and the
Array protocol (``shape``, ``dtype``, ``__getitem__``), never the C binding.
"""

from ndpack.engine import operators as _operators  # noqa: F401  (installs the operators)
from ndpack.engine import arrayobject as _arrayobject  # noqa: F401  (the array API protocol)
from ndpack.engine.dask_backend import from_dask, to_dask  # installs NDArray.to_dask
from ndpack.engine.cumulative import cumulative_prod, cumulative_sum
from ndpack.engine.lazyexpr import LazyExpr, evaluate, lazyexpr
from ndpack.engine.reductions import (all, any, argmax, argmin, count_nonzero, max, mean, min,
                                      prod, std, sum, var)

__all__ = ["LazyExpr", "lazyexpr", "evaluate", "sum", "prod", "mean", "std", "var", "min",
           "max", "any", "all", "argmin", "argmax", "count_nonzero", "cumulative_sum",
           "cumulative_prod"]

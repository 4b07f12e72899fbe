"""ndpack.engine: expressions, evaluation paths, reductions, linear algebra, shape ops, foreign operands, dask, persistence."""

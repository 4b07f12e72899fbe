"""Engine: lazy expressions evaluated chunk by chunk, in floors (docs/architecture.md).

* :mod:`ndpack.engine.expr` -- what an expression is: trees, functions, views, the
  parser and the :class:`LazyExpr` handle; no reading, threads or writes;
* :mod:`ndpack.engine.run` -- how regions of a tree are read and evaluated: sizes
  (``plan``), the kernel, the aligned and region paths, workers, outputs, foreign
  readers;
* :mod:`ndpack.engine.ops` -- algorithms beyond elementwise: reductions, cumulative
  sums, linear algebra, shape operations, sorting;
* this package's modules, in named floors -- the driver (``compute``) < the entry
  points (``api``, ``statistical``, ``elementwise``, ...) < the methods (operators,
  the array object protocol, UDFs, persistence, NumPy's protocols, HDF5);
* :mod:`ndpack.engine.backends` -- other schedulers (dask);
* :mod:`ndpack.engine.bind` -- the top: the implementation of LazyExpr's door
  (:mod:`ndpack.engine.expr.door`) and NDArray's surface, installed once.

Each floor imports only the floors below it (``tests/tools/test_layers.py``).  Importing
this package imports nothing: ``ndpack/__init__.py`` assembles the namespace and calls
``ndpack.engine.bind.install()``.
"""

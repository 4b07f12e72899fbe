"""User functions evaluated chunk by chunk: ``lazyudf(func, inputs, dtype, ...)``.

``func(inputs, output, offset)`` is called once per output chunk with NumPy arrays:
`inputs` holds each input's part for that chunk (inputs of the output's shape are
sliced to the chunk, others are passed whole), `output` is the chunk to fill in place,
and `offset` the chunk's first coordinates.  The result is an array-like (``shape``,
``dtype``, ``__getitem__``), so it works in expressions, reductions, ``evaluate``
and slicing, and computes only the chunks a request touches.

Saving stores the function's source (python-blosc2's ``LazyArray`` layout);
opening it runs that source, so ``open`` requires ``trust_code=True``.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(12.0).reshape(3, 4), chunks=(2, 4))
>>> def twice_plus_row(inputs, output, offset):
...     (x,) = inputs
...     output[...] = 2 * x + np.arange(offset[0], offset[0] + x.shape[0])[:, None]
>>> u = ndpack.lazyudf(twice_plus_row, (a,), np.float64)
>>> u[2].tolist()
[18.0, 20.0, 22.0, 24.0]
>>> float(ndpack.sum(u)), float((u + 1)[0, 0])
(144.0, 1.0)
"""

from __future__ import annotations

import builtins
import inspect
import itertools
import linecache
import os
import textwrap

import numpy as np

from ndpack.errors import FormatError, ParameterError
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.engine.run.output import new_output
from ndpack.codecs import SpecialValue
from ndpack.storage.ndarray import NDArray, create, fill_from, holding
from ndpack.engine.expr.accuracy import check_fp_accuracy
from ndpack.engine.expr.lazyexpr import key_box
from ndpack.engine.operators import install

__all__ = ["LazyUDF", "lazyudf", "open_udf"]

_LEGACY_UDF = 1                                   # python-blosc2's LazyArrayEnum.UDF


class LazyUDF:
    """A user function over input arrays, evaluated per output chunk when asked."""

    def __init__(self, func, inputs, dtype, shape=None, chunks=None, blocks=None):
        if not callable(func):
            raise TypeError(f"func must be callable, not {type(func).__name__}")
        self.func = func
        self.inputs = tuple(inputs)
        self.dtype = np.dtype(dtype)
        if self.dtype.hasobject:
            raise TypeError("a user function cannot produce Python objects")
        if shape is None:
            shapes = [tuple(x.shape) for x in self.inputs if hasattr(x, "shape")]
            if not shapes:
                raise ParameterError("give shape= when no input is an array")
            shape = shapes[0]
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else \
            tuple(int(s) for s in shape)
        if chunks is None and blocks is None:          # the first input's layout
            like = [x for x in self.inputs if isinstance(x, NDArray) and x.shape == self.shape]
            if like:
                chunks, blocks = like[0].chunks, like[0].blocks
        self.chunks, self.blocks = compute_chunks_blocks(self.shape, chunks, blocks,
                                                         dtype=self.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self):
        return f"LazyUDF({getattr(self.func, '__name__', self.func)!r}, shape={self.shape}, " \
               f"dtype={self.dtype})"

    # ---- evaluation ---------------------------------------------------------------------
    def _chunk(self, region: tuple) -> np.ndarray:
        """Call the function on one output chunk `region`."""
        out = np.zeros(tuple(s.stop - s.start for s in region), self.dtype)
        parts = []
        for x in self.inputs:
            if hasattr(x, "shape") and tuple(x.shape) == self.shape:
                parts.append(np.asarray(x[region]))
            elif hasattr(x, "shape") and hasattr(x, "__getitem__") and \
                    not isinstance(x, np.ndarray):
                parts.append(np.asarray(x[()]))
            else:
                parts.append(x)
        self.func(tuple(parts), out, tuple(s.start for s in region))
        return out

    def __getitem__(self, key) -> np.ndarray:
        """Compute the chunks `key` touches (basic indexing); returns NumPy."""
        box, rest = key_box(key, self.shape)
        res = np.empty(tuple(s.stop - s.start for s in box), self.dtype)
        if res.size:
            for region in _chunk_regions(self.shape, self.chunks, box):
                vals = self._chunk(region)
                inner = tuple(slice(max(r.start, b.start), min(r.stop, b.stop))
                              for r, b in zip(region, box))
                res[tuple(slice(i.start - b.start, i.stop - b.start)
                          for i, b in zip(inner, box))] = \
                    vals[tuple(slice(i.start - r.start, i.stop - r.start)
                               for i, r in zip(inner, region))]
        return res[rest]

    def __array__(self, dtype=None, copy=None):
        res = self[()]
        return res if dtype is None else res.astype(dtype)

    def compute(self, urlpath=None, **kwargs) -> NDArray:
        """Every chunk into a new NDArray (in memory, or on disk with `urlpath`);
        ``fp_accuracy=`` is accepted as python-blosc2 does (the function computes)."""
        check_fp_accuracy(kwargs.pop("fp_accuracy", None))
        for name, value in getattr(self, "storage", {}).items():   # given to lazyudf
            if name == "urlpath":
                urlpath = value if urlpath is None else urlpath
            else:
                kwargs.setdefault(name, value)
        kwargs.setdefault("chunks", self.chunks)
        kwargs.setdefault("blocks", self.blocks if kwargs["chunks"] == self.chunks else None)
        mode = kwargs.pop("mode", "w")

        def write(out):
            return fill_from(out, self._chunk if out.chunks == self.chunks else
                             lambda region: self[region])
        return new_output(self.shape, self.dtype, urlpath, mode, write, **kwargs)

    def save(self, urlpath, **kwargs) -> None:
        """Save the function's source and the input paths (python-blosc2's layout);
        every input must be an NDArray on disk."""
        save_udf(self, urlpath, **kwargs)


def lazyudf(func, inputs, dtype, shape=None, chunks=None, blocks=None, **kwargs) -> LazyUDF:
    """A lazy array computed by ``func(inputs, output, offset)`` one chunk at a time
    (python-blosc2's ``lazyudf``; see the module docstring)."""
    kwargs.pop("chunked_eval", None)    # python-blosc2's: ndpack always goes by chunks,
    kwargs.pop("jit", None)             # and never compiles; the function sees the same
    storage = {k: kwargs.pop(k) for k in _UDF_STORAGE if k in kwargs}
    if kwargs:
        raise ParameterError(f"unknown argument(s) {sorted(kwargs)}")
    udf = LazyUDF(func, inputs, dtype, shape, chunks, blocks)
    udf.storage = storage               # python-blosc2's: where compute() puts the result
    return udf


_UDF_STORAGE = ("urlpath", "contiguous", "mode", "cparams", "dparams", "meta", "storage")


def _chunk_regions(shape, chunks, box):
    """Regions of the chunk grid that intersect `box` (step-1 slices), in C order."""
    ranges = [range(b.start // c, -(-b.stop // c)) for b, c in zip(box, chunks)]
    for coords in itertools.product(*ranges):
        yield tuple(slice(k * c, min((k + 1) * c, n))
                    for k, c, n in zip(coords, chunks, shape))


# ---------------------------------------------------------------------------------------
# saving and opening (python-blosc2's legacy LazyArray layout for user functions)

def save_udf(udf: LazyUDF, urlpath, **kwargs) -> None:
    carrier = os.path.abspath(os.fspath(urlpath))
    folder = os.path.dirname(carrier)
    bad = [f"input {i}" for i, x in enumerate(udf.inputs)
           if not (isinstance(x, NDArray) and x.urlpath is not None)]
    if bad:
        raise ParameterError("to save a user function, every input must be an NDArray "
                             f"stored on disk; not: {', '.join(bad)}")
    try:
        source = textwrap.dedent(inspect.getsource(udf.func))
    except (OSError, TypeError):
        raise ParameterError(f"the source of {udf.func!r} is not available (defined "
                             "interactively?); it is needed to save the function") from None
    operands = {f"o{i}": os.path.relpath(os.path.abspath(x.urlpath), folder)
                for i, x in enumerate(udf.inputs)}
    meta = dict(kwargs.pop("meta", None) or {})
    meta["LazyArray"] = _LEGACY_UDF
    out = create(udf.shape, udf.dtype, urlpath=carrier, mode="w", meta=meta,
                 chunks=udf.chunks, blocks=udf.blocks, **kwargs)
    with holding(out):                 # replaces an old carrier only once complete
        fill_from(out, special=SpecialValue.UNINIT)
        out.vlmeta["_LazyArray"] = {"UDF": source, "operands": operands,
                                    "name": udf.func.__name__}
    out.schunk.close()


def open_udf(carrier: NDArray, urlpath, payload: dict, open_operand) -> LazyUDF:
    """Rebuild a saved user function: runs its source (callers check trust first)."""
    source, name = payload.get("UDF"), payload.get("name")
    operands = payload.get("operands", {})
    if not isinstance(source, str) or not isinstance(name, str) or \
            not isinstance(operands, dict):
        raise FormatError(f"{urlpath!r}: malformed saved user function (no source?)")
    inputs = [open_operand(f"o{i}", operands.get(f"o{i}")) for i in range(len(operands))]
    filename = f"<ndpack udf {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__builtins__": builtins, "np": np}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102  (trust_code=True)
    func = namespace.get(name)
    if not callable(func):
        raise FormatError(f"{urlpath!r}: the saved source defines no function {name!r}")
    return LazyUDF(func, inputs, carrier.dtype, carrier.shape, carrier.chunks,
                   carrier.blocks)



def _install():
    install(LazyUDF)                 # a + u, np.sin(u): lazy expressions over the UDF


_install()

"""ndpack: a lazy, out-of-core compute engine for compressed n-dimensional arrays.

The chunk layer is byte-compatible with Blosc2 and uses python-blosc2's names,
so ``import ndpack as blosc2`` works for the common core.

Examples
--------
>>> import numpy as np, ndpack
>>> data = np.arange(1_000_000, dtype=np.int64)
>>> chunk = ndpack.compress2(data, typesize=8)
>>> len(chunk) < data.nbytes // 50
True
>>> np.array_equal(np.frombuffer(ndpack.decompress2(chunk), np.int64), data)
True
"""

import math as _math

from . import _core
from . import resources as _resources
from . import vmath as _vmath
from ndpack.chunks import (chunk_info, compress, compress2, decompress, decompress2,
                           get_blocksize, get_cbuffer_sizes, get_clib, get_compressor,
                           set_blocksize, set_compressor)
from ndpack.codecs import (Codec, CParams, DParams, Filter, SpecialValue, SplitMode, Tuner,
                           compressor_list, codec_status, cparams_dflts, dparams_dflts, register_codec,
                           register_filter, set_nthreads)
from ndpack.about import (IS_WASM, VERSION_DATE, __version__, cpu_info, get_cpu_info,
                          print_versions, set_releasegil)
from ndpack.dtypes import (bool, can_cast, complex64, complex128, finfo, float32, float64,
                           iinfo, int8, int16, int32, int64, isdtype, result_type, uint8,
                           uint16, uint32, uint64)
from ndpack.inspection import __array_namespace_info__
from ndpack.resources import memory_limit, set_memory_limit
from ndpack.reporting import progress
from ndpack.errors import (CallbackError, CodecError, FilterError, FormatError, LimitError,
                           MemoryLimitError, NdpackError, OperationError, ParameterError)
from ndpack.storage import (NDArray, SChunk, arange, array, asarray, compute_chunks_blocks,
                            copy, empty, empty_like, eye, from_dlpack, frombuffer, fromiter,
                            full, full_like, linspace, load, load_array, load_tensor, nans, ndarray_from_cframe,
                            ones, ones_like, pack, pack_array2, pack_tensor, remove_urlpath,
                            save, save_array, save_tensor, schunk_from_cframe, uninit, unpack,
                            unpack_array2, unpack_tensor, zeros, zeros_like)
from ndpack.storage import DictStore, EmbedStore, TreeStore
from ndpack.storage.params import Storage, storage_dflts
from ndpack.storage.ndfield import NDField
from ndpack.engine import bind as _bind
_bind.install()     # the engine behind LazyExpr's door, NDArray's surface (engine/bind.py)
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.engine.api import evaluate, explain, lazyexpr
from ndpack.engine.statistical import (all, any, argmax, argmin, count_nonzero, max, mean,
                                       min, prod, std, sum, var)
from ndpack.engine.ops.cumulative import cumulative_prod, cumulative_sum
from ndpack.engine.ops.linalg import matmul, outer, tensordot, vecdot
from ndpack.engine.elementwise import *  # noqa: F403 -- the standard's elementwise functions
from ndpack.engine import elementwise as _elementwise
from ndpack.engine.ops.manipulation import (broadcast_arrays, broadcast_shapes, diff, isin,
                                           meshgrid, repeat, tile, tril, triu, unstack)
from ndpack.engine.ops.sorting import (argsort, nonzero, searchsorted, sort, unique_all,
                                   unique_counts, unique_inverse, unique_values)
from ndpack.engine.ops.quantile import median, quantile
from ndpack.engine.ops.indexhandle import Index, IndexKind, iter_sorted
from ndpack.engine.compute import FPAccuracy
from ndpack.engine.persist import MissingOperandsError, open
from ndpack.engine.backends.dask import from_dask, to_dask
from ndpack.engine.udf import LazyUDF, lazyudf
from ndpack.engine.hdf5 import from_hdf5, to_hdf5
from ndpack.engine.backends import xarray_writer as _xarray_writer
from ndpack.engine.backends.xarray_writer import save_dataset
from . import fft, linalg  # noqa: E402 -- the standard's extensions (ndpack.linalg, ndpack.fft)
from . import exceptions  # noqa: E402 -- python-blosc2's blosc2.exceptions names
from ndpack.compat import *  # noqa: F403 -- python-blosc2's constants and aliases
from . import compat as _compat
from ndpack.engine.ops.shape import (broadcast_to, concat, expand_dims, flip, matrix_transpose,
                                 moveaxis, permute_dims, reshape, roll, squeeze, stack)
from ndpack.engine.ops.take import take, take_along_axis


# the array API standard: its revision, then its constants
__array_api_version__ = "2024.12"
e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

__all__ = [
    "__version__", "VERSION_DATE", "print_versions", "IS_WASM", "set_releasegil",
    "cpu_info", "get_cpu_info", "cparams_dflts",
    "dparams_dflts", "storage_dflts", "Storage",
    "Codec", "Filter", "SplitMode", "SpecialValue", "Tuner", "CParams", "DParams",
    "compress", "decompress", "compress2", "decompress2", "get_cbuffer_sizes", "get_clib",
    "set_compressor", "get_compressor", "set_blocksize", "get_blocksize", "chunk_info", "compressor_list", "register_codec", "register_filter",
    "nthreads", "set_nthreads", "show_config", "set_memory_limit", "memory_limit", "progress",
    "NdpackError", "FormatError", "CodecError", "FilterError", "ParameterError",
    "CallbackError",
    "OperationError", "LimitError", "MemoryLimitError",
    "SChunk", "open", "MissingOperandsError", "LazyUDF", "lazyudf", "matmul", "tensordot",
    "vecdot", "outer", "schunk_from_cframe", "remove_urlpath", "pack_array2", "unpack_array2",
    "save_array", "load_array", "pack_tensor", "unpack_tensor", "save_tensor", "load_tensor",
    "pack", "unpack",
    "NDArray", "compute_chunks_blocks", "empty", "zeros", "ones", "full", "nans", "uninit",
    "arange", "linspace", "asarray", "array", "frombuffer", "copy", "empty_like", "zeros_like",
    "ones_like", "full_like", "ndarray_from_cframe", "eye", "fromiter", "from_dlpack", "save",
    "load",
    "DictStore", "TreeStore", "EmbedStore", "NDField",
    "LazyExpr", "lazyexpr", "evaluate", "explain", "FPAccuracy",
    "to_dask", "from_dask", "to_hdf5", "from_hdf5", "save_dataset",
    "sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax",
    "count_nonzero", "cumulative_sum", "cumulative_prod",
    "__array_api_version__", "__array_namespace_info__", "e", "inf", "nan", "pi", "newaxis", "linalg", "fft",
    *_compat.__all__,
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
    "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    *_elementwise.UNARY, *_elementwise.BINARY, *_elementwise.ALIASES, "clip", "where",
    "astype", "startswith", "endswith", "contains", "lower", "upper",
    "Index", "IndexKind", "iter_sorted",
    "sort", "argsort", "searchsorted", "nonzero", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "quantile", "median", "broadcast_arrays", "meshgrid",
    "broadcast_shapes", "isin",
    "tile", "repeat", "unstack", "tril", "triu", "diff",
    "concat", "stack", "permute_dims", "matrix_transpose", "moveaxis", "expand_dims",
    "squeeze", "broadcast_to", "reshape", "flip", "roll", "take", "take_along_axis",
]


def __getattr__(name):
    # `ndpack.nthreads` reads the live default, as `blosc2.nthreads` does.
    if name == "nthreads":
        return _core.get_nthreads()
    raise AttributeError(f"module 'ndpack' has no attribute {name!r}")


def show_config(file=None) -> dict:
    """Print (and return) the codec library versions, the SIMD path and thread defaults.

    Examples
    --------
    >>> import io, ndpack
    >>> cfg = ndpack.show_config(file=io.StringIO())
    >>> sorted(cfg)
    ['checksum', 'codecs', 'isa', 'memory', 'nthreads', 'support', 'version', 'vmath']
    >>> cfg["vmath"]["exp"] in ("ours", "numpy")
    True
    """
    import sys

    cfg = {
        "version": __version__,
        "isa": _core.isa(),
        "checksum": _core.crc32c_kernel(),
        "nthreads": _core.get_nthreads(),
        "memory": _resources.usage(),
        "codecs": {c.name.lower(): _core.library_version(int(c))
                   for c in compressor_list(plugins=True) if c in Codec.__members__.values()},
        "support": codec_status(),
        "vmath": {"isa": _vmath.isa(), **{n: _vmath.implementation(n) for n in _vmath.NAMES}},
    }
    out = sys.stdout if file is None else file
    print(f"ndpack {cfg['version']}", file=out)
    print(f"  filter ISA : {cfg['isa']} (NDPACK_ISA=scalar|sse2|avx2 forces one)", file=out)
    print(f"  nthreads   : {cfg['nthreads']} (NDPACK_NTHREADS, ndpack.set_nthreads)", file=out)
    print(f"  crc32c     : {cfg['checksum']} (chunk checksums, docs/storage.md)", file=out)
    mem = cfg["memory"]
    print(f"  memory     : limit {mem['memory_limit'] / 2**20:.0f} MiB (NDPACK_MEMORY, "
          f"ndpack.set_memory_limit); {mem['idle_bytes'] / 2**20:.0f} MiB of buffers kept",
          file=out)
    for name, ver in cfg["codecs"].items():
        print(f"  {name:<10} : {ver}", file=out)
    missing = {k: v for k, v in cfg["support"].items() if v != "built in"}
    for name, why in missing.items():
        print(f"  {name.lower():<10} : missing ({why})", file=out)
    vm = cfg["vmath"]
    ours = [n for n in _vmath.NAMES if vm[n] == "ours"]
    theirs = [n for n in _vmath.NAMES if vm[n] == "numpy"]
    print(f"  vmath      : {vm['isa']} kernels for {', '.join(ours) or '-'}; NumPy for "
          f"{', '.join(theirs) or '-'} (float64; NDPACK_VMATH=ours|numpy|auto)", file=out)
    return cfg


_xarray_writer.register_if_loaded()   # ds.ndpack.save(...) when xarray is imported first

"""Storage layer: super-chunks, frames, metadata, NDArray and its constructors.

Imports point down only: storage uses the binding (``ndpack._core``, ``ndpack.chunks``,
``ndpack.codecs``), never ``ndpack.engine``.
"""

from ndpack.storage.constructors import (arange, array, asarray, copy, empty, empty_like, eye,
                                         from_dlpack, frombuffer, fromiter, full, full_like,
                                         linspace, load, nans, ndarray_from_cframe, ones,
                                         ones_like, save, uninit, zeros, zeros_like)
from ndpack.storage.embedstore import EmbedStore
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.storage.ndarray import NDArray
from ndpack.storage.dispatch import open
from ndpack.storage.schunk import SChunk, remove_urlpath, schunk_from_cframe
from ndpack.storage.serialize import (load_array, load_tensor, pack, pack_array2, pack_tensor,
                                      save_array, save_tensor, unpack, unpack_array2,
                                      unpack_tensor)
from ndpack.storage.stores import DictStore
from ndpack.storage.treestore import TreeStore

__all__: list[str] = ["SChunk", "open", "schunk_from_cframe", "remove_urlpath",
                      "pack_array2", "unpack_array2", "save_array", "load_array",
                      "pack_tensor", "unpack_tensor", "save_tensor", "load_tensor",
                      "pack", "unpack",
                      "NDArray", "compute_chunks_blocks", "empty", "zeros", "ones", "full",
                      "nans", "uninit", "arange", "linspace", "asarray", "array", "frombuffer",
                      "copy", "empty_like", "zeros_like", "ones_like", "full_like",
                      "ndarray_from_cframe", "eye", "fromiter", "from_dlpack", "save", "load",
                      "DictStore", "TreeStore", "EmbedStore"]

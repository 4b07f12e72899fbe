"""Storage layer: super-chunks, frames, metadata (and, later, NDArray and stores).

Imports point down only: storage uses the binding (``ndpack._core``, ``ndpack.chunks``,
``ndpack.codecs``), never ``ndpack.engine``.
"""

from ndpack.storage.schunk import SChunk, open, remove_urlpath, schunk_from_cframe
from ndpack.storage.serialize import (load_array, load_tensor, pack, pack_array2, pack_tensor,
                                      save_array, save_tensor, unpack, unpack_array2,
                                      unpack_tensor)

__all__: list[str] = ["SChunk", "open", "schunk_from_cframe", "remove_urlpath",
                      "pack_array2", "unpack_array2", "save_array", "load_array",
                      "pack_tensor", "unpack_tensor", "save_tensor", "load_tensor",
                      "pack", "unpack"]

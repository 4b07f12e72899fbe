"""Storage layer: super-chunks, frames, metadata (and, later, NDArray and stores).

Imports point down only: storage uses the binding (``ndpack._core``, ``ndpack.chunks``,
``ndpack.codecs``), never ``ndpack.engine``.
"""

__all__: list[str] = []

"""ndpack.storage: super-chunks, frames, NDArray and its layout, indexing, stores, validation, atomic writers."""

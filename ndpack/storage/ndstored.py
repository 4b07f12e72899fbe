"""Whole chunks in stored order: what engines that work chunk by chunk need.

A mixin of :class:`ndpack.storage.ndarray.NDArray` (kept apart so each module reads in
one sitting); it uses the array's public ``layout`` and ``schunk`` only.  A chunk
decoded "in stored order" is flat: its blocks one after another, each block in C
order, padding included.  Arrays with the same shape, chunks and blocks store
elements in the same order, so elementwise work can run on these buffers as they are.
"""

from __future__ import annotations

import numpy as np

from ndpack.chunks import (chunk_parts, compress2, decompress2, decompress_blocks,
                           in_layout, special_chunk, sum_chunk)
from ndpack.codecs import SpecialValue
from ndpack.errors import FormatError, ParameterError
from ndpack.storage.frame import chunk_nbytes_of
from ndpack.storage.ndread import from_blocked, stored_chunk

__all__ = ["NDStored"]


class NDStored:
    """Stored-order chunk access of NDArray (a mixin: it uses the array's layout)."""

    def read_chunk(self, nchunk: int, buf: bytearray | None = None):
        """The compressed chunk `nchunk` as a bytes-like object, without copies where
        possible: a view of the stored bytes for in-memory arrays, a view of `buf`
        for contiguous files when `buf` is big enough (read into it: reused buffers
        avoid page faults), else new bytes.  Valid until `buf` is reused.

        Examples
        --------
        >>> import numpy as np
        >>> from ndpack.storage.constructors import asarray
        >>> a = asarray(np.arange(1000.0), chunks=(500,))
        >>> bytes(a.read_chunk(1, bytearray(1 << 16))) == a.get_chunk(1)
        True
        """
        return stored_chunk(self.layout, self.schunk.frame, nchunk, buf)

    @property
    def stored_elements(self) -> int:
        """Elements of one decoded chunk: the extended chunk shape's size (padding
        included)."""
        return self.layout.chunk_items

    @in_layout
    def decode_stored(self, chunk, out=None, blocks=None, nthreads=None) -> np.ndarray:
        """Decode compressed `chunk` of this array in its stored order.

        The result is flat: the chunk's blocks one after another, each block in C
        order, padding included (:attr:`stored_elements` items).  Two arrays with the
        same shape, chunks and blocks store elements in the same order, so elementwise
        work can run on these buffers directly.  A special chunk (zeros, NaN, a
        repeated value) gives a 0-d array instead, without decoding anything.

        Parameters
        ----------
        chunk : bytes-like
            A chunk of this array (from :meth:`get_chunk`).
        out : numpy.ndarray, optional
            A flat C-contiguous array of this dtype and :attr:`stored_elements` items
            (or as many as `blocks` hold) to decode into (reused buffers avoid page
            faults).
        blocks : range, optional
            Decode only these blocks (numbers in stored order, step 1): the elements
            ``blocks.start * b`` to ``blocks.stop * b`` of the stored order, ``b`` the
            items of one block.
        nthreads : int, optional
            Threads of the C core for this call (default: ``dparams.nthreads``); 1 when
            the caller runs several decodes in parallel.

        Examples
        --------
        >>> import numpy as np
        >>> from ndpack.storage.constructors import asarray
        >>> a = asarray(np.arange(6.0).reshape(2, 3), chunks=(2, 3), blocks=(1, 3))
        >>> a.decode_stored(a.get_chunk(0)).tolist()
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        """
        lay = self.layout
        fill = lay.special_value(chunk)
        if fill is not None:
            return fill
        nbytes = chunk_nbytes_of(chunk)
        if nbytes != lay.chunk_nbytes:
            raise FormatError(f"chunk holds {nbytes} bytes; chunks of this array hold "
                              f"{lay.chunk_nbytes}")
        size = lay.chunk_items
        if blocks is not None:
            if blocks.step != 1 or not 0 <= blocks.start <= blocks.stop <= lay.nblocks:
                raise ParameterError(f"blocks must be a step-1 range within "
                                     f"range({lay.nblocks}), not {blocks}")
            size = len(blocks) * lay.block_items
        dtype = lay.dtype
        if out is None:
            out = np.empty(size, dtype)
        elif out.dtype != dtype or out.size != size or not out.flags.c_contiguous:
            raise ParameterError(f"out must be a C-contiguous {dtype} array of "
                                 f"{size} items")
        if nthreads is None:
            nthreads = self.schunk.dparams.nthreads
        if blocks is None or len(blocks) == lay.nblocks:
            decompress2(chunk, dst=out, nthreads=nthreads)
        else:
            decompress_blocks(chunk, blocks, nthreads=nthreads, dst=out)
        return out

    @in_layout
    def encode_stored(self, values, nthreads: int | None = None) -> bytes:
        """A chunk from values in stored order (see :meth:`decode_stored`); a 0-d
        value gives a special chunk (no data stored).  `nthreads`: C threads for this
        call (default: ``cparams.nthreads``)."""
        lay = self.layout
        dtype, size = lay.dtype, lay.chunk_items
        values = np.asarray(values)
        if values.ndim == 0 and dtype.itemsize > 255:          # too big for a header
            values = np.full(size, values, dtype)
        if values.ndim == 0:
            v = values.astype(dtype)
            if not v.any():
                special, raw = SpecialValue.ZERO, None
            else:
                special, raw = SpecialValue.VALUE, v.tobytes()
            return special_chunk(special, lay.chunk_nbytes, lay.typesize, lay.blocksize,
                                 value=raw)
        if values.dtype != dtype or values.size != size:
            raise ParameterError(f"values must be {size} items of "
                                 f"{dtype}, not {values.size} of {values.dtype}")
        extra = {} if nthreads is None else {"nthreads": int(nthreads)}
        return compress2(np.ascontiguousarray(values).reshape(-1).view(np.uint8),
                         cparams=self.schunk.cparams, **extra)

    @in_layout
    def encoder_stored(self):
        """An encoder of one chunk of this array in parts (see
        :func:`ndpack.chunks.chunk_parts`: blocks in stored order encoded as soon as they
        exist, from any thread; ``finish(values)`` gives what :meth:`encode_stored`
        would give for the same values), or None when the array's cparams do not
        allow it (clevel 0, ``use_dict``, DELTA, tiny chunks).

        Examples
        --------
        >>> import numpy as np
        >>> from ndpack.storage.constructors import asarray
        >>> a = asarray(np.arange(40_000.0), chunks=(20_000,), blocks=(5_000,),
        ...             cparams={"nthreads": 1})
        >>> values = np.linspace(0, 1, a.stored_elements)
        >>> enc = a.encoder_stored()
        >>> enc.add(values, 0, 2); enc.add(values, 2, 2)
        >>> enc.finish(values) == a.encode_stored(values)
        True
        """
        lay = self.layout
        return chunk_parts(lay.chunk_nbytes, self.schunk.cparams)

    @in_layout
    def sum_chunk_into(self, nchunk: int, out, reduced, ostride, offset: int,
                       buf: bytearray | None = None) -> None:
        """Add chunk `nchunk`'s elements into `out`, summing over the `reduced`
        dimensions: decoded block by block in the calling thread, never whole (see
        :func:`ndpack.chunks.sum_chunk`; `ostride` and `offset` place the chunk's kept
        indices in the flat float64/int64/uint64 `out`, `buf` is reused to read it).

        Examples
        --------
        >>> import numpy as np
        >>> from ndpack.storage.constructors import asarray
        >>> a = asarray(np.arange(12).reshape(3, 4), chunks=(2, 4), blocks=(1, 2))
        >>> out = np.zeros(3, np.int64)
        >>> for n in range(2):
        ...     a.sum_chunk_into(n, out, (1,), (1, 0), a.chunk_region(n)[0].start)
        >>> out.tolist()
        [6, 22, 38]
        """
        chunk = self.read_chunk(nchunk, buf)
        valid = [s.stop - s.start for s in self.chunk_region(nchunk)]
        lay = self.layout
        sum_chunk(chunk, lay.dtype, lay.chunks, lay.blocks, valid, reduced, out,
                  offset, ostride)

    @property
    def stored_c_order(self) -> bool:
        """Whether stored order is the C order of the extended chunk (blocks span the
        trailing dimensions of the chunk)."""
        return self.layout.stored_c_order

    def special_value(self, chunk):
        """The scalar (0-d array) a special chunk of this array stands for (zeros, NaN,
        a repeated value), or None for a chunk holding data."""
        return self.layout.special_value(chunk)

    def stored_as_chunk(self, values) -> np.ndarray:
        """Flat values in stored order (see :meth:`decode_stored`) as an array of the
        extended chunk shape, in C order (a view when the blocks allow it)."""
        lay = self.layout
        if lay.stored_c_order:
            return values.reshape(lay.ext_chunks)
        return from_blocked(values, values.dtype, lay.bgrid, lay.blocks)

    def chunk_region(self, nchunk: int) -> tuple:
        """The region of the array (a tuple of slices) chunk `nchunk` holds."""
        lay = self.layout
        return lay.region(lay.chunk_coords(nchunk))

    def write_stored(self, nchunk: int, values) -> None:
        """Store chunk `nchunk` from values in stored order (see :meth:`decode_stored`):
        chunks are written in order, ``nchunk == schunk.nchunks`` appends one."""
        self.write_encoded(nchunk, self.encode_stored(values))

    def write_encoded(self, nchunk: int, chunk: bytes, sums=None) -> None:
        """Store chunk `nchunk` from :meth:`encode_stored`'s result (chunks in order,
        as :meth:`write_stored`); the caller encodes, e.g. on its own threads.  `sums`:
        the chunk's checksums when the caller has them (``ChunkParts.sums``, or a
        copied chunk's :meth:`NDArray.stored_chunk`; the frame's checksum record takes
        them instead of hashing the chunk again), else None."""
        self.schunk.check_writable()
        frame = self.schunk.frame                   # our own chunk: no validation copy
        if nchunk == frame.nchunks and nchunk < self.layout.nchunks:
            frame.append(chunk, sums=sums)
        else:
            frame.update(nchunk, chunk, sums=sums)


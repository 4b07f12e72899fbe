"""Checks that the layout a file claims agrees with what its frame holds.

A ``.b2nd`` file says its layout twice: the ``b2nd`` metalayer (shape, chunks, blocks,
dtype) and the frame (header ``nbytes``, ``typesize``, ``blocksize``, ``chunksize``
and the offsets index).  Every reader of the array trusts the first to find chunks in
the second, so a file where they disagree -- a flipped byte in the shape, a header
``nbytes`` of another array -- would make reads walk chunks the index does not hold
(a shape of 2**40 rows over 6 chunks).  :func:`check_array_frame` runs when an array
is opened and raises :class:`~ndpack.errors.FormatError` naming the field.

What python-blosc2 4.14.1 writes always agrees: every chunk of the grid is in the
index (``empty``/``uninit`` arrays hold uninitialized special chunks, resized arrays
insert or delete chunks), chunks are whole padded chunks, the frame typesize is the
itemsize (> 255 for wide items; ndpack writes 1 there, as C-Blosc2's chunks do) and
the frame blocksize is one block's bytes.  Only arrays being created by this process
(``fresh`` frames) may hold fewer chunks than their grid while they are filled.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.frame import FrameInfo, MemoryFrame
>>> f = MemoryFrame(FrameInfo(typesize=8, chunksize=80))
>>> f.fresh = False                          # as if parsed from a file
>>> check_array_frame(f, (10,), (10,), (10,), np.dtype("f8"))
Traceback (most recent call last):
...
ndpack.errors.FormatError: the b2nd metalayer (shape (10,), chunks (10,)) makes 1 chunks, the super-chunk holds 0 (field nchunks)
"""

from __future__ import annotations

import struct

import numpy as np

from ndpack.errors import FormatError, ParameterError
from ndpack.storage.frame import special_code
from ndpack.storage.grid import check_sizes, ext_shape, prod

__all__ = ["check_array_frame", "check_chunk"]


def check_array_frame(frame, shape: tuple, chunks: tuple, blocks: tuple,
                      dtype: np.dtype) -> None:
    """Raise if the frame cannot hold the array the ``b2nd`` metalayer describes.

    Parameters
    ----------
    frame : FrameBase
        The store; ``frame.fresh`` is True for frames this process is creating (they
        may hold fewer chunks than the grid while being filled, and a bad layout is
        the caller's :class:`ParameterError`), False for frames read from bytes.
    shape, chunks, blocks : tuple of int
    dtype : numpy.dtype

    Raises
    ------
    FormatError
        Naming the field that disagrees (nchunks, nbytes, chunksize, typesize,
        blocksize) or the size limit the layout exceeds.
    """
    fresh = getattr(frame, "fresh", False)
    itemsize = dtype.itemsize
    try:
        check_sizes(shape, chunks, blocks, itemsize)
    except ParameterError as exc:
        if fresh:
            raise
        raise FormatError(f"the b2nd metalayer: {exc}") from None
    nchunks = prod(-(-s // c) if c else 0 for s, c in zip(shape, chunks))
    chunk_nbytes = prod(ext_shape(chunks, blocks)) * itemsize
    have = frame.nchunks
    if have > nchunks or (have < nchunks and not fresh):
        raise FormatError(f"the b2nd metalayer (shape {shape}, chunks {chunks}) makes "
                          f"{nchunks} chunks, the super-chunk holds {have} (field nchunks)")
    info = frame.info
    if have and info.chunksize > 0 and info.chunksize != chunk_nbytes:
        raise FormatError(f"the b2nd metalayer (chunks {chunks}, blocks {blocks}, {dtype}) "
                          f"makes chunks of {chunk_nbytes} bytes, the frame's are "
                          f"{info.chunksize} (field chunksize)")
    if frame.nbytes != have * chunk_nbytes:
        raise FormatError(f"the frame header says nbytes {frame.nbytes}, its {have} chunks "
                          f"of the b2nd layout hold {have * chunk_nbytes} (field nbytes)")
    if have and info.chunksize == 0 and frame.cnb.count(chunk_nbytes) != have:
        bad = next(i for i, nb in enumerate(frame.cnb) if nb != chunk_nbytes)
        raise FormatError(f"chunk {bad} holds {frame.cnb[bad]} bytes, the b2nd layout's "
                          f"chunks hold {chunk_nbytes} (field chunk nbytes)")
    if fresh:
        return
    if info.typesize not in (itemsize, 1):
        raise FormatError(f"the frame header says typesize {info.typesize}, the b2nd dtype "
                          f"{dtype} has {itemsize}-byte items (field typesize)")
    block_nbytes = prod(blocks) * itemsize
    if info.blocksize not in (0, block_nbytes):
        raise FormatError(f"the frame header says blocksize {info.blocksize}, the b2nd blocks "
                          f"{blocks} of {dtype} hold {block_nbytes} bytes (field blocksize)")


def check_chunk(n: int, chunk, nbytes: int, blocksize: int):
    """`chunk` (stored chunk `n` of an array) if its header fits the array's layout:
    ``nbytes`` one padded chunk and, for chunks holding data, ``blocksize`` one block.

    A chunk of another layout would decode into the wrong places (block reads) or
    leave part of the output unwritten (a whole-chunk decode into a bigger buffer):
    :class:`FormatError` naming the chunk and the field.  Chunks of fewer than 32
    bytes are left to the decoder, which reports them.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> c = ndpack.compress2(np.arange(10.0), typesize=8, blocksize=40)
    >>> check_chunk(3, c, 80, 40) is c
    True
    >>> check_chunk(3, c, 160, 40)
    Traceback (most recent call last):
    ...
    ndpack.errors.FormatError: chunk 3: its header says nbytes 80, the array's chunks hold 160 (field chunk nbytes)
    """
    if len(chunk) < 32:
        return chunk
    nb, bs = struct.unpack_from("<ii", chunk, 4)
    if nb != nbytes:
        raise FormatError(f"chunk {n}: its header says nbytes {nb}, the array's chunks hold "
                          f"{nbytes} (field chunk nbytes)")
    if bs != blocksize and nb and not special_code(chunk):
        raise FormatError(f"chunk {n}: its header says blocksize {bs}, the array's blocks "
                          f"hold {blocksize} bytes (field chunk blocksize)")
    return chunk

# Chunks encoded in parts (csrc/format/compress.c, ndp_cparts_*), included by _core.pyx:
# each block filtered and encoded by whichever thread produced it, while it is in that
# core's cache; the chunk finished once every block is in.


cdef class ChunkParts:
    """A chunk of `nbytes` encoded in parts (``ndp_cparts_*``): :meth:`add` encodes
    blocks of the chunk's buffer from any thread (several at once, GIL released) as soon
    as their bytes exist; :meth:`finish` returns the chunk (bytes) and sets :attr:`sums`.
    Made by :func:`chunk_parts`, which returns None when the chunk cannot be encoded in
    parts (clevel 0, tiny, dictionary, DELTA); :meth:`again` makes the encoder of the
    next chunk with the same parameters.  Blocks added in increasing order give the
    bytes of a one-thread :func:`compress`."""
    cdef ndp_cparts *enc
    cdef PyObject *raw
    cdef ndp_cparams cp
    cdef readonly int32_t nbytes, blocksize, nblocks
    cdef readonly object sums         # see finish

    def __dealloc__(self):
        ndp_cparts_free(self.enc)
        Py_XDECREF(self.raw)

    cdef _ReadBuffer _buffer(self, src):
        """`src` as the buffer of the chunk being encoded (checked: whole, unfinished)."""
        cdef _ReadBuffer buf = _ReadBuffer(src)
        if self.enc == NULL:
            raise ParameterError("the chunk was finished")
        if buf.view.len < self.nbytes:
            raise ParameterError(f"the chunk buffer holds {buf.view.len} bytes, not "
                                 f"{self.nbytes}")
        return buf

    def add(self, src, int32_t first, int32_t count):
        """Encode blocks [first, first + count) of the chunk whose buffer is `src` (the
        whole chunk's bytes; only those blocks are read)."""
        cdef _ReadBuffer buf = self._buffer(src)
        cdef ndp_error err
        cdef int r
        err.code = 0
        with nogil:
            r = ndp_cparts_add(self.enc, buf.view.buf, first, count, &err)
        if r < 0:
            _raise(r, &err)

    def add_block(self, block, int32_t j):
        """Encode block `j` from `block`, a copy of its bytes (the block's size; the
        chunk's buffer is then not read for it, see :attr:`needs_source`)."""
        cdef _ReadBuffer buf = _ReadBuffer(block)
        cdef ndp_error err
        cdef int r
        err.code = 0
        if self.enc == NULL:
            raise ParameterError("the chunk was finished")
        if j < 0 or j >= self.nblocks:
            raise ParameterError(f"block {j} outside the chunk's {self.nblocks} blocks")
        if buf.view.len < min(self.blocksize, self.nbytes - j * self.blocksize):
            raise ParameterError(f"block {j} needs {self.blocksize} bytes, got {buf.view.len}")
        with nogil:
            r = ndp_cparts_add_block(self.enc, buf.view.buf, j, &err)
        if r < 0:
            _raise(r, &err)

    @property
    def needs_source(self):
        """True when blocks were added from copies (:meth:`add_block`, a fused
        program's blocks) and :meth:`finish` will read the whole chunk's buffer (the
        data is stored uncompressed, or encoded again whole near its limit): fill the
        buffer with the chunk's bytes and call :meth:`source_filled` first."""
        return self.enc != NULL and ndp_cparts_needs_source(self.enc) != 0

    def source_filled(self):
        """The chunk's buffer now holds every block's bytes (see :attr:`needs_source`)."""
        if self.enc != NULL:
            ndp_cparts_source_filled(self.enc)

    def finish(self, src):
        """The chunk, once every block was added (`src`: the chunk's buffer, read
        whole when the data is stored uncompressed).  Sets :attr:`sums`: ``(crc,
        entry)``, the chunk's crc32c joined from its blocks' crcs (computed by the
        threads that encoded them) and its block checksums (as :func:`block_sums`
        gives them), or None when the chunk is not made of those blocks (stored
        uncompressed, collapsed into zeros, encoded again whole)."""
        cdef _ReadBuffer buf = self._buffer(src)
        cdef ndp_error err
        cdef int32_t r, ne = 0
        cdef uint32_t crc = 0
        cdef int known = 0
        err.code = 0
        if ndp_cparts_needs_source(self.enc):      # (the encoder stays usable)
            raise ParameterError("the chunk must be stored uncompressed or encoded again, "
                                 "and its buffer lacks the blocks added from copies: fill "
                                 "it, then call source_filled()")
        entry = bytearray(4 * (self.nblocks + 1))
        cdef _WriteBuffer ebuf = _WriteBuffer(entry)
        with nogil:
            r = ndp_cparts_end(self.enc, buf.view.buf, &err)
            if r >= 0:
                known = ndp_cparts_crc(self.enc, &crc)
                if known:
                    ne = ndp_cparts_block_sums(self.enc, <uint32_t *>ebuf.view.buf,
                                               self.nblocks + 1)
        ndp_cparts_free(self.enc)
        self.enc = NULL
        if r < 0:
            _raise(r, &err)
        self.sums = (crc, bytes(entry) if ne else None) if known else None
        raw = self.raw
        self.raw = NULL
        return _take_bytes(raw, r)

    def again(self):
        """The encoder of another chunk of the same size and parameters."""
        return _new_parts(&self.cp, self.nbytes)


cdef object _new_parts(const ndp_cparams *cp, int32_t n):
    cdef ndp_error err
    cdef ndp_cparts *enc = NULL
    cdef int r
    err.code = 0
    cdef int32_t cap = n + NDP_MAX_OVERHEAD
    cdef PyObject *raw = _new_bytes(cap, False)
    r = ndp_cparts_begin(&enc, cp, n, _bytes_data(raw), cap, &err)
    if r <= 0:
        Py_XDECREF(raw)
        if r < 0:
            _raise(r, &err)
        return None
    cdef ChunkParts out = ChunkParts.__new__(ChunkParts)
    out.enc = enc
    out.raw = raw
    out.cp = cp[0]
    out.nbytes = n
    out.blocksize = ndp_cparts_blocksize(enc)
    out.nblocks = ndp_cparts_nblocks(enc)
    return out


def chunk_parts(Py_ssize_t nbytes, int compcode, int compcode_meta, int clevel, bint use_dict,
                int typesize, int nthreads, int blocksize, int splitmode, filters,
                filters_meta):
    """A :class:`ChunkParts` for a chunk of `nbytes`, or None when the chunk cannot be
    encoded in parts."""
    cdef int32_t n = _checked_len(nbytes, "chunk")
    cdef ndp_cparams cp
    _fill_cparams(&cp, compcode, compcode_meta, clevel, use_dict, typesize, nthreads,
                  blocksize, splitmode, filters, filters_meta)
    return _new_parts(&cp, n)

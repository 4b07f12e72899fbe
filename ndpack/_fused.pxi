# Fused per-block evaluation (csrc/math/fused.c), included by _core.pyx: a float64
# arithmetic program run on the operands' blocks as they are decoded, each result block
# encoded into a chunk being built in parts (ChunkParts) while it is in the cache.


cdef class FusedProgram:
    """A postfix program over float64 items (`itemsize` 8) or float32 ones (4): `code`
    bytes (1 operand, 2 constant, 3 negate, 4 add, 5 subtract, 6 multiply, 7 divide,
    8 square, 9 square root), `arg` the operand or constant index of each step,
    `consts` the constants (converted to the item type), `nin` operands.  Checked when
    made (ParameterError).

    Examples
    --------
    >>> prog = FusedProgram(bytes([1, 1, 4, 2, 6]), [0, 1, 0, 0, 0], [2.0], 2)
    >>> prog.nin, prog.ncode, prog.itemsize
    (2, 5, 8)
    """
    cdef int8_t *code
    cdef int32_t *arg
    cdef double *consts
    cdef readonly int32_t ncode
    cdef readonly int nin, nconst, itemsize

    def __cinit__(self, code, arg, consts, int nin, int itemsize=8):
        cdef int32_t n = len(code), k
        if itemsize != 4 and itemsize != 8:
            raise ParameterError(f"programs run on 4- or 8-byte floats, not {itemsize}-byte")
        self.ncode, self.nin, self.nconst, self.itemsize = n, nin, len(consts), itemsize
        if len(arg) != n:
            raise ParameterError(f"{len(arg)} arguments for {n} steps")
        self.code = <int8_t *>PyMem_Malloc(max(n, 1))
        self.arg = <int32_t *>PyMem_Malloc(sizeof(int32_t) * max(n, 1))
        self.consts = <double *>PyMem_Malloc(sizeof(double) * max(self.nconst, 1))
        if self.code == NULL or self.arg == NULL or self.consts == NULL:
            raise MemoryError()
        for k in range(n):
            self.code[k] = <int8_t>code[k]
            self.arg[k] = <int32_t>arg[k]
        for k in range(self.nconst):
            self.consts[k] = <double>consts[k]
        cdef ndp_error err
        err.code = 0
        cdef int rc = ndp_fused_check(self.code, self.arg, n, nin, self.nconst, &err)
        if rc < 0:
            _raise(rc, &err)

    def __dealloc__(self):
        PyMem_Free(self.code)
        PyMem_Free(self.arg)
        PyMem_Free(self.consts)

    def run(self, chunks, blocks, dst, int32_t nbytes, int32_t blocksize,
            ChunkParts parts=None):
        """Blocks `blocks` (an int32 buffer) of the output chunk of `nbytes` (blocks of
        `blocksize`): decoded from each operand chunk of `chunks` and evaluated into
        the writable chunk buffer `dst` or, when `parts` is given, into a block of
        scratch that `parts` encodes (`dst` is then not written: see
        :attr:`ChunkParts.needs_source`).  True when done, False when an operand chunk
        is not of that layout (nothing written)."""
        cdef _ChunkList cl = _ChunkList(chunks, self.nin)
        cdef const int32_t[::1] ids = blocks
        cdef _WriteBuffer out = _WriteBuffer(dst)
        cdef ndp_cparts *enc = NULL
        if out.view.len < nbytes:
            raise ParameterError(f"dst holds {out.view.len} bytes, the chunk {nbytes}")
        if parts is not None:
            if parts.enc == NULL or parts.nbytes != nbytes:
                raise ParameterError("the encoder is finished or of another chunk size")
            enc = parts.enc
        cdef ndp_error err
        err.code = 0
        cdef int32_t r
        cdef int32_t nb = ids.shape[0]
        with nogil:
            r = ndp_fused_blocks(self.code, self.arg, self.ncode, self.consts, self.nin,
                                 self.itemsize, cl.ptrs, cl.sizes, &ids[0] if nb > 0 else NULL, nb,
                                 out.view.buf, nbytes, blocksize, enc, &err)
        if r < 0:
            _raise(r, &err)
        return r == 1

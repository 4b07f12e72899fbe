# Box and point reads (csrc/format/boxread.c, pointread.c), included by _core.pyx:
# plans built from int64 position arrays, the chunks they touch, and the reads (their C
# declarations are in _core.pxd).


cdef int _grid_args(int nd, chunks, blocks, grid, int64_t *c_chunks, int64_t *c_blocks,
                    int64_t *c_grid) except -1:
    if nd < 1 or nd > NDP_MAXDIM or len(chunks) != nd or len(blocks) != nd or len(grid) != nd:
        raise ParameterError(f"{nd} dimensions with {len(chunks)} chunk, {len(blocks)} block "
                             f"and {len(grid)} grid extents")
    cdef int d
    for d in range(nd):
        c_chunks[d], c_blocks[d], c_grid[d] = chunks[d], blocks[d], grid[d]
    return 0


cdef class _ChunkList:
    """Pointers to and sizes of a list of bytes-like chunks (views held)."""
    cdef const void **ptrs
    cdef int32_t *sizes
    cdef list views

    def __cinit__(self, chunks, int32_t expected):
        if len(chunks) != expected:
            raise ParameterError(f"{len(chunks)} chunks for a read touching {expected}")
        self.ptrs = <const void **>PyMem_Malloc(sizeof(void *) * (expected + 1))
        self.sizes = <int32_t *>PyMem_Malloc(sizeof(int32_t) * (expected + 1))
        if self.ptrs == NULL or self.sizes == NULL:
            raise MemoryError()
        self.views = []
        cdef _ReadBuffer rb
        cdef int32_t k
        for k in range(expected):
            rb = _ReadBuffer(chunks[k])
            self.views.append(rb)
            self.ptrs[k] = rb.view.buf
            self.sizes[k] = _checked_len(rb.view.len, "chunk")

    def __dealloc__(self):
        PyMem_Free(self.ptrs)
        PyMem_Free(self.sizes)

cdef class _ReadPlan:
    """A read plan (box or points): the chunks it touches, their blocks to decode,
    and the read itself.  Subclasses bind the C plan."""

    cdef int64_t _nslots(self):
        return 0

    cdef int32_t _nchunks(self):
        return 0

    cdef int64_t _chunk(self, int32_t k, const int32_t **blocks, int32_t *nblocks):
        return -1

    cdef int _read(self, const void *const *chunks, const int32_t *sizes, void *scratch,
                   int64_t scratch_len, void *out, int64_t out_len, int nthreads,
                   ndp_error *err) noexcept nogil:
        return -4

    @property
    def nslots(self):
        """Blocks to decode."""
        return self._nslots()

    @property
    def chunk_numbers(self):
        """The touched chunks, in the order :meth:`read` takes them."""
        cdef int32_t k, nb
        cdef const int32_t *bl
        return [self._chunk(k, &bl, &nb) for k in range(self._nchunks())]

    def blocks_of(self, int32_t k):
        """The numbers of the blocks of touched chunk k to decode."""
        cdef int32_t nb, i
        cdef const int32_t *bl
        if self._chunk(k, &bl, &nb) < 0:
            raise ParameterError(f"no touched chunk {k}")
        return [bl[i] for i in range(nb)]

    def read(self, chunks, scratch, out, int nthreads):
        """Decode from `chunks` (touched chunk k at k; bytes-like, whole or holding at
        least its blocks to decode) through `scratch` and write the result into `out`
        (C order)."""
        cdef _ChunkList cl = _ChunkList(chunks, self._nchunks())
        cdef _WriteBuffer sb = _WriteBuffer(scratch)
        cdef _WriteBuffer ob = _WriteBuffer(out)
        cdef ndp_error err
        err.code = 0
        cdef int rc
        with nogil:
            rc = self._read(cl.ptrs, cl.sizes, sb.view.buf, sb.view.len, ob.view.buf,
                            ob.view.len, nthreads, &err)
        if rc < 0:
            _raise(rc, &err)


cdef class BoxRead(_ReadPlan):
    """The plan of an orthogonal read (csrc/format/boxread.c): build with
    :meth:`plan`, fetch the chunks :attr:`chunk_numbers` names, then :meth:`read`."""
    cdef ndp_box *box

    def __dealloc__(self):
        ndp_box_free(self.box)

    cdef int64_t _nslots(self):
        return ndp_box_nslots(self.box)

    cdef int32_t _nchunks(self):
        return ndp_box_nchunks(self.box)

    cdef int64_t _chunk(self, int32_t k, const int32_t **blocks, int32_t *nblocks):
        return ndp_box_chunk(self.box, k, blocks, nblocks)

    cdef int _read(self, const void *const *chunks, const int32_t *sizes, void *scratch,
                   int64_t scratch_len, void *out, int64_t out_len, int nthreads,
                   ndp_error *err) noexcept nogil:
        return ndp_box_read(self.box, chunks, sizes, scratch, scratch_len, out, out_len,
                            nthreads, err)

    @property
    def chunk_slots(self):
        """The most blocks of one touched chunk: the fewest a scratch buffer holds."""
        return ndp_box_chunk_slots(self.box)

    @staticmethod
    def plan(units, chunks, blocks, grid, int itemsize, int64_t max_slots, maps=None):
        """The plan for sorted distinct positions `units` (int64 arrays, one per
        dimension), or None when it would decode more than `max_slots` blocks.
        `maps` (optional, one int64 array or None per dimension): the output takes
        positions ``units[d][maps[d]]`` along dimension d."""
        cdef int nd = len(units), d
        cdef int64_t c_chunks[NDP_MAXDIM]
        cdef int64_t c_blocks[NDP_MAXDIM]
        cdef int64_t c_grid[NDP_MAXDIM]
        cdef const int64_t *c_units[NDP_MAXDIM]
        cdef int64_t c_n[NDP_MAXDIM]
        cdef const int64_t *c_maps[NDP_MAXDIM]
        cdef int64_t c_nmaps[NDP_MAXDIM]
        _grid_args(nd, chunks, blocks, grid, c_chunks, c_blocks, c_grid)
        if maps is not None and len(maps) != nd:
            raise ParameterError(f"{len(maps)} maps for {nd} dimensions")
        cdef const int64_t[::1] view
        keep = []
        for d in range(nd):
            view = units[d]
            keep.append(view)
            c_n[d] = view.shape[0]
            c_units[d] = &view[0] if view.shape[0] > 0 else NULL
            c_maps[d], c_nmaps[d] = NULL, 0
            if maps is not None and maps[d] is not None:
                view = maps[d]
                keep.append(view)
                c_nmaps[d] = view.shape[0]
                c_maps[d] = &view[0] if view.shape[0] > 0 else <const int64_t *>c_n
        cdef ndp_error err
        err.code = 0
        cdef ndp_box *box = NULL
        cdef int rc = ndp_box_plan(nd, c_chunks, c_blocks, c_grid, itemsize, c_units, c_n,
                                   c_maps, c_nmaps, max_slots, &box, &err)
        if rc < 0:
            _raise(rc, &err)
        if box == NULL:
            return None
        cdef BoxRead self = BoxRead.__new__(BoxRead)
        self.box = box
        return self


cdef class PointRead(_ReadPlan):
    """The plan of a point read (csrc/format/pointread.c): build with :meth:`plan`,
    fetch the chunks :attr:`chunk_numbers` names, then :meth:`read` (`scratch`: one
    block at least; more blocks, fewer batches when few chunks are touched)."""
    cdef ndp_points *pts

    def __dealloc__(self):
        ndp_points_free(self.pts)

    cdef int64_t _nslots(self):
        return ndp_points_nslots(self.pts)

    cdef int32_t _nchunks(self):
        return ndp_points_nchunks(self.pts)

    cdef int64_t _chunk(self, int32_t k, const int32_t **blocks, int32_t *nblocks):
        return ndp_points_chunk(self.pts, k, blocks, nblocks)

    cdef int _read(self, const void *const *chunks, const int32_t *sizes, void *scratch,
                   int64_t scratch_len, void *out, int64_t out_len, int nthreads,
                   ndp_error *err) noexcept nogil:
        return ndp_points_read(self.pts, chunks, sizes, scratch, scratch_len, out, out_len,
                               nthreads, err)

    @staticmethod
    def plan(coords, chunks, blocks, grid, int itemsize):
        """The plan for the points whose coordinates along dimension d are
        ``coords[d]`` (int64 arrays of one length)."""
        cdef int nd = len(coords), d
        cdef int64_t c_chunks[NDP_MAXDIM]
        cdef int64_t c_blocks[NDP_MAXDIM]
        cdef int64_t c_grid[NDP_MAXDIM]
        cdef const int64_t *c_coords[NDP_MAXDIM]
        _grid_args(nd, chunks, blocks, grid, c_chunks, c_blocks, c_grid)
        cdef const int64_t[::1] view
        cdef int64_t n = -1
        keep = []
        for d in range(nd):
            view = coords[d]
            keep.append(view)
            if n >= 0 and view.shape[0] != n:
                raise ParameterError("coordinate arrays of different lengths")
            n = view.shape[0]
            c_coords[d] = &view[0] if n > 0 else NULL
        cdef ndp_error err
        err.code = 0
        cdef ndp_points *pts = NULL
        cdef int rc = ndp_points_plan(nd, c_chunks, c_blocks, c_grid, itemsize, c_coords, n,
                                      &pts, &err)
        if rc < 0:
            _raise(rc, &err)
        cdef PointRead self = PointRead.__new__(PointRead)
        self.pts = pts
        return self

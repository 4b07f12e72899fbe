# The n-d layout of chunks (ndp_nd_set, csrc/include/ndpack.h): C-Blosc2's n-d codecs
# (ZFP, NDLZ) and filters (NDCELL, NDMEAN) see a block as an n-d array.  Included by
# _core.pyx.

cdef int _fill_nd(ndp_nd *nd, layout) except -1:
    cdef ndp_error err
    cdef int d
    nd.ndim = 0
    if layout is None:
        return 0
    chunkshape, blockshape = layout
    n = len(blockshape)
    if n != len(chunkshape) or n > NDP_MAXDIM or n < 1:
        raise ParameterError(f"n-d layout: chunks {tuple(chunkshape)} and blocks "
                             f"{tuple(blockshape)} (1 to {NDP_MAXDIM} dimensions)")
    nd.ndim = n
    for d in range(n):
        nd.chunkshape[d] = chunkshape[d]
        nd.blockshape[d] = blockshape[d]
    err.code = 0
    if ndp_nd_check(nd, &err) < 0:
        _raise(-4, &err)
    return 0


cdef class NdScope:
    """``with NdScope((chunkshape, blockshape)):`` -- the n-d layout (extended chunk
    shape, block shape; None: none) of the chunks this thread compresses and
    decompresses inside (each C call captures it when it starts); nested scopes
    restore the outer one.  One object may be entered by several threads at once."""

    cdef ndp_nd nd
    cdef readonly object layout

    def __init__(self, layout):
        _fill_nd(&self.nd, layout)
        self.layout = layout

    def __enter__(self):
        cdef ndp_error err
        err.code = 0
        if ndp_nd_push(&self.nd, &err) < 0:
            _raise(-4, &err)
        return self

    def __exit__(self, *exc):
        ndp_nd_pop()
        return False


def set_nd(layout):
    """Make `layout` -- ``(chunkshape, blockshape)``, or None -- this thread's n-d
    layout until the next call (outside any :class:`NdScope`)."""
    cdef ndp_nd nd
    cdef ndp_error err
    _fill_nd(&nd, layout)
    err.code = 0
    if ndp_nd_set(&nd, &err) < 0:
        _raise(-4, &err)


def codec_missing(int compcode):
    """Why the built-in codec `compcode` is not available ('' when it is)."""
    return ndp_codec_missing(compcode).decode()


def codec_is_nd(int compcode):
    """Whether `compcode` is one of C-Blosc2's n-d codecs (needs the block shape)."""
    return bool(ndp_codec_is_nd(compcode))


def filter_is_nd(int fid):
    """Whether filter `fid` is one of C-Blosc2's n-d filters (needs the block shape)."""
    return bool(ndp_filter_is_nd(fid))

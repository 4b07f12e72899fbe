# The n-d layout of chunks (ndp_nd_set, csrc/include/ndpack.h): C-Blosc2's n-d codecs
# (ZFP, NDLZ) and filters (NDCELL, NDMEAN) see a block as an n-d array.  Included by
# _core.pyx.

def set_nd(layout):
    """Make `layout` -- ``(chunkshape, blockshape)`` (extended chunk shape, block
    shape), or None -- the n-d layout of the chunks this thread encodes and decodes
    next (each C call captures it when it starts)."""
    cdef ndp_nd nd
    cdef ndp_error err
    cdef int d
    if layout is None:
        ndp_nd_set(NULL, NULL)
        return
    chunkshape, blockshape = layout
    n = len(blockshape)
    if n != len(chunkshape) or n > NDP_MAXDIM:
        raise ParameterError(f"n-d layout: chunks {tuple(chunkshape)} and blocks "
                             f"{tuple(blockshape)} (at most {NDP_MAXDIM} dimensions)")
    nd.ndim = n
    for d in range(n):
        nd.chunkshape[d] = chunkshape[d]
        nd.blockshape[d] = blockshape[d]
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

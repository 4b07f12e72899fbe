# Checksums in the C core (csrc/common/checksum*.c, csrc/format/blocksum.c), included by
# _core.pyx: crc32c of buffers, and the block checksums of chunks (a crc32c of a chunk's
# prefix and of each block's bytes) that partial reads check.


def crc32c(src, uint32_t value=0, bint reference=False):
    """crc32c of the bytes of `src` continuing from `value`, GIL released; the scalar
    reference kernel when `reference`."""
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef uint32_t out
    cdef size_t n = <size_t>buf.view.len
    with nogil:
        if reference:
            out = ndp_crc32c_scalar(value, buf.view.buf, n)
        else:
            out = ndp_crc32c(value, buf.view.buf, n)
    return out


def crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2):
    """crc32c of A + B from crc32c(A) = `crc1` and crc32c(B) = `crc2`, ``len(B) == len2``."""
    return ndp_crc32c_combine(crc1, crc2, len2)


def crc32c_kernel():
    """The crc32c kernel ndp_crc32c runs now ('avx512-vpclmul', 'avx2-vpclmul', 'sse4.2'
    or 'scalar')."""
    return ndp_crc32c_kernel().decode()


def block_sums(chunk):
    """``(crc, entry)``: the crc32c of the stored chunk `chunk` (bytes-like) and its
    block checksums -- bytes of little-endian uint32: the prefix's crc32c (header, block
    starts, dictionary), then each block's -- or None for a chunk without them
    (special, VL blocks, empty), both from one pass over the bytes, GIL released."""
    cdef _ReadBuffer buf = _ReadBuffer(chunk)
    cdef int32_t size = _checked_len(buf.view.len, "chunk")
    cdef ndp_error err
    err.code = 0
    cdef uint32_t crc = 0
    cdef int32_t r, cap
    with nogil:
        cap = ndp_block_sums(buf.view.buf, size, NULL, 0, NULL, &err)
    if cap < 0:
        _raise(cap, &err)
    out = bytearray(4 * cap)
    cdef _WriteBuffer obuf = _WriteBuffer(out)
    cdef uint32_t *op = <uint32_t *>obuf.view.buf if cap > 0 else NULL
    with nogil:
        r = ndp_block_sums(buf.view.buf, size, op, cap, &crc, &err)
    if r < 0:
        _raise(r, &err)
    return crc, (bytes(out[:4 * r]) if r > 0 else None)


def block_sums_check(chunk, const int32_t[::1] blocks, entry, bint prefix=True):
    """Check blocks `blocks` of `chunk` (block 0 too when DELTA needs it) and, when
    `prefix`, its header and block starts, against `entry` (:func:`block_sums`):
    FormatError naming the first part that differs."""
    cdef _ReadBuffer buf = _ReadBuffer(chunk)
    cdef int32_t size = _checked_len(buf.view.len, "chunk")
    cdef _ReadBuffer ebuf = _ReadBuffer(entry)
    cdef ndp_error err
    err.code = 0
    cdef int rc
    cdef int32_t n = <int32_t>blocks.shape[0]
    cdef const int32_t *bp = &blocks[0] if n > 0 else NULL
    with nogil:
        rc = ndp_block_sums_check(buf.view.buf, size, bp, n,
                                  <const uint32_t *>ebuf.view.buf,
                                  <int32_t>(ebuf.view.len // 4), prefix, &err)
    if rc != 0:
        _raise(rc, &err)

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The binding to the C core: buffers in, buffers out.

This is the only module that includes C headers.  The GIL is released around
every C call, and every C status goes through :func:`_raise` (one table), so no
call site can forget a check.  Higher layers use the Pythonic API in
``ndpack.chunks`` and ``ndpack.codecs``; this module is private.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_WRITABLE, PyBUF_ANY_CONTIGUOUS
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.ref cimport PyObject, Py_DECREF, Py_XDECREF
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from libc.stdint cimport int32_t, uint8_t, uint32_t, int64_t, uint64_t
from libc.string cimport memcpy

from ndpack.errors import (CallbackError, CodecError, FilterError, FormatError,
                           NdpackError, NdpackMemoryError, ParameterError, ThreadError)

cdef extern from "Python.h":
    PyObject *_bytes_new "PyBytes_FromStringAndSize"(const char *v, Py_ssize_t n)
    char *_bytes_data "PyBytes_AS_STRING"(PyObject *o)
    int _PyBytes_Resize(PyObject **bytes, Py_ssize_t newsize)
    Py_ssize_t Py_SIZE(object o)


cdef PyObject *_new_bytes(Py_ssize_t n, bint huge=True) except NULL:
    """A new, uninitialized bytes object (owned reference) to be filled by C.

    `huge`: ask for transparent huge pages (fewer page faults on first touch).  Not for
    compressed chunks: they are shrunk to their size (splitting the last huge page) and
    kept, and once memory is fragmented every huge-page fault of a madvised range waits
    for the kernel to compact memory (measured: a 4000^2 matmul spent 230-270 ms of
    system time in those faults with the hint, 27-50 ms without it)."""
    cdef PyObject *raw = _bytes_new(NULL, n)
    if raw == NULL:              # its MemoryError is set: raising another one while it
        return NULL              # is pending was a SystemError
    if huge:
        ndp_advise_hugepages(_bytes_data(raw), n)
    return raw


cdef object _take_bytes(PyObject *raw, Py_ssize_t n):
    """Shrink `raw` to n bytes and hand its reference over to Python."""
    if n != Py_SIZE(<object>raw) and _PyBytes_Resize(&raw, n) < 0:
        raise MemoryError("cannot resize output")
    obj = <object>raw
    Py_DECREF(obj)
    return obj

MAX_OVERHEAD = NDP_MAX_OVERHEAD
MAX_BUFFERSIZE = NDP_MAX_BUFFERSIZE

# One table from the C status codes (the header's ndp_status, through _core.pxd) to
# exception classes: every one an NdpackError and the builtin users expect.
_ERRORS = {
    NDP_ERR_FORMAT: FormatError,
    NDP_ERR_CODEC: CodecError,
    NDP_ERR_FILTER: FilterError,
    NDP_ERR_PARAM: ParameterError,
    NDP_ERR_DEST_SIZE: ParameterError,
    NDP_ERR_MEMORY: NdpackMemoryError,
    NDP_ERR_CALLBACK: CallbackError,
    NDP_ERR_THREAD: ThreadError,
}
#: the C status codes of errors, as the header numbers them
ERROR_CODES = tuple(sorted(_ERRORS, reverse=True))

# The exception raised by the last failing user codec/filter.  Callbacks run in
# pool threads, so this is process-wide (written and read with the GIL held).
_callback_exc = [None]


cdef int _raise(int code, ndp_error *err) except -1:
    msg = err.msg.decode("utf-8", "replace") if err.code != 0 else ndp_status_name(code).decode()
    cls = _ERRORS.get(code, NdpackError)
    cause = _callback_exc[0]
    _callback_exc[0] = None
    if cls is CallbackError and cause is not None:
        raise cls(f"{msg}: {cause!r}") from cause
    raise cls(msg)


def raise_status(int code):
    """Raise what a C call failing with status `code` raises (the table's class, the
    status name as message): the tests drive every code through it."""
    cdef ndp_error err
    err.code = 0
    _raise(code, &err)


cdef class _ReadBuffer:
    """A contiguous read-only view of any object with the buffer protocol."""
    cdef Py_buffer view
    cdef bint held

    def __cinit__(self, obj):
        self.held = False
        PyObject_GetBuffer(obj, &self.view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        self.held = True

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)


cdef class _WriteBuffer:
    """A contiguous writable view of any object with the buffer protocol."""
    cdef Py_buffer view
    cdef bint held

    def __cinit__(self, obj):
        self.held = False
        PyObject_GetBuffer(obj, &self.view, PyBUF_SIMPLE | PyBUF_WRITABLE | PyBUF_ANY_CONTIGUOUS)
        self.held = True

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)


cdef int32_t _checked_len(Py_ssize_t n, str what) except -1:
    if n > NDP_MAX_BUFFERSIZE:
        raise ParameterError(f"{what} of {n} bytes exceeds the chunk limit of "
                             f"{NDP_MAX_BUFFERSIZE} bytes; split it (SChunk does that)")
    return <int32_t>n


cdef int _fill_cparams(ndp_cparams *cp, int compcode, int compcode_meta, int clevel,
                       bint use_dict, int typesize, int nthreads, int blocksize,
                       int splitmode, filters, filters_meta) except -1:
    cdef int i
    if len(filters) != 6 or len(filters_meta) != 6:
        raise ParameterError("filters and filters_meta must have 6 slots")
    cp.compcode = compcode
    cp.compcode_meta = compcode_meta
    cp.clevel = clevel
    cp.use_dict = use_dict
    cp.typesize = typesize
    cp.nthreads = nthreads
    cp.blocksize = blocksize
    cp.splitmode = splitmode
    for i in range(NDP_NFILTERS):
        if not 0 <= filters[i] <= 255:
            raise FilterError(f"filter id {filters[i]} in slot {i} is not in 0..255")
        cp.filters[i] = filters[i]
        cp.filters_meta[i] = <uint8_t>(filters_meta[i] & 0xFF)
    return 0


def compress(src, int compcode, int compcode_meta, int clevel, bint use_dict, int typesize,
             int nthreads, int blocksize, int splitmode, filters, filters_meta,
             bint header_if_raw=False):
    """Compress a buffer into one chunk; returns bytes.  Parameters are validated in C.

    With `header_if_raw`, a chunk to be stored uncompressed comes back as its 32-byte
    header only (memcpyed flag set): the caller stores the source bytes after it."""
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef int32_t n = _checked_len(buf.view.len, "source")
    cdef ndp_cparams cp
    cdef ndp_error err
    err.code = 0
    _fill_cparams(&cp, compcode, compcode_meta, clevel, use_dict, typesize, nthreads,
                  blocksize, splitmode, filters, filters_meta)
    cdef int32_t cap = n + NDP_MAX_OVERHEAD
    cdef PyObject *raw = _new_bytes(cap, False)
    cdef char *dst = _bytes_data(raw)
    cdef int32_t r
    cdef int flags = NDP_RAW_HEADER_ONLY if header_if_raw else 0
    with nogil:
        r = ndp_compress_ex(&cp, buf.view.buf, n, dst, cap, flags, &err)
    if r < 0:
        Py_XDECREF(raw)
        _raise(r, &err)
    return _take_bytes(raw, r)


# a chunk encoded block by block from several threads (csrc/format/compress.c)
include "_parts.pxi"


cdef ndp_chunk_info _parse(_ReadBuffer buf) except *:
    cdef ndp_chunk_info ci
    cdef ndp_error err
    err.code = 0
    cdef int32_t n = buf.view.len if buf.view.len < NDP_MAX_BUFFERSIZE else NDP_MAX_BUFFERSIZE
    cdef int r = ndp_chunk_parse(buf.view.buf, n, &ci, &err)
    if r < 0:
        _raise(r, &err)
    return ci


def chunk_info(src):
    """Parse and validate a chunk header; returns a dict of its fields."""
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef ndp_chunk_info ci = _parse(buf)
    return {
        "version": ci.version, "versionlz": ci.versionlz, "flags": ci.flags,
        "typesize": ci.typesize, "nbytes": ci.nbytes, "blocksize": ci.blocksize,
        "cbytes": ci.cbytes, "header_len": ci.header_len, "extended": bool(ci.extended),
        "memcpyed": bool(ci.memcpyed), "dont_split": bool(ci.dont_split),
        "special": ci.special, "vlblocks": bool(ci.vlblocks), "use_dict": bool(ci.use_dict),
        "compcode": ci.compcode, "compcode_meta": ci.compcode_meta, "nblocks": ci.nblocks,
        "filters": [ci.filters[i] for i in range(NDP_NFILTERS)],
        "filters_meta": [ci.filters_meta[i] for i in range(NDP_NFILTERS)],
    }


def decompress(src, dst=None, int nthreads=1, bint crc=False):
    """Decode a chunk.  Returns bytes, or writes into the writable buffer `dst` and returns
    nbytes; with `crc` (and `dst`) returns instead the crc32c of all the bytes of `src`
    (the chunk and anything after it), each block's bytes hashed by the thread that
    decodes it."""
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef ndp_chunk_info ci = _parse(buf)
    cdef ndp_error err
    err.code = 0
    cdef int32_t r
    cdef uint32_t value = 0
    cdef int32_t srclen = ci.cbytes
    cdef _WriteBuffer wbuf
    cdef PyObject *raw
    cdef char *dp
    if dst is None:
        if crc:
            raise ParameterError("a crc32c is given only with a destination buffer")
        raw = _new_bytes(ci.nbytes)
        dp = _bytes_data(raw)
        with nogil:
            r = ndp_decompress(buf.view.buf, srclen, dp, ci.nbytes, nthreads, &err)
        if r < 0:
            Py_XDECREF(raw)
            _raise(r, &err)
        return _take_bytes(raw, r)
    wbuf = _WriteBuffer(dst)
    if wbuf.view.len < ci.nbytes:
        raise ParameterError(f"destination holds {wbuf.view.len} bytes, the chunk decodes "
                             f"to {ci.nbytes}")
    if crc:
        if buf.view.len > 0x7FFFFFFF:
            raise ParameterError(f"a chunk buffer of {buf.view.len} bytes (at most 2 GiB)")
        srclen = <int32_t>buf.view.len
    with nogil:
        if crc:
            r = ndp_decompress_crc(buf.view.buf, srclen, wbuf.view.buf, ci.nbytes, nthreads,
                                   &value, &err)
        else:
            r = ndp_decompress(buf.view.buf, srclen, wbuf.view.buf, ci.nbytes, nthreads, &err)
    if r < 0:
        _raise(r, &err)
    return value if crc else r


def getitem(src, int start, int nitems):
    """Decode items [start, start + nitems) of a chunk (only the blocks holding them)."""
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef ndp_chunk_info ci = _parse(buf)
    cdef ndp_error err
    err.code = 0
    if start < 0 or nitems < 0:
        raise ParameterError("start and nitems must be >= 0")
    cdef int64_t size = <int64_t>nitems * ci.typesize
    if size > ci.nbytes:
        raise ParameterError(f"{nitems} items of {ci.typesize} bytes exceed the chunk's "
                             f"{ci.nbytes} bytes")
    cdef PyObject *raw = _new_bytes(size)
    cdef char *dp = _bytes_data(raw)
    cdef int32_t r
    with nogil:
        r = ndp_getitem(buf.view.buf, ci.cbytes, start, nitems, dp, <int32_t>size, &err)
    if r < 0:
        Py_XDECREF(raw)
        _raise(r, &err)
    return _take_bytes(raw, r)


def decompress_blocks(src, blocks, int nthreads=1, dst=None, needs=None):
    """Decode the listed blocks; block blocks[i] lands at offset i * blocksize of the
    result (new bytes, or the writable buffer `dst`, then the byte count is returned).
    `needs`: bytes wanted of each block (its first ones; the rest of its slot is
    undefined), None for all."""
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef ndp_chunk_info ci = _parse(buf)
    cdef ndp_error err
    err.code = 0
    cdef Py_ssize_t nb = len(blocks), i
    import array
    idx = array.array("i", [int(b) for b in blocks])
    cdef int[::1] bview = idx
    cdef int[::1] nview
    cdef const int32_t *np_ = NULL
    if needs is not None:
        nidx = array.array("i", [int(b) for b in needs])
        if len(nidx) != nb:
            raise ParameterError(f"{len(nidx)} byte counts for {nb} blocks")
        if nb > 0:
            nview = nidx
            np_ = <const int32_t *>&nview[0]
    cdef int64_t size = nb * <int64_t>ci.blocksize
    if size > NDP_MAX_BUFFERSIZE:
        raise ParameterError("too many blocks requested at once")
    cdef _WriteBuffer wbuf
    cdef PyObject *raw = NULL
    cdef char *dp
    if dst is not None:
        wbuf = _WriteBuffer(dst)
        if wbuf.view.len < size:
            raise ParameterError(f"dst has {wbuf.view.len} bytes, {size} are needed")
        dp = <char *>wbuf.view.buf
    else:
        raw = _new_bytes(size)
        dp = _bytes_data(raw)
    cdef int32_t r
    cdef const int *bp = &bview[0] if nb > 0 else NULL
    with nogil:
        r = ndp_decompress_block_prefixes(buf.view.buf, ci.cbytes, <const int32_t *>bp, np_,
                                          <int32_t>nb, dp, <int32_t>size, nthreads, &err)
    if r < 0:
        Py_XDECREF(raw)
        _raise(r, &err)
    if dst is not None:
        return r
    return _take_bytes(raw, r)


def patch_blocks(src, blocks, raw, int clevel):
    """The chunk `src` with blocks `blocks` (increasing) replaced by the raw bytes of
    `raw` (block blocks[i] at offset i * blocksize), the others copied undecoded; or
    None when the chunk's kind does not allow it (re-encode it whole then)."""
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef ndp_chunk_info ci = _parse(buf)
    cdef _ReadBuffer rbuf = _ReadBuffer(raw)
    cdef ndp_error err
    err.code = 0
    import array
    idx = array.array("i", [int(b) for b in blocks])
    cdef int[::1] bview = idx
    cdef Py_ssize_t nb = len(idx)
    cdef int64_t cap = ci.cbytes + nb * (<int64_t>ci.blocksize + 5 * ci.typesize + 8)
    if cap > NDP_MAX_BUFFERSIZE + NDP_MAX_OVERHEAD:
        cap = NDP_MAX_BUFFERSIZE + NDP_MAX_OVERHEAD
    cdef PyObject *out = _new_bytes(cap, False)
    cdef char *dp = _bytes_data(out)
    cdef const int *bp = &bview[0] if nb > 0 else NULL
    cdef int32_t r
    with nogil:
        r = ndp_patch_blocks(buf.view.buf, ci.cbytes, clevel, <const int32_t *>bp,
                             <int32_t>nb, rbuf.view.buf, rbuf.view.len, dp, <int32_t>cap,
                             &err)
    if r <= 0:
        Py_XDECREF(out)
        if r == 0:
            return None
        _raise(r, &err)
    return _take_bytes(out, r)


def getitems(src, const int64_t[::1] starts, const int32_t[::1] counts, dst):
    """Decode runs of items ``[starts[i], starts[i] + counts[i])`` (each inside one
    block) one after another into the writable buffer `dst`; returns the bytes
    written."""
    if starts.shape[0] != counts.shape[0]:
        raise ParameterError(f"{starts.shape[0]} starts for {counts.shape[0]} counts")
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef int32_t size = _checked_len(buf.view.len, "chunk")
    cdef _WriteBuffer wbuf = _WriteBuffer(dst)
    cdef ndp_error err
    err.code = 0
    cdef int32_t n = <int32_t>starts.shape[0]
    cdef int64_t r
    if n == 0:
        return 0
    with nogil:
        r = ndp_getitems(buf.view.buf, size, &starts[0], &counts[0], n, wbuf.view.buf,
                         wbuf.view.len, &err)
    if r < 0:
        _raise(<int>r, &err)
    return r


def fd_read_blocks(int fd, int64_t pos, int32_t nblocks, int32_t min_cbytes,
                   const int32_t[::1] numbers, buf, entry=None):
    """Blocks `numbers` of the chunk at `pos` of file `fd` packed into the writable
    `buf` as a smaller valid chunk: ``(size, needed)``, size 0 when it does not
    apply (read the chunk whole) and `needed` > 0 when `buf` is too small.  `entry`
    (the chunk's block checksums, see :func:`block_sums`): what was read is checked
    against it, a mismatch raising FormatError naming the block."""
    cdef _WriteBuffer wbuf = _WriteBuffer(buf)
    cdef ndp_error err
    err.code = 0
    cdef int64_t needed = 0, r
    cdef int32_t n = <int32_t>numbers.shape[0]
    cdef const int32_t *np_ = &numbers[0] if n > 0 else NULL
    cdef _ReadBuffer ebuf
    cdef const uint32_t *ep = NULL
    cdef int32_t ne = 0
    if entry is not None:
        ebuf = _ReadBuffer(entry)
        ep = <const uint32_t *>ebuf.view.buf
        ne = <int32_t>(ebuf.view.len // 4)
    with nogil:
        r = ndp_fd_read_blocks_checked(fd, pos, nblocks, min_cbytes, np_, n, wbuf.view.buf,
                                       wbuf.view.len, &needed, ep, ne, &err)
    if r < 0:
        _raise(<int>r, &err)
    return r, needed


def special_chunk(int special, int nbytes, int typesize, int blocksize, value=None):
    """Build a special-value chunk (1 zeros, 2 NaN, 3 repeated value, 4 uninitialized)."""
    cdef ndp_error err
    err.code = 0
    cdef _ReadBuffer vbuf
    cdef const void *vp = NULL
    if value is not None:
        vbuf = _ReadBuffer(value)
        if vbuf.view.len != typesize:
            raise ParameterError(f"value has {vbuf.view.len} bytes, typesize is {typesize}")
        vp = vbuf.view.buf
    cap = 32 + (typesize if special == 3 else 0)
    out = PyBytes_FromStringAndSize(NULL, cap)
    cdef int32_t r = ndp_chunk_special(special, nbytes, typesize, blocksize, vp,
                                       PyBytes_AS_STRING(out), cap, &err)
    if r < 0:
        _raise(r, &err)
    return out


# ---- user codecs and filters -------------------------------------------------

_registered = {}   # id -> tuple of Python callables (kept alive here)


cdef object _uint8_view(const uint8_t *p, Py_ssize_t n, bint writable):
    import numpy as np
    if n == 0:
        return np.empty(0, dtype=np.uint8)
    cdef uint8_t[::1] mv = <uint8_t[:n]> p
    arr = np.asarray(mv)
    if not writable:
        arr.flags.writeable = False
    return arr


cdef int _codec_call(int which, const uint8_t *inp, int32_t inlen, uint8_t *out,
                     int32_t outlen, int meta, void *userdata) noexcept with gil:
    try:
        fn = (<tuple>userdata)[which]
        r = fn(_uint8_view(inp, inlen, False), _uint8_view(out, outlen, True), meta, None)
        return int(r) if r is not None else -1
    except BaseException as exc:
        _callback_exc[0] = exc
        return -1


cdef int _codec_encode(const uint8_t *inp, int32_t inlen, uint8_t *out, int32_t outlen,
                       int meta, void *userdata) noexcept nogil:
    return _codec_call(0, inp, inlen, out, outlen, meta, userdata)


cdef int _codec_decode(const uint8_t *inp, int32_t inlen, uint8_t *out, int32_t outlen,
                       int meta, void *userdata) noexcept nogil:
    return _codec_call(1, inp, inlen, out, outlen, meta, userdata)


cdef int _filter_call(int which, const uint8_t *inp, uint8_t *out, int32_t n, int meta,
                      void *userdata) noexcept with gil:
    try:
        fn = (<tuple>userdata)[which]
        fn(_uint8_view(inp, n, False), _uint8_view(out, n, True), meta, None)
        return 0
    except BaseException as exc:
        _callback_exc[0] = exc
        return -1


cdef int _filter_forward(const uint8_t *inp, uint8_t *out, int32_t n, int meta,
                         int32_t typesize, void *userdata) noexcept nogil:
    return _filter_call(0, inp, out, n, meta, userdata)


cdef int _filter_backward(const uint8_t *inp, uint8_t *out, int32_t n, int meta,
                          int32_t typesize, void *userdata) noexcept nogil:
    return _filter_call(1, inp, out, n, meta, userdata)


def register_codec(int id, int version, encoder, decoder):
    """Register Python callables as codec `id` (160..255)."""
    cdef ndp_error err
    err.code = 0
    fns = (encoder, decoder)
    cdef ndp_codec_fn enc = NULL
    cdef ndp_codec_fn dec = NULL
    if encoder is not None:
        enc = _codec_encode
    if decoder is not None:
        dec = _codec_decode
    cdef int r = ndp_register_codec(id, version, enc, dec, <void *>fns, &err)
    if r < 0:
        _raise(r, &err)
    _registered[("codec", id)] = fns


def register_filter(int id, forward, backward):
    """Register Python callables as filter `id` (160..255)."""
    cdef ndp_error err
    err.code = 0
    fns = (forward, backward)
    cdef ndp_filter_fn fw = NULL
    cdef ndp_filter_fn bw = NULL
    if forward is not None:
        fw = _filter_forward
    if backward is not None:
        bw = _filter_backward
    cdef int r = ndp_register_filter(id, fw, bw, <void *>fns, &err)
    if r < 0:
        _raise(r, &err)
    _registered[("filter", id)] = fns


# ---- configuration ------------------------------------------------------------

def codec_available(int compcode):
    return bool(ndp_codec_available(compcode))


def get_nthreads():
    return ndp_get_nthreads()


def set_nthreads(int n):
    """Set the default number of threads; returns the previous value."""
    return ndp_set_nthreads(n)


def isa():
    """Name of the SIMD instruction set the filters use."""
    return ndp_isa_name().decode()


def set_isa(name):
    """Force the filter ISA ('scalar', 'sse2', 'avx2'); raises if unavailable."""
    if ndp_set_isa(name.encode()) != 0:
        raise ParameterError(f"ISA {name!r} is not available on this CPU or build")


def vsincos(const double[::1] x, double[::1] y, bint cosine):
    """y = sin(x) (or cos(x)) for contiguous float64 buffers of one length, in C with
    the GIL released."""
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x has {x.shape[0]} items, y {y.shape[0]}")
    cdef int64_t n = x.shape[0]
    if n == 0:
        return
    with nogil:
        if cosine:
            ndp_vcos(&x[0], &y[0], n)
        else:
            ndp_vsin(&x[0], &y[0], n)


# the function numbers of csrc/math/vmath_fns.h (NDP_VM_*), unary then binary
VMATH_UNARY = ("exp", "log", "expm1", "log1p", "arctan", "tanh", "sinh", "cosh", "tan")
VMATH_BINARY = ("arctan2", "power")
VMATH_ISAS = ("scalar", "avx2", "avx512")


cdef int _vmath_args(int fn, tuple names, int64_t n, lengths) except -1:
    """Check a vmath call's function number and that every buffer has `n` items."""
    if any(m != n for m in lengths):
        raise ValueError(f"buffers of {', '.join(map(str, lengths))} items: lengths differ")
    if not 0 <= fn < len(names):
        raise ValueError(f"no vmath function {fn}")
    return 0


cdef int _vmath_done(int rc, int isa) except -1:
    if rc != 0:
        raise ValueError(f"vmath ISA {isa} is not available on this CPU")
    return 0


def vmath_unary(int fn, const double[::1] x, double[::1] y, int isa=-1):
    """y = f(x) for contiguous float64 buffers of one length (f the `fn`-th of
    VMATH_UNARY), in C with the GIL released; `isa` -1 for the current choice, else
    an index of VMATH_ISAS (ValueError if the CPU lacks it)."""
    cdef int64_t n = y.shape[0]
    cdef int rc = 0
    _vmath_args(fn, VMATH_UNARY, n, (x.shape[0], n))
    if n:
        with nogil:
            rc = ndp_vmath_unary(fn, &x[0], &y[0], n, isa)
    _vmath_done(rc, isa)


def vmath_binary(int fn, const double[::1] a, const double[::1] b, double[::1] y,
                 int isa=-1):
    """y = f(a, b) for contiguous float64 buffers of one length (f the `fn`-th of
    VMATH_BINARY), in C with the GIL released; `isa` as in vmath_unary."""
    cdef int64_t n = y.shape[0]
    cdef int rc = 0
    _vmath_args(fn, VMATH_BINARY, n, (a.shape[0], b.shape[0], n))
    if n:
        with nogil:
            rc = ndp_vmath_binary(fn, &a[0], &b[0], &y[0], n, isa)
    _vmath_done(rc, isa)


def vmath_binary_scalar(int fn, const double[::1] a, double b, double[::1] y, int isa=-1):
    """y = f(a, b) with one float `b` for every item of `a` (``a ** 1.2``), as
    vmath_binary otherwise."""
    cdef int64_t n = y.shape[0]
    cdef int rc = 0
    _vmath_args(fn, VMATH_BINARY, n, (a.shape[0], n))
    if n:
        with nogil:
            rc = ndp_vmath_binary_s(fn, &a[0], b, &y[0], n, isa)
    _vmath_done(rc, isa)


def vmath_isa():
    """The ISA of the float64 kernels now ('scalar', 'avx2' or 'avx512'): NDPACK_ISA
    and set_isa lower it (below 'avx2': 'scalar'; NDPACK_ISA=avx2 keeps AVX-512 off)."""
    return ndp_vmath_isa_name(ndp_vmath_isa()).decode()


def vmath_isas():
    """The ISAs of the float64 kernels this CPU runs (tests compare each with 'scalar')."""
    return tuple(name for i, name in enumerate(VMATH_ISAS) if ndp_vmath_has_isa(i))

_SUM_TYPES = {"f8": 0, "f4": 1, "i1": 2, "i2": 3, "i4": 4, "i8": 5, "u1": 6, "u2": 7,
              "u4": 8, "u8": 9, "b1": 10}


def sum_chunk(src, str intype, chunkshape, blockshape, valid, reduced, out,
              Py_ssize_t offset, ostride):
    """Add the valid elements of b2nd chunk `src` into `out` (float64, or int64/uint64
    for an integer sum), decoding block by block in the calling thread with the GIL
    released.  `intype` is the elements' NumPy kind+size code ('f8', 'i4', 'b1', ...),
    `reduced` the summed dimensions, `ostride` the output strides (elements) of every
    dimension and `offset` the output element of the chunk's first kept index."""
    cdef ndp_reduce_spec spec
    cdef ndp_error err
    err.code = 0
    cdef int nd = len(chunkshape), d
    if not 1 <= nd <= 16 or len(blockshape) != nd or len(valid) != nd or len(ostride) != nd:
        raise ParameterError(f"chunkshape, blockshape, valid and ostride need one entry "
                             f"per dimension (1 to 16)")
    if intype not in _SUM_TYPES:
        raise ParameterError(f"cannot sum elements of type {intype!r}")
    spec.ndim = nd
    spec.in_type = _SUM_TYPES[intype]
    spec.reduced = 0
    for d in range(nd):
        spec.chunkshape[d] = chunkshape[d]
        spec.blockshape[d] = blockshape[d]
        spec.valid[d] = valid[d]
        spec.ostride[d] = ostride[d]
        if d in reduced:
            spec.reduced |= (<uint32_t>1) << d
    cdef _WriteBuffer obuf = _WriteBuffer(out)
    kind = out.dtype.kind
    if out.dtype.itemsize != 8 or kind not in "fiu":
        raise ParameterError(f"out must be float64, int64 or uint64, not {out.dtype}")
    spec.acc_float = kind == "f"
    spec.out_offset = offset
    spec.out_len = obuf.view.len // 8
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef int32_t size = _checked_len(buf.view.len, "chunk")
    cdef int r
    with nogil:
        r = ndp_sum_chunk(buf.view.buf, size, &spec, obuf.view.buf, &err)
    if r < 0:
        _raise(r, &err)


def cumsum_inplace(x, str code, int64_t outer, int64_t n, int64_t inner, carry):
    """Running sums of the C-contiguous (outer, n, inner) buffer `x` along n, in place,
    starting from and updating `carry` (outer * inner elements); `code` is 'f8', 'f4'
    or 'u8' (int64/uint64, wrapping).  Bit-identical to np.cumsum."""
    cdef _WriteBuffer xb = _WriteBuffer(x)
    cdef _WriteBuffer cb = _WriteBuffer(carry)
    cdef int size = {"f8": 8, "f4": 4, "u8": 8}.get(code, 0)
    if size == 0:
        raise ParameterError(f"cannot accumulate elements of type {code!r}")
    if outer < 0 or n < 0 or inner < 0 or xb.view.len != outer * n * inner * size or \
            cb.view.len != outer * inner * size:
        raise ParameterError(f"x must hold {outer} x {n} x {inner} and carry {outer} x "
                             f"{inner} elements of {size} bytes")
    with nogil:
        if size == 4:
            ndp_cumsum_f32(<float *>xb.view.buf, outer, n, inner, <float *>cb.view.buf)
        elif code == "f8":
            ndp_cumsum_f64(<double *>xb.view.buf, outer, n, inner, <double *>cb.view.buf)
        else:
            ndp_cumsum_u64(<uint64_t *>xb.view.buf, outer, n, inner, <uint64_t *>cb.view.buf)


def library_version(int compcode):
    return ndp_codec_library_version(compcode).decode()


# box and point reads of n-dim arrays (csrc/format/boxread.c, pointread.c)
include "_reads.pxi"

# decode, evaluate and encode block by block (csrc/math/fused.c)
include "_fused.pxi"

# the n-d layout of chunks for C-Blosc2's n-d codecs and filters
include "_nd.pxi"


include "_checksums.pxi"


# raw zstd frames (zarr's and numcodecs' zstd codec), csrc/codecs/codecs.c
def zstd_decompress(src, dst):
    """Decode the zstd frame(s) `src` into the writable buffer `dst`, which they must
    fill exactly; returns its size.  FormatError for what is not a whole, valid frame,
    ParameterError when the frames hold another size."""
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef _WriteBuffer wbuf = _WriteBuffer(dst)
    cdef ndp_error err
    err.code = 0
    cdef int64_t r
    with nogil:
        r = ndp_zstd_decompress(buf.view.buf, buf.view.len, wbuf.view.buf, wbuf.view.len, &err)
    if r < 0:
        _raise(<int>r, &err)
    return r


def zstd_compress(src, int level=0, bint checksum=False, dst=None):
    """One zstd frame of `src` (its size in the header) at `level`, with a checksum
    when `checksum`: bytes, or written into the writable buffer `dst` (its size
    returned; ParameterError when it does not fit)."""
    cdef _ReadBuffer buf = _ReadBuffer(src)
    cdef ndp_error err
    err.code = 0
    cdef int64_t r, cap
    cdef _WriteBuffer wbuf
    cdef PyObject *raw
    cdef char *dp
    if dst is not None:
        wbuf = _WriteBuffer(dst)
        with nogil:
            r = ndp_zstd_compress(level, checksum, buf.view.buf, buf.view.len, wbuf.view.buf,
                                  wbuf.view.len, &err)
        if r < 0:
            _raise(<int>r, &err)
        return r
    cap = ndp_zstd_bound(buf.view.len)
    if cap < 0:
        raise ParameterError(f"{buf.view.len} bytes are too many for one zstd frame")
    raw = _new_bytes(cap, False)
    dp = _bytes_data(raw)
    with nogil:
        r = ndp_zstd_compress(level, checksum, buf.view.buf, buf.view.len, dp, cap, &err)
    if r < 0:
        Py_XDECREF(raw)
        _raise(<int>r, &err)
    return _take_bytes(raw, r)


def zstd_bound(Py_ssize_t n):
    """The most bytes one zstd frame of `n` input bytes can take."""
    cdef int64_t r = ndp_zstd_bound(n)
    if r < 0:
        raise ParameterError(f"{n} bytes are too many for one zstd frame")
    return r

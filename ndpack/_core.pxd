# The C API of csrc/include/ndpack.h, declared once for Cython (h5py's .pxd habit):
# _core.pyx (and the _reads.pxi it includes) see these names without declaring them.
# Array sizes come from the header's constants (NDP_ERRMSG_LEN, NDP_NFILTERS, NDP_MAXDIM),
# never literals: a change there reaches the binding.

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

cdef extern from "ndpack.h" nogil:
    enum: NDP_ERRMSG_LEN
    enum: NDP_NFILTERS
    enum: NDP_MAXDIM
    ctypedef enum ndp_status:       # the status codes: the binding's error table uses these
        NDP_OK
        NDP_ERR_FORMAT
        NDP_ERR_CODEC
        NDP_ERR_FILTER
        NDP_ERR_PARAM
        NDP_ERR_DEST_SIZE
        NDP_ERR_MEMORY
        NDP_ERR_CALLBACK
        NDP_ERR_THREAD
    ctypedef struct ndp_error:
        int code
        char msg[NDP_ERRMSG_LEN]
    ctypedef struct ndp_cparams:
        int compcode
        int compcode_meta
        int clevel
        int use_dict
        int32_t typesize
        int nthreads
        int32_t blocksize
        int splitmode
        uint8_t filters[NDP_NFILTERS]
        uint8_t filters_meta[NDP_NFILTERS]
    ctypedef struct ndp_chunk_info:
        int version, versionlz, flags, typesize
        int32_t nbytes, blocksize, cbytes
        int header_len, extended, memcpyed, dont_split, special, vlblocks, use_dict
        int compcode, compcode_meta
        int32_t nblocks, leftover
        uint8_t filters[NDP_NFILTERS]
        uint8_t filters_meta[NDP_NFILTERS]
    ctypedef int (*ndp_codec_fn)(const uint8_t *inp, int32_t inlen, uint8_t *out, int32_t outlen,
                                 int meta, void *userdata) noexcept
    ctypedef int (*ndp_filter_fn)(const uint8_t *inp, uint8_t *out, int32_t n, int meta,
                                  int32_t typesize, void *userdata) noexcept

    int NDP_MAX_OVERHEAD
    int NDP_MAX_BUFFERSIZE
    const char *ndp_status_name(int code)
    int ndp_chunk_parse(const void *src, int32_t srcsize, ndp_chunk_info *info, ndp_error *err)
    int32_t ndp_compress(const ndp_cparams *cp, const void *src, int32_t srcsize,
                         void *dst, int32_t dstsize, ndp_error *err)
    int NDP_RAW_HEADER_ONLY
    int32_t ndp_compress_ex(const ndp_cparams *cp, const void *src, int32_t srcsize,
                            void *dst, int32_t dstsize, int flags, ndp_error *err)
    ctypedef struct ndp_cparts:
        pass
    int ndp_cparts_begin(ndp_cparts **out, const ndp_cparams *cp, int32_t nbytes, void *dst,
                         int32_t dstsize, ndp_error *err)
    int32_t ndp_cparts_blocksize(const ndp_cparts *p)
    int32_t ndp_cparts_nblocks(const ndp_cparts *p)
    int ndp_cparts_add(ndp_cparts *p, const void *chunk_src, int32_t first, int32_t count,
                       ndp_error *err)
    int ndp_cparts_add_block(ndp_cparts *p, const void *block, int32_t j, ndp_error *err)
    int ndp_cparts_needs_source(ndp_cparts *p)
    void ndp_cparts_source_filled(ndp_cparts *p)
    int32_t ndp_cparts_end(ndp_cparts *p, const void *chunk_src, ndp_error *err)
    int ndp_cparts_crc(const ndp_cparts *p, uint32_t *crc)
    int32_t ndp_cparts_block_sums(const ndp_cparts *p, uint32_t *out, int32_t cap)
    void ndp_cparts_free(ndp_cparts *p)
    int32_t ndp_chunk_special(int special, int32_t nbytes, int32_t typesize, int32_t blocksize,
                              const void *value, void *dst, int32_t dstsize, ndp_error *err)
    int32_t ndp_decompress(const void *src, int32_t srcsize, void *dst, int32_t dstsize,
                           int nthreads, ndp_error *err)
    int32_t ndp_getitem(const void *src, int32_t srcsize, int32_t start, int32_t nitems,
                        void *dst, int32_t dstsize, ndp_error *err)
    int32_t ndp_decompress_crc(const void *src, int32_t srcsize, void *dst, int32_t dstsize,
                               int nthreads, uint32_t *crc, ndp_error *err)
    int32_t ndp_decompress_blocks(const void *src, int32_t srcsize, const int32_t *blocks,
                                  int32_t nblocks, void *dst, int32_t dstsize, int nthreads,
                                  ndp_error *err)
    int32_t ndp_decompress_block_prefixes(const void *src, int32_t srcsize,
                                          const int32_t *blocks, const int32_t *needs,
                                          int32_t nblocks, void *dst, int32_t dstsize,
                                          int nthreads, ndp_error *err)
    int32_t ndp_patch_blocks(const void *chunk, int32_t srcsize, int clevel,
                             const int32_t *ids, int32_t nids, const void *raw,
                             int64_t rawsize, void *dst, int32_t dstsize, ndp_error *err)
    int64_t ndp_getitems(const void *src, int32_t srcsize, const int64_t *starts,
                         const int32_t *counts, int32_t nruns, void *dst, int64_t dstsize,
                         ndp_error *err)
    int64_t ndp_fd_read_blocks_checked(int fd, int64_t pos, int32_t nblocks,
                                       int32_t min_cbytes, const int32_t *numbers, int32_t n,
                                       void *buf, int64_t cap, int64_t *needed,
                                       const uint32_t *entry, int32_t nentry, ndp_error *err)
    int32_t ndp_block_sums(const void *chunk, int32_t size, uint32_t *out, int32_t cap,
                           uint32_t *chunk_crc, ndp_error *err)
    int ndp_block_sums_check(const void *chunk, int32_t size, const int32_t *blocks, int32_t n,
                             const uint32_t *entry, int32_t nentry, int check_prefix,
                             ndp_error *err)
    uint32_t ndp_crc32c(uint32_t crc, const void *buf, size_t len)
    uint32_t ndp_crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2)
    uint32_t ndp_crc32c_scalar(uint32_t crc, const void *buf, size_t len)
    const char *ndp_crc32c_kernel()
    int ndp_register_codec(int id, int format_version, ndp_codec_fn encoder,
                           ndp_codec_fn decoder, void *userdata, ndp_error *err)
    int ndp_register_filter(int id, ndp_filter_fn forward, ndp_filter_fn backward,
                            void *userdata, ndp_error *err)
    int ndp_codec_available(int compcode)
    int ndp_get_nthreads()
    int ndp_set_nthreads(int n)
    const char *ndp_isa_name()
    int ndp_set_isa(const char *name)
    const char *ndp_codec_library_version(int compcode)
    ctypedef struct ndp_nd:
        int ndim
        int64_t chunkshape[NDP_MAXDIM]
        int64_t blockshape[NDP_MAXDIM]
    int ndp_nd_set(const ndp_nd *nd, ndp_error *err)
    int ndp_nd_push(const ndp_nd *nd, ndp_error *err)
    void ndp_nd_pop()
    int ndp_nd_check(const ndp_nd *nd, ndp_error *err)
    int ndp_codec_is_nd(int compcode)
    int ndp_filter_is_nd(int fid)
    const char *ndp_codec_missing(int compcode)
    void ndp_advise_hugepages(void *p, size_t n)
    void ndp_vsin(const double *x, double *y, int64_t n)
    void ndp_vcos(const double *x, double *y, int64_t n)
    ctypedef struct ndp_reduce_spec:
        int ndim
        int in_type
        int acc_float
        uint32_t reduced
        int64_t chunkshape[NDP_MAXDIM]
        int64_t blockshape[NDP_MAXDIM]
        int64_t valid[NDP_MAXDIM]
        int64_t ostride[NDP_MAXDIM]
        int64_t out_offset
        int64_t out_len
    int ndp_sum_chunk(const void *src, int32_t srcsize, const ndp_reduce_spec *spec,
                      void *out, ndp_error *err)
    void ndp_cumsum_f64(double *x, int64_t outer, int64_t n, int64_t inner, double *carry)
    void ndp_cumsum_f32(float *x, int64_t outer, int64_t n, int64_t inner, float *carry)
    void ndp_cumsum_u64(uint64_t *x, int64_t outer, int64_t n, int64_t inner,
                        uint64_t *carry)

    # box and point reads (csrc/format/boxread.c, pointread.c)
    ctypedef struct ndp_box:
        pass
    int ndp_box_plan(int ndim, const int64_t *chunks, const int64_t *blocks,
                     const int64_t *grid, int32_t itemsize, const int64_t *const *units,
                     const int64_t *nunits, const int64_t *const *maps, const int64_t *nmaps,
                     int64_t max_slots, ndp_box **out, ndp_error *err)
    int64_t ndp_box_nslots(const ndp_box *b)
    int64_t ndp_box_chunk_slots(const ndp_box *b)
    int32_t ndp_box_nchunks(const ndp_box *b)
    int64_t ndp_box_chunk(const ndp_box *b, int32_t k, const int32_t **blocks,
                          int32_t *nblocks)
    int ndp_box_read(const ndp_box *b, const void *const *chunks, const int32_t *sizes,
                     void *scratch, int64_t scratch_len, void *out, int64_t out_len,
                     int nthreads, ndp_error *err)
    void ndp_box_free(ndp_box *b)
    ctypedef struct ndp_points:
        pass
    int ndp_points_plan(int ndim, const int64_t *chunks, const int64_t *blocks,
                        const int64_t *grid, int32_t itemsize, const int64_t *const *coords,
                        int64_t npoints, ndp_points **out, ndp_error *err)
    int64_t ndp_points_nslots(const ndp_points *p)
    int32_t ndp_points_nchunks(const ndp_points *p)
    int64_t ndp_points_chunk(const ndp_points *p, int32_t k, const int32_t **blocks,
                             int32_t *nblocks)
    int ndp_points_read(const ndp_points *p, const void *const *chunks, const int32_t *sizes,
                        void *scratch, int64_t scratch_len, void *out, int64_t out_len,
                        int nthreads, ndp_error *err)
    void ndp_points_free(ndp_points *p)

# raw zstd frames (csrc/codecs/codecs.h): zarr's and numcodecs' zstd codec
cdef extern from "../codecs/codecs.h" nogil:
    int64_t ndp_zstd_decompress(const void *src, int64_t srclen, void *dst, int64_t dstlen,
                                ndp_error *err)
    int64_t ndp_zstd_compress(int level, int checksum, const void *src, int64_t srclen,
                              void *dst, int64_t dstcap, ndp_error *err)
    int64_t ndp_zstd_bound(int64_t srclen)

# fused per-block evaluation (csrc/math/fused.c)
cdef extern from "ndpack.h" nogil:
    enum: NDP_FOP_IN
    int ndp_fused_check(const int8_t *code, const int32_t *arg, int32_t ncode, int nin,
                        int nconst, ndp_error *err)
    int32_t ndp_fused_blocks(const int8_t *code, const int32_t *arg, int32_t ncode,
                             const double *consts, int nin, int typesize,
                             const void *const *chunks, const int32_t *sizes,
                             const int32_t *blocks, int32_t nblocks, void *dst,
                             int32_t nbytes, int32_t blocksize, ndp_cparts *enc,
                             ndp_error *err)


# float64 exp/log/... kernels (csrc/math/vmath_fns.h; the path is relative to csrc/include)
cdef extern from "../math/vmath_fns.h" nogil:
    int ndp_vmath_unary(int fn, const double *x, double *y, int64_t n, int isa)
    int ndp_vmath_binary(int fn, const double *a, const double *b, double *y, int64_t n,
                         int isa)
    int ndp_vmath_binary_s(int fn, const double *a, double b, double *y, int64_t n, int isa)
    int ndp_vmath_isa()
    int ndp_vmath_has_isa(int isa)
    const char *ndp_vmath_isa_name(int isa)

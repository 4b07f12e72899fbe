/* ndpack C core: the Blosc2 chunk format (FORMAT.md sections 1-3).
 *
 * Public API used by the Cython binding.  Every function that can fail
 * returns a negative code from ndp_status and, when `err` is not NULL, fills
 * it with a message naming what is wrong.  No function reads or writes
 * outside the buffers and lengths it is given.
 */
#ifndef NDPACK_H
#define NDPACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NDP_VERSION_STRING "0.1.0"

/* ---- status codes ---- */
typedef enum {
  NDP_OK = 0,
  NDP_ERR_FORMAT = -1,      /* input is not a valid chunk (corrupt, truncated, lying header) */
  NDP_ERR_CODEC = -2,       /* unknown or unavailable codec id */
  NDP_ERR_FILTER = -3,      /* unknown filter id or invalid filter parameter */
  NDP_ERR_PARAM = -4,       /* invalid argument from the caller */
  NDP_ERR_DEST_SIZE = -5,   /* destination buffer too small */
  NDP_ERR_MEMORY = -6,      /* allocation failed */
  NDP_ERR_CALLBACK = -7,    /* a user codec or filter reported failure */
  NDP_ERR_THREAD = -8,      /* thread creation failed */
} ndp_status;

#define NDP_ERRMSG_LEN 200
typedef struct {
  int code;
  char msg[NDP_ERRMSG_LEN];
} ndp_error;

const char *ndp_status_name(int code);

/* ---- identifiers (FORMAT.md 2.1 and 3.1) ---- */
enum {
  NDP_BLOSCLZ = 0, NDP_LZ4 = 1, NDP_LZ4HC = 2, NDP_ZLIB = 4, NDP_ZSTD = 5,
  /* C-Blosc2's n-d codecs (built into its library; ZFP through the system libzfp) */
  NDP_NDLZ = 32, NDP_ZFP_ACC = 33, NDP_ZFP_PREC = 34, NDP_ZFP_RATE = 35,
  NDP_USER_CODEC_MIN = 160
};
enum {
  NDP_NOFILTER = 0, NDP_SHUFFLE = 1, NDP_BITSHUFFLE = 2, NDP_DELTA = 3,
  NDP_TRUNC_PREC = 4, NDP_NDCELL = 32, NDP_NDMEAN = 33, NDP_BYTEDELTA_LEGACY = 34,
  NDP_BYTEDELTA = 35, NDP_INT_TRUNC = 36, NDP_USER_FILTER_MIN = 160
};
enum { NDP_ALWAYS_SPLIT = 1, NDP_NEVER_SPLIT = 2, NDP_AUTO_SPLIT = 3, NDP_FORWARD_COMPAT_SPLIT = 4 };
enum { NDP_SPECIAL_NONE = 0, NDP_SPECIAL_ZERO = 1, NDP_SPECIAL_NAN = 2,
       NDP_SPECIAL_VALUE = 3, NDP_SPECIAL_UNINIT = 4 };

#define NDP_MIN_HEADER 16
#define NDP_EXT_HEADER 32
#define NDP_MAX_OVERHEAD 32       /* cbytes <= nbytes + NDP_MAX_OVERHEAD always */
#define NDP_MAX_BUFFERSIZE (INT32_MAX - NDP_MAX_OVERHEAD)
#define NDP_MAX_BLOCKSIZE 536866816
#define NDP_MAX_TYPESIZE 255
#define NDP_NFILTERS 6
#define NDP_MAX_DICT 32768
#define NDP_MAXDIM 16

/* ---- parameters ---- */
typedef struct {
  int compcode;                   /* NDP_BLOSCLZ ... or a registered user codec */
  int compcode_meta;
  int clevel;                     /* 0..9; 0 stores memcpyed */
  int use_dict;
  int32_t typesize;               /* >= 1; written as 1 when > 255 */
  int nthreads;                   /* >= 1 */
  int32_t blocksize;              /* 0 = automatic (FORMAT.md 1.10) */
  int splitmode;                  /* NDP_*_SPLIT */
  uint8_t filters[NDP_NFILTERS];
  uint8_t filters_meta[NDP_NFILTERS];
} ndp_cparams;

/* python-blosc2's CParams() defaults (zstd, clevel 5, shuffle in slot 5). */
ndp_cparams ndp_cparams_default(void);

/* ---- chunk inspection ---- */
typedef struct {
  int version, versionlz, flags, typesize;
  int32_t nbytes, blocksize, cbytes;
  int header_len;                 /* 16 or 32 */
  int extended;
  int memcpyed;
  int dont_split;
  int special;                    /* NDP_SPECIAL_* */
  int vlblocks;
  int use_dict;
  int compcode;                   /* resolved codec id (compcode numbering) */
  int compcode_meta;
  int32_t nblocks;
  int32_t leftover;               /* bytes of the last block if partial, else 0 */
  uint8_t filters[NDP_NFILTERS];
  uint8_t filters_meta[NDP_NFILTERS];
} ndp_chunk_info;

/* Parse and validate a chunk header (the header only plus the length checks that
 * need no decoding).  `srcsize` is the number of bytes available. */
int ndp_chunk_parse(const void *src, int32_t srcsize, ndp_chunk_info *info, ndp_error *err);

/* ---- compression ---- */

/* Compress `srcsize` bytes.  `dstsize` >= srcsize + NDP_MAX_OVERHEAD always
 * suffices.  Returns cbytes (> 0) or a negative ndp_status. */
int32_t ndp_compress(const ndp_cparams *cp, const void *src, int32_t srcsize,
                     void *dst, int32_t dstsize, ndp_error *err);

/* ndp_compress with `flags`.  NDP_RAW_HEADER_ONLY: when the chunk is to be stored
 * uncompressed (clevel 0, incompressible data, or no gain), only its 32-byte header
 * is written to dst and NDP_EXT_HEADER (32) is returned: the caller stores the
 * `srcsize` source bytes right after it (saves a copy of data that did not shrink).
 * A returned size of 32 with srcsize > 0 and the memcpyed flag (byte 2, 0x02) set
 * means exactly that. */
#define NDP_RAW_HEADER_ONLY 1
int32_t ndp_compress_ex(const ndp_cparams *cp, const void *src, int32_t srcsize,
                        void *dst, int32_t dstsize, int flags, ndp_error *err);

/* A chunk encoded in parts: its blocks filtered and encoded by several callers (each
 * from its own thread, in any order) as soon as their bytes exist, e.g. while they are
 * in the cache of the core that produced them.  ndp_cparts_begin writes the header
 * into dst (dstsize >= nbytes + NDP_MAX_OVERHEAD) and returns 1 with *out set, 0 when
 * the chunk cannot be encoded in parts (clevel 0, fewer than 32 bytes, a dictionary,
 * DELTA: compress it whole with ndp_compress), or an error.  ndp_cparts_add encodes
 * blocks [first, first + count) of the chunk whose bytes start at chunk_src (the
 * whole chunk's buffer: only those blocks' bytes are read, and they must not change
 * until ndp_cparts_end); ndp_cparts_end, once every block was added, returns cbytes
 * (the memcpy fallback, which reads the whole chunk at chunk_src, and the zero
 * collapse included) or an error.  Blocks land in the order they were added: added in
 * increasing order, the chunk is byte for byte what ndp_compress with one thread
 * writes.  ndp_cparts_free releases the encoder (not dst). */
typedef struct ndp_cparts ndp_cparts;
int ndp_cparts_begin(ndp_cparts **out, const ndp_cparams *cp, int32_t nbytes, void *dst,
                     int32_t dstsize, ndp_error *err);
int32_t ndp_cparts_blocksize(const ndp_cparts *p);
/* Whether the chunk's codec or a filter is one of C-Blosc2's n-d ones. */
int ndp_cparts_nd(const ndp_cparts *p);
int32_t ndp_cparts_nblocks(const ndp_cparts *p);
int ndp_cparts_add(ndp_cparts *p, const void *chunk_src, int32_t first, int32_t count,
                   ndp_error *err);
/* ndp_cparts_add_block encodes block j from a copy of its bytes at `block` (not in
 * the chunk's buffer, which then lacks them).  When such blocks were added,
 * ndp_cparts_needs_source tells (once every block was added) whether ndp_cparts_end
 * will read the whole chunk's buffer (the data is stored uncompressed, or encoded again
 * whole near its limit): fill the buffer with the chunk's bytes and call
 * ndp_cparts_source_filled first, else ndp_cparts_end fails. */
int ndp_cparts_add_block(ndp_cparts *p, const void *block, int32_t j, ndp_error *err);
int ndp_cparts_needs_source(ndp_cparts *p);
void ndp_cparts_source_filled(ndp_cparts *p);
int32_t ndp_cparts_end(ndp_cparts *p, const void *chunk_src, ndp_error *err);
/* After ndp_cparts_end: 1 and the crc32c of the chunk's cbytes bytes in *crc when its
 * blocks were hashed as they were encoded (joined with ndp_crc32c_combine: the chunk is
 * not read again), 0 for the memcpy fallback, the zero collapse or a chunk encoded again
 * whole (hash it yourself). */
int ndp_cparts_crc(const ndp_cparts *p, uint32_t *crc);
/* After ndp_cparts_end with ndp_cparts_crc known: the chunk's block checksums (as
 * ndp_block_sums writes them, from the crcs taken while encoding) into out (cap >=
 * nblocks + 1); returns nblocks + 1, or 0 when the crc is not known. */
int32_t ndp_cparts_block_sums(const ndp_cparts *p, uint32_t *out, int32_t cap);
void ndp_cparts_free(ndp_cparts *p);

/* Fused evaluation (csrc/math/fused.c): for each block blocks[j] of an output chunk
 * of nbytes in blocks of blocksize bytes, decode that block of each of the nin operand
 * chunks (float64 items when typesize is 8, float32 when 4; the same block layout;
 * memcpyed chunks too), run the postfix program code/arg (NDP_FOP_*: IN k pushes
 * operand k, CONST k pushes consts[k] -- converted to the item type --, the binary
 * steps pop two values, NEG, SQUARE and SQRT one) on them into the block's place in
 * dst (the chunk buffer) or, when enc is given, into a block of scratch encoded from
 * there with ndp_cparts_add_block (dst is then not written: mind
 * ndp_cparts_needs_source).  The values are NumPy's operations in the item type, bit
 * for bit.  Returns 1, 0 when an operand chunk is not of that layout (special,
 * another block or item size: nothing written, use the general path), or an error.
 * ndp_fused_check validates a program once (indices, stack depth <= 16, one array
 * result). */
enum { NDP_FOP_IN = 1, NDP_FOP_CONST = 2, NDP_FOP_NEG = 3, NDP_FOP_ADD = 4, NDP_FOP_SUB = 5,
       NDP_FOP_MUL = 6, NDP_FOP_DIV = 7, NDP_FOP_SQUARE = 8, NDP_FOP_SQRT = 9 };
int ndp_fused_check(const int8_t *code, const int32_t *arg, int32_t ncode, int nin,
                    int nconst, ndp_error *err);
int32_t ndp_fused_blocks(const int8_t *code, const int32_t *arg, int32_t ncode,
                         const double *consts, int nin, int typesize,
                         const void *const *chunks, const int32_t *sizes,
                         const int32_t *blocks, int32_t nblocks, void *dst, int32_t nbytes,
                         int32_t blocksize, ndp_cparts *enc, ndp_error *err);

/* Replace blocks ids[0..nids) (increasing) of a chunk by new raw bytes (block ids[k]
 * at raw + k * blocksize) and write the resulting chunk to dst: the new blocks are
 * filtered and encoded with the chunk's own pipeline, codec and split mode at `clevel`,
 * the others copied as they are (never decoded).  Returns the new cbytes, 0 when the
 * chunk cannot be patched (special, memcpyed, VL blocks, dictionary, DELTA, no
 * extended header, unknown codec: re-encode it whole), or an error.  A chunk whose
 * blocks all become zero runs comes back as a zero special chunk.  dst needs at most
 * cbytes + nids * (blocksize + 5 * typesize + 8) bytes. */
int32_t ndp_patch_blocks(const void *chunk, int32_t srcsize, int clevel, const int32_t *ids,
                         int32_t nids, const void *raw, int64_t rawsize, void *dst,
                         int32_t dstsize, ndp_error *err);

/* Build a special chunk (zeros, NaN, repeated value, uninitialized) of
 * `nbytes` with element size `typesize`; `value` holds `typesize` bytes for
 * NDP_SPECIAL_VALUE.  `blocksize` is stored in the header (0 = automatic).
 * Returns cbytes or a negative ndp_status. */
int32_t ndp_chunk_special(int special, int32_t nbytes, int32_t typesize,
                          int32_t blocksize, const void *value,
                          void *dst, int32_t dstsize, ndp_error *err);

/* ---- decompression ---- */

/* Decode a whole chunk into dst (dstsize >= nbytes).  Returns nbytes or a
 * negative ndp_status. */
int32_t ndp_decompress(const void *src, int32_t srcsize, void *dst, int32_t dstsize,
                       int nthreads, ndp_error *err);
/* ndp_decompress that also gives the crc32c of the srcsize bytes of src in *crc,
 * each block's bytes hashed by the thread that decodes it, just before (one pass over
 * the compressed bytes instead of two).  On an error *crc is not set. */
int32_t ndp_decompress_crc(const void *src, int32_t srcsize, void *dst, int32_t dstsize,
                           int nthreads, uint32_t *crc, ndp_error *err);

/* Decode items [start, start+nitems) (items of the chunk's typesize) into dst.
 * Only the blocks that hold them are decoded.  Returns the bytes written. */
int32_t ndp_getitem(const void *src, int32_t srcsize, int32_t start, int32_t nitems,
                    void *dst, int32_t dstsize, ndp_error *err);

/* Decode the blocks listed in `blocks` (indices, any order, no duplicates
 * needed) writing block blocks[i] at dst + i*blocksize.  Returns the number of
 * bytes written (the end of the last written byte) or a negative status. */
int32_t ndp_decompress_blocks(const void *src, int32_t srcsize, const int32_t *blocks,
                              int32_t nblocks, void *dst, int32_t dstsize,
                              int nthreads, ndp_error *err);

/* As ndp_decompress_blocks, but only the first needs[i] bytes of block blocks[i] are
 * wanted (needs may be NULL: all): LZ4 and zlib streams stop decoding there when the
 * block is one stream or split plain-shuffle streams (then every stream stops at item
 * ceil(needs[i] / typesize)).  The rest of each block's slot in dst is undefined. */
int32_t ndp_decompress_block_prefixes(const void *src, int32_t srcsize, const int32_t *blocks,
                                      const int32_t *needs, int32_t nblocks, void *dst,
                                      int32_t dstsize, int nthreads, ndp_error *err);

/* Decode runs of items: items [starts[i], starts[i] + counts[i]) (each run inside one
 * block) one after another into dst.  Blocks split in one stream per byte whose only
 * filter is SHUFFLE are not decoded whole: raw streams give the run's bytes directly,
 * compressed ones are decoded alone, and only the run's items are unshuffled.
 * Returns the bytes written or a negative status. */
int64_t ndp_getitems(const void *src, int32_t srcsize, const int64_t *starts,
                     const int32_t *counts, int32_t nruns, void *dst, int64_t dstsize,
                     ndp_error *err);

/* Read the blocks `numbers` of the chunk stored at byte `pos` of the file `fd`
 * (a chunk of `nblocks` blocks) with positioned reads: header and block starts, the
 * dictionary, then only the wanted blocks' bytes (and block 0 when DELTA needs it),
 * packed into `buf` as a valid smaller chunk whose other blocks must not be decoded.
 * Returns the reduced chunk's size; 0 when it does not apply (special, memcpyed or
 * VL-block chunk, another block count, cbytes below `min_cbytes`, an unexpected
 * block start or a short read: read the chunk whole, whose decoding reports any
 * corruption), with *needed set to the bytes required when `cap` is too small; a
 * negative ndp_status for invalid arguments. */
int64_t ndp_fd_read_blocks(int fd, int64_t pos, int32_t nblocks, int32_t min_cbytes,
                           const int32_t *numbers, int32_t n, void *buf, int64_t cap,
                           int64_t *needed, ndp_error *err);
/* ndp_fd_read_blocks that checks what it read against the chunk's block checksums
 * `entry` (nentry = nblocks + 1 values, as ndp_block_sums writes them): the prefix as
 * stored and the wanted blocks' bytes (block 0 too with DELTA).  A mismatch is
 * NDP_ERR_FORMAT naming the block; entry NULL checks nothing. */
int64_t ndp_fd_read_blocks_checked(int fd, int64_t pos, int32_t nblocks, int32_t min_cbytes,
                                   const int32_t *numbers, int32_t n, void *buf, int64_t cap,
                                   int64_t *needed, const uint32_t *entry, int32_t nentry,
                                   ndp_error *err);

/* ---- block checksums (csrc/format/blocksum.c) ---- */

/* The block checksums of a chunk: out[0] = crc32c of its prefix (header, block starts,
 * dictionary: the bytes before its first block), out[1 + j] = crc32c of block j's
 * bytes as they lie in the chunk (a regular block's streams, size fields included; a
 * memcpyed chunk's blocksize bytes at j * blocksize).  Returns nblocks + 1, 0 for a
 * chunk without entries (special, VL blocks, empty, or a block outside the chunk), or
 * a negative ndp_status (cap < nblocks + 1).  *chunk_crc (when not NULL) is the
 * crc32c of all `size` bytes, joined from the entries when the blocks tile the chunk
 * in order (one pass over the bytes for both).  With out and chunk_crc NULL: the
 * number of entries alone (nothing hashed). */
int32_t ndp_block_sums(const void *chunk, int32_t size, uint32_t *out, int32_t cap,
                       uint32_t *chunk_crc, ndp_error *err);
/* Check the prefix (when check_prefix) and blocks blocks[0..n) of a chunk (block 0 too
 * when DELTA decodes it as reference) against `entry` (nentry values, as
 * ndp_block_sums writes them): NDP_OK, or NDP_ERR_FORMAT naming the first part that
 * does not match (or an entry of another block count). */
int ndp_block_sums_check(const void *chunk, int32_t size, const int32_t *blocks, int32_t n,
                         const uint32_t *entry, int32_t nentry, int check_prefix,
                         ndp_error *err);

/* ---- user codecs and filters (ids 160-255) ---- */
/* encoder: returns compressed size (> 0), 0 if it does not fit / not compressible,
 *          < 0 on failure.  decoder: returns decoded size or < 0. */
typedef int (*ndp_codec_fn)(const uint8_t *in, int32_t inlen, uint8_t *out, int32_t outlen,
                            int meta, void *userdata);
/* filters: transform n bytes, return 0 or < 0 on failure. */
typedef int (*ndp_filter_fn)(const uint8_t *in, uint8_t *out, int32_t n, int meta,
                             int32_t typesize, void *userdata);

int ndp_register_codec(int id, int format_version, ndp_codec_fn encoder,
                       ndp_codec_fn decoder, void *userdata, ndp_error *err);
int ndp_register_filter(int id, ndp_filter_fn forward, ndp_filter_fn backward,
                        void *userdata, ndp_error *err);
int ndp_codec_available(int compcode);

/* ---- the n-d layout of chunks (C-Blosc2's n-d codecs and filters) ----
 * ZFP, NDLZ, NDCELL and NDMEAN see a block as an n-d array: they need the block shape
 * (and the chunk shape) that C-Blosc2 reads from the "b2nd" metalayer of the
 * super-chunk.  The caller states it per thread: ndp_nd_set makes `nd` (copied; NULL
 * or ndim 0: none) the layout of the chunks the calling thread encodes and decodes
 * next, and every call (ndp_compress*, ndp_cparts_begin, ndp_decompress*, ndp_getitem*,
 * ndp_box_read, ndp_points_read, ndp_sum_chunk, ndp_patch_blocks) captures it when it
 * starts, so its worker threads use the caller's.  A chunk of such a codec or filter
 * decoded without a layout, or whose blocks do not hold prod(blockshape) items, is an
 * NDP_ERR_CODEC / NDP_ERR_FILTER naming it.  Chunk shapes are the extended ones (whole
 * blocks: b2nd pads chunks to a multiple of the block shape). */
typedef struct {
  int ndim;                        /* 0: no layout */
  int64_t chunkshape[NDP_MAXDIM];
  int64_t blockshape[NDP_MAXDIM];
} ndp_nd;
int ndp_nd_set(const ndp_nd *nd, ndp_error *err);
/* Scopes: ndp_nd_push makes `nd` this thread's layout and keeps the previous one (at
 * most 16 deep), ndp_nd_pop restores it.  ndp_nd_check validates a layout. */
int ndp_nd_push(const ndp_nd *nd, ndp_error *err);
void ndp_nd_pop(void);
int ndp_nd_check(const ndp_nd *nd, ndp_error *err);
/* This thread's layout (ndim 0 when none). */
const ndp_nd *ndp_nd_get(void);
/* Whether a codec / filter id is one of C-Blosc2's n-d ones (needs a layout). */
int ndp_codec_is_nd(int compcode);
int ndp_filter_is_nd(int id);
/* Why a built-in codec id is not available ("" when it is), e.g. ZFP in a build
 * without libzfp. */
const char *ndp_codec_missing(int compcode);

/* ---- threads ---- */
int ndp_get_nthreads(void);          /* process default */
int ndp_set_nthreads(int n);         /* returns the previous value */

/* ---- memory ---- */
/* Hint that a large buffer about to be written should use huge pages (no-op
 * where unsupported or for buffers under 4 MiB). */
void ndp_advise_hugepages(void *p, size_t n);
/* Whole-chunk decodes of at least this many bytes unshuffle into the destination
 * with stores that bypass the caches (where the ISA has them): an output much
 * larger than the last-level cache is evicted before anyone reads it, and the
 * streaming stores save reading every destination line first (LZ4 decode of a
 * 100 MB linspace chunk: 14.5 ms instead of 18.6).  Default: the larger of
 * 32 MiB and the L3 size Linux reports (/sys); measured here (L3 32 MiB) the
 * regular stores win up to 16 MiB and lose from 32 MiB.  `n` = 0 restores the
 * default, SIZE_MAX turns streaming off. */
size_t ndp_stream_min_bytes(void);
void ndp_set_stream_min_bytes(size_t n);

/* ---- vector math (csrc/math) ---- */
/* y[i] = sin(x[i]) / cos(x[i]) for float64, within about 1 ulp of the C library's
 * (AVX2+FMA kernel when the filters' ISA is avx2 and the CPU has FMA, else the scalar
 * reference, which gives the same bits). x and y may be the same array. */
void ndp_vsin(const double *x, double *y, int64_t n);
void ndp_vcos(const double *x, double *y, int64_t n);

/* ---- fused decode + sum (csrc/format/reduce.c) ---- */
/* Element types of ndp_sum_chunk (native byte order). */
enum { NDP_T_F64 = 0, NDP_T_F32, NDP_T_I8, NDP_T_I16, NDP_T_I32, NDP_T_I64,
       NDP_T_U8, NDP_T_U16, NDP_T_U32, NDP_T_U64, NDP_T_BOOL };
typedef struct {
  int ndim;                        /* 1..NDP_MAXDIM */
  int in_type;                     /* NDP_T_* of the chunk's elements */
  int acc_float;                   /* 1: add in double; 0: in 64-bit integers (wrapping) */
  uint32_t reduced;                /* bit d set: dimension d is summed over */
  int64_t chunkshape[NDP_MAXDIM];  /* the array's chunk shape */
  int64_t blockshape[NDP_MAXDIM];  /* its block shape (chunks hold whole blocks) */
  int64_t valid[NDP_MAXDIM];       /* elements of this chunk inside the array (<= chunk) */
  int64_t ostride[NDP_MAXDIM];     /* output strides in elements (kept dims; >= 0) */
  int64_t out_offset;              /* output element of the chunk's first kept index */
  int64_t out_len;                 /* elements of the output buffer */
} ndp_reduce_spec;

/* Decode a b2nd chunk block by block in the calling thread and add its valid
 * elements into `out` (doubles, or 64-bit integers when !acc_float): element at
 * chunk index i goes to out[out_offset + sum over kept d of i[d] * ostride[d]].
 * Blocks entirely in the padding are not decoded.  Returns NDP_OK or a negative
 * ndp_status. */
int ndp_sum_chunk(const void *src, int32_t srcsize, const ndp_reduce_spec *spec, void *out,
                  ndp_error *err);

/* ---- orthogonal reads (csrc/format/boxread.c) ---- */
/* The read of a box: sorted distinct positions units[d][0..nunits[d]) along every
 * dimension of an array of `ndim` dimensions in chunks of shape `chunks` (grid[d]
 * chunks along d) made of blocks of shape `blocks`, items of `itemsize` bytes. */
typedef struct ndp_box ndp_box;

/* Plan a box read: *out is the plan, or NULL (with NDP_OK) when it would decode
 * more than `max_slots` blocks.  The output takes, along dimension d, the positions
 * maps[d][0..nmaps[d]) (indices into units[d], in any order, repeats allowed), or
 * all of them in order when maps or maps[d] is NULL.  Free it with ndp_box_free. */
int ndp_box_plan(int ndim, const int64_t *chunks, const int64_t *blocks, const int64_t *grid,
                 int32_t itemsize, const int64_t *const *units, const int64_t *nunits,
                 const int64_t *const *maps, const int64_t *nmaps, int64_t max_slots,
                 ndp_box **out, ndp_error *err);
/* Blocks to decode (slots of the scratch buffer), the most of one chunk (the fewest a
 * scratch buffer must hold), touched chunks. */
int64_t ndp_box_nslots(const ndp_box *b);
int64_t ndp_box_chunk_slots(const ndp_box *b);
int32_t ndp_box_nchunks(const ndp_box *b);
/* Touched chunk k (C order of the touched chunks' grid): its chunk number, and the
 * numbers of its blocks to decode (*blocks, *nblocks); -1 if k is out of range. */
int64_t ndp_box_chunk(const ndp_box *b, int32_t k, const int32_t **blocks, int32_t *nblocks);
/* Decode the wanted blocks of the touched chunks (chunks[k], sizes[k] bytes: chunk
 * k, whole or holding at least those blocks; special and memcpyed chunks too), each
 * only up to its last wanted item, into `scratch` on up to `nthreads` threads, and
 * write the output (shape: the map lengths) to `out` in C order: batch by batch of whole chunks when the scratch
 * buffer holds fewer than all the blocks (it must hold ndp_box_chunk_slots). */
int ndp_box_read(const ndp_box *b, const void *const *chunks, const int32_t *sizes,
                 void *scratch, int64_t scratch_len, void *out, int64_t out_len, int nthreads,
                 ndp_error *err);
void ndp_box_free(ndp_box *b);

/* ---- point reads (csrc/format/pointread.c) ---- */
/* out[i] = the item at (coords[0][i], coords[1][i], ...) of such an array, for
 * npoints points in any order (repeats allowed). */
typedef struct ndp_points ndp_points;
int ndp_points_plan(int ndim, const int64_t *chunks, const int64_t *blocks, const int64_t *grid,
                    int32_t itemsize, const int64_t *const *coords, int64_t npoints,
                    ndp_points **out, ndp_error *err);
/* Distinct blocks holding points, touched chunks. */
int64_t ndp_points_nslots(const ndp_points *p);
int32_t ndp_points_nchunks(const ndp_points *p);
/* Touched chunk k (increasing chunk numbers): its number and its blocks to decode. */
int64_t ndp_points_chunk(const ndp_points *p, int32_t k, const int32_t **blocks,
                         int32_t *nblocks);
/* Decode the points' blocks (as ndp_box_read) batch by batch into `scratch` (at least
 * one block; more blocks, fewer batches) and write the points to out. */
int ndp_points_read(const ndp_points *p, const void *const *chunks, const int32_t *sizes,
                    void *scratch, int64_t scratch_len, void *out, int64_t out_len, int nthreads,
                    ndp_error *err);
void ndp_points_free(ndp_points *p);

/* ---- running sums (csrc/math/accumulate.c) ---- */
/* x is a C-contiguous (outer, n, inner) array: x[o, j, i] becomes carry[o, i] + x[o, 0, i]
 * + ... + x[o, j, i], added in that order (np.cumsum's bits); carry (outer * inner
 * elements) is read first and holds x[o, n-1, i] after.  The u64 version serves
 * int64 and uint64 (wrapping). */
void ndp_cumsum_f64(double *x, int64_t outer, int64_t n, int64_t inner, double *carry);
void ndp_cumsum_f32(float *x, int64_t outer, int64_t n, int64_t inner, float *carry);
void ndp_cumsum_u64(uint64_t *x, int64_t outer, int64_t n, int64_t inner, uint64_t *carry);

/* ---- checksums (csrc/common/checksum.c) ---- */
/* crc32c (Castagnoli) of len bytes continuing from `crc` (0 to start; pass the
 * previous result to hash a buffer in pieces): crc32c("123456789") = 0xE3069283.
 * ndp_crc32c uses the fastest kernel the CPU has (carry-less folding with AVX-512
 * VPCLMULQDQ, else SSE4.2 crc32 streams) unless the filters' ISA is lowered ("sse2":
 * the SSE4.2 streams, "scalar": the reference);
 * ndp_crc32c_scalar is the reference, ndp_crc32c_hw the fastest kernel (the reference
 * when the CPU lacks SSE4.2).  All give the same value. */
uint32_t ndp_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t ndp_crc32c_scalar(uint32_t crc, const void *buf, size_t len);
uint32_t ndp_crc32c_hw(uint32_t crc, const void *buf, size_t len);
int ndp_crc32c_hw_available(void);
/* What ndp_crc32c runs: "avx512-vpclmul" or "avx2-vpclmul" (carry-less folding),
 * "sse4.2" or "scalar". */
const char *ndp_crc32c_kernel(void);
/* crc32c of A || B from crc32c(A) = crc1 and crc32c(B) = crc2 with |B| = len2
 * (pieces hashed apart, e.g. on several threads, joined in order). */
uint32_t ndp_crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2);
/* One kernel by name (tests, benchmarks); the reference when it is not available. */
enum { NDP_CRC_SCALAR = 0, NDP_CRC_SSE42 = 1, NDP_CRC_FOLD = 2, NDP_CRC_FOLD256 = 3 };
int ndp_crc32c_has(int kernel);
uint32_t ndp_crc32c_with(int kernel, uint32_t crc, const void *buf, size_t len);

/* ---- configuration ---- */
const char *ndp_isa_name(void);      /* "scalar", "sse2", "avx2" */
int ndp_set_isa(const char *name);   /* tests: 0 ok, -1 not available */
const char *ndp_codec_library_version(int compcode);  /* static string */

#ifdef __cplusplus
}
#endif
#endif

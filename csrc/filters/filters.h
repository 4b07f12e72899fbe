/* Filter kernels of the Blosc2 chunk format (FORMAT.md section 2).
 *
 * Every kernel works on one block: it reads `n` bytes from `src` and writes `n`
 * bytes to `dst` (src != dst unless stated).  Kernels never fail: parameters are
 * validated by the caller (format/chunk.c) before a kernel runs.
 *
 * SHUFFLE, BITSHUFFLE and BYTEDELTA have one implementation per ISA; the scalar
 * one (generic.c) is the reference that the SIMD versions must equal byte for
 * byte, and that they reuse for their tails.  The ISA is chosen once, at first
 * use, from cpuid and the NDPACK_ISA environment variable.
 */
#ifndef NDPACK_FILTERS_H
#define NDPACK_FILTERS_H

#include <stddef.h>
#include <stdint.h>
#include "ndpack.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  NDP_ISA_SCALAR = 0,
  NDP_ISA_SSE2 = 1,
  NDP_ISA_AVX2 = 2,
  NDP_ISA_COUNT = 3
};

/* Byte shuffle with group size `g` (>= 1): out[j*m + i] = in[i*g + j] for the
 * m = n/g whole groups; the n - m*g trailing bytes are copied unchanged. */
typedef void (*ndp_shuffle_fn)(size_t g, size_t n, const uint8_t *src, uint8_t *dst);

/* Unshuffle of m whole groups (g >= 2) from planes at any addresses:
 * dst[i*g + j] = planes[j][i] for i < m, j < g.  Split streams decoded or stored
 * raw in a chunk are unshuffled in place, without gathering them first. */
typedef void (*ndp_unshuffle_planes_fn)(size_t g, size_t m, const uint8_t *const *planes,
                                        uint8_t *dst);

/* Bit shuffle with element size `t` (>= 1), FORMAT.md 2.3: the first
 * m = (n/t) - (n/t)%8 elements are bit-transposed, the rest copied. */
typedef void (*ndp_bitshuffle_fn)(size_t t, size_t n, const uint8_t *src, uint8_t *dst);

/* Byte delta over `s` (>= 1) channels of L = n/s bytes, FORMAT.md 2.6; the
 * n - s*L tail bytes are copied unchanged. */
typedef void (*ndp_bytedelta_fn)(size_t s, size_t n, const uint8_t *src, uint8_t *dst);

typedef struct {
  const char *name;               /* "scalar", "sse2", "avx2" */
  ndp_shuffle_fn shuffle;
  ndp_shuffle_fn unshuffle;
  ndp_bitshuffle_fn bitshuffle;
  ndp_bitshuffle_fn bitunshuffle;
  ndp_bytedelta_fn bytedelta_encode;
  ndp_bytedelta_fn bytedelta_decode;
  ndp_unshuffle_planes_fn unshuffle_planes;
  /* The same bytes, written with stores that bypass the caches where the ISA
   * has them (AVX2, 2/4/8 planes): for outputs much larger than the last-level
   * cache, which would be evicted before anyone reads them (ndp_stream_min_bytes). */
  ndp_unshuffle_planes_fn unshuffle_planes_stream;
} ndp_filter_kernels;

/* The kernels of one ISA, or NULL if this build or this CPU lacks it. */
const ndp_filter_kernels *ndp_filters_for_isa(int isa);

/* The kernels chosen for this process (thread-safe, computed once):
 * NDPACK_ISA=scalar|sse2|avx2 if set and available, else the best available.
 * ndp_filters_set_isa() overrides the choice at run time (tests); it returns
 * 0, or -1 if the ISA is not available. */
const ndp_filter_kernels *ndp_filters(void);
int ndp_filters_set_isa(int isa);
int ndp_filters_isa(void);          /* the ISA currently in use */
int ndp_cpu_has_isa(int isa);       /* 1 if CPU and build support it */

/* ---- filters without SIMD variants (scalar, in generic.c) ---- */

/* Legacy BYTEDELTA (id 34) decoder, SIMD variant of old writers: each channel
 * restarts "previous = 0" after its first 16*(L/16) bytes; tail copied. */
void ndp_bytedelta_legacy_decode(size_t s, size_t n, const uint8_t *src, uint8_t *dst);

/* DELTA (id 3), FORMAT.md 2.4.  Word size w = t if t in {1,2,4,8}, else 8 if
 * t%8 == 0, else 1; the q = n/w first words are processed, the rest copied.
 * `block_offset` is the block's offset in the chunk; when it is 0, `ref` is
 * ignored (the block is its own reference).  `ref` holds at least n bytes of
 * the chunk's raw (unfiltered) block 0.  src == dst is allowed for decode. */
void ndp_delta_encode(size_t t, size_t block_offset, const uint8_t *ref,
                      size_t n, const uint8_t *src, uint8_t *dst);
void ndp_delta_decode(size_t t, size_t block_offset, const uint8_t *ref,
                      size_t n, const uint8_t *src, uint8_t *dst);

/* TRUNC_PREC (id 4): t must be 4 or 8; returns 0, or -1 if (t, prec) invalid. */
int ndp_trunc_prec(size_t t, int8_t prec, size_t n, const uint8_t *src, uint8_t *dst);
/* INT_TRUNC (id 36): t in {1,2,4,8}; returns 0, or -1 if (t, prec) invalid. */
int ndp_int_trunc(size_t t, int8_t prec, size_t n, const uint8_t *src, uint8_t *dst);

/* NDCELL (id 32) and NDMEAN (id 33), C-Blosc2's n-d filters (ndcell.c): one block of
 * n bytes of the layout's block shape, items of ts bytes, `meta` the cell side.
 * NDP_OK or NDP_ERR_FILTER with `err` filled; in and out must not overlap.
 * ndp_ndcell_check validates the parameters for compression. */
int ndp_ndcell_check(int id, uint8_t meta, const ndp_nd *nd, int32_t ts, ndp_error *err);
int ndp_ndcell_forward(int id, uint8_t meta, const ndp_nd *nd, int32_t ts, const uint8_t *in,
                       uint8_t *out, int32_t n, ndp_error *err);
int ndp_ndcell_backward(int id, uint8_t meta, const ndp_nd *nd, int32_t ts, const uint8_t *in,
                        uint8_t *out, int32_t n, ndp_error *err);

#ifdef __cplusplus
}
#endif
#endif

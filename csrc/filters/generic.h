/* Internal header of the filter kernels: the scalar reference kernels
 * (generic.c) and the per-ISA tables (sse2.c, avx2.c) seen by dispatch.c.
 *
 * The "_part" kernels process a sub-range of elements with the layout of the
 * whole block, so that a SIMD kernel can do the bulk and hand the rest of the
 * range to the scalar reference:
 *
 *   shuffle:     elements [i0, i1) of an m-element block; `src` is the start
 *                of the elements, `dst` the start of plane 0 (planes are m
 *                bytes apart).  unshuffle is the inverse (src = planes).
 *   bitshuffle:  elements [i0, i1) (multiples of 8) of an m-element block
 *                (m a multiple of 8); `dst` is the start of bit-row 0, rows
 *                are m/8 bytes apart.  bitunshuffle is the inverse.
 *   bytedelta:   bytes [k0, k1) of one channel starting at src/dst; encode
 *                takes the previous byte from src[k0-1], decode from
 *                dst[k0-1] (0 when k0 == 0).
 */
#ifndef NDPACK_FILTERS_GENERIC_H
#define NDPACK_FILTERS_GENERIC_H

#include "filters.h"

#ifdef __cplusplus
extern "C" {
#endif

void ndp_shuffle_scalar(size_t g, size_t n, const uint8_t *src, uint8_t *dst);
void ndp_unshuffle_scalar(size_t g, size_t n, const uint8_t *src, uint8_t *dst);
void ndp_bitshuffle_scalar(size_t t, size_t n, const uint8_t *src, uint8_t *dst);
void ndp_bitunshuffle_scalar(size_t t, size_t n, const uint8_t *src, uint8_t *dst);
void ndp_bytedelta_encode_scalar(size_t s, size_t n, const uint8_t *src, uint8_t *dst);
void ndp_bytedelta_decode_scalar(size_t s, size_t n, const uint8_t *src, uint8_t *dst);

void ndp_shuffle_scalar_part(size_t g, size_t m, size_t i0, size_t i1,
                             const uint8_t *src, uint8_t *dst);
void ndp_unshuffle_scalar_part(size_t g, size_t m, size_t i0, size_t i1,
                               const uint8_t *src, uint8_t *dst);
/* Elements [i0, i1) from plane pointers (the planes layout of unshuffle_planes). */
void ndp_unshuffle_planes_scalar_part(size_t g, size_t i0, size_t i1,
                                      const uint8_t *const *p, uint8_t *dst);
void ndp_unshuffle_planes_scalar(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst);

/* Groups up to this size unshuffle through a table of plane pointers on the stack. */
#define NDP_MAX_PLANES 256

/* The plane pointers of a plane-major buffer: p[j] = src + j*m for j < g. */
static inline void ndp_planes_of(size_t g, size_t m, const uint8_t *src, const uint8_t **p) {
  for (size_t j = 0; j < g; j++) p[j] = src + j * m;
}

/* Unshuffle elements [0, m) of the plane-major buffer `src` with a planes kernel (the
 * scalar loop when g exceeds NDP_MAX_PLANES). */
typedef void (*ndp_planes_range_fn)(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst);
void ndp_unshuffle_through(ndp_planes_range_fn fn, size_t g, size_t m, const uint8_t *src,
                           uint8_t *dst);
void ndp_bitshuffle_scalar_part(size_t t, size_t m, size_t i0, size_t i1,
                                const uint8_t *src, uint8_t *dst);
void ndp_bitunshuffle_scalar_part(size_t t, size_t m, size_t i0, size_t i1,
                                  const uint8_t *src, uint8_t *dst);
/* The t == 1 bit transpose with an explicit row stride: `len` (a multiple of
 * 8) plane bytes <-> 8 bit-rows of len/8 bytes at rows + k*stride. */
void ndp_bitplane_fwd_scalar(const uint8_t *plane, size_t len, uint8_t *rows, size_t stride);
void ndp_bitplane_inv_scalar(const uint8_t *rows, size_t stride, size_t len, uint8_t *plane);

/* Bit shuffle (FORMAT.md 2.3) through one ISA's kernels, shared by sse2.c and avx2:
 * rounds of elements byte-transposed into planes on the stack (`range`, the
 * shuffle of m whole elements), each plane then bit-transposed into the rows
 * (`plane`); t == 1 goes straight to `plane`.  The scalar reference when there
 * is no whole group of 8 elements or t > NDP_BITSHUFFLE_TMP / 8. */
#define NDP_BITSHUFFLE_TMP 16384
typedef void (*ndp_bitplane_fwd_fn)(const uint8_t *plane, size_t len, uint8_t *rows,
                                    size_t stride);
typedef void (*ndp_bitplane_inv_fn)(const uint8_t *rows, size_t stride, size_t len,
                                    uint8_t *plane);
void ndp_bitshuffle_through(ndp_shuffle_fn range, ndp_bitplane_fwd_fn plane, size_t t,
                            size_t n, const uint8_t *src, uint8_t *dst);
void ndp_bitunshuffle_through(ndp_shuffle_fn range, ndp_bitplane_inv_fn plane, size_t t,
                              size_t n, const uint8_t *src, uint8_t *dst);

void ndp_bytedelta_encode_scalar_part(size_t k0, size_t k1, const uint8_t *src, uint8_t *dst);
void ndp_bytedelta_decode_scalar_part(size_t k0, size_t k1, const uint8_t *src, uint8_t *dst);

/* Per-ISA kernel tables.  ndp_filters_sse2()/ndp_filters_avx2() return NULL
 * when their file was not compiled for that ISA; dispatch.c calls them only
 * after cpuid confirmed the CPU supports it. */
const ndp_filter_kernels *ndp_filters_scalar(void);
const ndp_filter_kernels *ndp_filters_sse2(void);
const ndp_filter_kernels *ndp_filters_avx2(void);

#ifdef __cplusplus
}
#endif
#endif

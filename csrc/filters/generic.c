/* Scalar reference kernels of the Blosc2 filters (FORMAT.md section 2).
 *
 * These are the reference the SIMD kernels (sse2.c, avx2.c) must equal byte
 * for byte; the SIMD kernels call the "_part" functions for the ranges they
 * do not handle themselves.  Portable C99: no alignment, endianness or
 * aliasing assumptions (multi-byte words are read as little-endian).
 */
#include "generic.h"

#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define NDP_INLINE static inline __attribute__((always_inline))
#else
#define NDP_INLINE static inline
#endif

/* ------------------------------------------------------------------------ */
/* helpers                                                                   */

static void copy_bytes(uint8_t *dst, const uint8_t *src, size_t len) {
  if (len != 0 && dst != src) memmove(dst, src, len);
}

/* Bytes [from, n) copied unchanged (no pointer arithmetic when empty, so
 * that n == 0 with NULL buffers is fine). */
static void copy_tail(uint8_t *dst, const uint8_t *src, size_t from, size_t n) {
  if (from < n) copy_bytes(dst + from, src + from, n - from);
}

NDP_INLINE uint64_t ld64le(const uint8_t *p) {
  uint64_t x;
  memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  x = __builtin_bswap64(x);
#endif
  return x;
}

NDP_INLINE void st64le(uint8_t *p, uint64_t x) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  x = __builtin_bswap64(x);
#endif
  memcpy(p, &x, 8);
}

/* Native-order 8-byte load/store, for byte-wise operations (xor, and). */
NDP_INLINE uint64_t ld64(const uint8_t *p) {
  uint64_t x;
  memcpy(&x, p, 8);
  return x;
}

NDP_INLINE void st64(uint8_t *p, uint64_t x) { memcpy(p, &x, 8); }

/* Transpose the 8x8 bit matrix held in x: bit k of byte e becomes bit e of
 * byte k (bytes in little-endian order).  Three delta swaps. */
NDP_INLINE uint64_t transpose8x8(uint64_t x) {
  uint64_t t;
  t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
  x ^= t ^ (t << 28);
  return x;
}

/* ------------------------------------------------------------------------ */
/* SHUFFLE                                                                   */

/* Element-major loops with a compile-time group size (small g). */
NDP_INLINE void shuffle_fixed(size_t g, size_t m, size_t i0, size_t i1,
                              const uint8_t *src, uint8_t *dst) {
  for (size_t i = i0; i < i1; i++) {
    const uint8_t *s = src + i * g;
    for (size_t j = 0; j < g; j++) dst[j * m + i] = s[j];
  }
}

NDP_INLINE void unshuffle_fixed(size_t g, size_t i0, size_t i1, const uint8_t *const *p,
                                uint8_t *dst) {
  const uint8_t *s[8];                  /* a local copy: stores to dst cannot alias it */
  for (size_t j = 0; j < g; j++) s[j] = p[j];
  for (size_t i = i0; i < i1; i++) {
    uint8_t *d = dst + i * g;
    for (size_t j = 0; j < g; j++) d[j] = s[j][i];
  }
}

/* Plane-major loops over tiles of elements that stay in L1 (any g). */
#define NDP_TILE_BYTES 8192

static void shuffle_tiled(size_t g, size_t m, size_t i0, size_t i1,
                          const uint8_t *src, uint8_t *dst) {
  size_t tile = NDP_TILE_BYTES / g;
  if (tile < 16) tile = 16;
  for (size_t b0 = i0; b0 < i1; b0 += tile) {
    size_t b1 = (i1 - b0 > tile) ? b0 + tile : i1;
    for (size_t j = 0; j < g; j++) {
      const uint8_t *s = src + j;
      uint8_t *d = dst + j * m;
      for (size_t i = b0; i < b1; i++) d[i] = s[i * g];
    }
  }
}

static void unshuffle_tiled(size_t g, size_t i0, size_t i1, const uint8_t *const *p,
                            uint8_t *dst) {
  size_t tile = NDP_TILE_BYTES / g;
  if (tile < 16) tile = 16;
  for (size_t b0 = i0; b0 < i1; b0 += tile) {
    size_t b1 = (i1 - b0 > tile) ? b0 + tile : i1;
    for (size_t j = 0; j < g; j++) {
      const uint8_t *s = p[j];
      uint8_t *d = dst + j;
      for (size_t i = b0; i < b1; i++) d[i * g] = s[i];
    }
  }
}

void ndp_shuffle_scalar_part(size_t g, size_t m, size_t i0, size_t i1,
                             const uint8_t *src, uint8_t *dst) {
  switch (g) {
    case 2: shuffle_fixed(2, m, i0, i1, src, dst); break;
    case 3: shuffle_fixed(3, m, i0, i1, src, dst); break;
    case 4: shuffle_fixed(4, m, i0, i1, src, dst); break;
    case 8: shuffle_fixed(8, m, i0, i1, src, dst); break;
    default: shuffle_tiled(g, m, i0, i1, src, dst); break;
  }
}

void ndp_unshuffle_planes_scalar_part(size_t g, size_t i0, size_t i1,
                                      const uint8_t *const *p, uint8_t *dst) {
  switch (g) {
    case 2: unshuffle_fixed(2, i0, i1, p, dst); break;
    case 3: unshuffle_fixed(3, i0, i1, p, dst); break;
    case 4: unshuffle_fixed(4, i0, i1, p, dst); break;
    case 8: unshuffle_fixed(8, i0, i1, p, dst); break;
    default: unshuffle_tiled(g, i0, i1, p, dst); break;
  }
}

void ndp_unshuffle_planes_scalar(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst) {
  ndp_unshuffle_planes_scalar_part(g, 0, m, p, dst);
}

void ndp_unshuffle_through(ndp_planes_range_fn fn, size_t g, size_t m, const uint8_t *src,
                           uint8_t *dst) {
  if (g > NDP_MAX_PLANES) {
    ndp_unshuffle_scalar_part(g, m, 0, m, src, dst);
    return;
  }
  const uint8_t *p[NDP_MAX_PLANES];
  ndp_planes_of(g, m, src, p);
  fn(g, m, p, dst);
}

void ndp_unshuffle_scalar_part(size_t g, size_t m, size_t i0, size_t i1,
                               const uint8_t *src, uint8_t *dst) {
  if (g > NDP_MAX_PLANES) {                     /* no plane table: element by element */
    for (size_t i = i0; i < i1; i++)
      for (size_t j = 0; j < g; j++) dst[i * g + j] = src[j * m + i];
    return;
  }
  const uint8_t *p[NDP_MAX_PLANES];
  ndp_planes_of(g, m, src, p);
  ndp_unshuffle_planes_scalar_part(g, i0, i1, p, dst);
}

void ndp_shuffle_scalar(size_t g, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t m = (g > 1) ? n / g : 0;
  if (m == 0) {
    copy_bytes(dst, src, n);
    return;
  }
  ndp_shuffle_scalar_part(g, m, 0, m, src, dst);
  copy_tail(dst, src, m * g, n);
}

void ndp_unshuffle_scalar(size_t g, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t m = (g > 1) ? n / g : 0;
  if (m == 0) {
    copy_bytes(dst, src, n);
    return;
  }
  ndp_unshuffle_scalar_part(g, m, 0, m, src, dst);
  copy_tail(dst, src, m * g, n);
}

/* ------------------------------------------------------------------------ */
/* BITSHUFFLE                                                                */

/* Gather byte j of the 8 elements at s (element size t) into one word. */
NDP_INLINE uint64_t gather8(const uint8_t *s, size_t t) {
  uint64_t x = 0;
  for (unsigned e = 0; e < 8; e++) x |= (uint64_t)s[e * t] << (8 * e);
  return x;
}

NDP_INLINE void scatter8(uint8_t *d, size_t t, uint64_t x) {
  for (unsigned e = 0; e < 8; e++) d[e * t] = (uint8_t)(x >> (8 * e));
}

void ndp_bitplane_fwd_scalar(const uint8_t *plane, size_t len, uint8_t *rows,
                             size_t stride) {
  for (size_t o = 0; o + 8 <= len; o += 8) {
    uint64_t x = transpose8x8(ld64le(plane + o));
    for (unsigned k = 0; k < 8; k++) rows[k * stride + o / 8] = (uint8_t)(x >> (8 * k));
  }
}

void ndp_bitplane_inv_scalar(const uint8_t *rows, size_t stride, size_t len,
                             uint8_t *plane) {
  for (size_t o = 0; o + 8 <= len; o += 8) {
    uint64_t x = 0;
    for (unsigned k = 0; k < 8; k++) x |= (uint64_t)rows[k * stride + o / 8] << (8 * k);
    st64le(plane + o, transpose8x8(x));
  }
}

/* Elements per tile: the tile's bytes stay in L1 while its t planes are
 * transposed one after the other, so that only 8 bit-rows are written (or
 * read) at a time -- rows m/8 apart would otherwise compete for one L1 set. */
static size_t bit_tile(size_t t) {
  size_t c = 4096 / t;
  return c < 8 ? 8 : c & ~(size_t)7;
}

void ndp_bitshuffle_scalar_part(size_t t, size_t m, size_t i0, size_t i1,
                                const uint8_t *src, uint8_t *dst) {
  const size_t stride = m / 8; /* bytes per bit-row */
  if (t == 1) {
    ndp_bitplane_fwd_scalar(src + i0, i1 - i0, dst + i0 / 8, stride);
    return;
  }
  const size_t tile = bit_tile(t);
  for (size_t b0 = i0; b0 < i1; b0 += tile) {
    size_t b1 = (i1 - b0 > tile) ? b0 + tile : i1;
    for (size_t j = 0; j < t; j++) {
      uint8_t *rows = dst + 8 * j * stride;
      for (size_t i = b0; i < b1; i += 8) {
        uint64_t x = transpose8x8(gather8(src + i * t + j, t));
        for (unsigned k = 0; k < 8; k++) rows[k * stride + i / 8] = (uint8_t)(x >> (8 * k));
      }
    }
  }
}

void ndp_bitunshuffle_scalar_part(size_t t, size_t m, size_t i0, size_t i1,
                                  const uint8_t *src, uint8_t *dst) {
  const size_t stride = m / 8;
  if (t == 1) {
    ndp_bitplane_inv_scalar(src + i0 / 8, stride, i1 - i0, dst + i0);
    return;
  }
  const size_t tile = bit_tile(t);
  for (size_t b0 = i0; b0 < i1; b0 += tile) {
    size_t b1 = (i1 - b0 > tile) ? b0 + tile : i1;
    for (size_t j = 0; j < t; j++) {
      const uint8_t *rows = src + 8 * j * stride;
      for (size_t i = b0; i < b1; i += 8) {
        uint64_t x = 0;
        for (unsigned k = 0; k < 8; k++) x |= (uint64_t)rows[k * stride + i / 8] << (8 * k);
        scatter8(dst + i * t + j, t, transpose8x8(x));
      }
    }
  }
}

/* Elements a bit shuffle of n bytes transposes: the whole groups of 8. */
static size_t bit_whole(size_t t, size_t n) {
  size_t ne = (t > 0) ? n / t : 0;
  return ne - ne % 8;
}

void ndp_bitshuffle_scalar(size_t t, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t m = bit_whole(t, n);
  if (m == 0) {
    copy_bytes(dst, src, n);
    return;
  }
  ndp_bitshuffle_scalar_part(t, m, 0, m, src, dst);
  copy_tail(dst, src, m * t, n);
}

void ndp_bitunshuffle_scalar(size_t t, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t m = bit_whole(t, n);
  if (m == 0) {
    copy_bytes(dst, src, n);
    return;
  }
  ndp_bitunshuffle_scalar_part(t, m, 0, m, src, dst);
  copy_tail(dst, src, m * t, n);
}

/* Elements per round of the byte transpose into the stack buffer. */
static size_t bit_round_elems(size_t t) {
  size_t c = NDP_BITSHUFFLE_TMP / t;
  if (c >= 256) return c & ~(size_t)255;
  return c & ~(size_t)7; /* t <= 2048 keeps c >= 8 */
}

/* Whether the SIMD rounds take a bit shuffle of m whole elements of t bytes. */
static int bit_rounds_fit(size_t t, size_t m) { return m != 0 && t <= NDP_BITSHUFFLE_TMP / 8; }

void ndp_bitshuffle_through(ndp_shuffle_fn range, ndp_bitplane_fwd_fn plane, size_t t,
                            size_t n, const uint8_t *src, uint8_t *dst) {
  const size_t m = bit_whole(t, n), stride = m / 8;
  if (!bit_rounds_fit(t, m)) {
    ndp_bitshuffle_scalar(t, n, src, dst);
    return;
  }
  if (t == 1) {
    plane(src, m, dst, stride);
  } else {
    uint8_t tmp[NDP_BITSHUFFLE_TMP];
    for (size_t i0 = 0, C = bit_round_elems(t); i0 < m; i0 += C) {
      size_t c = (m - i0 < C) ? m - i0 : C;
      range(t, c, src + i0 * t, tmp);             /* elements -> byte planes, */
      for (size_t j = 0; j < t; j++)              /* each -> its 8 bit-rows */
        plane(tmp + j * c, c, dst + 8 * j * stride + i0 / 8, stride);
    }
  }
  copy_tail(dst, src, m * t, n);
}

void ndp_bitunshuffle_through(ndp_shuffle_fn range, ndp_bitplane_inv_fn plane, size_t t,
                              size_t n, const uint8_t *src, uint8_t *dst) {
  const size_t m = bit_whole(t, n), stride = m / 8;
  if (!bit_rounds_fit(t, m)) {
    ndp_bitunshuffle_scalar(t, n, src, dst);
    return;
  }
  if (t == 1) {
    plane(src, stride, m, dst);
  } else {
    uint8_t tmp[NDP_BITSHUFFLE_TMP];
    for (size_t i0 = 0, C = bit_round_elems(t); i0 < m; i0 += C) {
      size_t c = (m - i0 < C) ? m - i0 : C;
      for (size_t j = 0; j < t; j++)              /* bit-rows -> byte planes, */
        plane(src + 8 * j * stride + i0 / 8, stride, c, tmp + j * c);
      range(t, c, tmp, dst + i0 * t);             /* planes -> elements */
    }
  }
  copy_tail(dst, src, m * t, n);
}

/* ------------------------------------------------------------------------ */
/* BYTEDELTA                                                                 */

void ndp_bytedelta_encode_scalar_part(size_t k0, size_t k1, const uint8_t *src,
                                      uint8_t *dst) {
  if (k0 >= k1) return;
  uint8_t prev = (k0 > 0) ? src[k0 - 1] : 0;
  for (size_t k = k0; k < k1; k++) {
    uint8_t v = src[k];
    dst[k] = (uint8_t)(v - prev);
    prev = v;
  }
}

void ndp_bytedelta_decode_scalar_part(size_t k0, size_t k1, const uint8_t *src,
                                      uint8_t *dst) {
  if (k0 >= k1) return;
  uint8_t acc = (k0 > 0) ? dst[k0 - 1] : 0;
  for (size_t k = k0; k < k1; k++) {
    acc = (uint8_t)(acc + src[k]);
    dst[k] = acc;
  }
}

void ndp_bytedelta_encode_scalar(size_t s, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t L = (s > 0) ? n / s : 0;
  if (L == 0) {
    copy_bytes(dst, src, n);
    return;
  }
  for (size_t c = 0; c < s; c++)
    ndp_bytedelta_encode_scalar_part(0, L, src + c * L, dst + c * L);
  copy_tail(dst, src, s * L, n);
}

void ndp_bytedelta_decode_scalar(size_t s, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t L = (s > 0) ? n / s : 0;
  if (L == 0) {
    copy_bytes(dst, src, n);
    return;
  }
  for (size_t c = 0; c < s; c++)
    ndp_bytedelta_decode_scalar_part(0, L, src + c * L, dst + c * L);
  copy_tail(dst, src, s * L, n);
}

void ndp_bytedelta_legacy_decode(size_t s, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t L = (s > 0) ? n / s : 0;
  if (L == 0) {
    copy_bytes(dst, src, n);
    return;
  }
  size_t L16 = L - L % 16;
  for (size_t c = 0; c < s; c++) {
    const uint8_t *cs = src + c * L;
    uint8_t *cd = dst + c * L;
    /* running sum over the 16-byte groups, then a fresh one (previous = 0)
     * over the remaining L % 16 bytes */
    ndp_bytedelta_decode_scalar_part(0, L16, cs, cd);
    ndp_bytedelta_decode_scalar_part(0, L - L16, cs + L16, cd + L16);
  }
  copy_tail(dst, src, s * L, n);
}

/* ------------------------------------------------------------------------ */
/* DELTA                                                                     */

static size_t delta_word_size(size_t t) {
  if (t == 1 || t == 2 || t == 4 || t == 8) return t;
  if (t != 0 && t % 8 == 0) return 8;
  return 1;
}

/* dst[b] = a[b] ^ b2[b] for b < len (dst may equal a). */
static void xor_bytes(uint8_t *dst, const uint8_t *a, const uint8_t *b2, size_t len) {
  size_t b = 0;
  for (; b + 8 <= len; b += 8) st64(dst + b, ld64(a + b) ^ ld64(b2 + b));
  for (; b < len; b++) dst[b] = (uint8_t)(a[b] ^ b2[b]);
}

void ndp_delta_encode(size_t t, size_t block_offset, const uint8_t *ref,
                      size_t n, const uint8_t *src, uint8_t *dst) {
  size_t w = delta_word_size(t);
  size_t nb = (n / w) * w; /* bytes of the q = n/w whole words */
  if (block_offset != 0) {
    xor_bytes(dst, src, ref, nb);
  } else {
    /* dst[b] = src[b] ^ src[b-w] for b >= w, walking down so that the
     * kernel also works in place (src == dst). */
    size_t b = nb;
    while (b >= w + 8) {
      b -= 8;
      st64(dst + b, ld64(src + b) ^ ld64(src + b - w));
    }
    while (b > w) {
      b--;
      dst[b] = (uint8_t)(src[b] ^ src[b - w]);
    }
    copy_bytes(dst, src, nb < w ? nb : w);
  }
  copy_tail(dst, src, nb, n);
}

/* Prefix XOR with stride w bytes (w in {1,2,4,8}) inside a little-endian
 * 8-byte word: byte e becomes the XOR of bytes e, e-w, e-2w, ... */
NDP_INLINE uint64_t prefix_xor(uint64_t x, size_t w) {
  for (unsigned s = 8 * (unsigned)w; s < 64; s <<= 1) x ^= x << s;
  return x;
}

/* The last w bytes of x repeated over 8 bytes. */
NDP_INLINE uint64_t carry_of(uint64_t x, size_t w) {
  switch (w) {
    case 1: return (x >> 56) * 0x0101010101010101ULL;
    case 2: return (x >> 48) * 0x0001000100010001ULL;
    case 4: return (x >> 32) * 0x0000000100000001ULL;
    default: return x;
  }
}

void ndp_delta_decode(size_t t, size_t block_offset, const uint8_t *ref,
                      size_t n, const uint8_t *src, uint8_t *dst) {
  size_t w = delta_word_size(t);
  size_t nb = (n / w) * w;
  if (block_offset != 0) {
    xor_bytes(dst, src, ref, nb);
  } else {
    uint64_t carry = 0;
    size_t b = 0;
    for (; b + 8 <= nb; b += 8) {
      uint64_t x = prefix_xor(ld64le(src + b), w) ^ carry;
      st64le(dst + b, x);
      carry = carry_of(x, w);
    }
    for (; b < nb; b++) dst[b] = (uint8_t)(src[b] ^ (b >= w ? dst[b - w] : 0));
  }
  copy_tail(dst, src, nb, n);
}

/* ------------------------------------------------------------------------ */
/* TRUNC_PREC and INT_TRUNC                                                  */

/* AND every t-byte little-endian word of the first (n/t)*t bytes with a mask
 * clearing its z low bits (0 <= z < 8t, t in {1,2,4,8}); tail copied. */
static void clear_low_bits(size_t t, unsigned z, size_t n, const uint8_t *src,
                           uint8_t *dst) {
  uint8_t mb[8], pat[8];
  for (size_t i = 0; i < t; i++) {
    unsigned lo = 8 * (unsigned)i; /* bits lo..lo+7 of the word */
    if (z >= lo + 8)
      mb[i] = 0;
    else if (z <= lo)
      mb[i] = 0xFF;
    else
      mb[i] = (uint8_t)(0xFFu << (z - lo));
  }
  for (size_t i = 0; i < 8; i++) pat[i] = mb[i % t];
  uint64_t p64;
  memcpy(&p64, pat, 8);
  size_t nb = (n / t) * t;
  size_t b = 0;
  for (; b + 8 <= nb; b += 8) st64(dst + b, ld64(src + b) & p64);
  for (; b < nb; b++) dst[b] = (uint8_t)(src[b] & pat[b % 8]);
  copy_tail(dst, src, nb, n);
}

int ndp_trunc_prec(size_t t, int8_t prec, size_t n, const uint8_t *src, uint8_t *dst) {
  int mant;
  if (t == 4)
    mant = 23;
  else if (t == 8)
    mant = 52;
  else
    return -1;
  int p = prec;
  if (p > mant || -p > mant) return -1;
  int z = (p >= 0) ? mant - p : -p;
  if (z >= mant) return -1;
  clear_low_bits(t, (unsigned)z, n, src, dst);
  return 0;
}

int ndp_int_trunc(size_t t, int8_t prec, size_t n, const uint8_t *src, uint8_t *dst) {
  if (t != 1 && t != 2 && t != 4 && t != 8) return -1;
  int bits = 8 * (int)t;
  int p = prec;
  if (p > bits) return -1; /* as C-Blosc2: more bits than the type holds */
  int z = (p >= 0) ? bits - p : -p;
  if (z >= bits) return -1;
  clear_low_bits(t, (unsigned)z, n, src, dst);
  return 0;
}

/* ------------------------------------------------------------------------ */

static const ndp_filter_kernels scalar_kernels = {
    "scalar",
    ndp_shuffle_scalar,
    ndp_unshuffle_scalar,
    ndp_bitshuffle_scalar,
    ndp_bitunshuffle_scalar,
    ndp_bytedelta_encode_scalar,
    ndp_bytedelta_decode_scalar,
    ndp_unshuffle_planes_scalar,
    ndp_unshuffle_planes_scalar, /* (no streaming stores in C) */
};

const ndp_filter_kernels *ndp_filters_scalar(void) { return &scalar_kernels; }

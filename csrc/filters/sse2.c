/* SSE2 filter kernels: shuffle, bitshuffle, bytedelta (FORMAT.md 2.2, 2.3,
 * 2.6).  SSE2 instructions only.  Unaligned loads and stores; nothing is read
 * or written outside [src, src+n) and [dst, dst+n); whatever the vectors do
 * not cover is handed to the scalar reference kernels of generic.c.
 *
 * Byte transposes (avx2.c runs the same networks in both 128-bit lanes): an
 * array of 2^k vectors is viewed as a matrix whose byte address splits into
 * a vector index and a 4-bit position inside the vector.
 *  - split(a, b) (even bytes of a||b, odd bytes of a||b), built from
 *    and/shift + packus, moves a vector-index bit to the top of the position
 *    and the lowest position bit into the vector index.  k levels of splits
 *    over pairs (v, v ^ 1), (v, v ^ 2), ... turn 16 elements of 2^k bytes
 *    into 2^k planes of 16 bytes, in order (shuffle 2, 4, 8).
 *  - unpacklo/hi_epi8(a, b) moves a vector-index bit to the bottom of the
 *    position and the top position bit into the vector index.  Stages over
 *    pairs (v, v ^ 2^(k-1)), ..., (v, v ^ 1) turn 2^k planes into elements
 *    (unshuffle 2, 4, 8); four stages over 16 vectors are the 16x16
 *    transpose, used on 16-column tiles for every other g >= 3.
 * Bit transposes (bitshuffle): a plane of bytes is split into x[e] = bytes
 * 8c + e (the shuffle-8 network), then an 8x8 bit transpose across the 8
 * vectors (three rounds of masked shift/xor swaps) yields 16 bytes of each of
 * the 8 bit-rows; the inverse runs the same steps backwards.  Shorter pieces
 * use movemask.  Typesizes > 1 are byte-shuffled a few KiB at a time into a
 * stack buffer and bit-transposed plane by plane from there.
 */
#include "generic.h"

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)

#include <emmintrin.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define NDP_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define NDP_INLINE static __forceinline
#else
#define NDP_INLINE static inline
#endif
/* X(0) X(1) ... : fully unrolled register loops */
#define REP4(X) X(0) X(1) X(2) X(3)
#define REP8(X) REP4(X) X(4) X(5) X(6) X(7)
#define REP16(X) REP8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

#define LD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define ST(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))

/* (a, b) <- (even bytes of a||b, odd bytes of a||b) */
#define SPLIT(a, b)                                                         \
  do {                                                                      \
    /* (shifts first: GCC then keeps a and b in registers instead of      \
     * loading them twice, which costs a third of shuffle2's speed) */     \
    __m128i ah_ = _mm_srli_epi16((a), 8), bh_ = _mm_srli_epi16((b), 8);      \
    (a) = _mm_packus_epi16(_mm_and_si128(lo8, (a)), _mm_and_si128(lo8, (b))); \
    (b) = _mm_packus_epi16(ah_, bh_);                                       \
  } while (0)

/* (a, b) <- (interleave of the low halves, interleave of the high halves) */
#define ZIP(a, b)                                                           \
  do {                                                                      \
    __m128i lo_ = _mm_unpacklo_epi8((a), (b));                              \
    (b) = _mm_unpackhi_epi8((a), (b));                                      \
    (a) = lo_;                                                              \
  } while (0)

/* ------------------------------------------------------------------------ */
/* SHUFFLE: elements [0, m) of src -> planes dst + j*m.  Returns the number
 * of elements done (a multiple of 16); the caller does the rest. */

static size_t shuffle2(size_t m, const uint8_t *src, uint8_t *dst) {
  const __m128i lo8 = _mm_set1_epi16(0x00FF);
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    const uint8_t *s = src + 2 * i;
    __m128i a = LD(s), b = LD(s + 16);
    SPLIT(a, b);
    ST(dst + i, a);
    ST(dst + m + i, b);
  }
  return i;
}

static size_t shuffle4(size_t m, const uint8_t *src, uint8_t *dst) {
  const __m128i lo8 = _mm_set1_epi16(0x00FF);
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    const uint8_t *s = src + 4 * i;
    __m128i v0 = LD(s), v1 = LD(s + 16), v2 = LD(s + 32), v3 = LD(s + 48);
    SPLIT(v0, v1);
    SPLIT(v2, v3);
    SPLIT(v0, v2);
    SPLIT(v1, v3);
    ST(dst + i, v0);
    ST(dst + m + i, v1);
    ST(dst + 2 * m + i, v2);
    ST(dst + 3 * m + i, v3);
  }
  return i;
}

static size_t shuffle8(size_t m, const uint8_t *src, uint8_t *dst) {
  const __m128i lo8 = _mm_set1_epi16(0x00FF);
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    const uint8_t *s = src + 8 * i;
    __m128i v0 = LD(s), v1 = LD(s + 16), v2 = LD(s + 32), v3 = LD(s + 48);
    __m128i v4 = LD(s + 64), v5 = LD(s + 80), v6 = LD(s + 96), v7 = LD(s + 112);
    SPLIT(v0, v1);
    SPLIT(v2, v3);
    SPLIT(v4, v5);
    SPLIT(v6, v7);
    SPLIT(v0, v2);
    SPLIT(v1, v3);
    SPLIT(v4, v6);
    SPLIT(v5, v7);
    SPLIT(v0, v4);
    SPLIT(v1, v5);
    SPLIT(v2, v6);
    SPLIT(v3, v7);
    ST(dst + i, v0);
    ST(dst + m + i, v1);
    ST(dst + 2 * m + i, v2);
    ST(dst + 3 * m + i, v3);
    ST(dst + 4 * m + i, v4);
    ST(dst + 5 * m + i, v5);
    ST(dst + 6 * m + i, v6);
    ST(dst + 7 * m + i, v7);
  }
  return i;
}

/* 16x16 byte transpose of v[0..15] in place. */
NDP_INLINE void transpose16(__m128i *v) {
  ZIP(v[0], v[8]); ZIP(v[1], v[9]); ZIP(v[2], v[10]); ZIP(v[3], v[11]);
  ZIP(v[4], v[12]); ZIP(v[5], v[13]); ZIP(v[6], v[14]); ZIP(v[7], v[15]);
  ZIP(v[0], v[4]); ZIP(v[1], v[5]); ZIP(v[2], v[6]); ZIP(v[3], v[7]);
  ZIP(v[8], v[12]); ZIP(v[9], v[13]); ZIP(v[10], v[14]); ZIP(v[11], v[15]);
  ZIP(v[0], v[2]); ZIP(v[1], v[3]); ZIP(v[4], v[6]); ZIP(v[5], v[7]);
  ZIP(v[8], v[10]); ZIP(v[9], v[11]); ZIP(v[12], v[14]); ZIP(v[13], v[15]);
  ZIP(v[0], v[1]); ZIP(v[2], v[3]); ZIP(v[4], v[5]); ZIP(v[6], v[7]);
  ZIP(v[8], v[9]); ZIP(v[10], v[11]); ZIP(v[12], v[13]); ZIP(v[14], v[15]);
}

/* g >= 3 except 4, 8: 16x16 transposes of 16-column tiles (columns
 * j0..j0+15; the last tile of g > 16 overlaps the previous one and rewrites
 * equal bytes).  For g < 16 a row load/store covers 16 - g bytes of the
 * following elements, so the last row of a round must start 16 bytes before
 * the end of the range: (i + 15) * g + 16 <= m * g. */
NDP_INLINE size_t tile_j0(size_t g, size_t tt) {
  if (g <= 16) return 0;
  return (tt * 16 + 16 > g) ? g - 16 : tt * 16;
}

/* Rounds of 16 elements at i run while i + 16 <= tile_limit (m >= 32). */
NDP_INLINE size_t tile_limit(size_t g, size_t m) {
  return (g < 16) ? m + 1 - (16 + g - 1) / g : m;
}

static size_t shuffle_tiles(size_t g, size_t m, const uint8_t *src, uint8_t *dst) {
  const size_t lim = tile_limit(g, m);
  const size_t np = (g < 16) ? g : 16; /* planes per tile */
  const size_t ntile = (g + 15) / 16;
  size_t i = 0;
  /* Output streams m bytes apart compete for one L1 set when m is a multiple
   * of 4 KiB: with many planes, rounds of R elements go through an L1 buffer
   * and are copied out plane by plane. */
  enum { R = 256 };
  if (np > 8) {
    __m128i buf[16][R / 16];
    for (; i + R <= lim; i += R) {
      for (size_t tt = 0; tt < ntile; tt++) {
        size_t j0 = tile_j0(g, tt);
        for (size_t q = 0; q < R / 16; q++) {
          const uint8_t *s = src + (i + 16 * q) * g + j0;
          __m128i v[16];
#define L_(r) v[r] = LD(s + r * g);
          REP16(L_)
#undef L_
          transpose16(v);
#define S_(c) buf[c][q] = v[c];
          REP16(S_)
#undef S_
        }
        uint8_t *d = dst + j0 * m + i;
        for (size_t c = 0; c < np; c++)
          for (size_t q = 0; q < R / 16; q++) ST(d + c * m + 16 * q, buf[c][q]);
      }
    }
  }
  for (; i + 16 <= lim; i += 16) {
    for (size_t tt = 0; tt < ntile; tt++) {
      size_t j0 = tile_j0(g, tt);
      const uint8_t *s = src + i * g + j0;
      __m128i v[16];
#define L_(r) v[r] = LD(s + r * g);
      REP16(L_)
#undef L_
      transpose16(v);
      uint8_t *d = dst + j0 * m + i;
#define S_(c) if (c < np) ST(d + c * m, v[c]);
      REP16(S_)
#undef S_
    }
  }
  return i;
}

static void shuffle_range(size_t g, size_t m, const uint8_t *src, uint8_t *dst) {
  size_t done;
  switch (g) {
    case 2: done = shuffle2(m, src, dst); break;
    case 4: done = shuffle4(m, src, dst); break;
    case 8: done = shuffle8(m, src, dst); break;
    default: done = (g >= 3 && m >= 32) ? shuffle_tiles(g, m, src, dst) : 0; break;
  }
  ndp_shuffle_scalar_part(g, m, done, m, src, dst);
}

/* ---- UNSHUFFLE: planes src + j*m -> elements [0, m) of dst ---- */

static size_t unshuffle2(size_t m, const uint8_t *const *p, uint8_t *dst) {
  const uint8_t *s0 = p[0], *s1 = p[1];
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    __m128i a = LD(s0 + i), b = LD(s1 + i);
    ZIP(a, b);
    ST(dst + 2 * i, a);
    ST(dst + 2 * i + 16, b);
  }
  return i;
}

static size_t unshuffle4(size_t m, const uint8_t *const *p, uint8_t *dst) {
  const uint8_t *s[4] = {p[0], p[1], p[2], p[3]};
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    __m128i v0 = LD(s[0] + i), v1 = LD(s[1] + i);
    __m128i v2 = LD(s[2] + i), v3 = LD(s[3] + i);
    ZIP(v0, v2);
    ZIP(v1, v3);
    ZIP(v0, v1);
    ZIP(v2, v3);
    uint8_t *d = dst + 4 * i;
    ST(d, v0);
    ST(d + 16, v1);
    ST(d + 32, v2);
    ST(d + 48, v3);
  }
  return i;
}

/* Planes v[0..7] (16 elements) -> the 128 element bytes in v[0..7]. */
NDP_INLINE void unshuffle8_regs(__m128i *v) {
  ZIP(v[0], v[4]);
  ZIP(v[1], v[5]);
  ZIP(v[2], v[6]);
  ZIP(v[3], v[7]);
  ZIP(v[0], v[2]);
  ZIP(v[1], v[3]);
  ZIP(v[4], v[6]);
  ZIP(v[5], v[7]);
  ZIP(v[0], v[1]);
  ZIP(v[2], v[3]);
  ZIP(v[4], v[5]);
  ZIP(v[6], v[7]);
}

static size_t unshuffle8(size_t m, const uint8_t *const *p, uint8_t *dst) {
  const uint8_t *s[8] = {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]};
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    __m128i v[8];
#define L_(j) v[j] = LD(s[j] + i);
    REP8(L_)
#undef L_
    unshuffle8_regs(v);
#define S_(k) ST(dst + 8 * i + 16 * k, v[k]);
    REP8(S_)
#undef S_
  }
  return i;
}

static size_t unshuffle_tiles(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst) {
  const size_t lim = tile_limit(g, m);
  const size_t ntile = (g + 15) / 16;
  size_t i = 0;
  for (; i + 16 <= lim; i += 16) {
    for (size_t tt = 0; tt < ntile; tt++) {
      size_t j0 = tile_j0(g, tt);
      __m128i v[16];
      /* planes past g - 1 (g < 16) do not exist: repeat the last one */
#define L_(c) v[c] = LD(p[j0 + c < g ? j0 + c : g - 1] + i);
      REP16(L_)
#undef L_
      transpose16(v);
      /* in element order: a row's excess bytes are fixed by the next row */
      uint8_t *d = dst + i * g + j0;
#define S_(r) ST(d + r * g, v[r]);
      REP16(S_)
#undef S_
    }
  }
  return i;
}

static void unshuffle_planes_range(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst) {
  size_t done;
  switch (g) {
    case 2: done = unshuffle2(m, p, dst); break;
    case 4: done = unshuffle4(m, p, dst); break;
    case 8: done = unshuffle8(m, p, dst); break;
    default: done = (g >= 3 && m >= 32) ? unshuffle_tiles(g, m, p, dst) : 0; break;
  }
  ndp_unshuffle_planes_scalar_part(g, done, m, p, dst);
}

static void unshuffle_range(size_t g, size_t m, const uint8_t *src, uint8_t *dst) {
  ndp_unshuffle_through(unshuffle_planes_range, g, m, src, dst);
}

static void shuffle_sse2(size_t g, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t m = (g > 1) ? n / g : 0;
  if (m < 32) {
    ndp_shuffle_scalar(g, n, src, dst);
    return;
  }
  shuffle_range(g, m, src, dst);
  if (n > m * g) memcpy(dst + m * g, src + m * g, n - m * g);
}

static void unshuffle_planes_sse2(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst) {
  if (m < 32) ndp_unshuffle_planes_scalar(g, m, p, dst);
  else unshuffle_planes_range(g, m, p, dst);
}

static void unshuffle_sse2(size_t g, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t m = (g > 1) ? n / g : 0;
  if (m < 32) {
    ndp_unshuffle_scalar(g, n, src, dst);
    return;
  }
  unshuffle_range(g, m, src, dst);
  if (n > m * g) memcpy(dst + m * g, src + m * g, n - m * g);
}

/* ------------------------------------------------------------------------ */
/* BITSHUFFLE                                                                */

/* 8x8 bit transpose across 8 vectors: bit e of byte c of x[k] <-> bit k of
 * byte c of x[e].  Swaps 4x4, 2x2 then 1x1 blocks between vector pairs. */
#define BITSWAP(a, b, sh, mask)                                             \
  do {                                                                      \
    __m128i t_ = _mm_and_si128(_mm_xor_si128(_mm_srli_epi16((a), (sh)), (b)), (mask)); \
    (b) = _mm_xor_si128((b), t_);                                           \
    (a) = _mm_xor_si128((a), _mm_slli_epi16(t_, (sh)));                     \
  } while (0)

NDP_INLINE void bit_transpose8(__m128i *x) {
  const __m128i m4 = _mm_set1_epi8(0x0F), m2 = _mm_set1_epi8(0x33), m1 = _mm_set1_epi8(0x55);
  BITSWAP(x[0], x[4], 4, m4);
  BITSWAP(x[1], x[5], 4, m4);
  BITSWAP(x[2], x[6], 4, m4);
  BITSWAP(x[3], x[7], 4, m4);
  BITSWAP(x[0], x[2], 2, m2);
  BITSWAP(x[1], x[3], 2, m2);
  BITSWAP(x[4], x[6], 2, m2);
  BITSWAP(x[5], x[7], 2, m2);
  BITSWAP(x[0], x[1], 1, m1);
  BITSWAP(x[2], x[3], 1, m1);
  BITSWAP(x[4], x[5], 1, m1);
  BITSWAP(x[6], x[7], 1, m1);
}

/* One plane of `len` bytes (a multiple of 8) -> 8 bit-rows, row k at
 * rows + k*stride: movemask takes bit 7 of every byte, adding the vector to
 * itself brings the next bit up. */
static void bitplane_fwd(const uint8_t *p, size_t len, uint8_t *rows, size_t stride) {
  const __m128i lo8 = _mm_set1_epi16(0x00FF);
  size_t o = 0;
  /* 128 bytes: deinterleave into x[e] = bytes 8c + e (the shuffle8
   * network), then the bit transpose gives the 16-byte pieces of the rows */
  for (; o + 128 <= len; o += 128) {
    const uint8_t *s = p + o;
    __m128i x[8];
#define L_(k) x[k] = LD(s + 16 * k);
    REP8(L_)
#undef L_
    SPLIT(x[0], x[1]);
    SPLIT(x[2], x[3]);
    SPLIT(x[4], x[5]);
    SPLIT(x[6], x[7]);
    SPLIT(x[0], x[2]);
    SPLIT(x[1], x[3]);
    SPLIT(x[4], x[6]);
    SPLIT(x[5], x[7]);
    SPLIT(x[0], x[4]);
    SPLIT(x[1], x[5]);
    SPLIT(x[2], x[6]);
    SPLIT(x[3], x[7]);
    bit_transpose8(x);
#define S_(k) ST(rows + k * stride + o / 8, x[k]);
    REP8(S_)
#undef S_
  }
  for (; o + 32 <= len; o += 32) {
    __m128i a = LD(p + o), b = LD(p + o + 16);
    uint8_t *r = rows + o / 8;
    for (size_t k = 8; k-- > 0;) {
      uint32_t mk = (uint32_t)_mm_movemask_epi8(a) | ((uint32_t)_mm_movemask_epi8(b) << 16);
      memcpy(r + k * stride, &mk, 4);
      a = _mm_add_epi8(a, a);
      b = _mm_add_epi8(b, b);
    }
  }
  for (; o + 16 <= len; o += 16) {
    __m128i a = LD(p + o);
    uint8_t *r = rows + o / 8;
    for (size_t k = 8; k-- > 0;) {
      uint16_t mk = (uint16_t)_mm_movemask_epi8(a);
      memcpy(r + k * stride, &mk, 2);
      a = _mm_add_epi8(a, a);
    }
  }
  ndp_bitplane_fwd_scalar(p + o, len - o, rows + o / 8, stride);
}

/* 8 bit-rows (row k at rows + k*stride) -> one plane of `len` bytes. */
static void bitplane_inv(const uint8_t *rows, size_t stride, size_t len, uint8_t *p) {
  size_t o = 0;
  for (; o + 128 <= len; o += 128) {
    __m128i x[8];
#define L_(k) x[k] = LD(rows + k * stride + o / 8);
    REP8(L_)
#undef L_
    bit_transpose8(x); /* x[e] byte c = plane byte 8c + e */
    unshuffle8_regs(x);
#define S_(k) ST(p + o + 16 * k, x[k]);
    REP8(S_)
#undef S_
  }
  ndp_bitplane_inv_scalar(rows + o / 8, stride, len - o, p + o);
}

static void bitshuffle_sse2(size_t t, size_t n, const uint8_t *src, uint8_t *dst) {
  ndp_bitshuffle_through(shuffle_range, bitplane_fwd, t, n, src, dst);
}

static void bitunshuffle_sse2(size_t t, size_t n, const uint8_t *src, uint8_t *dst) {
  ndp_bitunshuffle_through(unshuffle_range, bitplane_inv, t, n, src, dst);
}

/* ------------------------------------------------------------------------ */
/* BYTEDELTA                                                                 */

static void bytedelta_encode_sse2(size_t s, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t L = (s > 0) ? n / s : 0;
  if (L == 0) {
    ndp_bytedelta_encode_scalar(s, n, src, dst);
    return;
  }
  for (size_t c = 0; c < s; c++) {
    const uint8_t *cs = src + c * L;
    uint8_t *cd = dst + c * L;
    cd[0] = cs[0];
    size_t k = 1;
    for (; k + 16 <= L; k += 16) ST(cd + k, _mm_sub_epi8(LD(cs + k), LD(cs + k - 1)));
    ndp_bytedelta_encode_scalar_part(k, L, cs, cd);
  }
  if (n > s * L) memcpy(dst + s * L, src + s * L, n - s * L);
}

/* Byte 15 of v in all 16 bytes. */
NDP_INLINE __m128i bcast15(__m128i v) {
  __m128i x = _mm_unpackhi_epi8(v, v);
  x = _mm_shufflehi_epi16(x, 0xFF);
  return _mm_shuffle_epi32(x, 0xFF);
}

static void bytedelta_decode_sse2(size_t s, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t L = (s > 0) ? n / s : 0;
  if (L == 0) {
    ndp_bytedelta_decode_scalar(s, n, src, dst);
    return;
  }
  for (size_t c = 0; c < s; c++) {
    const uint8_t *cs = src + c * L;
    uint8_t *cd = dst + c * L;
    __m128i acc = _mm_setzero_si128();
    size_t k = 0;
    for (; k + 16 <= L; k += 16) {
      __m128i v = LD(cs + k);
      v = _mm_add_epi8(v, _mm_slli_si128(v, 1));
      v = _mm_add_epi8(v, _mm_slli_si128(v, 2));
      v = _mm_add_epi8(v, _mm_slli_si128(v, 4));
      v = _mm_add_epi8(v, _mm_slli_si128(v, 8));
      ST(cd + k, _mm_add_epi8(v, acc));
      acc = _mm_add_epi8(acc, bcast15(v));
    }
    ndp_bytedelta_decode_scalar_part(k, L, cs, cd);
  }
  if (n > s * L) memcpy(dst + s * L, src + s * L, n - s * L);
}

static const ndp_filter_kernels sse2_kernels = {
    "sse2",
    shuffle_sse2,
    unshuffle_sse2,
    bitshuffle_sse2,
    bitunshuffle_sse2,
    bytedelta_encode_sse2,
    bytedelta_decode_sse2,
    unshuffle_planes_sse2,
    unshuffle_planes_sse2, /* (streaming stores: AVX2 only) */
};

const ndp_filter_kernels *ndp_filters_sse2(void) { return &sse2_kernels; }

#else /* no SSE2 in this build */

const ndp_filter_kernels *ndp_filters_sse2(void) { return 0; }

#endif

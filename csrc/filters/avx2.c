/* AVX2 filter kernels: shuffle, bytedelta and the kernel table (FORMAT.md 2.2,
 * 2.6; bitshuffle, 2.3, is in avx2_bitshuffle.c, the shared macros in
 * avx2_internal.h).  These files alone are compiled with -mavx2; their code
 * runs only after dispatch.c has seen AVX2 in cpuid.  Unaligned loads and stores; nothing is
 * read or written outside [src, src+n) and [dst, dst+n); whatever the vectors
 * do not cover is handed to the scalar reference kernels of generic.c.
 *
 * The byte and bit transposes are the networks of sse2.c (see the comment
 * there), run in both 128-bit lanes at once: for 32 elements of g bytes,
 * lane 0 of the g input vectors holds the first 16 elements (bytes 0..16g)
 * and lane 1 the next 16 (bytes 16g..32g).  Every step is lane-local, so
 * lane 0 of each output plane holds elements 0..15 and lane 1 elements
 * 16..31: the planes come out in order and are stored whole.  In addition,
 * g = 3 (and 5 for unshuffle) uses pshufb gathers, and prefix sums (bytedelta decode)
 * carry lane 0's total into lane 1.
 */
#include "avx2_internal.h"

#if defined(__AVX2__)

/* ------------------------------------------------------------------------ */
/* SHUFFLE: elements [0, m) of src -> planes dst + j*m.  Each returns the
 * number of elements done (a multiple of 32); the caller does the rest. */

/* Rounds of 64 elements give every plane a whole 64-byte line at once
 * (measured: markedly faster than 32-byte pieces, in cache and in memory);
 * one 32-element round may follow. */

/* whole loads: lanes hold elements 0-7 | 8-15 and 16-23 | 24-31, the planes
 * come out as 0-7, 16-23 | 8-15, 24-31 and are put in order by vpermq */
#define SHUF2_32(s, e, o)                                                   \
  do {                                                                      \
    __m256i a_ = LD(s), b_ = LD((s) + 32);                                  \
    SPLIT(a_, b_);                                                          \
    (e) = _mm256_permute4x64_epi64(a_, 0xD8);                               \
    (o) = _mm256_permute4x64_epi64(b_, 0xD8);                               \
  } while (0)

static size_t shuffle2(size_t m, const uint8_t *src, uint8_t *dst) {
  const __m256i lo8 = _mm256_set1_epi16(0x00FF);
  size_t i = 0;
  for (; i + 64 <= m; i += 64) {
    __m256i e0, o0, e1, o1;
    SHUF2_32(src + 2 * i, e0, o0);
    SHUF2_32(src + 2 * i + 64, e1, o1);
    ST(dst + i, e0);
    ST(dst + i + 32, e1);
    ST(dst + m + i, o0);
    ST(dst + m + i + 32, o1);
  }
  if (i + 32 <= m) {
    __m256i e0, o0;
    SHUF2_32(src + 2 * i, e0, o0);
    ST(dst + i, e0);
    ST(dst + m + i, o0);
    i += 32;
  }
  return i;
}

/* 32 elements of 4 bytes at s -> planes v0..v3 */
#define SHUF4_32(s, v0, v1, v2, v3)                                         \
  do {                                                                      \
    (v0) = LD2((s), (s) + 64);                                              \
    (v1) = LD2((s) + 16, (s) + 80);                                         \
    (v2) = LD2((s) + 32, (s) + 96);                                         \
    (v3) = LD2((s) + 48, (s) + 112);                                        \
    SPLIT(v0, v1);                                                          \
    SPLIT(v2, v3);                                                          \
    SPLIT(v0, v2);                                                          \
    SPLIT(v1, v3);                                                          \
  } while (0)

static size_t shuffle4(size_t m, const uint8_t *src, uint8_t *dst) {
  const __m256i lo8 = _mm256_set1_epi16(0x00FF);
  size_t i = 0;
  for (; i + 64 <= m; i += 64) {
    __m256i v0, v1, v2, v3, w0, w1, w2, w3;
    SHUF4_32(src + 4 * i, v0, v1, v2, v3);
    SHUF4_32(src + 4 * i + 128, w0, w1, w2, w3);
    ST(dst + i, v0);
    ST(dst + i + 32, w0);
    ST(dst + m + i, v1);
    ST(dst + m + i + 32, w1);
    ST(dst + 2 * m + i, v2);
    ST(dst + 2 * m + i + 32, w2);
    ST(dst + 3 * m + i, v3);
    ST(dst + 3 * m + i + 32, w3);
  }
  if (i + 32 <= m) {
    __m256i v0, v1, v2, v3;
    SHUF4_32(src + 4 * i, v0, v1, v2, v3);
    ST(dst + i, v0);
    ST(dst + m + i, v1);
    ST(dst + 2 * m + i, v2);
    ST(dst + 3 * m + i, v3);
    i += 32;
  }
  return i;
}

static size_t shuffle8(size_t m, const uint8_t *src, uint8_t *dst) {
  size_t i = 0;
  for (; i + 64 <= m; i += 64) {
    __m256i v[8], w[8];
    shuf8_32(src + 8 * i, v);
    shuf8_32(src + 8 * i + 256, w);
#define S_(j) ST(dst + j * m + i, v[j]); ST(dst + j * m + i + 32, w[j]);
    REP8(S_)
#undef S_
  }
  if (i + 32 <= m) {
    __m256i v[8];
    shuf8_32(src + 8 * i, v);
#define S_(j) ST(dst + j * m + i, v[j]);
    REP8(S_)
#undef S_
    i += 32;
  }
  return i;
}

/* 16x16 byte transpose in each lane of v[0..15]. */
NDP_INLINE void transpose16(__m256i *v) {
  ZIP(v[0], v[8]); ZIP(v[1], v[9]); ZIP(v[2], v[10]); ZIP(v[3], v[11]);
  ZIP(v[4], v[12]); ZIP(v[5], v[13]); ZIP(v[6], v[14]); ZIP(v[7], v[15]);
  ZIP(v[0], v[4]); ZIP(v[1], v[5]); ZIP(v[2], v[6]); ZIP(v[3], v[7]);
  ZIP(v[8], v[12]); ZIP(v[9], v[13]); ZIP(v[10], v[14]); ZIP(v[11], v[15]);
  ZIP(v[0], v[2]); ZIP(v[1], v[3]); ZIP(v[4], v[6]); ZIP(v[5], v[7]);
  ZIP(v[8], v[10]); ZIP(v[9], v[11]); ZIP(v[12], v[14]); ZIP(v[13], v[15]);
  ZIP(v[0], v[1]); ZIP(v[2], v[3]); ZIP(v[4], v[5]); ZIP(v[6], v[7]);
  ZIP(v[8], v[9]); ZIP(v[10], v[11]); ZIP(v[12], v[13]); ZIP(v[14], v[15]);
}

/* ---- any other group size ---- */

/* g = 3: plane j of 16 elements gathers byte j of each from the
 * g input vectors of a lane with one pshufb per vector (mask byte e selects
 * byte e*g + j when it lies in that vector, else 0x80 gives zero). */
static size_t shuffle_pshufb(size_t g, size_t m, const uint8_t *src, uint8_t *dst) {
  if (m < 64) return 0;
  __m256i mask[5][5], v[5];
  for (size_t j = 0; j < g; j++)
    for (size_t k = 0; k < g; k++) {
      uint8_t b[16];
      for (size_t e = 0; e < 16; e++) {
        size_t p = e * g + j;
        b[e] = (uint8_t)((p >> 4) == k ? (p & 15) : 0x80);
      }
      mask[j][k] = _mm256_broadcastsi128_si256(LD128(b));
    }
  size_t i = 0;
  for (; i + 32 <= m; i += 32) {
    const uint8_t *s = src + g * i;
    for (size_t k = 0; k < g; k++) v[k] = LD2(s + 16 * k, s + 16 * g + 16 * k);
    for (size_t j = 0; j < g; j++) {
      __m256i acc = _mm256_shuffle_epi8(v[0], mask[j][0]);
      for (size_t k = 1; k < g; k++)
        acc = _mm256_or_si256(acc, _mm256_shuffle_epi8(v[k], mask[j][k]));
      ST(dst + j * m + i, acc);
    }
  }
  return i;
}

/* Inverse, g in {3, 5}: output vector k of a lane (element bytes 16k..16k+15)
 * takes byte p from plane (16k+p) % g at element (16k+p) / g. */
static size_t unshuffle_pshufb(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst) {
  if (m < 64) return 0;
  __m256i mask[5][5], v[5];
  for (size_t k = 0; k < g; k++)
    for (size_t j = 0; j < g; j++) {
      uint8_t b[16];
      for (size_t p = 0; p < 16; p++) {
        size_t q = 16 * k + p;
        b[p] = (uint8_t)(q % g == j ? q / g : 0x80);
      }
      mask[k][j] = _mm256_broadcastsi128_si256(LD128(b));
    }
  const uint8_t *s[5];
  for (size_t j = 0; j < g; j++) s[j] = p[j];
  size_t i = 0;
  for (; i + 32 <= m; i += 32) {
    for (size_t j = 0; j < g; j++) v[j] = LD(s[j] + i);
    uint8_t *d = dst + g * i;
    for (size_t k = 0; k < g; k++) {
      __m256i acc = _mm256_shuffle_epi8(v[0], mask[k][0]);
      for (size_t j = 1; j < g; j++)
        acc = _mm256_or_si256(acc, _mm256_shuffle_epi8(v[j], mask[k][j]));
      ST2(d + 16 * k, d + 16 * g + 16 * k, acc);
    }
  }
  return i;
}

/* g >= 5: 16x16 transposes of 16-column tiles (columns j0..j0+15; the last
 * tile of g > 16 overlaps the previous one and rewrites equal bytes).  For
 * g < 16 a row load/store covers 16 - g bytes of the following elements, so
 * the last row of a round must start 16 bytes before the end of the range:
 * (i + 31) * g + 16 <= m * g.  (Measured: tiles beat pshufb from g = 6 on,
 * and for the shuffle of g = 5.) */
NDP_INLINE size_t tile_j0(size_t g, size_t tt) {
  if (g <= 16) return 0;
  return (tt * 16 + 16 > g) ? g - 16 : tt * 16;
}

/* Rounds of 32 elements at i run while i + 32 <= tile_limit (m >= 64). */
NDP_INLINE size_t tile_limit(size_t g, size_t m) {
  return (g < 16) ? m + 1 - (16 + g - 1) / g : m;
}

static size_t shuffle_tiles(size_t g, size_t m, const uint8_t *src, uint8_t *dst) {
  const size_t lim = tile_limit(g, m);
  const size_t np = (g < 16) ? g : 16;     /* planes per tile */
  const size_t ntile = (g + 15) / 16;
  size_t i = 0;
  /* Output streams m bytes apart compete for one L1 set when m is a multiple
   * of 4 KiB.  With more planes than the L1 has ways (12 here), rounds of R
   * elements are transposed into an L1 buffer and copied out plane by plane;
   * otherwise rounds of 64 elements give each plane a whole 64-byte line. */
  enum { R = 512 };
  if (np > 12 && m % 4096 == 0) {
    __m256i buf[16][R / 32];
    for (; i + R <= lim; i += R) {
      for (size_t tt = 0; tt < ntile; tt++) {
        size_t j0 = tile_j0(g, tt);
        for (size_t q = 0; q < R / 32; q++) {
          const uint8_t *s = src + (i + 32 * q) * g + j0;
          __m256i v[16];
#define L_(r) v[r] = LD2(s + r * g, s + (16 + r) * g);
          REP16(L_)
#undef L_
          transpose16(v);
#define S_(c) buf[c][q] = v[c];
          REP16(S_)
#undef S_
        }
        uint8_t *d = dst + j0 * m + i;
        for (size_t c = 0; c < np; c++)
          for (size_t q = 0; q < R / 32; q++) ST(d + c * m + 32 * q, buf[c][q]);
      }
    }
  }
  for (; i + 64 <= lim; i += 64) {
    for (size_t tt = 0; tt < ntile; tt++) {
      size_t j0 = tile_j0(g, tt);
      const uint8_t *s = src + i * g + j0;
      __m256i v[16], w[16];
#define L_(r) v[r] = LD2(s + r * g, s + (16 + r) * g);
      REP16(L_)
#undef L_
      transpose16(v);
      s += 32 * g;
#define L_(r) w[r] = LD2(s + r * g, s + (16 + r) * g);
      REP16(L_)
#undef L_
      transpose16(w);
      uint8_t *d = dst + j0 * m + i;
#define S_(c)                                                               \
  if (c < np) {                                                             \
    ST(d + c * m, v[c]);                                                    \
    ST(d + c * m + 32, w[c]);                                               \
  }
      REP16(S_)
#undef S_
    }
  }
  for (; i + 32 <= lim; i += 32) {
    for (size_t tt = 0; tt < ntile; tt++) {
      size_t j0 = tile_j0(g, tt);
      const uint8_t *s = src + i * g + j0;
      __m256i v[16];
#define L_(r) v[r] = LD2(s + r * g, s + (16 + r) * g);
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

static size_t unshuffle_tiles(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst) {
  const size_t lim = tile_limit(g, m);
  const size_t ntile = (g + 15) / 16;
  size_t i = 0;
  for (; i + 32 <= lim; i += 32) {
    for (size_t tt = 0; tt < ntile; tt++) {
      size_t j0 = tile_j0(g, tt);
      __m256i v[16];
      /* planes past g - 1 (g < 16) do not exist: repeat the last one */
#define L_(c) v[c] = LD(p[j0 + c < g ? j0 + c : g - 1] + i);
      REP16(L_)
#undef L_
      transpose16(v);
      /* in element order: a row's excess bytes are fixed by the next row */
      uint8_t *d = dst + i * g + j0;
#define S_(r) ST128(d + r * g, _mm256_castsi256_si128(v[r]));
      REP16(S_)
#undef S_
      d += 16 * g;
#define S_(r) ST128(d + r * g, _mm256_extracti128_si256(v[r], 1));
      REP16(S_)
#undef S_
    }
  }
  return i;
}

void ndp_avx2_shuffle_range(size_t g, size_t m, const uint8_t *src, uint8_t *dst) {
  size_t done;
  switch (g) {
    case 2: done = shuffle2(m, src, dst); break;
    case 4: done = shuffle4(m, src, dst); break;
    case 8: done = shuffle8(m, src, dst); break;
    case 3: done = shuffle_pshufb(g, m, src, dst); break;
    default: done = (g >= 5 && m >= 64) ? shuffle_tiles(g, m, src, dst) : 0; break;
  }
  ndp_shuffle_scalar_part(g, m, done, m, src, dst);
}

/* ---- UNSHUFFLE: planes src + j*m -> elements [0, m) of dst ---- */

/* The lanes are paired into whole 32-byte stores in address order, one round of
 * 32 elements at a time (measured on 100 MB outputs, 8 planes: 8.2 ms against
 * 9.0 for sixteen 16-byte stores in rounds of 64 elements). */

/* 32 elements at plane offset i -> element bytes at d */
/* (`stream`: the stores bypass the caches; d must then be 32-byte aligned) */
NDP_INLINE void unshuf2_32(const uint8_t *const *s, size_t i, uint8_t *d, const int stream) {
  __m256i a = LD(s[0] + i), b = LD(s[1] + i);
  ZIP(a, b);
  STX(d, _mm256_permute2x128_si256(a, b, 0x20), stream);
  STX(d + 32, _mm256_permute2x128_si256(a, b, 0x31), stream);
}

static size_t unshuffle2(size_t m, const uint8_t *const *p, uint8_t *dst) {
  const uint8_t *s[2] = {p[0], p[1]};
  size_t i = 0;
  for (; i + 32 <= m; i += 32) unshuf2_32(s, i, dst + 2 * i, 0);
  return i;
}

NDP_INLINE void unshuf4_32(const uint8_t *const *s, size_t i, uint8_t *d, const int stream) {
  __m256i v0 = LD(s[0] + i), v1 = LD(s[1] + i);
  __m256i v2 = LD(s[2] + i), v3 = LD(s[3] + i);
  ZIP(v0, v2);
  ZIP(v1, v3);
  ZIP(v0, v1);
  ZIP(v2, v3);
  STX(d, _mm256_permute2x128_si256(v0, v1, 0x20), stream);
  STX(d + 32, _mm256_permute2x128_si256(v2, v3, 0x20), stream);
  STX(d + 64, _mm256_permute2x128_si256(v0, v1, 0x31), stream);
  STX(d + 96, _mm256_permute2x128_si256(v2, v3, 0x31), stream);
}

static size_t unshuffle4(size_t m, const uint8_t *const *p, uint8_t *dst) {
  const uint8_t *s[4] = {p[0], p[1], p[2], p[3]};
  size_t i = 0;
  for (; i + 32 <= m; i += 32) unshuf4_32(s, i, dst + 4 * i, 0);
  return i;
}

NDP_INLINE void unshuf8_32(const uint8_t *const *s, size_t i, uint8_t *d, const int stream) {
  __m256i v[8];
#define L_(j) v[j] = LD(s[j] + i);
  REP8(L_)
#undef L_
  unshuffle8_regs(v);
#define S_(k)                                                                         \
  STX(d + 32 * k, _mm256_permute2x128_si256(v[2 * k], v[2 * k + 1], 0x20), stream);       \
  STX(d + 128 + 32 * k, _mm256_permute2x128_si256(v[2 * k], v[2 * k + 1], 0x31), stream);
  REP4(S_)
#undef S_
}

static size_t unshuffle8(size_t m, const uint8_t *const *p, uint8_t *dst) {
  const uint8_t *s[8] = {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]};
  size_t i = 0;
  for (; i + 32 <= m; i += 32) unshuf8_32(s, i, dst + 8 * i, 0);
  return i;
}

static void unshuffle_planes_range(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst) {
  size_t done;
  switch (g) {
    case 2: done = unshuffle2(m, p, dst); break;
    case 4: done = unshuffle4(m, p, dst); break;
    case 8: done = unshuffle8(m, p, dst); break;
    case 3: case 5: done = unshuffle_pshufb(g, m, p, dst); break;
    default: done = (g >= 6 && m >= 64) ? unshuffle_tiles(g, m, p, dst) : 0; break;
  }
  ndp_unshuffle_planes_scalar_part(g, done, m, p, dst);
}

void ndp_avx2_unshuffle_range(size_t g, size_t m, const uint8_t *src, uint8_t *dst) {
  ndp_unshuffle_through(unshuffle_planes_range, g, m, src, dst);
}

static void shuffle_avx2(size_t g, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t m = (g > 1) ? n / g : 0;
  if (m < 32) {
    ndp_shuffle_scalar(g, n, src, dst);
    return;
  }
  ndp_avx2_shuffle_range(g, m, src, dst);
  if (n > m * g) memcpy(dst + m * g, src + m * g, n - m * g);
}

static void unshuffle_planes_avx2(size_t g, size_t m, const uint8_t *const *p, uint8_t *dst) {
  if (m < 32) ndp_unshuffle_planes_scalar(g, m, p, dst);
  else unshuffle_planes_range(g, m, p, dst);
}

/* As unshuffle_planes_avx2, with stores that bypass the caches for 2, 4 and 8
 * planes (the other group sizes, dst not a multiple of g, or fewer than 64
 * elements: the regular kernel).  Elements before the first 32-byte aligned
 * output position and after the last round go through the scalar reference;
 * a store fence ends the streamed part. */
static void unshuffle_planes_stream_avx2(size_t g, size_t m, const uint8_t *const *p,
                                         uint8_t *dst) {
  if (m < 64 || (g != 2 && g != 4 && g != 8) || (uintptr_t)dst % g != 0) {
    unshuffle_planes_avx2(g, m, p, dst);
    return;
  }
  const uint8_t *s[8] = {p[0], p[1], g > 2 ? p[2] : 0, g > 2 ? p[3] : 0,
                         g > 4 ? p[4] : 0, g > 4 ? p[5] : 0, g > 4 ? p[6] : 0,
                         g > 4 ? p[7] : 0};
  size_t i = ((32 - ((uintptr_t)dst & 31)) & 31) / g; /* dst + g*i is aligned */
  ndp_unshuffle_planes_scalar_part(g, 0, i, p, dst);
  if (g == 2)
    for (; i + 32 <= m; i += 32) unshuf2_32(s, i, dst + 2 * i, 1);
  else if (g == 4)
    for (; i + 32 <= m; i += 32) unshuf4_32(s, i, dst + 4 * i, 1);
  else
    for (; i + 32 <= m; i += 32) unshuf8_32(s, i, dst + 8 * i, 1);
  _mm_sfence();
  ndp_unshuffle_planes_scalar_part(g, i, m, p, dst);
}

static void unshuffle_avx2(size_t g, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t m = (g > 1) ? n / g : 0;
  if (m < 32) {
    ndp_unshuffle_scalar(g, n, src, dst);
    return;
  }
  ndp_avx2_unshuffle_range(g, m, src, dst);
  if (n > m * g) memcpy(dst + m * g, src + m * g, n - m * g);
}

/* ------------------------------------------------------------------------ */
/* BYTEDELTA                                                                 */

static void bytedelta_encode_avx2(size_t s, size_t n, const uint8_t *src, uint8_t *dst) {
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
    for (; k + 32 <= L; k += 32) ST(cd + k, _mm256_sub_epi8(LD(cs + k), LD(cs + k - 1)));
    ndp_bytedelta_encode_scalar_part(k, L, cs, cd);
  }
  if (n > s * L) memcpy(dst + s * L, src + s * L, n - s * L);
}

static void bytedelta_decode_avx2(size_t s, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t L = (s > 0) ? n / s : 0;
  if (L == 0) {
    ndp_bytedelta_decode_scalar(s, n, src, dst);
    return;
  }
  const __m256i idx15 = _mm256_set1_epi8(15);
  for (size_t c = 0; c < s; c++) {
    const uint8_t *cs = src + c * L;
    uint8_t *cd = dst + c * L;
    __m256i acc = _mm256_setzero_si256();
    size_t k = 0;
    for (; k + 32 <= L; k += 32) {
      __m256i v = LD(cs + k);
      /* prefix sums inside each lane */
      v = _mm256_add_epi8(v, _mm256_slli_si256(v, 1));
      v = _mm256_add_epi8(v, _mm256_slli_si256(v, 2));
      v = _mm256_add_epi8(v, _mm256_slli_si256(v, 4));
      v = _mm256_add_epi8(v, _mm256_slli_si256(v, 8));
      /* carry lane 0's total into lane 1 */
      __m256i last = _mm256_shuffle_epi8(v, idx15);
      v = _mm256_add_epi8(v, _mm256_permute2x128_si256(last, last, 0x08));
      ST(cd + k, _mm256_add_epi8(v, acc));
      /* byte 31 (the block total) everywhere */
      __m256i tot = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, idx15), 0xFF);
      acc = _mm256_add_epi8(acc, tot);
    }
    ndp_bytedelta_decode_scalar_part(k, L, cs, cd);
  }
  if (n > s * L) memcpy(dst + s * L, src + s * L, n - s * L);
}

static const ndp_filter_kernels avx2_kernels = {
    "avx2",
    shuffle_avx2,
    unshuffle_avx2,
    ndp_bitshuffle_avx2,
    ndp_bitunshuffle_avx2,
    bytedelta_encode_avx2,
    bytedelta_decode_avx2,
    unshuffle_planes_avx2,
    unshuffle_planes_stream_avx2,
};

const ndp_filter_kernels *ndp_filters_avx2(void) { return &avx2_kernels; }

#else /* this build has no AVX2 */

const ndp_filter_kernels *ndp_filters_avx2(void) { return 0; }

#endif

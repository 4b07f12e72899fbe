/* AVX2 bitshuffle (FORMAT.md 2.3): the bit transposes of avx2.c's kernel table,
 * compiled with -mavx2 like avx2.c (see there and avx2_internal.h).  Planes of
 * bytes are bit-transposed in both 128-bit lanes at once; the byte transposes
 * of t-byte elements into planes are avx2.c's, the rounds through a stack
 * buffer generic.c's (ndp_bitshuffle_through, shared with sse2.c).
 */
#include "avx2_internal.h"

#if defined(__AVX2__)

/* 8x8 bit transpose across 8 vectors: bit e of byte c of x[k] <-> bit k of
 * byte c of x[e].  Swaps 4x4, 2x2 then 1x1 blocks between vector pairs. */
#define BITSWAP(a, b, sh, mask)                                             \
  do {                                                                      \
    __m256i t_ = _mm256_and_si256(                                          \
        _mm256_xor_si256(_mm256_srli_epi16((a), (sh)), (b)), (mask));       \
    (b) = _mm256_xor_si256((b), t_);                                        \
    (a) = _mm256_xor_si256((a), _mm256_slli_epi16(t_, (sh)));               \
  } while (0)

NDP_INLINE void bit_transpose8(__m256i *x) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x33);
  const __m256i m1 = _mm256_set1_epi8(0x55);
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
  size_t o = 0;
  /* 256 bytes: deinterleave into x[e] = bytes 8c + e (shuf8_32, the
   * shuffle8 network), then the bit transpose gives the 32-byte pieces of the rows */
  for (; o + 512 <= len; o += 512) {
    __m256i x[8], y[8];
    shuf8_32(p + o, x);
    bit_transpose8(x);
    shuf8_32(p + o + 256, y);
    bit_transpose8(y);
#define S_(k) ST(rows + k * stride + o / 8, x[k]); ST(rows + k * stride + o / 8 + 32, y[k]);
    REP8(S_)
#undef S_
  }
  for (; o + 256 <= len; o += 256) {
    __m256i x[8];
    shuf8_32(p + o, x);
    bit_transpose8(x);
#define S_(k) ST(rows + k * stride + o / 8, x[k]);
    REP8(S_)
#undef S_
  }
  for (; o + 64 <= len; o += 64) {
    __m256i a = LD(p + o), b = LD(p + o + 32);
    uint8_t *r = rows + o / 8;
    for (size_t k = 8; k-- > 0;) {
      uint64_t mk = (uint32_t)_mm256_movemask_epi8(a) |
                    ((uint64_t)(uint32_t)_mm256_movemask_epi8(b) << 32);
      memcpy(r + k * stride, &mk, 8);
      a = _mm256_add_epi8(a, a);
      b = _mm256_add_epi8(b, b);
    }
  }
  for (; o + 32 <= len; o += 32) {
    __m256i a = LD(p + o);
    uint8_t *r = rows + o / 8;
    for (size_t k = 8; k-- > 0;) {
      uint32_t mk = (uint32_t)_mm256_movemask_epi8(a);
      memcpy(r + k * stride, &mk, 4);
      a = _mm256_add_epi8(a, a);
    }
  }
  ndp_bitplane_fwd_scalar(p + o, len - o, rows + o / 8, stride);
}

/* 8 bit-rows (row k at rows + k*stride) -> one plane of `len` bytes. */
static void bitplane_inv(const uint8_t *rows, size_t stride, size_t len, uint8_t *p) {
  size_t o = 0;
  for (; o + 256 <= len; o += 256) {
    __m256i x[8];
#define L_(k) x[k] = LD(rows + k * stride + o / 8);
    REP8(L_)
#undef L_
    bit_transpose8(x); /* x[e] byte c = plane byte 8c + e */
    unshuffle8_regs(x);
    uint8_t *d = p + o;
#define S_(k) ST2(d + 16 * k, d + 128 + 16 * k, x[k]);
    REP8(S_)
#undef S_
  }
  ndp_bitplane_inv_scalar(rows + o / 8, stride, len - o, p + o);
}

void ndp_bitshuffle_avx2(size_t t, size_t n, const uint8_t *src, uint8_t *dst) {
  ndp_bitshuffle_through(ndp_avx2_shuffle_range, bitplane_fwd, t, n, src, dst);
}

void ndp_bitunshuffle_avx2(size_t t, size_t n, const uint8_t *src, uint8_t *dst) {
  ndp_bitunshuffle_through(ndp_avx2_unshuffle_range, bitplane_inv, t, n, src, dst);
}
#endif

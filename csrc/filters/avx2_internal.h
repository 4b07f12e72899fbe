/* Internal header of the AVX2 filter kernels (avx2.c: shuffle, unshuffle,
 * bytedelta and the kernel table; avx2_bitshuffle.c: bitshuffle), both compiled
 * with -mavx2 only: the register macros, the 8-plane networks both use, and
 * what one file calls in the other. */
#ifndef NDPACK_FILTERS_AVX2_INTERNAL_H
#define NDPACK_FILTERS_AVX2_INTERNAL_H

#include "generic.h"

#if defined(__AVX2__)

#include <immintrin.h>
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

#define LD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define ST(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
/* a store that bypasses the caches when `stream` (p 32-byte aligned), else ST */
#define STX(p, v, stream)                                                   \
  do {                                                                      \
    if (stream) _mm256_stream_si256((__m256i *)(void *)(p), (v));           \
    else ST(p, v);                                                          \
  } while (0)
#define LD128(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define ST128(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
/* lane 0 from p0, lane 1 from p1 */
#define LD2(p0, p1) \
  _mm256_inserti128_si256(_mm256_castsi128_si256(LD128(p0)), LD128(p1), 1)
/* lane 0 to p0, lane 1 to p1 */
#define ST2(p0, p1, v)                                                      \
  do {                                                                      \
    ST128((p0), _mm256_castsi256_si128(v));                                 \
    ST128((p1), _mm256_extracti128_si256((v), 1));                          \
  } while (0)

/* (a, b) <- (even bytes of a||b, odd bytes of a||b), per lane */
#define SPLIT(a, b)                                                         \
  do {                                                                      \
    __m256i ev_ = _mm256_packus_epi16(_mm256_and_si256((a), lo8),           \
                                      _mm256_and_si256((b), lo8));          \
    __m256i od_ = _mm256_packus_epi16(_mm256_srli_epi16((a), 8),            \
                                      _mm256_srli_epi16((b), 8));           \
    (a) = ev_;                                                              \
    (b) = od_;                                                              \
  } while (0)

/* (a, b) <- (interleave of low halves, interleave of high halves), per lane */
#define ZIP(a, b)                                                           \
  do {                                                                      \
    __m256i lo_ = _mm256_unpacklo_epi8((a), (b));                           \
    (b) = _mm256_unpackhi_epi8((a), (b));                                   \
    (a) = lo_;                                                              \
  } while (0)

/* 32 elements of 8 bytes at s -> planes v[0..7] */
NDP_INLINE void shuf8_32(const uint8_t *s, __m256i *v) {
  const __m256i lo8 = _mm256_set1_epi16(0x00FF);
#define L_(k) v[k] = LD2(s + 16 * k, s + 128 + 16 * k);
  REP8(L_)
#undef L_
  SPLIT(v[0], v[1]);
  SPLIT(v[2], v[3]);
  SPLIT(v[4], v[5]);
  SPLIT(v[6], v[7]);
  SPLIT(v[0], v[2]);
  SPLIT(v[1], v[3]);
  SPLIT(v[4], v[6]);
  SPLIT(v[5], v[7]);
  SPLIT(v[0], v[4]);
  SPLIT(v[1], v[5]);
  SPLIT(v[2], v[6]);
  SPLIT(v[3], v[7]);
}

/* Planes v[0..7] (32 elements) -> element bytes: lane 0 of v[k] is bytes
 * 16k..16k+15, lane 1 bytes 128+16k.. */
NDP_INLINE void unshuffle8_regs(__m256i *v) {
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

/* avx2.c: the byte transposes of m whole elements of g bytes (elements ->
 * planes m bytes apart, and back). */
void ndp_avx2_shuffle_range(size_t g, size_t m, const uint8_t *src, uint8_t *dst);
void ndp_avx2_unshuffle_range(size_t g, size_t m, const uint8_t *src, uint8_t *dst);

/* avx2_bitshuffle.c: the kernels of the table in avx2.c. */
void ndp_bitshuffle_avx2(size_t t, size_t n, const uint8_t *src, uint8_t *dst);
void ndp_bitunshuffle_avx2(size_t t, size_t n, const uint8_t *src, uint8_t *dst);

#endif /* __AVX2__ */
#endif

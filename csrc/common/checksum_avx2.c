/* crc32c by carry-less multiplication on AVX2 registers: VPCLMULQDQ on 256 bits
 * (compiled with -mavx2 -mvpclmulqdq -mpclmul -msse4.2 only; used when the CPU has
 * them and not AVX-512 -- AMD Zen 3, Intel Alder Lake and later cores).
 *
 * The folding of checksum_avx512.c (read its comment for the arithmetic) on half the
 * width: four 32-byte registers fold 128 bytes per round (D = 1024 bits per 16-byte
 * lane), then each register into the next (D = 256), the two lanes of the last into
 * one (D = 128), the remaining whole 16-byte blocks one at a time, and the result
 * finished with the crc32 instruction.  Inputs under NDP_CRC_FOLD_MIN bytes take the
 * SSE4.2 kernel.
 */
#include <immintrin.h>
#include <string.h>

#include "checksum.h"

static inline __m128i fold128(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

static inline __m256i fold256(__m256i z, __m256i k, __m256i next) {
  return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(z, k, 0x00),
                                           _mm256_clmulepi64_epi128(z, k, 0x11)),
                          next);
}

uint32_t ndp_crc32c_avx2_raw(uint32_t r, const uint8_t *p, size_t n) {
  if (n < NDP_CRC_FOLD_MIN) return ndp_crc32c_sse42_raw(r, p, n);
  const ndp_crc_fold *k = ndp_crc32c_fold();
  const __m256i k1024 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k->k1024));
  const __m256i k256 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k->k256));
  const __m128i k128 = _mm_loadu_si128((const __m128i *)k->k128);

  __m256i z0 = _mm256_loadu_si256((const __m256i *)p);
  __m256i z1 = _mm256_loadu_si256((const __m256i *)(p + 32));
  __m256i z2 = _mm256_loadu_si256((const __m256i *)(p + 64));
  __m256i z3 = _mm256_loadu_si256((const __m256i *)(p + 96));
  z0 = _mm256_xor_si256(z0, _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)r)));
  p += 128;
  n -= 128;
  while (n >= 128) {
    z0 = fold256(z0, k1024, _mm256_loadu_si256((const __m256i *)p));
    z1 = fold256(z1, k1024, _mm256_loadu_si256((const __m256i *)(p + 32)));
    z2 = fold256(z2, k1024, _mm256_loadu_si256((const __m256i *)(p + 64)));
    z3 = fold256(z3, k1024, _mm256_loadu_si256((const __m256i *)(p + 96)));
    p += 128;
    n -= 128;
  }
  z1 = fold256(z0, k256, z1);
  z2 = fold256(z1, k256, z2);
  z3 = fold256(z2, k256, z3);
  __m128i x = _mm256_castsi256_si128(z3);
  x = _mm_xor_si128(fold128(x, k128), _mm256_extracti128_si256(z3, 1));
  for (; n >= 16; n -= 16, p += 16)
    x = _mm_xor_si128(fold128(x, k128), _mm_loadu_si128((const __m128i *)p));
  uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
  c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(x, 1));
  return ndp_crc32c_sse42_raw((uint32_t)c, p, n);
}

/* crc32c by carry-less multiplication: VPCLMULQDQ on AVX-512 registers (compiled with
 * -mavx512f -mvpclmulqdq -mpclmul -msse4.2 only; used when the CPU has them).
 *
 * Folding (the technique of Gopal et al., "Fast CRC computation for generic
 * polynomials using PCLMULQDQ", Intel 2009): the message is a polynomial over GF(2)
 * and only its remainder mod P matters, so a 16-byte block X that lies D bits before
 * a later block Y can be replaced by X * x^D mod P, XORed into Y.  With X = A x^64 + B
 * (A its first 8 bytes), X x^D = A (x^(D+64) mod P) + B (x^D mod P): two 64x32-bit
 * carry-less products of under 96 bits.  In the bit-reflected order of the crc32
 * instruction (bit i of a lane is the coefficient of x^(63-i)) a product read as a
 * 16-byte block carries an extra factor x^33, so the constants are x^(D+31) and
 * x^(D-33) mod P, computed at first use (checksum.c has the arithmetic).
 *
 * Four 64-byte registers fold 256 bytes per round (D = 2048 per lane); at the end the
 * registers and then their 16-byte lanes are folded into one block, the remaining
 * whole blocks folded in one at a time, and the result -- a 16-byte message with the
 * same remainder -- finished with the crc32 instruction, then the last < 16 bytes.
 * The starting register is XORed into the first 4 bytes (a register s before a
 * message equals s XORed into its first 32 bits).  Inputs under NDP_CRC_FOLD_MIN
 * bytes take the SSE4.2 kernel.
 */
#include <immintrin.h>
#include <string.h>

#include "checksum.h"

static inline __m128i fold128(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

uint32_t ndp_crc32c_avx512_raw(uint32_t r, const uint8_t *p, size_t n) {
  if (n < NDP_CRC_FOLD_MIN) return ndp_crc32c_sse42_raw(r, p, n);
  const ndp_crc_fold *k = ndp_crc32c_fold();
  const __m512i k2048 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)k->k2048));
  const __m512i k512 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)k->k512));
  const __m128i k128 = _mm_loadu_si128((const __m128i *)k->k128);

  __m512i z0 = _mm512_loadu_si512((const void *)p);
  __m512i z1 = _mm512_loadu_si512((const void *)(p + 64));
  __m512i z2 = _mm512_loadu_si512((const void *)(p + 128));
  __m512i z3 = _mm512_loadu_si512((const void *)(p + 192));
  z0 = _mm512_xor_si512(z0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)r)));
  p += 256;
  n -= 256;
#define FOLD512(z, kk, next) \
  _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, kk, 0x00), \
                            _mm512_clmulepi64_epi128(z, kk, 0x11), next, 0x96)
  while (n >= 256) {
    z0 = FOLD512(z0, k2048, _mm512_loadu_si512((const void *)p));
    z1 = FOLD512(z1, k2048, _mm512_loadu_si512((const void *)(p + 64)));
    z2 = FOLD512(z2, k2048, _mm512_loadu_si512((const void *)(p + 128)));
    z3 = FOLD512(z3, k2048, _mm512_loadu_si512((const void *)(p + 192)));
    p += 256;
    n -= 256;
  }
  z1 = FOLD512(z0, k512, z1);
  z2 = FOLD512(z1, k512, z2);
  z3 = FOLD512(z2, k512, z3);
#undef FOLD512
  __m128i x = _mm512_extracti32x4_epi32(z3, 0);
  x = _mm_xor_si128(fold128(x, k128), _mm512_extracti32x4_epi32(z3, 1));
  x = _mm_xor_si128(fold128(x, k128), _mm512_extracti32x4_epi32(z3, 2));
  x = _mm_xor_si128(fold128(x, k128), _mm512_extracti32x4_epi32(z3, 3));
  for (; n >= 16; n -= 16, p += 16)
    x = _mm_xor_si128(fold128(x, k128), _mm_loadu_si128((const __m128i *)p));
  uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
  c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(x, 1));
  return ndp_crc32c_sse42_raw((uint32_t)c, p, n);
}

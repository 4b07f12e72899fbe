/* crc32c internals shared by the scalar reference (checksum.c) and the SSE4.2
 * kernel (checksum_sse42.c); not part of the public API.
 *
 * The register convention is the reflected one of the crc32 instruction: a step
 * over byte b is r = (r >> 8) ^ T[(r ^ b) & 0xff], no inversion inside; the public
 * functions invert on entry and exit (crc32c("123456789") = 0xE3069283).
 *
 * Several streams hashed independently are joined with the "shift" operator: the
 * register after n more zero bytes, r * x^(8n) mod P, is linear in r over GF(2), so
 * it is four table lookups (one per byte of r) for a fixed n.  crc(A || B) with
 * |B| = n is shift_n(crc_register(A)) ^ crc_register_from_0(B).
 */
#ifndef NDPACK_CHECKSUM_H
#define NDPACK_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#define NDP_CRC32C_POLY 0x82F63B78u     /* Castagnoli, reflected */

/* Stream lengths of the interleaved kernel: three streams of LONG bytes per round
 * while 3 * LONG remain, then rounds of three SHORT streams, then one stream. */
#define NDP_CRC_LONG 4096
#define NDP_CRC_SHORT 256

typedef struct {
  uint32_t t[4][256];
} ndp_crc_shift;

/* The shift operators for NDP_CRC_LONG (which 0) and NDP_CRC_SHORT (which 1) bytes,
 * built on first use. */
const ndp_crc_shift *ndp_crc32c_shift(int which);

static inline uint32_t ndp_crc_shift_apply(const ndp_crc_shift *s, uint32_t r) {
  return s->t[0][r & 0xff] ^ s->t[1][(r >> 8) & 0xff] ^ s->t[2][(r >> 16) & 0xff] ^
         s->t[3][r >> 24];
}

/* Folding constants of the carry-less kernel (checksum_avx512.c): for a distance of D
 * bits, {x^(D+31) mod P, x^(D-33) mod P} in the reflected order, as the low and high
 * 64-bit halves of a 16-byte lane. */
typedef struct {
  uint64_t k128[2], k256[2], k512[2], k1024[2], k2048[2];
} ndp_crc_fold;
const ndp_crc_fold *ndp_crc32c_fold(void);

/* Inputs shorter than this take the SSE4.2 kernel in the folding one. */
#define NDP_CRC_FOLD_MIN 512

/* The folding kernel (AVX-512 + VPCLMULQDQ) on the raw register; only called when the
 * CPU has them.  Elsewhere it is the SSE4.2 kernel. */
uint32_t ndp_crc32c_avx512_raw(uint32_t r, const uint8_t *p, size_t n);
/* The same on AVX2 registers (checksum_avx2.c: VPCLMULQDQ on 256 bits); only called
 * when the CPU has them.  Elsewhere it is the SSE4.2 kernel. */
uint32_t ndp_crc32c_avx2_raw(uint32_t r, const uint8_t *p, size_t n);
/* The SSE4.2 kernel on the raw register (no inversions); only called when the CPU
 * has SSE4.2.  On other builds it is the scalar reference. */
uint32_t ndp_crc32c_sse42_raw(uint32_t r, const uint8_t *p, size_t n);
/* The scalar reference on the raw register (slicing by 8). */
uint32_t ndp_crc32c_scalar_raw(uint32_t r, const uint8_t *p, size_t n);

#endif

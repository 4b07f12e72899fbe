/* Internal header of the BloscLZ codec (FORMAT.md section 3.3): what the
 * encoder (blosclz.c) and the decoder (blosclz_decode.c) share.
 *
 * Stream format (instruction by instruction, `op` = output position):
 *   - the first byte is always a literal instruction; only its low 5 bits count
 *     (C-Blosc2 sets bit 5 as a marker; we do the same and ignore it on input);
 *   - ctrl < 32: literal run, copy the next ctrl+1 bytes;
 *   - ctrl >= 32: match, L = ctrl >> 5, hi = ctrl & 31;
 *       length = L + 2 (3..8) or, when L == 7, 9 + the sum of extension bytes
 *       read up to and including the first byte that is not 255;
 *       then one byte c: distance = hi*256 + c + 1 (1..8191), except that
 *       hi == 31 && c == 255 announces a far match whose distance is
 *       8192 + the next two bytes read big-endian (8192..73727);
 *       copy `length` bytes from op - distance (overlap allowed).
 *   Decoding stops when the input is exhausted after an instruction.
 */
#ifndef NDPACK_BLOSCLZ_INTERNAL_H
#define NDPACK_BLOSCLZ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define BLZ_LIKELY(x) __builtin_expect(!!(x), 1)
#define BLZ_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define BLZ_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define BLZ_LIKELY(x) (x)
#define BLZ_UNLIKELY(x) (x)
#define BLZ_ALWAYS_INLINE static inline
#endif

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BLZ_BIG_ENDIAN 1
#else
#define BLZ_BIG_ENDIAN 0
#endif

/* ------------------------------------------------------------------------ */
/* Format constants                                                          */

#define BLZ_MAX_LITERAL 32          /* bytes per literal instruction */
#define BLZ_NEAR_MAX 8191           /* largest distance of a 2-byte match */
#define BLZ_FAR_BASE 8192           /* distance of a far match = BASE + BE16 */
/* Largest distance the encoder uses.  The format can express 73727; C-Blosc2
 * stays below 73725 and so do we. */
#define BLZ_MAX_DISTANCE 73724

/* ------------------------------------------------------------------------ */
/* Unaligned memory helpers                                                  */

BLZ_ALWAYS_INLINE uint32_t blz_read32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

BLZ_ALWAYS_INLINE uint64_t blz_read64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

BLZ_ALWAYS_INLINE void blz_copy8(uint8_t *d, const uint8_t *s) { memcpy(d, s, 8); }
BLZ_ALWAYS_INLINE void blz_copy16(uint8_t *d, const uint8_t *s) { memcpy(d, s, 16); }

/* Number of equal low-address bytes given a non-zero XOR of two 8-byte words. */
BLZ_ALWAYS_INLINE unsigned blz_equal_bytes(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
#if BLZ_BIG_ENDIAN
  return (unsigned)__builtin_clzll(x) >> 3;
#else
  return (unsigned)__builtin_ctzll(x) >> 3;
#endif
#else
  unsigned n = 0;
#if BLZ_BIG_ENDIAN
  while (!(x & 0xFF00000000000000ULL)) { x <<= 8; n++; }
#else
  while (!(x & 0xFF)) { x >>= 8; n++; }
#endif
  return n;
#endif
}

#endif

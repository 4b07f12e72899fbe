/* crc32c with the SSE4.2 crc32 instruction (compiled with -msse4.2 only).
 *
 * The instruction has a latency of 3 cycles and a throughput of one per cycle, so
 * one dependent chain runs at a third of the peak: the input is cut into rounds of
 * three streams of equal length, hashed side by side (one from the running
 * register, two from zero) and joined with the shift operators of checksum.h.
 * Rounds of NDP_CRC_LONG-byte streams cover most of a big buffer; rounds of
 * NDP_CRC_SHORT bytes the rest; the last < 768 bytes run in one chain.  Loads are
 * unaligned 8-byte memcpy's; nothing outside [p, p + n) is read.  Built on x86-64
 * only (meson.build); checksum.c stands in for it elsewhere.
 */
#include <string.h>

#include "checksum.h"

#include <nmmintrin.h>

static inline uint64_t ld64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* Rounds of three streams of `len` bytes while 3 * len remain. */
static const uint8_t *rounds(uint64_t *reg, const uint8_t *p, size_t *n, size_t len,
                             const ndp_crc_shift *s) {
  uint64_t c0 = *reg;
  while (*n >= 3 * len) {
    uint64_t c1 = 0, c2 = 0;
    const uint8_t *q1 = p + len, *q2 = p + 2 * len;
    for (size_t i = 0; i < len; i += 8) {
      c0 = _mm_crc32_u64(c0, ld64(p + i));
      c1 = _mm_crc32_u64(c1, ld64(q1 + i));
      c2 = _mm_crc32_u64(c2, ld64(q2 + i));
    }
    c0 = ndp_crc_shift_apply(s, (uint32_t)c0) ^ (uint32_t)c1;
    c0 = ndp_crc_shift_apply(s, (uint32_t)c0) ^ (uint32_t)c2;
    p += 3 * len;
    *n -= 3 * len;
  }
  *reg = c0;
  return p;
}

uint32_t ndp_crc32c_sse42_raw(uint32_t r, const uint8_t *p, size_t n) {
  uint64_t c = r;
  while (n && ((uintptr_t)p & 7)) {
    c = _mm_crc32_u8((uint32_t)c, *p++);
    n--;
  }
  if (n >= 3 * NDP_CRC_LONG) p = rounds(&c, p, &n, NDP_CRC_LONG, ndp_crc32c_shift(0));
  if (n >= 3 * NDP_CRC_SHORT) p = rounds(&c, p, &n, NDP_CRC_SHORT, ndp_crc32c_shift(1));
  for (; n >= 8; n -= 8, p += 8) c = _mm_crc32_u64(c, ld64(p));
  while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
  return (uint32_t)c;
}

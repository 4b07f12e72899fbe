/* BloscLZ decoder (FORMAT.md section 3.3; the stream format is described in
 * blosclz_internal.h).
 *
 * Decoder policy for a stream whose last instruction is a match: C-Blosc2
 * stops without copying that match, so its output is shorter than the block
 * and the block is rejected.  We reject such a stream directly (error), which
 * gives the same accept/reject decisions.
 */
#include "blosclz.h"
#include "blosclz_internal.h"

/* Write the first 8 bytes of a match with distance 2 <= dist < 8 (ref = op -
 * dist) in two steps of 4, the first byte by byte.  Returns the source to
 * continue with at op + 8: (op + 8) - source is a multiple of dist, >= 8. */
BLZ_ALWAYS_INLINE const uint8_t *blz_copy_small_period(uint8_t *op, const uint8_t *ref,
                                                       size_t dist) {
  static const uint8_t fwd[8] = {0, 1, 2, 1, 0, 4, 4, 4};  /* ref advance */
  static const int8_t back[8] = {0, 0, 0, -1, -4, 1, 2, 3}; /* then ref -= */
  op[0] = ref[0];
  op[1] = ref[1];
  op[2] = ref[2];
  op[3] = ref[3];
  ref += fwd[dist];
  memcpy(op + 4, ref, 4);
  return ref - back[dist];
}

/* Copy a match of `len` bytes from op - dist to op when at least len + 32
 * bytes of output space remain (so the over-copies stay inside dst). */
BLZ_ALWAYS_INLINE void blz_match_copy_fast(uint8_t *op, size_t dist, size_t len) {
  const uint8_t *ref = op - dist;
  uint8_t *const mend = op + len;
  if (BLZ_LIKELY(dist >= 16)) {
    /* Each 16-byte chunk reads bytes that are already final. */
    blz_copy16(op, ref);
    blz_copy16(op + 16, ref + 16);
    if (BLZ_UNLIKELY(len > 32)) {
      op += 32;
      ref += 32;
      if (dist >= 32) {
        do { /* (32-byte steps: both halves read bytes already final) */
          blz_copy16(op, ref);
          blz_copy16(op + 16, ref + 16);
          op += 32;
          ref += 32;
        } while (op < mend);
      } else {
        do {
          blz_copy16(op, ref);
          op += 16;
          ref += 16;
        } while (op < mend);
      }
    }
  } else if (dist == 1) {
    uint64_t pat = (uint64_t)ref[0] * 0x0101010101010101ULL;
    if (len <= 512) { /* (longer: the C library's memset, measured faster) */
      uint8_t p16[16];
      memcpy(p16, &pat, 8);
      memcpy(p16 + 8, &pat, 8);
      do { /* (stores only: 32 bytes a step) */
        memcpy(op, p16, 16);
        memcpy(op + 16, p16, 16);
        op += 32;
      } while (op < mend);
    } else {
      memset(op, ref[0], len);
    }
  } else {
    /* 2 <= dist < 16: the first 16 bytes exactly (8-byte copies: after the first
     * 8 bytes, op - ref is a multiple of dist that is >= 8) */
    if (dist >= 8) {
      blz_copy8(op, ref);
    } else {
      ref = blz_copy_small_period(op, ref, dist);
      ref -= 8;
    }
    blz_copy8(op + 8, ref + 8);
    if (len > 16) {
      if (len >= 64) {
        /* long: those 16 bytes stored again every `step` bytes (a multiple of
         * dist), stores that depend on no load */
        static const uint8_t step[16] = {0, 16, 16, 15, 16, 15, 12, 14, 16, 9, 10, 11, 12, 13, 14, 15};
        const size_t st = step[dist];
        uint8_t p16[16];
        memcpy(p16, op, 16);
        op += st;
        do {
          memcpy(op, p16, 16);
          op += st;
        } while (op < mend);
      } else {
        ref += 16;
        op += 16;
        do {
          blz_copy8(op, ref);
          op += 8;
          ref += 8;
        } while (op < mend);
      }
    }
  }
}

int ndp_blosclz_decompress(const uint8_t *src, int srclen, uint8_t *dst, int dstlen) {
  const uint8_t *ip, *ip_end;
  uint8_t *op, *op_end;
  uint32_t ctrl;

  if (srclen < 0 || dstlen < 0) return -1;
  if (srclen == 0) return dstlen == 0 ? 0 : -1;
  if (src == NULL || (dst == NULL && dstlen > 0)) return -1;

  ip = src;
  ip_end = src + srclen;
  op = dst;
  op_end = dst + dstlen;

  ctrl = *ip++ & 31u; /* first instruction: always a literal run */
  for (;;) {
    if (ctrl < 32) {
      size_t n = (size_t)ctrl + 1;
      if (BLZ_LIKELY((size_t)(ip_end - ip) >= 32 && (size_t)(op_end - op) >= 32)) {
        /* Fixed-size copy; the extra bytes written are overwritten later. */
        blz_copy16(op, ip);
        blz_copy16(op + 16, ip + 16);
      } else {
        if (BLZ_UNLIKELY((size_t)(ip_end - ip) < n)) return -2; /* truncated */
        if (BLZ_UNLIKELY((size_t)(op_end - op) < n)) return -3; /* overflow */
        memcpy(op, ip, n);
      }
      ip += n;
      op += n;
      if (ip >= ip_end) break; /* normal end of the stream */
      ctrl = *ip++;
    } else {
      size_t len = (size_t)(ctrl >> 5) + 2;
      size_t hi = ctrl & 31u;
      size_t dist;
      uint32_t c;
      if (BLZ_LIKELY(len <= 8 && ip_end - ip >= 2 && op_end - op >= 8)) {
        /* Fast path for the common short near match: the distance byte and
         * the next instruction are in the input, 8 bytes of room remain. */
        c = ip[0];
        dist = (hi << 8) + c + 1;
        if (BLZ_LIKELY(!(c == 255 && hi == 31) && dist <= (size_t)(op - dst))) {
          const uint8_t *ref = op - dist;
          if (BLZ_LIKELY(dist >= 8)) {
            blz_copy8(op, ref); /* len <= 8: one exact copy */
          } else if (dist == 1) {
            uint64_t pat = (uint64_t)ref[0] * 0x0101010101010101ULL;
            memcpy(op, &pat, 8);
          } else {
            blz_copy_small_period(op, ref, dist);
          }
          op += len;
          ip++;
          ctrl = *ip++;
          continue;
        }
      }
      if (len == 9 && BLZ_LIKELY(ip_end - ip >= 3 && ip[0] != 255 && op_end - op >= 264 + 32)) {
        /* Fast path for a near match with one extension byte (9..263 bytes). */
        c = ip[1];
        dist = (hi << 8) + c + 1;
        if (BLZ_LIKELY(!(c == 255 && hi == 31) && dist <= (size_t)(op - dst))) {
          len += ip[0];
          blz_match_copy_fast(op, dist, len);
          op += len;
          ip += 2;
          ctrl = *ip++;
          continue;
        }
      }
      if (len == 9) {
        /* Extension bytes (length = 9 + their sum). */
        size_t room = (size_t)(op_end - op);
        uint32_t e;
        do {
          if (BLZ_UNLIKELY(ip >= ip_end)) return -2;
          e = *ip++;
          len += e;
          if (BLZ_UNLIKELY(len > room)) return -3;
        } while (e == 255);
      }
      if (BLZ_UNLIKELY(ip >= ip_end)) return -2;
      c = *ip++;
      dist = (hi << 8) + c + 1;
      if (BLZ_UNLIKELY(c == 255 && hi == 31)) {
        if (BLZ_UNLIKELY(ip_end - ip < 2)) return -2;
        dist = (((size_t)ip[0] << 8) | ip[1]) + BLZ_FAR_BASE;
        ip += 2;
      }
      if (BLZ_UNLIKELY(dist > (size_t)(op - dst))) return -4; /* before start */
      if (BLZ_UNLIKELY(len > (size_t)(op_end - op))) return -3;  /* overflow */
      if (BLZ_UNLIKELY(ip >= ip_end)) return -5; /* stream ends with a match */
      if (BLZ_LIKELY((size_t)(op_end - op) >= len + 32)) {
        blz_match_copy_fast(op, dist, len);
      } else {
        /* Near the end of the output: copy all but the last 32 bytes with
         * the fast routine (its over-copy stays below op + len), then finish
         * byte by byte. */
        size_t i = 0;
        if (len > 32) {
          i = len - 32;
          blz_match_copy_fast(op, dist, i);
        }
        for (; i < len; i++) op[i] = op[i - dist];
      }
      op += len;
      ctrl = *ip++;
    }
  }
  if (op != op_end) return -6; /* decoded length differs from dstlen */
  return dstlen;
}

/* Helpers of the BloscLZ unit tests (test_blosclz.c): bookkeeping, a random
 * generator, a byte-by-byte reference decoder written from FORMAT.md 3.3,
 * bounds-checked decoding helpers and a stream builder. */
#ifndef NDPACK_BLOSCLZ_TESTUTIL_H
#define NDPACK_BLOSCLZ_TESTUTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blosclz.h"

/* ------------------------------------------------------------------------ */
/* Bookkeeping                                                               */

static long g_pass, g_fail;

static void check(int ok, const char *fmt, ...) {
  if (ok) {
    g_pass++;
    return;
  }
  g_fail++;
  if (g_fail <= 50) {
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
  }
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

/* A heap copy of exactly n bytes (so ASan sees reads past the end). */
static uint8_t *dup_exact(const uint8_t *p, size_t n) {
  uint8_t *q = xmalloc(n);
  if (n) memcpy(q, p, n);
  return q;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ULL;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 11);
}

/* ------------------------------------------------------------------------ */
/* Reference decoder: the specification, byte by byte, no tricks.            */

static int ref_decode(const uint8_t *s, int n, uint8_t *d, int dn) {
  long ip = 0, op = 0;
  unsigned ctrl;
  if (n == 0) return dn == 0 ? 0 : -1;
  ctrl = s[ip++] & 31u;
  for (;;) {
    if (ctrl < 32) {
      long k = (long)ctrl + 1, i;
      if (ip + k > n || op + k > dn) return -1;
      for (i = 0; i < k; i++) d[op++] = s[ip++];
    } else {
      long len = (long)(ctrl >> 5) + 2, dist, i;
      unsigned hi = ctrl & 31u, c;
      if (len == 9) {
        unsigned e;
        do {
          if (ip >= n) return -1;
          e = s[ip++];
          len += e;
          if (len > dn) return -1;
        } while (e == 255);
      }
      if (ip >= n) return -1;
      c = s[ip++];
      dist = (long)hi * 256 + c + 1;
      if (c == 255 && hi == 31) {
        if (ip + 2 > n) return -1;
        dist = (long)s[ip] * 256 + s[ip + 1] + 8192;
        ip += 2;
      }
      if (dist > op || op + len > dn) return -1;
      if (ip >= n) return -1; /* a stream must not end with a match */
      for (i = 0; i < len; i++, op++) d[op] = d[op - dist];
    }
    if (ip >= n) break;
    ctrl = s[ip++];
  }
  return op == dn ? dn : -1;
}

/* ------------------------------------------------------------------------ */
/* Decoding helpers                                                           */

#define GUARD 64

/* Decode with exact-size heap buffers; also checks a guard zone after dst
 * (in a second, larger buffer) stays untouched.  Returns the result code; on
 * success copies the output into `out` (if not NULL). */
static int decode_checked(const uint8_t *stream, int slen, int dstlen, uint8_t *out,
                          const char *what) {
  uint8_t *s = dup_exact(stream, (size_t)slen);
  uint8_t *d = xmalloc((size_t)dstlen);
  uint8_t *g = xmalloc((size_t)dstlen + GUARD);
  int r = ndp_blosclz_decompress(s, slen, d, dstlen);
  int r2, i, guard_ok = 1;
  memset(g, 0xA5, (size_t)dstlen + GUARD);
  r2 = ndp_blosclz_decompress(s, slen, g, dstlen);
  for (i = 0; i < GUARD; i++) guard_ok &= g[dstlen + i] == 0xA5;
  check(guard_ok, "%s: decoder wrote past dst + dstlen", what);
  check(r == r2, "%s: decoder not deterministic (%d vs %d)", what, r, r2);
  check(r < 0 || r == dstlen, "%s: decoder returned %d, dstlen %d", what, r, dstlen);
  if (r == dstlen && out) memcpy(out, d, (size_t)dstlen);
  free(s);
  free(d);
  free(g);
  return r;
}

static void expect_decode(const uint8_t *stream, int slen, const uint8_t *want, int wlen,
                          const char *what) {
  uint8_t *out = xmalloc((size_t)wlen);
  int r = decode_checked(stream, slen, wlen, out, what);
  check(r == wlen, "%s: returned %d, expected %d", what, r, wlen);
  if (r == wlen) check(memcmp(out, want, (size_t)wlen) == 0, "%s: wrong bytes", what);
  /* the reference decoder must agree */
  {
    uint8_t *o2 = xmalloc((size_t)wlen);
    int rr = ref_decode(stream, slen, o2, wlen);
    check(rr == wlen && memcmp(o2, want, (size_t)wlen) == 0, "%s: reference decoder disagrees",
          what);
    free(o2);
  }
  /* one byte less or more of output space must fail */
  if (wlen > 0) check(decode_checked(stream, slen, wlen - 1, NULL, what) < 0,
                      "%s: accepted dstlen - 1", what);
  check(decode_checked(stream, slen, wlen + 1, NULL, what) < 0, "%s: accepted dstlen + 1", what);
  free(out);
}

static void expect_error(const uint8_t *stream, int slen, int dstlen, const char *what) {
  int r = decode_checked(stream, slen, dstlen, NULL, what);
  check(r < 0, "%s: expected an error, got %d", what, r);
}

/* ------------------------------------------------------------------------ */
/* Stream building helpers                                                    */

typedef struct {
  uint8_t *b;
  int n, cap;
} buf;

static void put(buf *s, int byte) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->b = realloc(s->b, (size_t)s->cap);
    if (!s->b) exit(2);
  }
  s->b[s->n++] = (uint8_t)byte;
}

static void put_literals(buf *s, const uint8_t *p, int n) {
  while (n > 0) {
    int k = n > 32 ? 32 : n, i;
    put(s, k - 1);
    for (i = 0; i < k; i++) put(s, p[i]);
    p += k;
    n -= k;
  }
}

/* Match per the format (len >= 3, 1 <= dist <= 73727). */
static void put_match(buf *s, int len, int dist) {
  int near = dist <= 8191;
  int hi = near ? (dist - 1) >> 8 : 31;
  if (len <= 8) {
    put(s, ((len - 2) << 5) | hi);
  } else {
    int rem = len - 9;
    put(s, (7 << 5) | hi);
    while (rem >= 255) {
      put(s, 255);
      rem -= 255;
    }
    put(s, rem);
  }
  if (near) {
    put(s, (dist - 1) & 255);
  } else {
    put(s, 255);
    put(s, (dist - 8192) >> 8);
    put(s, (dist - 8192) & 255);
  }
}

/* Expected-output helper mirroring put_literals / put_match. */
static void out_literals(buf *o, const uint8_t *p, int n) {
  int i;
  for (i = 0; i < n; i++) put(o, p[i]);
}
static void out_match(buf *o, int len, int dist) {
  int i;
  for (i = 0; i < len; i++) put(o, o->b[o->n - dist]);
}


#endif

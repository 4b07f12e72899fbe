/* Unit tests of the BloscLZ codec (csrc/codecs/blosclz.c, FORMAT.md 3.3).
 *
 * Build (outputs outside the repo), e.g.:
 *   gcc -O2 -std=c11 -Wall -Wextra -Werror -Icsrc/codecs \
 *       csrc/codecs/blosclz.c csrc/tests/test_blosclz.c -o /tmp/test_blosclz
 * and once with -fsanitize=address,undefined: every buffer handed to the codec
 * is a heap block of the exact size, so any access out of bounds is reported.
 *
 * Exit status 0 when every check passes; the last line is "N passed, M failed".
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blosclz.h"
#include "blosclz_testutil.h"

/* ------------------------------------------------------------------------ */
/* Hand-built streams                                                         */

static void test_handbuilt(void) {
  char what[128];
  int len;
  const uint8_t abc[] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};

  /* A literal run; the marker bit (and the other top bits) of the first byte
   * are ignored. */
  {
    const uint8_t s1[] = {0x02, 'a', 'b', 'c'};
    const uint8_t s2[] = {0x22, 'a', 'b', 'c'};
    const uint8_t s3[] = {0xE2, 'a', 'b', 'c'};
    expect_decode(s1, 4, abc, 3, "literal run");
    expect_decode(s2, 4, abc, 3, "literal run, marker bit");
    expect_decode(s3, 4, abc, 3, "literal run, top bits set");
  }
  /* 32-byte literal instruction, then a 1-byte one. */
  {
    uint8_t lit[33];
    buf s = {0}, o = {0};
    int i;
    for (i = 0; i < 33; i++) lit[i] = (uint8_t)(i * 7 + 1);
    put_literals(&s, lit, 33);
    out_literals(&o, lit, 33);
    check(s.n == 35, "literal split");
    expect_decode(s.b, s.n, o.b, o.n, "literal 32 + 1");
    free(s.b);
    free(o.b);
  }
  /* Matches with lengths 3..8 (short form) at distances 1..8. */
  for (len = 3; len <= 8; len++) {
    int dist;
    for (dist = 1; dist <= 8; dist++) {
      buf s = {0}, o = {0};
      put_literals(&s, abc, 8);
      out_literals(&o, abc, 8);
      put_match(&s, len, dist);
      out_match(&o, len, dist);
      put_literals(&s, abc + 2, 3);
      out_literals(&o, abc + 2, 3);
      snprintf(what, sizeof what, "match len %d dist %d", len, dist);
      expect_decode(s.b, s.n, o.b, o.n, what);
      free(s.b);
      free(o.b);
    }
  }
  /* Exact bytes of a short match: "abcd" + (len 5, dist 4) + "x". */
  {
    const uint8_t s[] = {0x03, 'a', 'b', 'c', 'd', (5 - 2) << 5, 3, 0x00, 'x'};
    const uint8_t want[] = {'a', 'b', 'c', 'd', 'a', 'b', 'c', 'd', 'a', 'x'};
    expect_decode(s, sizeof s, want, sizeof want, "match bytes");
  }
  /* Extended lengths (L == 7): 9, 10, 263 (one 254), 264 (255 then 0),
   * 9 + 255*k + r with many extension bytes. */
  {
    const int lens[] = {9, 10, 100, 262, 263, 264, 265, 518, 519, 520, 5000, 70000};
    size_t k;
    for (k = 0; k < sizeof lens / sizeof lens[0]; k++) {
      int dist;
      for (dist = 1; dist <= 33; dist++) { /* every copy path of the decoder */
        buf s = {0}, o = {0};
        uint8_t pre[40];
        int i;
        for (i = 0; i < 40; i++) pre[i] = (uint8_t)rnd();
        put_literals(&s, pre, 40);
        out_literals(&o, pre, 40);
        put_match(&s, lens[k], dist);
        out_match(&o, lens[k], dist);
        put_literals(&s, abc, 1);
        out_literals(&o, abc, 1);
        snprintf(what, sizeof what, "extended match len %d dist %d", lens[k], dist);
        expect_decode(s.b, s.n, o.b, o.n, what);
        free(s.b);
        free(o.b);
      }
    }
    /* exact bytes: 'x' + run of 529 'x' (ext 255, 255, 10) + 'y' */
    {
      uint8_t s[] = {0x00, 'x', 0xE0, 255, 255, 10, 0x00, 0x00, 'y'};
      uint8_t *want = xmalloc(531);
      memset(want, 'x', 530);
      want[530] = 'y';
      expect_decode(s, sizeof s, want, 531, "extended run bytes");
      free(want);
    }
  }
  /* Near distances up to 8191 and far distances 8192..73727 (2-byte form). */
  {
    const int dists[] = {255, 256, 257, 4096, 8190, 8191, 8192, 8193, 8447, 8448,
                         16384, 40000, 65535, 73724, 73727};
    const int mlens[] = {3, 4, 8, 9, 40};
    int total = 80000;
    uint8_t *lit = xmalloc((size_t)total);
    size_t k, m;
    int i;
    for (i = 0; i < total; i++) lit[i] = (uint8_t)rnd();
    for (k = 0; k < sizeof dists / sizeof dists[0]; k++) {
      for (m = 0; m < sizeof mlens / sizeof mlens[0]; m++) {
        buf s = {0}, o = {0};
        int pre = dists[k] + 17;
        put_literals(&s, lit, pre);
        out_literals(&o, lit, pre);
        put_match(&s, mlens[m], dists[k]);
        out_match(&o, mlens[m], dists[k]);
        put_literals(&s, lit, 2);
        out_literals(&o, lit, 2);
        snprintf(what, sizeof what, "distance %d len %d", dists[k], mlens[m]);
        expect_decode(s.b, s.n, o.b, o.n, what);
        {
          /* the same match with one byte too little history must fail */
          buf s2 = {0};
          put_literals(&s2, lit, dists[k] - 1);
          put_match(&s2, mlens[m], dists[k]);
          put_literals(&s2, lit, 2);
          snprintf(what, sizeof what, "distance %d before start", dists[k]);
          expect_error(s2.b, s2.n, dists[k] - 1 + mlens[m] + 2, what);
          free(s2.b);
        }
        free(s.b);
        free(o.b);
      }
    }
    /* exact bytes of a far match: distance 8192 + 0x0102 = 8450 */
    {
      buf s = {0};
      uint8_t *want = xmalloc(8450 + 5 + 1);
      put_literals(&s, lit, 8450);
      put(&s, (3 << 5) | 31); /* len 5, far */
      put(&s, 255);
      put(&s, 0x01);
      put(&s, 0x02);
      put(&s, 0x00);
      put(&s, 'z');
      memcpy(want, lit, 8450);
      memcpy(want + 8450, lit, 5);
      want[8455] = 'z';
      expect_decode(s.b, s.n, want, 8456, "far match bytes");
      free(s.b);
      free(want);
    }
    free(lit);
  }
  /* Overlapping matches of every small period, short and long, also ending
   * exactly at the end of the output (before a final 1-byte literal). */
  {
    int dist;
    for (dist = 1; dist <= 40; dist++) {
      const int mlens[] = {3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 1000};
      size_t m;
      for (m = 0; m < sizeof mlens / sizeof mlens[0]; m++) {
        buf s = {0}, o = {0};
        uint8_t lit[40];
        int i;
        for (i = 0; i < 40; i++) lit[i] = (uint8_t)(rnd() | 1);
        put_literals(&s, lit, dist);
        out_literals(&o, lit, dist);
        put_match(&s, mlens[m], dist);
        out_match(&o, mlens[m], dist);
        put_literals(&s, lit, 1);
        out_literals(&o, lit, 1);
        snprintf(what, sizeof what, "overlap dist %d len %d", dist, mlens[m]);
        expect_decode(s.b, s.n, o.b, o.n, what);
        free(s.b);
        free(o.b);
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Hostile streams                                                            */

static void test_hostile(void) {
  /* empty input */
  {
    uint8_t d[4];
    check(ndp_blosclz_decompress((const uint8_t *)"", 0, d, 4) < 0, "empty stream");
    check(ndp_blosclz_decompress((const uint8_t *)"", 0, d, 0) == 0, "empty to empty");
    check(ndp_blosclz_decompress(NULL, 5, d, 4) < 0, "NULL src");
    check(ndp_blosclz_decompress((const uint8_t *)"\x00x", 2, NULL, 1) < 0, "NULL dst");
    check(ndp_blosclz_decompress((const uint8_t *)"\x00x", -1, d, 1) < 0, "negative srclen");
    check(ndp_blosclz_decompress((const uint8_t *)"\x00x", 2, d, -1) < 0, "negative dstlen");
  }
  /* literal run longer than the input */
  {
    const uint8_t s[] = {0x05, 'a', 'b', 'c'};
    expect_error(s, sizeof s, 6, "literal past end of input");
    expect_error(s, sizeof s, 3, "literal past end of input, small dst");
  }
  /* literal run longer than the output */
  {
    const uint8_t s[] = {0x03, 'a', 'b', 'c', 'd'};
    expect_error(s, sizeof s, 3, "literal overflow");
    expect_error(s, sizeof s, 0, "literal into empty output");
    expect_error(s, sizeof s, 5, "too short output (stream decodes to 4)");
  }
  /* match referring before the start of the output */
  {
    const uint8_t s1[] = {0x00, 'a', 0x20, 0x01, 0x00, 'b'}; /* dist 2 after 1 byte */
    const uint8_t s2[] = {0x01, 'a', 'b', 0x3F, 0xFE, 0x00, 'b'}; /* dist 8191 */
    const uint8_t s3[] = {0x01, 'a', 'b', 0x3F, 0xFF, 0x00, 0x00, 0x00, 'b'}; /* far */
    expect_error(s1, sizeof s1, 5, "distance before start");
    expect_error(s2, sizeof s2, 6, "near distance before start");
    expect_error(s3, sizeof s3, 6, "far distance before start");
  }
  /* match overflowing the output */
  {
    const uint8_t s[] = {0x00, 'a', 0xC0, 0x00, 0x00, 'b'}; /* 'a' + 8x'a' + 'b' */
    uint8_t want[10];
    memset(want, 'a', 9);
    want[9] = 'b';
    expect_decode(s, sizeof s, want, 10, "run of 8");
    expect_error(s, sizeof s, 8, "match overflow");
    expect_error(s, sizeof s, 9, "final literal overflow");
    expect_error(s, sizeof s, 11, "output too short");
  }
  /* extended-length match overflowing the output by a lot */
  {
    uint8_t s[600];
    int n = 0, i;
    s[n++] = 0x00;
    s[n++] = 'a';
    s[n++] = 0xE0;
    for (i = 0; i < 500; i++) s[n++] = 255;
    s[n++] = 3;
    s[n++] = 0x00;
    s[n++] = 0x00;
    s[n++] = 'b';
    expect_error(s, n, 1000, "huge extended length");
  }
  /* extension bytes running past the end of the input */
  {
    const uint8_t s1[] = {0x00, 'a', 0xE0};
    const uint8_t s2[] = {0x00, 'a', 0xE0, 255};
    const uint8_t s3[] = {0x00, 'a', 0xE0, 255, 255, 255};
    const uint8_t s4[] = {0x00, 'a', 0xE0, 255, 3}; /* distance byte missing */
    expect_error(s1, sizeof s1, 20, "extension missing");
    expect_error(s2, sizeof s2, 300, "extension past end");
    expect_error(s3, sizeof s3, 900, "extension past end 2");
    expect_error(s4, sizeof s4, 300, "distance byte missing");
  }
  /* far-match bytes missing */
  {
    uint8_t *s = xmalloc(9000);
    int i, n = 0;
    for (i = 0; i < 8300; i += 32) {
      int k = 8300 - i < 32 ? 8300 - i : 32, j;
      s[n++] = (uint8_t)(k - 1);
      for (j = 0; j < k; j++) s[n++] = (uint8_t)rnd();
    }
    s[n++] = (1 << 5) | 31;
    s[n++] = 255;
    expect_error(s, n, 8303, "far match without its 2 bytes");
    s[n++] = 0;
    expect_error(s, n, 8303, "far match with 1 of its 2 bytes");
    s[n++] = 5;
    expect_error(s, n, 8303, "far match as the last instruction");
    s[n++] = 0;
    s[n++] = 'q';
    {
      uint8_t *out = xmalloc(8304);
      int r = decode_checked(s, n, 8304, out, "far match complete");
      check(r == 8304, "far match complete: %d", r);
      free(out);
    }
    free(s);
  }
  /* a trailing match: C-Blosc2 would stop without copying it; we reject it
   * whatever dstlen is (the output length with or without the match). */
  {
    const uint8_t s1[] = {0x00, 'a', 0x20, 0x00};       /* 'a' + run of 3 */
    const uint8_t s2[] = {0x00, 'a', 0xE0, 5, 0x00};    /* 'a' + run of 14 */
    expect_error(s1, sizeof s1, 4, "trailing match (full length)");
    expect_error(s1, sizeof s1, 1, "trailing match (length without it)");
    expect_error(s2, sizeof s2, 15, "trailing extended match");
    expect_error(s2, sizeof s2, 1, "trailing extended match 2");
  }
}

/* ------------------------------------------------------------------------ */
/* Test data                                                                   */

enum { GEN_ZEROS, GEN_RUNS, GEN_RANDOM, GEN_LOWBITS, GEN_TEXT, GEN_F64, GEN_F64_SHUF,
       GEN_F32_NOISE, GEN_I32_SMALL, GEN_REPEAT_FAR, GEN_MIXED, GEN_COUNT };
static const char *gen_names[GEN_COUNT] = {"zeros", "runs", "random", "lowbits", "text", "f64",
                                           "f64-shuffled", "f32-noise", "i32-small",
                                           "far-repeats", "mixed"};

static void shuffle_bytes(uint8_t *dst, const uint8_t *src, size_t n, size_t ts) {
  size_t m = n / ts, i, j;
  for (i = 0; i < m; i++)
    for (j = 0; j < ts; j++) dst[j * m + i] = src[i * ts + j];
  memcpy(dst + m * ts, src + m * ts, n - m * ts);
}

static void generate(int kind, uint8_t *p, size_t n) {
  size_t i;
  switch (kind) {
  case GEN_ZEROS:
    memset(p, 0, n);
    break;
  case GEN_RUNS:
    for (i = 0; i < n;) {
      size_t k = 1 + rnd() % 60, j;
      uint8_t v = (uint8_t)rnd();
      for (j = 0; j < k && i < n; j++) p[i++] = v;
    }
    break;
  case GEN_RANDOM:
    for (i = 0; i < n; i++) p[i] = (uint8_t)rnd();
    break;
  case GEN_LOWBITS:
    for (i = 0; i < n; i++) p[i] = (uint8_t)(rnd() & 7);
    break;
  case GEN_TEXT: {
    static const char *words[] = {"the ", "quick ", "brown ", "fox ", "jumps ", "over ",
                                  "a ", "lazy ", "dog", ", ", ".\n", "compression ",
                                  "of ", "numerical ", "arrays ", "is ", "fun "};
    for (i = 0; i < n;) {
      const char *w = words[rnd() % (sizeof words / sizeof words[0])];
      while (*w && i < n) p[i++] = (uint8_t)*w++;
    }
    break;
  }
  case GEN_F64:
  case GEN_F64_SHUF: {
    size_t m = n / 8;
    uint8_t *tmp = xmalloc(n);
    for (i = 0; i < m; i++) {
      double v = 1000.0 * (double)i / (double)(m ? m : 1);
      memcpy(tmp + 8 * i, &v, 8);
    }
    for (i = 8 * m; i < n; i++) tmp[i] = (uint8_t)i;
    if (kind == GEN_F64)
      memcpy(p, tmp, n);
    else
      shuffle_bytes(p, tmp, n, 8);
    free(tmp);
    break;
  }
  case GEN_F32_NOISE: {
    size_t m = n / 4;
    for (i = 0; i < m; i++) {
      float v = (float)(i % 1000) * 0.25f + (float)(rnd() % 4) * 0.001f;
      memcpy(p + 4 * i, &v, 4);
    }
    for (i = 4 * m; i < n; i++) p[i] = 0;
    break;
  }
  case GEN_I32_SMALL: {
    size_t m = n / 4;
    for (i = 0; i < m; i++) {
      int32_t v = (int32_t)(rnd() % 1000);
      memcpy(p + 4 * i, &v, 4);
    }
    for (i = 4 * m; i < n; i++) p[i] = 1;
    break;
  }
  case GEN_REPEAT_FAR: {
    /* a random 20000-byte block repeated: only far matches */
    for (i = 0; i < n && i < 20000; i++) p[i] = (uint8_t)rnd();
    for (; i < n; i++) p[i] = p[i - 20000];
    break;
  }
  default: { /* mixed: segments of the other kinds */
    for (i = 0; i < n;) {
      size_t k = 1 + rnd() % 5000;
      int g = (int)(rnd() % GEN_MIXED);
      if (k > n - i) k = n - i;
      generate(g, p + i, k);
      i += k;
    }
    break;
  }
  }
}

/* ------------------------------------------------------------------------ */
/* Round trips                                                                 */

/* Compress with exact-size buffers and a guard; verify the result decodes
 * back.  Returns the compressed size (0: not compressed). */
static int roundtrip(const uint8_t *data, int n, int clevel, int maxout, const char *what) {
  uint8_t *src = dup_exact(data, (size_t)n);
  uint8_t *dst = xmalloc((size_t)maxout);
  uint8_t *g = xmalloc((size_t)maxout + GUARD);
  int r, r2, i, ok = 1;
  r = ndp_blosclz_compress(clevel, src, n, dst, maxout);
  memset(g, 0x5A, (size_t)maxout + GUARD);
  r2 = ndp_blosclz_compress(clevel, src, n, g, maxout);
  for (i = 0; i < GUARD; i++) ok &= g[maxout + i] == 0x5A;
  check(ok, "%s clevel %d maxout %d: compressor wrote past maxout", what, clevel, maxout);
  check(r == r2 && (r <= 0 || memcmp(dst, g, (size_t)r) == 0),
        "%s clevel %d: compressor not deterministic", what, clevel);
  /* the scalar match-length loop (the reference) gives the same bytes */
  r2 = ndp_blosclz_compress_isa(clevel, src, n, g, maxout, 0);
  check(r == r2 && (r <= 0 || memcmp(dst, g, (size_t)r) == 0),
        "%s clevel %d: scalar and SIMD encoders differ", what, clevel);
  check(r >= 0 && r <= maxout && (r == 0 || r < n), "%s clevel %d maxout %d: returned %d", what,
        clevel, maxout, r);
  check(memcmp(src, data, (size_t)n) == 0, "%s: compressor modified its input", what);
  if (r > 0 && r <= maxout && r < n) {
    uint8_t *out = xmalloc((size_t)n);
    int d = decode_checked(dst, r, n, out, what);
    check(d == n, "%s clevel %d: decode returned %d for %d bytes", what, clevel, d, n);
    if (d == n) check(memcmp(out, data, (size_t)n) == 0, "%s clevel %d: round trip differs",
                      what, clevel);
    /* the stream ends with a literal instruction and decodes the same with
     * the reference decoder */
    if (d == n) {
      int rr = ref_decode(dst, r, out, n);
      check(rr == n && memcmp(out, data, (size_t)n) == 0,
            "%s clevel %d: reference decoder disagrees", what, clevel);
    }
    free(out);
  }
  free(src);
  free(dst);
  free(g);
  return r;
}

static void test_roundtrips(void) {
  static const int sizes[] = {16, 17, 31, 32, 33, 64, 65, 100, 255, 256, 257, 1000, 4095,
                              4096, 8191, 8192, 8193, 10000, 65535, 65536, 65537, 100000,
                              262144, 300001};
  char what[96];
  int kind, cl;
  size_t si;
  uint8_t *data = xmalloc(300001);

  /* tiny inputs, every size 1..100 */
  for (kind = 0; kind < GEN_COUNT; kind++) {
    int n;
    for (n = 1; n <= 100; n++) {
      generate(kind, data, (size_t)n);
      for (cl = 1; cl <= 9; cl++) {
        int r;
        snprintf(what, sizeof what, "%s n=%d", gen_names[kind], n);
        r = roundtrip(data, n, cl, n + 64, what);
        if (n < 16) check(r == 0, "%s: input < 16 bytes compressed", what);
      }
    }
  }
  /* many sizes, every kind, every level */
  for (kind = 0; kind < GEN_COUNT; kind++) {
    for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      int n = sizes[si];
      generate(kind, data, (size_t)n);
      for (cl = 1; cl <= 9; cl++) {
        int r;
        snprintf(what, sizeof what, "%s n=%d", gen_names[kind], n);
        r = roundtrip(data, n, cl, n, what);
        if ((kind == GEN_ZEROS && n >= 64) || (kind == GEN_RUNS && n >= 4096) ||
            (kind == GEN_TEXT && n >= 65536))
          check(r > 0 && r < n / 2, "%s clevel %d: poor compression (%d)", what, cl, r);
        if (kind == GEN_RANDOM && n >= 4096)
          check(r == 0, "%s clevel %d: random data compressed to %d", what, cl, r);
        /* (levels 1-8 probe samples shorter than the period and give up,
         * as BloscLZ does; level 9 judges the real result only) */
        if (kind == GEN_REPEAT_FAR && n >= 65536 && cl == 9)
          check(r > 0 && r < n / 2, "%s clevel %d: far repeats not found (%d)", what, cl, r);
      }
    }
  }
  free(data);
}

static void test_large(void) {
  const int sizes[] = {1 << 21, (6 << 20) + 12345};
  size_t si;
  char what[96];
  for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int n = sizes[si], kind, cl;
    uint8_t *data = xmalloc((size_t)n);
    for (kind = 0; kind < GEN_COUNT; kind++) {
      if (kind == GEN_RANDOM || kind == GEN_LOWBITS) continue;
      generate(kind, data, (size_t)n);
      for (cl = 1; cl <= 9; cl += (si == 0 ? 1 : 4)) {
        snprintf(what, sizeof what, "large %s n=%d", gen_names[kind], n);
        roundtrip(data, n, cl, n, what);
      }
    }
    free(data);
  }
}

/* compress never writes past maxout, for every maxout from 0 to n + 64, and
 * succeeds exactly when maxout is at least the size of the unlimited stream */
static void test_maxout(void) {
  const int kinds[] = {GEN_TEXT, GEN_RUNS, GEN_F64_SHUF, GEN_RANDOM, GEN_ZEROS, GEN_MIXED};
  const int sizes[] = {16, 40, 300, 1500};
  size_t k, s;
  char what[96];
  for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      int n = sizes[s], maxout, cl;
      uint8_t *data = xmalloc((size_t)n);
      generate(kinds[k], data, (size_t)n);
      for (cl = 1; cl <= 9; cl++) {
        int full;
        snprintf(what, sizeof what, "maxout %s n=%d", gen_names[kinds[k]], n);
        full = roundtrip(data, n, cl, n + 64, what);
        for (maxout = 0; maxout <= n + 64; maxout++) {
          int r = roundtrip(data, n, cl, maxout, what);
          check(r == (full > 0 && maxout >= full ? full : 0),
                "%s clevel %d maxout %d: got %d, unlimited %d", what, cl, maxout, r, full);
        }
      }
      free(data);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Fuzzing: random and mutated streams must never make the decoder misbehave,
 * and it must agree with the reference decoder on every outcome. */

static void fuzz_one(const uint8_t *s, int n, int dstlen, const char *what) {
  uint8_t *o1 = xmalloc((size_t)dstlen);
  uint8_t *o2 = xmalloc((size_t)dstlen);
  int r1 = decode_checked(s, n, dstlen, o1, what);
  int r2 = ref_decode(s, n, o2, dstlen);
  check((r1 < 0) == (r2 < 0), "%s: decoder %d, reference %d (n=%d dstlen=%d)", what, r1, r2, n,
        dstlen);
  if (r1 >= 0 && r2 >= 0)
    check(memcmp(o1, o2, (size_t)dstlen) == 0, "%s: output differs from reference", what);
  free(o1);
  free(o2);
}

static void test_fuzz(void) {
  int iter;
  uint8_t *data = xmalloc(20000);
  uint8_t *comp = xmalloc(20000);
  /* truncations and mutations of real streams */
  for (iter = 0; iter < 60; iter++) {
    int kind = (int)(rnd() % GEN_COUNT);
    int n = 16 + (int)(rnd() % (20000 - 16));
    int cl = 1 + (int)(rnd() % 9), r, cut, m;
    generate(kind, data, (size_t)n);
    r = ndp_blosclz_compress(cl, data, n, comp, n);
    if (r <= 0) continue;
    /* every truncation fails (checked with the exact-size heap copy) */
    for (cut = 0; cut < r; cut += (r > 600 ? 1 + (int)(rnd() % 7) : 1))
      expect_error(comp, cut, n, "truncated stream");
    /* mutations */
    for (m = 0; m < 40; m++) {
      uint8_t *mut = dup_exact(comp, (size_t)r);
      int flips = 1 + (int)(rnd() % 4), f;
      for (f = 0; f < flips; f++) {
        uint32_t at = rnd() % (uint32_t)r; /* (separate statements: the order */
        uint32_t bit = rnd() % 8;          /*  of the calls must be fixed)    */
        mut[at] ^= (uint8_t)(1u << bit);
      }
      fuzz_one(mut, r, n, "mutated stream");
      fuzz_one(mut, r, n / 2 + 1, "mutated stream, small dst");
      free(mut);
    }
  }
  /* pure garbage */
  for (iter = 0; iter < 3000; iter++) {
    int n = 1 + (int)(rnd() % 300), i;
    int dstlen = (int)(rnd() % 2000);
    uint8_t *g = xmalloc((size_t)n);
    for (i = 0; i < n; i++) g[i] = (uint8_t)rnd();
    if (rnd() & 1) g[0] &= 31;
    fuzz_one(g, n, dstlen, "garbage");
    free(g);
  }
  free(data);
  free(comp);
}

/* Streams shaped like BloscLZ ones, built from random instructions (valid and
 * invalid alike), decoded against the reference. */
static void test_random_instructions(void) {
  int iter;
  for (iter = 0; iter < 3000; iter++) {
    buf s = {0}, o = {0};
    int ninstr = 1 + (int)(rnd() % 40), i;
    uint8_t lit[32];
    for (i = 0; i < 32; i++) lit[i] = (uint8_t)rnd();
    {
      int k = 1 + (int)(rnd() % 32);
      put_literals(&s, lit, k);
      out_literals(&o, lit, k);
    }
    for (i = 0; i < ninstr; i++) {
      if (rnd() % 3 == 0) {
        int k = 1 + (int)(rnd() % 32);
        put_literals(&s, lit, k);
        out_literals(&o, lit, k);
      } else {
        uint32_t lmod = rnd() % 4 == 0 ? 600 : 14;
        int len = 3 + (int)(rnd() % lmod);
        uint32_t dmod = rnd() % 8 == 0 ? 73727 : (uint32_t)o.n + 2;
        int dist = 1 + (int)(rnd() % dmod);
        put_match(&s, len, dist);
        if (dist <= o.n) out_match(&o, len, dist);
      }
    }
    if (rnd() % 4) {
      put_literals(&s, lit, 1);
      out_literals(&o, lit, 1);
    }
    fuzz_one(s.b, s.n, o.n, "random instructions");
    fuzz_one(s.b, s.n, o.n + (int)(rnd() % 5), "random instructions, other dstlen");
    free(s.b);
    free(o.b);
  }
}

/* ------------------------------------------------------------------------ */
/* Encoder choices                                                             */

/* Stream size of `data` (0: given up), checked by a round trip. */
static int compressed_size(const uint8_t *data, int n, int clevel, const char *what) {
  return roundtrip(data, n, clevel, n, what);
}

static void test_encoder_choices(void) {
  const int n = 65536;
  uint8_t *data = xmalloc((size_t)n * 8), *plane = xmalloc((size_t)n);
  int cl, r;

  /* Smooth numeric data: a byte plane of a shuffled float64 ramp with the
   * step of np.linspace(0, 1, 12_500_000).  The repeat distance gives long
   * matches: plane 2 (bytes 2 of 65536 values) compresses 10.1 / 13.8 / 19.9
   * times at levels 1 / 4 / 9 (before it came in: given up / 11.9 / 13.6). */
  {
    uint8_t *vals = xmalloc((size_t)n * 8);
    int i;
    for (i = 0; i < n; i++) {
      double v = 0.3 + (double)i / 12499999.0;
      memcpy(vals + 8 * (size_t)i, &v, 8);
    }
    shuffle_bytes(data, vals, (size_t)n * 8, 8);
    memcpy(plane, data + 2 * (size_t)n, (size_t)n);
    free(vals);
  }
  for (cl = 1; cl <= 9; cl++) {
    double want = cl < 4 ? 8.5 : cl < 6 ? 13 : 17;
    r = compressed_size(plane, n, cl, "f64 ramp plane 2");
    check(r > 0 && (double)n / r >= want, "f64 ramp plane 2, clevel %d: ratio %.1f below %.1f",
          cl, r > 0 ? (double)n / r : 0.0, want);
  }

  /* Give-up decisions.  Random bytes: never compressed. */
  generate(GEN_RANDOM, data, (size_t)n);
  for (cl = 1; cl <= 9; cl++)
    check(compressed_size(data, n, cl, "random") == 0, "random clevel %d: compressed", cl);
  /* A compressible tail: compressed at every level (the tail probe passes). */
  memset(data + n / 2, 7, (size_t)n / 2);
  for (cl = 1; cl <= 9; cl++)
    check(compressed_size(data, n, cl, "random head, runs tail") > 0,
          "random head, runs tail, clevel %d: given up", cl);
  /* A compressible head and a random tail: before the head check, levels
   * 1-6 gave such inputs up on the tail sample alone; now an input whose head
   * and whole reach the level's ratio is encoded.  Runs over the first half:
   * the whole compresses 1.9 times, short of level 1's ratio (2). */
  memset(data, 7, (size_t)n / 2);
  generate(GEN_RANDOM, data + n / 2, (size_t)n / 2);
  for (cl = 1; cl <= 9; cl++) {
    r = compressed_size(data, n, cl, "runs head, random tail");
    if (cl == 1)
      check(r == 0, "runs head, random tail, clevel 1: compressed to %d", r);
    else
      check(r > 0 && r < n * 6 / 10, "runs head, random tail, clevel %d: size %d", cl, r);
  }
  /* Runs over three quarters: compressed at every level. */
  memset(data, 7, (size_t)n * 3 / 4);
  for (cl = 1; cl <= 9; cl++) {
    r = compressed_size(data, n, cl, "runs head, random quarter");
    check(r > 0 && r < n * 3 / 10, "runs head, random quarter, clevel %d: size %d", cl, r);
  }
  free(data);
  free(plane);
}

int main(void) {
  test_handbuilt();
  printf("hand-built streams: %ld passed, %ld failed so far\n", g_pass, g_fail);
  test_hostile();
  printf("hostile streams: %ld passed, %ld failed so far\n", g_pass, g_fail);
  test_random_instructions();
  test_fuzz();
  printf("fuzzing: %ld passed, %ld failed so far\n", g_pass, g_fail);
  test_roundtrips();
  printf("round trips: %ld passed, %ld failed so far\n", g_pass, g_fail);
  test_maxout();
  printf("maxout: %ld passed, %ld failed so far\n", g_pass, g_fail);
  test_large();
  printf("large inputs: %ld passed, %ld failed so far\n", g_pass, g_fail);
  test_encoder_choices();
  printf("encoder choices: %ld passed, %ld failed so far\n", g_pass, g_fail);
  printf("%ld passed, %ld failed\n", g_pass, g_fail);
  return g_fail != 0;
}

/* Unit tests of the filter kernels (csrc/filters, FORMAT.md section 2).
 *
 *   test_filters          run the tests; prints one line per failing case and
 *                         a final "N passed, M failed"; exit status 1 on failure
 *   test_filters --bench [BYTES]
 *                         MB/s per kernel, ISA and typesize on blocks of
 *                         BYTES (default 4 MiB); not part of the tests
 *
 * Every available ISA is compared byte for byte with the scalar kernels on
 * ragged sizes; the scalar kernels are compared with naive transcriptions of
 * the spec written here; round trips and hand-computed examples complete it.
 * Buffers are allocated with their exact size so that ASan sees overruns.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "filters.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long n_pass, n_fail;

static void check(int ok, const char *fmt, ...) {
  if (ok) {
    n_pass++;
    return;
  }
  n_fail++;
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

/* ---- data ---------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t rng(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static void fill_random(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(rng() >> 24);
}

static uint8_t *xmalloc(size_t n) {
  uint8_t *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

/* first differing index, or -1 */
static long first_diff(const uint8_t *a, const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return (long)i;
  return -1;
}

/* ---- naive transcriptions of FORMAT.md ------------------------------------ */

static void ref_shuffle(size_t g, size_t n, const uint8_t *in, uint8_t *out) {
  size_t m = n / g;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < g; j++) out[j * m + i] = in[i * g + j];
  for (size_t b = m * g; b < n; b++) out[b] = in[b];
}

static void ref_bitshuffle(size_t t, size_t n, const uint8_t *in, uint8_t *out) {
  size_t ne = n / t, m = ne - ne % 8;
  memset(out, 0, m * t);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < t; j++)
      for (size_t k = 0; k < 8; k++) {
        int bit = (in[i * t + j] >> k) & 1;
        size_t r = 8 * j + k;
        out[r * (m / 8) + i / 8] |= (uint8_t)(bit << (i % 8));
      }
  for (size_t b = m * t; b < n; b++) out[b] = in[b];
}

static void ref_bytedelta(size_t s, size_t n, const uint8_t *in, uint8_t *out) {
  size_t L = n / s;
  for (size_t c = 0; c < s; c++)
    for (size_t k = 0; k < L; k++)
      out[c * L + k] = (uint8_t)(in[c * L + k] - (k ? in[c * L + k - 1] : 0));
  for (size_t b = s * L; b < n; b++) out[b] = in[b];
}

static size_t ref_delta_w(size_t t) {
  if (t == 1 || t == 2 || t == 4 || t == 8) return t;
  return t % 8 == 0 ? 8 : 1;
}

static uint64_t ld_word(const uint8_t *p, size_t w) {
  uint64_t x = 0;
  for (size_t i = 0; i < w; i++) x |= (uint64_t)p[i] << (8 * i);
  return x;
}

static void st_word(uint8_t *p, size_t w, uint64_t x) {
  for (size_t i = 0; i < w; i++) p[i] = (uint8_t)(x >> (8 * i));
}

/* ref = raw block 0 (used when offset != 0) */
static void ref_delta_encode(size_t t, size_t offset, const uint8_t *ref, size_t n,
                             const uint8_t *in, uint8_t *out) {
  size_t w = ref_delta_w(t), q = n / w;
  for (size_t k = 0; k < q; k++) {
    uint64_t x = ld_word(in + k * w, w);
    uint64_t r = offset ? ld_word(ref + k * w, w) : (k ? ld_word(in + (k - 1) * w, w) : 0);
    st_word(out + k * w, w, x ^ r);
  }
  for (size_t b = q * w; b < n; b++) out[b] = in[b];
}

/* ---- harness ------------------------------------------------------------- */

typedef void (*kern_fn)(size_t, size_t, const uint8_t *, uint8_t *);

enum { K_SHUF, K_UNSHUF, K_BITSHUF, K_BITUNSHUF, K_BDENC, K_BDDEC, K_COUNT };
static const char *const kname[K_COUNT] = {"shuffle",      "unshuffle",        "bitshuffle",
                                           "bitunshuffle", "bytedelta_encode", "bytedelta_decode"};

static kern_fn get_kern(const ndp_filter_kernels *k, int which) {
  switch (which) {
    case K_SHUF: return k->shuffle;
    case K_UNSHUF: return k->unshuffle;
    case K_BITSHUF: return k->bitshuffle;
    case K_BITUNSHUF: return k->bitunshuffle;
    case K_BDENC: return k->bytedelta_encode;
    default: return k->bytedelta_decode;
  }
}

static const size_t typesizes[] = {1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 32, 255};
#define N_TYPESIZES (sizeof typesizes / sizeof typesizes[0])

/* One case: every ISA's kernel against the scalar one, the scalar one
 * against the naive reference (forward kernels), and the round trip. */
static void test_case(size_t t, size_t n) {
  const ndp_filter_kernels *sc = ndp_filters_for_isa(NDP_ISA_SCALAR);
  uint8_t *src = xmalloc(n), *exp = xmalloc(n), *out = xmalloc(n), *back = xmalloc(n);
  fill_random(src, n);

  for (int kk = 0; kk < K_COUNT; kk++) {
    memset(exp, 0xA5, n);
    get_kern(sc, kk)(t, n, src, exp);
    for (int isa = 1; isa < NDP_ISA_COUNT; isa++) {
      const ndp_filter_kernels *k = ndp_filters_for_isa(isa);
      if (!k) continue;
      memset(out, 0x5A, n);
      get_kern(k, kk)(t, n, src, out);
      long d = first_diff(exp, out, n);
      check(d < 0, "%s %s t=%zu n=%zu: differs from scalar at byte %ld", k->name, kname[kk], t,
            n, d);
    }
  }

  /* scalar forward kernels against the spec */
  static const int fwd[3] = {K_SHUF, K_BITSHUF, K_BDENC};
  for (int f = 0; f < 3; f++) {
    get_kern(sc, fwd[f])(t, n, src, out);
    if (fwd[f] == K_SHUF)
      ref_shuffle(t, n, src, exp);
    else if (fwd[f] == K_BITSHUF)
      ref_bitshuffle(t, n, src, exp);
    else
      ref_bytedelta(t, n, src, exp);
    long d = first_diff(exp, out, n);
    check(d < 0, "scalar %s t=%zu n=%zu: differs from the spec at byte %ld", kname[fwd[f]], t, n,
          d);
  }

  /* round trips, every ISA */
  for (int isa = 0; isa < NDP_ISA_COUNT; isa++) {
    const ndp_filter_kernels *k = ndp_filters_for_isa(isa);
    if (!k) continue;
    for (int f = 0; f < 3; f++) {
      get_kern(k, fwd[f])(t, n, src, out);
      memset(back, 0xC3, n);
      get_kern(k, fwd[f] + 1)(t, n, out, back);
      long d = first_diff(src, back, n);
      check(d < 0, "%s %s round trip t=%zu n=%zu: differs at byte %ld", k->name, kname[fwd[f]],
            t, n, d);
    }
  }

  /* unshuffle from planes at separate addresses (each its own allocation of exactly
   * m bytes, so that ASan sees any read past a plane) equals the inverse shuffle */
  size_t m = t > 1 ? n / t : 0;
  if (t >= 2 && m > 0) {
    ref_shuffle(t, n, src, out);
    uint8_t **planes = (uint8_t **)xmalloc(t * sizeof *planes);
    for (size_t j = 0; j < t; j++) {
      planes[j] = xmalloc(m);
      memcpy(planes[j], out + j * m, m);
    }
    for (int isa = 0; isa < NDP_ISA_COUNT; isa++) {
      const ndp_filter_kernels *k = ndp_filters_for_isa(isa);
      if (!k) continue;
      memset(back, 0xC3, n);
      k->unshuffle_planes(t, m, (const uint8_t *const *)planes, back);
      long d = first_diff(src, back, m * t);
      check(d < 0, "%s unshuffle_planes t=%zu m=%zu: differs at byte %ld", k->name, t, m, d);
      check(back[m * t - 1 + (n > m * t)] == (n > m * t ? 0xC3 : back[m * t - 1]),
            "%s unshuffle_planes t=%zu m=%zu: wrote past m*t bytes", k->name, t, m);
      /* the streaming-store variant, at every alignment of the destination */
      for (size_t off = 0; off < 32; off += (off < 8 ? 1 : 8)) {
        uint8_t *dd = xmalloc(m * t + off + 1);
        memset(dd, 0xC3, m * t + off + 1);
        k->unshuffle_planes_stream(t, m, (const uint8_t *const *)planes, dd + off);
        d = first_diff(src, dd + off, m * t);
        check(d < 0, "%s unshuffle_planes_stream t=%zu m=%zu off=%zu: differs at byte %ld",
              k->name, t, m, off, d);
        check(dd[off + m * t] == 0xC3 && (off == 0 || dd[off - 1] == 0xC3),
              "%s unshuffle_planes_stream t=%zu m=%zu off=%zu: wrote outside", k->name, t, m, off);
        free(dd);
      }
    }
    for (size_t j = 0; j < t; j++) free(planes[j]);
    free(planes);
  }
  free(src);
  free(exp);
  free(out);
  free(back);
}

/* DELTA: two blocks of a chunk (block 1 refers to block 0), in and out of
 * place, against the spec; decode restores the data. */
static void test_delta_case(size_t t, size_t n0, size_t n1) {
  uint8_t *b0 = xmalloc(n0), *b1 = xmalloc(n1);
  uint8_t *e0 = xmalloc(n0), *e1 = xmalloc(n1), *x0 = xmalloc(n0), *x1 = xmalloc(n1);
  fill_random(b0, n0);
  fill_random(b1, n1);
  if (n1 > 0 && n0 > 0) b1[0] = b0[0]; /* some equal bytes */

  ref_delta_encode(t, 0, NULL, n0, b0, e0);
  ref_delta_encode(t, n0, b0, n1, b1, e1);
  ndp_delta_encode(t, 0, NULL, n0, b0, x0);
  ndp_delta_encode(t, n0, b0, n1, b1, x1);
  check(first_diff(e0, x0, n0) < 0, "delta_encode t=%zu n=%zu block 0", t, n0);
  check(first_diff(e1, x1, n1) < 0, "delta_encode t=%zu n=%zu block 1", t, n1);

  /* in place */
  memcpy(x0, b0, n0);
  ndp_delta_encode(t, 0, NULL, n0, x0, x0);
  check(first_diff(e0, x0, n0) < 0, "delta_encode in place t=%zu n=%zu", t, n0);

  /* decode: block 0 first, then block 1 against the decoded block 0 */
  uint8_t *d0 = xmalloc(n0), *d1 = xmalloc(n1);
  ndp_delta_decode(t, 0, NULL, n0, e0, d0);
  ndp_delta_decode(t, n0, d0, n1, e1, d1);
  check(first_diff(b0, d0, n0) < 0, "delta_decode t=%zu n=%zu block 0", t, n0);
  check(first_diff(b1, d1, n1) < 0, "delta_decode t=%zu n=%zu block 1", t, n1);
  memcpy(x0, e0, n0);
  memcpy(x1, e1, n1);
  ndp_delta_decode(t, 0, NULL, n0, x0, x0);
  ndp_delta_decode(t, n0, x0, n1, x1, x1);
  check(first_diff(b0, x0, n0) < 0, "delta_decode in place t=%zu n=%zu block 0", t, n0);
  check(first_diff(b1, x1, n1) < 0, "delta_decode in place t=%zu n=%zu block 1", t, n1);
  free(b0);
  free(b1);
  free(e0);
  free(e1);
  free(x0);
  free(x1);
  free(d0);
  free(d1);
}

/* ---- known answers --------------------------------------------------------- */

static void expect_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t n) {
  long d = first_diff(got, want, n);
  check(d < 0, "%s: byte %ld is 0x%02x, expected 0x%02x", what, d, d < 0 ? 0 : got[d],
        d < 0 ? 0 : want[d]);
}

static void kat_all_isas(const char *what, int which, size_t t, const uint8_t *in,
                         const uint8_t *want, size_t n) {
  for (int isa = 0; isa < NDP_ISA_COUNT; isa++) {
    const ndp_filter_kernels *k = ndp_filters_for_isa(isa);
    if (!k) continue;
    uint8_t *out = xmalloc(n);
    char name[128];
    get_kern(k, which)(t, n, in, out);
    snprintf(name, sizeof name, "%s (%s)", what, k->name);
    expect_bytes(name, out, want, n);
    free(out);
  }
}

static void test_known_answers(void) {
  uint8_t in[64], out[64];

  /* SHUFFLE of 0..15 with g = 4, plus 2 leftover bytes */
  for (int i = 0; i < 18; i++) in[i] = (uint8_t)i;
  static const uint8_t shuf4[18] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 16, 17};
  kat_all_isas("shuffle 0..15 g=4", K_SHUF, 4, in, shuf4, 16);
  kat_all_isas("shuffle 0..17 g=4 (2 leftover)", K_SHUF, 4, in, shuf4, 18);
  kat_all_isas("unshuffle g=4", K_UNSHUF, 4, shuf4, in, 18);
  kat_all_isas("shuffle g=1 is the identity", K_SHUF, 1, in, in, 18);

  /* BITSHUFFLE t=2: elements 0..7 (LE uint16) then 3 tail bytes (n = 19:
   * 9 elements, m = 8, R = 3) */
  for (int i = 0; i < 9; i++) {
    in[2 * i] = (uint8_t)i;
    in[2 * i + 1] = 0;
  }
  in[18] = 0x77;
  static const uint8_t bs2[19] = {0xAA, 0xCC, 0xF0, 0, 0, 0, 0, 0, 0,   0,
                                  0,    0,    0,    0, 0, 0, 8, 0, 0x77};
  kat_all_isas("bitshuffle t=2 of 0..8", K_BITSHUF, 2, in, bs2, 19);
  kat_all_isas("bitunshuffle t=2", K_BITUNSHUF, 2, bs2, in, 19);
  /* BITSHUFFLE t=1: 0xFF then zeros -> every bit-row has bit 0 set */
  memset(in, 0, 8);
  in[0] = 0xFF;
  static const uint8_t bs1[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  kat_all_isas("bitshuffle t=1 of FF 00..", K_BITSHUF, 1, in, bs1, 8);
  /* BITSHUFFLE with m == 0 copies: 7 elements of 4 bytes */
  for (int i = 0; i < 28; i++) in[i] = (uint8_t)(i * 7 + 1);
  kat_all_isas("bitshuffle t=4 n=28 (m=0) copies", K_BITSHUF, 4, in, in, 28);

  /* BYTEDELTA s=2, n=7: L=3, channels [10,13,11] [200,100,0], tail [5] */
  static const uint8_t bd_in[7] = {10, 13, 11, 200, 100, 0, 5};
  static const uint8_t bd_out[7] = {10, 3, 254, 200, 156, 156, 5};
  kat_all_isas("bytedelta_encode s=2 n=7", K_BDENC, 2, bd_in, bd_out, 7);
  kat_all_isas("bytedelta_decode s=2 n=7", K_BDDEC, 2, bd_out, bd_in, 7);

  /* legacy BYTEDELTA (34): s=1, L=20, all ones: 1..16 then restart 1..4;
   * s=2, n=41: L=20 per channel and one tail byte */
  {
    uint8_t ones[41], lw[41];
    memset(ones, 1, sizeof ones);
    for (int k = 0; k < 20; k++) lw[k] = (uint8_t)(k < 16 ? k + 1 : k - 15);
    ndp_bytedelta_legacy_decode(1, 20, ones, out);
    expect_bytes("bytedelta legacy decode s=1 L=20", out, lw, 20);
    memcpy(lw + 20, lw, 20);
    lw[40] = 1;
    uint8_t out41[41];
    ndp_bytedelta_legacy_decode(2, 41, ones, out41);
    expect_bytes("bytedelta legacy decode s=2 n=41", out41, lw, 41);
    /* L < 16: the same as BYTEDELTA */
    ndp_bytedelta_legacy_decode(2, 7, bd_out, out);
    expect_bytes("bytedelta legacy decode s=2 n=7", out, bd_in, 7);
  }

  /* DELTA t=4 (w=4), block 0: words 1,3,7,7 + 1 tail byte */
  {
    static const uint8_t d_in[17] = {1, 0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 9};
    static const uint8_t d0[17] = {1, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 9};
    ndp_delta_encode(4, 0, NULL, 17, d_in, out);
    expect_bytes("delta_encode t=4 block 0", out, d0, 17);
    ndp_delta_decode(4, 0, NULL, 17, d0, out);
    expect_bytes("delta_decode t=4 block 0", out, d_in, 17);
    /* block at offset 17 refers to block 0 (d_in): words 1,1,1,1 */
    static const uint8_t b1[16] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
    static const uint8_t d1[16] = {0, 0, 0, 0, 2, 0, 0, 0, 6, 0, 0, 0, 6, 0, 0, 0};
    ndp_delta_encode(4, 17, d_in, 16, b1, out);
    expect_bytes("delta_encode t=4 block 1 (ref block 0)", out, d1, 16);
    ndp_delta_decode(4, 17, d_in, 16, d1, out);
    expect_bytes("delta_decode t=4 block 1 (ref block 0)", out, b1, 16);
    /* t=2 words 0x0102, 0x0304: XOR per 2-byte word */
    static const uint8_t w2[5] = {0x02, 0x01, 0x04, 0x03, 0xEE};
    static const uint8_t w2e[5] = {0x02, 0x01, 0x06, 0x02, 0xEE};
    ndp_delta_encode(2, 0, NULL, 5, w2, out);
    expect_bytes("delta_encode t=2", out, w2e, 5);
    /* t=12 -> byte deltas; t=24 -> 8-byte words */
    static const uint8_t w1[4] = {5, 5, 6, 1};
    static const uint8_t w1e[4] = {5, 0, 3, 7};
    ndp_delta_encode(12, 0, NULL, 4, w1, out);
    expect_bytes("delta_encode t=12 (bytes)", out, w1e, 4);
    uint8_t w8[20], w8e[20];
    for (int i = 0; i < 20; i++) w8[i] = (uint8_t)(i * 13 + 1);
    for (int i = 0; i < 20; i++) w8e[i] = (uint8_t)(i < 8 || i >= 16 ? w8[i] : w8[i] ^ w8[i - 8]);
    ndp_delta_encode(24, 0, NULL, 20, w8, out);
    expect_bytes("delta_encode t=24 (8-byte words, 4 tail bytes)", out, w8e, 20);
  }

  /* TRUNC_PREC */
  {
    uint8_t f[9], o[9];
    memset(f, 0xFF, 9);
    static const uint8_t tp10[9] = {0x00, 0xE0, 0xFF, 0xFF, 0x00, 0xE0, 0xFF, 0xFF, 0xFF};
    check(ndp_trunc_prec(4, 10, 9, f, o) == 0, "trunc_prec t=4 p=10 accepted");
    expect_bytes("trunc_prec t=4 p=10 (clear 13 bits)", o, tp10, 9);
    static const uint8_t tpm5[8] = {0xE0, 0xFF, 0xFF, 0xFF, 0xE0, 0xFF, 0xFF, 0xFF};
    check(ndp_trunc_prec(4, -5, 8, f, o) == 0, "trunc_prec t=4 p=-5 accepted");
    expect_bytes("trunc_prec t=4 p=-5 (clear 5 bits)", o, tpm5, 8);
    static const uint8_t tp8[9] = {0, 0, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF};
    check(ndp_trunc_prec(8, 11, 9, f, o) == 0, "trunc_prec t=8 p=11 accepted");
    expect_bytes("trunc_prec t=8 p=11 (clear 41 bits)", o, tp8, 9);
    check(ndp_trunc_prec(4, 23, 8, f, o) == 0 && !memcmp(o, f, 8), "trunc_prec t=4 p=23 keeps all");
    check(ndp_trunc_prec(4, -22, 8, f, o) == 0, "trunc_prec t=4 p=-22 accepted");
    check(ndp_trunc_prec(8, 52, 8, f, o) == 0, "trunc_prec t=8 p=52 accepted");
    check(ndp_trunc_prec(8, -51, 8, f, o) == 0, "trunc_prec t=8 p=-51 accepted");
    static const struct {
      size_t t;
      int p;
    } bad[] = {{4, 0}, {4, 24}, {4, -23}, {4, -128}, {4, 127}, {8, 0}, {8, 53},
               {8, -52}, {2, 5}, {1, 3}, {16, 5}, {3, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
      check(ndp_trunc_prec(bad[i].t, (int8_t)bad[i].p, 8, f, o) == -1,
            "trunc_prec t=%zu p=%d must be rejected", bad[i].t, bad[i].p);
  }

  /* INT_TRUNC */
  {
    uint8_t a[19], o[19], e[19];
    for (int i = 0; i < 19; i++) a[i] = (uint8_t)(i * 37);
    for (int i = 0; i < 19; i++) e[i] = a[i] & 0x80;
    check(ndp_int_trunc(1, -7, 19, a, o) == 0, "int_trunc t=1 p=-7 accepted");
    expect_bytes("int_trunc t=1 p=-7", o, e, 19);
    for (int i = 0; i < 19; i++) e[i] = (uint8_t)(i >= 16 ? a[i] : (i % 8 == 0 ? a[i] & 0xF0 : a[i]));
    check(ndp_int_trunc(8, -4, 19, a, o) == 0, "int_trunc t=8 p=-4 accepted");
    expect_bytes("int_trunc t=8 p=-4 (3 tail bytes)", o, e, 19);
    for (int i = 0; i < 19; i++) e[i] = (uint8_t)(i >= 18 ? a[i] : (i % 2 == 0 ? 0 : a[i] & 0xE0));
    check(ndp_int_trunc(2, 3, 19, a, o) == 0, "int_trunc t=2 p=3 accepted");
    expect_bytes("int_trunc t=2 p=3 (keep 3 bits)", o, e, 19);
    check(ndp_int_trunc(1, 8, 19, a, o) == 0 && !memcmp(o, a, 19), "int_trunc t=1 p=8 keeps all");
    static const struct {
      size_t t;
      int p;
    } bad[] = {{1, 0}, {1, 9}, {1, -8}, {2, -16}, {2, 17}, {4, 0}, {4, -32},
               {8, 0}, {8, -64}, {8, 65}, {8, -128}, {3, 1}, {16, 2}, {0, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
      check(ndp_int_trunc(bad[i].t, (int8_t)bad[i].p, 8, a, o) == -1,
            "int_trunc t=%zu p=%d must be rejected", bad[i].t, bad[i].p);
  }
}

/* n == 0 with NULL buffers (callers validate parameters this way). */
static void test_empty_null(void) {
  for (int isa = 0; isa < NDP_ISA_COUNT; isa++) {
    const ndp_filter_kernels *k = ndp_filters_for_isa(isa);
    if (!k) continue;
    for (int kk = 0; kk < K_COUNT; kk++) get_kern(k, kk)(4, 0, NULL, NULL);
  }
  ndp_bytedelta_legacy_decode(4, 0, NULL, NULL);
  ndp_delta_encode(4, 0, NULL, 0, NULL, NULL);
  ndp_delta_decode(4, 0, NULL, 0, NULL, NULL);
  check(ndp_trunc_prec(4, 10, 0, NULL, NULL) == 0 && ndp_trunc_prec(4, 0, 0, NULL, NULL) == -1,
        "trunc_prec validates with n == 0 and NULL buffers");
  check(ndp_int_trunc(2, 5, 0, NULL, NULL) == 0 && ndp_int_trunc(2, 0, 0, NULL, NULL) == -1,
        "int_trunc validates with n == 0 and NULL buffers");
}

/* ---- dispatch ------------------------------------------------------------ */

static void test_dispatch(void) {
  const ndp_filter_kernels *k = ndp_filters();
  check(k != NULL, "ndp_filters() returns kernels");
  check(ndp_filters_for_isa(NDP_ISA_SCALAR) != NULL, "scalar kernels always available");
  check(ndp_cpu_has_isa(NDP_ISA_SCALAR) == 1, "ndp_cpu_has_isa(scalar) == 1");
  check(ndp_filters_for_isa(-1) == NULL && ndp_filters_for_isa(NDP_ISA_COUNT) == NULL,
        "ndp_filters_for_isa rejects bad ids");
  check(ndp_filters_set_isa(NDP_ISA_COUNT) == -1, "ndp_filters_set_isa rejects bad ids");
  int orig = ndp_filters_isa();
  check(k == ndp_filters_for_isa(orig), "ndp_filters() matches ndp_filters_isa()");
  const char *env = getenv("NDPACK_ISA");
  if (env == NULL) {
    int best = 0;
    for (int i = 0; i < NDP_ISA_COUNT; i++)
      if (ndp_cpu_has_isa(i)) best = i;
    check(orig == best, "default ISA is the best available (%d, got %d)", best, orig);
  }
  for (int i = 0; i < NDP_ISA_COUNT; i++) {
    const ndp_filter_kernels *ki = ndp_filters_for_isa(i);
    if (ki == NULL) {
      check(ndp_filters_set_isa(i) == -1, "set_isa(%d) fails when unavailable", i);
      continue;
    }
    check(ndp_filters_set_isa(i) == 0 && ndp_filters() == ki && ndp_filters_isa() == i,
          "set_isa(%d) switches kernels", i);
  }
  ndp_filters_set_isa(orig);
  printf("ISAs: current %s; available:", ndp_filters()->name);
  for (int i = 0; i < NDP_ISA_COUNT; i++)
    if (ndp_filters_for_isa(i)) printf(" %s", ndp_filters_for_isa(i)->name);
  printf("\n");
}

/* First use from several threads at once: everyone gets the same table. */
static void *first_use(void *arg) {
  *(const ndp_filter_kernels **)arg = ndp_filters();
  return NULL;
}

static void test_dispatch_threads(void) {
  enum { NT = 8 };
  pthread_t th[NT];
  const ndp_filter_kernels *got[NT];
  int started = 0;
  for (int i = 0; i < NT; i++)
    if (pthread_create(&th[i], NULL, first_use, &got[i]) == 0) started++;
    else break;
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < started; i++)
    check(got[i] != NULL && got[i] == got[0], "concurrent first ndp_filters() calls agree");
}

/* ---- benchmark ----------------------------------------------------------- */

static double now_sec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bench_one(kern_fn f, size_t t, size_t n, const uint8_t *src, uint8_t *dst) {
  double best = 1e30;
  f(t, n, src, dst); /* warm up */
  for (int rep = 0; rep < 5; rep++) {
    int iters = 0;
    double t0 = now_sec(), el;
    do {
      f(t, n, src, dst);
      iters++;
      el = now_sec() - t0;
    } while (el < 0.05);
    if (el / iters < best) best = el / iters;
  }
  return (double)n / best / 1e6;
}

static int bench(size_t n) {
  /* 64-byte aligned buffers, as the chunk code's scratch buffers */
  void *ps = NULL, *pd = NULL;
  if (posix_memalign(&ps, 64, n) != 0 || posix_memalign(&pd, 64, n) != 0) {
    fprintf(stderr, "out of memory\n");
    return 2;
  }
  uint8_t *src = ps, *dst = pd;
  /* smooth-ish data (a noisy ramp), like what filters see in practice */
  for (size_t i = 0; i < n; i += 4) {
    uint32_t v = (uint32_t)(i * 3 + (rng() & 0xFF));
    memcpy(src + i, &v, 4);
  }
  static const size_t shuf_ts[] = {2, 3, 4, 8, 12, 16};
  static const size_t bit_ts[] = {1, 2, 3, 4, 8, 16};
  static const size_t bd_ts[] = {2, 4, 8};
  printf("MB/s on %zu-byte blocks, 64-byte aligned (1 MB = 1e6 bytes)\n", n);
  printf("%-18s %4s", "kernel", "t");
  for (int isa = 0; isa < NDP_ISA_COUNT; isa++)
    if (ndp_filters_for_isa(isa)) printf(" %9s", ndp_filters_for_isa(isa)->name);
  printf("\n");
  for (int kk = 0; kk < K_COUNT; kk++) {
    const size_t *ts;
    size_t nts;
    if (kk <= K_UNSHUF) {
      ts = shuf_ts;
      nts = sizeof shuf_ts / sizeof shuf_ts[0];
    } else if (kk <= K_BITUNSHUF) {
      ts = bit_ts;
      nts = sizeof bit_ts / sizeof bit_ts[0];
    } else {
      ts = bd_ts;
      nts = sizeof bd_ts / sizeof bd_ts[0];
    }
    for (size_t ti = 0; ti < nts; ti++) {
      printf("%-18s %4zu", kname[kk], ts[ti]);
      for (int isa = 0; isa < NDP_ISA_COUNT; isa++) {
        const ndp_filter_kernels *k = ndp_filters_for_isa(isa);
        if (!k) continue;
        printf(" %9.0f", bench_one(get_kern(k, kk), ts[ti], n, src, dst));
        fflush(stdout);
      }
      printf("\n");
    }
  }
  free(src);
  free(dst);
  return 0;
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    size_t n = (argc > 2) ? (size_t)strtoull(argv[2], NULL, 10) : 0;
    return bench(n >= 1024 ? n : (size_t)4 << 20);
  }

  test_dispatch_threads(); /* must run before anything else initialises */
  test_dispatch();
  test_known_answers();
  test_empty_null();

  /* ragged sizes, exhaustively */
  for (size_t ti = 0; ti < N_TYPESIZES; ti++)
    for (size_t n = 0; n <= 300; n++) test_case(typesizes[ti], n);
  /* larger sizes: several SIMD iterations, transposition rounds and tails */
  static const size_t big[] = {1024, 4099, 16384 + 24, 65536, 100003, 262144 + 200};
  for (size_t ti = 0; ti < N_TYPESIZES; ti++)
    for (size_t b = 0; b < sizeof big / sizeof big[0]; b++) test_case(typesizes[ti], big[b]);
  for (size_t ti = 0; ti < N_TYPESIZES; ti++) test_case(typesizes[ti], ((size_t)1 << 20) + 37);
  /* random group sizes and lengths */
  for (int r = 0; r < 200; r++) {
    size_t t = 1 + (size_t)(rng() % 40);
    size_t n = (size_t)(rng() % 40000);
    test_case(t, n);
  }
  for (size_t t = 1; t <= 256; t++) test_case(t, 8 * t * 33 + t / 2);
  test_case(300, 300 * 70 + 11);                   /* more planes than the table */

  /* DELTA */
  static const size_t delta_ts[] = {1, 2, 3, 4, 5, 8, 12, 16, 24, 255};
  for (size_t ti = 0; ti < sizeof delta_ts / sizeof delta_ts[0]; ti++) {
    for (size_t n = 0; n <= 80; n++) test_delta_case(delta_ts[ti], n + 20, n);
    test_delta_case(delta_ts[ti], 65536 + 5, 65536 + 5);
    test_delta_case(delta_ts[ti], 4096, 1001);
  }

  printf("%ld passed, %ld failed\n", n_pass, n_fail);
  return n_fail != 0;
}

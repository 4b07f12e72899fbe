/* C unit tests of the chunk codec: golden vectors, round trips over codecs,
 * filters, typesizes, sizes and threads, partial decoding, special chunks, and
 * truncated/corrupt input.  Run under ASan/UBSan in CI.
 * Vectors are read from $NDPACK_VECTORS (meson sets tests/data/vectors). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndpack.h"

#include "check.h"

static uint8_t *read_file(const char *path, long *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc((size_t)*len + 1);
  if (fread(buf, 1, (size_t)*len, f) != (size_t)*len) { free(buf); buf = NULL; }
  fclose(f);
  return buf;
}

/* Inputs of different character. */
static void make_input(int kind, uint8_t *p, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    switch (kind) {
      case 0: p[i] = (uint8_t)(i / 8 % 251); break;                 /* smooth */
      case 1: p[i] = (uint8_t)rng(); break;                          /* random */
      case 2: p[i] = (i % 1000 < 900) ? 0 : (uint8_t)i; break;       /* sparse */
      default: p[i] = (uint8_t)((i * 2654435761u) >> 24 & 0x0F); break;
    }
  }
}

/* Block prefixes (ndp_decompress_block_prefixes) of every block, with wanted byte
 * counts of 0, 1, a random one and the whole block, equal the whole decode `full`. */
static void check_prefixes(const uint8_t *c, int32_t cb, const uint8_t *full, const char *what) {
  ndp_chunk_info ci;
  ndp_error err = {0, {0}};
  if (ndp_chunk_parse(c, cb, &ci, &err) != 0 || ci.vlblocks || ci.nbytes == 0) return;
  int32_t nb = ci.nblocks < 64 ? ci.nblocks : 64, bs = ci.blocksize;
  int32_t *blocks = malloc(sizeof(int32_t) * (size_t)nb), *needs = malloc(sizeof(int32_t) * (size_t)nb);
  uint8_t *out = malloc((size_t)nb * (size_t)bs);
  for (int pass = 0; pass < 4; pass++) {
    for (int32_t i = 0; i < nb; i++) {
      blocks[i] = (int32_t)((ci.nblocks - 1 - i * 7) % ci.nblocks + ci.nblocks) % ci.nblocks;
      needs[i] = pass == 0 ? 0 : pass == 1 ? 1 : pass == 2 ? (int32_t)(rng() % (uint64_t)(bs + 1))
                                                       : bs;
    }
    int32_t r = ndp_decompress_block_prefixes(c, cb, blocks, needs, nb, out,
                                              nb * bs, 1 + pass % 2, &err);
    CHECK(r >= 0, "%s: prefixes pass %d: %s", what, pass, err.msg);
    for (int32_t i = 0; r >= 0 && i < nb; i++) {
      int32_t off = blocks[i] * bs, len = ci.nbytes - off < bs ? ci.nbytes - off : bs;
      len = needs[i] < len ? needs[i] : len;
      CHECK(memcmp(out + (size_t)i * bs, full + off, (size_t)len) == 0,
            "%s: block %d prefix of %d bytes", what, blocks[i], len);
    }
  }
  needs[0] = -1;
  CHECK(ndp_decompress_block_prefixes(c, cb, blocks, needs, 1, out, bs, 1, &err) < 0,
        "%s: negative byte count accepted", what);
  free(blocks); free(needs); free(out);
}

static void test_vectors(const char *dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/chunks", dir);
  DIR *d = opendir(path);
  if (!d) {
    CHECK(0, "golden vectors: cannot open %s (tests/data/vectors, or set NDPACK_VECTORS)", path);
    return;
  }
  int64_t arange[1000];
  for (int i = 0; i < 1000; i++) arange[i] = i;
  struct dirent *e;
  int count = 0;
  while ((e = readdir(d)) != NULL) {
    if (!strstr(e->d_name, ".cdata")) continue;
    snprintf(path, sizeof path, "%s/chunks/%s", dir, e->d_name);
    long len = 0;
    uint8_t *c = read_file(path, &len);
    CHECK(c != NULL, "%s: cannot read", path);
    if (c == NULL) continue;
    ndp_chunk_info ci;
    ndp_error err = {0, {0}};
    int rc = ndp_chunk_parse(c, (int32_t)len, &ci, &err);
    CHECK(rc == 0, "%s: parse: %s", e->d_name, err.msg);
    if (rc == 0) {
      uint8_t *out = malloc((size_t)ci.nbytes + 1);
      int32_t r = ndp_decompress(c, (int32_t)len, out, ci.nbytes, 2, &err);
      CHECK(r == ci.nbytes, "%s: decode returned %d: %s", e->d_name, r, err.msg);
      if (strncmp(e->d_name, "i64_", 4) == 0 && !strstr(e->d_name, "inttrunc"))
        CHECK(r == 8000 && memcmp(out, arange, 8000) == 0, "%s: content", e->d_name);
      if (r == ci.nbytes) check_prefixes(c, (int32_t)len, out, e->d_name);
      if (r > 0 && ci.typesize > 0 && !ci.vlblocks) {   /* getitem equals the whole decode */
        int32_t ts = ci.typesize, nitems = ci.nbytes / ts;
        int32_t a = nitems / 3, b = nitems - a;
        uint8_t *part = malloc((size_t)(b - a) * ts + 1);
        int32_t g = ndp_getitem(c, (int32_t)len, a, b - a, part, (b - a) * ts, &err);
        CHECK(g == (b - a) * ts && memcmp(part, out + (size_t)a * ts, (size_t)g) == 0,
              "%s: getitem [%d,%d)", e->d_name, a, b);
        free(part);
      }
      free(out);
      count++;
    }
    free(c);
  }
  closedir(d);
  CHECK(count >= 70, "expected the golden chunks, decoded %d", count);
}

static const int codecs[] = {NDP_BLOSCLZ, NDP_LZ4, NDP_LZ4HC, NDP_ZLIB, NDP_ZSTD};
static const uint8_t pipelines[][6] = {
  {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, NDP_SHUFFLE}, {NDP_BITSHUFFLE, 0, 0, 0, 0, 0},
  {NDP_DELTA, NDP_SHUFFLE, 0, 0, 0, 0}, {NDP_SHUFFLE, NDP_BYTEDELTA, 0, 0, 0, 0},
  {NDP_DELTA, 0, 0, 0, 0, 0}, {NDP_SHUFFLE, NDP_BITSHUFFLE, 0, 0, 0, NDP_SHUFFLE},
};

static void roundtrip(const ndp_cparams *cp, const uint8_t *src, int32_t n, const char *what) {
  uint8_t *c = malloc((size_t)n + NDP_MAX_OVERHEAD);
  uint8_t *d = malloc((size_t)n + 1);
  ndp_error err = {0, {0}};
  int32_t cb = ndp_compress(cp, src, n, c, n + NDP_MAX_OVERHEAD, &err);
  CHECK(cb > 0 && cb <= n + NDP_MAX_OVERHEAD, "%s: compress %d: %s", what, cb, err.msg);
  if (cb > 0) {
    int32_t r = ndp_decompress(c, cb, d, n, cp->nthreads, &err);
    int ok = r == n && (n == 0 || memcmp(src, d, (size_t)n) == 0);
    /* DELTA leaves the bytes past the last whole word undefined in C-Blosc2;
     * ours passes them through, so the comparison is exact. */
    CHECK(ok, "%s: decompress %d: %s", what, r, err.msg);
    if (ok && n > 0) check_prefixes(c, cb, d, what);
    /* the fused checksum is the crc32c of the chunk's bytes, whatever its kind */
    uint32_t crc = 0;
    memset(d, 0, (size_t)n);
    int32_t rc = ndp_decompress_crc(c, cb, d, n, cp->nthreads, &crc, &err);
    CHECK(rc == n && (n == 0 || memcmp(src, d, (size_t)n) == 0), "%s: decompress_crc %d", what, rc);
    CHECK(rc < 0 || crc == ndp_crc32c(0, c, (size_t)cb), "%s: fused crc32c differs", what);
    /* Every truncation is an error, never a crash. */
    if (n < 5000) {
      for (int32_t t = 0; t < cb; t += 1 + t / 8) {
        ndp_error e2 = {0, {0}};
        int32_t r2 = ndp_decompress(c, t, d, n, 1, &e2);
        CHECK(r2 < 0, "%s: truncated to %d of %d decoded", what, t, cb);
      }
    }
  }
  free(c);
  free(d);
}

static void test_roundtrips(void) {
  static const int32_t typesizes[] = {1, 2, 3, 4, 8, 16, 255};
  static const int32_t sizes[] = {0, 1, 7, 31, 32, 33, 100, 1000, 4097, 65536 + 13, 300000};
  int32_t maxn = 300000;
  uint8_t *src = malloc((size_t)maxn);
  char what[200];
  for (int kind = 0; kind < 4; kind++) {
    make_input(kind, src, maxn);
    for (size_t ci = 0; ci < sizeof codecs / sizeof *codecs; ci++)
      for (size_t pi = 0; pi < sizeof pipelines / sizeof *pipelines; pi++)
        for (size_t ti = 0; ti < sizeof typesizes / sizeof *typesizes; ti++)
          for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            int32_t n = sizes[si];
            if (kind != 0 && n > 70000) continue;
            ndp_cparams cp = ndp_cparams_default();
            cp.compcode = codecs[ci];
            cp.clevel = (int)(1 + (si + ti) % 9);
            cp.typesize = typesizes[ti];
            cp.nthreads = 1 + (int)(si % 2);
            memcpy(cp.filters, pipelines[pi], 6);
            if (si % 3 == 1) cp.blocksize = 1000;
            cp.use_dict = (ti % 2 == 0) && (cp.compcode == NDP_ZSTD || cp.compcode == NDP_LZ4 ||
                                            cp.compcode == NDP_LZ4HC);
            snprintf(what, sizeof what, "kind %d codec %d pipe %zu ts %d n %d dict %d", kind,
                     cp.compcode, pi, cp.typesize, n, cp.use_dict);
            roundtrip(&cp, src, n, what);
          }
  }
  free(src);
}

/* The chunk of test_partial and test_fd_read_blocks: 1 MiB of make_input(0), 27
 * blocks of 40000 bytes (the last partial), typesize 4, with or without DELTA. */
static int32_t blocks_chunk(const uint8_t *src, int32_t n, int delta, uint8_t *c,
                            ndp_error *err) {
  ndp_cparams cp = ndp_cparams_default();
  cp.blocksize = 40000;
  cp.typesize = 4;
  cp.filters[0] = delta ? NDP_DELTA : 0;
  int32_t cb = ndp_compress(&cp, src, n, c, n + 32, err);
  CHECK(cb > 0, "compress: %s", err->msg);
  return cb;
}

static void test_partial(void) {
  int32_t n = 1 << 20;
  uint8_t *src = malloc((size_t)n), *full = malloc((size_t)n);
  uint8_t *c = malloc((size_t)n + 32), *part = malloc((size_t)n);
  make_input(0, src, n);
  ndp_error err = {0, {0}};
  for (int delta = 0; delta < 2; delta++) {
    int32_t cb = blocks_chunk(src, n, delta, c, &err);
    for (int k = 0; k < 50; k++) {
      int32_t a = (int32_t)(rng() % (n / 4)), len = (int32_t)(rng() % (n / 4 - a + 1));
      int32_t r = ndp_getitem(c, cb, a, len, part, n, &err);
      CHECK(r == len * 4 && memcmp(part, src + (size_t)a * 4, (size_t)r) == 0,
            "getitem [%d, +%d) delta %d", a, len, delta);
    }
    int32_t blocks[] = {26, 3, 0, 7};   /* 26 is the leftover block */
    int32_t r = ndp_decompress_blocks(c, cb, blocks, 4, part, n, 2, &err);
    CHECK(r == 4 * 40000, "decompress_blocks size %d: %s", r, err.msg);
    int ok = 1;
    for (int i = 0; i < 4; i++) {
      int32_t sz = blocks[i] == 26 ? n - 26 * 40000 : 40000;
      ok &= memcmp(part + i * 40000, src + blocks[i] * 40000, (size_t)sz) == 0;
    }
    CHECK(ok, "decompress_blocks content delta %d", delta);
    int32_t bad[] = {27};
    CHECK(ndp_decompress_blocks(c, cb, bad, 1, part, n, 1, &err) < 0, "block out of range");
  }
  (void)full;
  free(src); free(full); free(c); free(part);
}

static void test_special(void) {
  uint8_t c[64], out[800];
  ndp_error err = {0, {0}};
  double v = 3.25;
  int32_t cb = ndp_chunk_special(NDP_SPECIAL_VALUE, 800, 8, 0, &v, c, sizeof c, &err);
  CHECK(cb == 40, "value chunk cbytes %d", cb);
  CHECK(ndp_decompress(c, cb, out, 800, 1, &err) == 800, "value decode");
  int ok = 1;
  for (int i = 0; i < 100; i++) { double x; memcpy(&x, out + 8 * i, 8); ok &= x == 3.25; }
  CHECK(ok, "value content");
  CHECK(ndp_getitem(c, cb, 7, 3, out, 24, &err) == 24, "value getitem");
  cb = ndp_chunk_special(NDP_SPECIAL_NAN, 400, 4, 0, NULL, c, sizeof c, &err);
  CHECK(cb == 32 && ndp_decompress(c, cb, out, 800, 1, &err) == 400, "nan chunk");
  float f; memcpy(&f, out + 396, 4);
  CHECK(f != f, "nan content");
  CHECK(ndp_chunk_special(NDP_SPECIAL_NAN, 400, 2, 0, NULL, c, sizeof c, &err) < 0, "nan ts 2");
  /* All-zero data collapses into a zeros chunk. */
  memset(out, 0, sizeof out);
  ndp_cparams cp = ndp_cparams_default();
  uint8_t big[900];
  cb = ndp_compress(&cp, out, 800, big, sizeof big, &err);
  CHECK(cb == 32 && big[31] == 0x10, "zero collapse cbytes %d flags %x", cb, big[31]);
}

static void test_bad_params(void) {
  uint8_t src[100] = {0}, dst[200];
  ndp_error err = {0, {0}};
  ndp_cparams cp = ndp_cparams_default();
  cp.compcode = 99;
  CHECK(ndp_compress(&cp, src, 100, dst, 200, &err) == NDP_ERR_CODEC, "unknown codec");
  CHECK(strstr(err.msg, "99") != NULL, "message names the codec: %s", err.msg);
  cp = ndp_cparams_default();
  cp.filters[2] = 77;
  err.code = 0;
  CHECK(ndp_compress(&cp, src, 100, dst, 200, &err) == NDP_ERR_FILTER, "unknown filter");
  cp = ndp_cparams_default();
  cp.clevel = 10;
  err.code = 0;
  CHECK(ndp_compress(&cp, src, 100, dst, 200, &err) == NDP_ERR_PARAM, "clevel 10");
  cp = ndp_cparams_default();
  cp.filters[0] = NDP_TRUNC_PREC;
  cp.typesize = 2;
  err.code = 0;
  CHECK(ndp_compress(&cp, src, 100, dst, 200, &err) == NDP_ERR_FILTER, "trunc_prec ts 2");
  /* Lying headers. */
  uint8_t h[40] = {5, 1, 0x05, 8};
  int32_t v = 1000; memcpy(h + 4, &v, 4); memcpy(h + 8, &v, 4);
  v = 40; memcpy(h + 12, &v, 4);
  err.code = 0;
  CHECK(ndp_decompress(h, 40, dst, 200, 1, &err) < 0, "bstarts past the end");
  v = 1 << 30; memcpy(h + 12, &v, 4);
  err.code = 0;
  CHECK(ndp_decompress(h, 40, dst, 200, 1, &err) == NDP_ERR_FORMAT, "cbytes > available");
}

/* Noise in a big chunk: stored uncompressed (early exit after two sample blocks);
 * with NDP_RAW_HEADER_ONLY only the header is written and header + data decodes. */
static void test_noise_raw(void) {
  int32_t n = 4 << 20;
  uint8_t *src = malloc((size_t)n), *c = malloc((size_t)n + NDP_MAX_OVERHEAD);
  uint8_t *out = malloc((size_t)n);
  CHECK(src && c && out, "malloc");
  uint64_t x = 88172645463325252ull;
  for (int32_t i = 0; i < n; i++) {           /* xorshift64 bytes */
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    src[i] = (uint8_t)(x >> 56);
  }
  ndp_error err = {0, {0}};
  ndp_cparams cp = ndp_cparams_default();
  cp.typesize = 8;
  cp.clevel = 5;
  cp.nthreads = 2;
  int32_t cb = ndp_compress(&cp, src, n, c, n + NDP_MAX_OVERHEAD, &err);
  CHECK(cb == n + 32 && (c[2] & 0x02), "noise: cbytes %d flags %x: %s", cb, c[2], err.msg);
  CHECK(ndp_decompress(c, cb, out, n, 1, &err) == n && memcmp(out, src, (size_t)n) == 0,
        "noise: round trip");
  memset(c, 0xAA, 64);
  int32_t h = ndp_compress_ex(&cp, src, n, c, n + NDP_MAX_OVERHEAD, NDP_RAW_HEADER_ONLY, &err);
  CHECK(h == 32 && (c[2] & 0x02) && c[32] == 0xAA, "header only: returned %d", h);
  memcpy(c + 32, src, (size_t)n);
  CHECK(ndp_decompress(c, n + 32, out, n, 1, &err) == n && memcmp(out, src, (size_t)n) == 0,
        "header only: header + data decodes");
  memset(src + n / 2, 0, (size_t)n / 2);       /* half zeros: compressed, not raw */
  h = ndp_compress_ex(&cp, src, n, c, n + NDP_MAX_OVERHEAD, NDP_RAW_HEADER_ONLY, &err);
  CHECK(h > 32 && h < n && !(c[2] & 0x02), "half noise: %d bytes", h);
  free(src);
  free(c);
  free(out);
}

/* A chunk encoded in parts (ndp_cparts_*) with blocks added in increasing order is
 * byte for byte ndp_compress with one thread: every input kind (noise: the memcpy
 * fallback decided from the samples; zeros: the zero collapse), codecs, pipelines
 * without DELTA, partial last blocks.  In another order it decodes to the same bytes.
 * DELTA, dictionaries and clevel 0 decline (0). */
static void test_cparts(void) {
  static const int32_t sizes[] = {32, 100, 4097, 300000, 1 << 20};
  int32_t maxn = 1 << 20;
  uint8_t *src = malloc((size_t)maxn), *whole = malloc((size_t)maxn + 32);
  uint8_t *parts = malloc((size_t)maxn + 32), *out = malloc((size_t)maxn);
  char what[200];
  for (int kind = 0; kind < 6; kind++) {
    if (kind < 4) make_input(kind, src, maxn);
    else memset(src, kind == 4 ? 0 : 7, (size_t)maxn);  /* zeros; one repeated byte */
    for (size_t ci = 0; ci < sizeof codecs / sizeof *codecs; ci++)
      for (size_t pi = 0; pi < sizeof pipelines / sizeof *pipelines; pi++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
          int32_t n = sizes[si];
          ndp_cparams cp = ndp_cparams_default();
          cp.compcode = codecs[ci];
          cp.clevel = (int)(1 + (si + pi) % 9);
          cp.typesize = si % 2 ? 8 : 4;
          cp.nthreads = 1;
          cp.blocksize = si % 3 == 0 ? 0 : 16384;
          memcpy(cp.filters, pipelines[pi], 6);
          int delta = 0;
          for (int f = 0; f < 6; f++) delta |= cp.filters[f] == NDP_DELTA;
          snprintf(what, sizeof what, "parts: kind %d codec %d pipe %zu n %d", kind,
                   cp.compcode, pi, n);
          ndp_error err = {0, {0}};
          int32_t cw = ndp_compress(&cp, src, n, whole, n + 32, &err);
          CHECK(cw > 0, "%s: compress: %s", what, err.msg);
          ndp_cparts *p = NULL;
          int rc = ndp_cparts_begin(&p, &cp, n, parts, n + 32, &err);
          if (delta) {
            CHECK(rc == 0 && p == NULL, "%s: DELTA must decline, got %d", what, rc);
            continue;
          }
          CHECK(rc == 1 && p != NULL, "%s: begin %d: %s", what, rc, err.msg);
          if (p == NULL) continue;
          int32_t nb = ndp_cparts_nblocks(p);
          for (int32_t j = 0; j < nb; j += 3) {      /* groups of up to 3 blocks */
            int32_t k = nb - j < 3 ? nb - j : 3;
            CHECK(ndp_cparts_add(p, src, j, k, &err) == 0, "%s: add: %s", what, err.msg);
          }
          int32_t cp2 = ndp_cparts_end(p, src, &err);
          ndp_cparts_free(p);
          CHECK(cp2 == cw && memcmp(whole, parts, (size_t)cw) == 0,
                "%s: %d bytes in parts, %d whole", what, cp2, cw);
          /* blocks in reverse order: other bytes, same values */
          CHECK(ndp_cparts_begin(&p, &cp, n, parts, n + 32, &err) == 1, "%s: begin", what);
          for (int32_t j = nb - 1; j >= 0; j--) ndp_cparts_add(p, src, j, 1, &err);
          int32_t cr = ndp_cparts_end(p, src, &err);
          ndp_cparts_free(p);
          CHECK(cr > 0 && ndp_decompress(parts, cr, out, n, 1, &err) == n &&
                memcmp(out, src, (size_t)n) == 0, "%s: reverse order round trip", what);
        }
  }
  ndp_error err = {0, {0}};
  ndp_cparts *p = NULL;
  ndp_cparams cp = ndp_cparams_default();
  cp.clevel = 0;
  CHECK(ndp_cparts_begin(&p, &cp, 1000, parts, 1032, &err) == 0 && !p, "clevel 0 declines");
  cp.clevel = 5;
  cp.use_dict = 1;
  CHECK(ndp_cparts_begin(&p, &cp, 100000, parts, 100032, &err) == 0 && !p, "dict declines");
  cp.use_dict = 0;
  CHECK(ndp_cparts_begin(&p, &cp, 1000, parts, 1000, &err) < 0, "short destination refused");
  CHECK(ndp_cparts_begin(&p, &cp, 100000, parts, 100032, &err) == 1, "begin");
  CHECK(ndp_cparts_add(p, src, 0, ndp_cparts_nblocks(p) + 1, &err) < 0, "too many blocks");
  CHECK(ndp_cparts_add(p, src, -1, 1, &err) < 0, "negative block");
  ndp_cparts_free(p);
  free(src);
  free(whole);
  free(parts);
  free(out);
}

/* Fused decode + sum of a 3-D chunk with padding: against a plain loop. */
static void test_sum_chunk(void) {
  enum { C0 = 5, C1 = 7, C2 = 9, B0 = 2, B1 = 3, B2 = 4 };
  enum { E0 = 6, E1 = 9, E2 = 12 };                 /* extended chunk */
  static double src[E0 * E1 * E2], out[E0 * E1 * E2];
  static uint8_t c[sizeof src + NDP_MAX_OVERHEAD];
  /* stored order: blocks in C order, each block in C order */
  int64_t k = 0;
  for (int b0 = 0; b0 < E0 / B0; b0++) for (int b1 = 0; b1 < E1 / B1; b1++)
    for (int b2 = 0; b2 < E2 / B2; b2++) for (int i = 0; i < B0; i++)
      for (int j = 0; j < B1; j++) for (int l = 0; l < B2; l++) {
        int x = b0 * B0 + i, y = b1 * B1 + j, z = b2 * B2 + l;
        src[k++] = (x < C0 && y < C1 && z < C2) ? x * 100 + y * 10 + z + 0.5 : 1e300;
      }
  ndp_error err = {0, {0}};
  ndp_cparams cp = ndp_cparams_default();
  cp.typesize = 8;
  cp.blocksize = B0 * B1 * B2 * 8;
  int32_t cb = ndp_compress(&cp, src, sizeof src, c, sizeof c, &err);
  CHECK(cb > 0, "sum: compress: %s", err.msg);
  int64_t valid[3] = {4, 7, 9};                     /* the array ends inside the chunk */
  for (uint32_t red = 1; red < 8; red++) {
    ndp_reduce_spec s;
    memset(&s, 0, sizeof s);
    s.ndim = 3; s.in_type = NDP_T_F64; s.acc_float = 1; s.reduced = red;
    int64_t cs[3] = {C0, C1, C2}, bs[3] = {B0, B1, B2}, os[3];
    int64_t st = 1;
    for (int d = 2; d >= 0; d--) {
      s.chunkshape[d] = cs[d]; s.blockshape[d] = bs[d]; s.valid[d] = valid[d];
      os[d] = (red >> d) & 1 ? 0 : st;
      s.ostride[d] = os[d];
      st *= (red >> d) & 1 ? 1 : valid[d];
    }
    s.out_len = st;
    memset(out, 0, sizeof out);
    int rc = ndp_sum_chunk(c, cb, &s, out, &err);
    int ok = rc == 0;
    for (int64_t o = 0; o < st && ok; o++) {
      double want = 0;
      for (int x = 0; x < valid[0]; x++) for (int y = 0; y < valid[1]; y++)
        for (int z = 0; z < valid[2]; z++)
          if (x * os[0] + y * os[1] + z * os[2] == o) want += x * 100 + y * 10 + z + 0.5;
      ok = out[o] == want;
    }
    CHECK(ok, "sum over dims mask %u: rc %d %s", red, rc, err.msg);
  }
  ndp_reduce_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 3; s.in_type = NDP_T_F64; s.acc_float = 1; s.reduced = 7; s.out_len = 1;
  for (int d = 0; d < 3; d++) { s.chunkshape[d] = s.valid[d] = 4; s.blockshape[d] = 2; }
  err.code = 0;
  CHECK(ndp_sum_chunk(c, cb, &s, out, &err) == NDP_ERR_FORMAT, "sum: wrong chunk shape");
  s.out_len = 0;
  err.code = 0;
  CHECK(ndp_sum_chunk(c, cb, &s, out, &err) == NDP_ERR_PARAM, "sum: output too small");
  s.out_len = 1; s.acc_float = 0;
  err.code = 0;
  CHECK(ndp_sum_chunk(c, cb, &s, out, &err) == NDP_ERR_PARAM, "sum: float into integers");
}

/* Positioned reads of some blocks from a file: the reduced chunk decodes them like
 * the whole chunk; corrupt starts and short files decline (0). */
static void test_fd_read_blocks(void) {
  int32_t n = 1 << 20;
  uint8_t *src = malloc((size_t)n), *c = malloc((size_t)n + 32);
  uint8_t *buf = malloc((size_t)n + 32), *a = malloc((size_t)n), *b = malloc((size_t)n);
  make_input(0, src, n);
  ndp_error err = {0, {0}};
  for (int delta = 0; delta < 2; delta++) {
    int32_t cb = blocks_chunk(src, n, delta, c, &err);
    FILE *f = tmpfile();
    fwrite("lead", 1, 4, f);
    fwrite(c, 1, (size_t)cb, f);
    fflush(f);
    int fd = fileno(f);
    int32_t want[] = {26, 3, 7};
    int64_t need = 0;
    int64_t r = ndp_fd_read_blocks(fd, 4, 27, 0, want, 3, buf, (int64_t)n + 32, &need, &err);
    CHECK(r > 0 && r < cb && need == 0, "fd_read_blocks size %lld of %d", (long long)r, cb);
    int32_t d1 = ndp_decompress_blocks(buf, (int32_t)r, want, 3, a, n, 1, &err);
    int32_t d2 = ndp_decompress_blocks(c, cb, want, 3, b, n, 1, &err);
    int same = d1 == d2 && d1 > 0;
    for (int i = 0; same && i < 3; i++) {      /* each block's bytes (26 is partial) */
      int32_t sz = want[i] == 26 ? n - 26 * 40000 : 40000;
      same = memcmp(a + (size_t)i * 40000, b + (size_t)i * 40000, (size_t)sz) == 0;
    }
    CHECK(same, "fd blocks content delta %d", delta);
    r = ndp_fd_read_blocks(fd, 4, 27, 0, want, 3, buf, 200, &need, &err);
    CHECK(r == 0 && need > 200, "small buffer: need %lld", (long long)need);
    r = ndp_fd_read_blocks(fd, 4, 26, 0, want + 1, 2, buf, (int64_t)n, &need, &err);
    CHECK(r == 0 && need == 0, "another block count declines");
    r = ndp_fd_read_blocks(fd, 4 + cb - 50, 27, 0, want, 3, buf, (int64_t)n, &need, &err);
    CHECK(r == 0, "short file declines");
    int32_t bad = 27;
    CHECK(ndp_fd_read_blocks(fd, 4, 27, 0, &bad, 1, buf, n, &need, &err) == NDP_ERR_PARAM,
          "block out of range");
    uint8_t off[4] = {0xff, 0xff, 0xff, 0x7f};
    fseek(f, 4 + 32 + 4 * 3, SEEK_SET);
    fwrite(off, 1, 4, f);
    fflush(f);
    r = ndp_fd_read_blocks(fd, 4, 27, 0, want, 3, buf, (int64_t)n + 32, &need, &err);
    CHECK(r == 0, "corrupt start declines");
    fclose(f);
  }
  free(src); free(c); free(buf); free(a); free(b);
}

/* Whole-chunk decodes above ndp_stream_min_bytes unshuffle with streaming stores:
 * a chunk above the default threshold, and every round trip with the threshold at
 * one byte (destinations of every alignment come from the pieces of test_roundtrips). */
static void test_streaming_stores(void) {
  int32_t n = (int32_t)(ndp_stream_min_bytes() + 4 * 1000 * 1000 + 8);
  uint8_t *src = malloc((size_t)n), *c = malloc((size_t)n + 64), *out = malloc((size_t)n + 1);
  ndp_error err = {0, {0}};
  for (int32_t i = 0; i < n / 8; i++) {
    double v = (double)i / 12499999.0;
    memcpy(src + 8 * (size_t)i, &v, 8);
  }
  for (int ts = 2; ts <= 8; ts *= 2) {
    for (int nt = 1; nt <= 2; nt++) {
      ndp_cparams cp = ndp_cparams_default();
      cp.compcode = NDP_LZ4;
      cp.typesize = ts;
      cp.nthreads = nt;
      int32_t cb = ndp_compress(&cp, src, n, c, n + 64, &err);
      CHECK(cb > 0, "streaming: compress: %s", err.msg);
      if (cb <= 0) continue;
      memset(out, 0xA5, (size_t)n + 1);
      int32_t r = ndp_decompress(c, cb, out + 1, n, nt, &err); /* an odd destination */
      CHECK(r == n && memcmp(out + 1, src, (size_t)n) == 0 && out[0] == 0xA5,
            "streaming: typesize %d, %d threads, odd destination: round trip differs", ts, nt);
      r = ndp_decompress(c, cb, out, n, nt, &err);
      CHECK(r == n && memcmp(out, src, (size_t)n) == 0,
            "streaming: typesize %d, %d threads: round trip differs", ts, nt);
    }
  }
  free(src);
  free(c);
  free(out);
  ndp_set_stream_min_bytes(1);
  test_roundtrips();
  ndp_set_stream_min_bytes(0);
}

int main(void) {
  const char *dir = getenv("NDPACK_VECTORS");
  test_vectors(dir ? dir : "tests/data/vectors");
  test_roundtrips();
  test_streaming_stores();
  test_noise_raw();
  test_cparts();
  test_partial();
  test_special();
  test_bad_params();
  test_sum_chunk();
  test_fd_read_blocks();
  return check_summary();
}

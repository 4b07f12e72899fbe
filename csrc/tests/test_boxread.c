/* C unit tests of the box and point reads (csrc/format/boxread.c, pointread.c):
 * random points, and random orthogonal boxes of
 * a 2-D array in 3 x 3 chunks, each chunk stored with another codec, filter, split
 * mode, as a special or a memcpyed chunk, checked item by item; then bad plans, bad
 * chunks and small buffers.  Run under ASan/UBSan in CI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndpack.h"

#include "check.h"

/* A (70, 90) int64 array, x[r][c] = r * 90 + c, in chunks (32, 40) of blocks (8, 16):
 * extended chunks (32, 48), 4 x 3 blocks, a 3 x 3 grid; chunk 4 is all zeros. */
enum { R = 70, C = 90, CR = 32, CC = 40, BR = 8, BC = 16, ER = 32, EC = 48 };
static const int64_t chunks[2] = {CR, CC}, blocks[2] = {BR, BC}, grid[2] = {3, 3};

static int64_t value(int64_t r, int64_t c) {
  if ((r / CR) * 3 + c / CC == 4) return 0;    /* the special chunk */
  return r * C + c;
}

/* The raw bytes of chunk (i, j): blocks in C order, items in C order in each block,
 * padding -1. */
static void chunk_raw(int i, int j, int64_t *out) {
  int64_t k = 0;
  for (int bi = 0; bi < ER / BR; bi++)
    for (int bj = 0; bj < EC / BC; bj++)
      for (int r = 0; r < BR; r++)
        for (int c = 0; c < BC; c++) {
          int64_t wr = bi * BR + r, wc = bj * BC + c, gr = i * CR + wr, gc = j * CC + wc;
          out[k++] = (wr < CR && wc < CC && gr < R && gc < C) ? value(gr, gc) : -1;
        }
}

static uint8_t *stored[9];
static int32_t stored_len[9];

static void make_chunks(void) {
  static const int codecs[9] = {NDP_LZ4, NDP_ZLIB, NDP_ZSTD, NDP_BLOSCLZ, -1, NDP_LZ4,
                                NDP_LZ4HC, NDP_ZLIB, NDP_LZ4};
  int64_t raw[ER * EC];
  ndp_error err = {0, {0}};
  for (int k = 0; k < 9; k++) {
    int32_t n = ER * EC * 8;
    stored[k] = malloc((size_t)n + NDP_MAX_OVERHEAD);
    if (codecs[k] < 0) {
      stored_len[k] = ndp_chunk_special(NDP_SPECIAL_ZERO, n, 8, BR * BC * 8, NULL, stored[k],
                                        n + NDP_MAX_OVERHEAD, &err);
      CHECK(stored_len[k] > 0, "special chunk: %s", err.msg);
      continue;
    }
    chunk_raw(k / 3, k % 3, raw);
    ndp_cparams cp = ndp_cparams_default();
    cp.compcode = codecs[k];
    cp.typesize = 8;
    cp.blocksize = BR * BC * 8;
    cp.clevel = k == 8 ? 0 : 5;                          /* chunk 8: memcpyed */
    cp.splitmode = k == 5 ? NDP_NEVER_SPLIT : NDP_ALWAYS_SPLIT;
    memset(cp.filters, 0, sizeof cp.filters);
    cp.filters[5] = k == 3 ? NDP_BITSHUFFLE : k == 7 ? 0 : NDP_SHUFFLE;
    if (k == 6) cp.filters[4] = NDP_DELTA;
    stored_len[k] = ndp_compress(&cp, raw, n, stored[k], n + NDP_MAX_OVERHEAD, &err);
    CHECK(stored_len[k] > 0, "chunk %d: %s", k, err.msg);
  }
}

/* A random sorted distinct subset of [0, n) (empty never), into u; its size. */
static int64_t subset(int64_t n, int64_t *u) {
  int64_t k = 0, mode = (int64_t)(rng() % 4);
  for (int64_t i = 0; i < n; i++) {
    int take = mode == 0 ? 1 : mode == 1 ? (rng() % 8 == 0) : mode == 2 ? (i >= n / 3 && i < n / 3 + 5)
                                                               : (rng() % 2 == 0);
    if (take) u[k++] = i;
  }
  if (k == 0) u[k++] = (int64_t)(rng() % (uint64_t)n);
  return k;
}

static void test_random_boxes(void) {
  int64_t u0[R], u1[C], nunits[2];
  const int64_t *units[2] = {u0, u1};
  int64_t *out = malloc(sizeof(int64_t) * 4 * R * C);   /* (maps up to twice as long) */
  uint8_t *scratch = malloc((size_t)9 * ER * EC * 8);
  for (int t = 0; t < 300; t++) {
    nunits[0] = subset(R, u0);
    nunits[1] = subset(C, u1);
    ndp_box *box = NULL;
    ndp_error err = {0, {0}};
    /* output maps: none, or repeated and reordered positions (none wanted too) */
    int64_t m0[2 * R], m1[2 * C], nmaps[2];
    const int64_t *maps[2] = {t % 3 == 1 ? m0 : NULL, t % 4 >= 2 ? m1 : NULL};
    nmaps[0] = (int64_t)(rng() % (2 * R));
    nmaps[1] = t % 8 == 2 ? 0 : 1 + (int64_t)(rng() % (2 * C - 1));   /* (0: empty output) */
    for (int64_t i = 0; i < nmaps[0]; i++) m0[i] = (int64_t)(rng() % (uint64_t)nunits[0]);
    for (int64_t i = 0; i < nmaps[1]; i++) m1[i] = (int64_t)(rng() % (uint64_t)nunits[1]);
    int64_t n0 = maps[0] ? nmaps[0] : nunits[0], n1 = maps[1] ? nmaps[1] : nunits[1];
    int rc = ndp_box_plan(2, chunks, blocks, grid, 8, units, nunits, maps, nmaps, 1 << 20, &box,
                          &err);
    CHECK(rc == NDP_OK && box != NULL, "plan %d: %s", t, err.msg);
    if (box == NULL) continue;
    int32_t nc = ndp_box_nchunks(box);
    const void *ptrs[9];
    int32_t sizes[9];
    int ok = nc >= 1 && nc <= 9;
    int64_t nslots = 0;
    for (int32_t k = 0; ok && k < nc; k++) {
      const int32_t *bl;
      int32_t nb;
      int64_t n = ndp_box_chunk(box, k, &bl, &nb);
      ok = n >= 0 && n < 9 && nb >= 1 && nb <= (ER / BR) * (EC / BC);
      for (int32_t i = 0; ok && i < nb; i++) ok = bl[i] >= 0 && bl[i] < 12 && (i == 0 || bl[i] > bl[i - 1]);
      nslots += nb;
      ptrs[k] = stored[n];
      sizes[k] = stored_len[n];
    }
    CHECK(ok && nslots == ndp_box_nslots(box), "plan %d: chunks and blocks", t);
    int64_t nout = n0 * n1, bb = BR * BC * 8, least = ndp_box_chunk_slots(box);
    int64_t caps[3] = {least, least + 2, nslots};  /* batches of one chunk, some, all */
    for (int q = 0; q < 3; q++) {
      memset(out, 0x55, sizeof(int64_t) * (size_t)(nout > 0 ? nout : 1));
      rc = ndp_box_read(box, ptrs, sizes, scratch, caps[q] * bb + 5, out, nout * 8,
                        1 + (t + q) % 2, &err);
      CHECK(rc == NDP_OK, "read %d: %s", t, err.msg);
      int good = 1;
      for (int64_t i = 0; rc == NDP_OK && i < n0; i++)
        for (int64_t j = 0; j < n1; j++)
          good &= out[i * n1 + j] == value(u0[maps[0] ? m0[i] : i], u1[maps[1] ? m1[j] : j]);
      CHECK(good, "box %d (%lld x %lld), scratch of %lld blocks: content", t, (long long)n0,
            (long long)n1, (long long)caps[q]);
    }
    if (t % 10 == 0 && nout > 0) {             /* buffers one byte too small */
      CHECK(ndp_box_read(box, ptrs, sizes, scratch, least * bb - 1, out, nout * 8, 1, &err) ==
            NDP_ERR_DEST_SIZE, "small scratch");
      CHECK(ndp_box_read(box, ptrs, sizes, scratch, nslots * bb, out, nout * 8 - 1, 1, &err) ==
            NDP_ERR_DEST_SIZE, "small out");
    }
    ndp_box_free(box);
  }
  free(out);
  free(scratch);
}

static void test_bad_input(void) {
  int64_t u0[3] = {0, 5, 40}, u1[2] = {3, 60}, nunits[2] = {3, 2};
  const int64_t *units[2] = {u0, u1};
  ndp_box *box = NULL;
  ndp_error err = {0, {0}};
  CHECK(ndp_box_plan(2, chunks, blocks, grid, 8, units, nunits, NULL, NULL, 3, &box, &err) == NDP_OK &&
        box == NULL, "more slots than allowed: declined");
  u0[1] = 0;
  CHECK(ndp_box_plan(2, chunks, blocks, grid, 8, units, nunits, NULL, NULL, 100, &box, &err) ==
        NDP_ERR_PARAM && box == NULL, "repeated position");
  u0[1] = 5;
  u1[1] = 3 * CC;
  CHECK(ndp_box_plan(2, chunks, blocks, grid, 8, units, nunits, NULL, NULL, 100, &box, &err) ==
        NDP_ERR_PARAM, "position past the grid");
  u1[1] = 60;
  int64_t bad_blocks[2] = {CR + 1, BC};
  CHECK(ndp_box_plan(2, chunks, bad_blocks, grid, 8, units, nunits, NULL, NULL, 100, &box, &err) ==
        NDP_ERR_PARAM, "block larger than its chunk");
  CHECK(ndp_box_plan(0, chunks, blocks, grid, 8, units, nunits, NULL, NULL, 100, &box, &err) ==
        NDP_ERR_PARAM, "no dimensions");
  int64_t bad_map[2] = {1, 3}, nmaps[2] = {2, 0};
  const int64_t *maps[2] = {bad_map, NULL};
  CHECK(ndp_box_plan(2, chunks, blocks, grid, 8, units, nunits, maps, nmaps, 100, &box, &err) ==
        NDP_ERR_PARAM && box == NULL, "map past the positions");
  CHECK(ndp_box_plan(2, chunks, blocks, grid, 8, units, nunits, NULL, NULL, 100, &box, &err) == NDP_OK &&
        box != NULL, "a good plan");
  if (box == NULL) return;
  int32_t nc = ndp_box_nchunks(box);
  const void *ptrs[9];
  int32_t sizes[9];
  for (int32_t k = 0; k < nc; k++) {
    const int32_t *bl;
    int32_t nb;
    int64_t n = ndp_box_chunk(box, k, &bl, &nb);
    ptrs[k] = stored[n];
    sizes[k] = stored_len[n];
  }
  uint8_t *scratch = malloc((size_t)9 * ER * EC * 8);
  int64_t out[6];
  int64_t slen = ndp_box_nslots(box) * BR * BC * 8;
  CHECK(ndp_box_read(box, ptrs, sizes, scratch, slen, out, sizeof out, 2, &err) == NDP_OK,
        "good read: %s", err.msg);
  /* every truncation of the first chunk fails cleanly */
  int32_t full = sizes[0];
  for (int32_t t = 0; t < full; t += 1 + t / 4) {
    sizes[0] = t;
    CHECK(ndp_box_read(box, ptrs, sizes, scratch, slen, out, sizeof out, 1, &err) < 0,
          "chunk truncated to %d read", (int)t);
  }
  sizes[0] = full;
  /* a chunk of another array (other chunk bytes, other block size) */
  uint8_t other[256];
  int32_t ol = ndp_chunk_special(NDP_SPECIAL_ZERO, 800, 8, 80, NULL, other, sizeof other, &err);
  ptrs[0] = other;
  sizes[0] = ol;
  CHECK(ndp_box_read(box, ptrs, sizes, scratch, slen, out, sizeof out, 1, &err) ==
        NDP_ERR_FORMAT, "chunk of another shape");
  int64_t raw[ER * EC];
  chunk_raw(0, 0, raw);
  ndp_cparams cp = ndp_cparams_default();
  cp.typesize = 8;
  cp.blocksize = 4096;
  uint8_t *c = malloc(sizeof raw + NDP_MAX_OVERHEAD);
  int32_t cl = ndp_compress(&cp, raw, (int32_t)sizeof raw, c, (int32_t)sizeof raw + NDP_MAX_OVERHEAD,
                            &err);
  ptrs[0] = c;
  sizes[0] = cl;
  CHECK(ndp_box_read(box, ptrs, sizes, scratch, slen, out, sizeof out, 1, &err) ==
        NDP_ERR_FORMAT, "chunk of another block size");
  free(c);
  free(scratch);
  ndp_box_free(box);
}

/* Random points (repeats, any order) read with scratch buffers of 1, 3 and all blocks
 * (many batches, a few, one). */
static void test_random_points(void) {
  enum { NP = 400 };
  int64_t r[NP], c[NP], out[NP];
  const int64_t *coords[2] = {r, c};
  uint8_t *scratch = malloc((size_t)NP * BR * BC * 8);
  for (int t = 0; t < 60; t++) {
    int64_t n = 1 + (int64_t)(rng() % NP);
    for (int64_t i = 0; i < n; i++) {
      r[i] = (int64_t)(rng() % R);
      c[i] = (int64_t)(rng() % C);
      if (i > 0 && rng() % 5 == 0) { r[i] = r[i - 1]; c[i] = c[i - 1]; }
    }
    ndp_points *pts = NULL;
    ndp_error err = {0, {0}};
    int rc = ndp_points_plan(2, chunks, blocks, grid, 8, coords, n, &pts, &err);
    CHECK(rc == NDP_OK && pts != NULL, "points plan %d: %s", t, err.msg);
    if (pts == NULL) continue;
    int32_t nc = ndp_points_nchunks(pts);
    const void *ptrs[9];
    int32_t sizes[9];
    int64_t prev = -1, nslots = 0;
    int ok = 1;
    for (int32_t k = 0; k < nc; k++) {
      const int32_t *bl;
      int32_t nb;
      int64_t num = ndp_points_chunk(pts, k, &bl, &nb);
      ok &= num > prev && num < 9 && nb >= 1;
      prev = num;
      nslots += nb;
      ptrs[k] = stored[num];
      sizes[k] = stored_len[num];
    }
    CHECK(ok && nslots == ndp_points_nslots(pts), "points %d: chunks and blocks", t);
    int64_t caps[3] = {1, 3, nslots};
    for (int q = 0; q < 3; q++) {
      memset(out, 0x55, sizeof out);
      rc = ndp_points_read(pts, ptrs, sizes, scratch, caps[q] * BR * BC * 8 + 7, out, n * 8,
                           1 + q % 2, &err);
      int good = rc == NDP_OK;
      for (int64_t i = 0; good && i < n; i++) good = out[i] == value(r[i], c[i]);
      CHECK(good, "points %d (%lld), scratch of %lld blocks: %s", t, (long long)n,
            (long long)caps[q], err.msg);
    }
    CHECK(ndp_points_read(pts, ptrs, sizes, scratch, BR * BC * 8 - 1, out, n * 8, 1, &err) ==
          NDP_ERR_DEST_SIZE, "scratch under one block");
    CHECK(ndp_points_read(pts, ptrs, sizes, scratch, BR * BC * 8, out, n * 8 - 1, 1, &err) ==
          NDP_ERR_DEST_SIZE, "small out");
    ndp_points_free(pts);
  }
  r[0] = R + 100;   /* past the grid */
  ndp_points *pts = NULL;
  ndp_error err = {0, {0}};
  CHECK(ndp_points_plan(2, chunks, blocks, grid, 8, coords, 1, &pts, &err) == NDP_ERR_PARAM &&
        pts == NULL, "point outside the grid");
  r[0] = -1;
  CHECK(ndp_points_plan(2, chunks, blocks, grid, 8, coords, 1, &pts, &err) == NDP_ERR_PARAM,
        "negative coordinate");
  CHECK(ndp_points_plan(2, chunks, blocks, grid, 8, coords, 0, &pts, &err) == NDP_ERR_PARAM,
        "no points");
  free(scratch);
}

int main(void) {
  rng_state = 0x2545F4914F6CDD1Dull;
  make_chunks();
  test_random_boxes();
  test_bad_input();
  test_random_points();
  for (int k = 0; k < 9; k++) free(stored[k]);
  return check_summary();
}

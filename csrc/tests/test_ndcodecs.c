/* Unit tests of C-Blosc2's n-d filters (NDCELL, NDMEAN: csrc/filters/ndcell.c) and
 * codecs (NDLZ: csrc/codecs/ndlz.c; ZFP: csrc/codecs/zfp.c when built with libzfp):
 * the scalar filters against a naive transcription of the cell order, round trips,
 * and decoders fed corrupt and truncated streams (they must fail cleanly; run under
 * ASan by `make asan`).  Buffers have their exact sizes so that ASan sees overruns. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "filters.h"
#include "ndcodecs.h"
#include "ndpack.h"

static ndp_nd layout(int ndim, const int64_t *bs) {
  ndp_nd nd;
  memset(&nd, 0, sizeof nd);
  nd.ndim = ndim;
  for (int d = 0; d < ndim; d++) nd.blockshape[d] = nd.chunkshape[d] = bs[d];
  return nd;
}

static int64_t items_of(const ndp_nd *nd) {
  int64_t n = 1;
  for (int d = 0; d < nd->ndim; d++) n *= nd->blockshape[d];
  return n;
}

/* The NDCELL order written out naively: for every cell (C order), for every item of
 * it (C order), the item's index in the block. */
static void naive_order(const ndp_nd *nd, int side, int64_t *order) {
  int ndim = nd->ndim;
  const int64_t *bs = nd->blockshape;
  int64_t n = items_of(nd), k = 0;
  int64_t grid[NDP_MAXDIM], cell[NDP_MAXDIM];
  int64_t ncells = 1;
  for (int d = 0; d < ndim; d++) {
    grid[d] = (bs[d] + side - 1) / side;
    ncells *= grid[d];
  }
  for (int64_t c = 0; c < ncells; c++) {
    int64_t r = c;
    for (int d = ndim - 1; d >= 0; d--) { cell[d] = r % grid[d]; r /= grid[d]; }
    for (int64_t i = 0; i < n; i++) {          /* items of the block in C order */
      int64_t q = i, idx[NDP_MAXDIM], in = 1;
      for (int d = ndim - 1; d >= 0; d--) { idx[d] = q % bs[d]; q /= bs[d]; }
      for (int d = 0; d < ndim; d++) in &= idx[d] / side == cell[d];
      if (in) order[k++] = i;
    }
  }
}

static void test_ndcell(void) {
  static const int64_t shapes[][4] = {{13}, {8, 8}, {7, 10}, {5, 6, 7}, {4, 3, 5, 6}, {9, 4}};
  static const int dims[] = {1, 2, 2, 3, 4, 2};
  static const int32_t sizes[] = {1, 2, 4, 8};
  for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++) {
    ndp_nd nd = layout(dims[s], shapes[s]);
    int64_t n = items_of(&nd);
    for (int side = 1; side <= 4; side++) {
      int64_t cell = 1;
      for (int d = 0; d < nd.ndim; d++) cell *= side;
      for (size_t t = 0; t < 4; t++) {
        int32_t ts = sizes[t], nb = (int32_t)(n * ts);
        uint8_t *in = malloc((size_t)nb), *mid = malloc((size_t)nb), *back = malloc((size_t)nb);
        int64_t *order = malloc(sizeof(int64_t) * (size_t)n);
        for (int32_t i = 0; i < nb; i++) in[i] = (uint8_t)rng();
        ndp_error err = {0, {0}};
        int rc = ndp_ndcell_forward(NDP_NDCELL, (uint8_t)side, &nd, ts, in, mid, nb, &err);
        if (cell > n) {
          CHECK(rc == NDP_ERR_FILTER, "NDCELL: a block smaller than a cell is refused");
        } else {
          CHECK(rc == NDP_OK, "NDCELL forward %zu side %d ts %d: %s", s, side, ts, err.msg);
          naive_order(&nd, side, order);
          int same = 1;
          for (int64_t k = 0; k < n && same; k++)
            same = memcmp(mid + k * ts, in + order[k] * ts, (size_t)ts) == 0;
          CHECK(same, "NDCELL forward is the cell order (shape %zu, side %d, ts %d)", s, side, ts);
          rc = ndp_ndcell_backward(NDP_NDCELL, (uint8_t)side, &nd, ts, mid, back, nb, &err);
          CHECK(rc == NDP_OK && memcmp(back, in, (size_t)nb) == 0, "NDCELL round trip");
        }
        free(in); free(mid); free(back); free(order);
      }
    }
  }
  /* errors: no layout, a block of another size, side 0 */
  int64_t bs[2] = {8, 8};
  ndp_nd nd = layout(2, bs);
  uint8_t a[64], b[64];
  ndp_error err = {0, {0}};
  CHECK(ndp_ndcell_forward(NDP_NDCELL, 4, NULL, 1, a, b, 64, &err) == NDP_ERR_FILTER, "no layout");
  CHECK(ndp_ndcell_forward(NDP_NDCELL, 4, &nd, 1, a, b, 63, &err) == NDP_ERR_FILTER, "wrong size");
  CHECK(ndp_ndcell_backward(NDP_NDCELL, 0, &nd, 1, a, b, 64, &err) == NDP_ERR_FILTER, "side 0");
  CHECK(ndp_ndcell_backward(NDP_NDCELL, 200, &nd, 1, a, b, 64, &err) == NDP_ERR_FILTER, "side 200");
}

static void test_ndmean(void) {
  int64_t bs[3] = {6, 5, 7};
  ndp_nd nd = layout(3, bs);
  int64_t n = items_of(&nd);
  double *x = malloc(sizeof(double) * (size_t)n), *m = malloc(sizeof(double) * (size_t)n),
         *back = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) x[i] = 3.5;
  ndp_error err = {0, {0}};
  int32_t nb = (int32_t)(n * 8);
  int rc = ndp_ndcell_forward(NDP_NDMEAN, 2, &nd, 8, (uint8_t *)x, (uint8_t *)m, nb, &err);
  CHECK(rc == NDP_OK, "NDMEAN forward: %s", err.msg);
  rc = ndp_ndcell_backward(NDP_NDMEAN, 2, &nd, 8, (uint8_t *)m, (uint8_t *)back, nb, &err);
  CHECK(rc == NDP_OK && memcmp(back, x, (size_t)nb) == 0, "NDMEAN of a constant is exact");
  /* a ramp: every value becomes its 2x2x2 (edge-cut) cell's mean */
  for (int64_t i = 0; i < n; i++) x[i] = (double)i;
  ndp_ndcell_forward(NDP_NDMEAN, 2, &nd, 8, (uint8_t *)x, (uint8_t *)m, nb, &err);
  ndp_ndcell_backward(NDP_NDMEAN, 2, &nd, 8, (uint8_t *)m, (uint8_t *)back, nb, &err);
  int ok = 1;
  for (int64_t i = 0; i < n && ok; i++) {
    int64_t i0 = i / 35, i1 = (i / 7) % 5, i2 = i % 7;
    double s = 0;
    int c = 0;
    for (int64_t a = i0 / 2 * 2; a < i0 / 2 * 2 + 2 && a < 6; a++)
      for (int64_t b = i1 / 2 * 2; b < i1 / 2 * 2 + 2 && b < 5; b++)
        for (int64_t d = i2 / 2 * 2; d < i2 / 2 * 2 + 2 && d < 7; d++) { s += (double)(a * 35 + b * 7 + d); c++; }
    ok = fabs(back[i] - s / c) < 1e-9;
  }
  CHECK(ok, "NDMEAN: each value its cell's mean");
  uint8_t a[420], b[420];
  CHECK(ndp_ndcell_forward(NDP_NDMEAN, 2, &nd, 2, a, b, (int32_t)(n * 2), &err) == NDP_ERR_FILTER,
        "NDMEAN refuses 2-byte items");
  free(x); free(m); free(back);
}

static void test_ndlz(void) {
  static const int64_t shapes[][2] = {{16, 16}, {13, 21}, {32, 8}, {7, 9}, {64, 40}};
  for (size_t s = 0; s < 5; s++) {
    ndp_nd nd = layout(2, shapes[s]);
    int32_t n = (int32_t)items_of(&nd);
    for (int meta = 4; meta <= 8; meta += 4) {
      uint8_t *src = malloc((size_t)n), *enc = malloc((size_t)n), *dec = malloc((size_t)n);
      for (int32_t i = 0; i < n; i++)
        src[i] = (uint8_t)((i % shapes[s][1]) / 5 + (i / shapes[s][1]) / 3 + (i % 31 == 0) * 9);
      ndp_error err = {0, {0}};
      int32_t c = ndp_ndlz_encode(meta, 1, &nd, src, n, enc, n, &err);
      CHECK(c >= 0, "NDLZ encode: %s", err.msg);
      if (c > 0) {
        int32_t r = ndp_ndlz_decode(meta, 1, &nd, enc, c, dec, n, &err);
        CHECK(r == n && memcmp(dec, src, (size_t)n) == 0, "NDLZ round trip %zu/%d: %s", s,
              meta, err.msg);
        /* corrupt and truncated streams: errors or any bytes, never outside the buffers */
        for (int k = 0; k < 300; k++) {
          int32_t len = (int32_t)(rng() % (uint64_t)c) + 1;
          uint8_t *bad = malloc((size_t)len);
          memcpy(bad, enc, (size_t)len);
          for (int f = 0; f < 3; f++) bad[rng() % (uint64_t)len] = (uint8_t)rng();
          r = ndp_ndlz_decode(meta, 1, &nd, bad, len, dec, n, &err);
          CHECK(r == n || r == NDP_ERR_FORMAT || r == NDP_ERR_CODEC, "NDLZ corrupt: %d", r);
          free(bad);
        }
      }
      ndp_error e2 = {0, {0}};
      CHECK(ndp_ndlz_encode(meta, 2, &nd, src, n, enc, n, &e2) == NDP_ERR_CODEC,
            "NDLZ refuses 2-byte items");
      free(src); free(enc); free(dec);
    }
  }
}

static void test_zfp(void) {
  if (!ndp_zfp_built()) {
    ndp_error err = {0, {0}};
    int64_t bs[2] = {8, 8};
    ndp_nd nd = layout(2, bs);
    double x[64], y[64];
    uint8_t out[600];
    CHECK(ndp_zfp_encode(NDP_ZFP_RATE, 30, 8, &nd, (uint8_t *)x, 512, out, 600, &err) ==
          NDP_ERR_CODEC && strstr(err.msg, "libzfp") != NULL, "no libzfp: the message says so");
    (void)y;
    return;
  }
  static const int64_t shapes[][4] = {{64}, {8, 12}, {4, 8, 6}, {4, 4, 4, 5}};
  for (int s = 0; s < 4; s++) {
    ndp_nd nd = layout(s + 1, shapes[s]);
    int32_t n = (int32_t)items_of(&nd);
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    for (int32_t i = 0; i < n; i++) x[i] = sin(i * 0.1) + 0.001 * (double)(i % 7);
    uint8_t *enc = malloc((size_t)n * 8);
    ndp_error err = {0, {0}};
    /* accuracy 10**-3 */
    int32_t c = ndp_zfp_encode(NDP_ZFP_ACC, 253, 8, &nd, (uint8_t *)x, n * 8, enc, n * 8, &err);
    CHECK(c > 0 && c % 8 == 0, "ZFP_ACC encode %d-d: %d %s", s + 1, c, err.msg);
    if (c > 0) {
      int32_t r = ndp_zfp_decode(NDP_ZFP_ACC, 253, 8, &nd, enc, c, (uint8_t *)y, n * 8, &err);
      double worst = 0;
      for (int32_t i = 0; i < n; i++) worst = fmax(worst, fabs(x[i] - y[i]));
      CHECK(r == n * 8 && worst <= 1e-3, "ZFP_ACC within 1e-3: %g (%s)", worst, err.msg);
      for (int k = 0; k < 200; k++) {             /* truncated and corrupt streams */
        int32_t len = (int32_t)(rng() % (uint64_t)c) + 1;
        uint8_t *bad = malloc((size_t)len);
        memcpy(bad, enc, (size_t)len);
        bad[rng() % (uint64_t)len] ^= (uint8_t)(1u << (rng() % 8));
        int mode = NDP_ZFP_ACC + (int)(rng() % 3);
        r = ndp_zfp_decode(mode, (int)(rng() % 256), 8, &nd, bad, len, (uint8_t *)y, n * 8, &err);
        CHECK(r == n * 8 || r == NDP_ERR_FORMAT, "ZFP corrupt: %d", r);
        free(bad);
      }
    }
    int64_t small[1] = {3};
    ndp_nd tiny = layout(1, small);
    CHECK(ndp_zfp_encode(NDP_ZFP_RATE, 30, 8, &tiny, (uint8_t *)x, 24, enc, 24, &err) ==
          NDP_ERR_CODEC, "ZFP refuses blocks under 4 items");
    CHECK(ndp_zfp_encode(NDP_ZFP_RATE, 30, 2, &nd, (uint8_t *)x, n * 2, enc, n * 2, &err) ==
          NDP_ERR_CODEC, "ZFP refuses 2-byte items");
    free(x); free(y); free(enc);
  }
}

/* A chunk of an n-d codec through the chunk API: with and without a layout. */
static void test_chunk_api(void) {
  int64_t bs[2] = {16, 64};
  ndp_nd nd = layout(2, bs);
  nd.chunkshape[0] = 48;
  uint8_t src[3 * 1024], dst[3 * 1024 + 64], back[3 * 1024];
  for (int i = 0; i < 3 * 1024; i++) src[i] = (uint8_t)((i % 64) / 8 + (i / 256));
  ndp_cparams cp = ndp_cparams_default();
  cp.compcode = NDP_NDLZ;
  cp.compcode_meta = 4;
  cp.typesize = 1;
  cp.blocksize = 1024;
  cp.filters[5] = 0;
  ndp_error err = {0, {0}};
  ndp_nd_set(NULL, NULL);
  CHECK(ndp_compress(&cp, src, sizeof src, dst, sizeof dst, &err) == NDP_ERR_CODEC,
        "n-d codec without a layout: %s", err.msg);
  ndp_nd_set(&nd, NULL);
  int32_t c = ndp_compress(&cp, src, sizeof src, dst, sizeof dst, &err);
  CHECK(c > 0, "NDLZ chunk: %s", err.msg);
  err.code = 0;
  int32_t r = ndp_decompress(dst, c, back, sizeof back, 2, &err);
  CHECK(r == (int32_t)sizeof src && memcmp(src, back, sizeof src) == 0, "NDLZ chunk decodes");
  cp.compcode = NDP_LZ4;
  cp.filters[0] = NDP_NDCELL;
  cp.filters_meta[0] = 4;
  c = ndp_compress(&cp, src, sizeof src, dst, sizeof dst, &err);
  CHECK(c > 0, "NDCELL chunk: %s", err.msg);
  ndp_nd_set(NULL, NULL);
  r = ndp_decompress(dst, c, back, sizeof back, 1, &err);
  CHECK(r == NDP_ERR_FILTER && strstr(err.msg, "NDCELL") != NULL,
        "NDCELL needs the layout: %d %s (chunk of %d bytes, flags %02x)", r, err.msg, c, dst[2]);
  ndp_nd_set(&nd, NULL);
  r = ndp_decompress(dst, c, back, sizeof back, 2, &err);
  CHECK(r == (int32_t)sizeof src && memcmp(src, back, sizeof src) == 0, "NDCELL chunk decodes");
  ndp_nd_set(NULL, NULL);
}

int main(void) {
  test_ndcell();
  test_ndmean();
  test_ndlz();
  test_zfp();
  test_chunk_api();
  return check_summary();
}

/* The 6-slot filter pipeline (FORMAT.md 2.1): slots 0..5 forward, 5..0 back. */
#include "chunk.h"

#include "../codecs/codecs.h"
#include "../filters/filters.h"

static int32_t group(uint8_t meta, int32_t typesize) { return meta ? meta : typesize; }

int ndp_pipeline_check(const uint8_t filters[6], const uint8_t meta[6], int32_t typesize,
                       const ndp_nd *nd, ndp_error *err) {
  for (int i = 0; i < NDP_NFILTERS; i++) {
    int f = filters[i];
    ndp_filter_fn fw, bw;
    void *ud;
    switch (f) {
      case NDP_NOFILTER: case NDP_SHUFFLE: case NDP_BITSHUFFLE: case NDP_DELTA:
      case NDP_BYTEDELTA:
        break;
      case NDP_TRUNC_PREC:
        if (ndp_trunc_prec((size_t)typesize, (int8_t)meta[i], 0, NULL, NULL) != 0)
          return ndp_fail(err, NDP_ERR_FILTER,
                          "TRUNC_PREC needs typesize 4 or 8 and a precision within the "
                          "mantissa (got typesize %d, precision %d)",
                          (int)typesize, (int)(int8_t)meta[i]);
        break;
      case NDP_INT_TRUNC:
        if (ndp_int_trunc((size_t)typesize, (int8_t)meta[i], 0, NULL, NULL) != 0)
          return ndp_fail(err, NDP_ERR_FILTER,
                          "INT_TRUNC needs typesize 1, 2, 4 or 8 and a precision below the "
                          "bit width (got typesize %d, precision %d)",
                          (int)typesize, (int)(int8_t)meta[i]);
        break;
      case NDP_BYTEDELTA_LEGACY:
        return ndp_fail(err, NDP_ERR_FILTER,
                        "filter 34 (legacy BYTEDELTA) is decode-only; use BYTEDELTA (35)");
      case NDP_NDCELL: case NDP_NDMEAN: {
        int rc = ndp_ndcell_check(f, meta[i], nd, typesize, err);
        if (rc != NDP_OK) return rc;
        break;
      }
      default:
        if (!ndp_user_filter(f, &fw, &bw, &ud) || fw == NULL)
          return ndp_fail(err, NDP_ERR_FILTER, "unknown filter id %d in slot %d", f, i);
    }
  }
  return NDP_OK;
}

int ndp_pipeline_forward(const uint8_t filters[6], const uint8_t meta[6], int32_t typesize,
                         const uint8_t *chunk_src, int32_t offset, const uint8_t *src,
                         int32_t n, uint8_t *buf_a, uint8_t *buf_b, const uint8_t **out,
                         const ndp_nd *nd, ndp_error *err) {
  const ndp_filter_kernels *k = ndp_filters();
  const uint8_t *cur = src;
  size_t t = (size_t)typesize;
  for (int i = 0; i < NDP_NFILTERS; i++) {
    int f = filters[i];
    if (f == NDP_NOFILTER) continue;
    if (f == NDP_SHUFFLE && group(meta[i], typesize) <= 1) continue;
    uint8_t *o = cur == buf_a ? buf_b : buf_a;
    switch (f) {
      case NDP_SHUFFLE:
        k->shuffle((size_t)group(meta[i], typesize), (size_t)n, cur, o);
        break;
      case NDP_BITSHUFFLE:
        k->bitshuffle(t, (size_t)n, cur, o);
        break;
      case NDP_DELTA:
        ndp_delta_encode(t, (size_t)offset, chunk_src, (size_t)n, cur, o);
        break;
      case NDP_TRUNC_PREC:
        if (ndp_trunc_prec(t, (int8_t)meta[i], (size_t)n, cur, o) != 0)
          return ndp_fail(err, NDP_ERR_FILTER, "invalid TRUNC_PREC parameters");
        break;
      case NDP_INT_TRUNC:
        if (ndp_int_trunc(t, (int8_t)meta[i], (size_t)n, cur, o) != 0)
          return ndp_fail(err, NDP_ERR_FILTER, "invalid INT_TRUNC parameters");
        break;
      case NDP_BYTEDELTA:
        k->bytedelta_encode((size_t)group(meta[i], typesize), (size_t)n, cur, o);
        break;
      case NDP_NDCELL: case NDP_NDMEAN: {
        int rc = ndp_ndcell_forward(f, meta[i], nd, typesize, cur, o, n, err);
        if (rc != NDP_OK) return rc;
        break;
      }
      default: {
        ndp_filter_fn fw, bw;
        void *ud;
        if (!ndp_user_filter(f, &fw, &bw, &ud) || fw == NULL)
          return ndp_fail(err, NDP_ERR_FILTER, "unknown filter id %d", f);
        if (fw(cur, o, n, meta[i], typesize, ud) < 0)
          return ndp_fail(err, NDP_ERR_CALLBACK, "user filter %d failed on compression", f);
      }
    }
    cur = o;
  }
  *out = cur;
  return NDP_OK;
}

static int undone_on_decode(int f) {
  return f != NDP_NOFILTER && f != NDP_TRUNC_PREC && f != NDP_INT_TRUNC;
}

int ndp_pipeline_active(const uint8_t filters[6]) {
  for (int i = 0; i < NDP_NFILTERS; i++)
    if (undone_on_decode(filters[i])) return 1;
  return 0;
}

int ndp_pipeline_backward(const uint8_t filters[6], const uint8_t meta[6], int32_t typesize,
                          const uint8_t *ref, int32_t offset, uint8_t *in, int32_t n,
                          uint8_t *dst, uint8_t *buf, int legacy_bitshuffle, const ndp_nd *nd,
                          ndp_error *err) {
  const ndp_filter_kernels *k = ndp_filters();
  size_t t = (size_t)typesize;
  int last = -1;
  for (int i = 0; i < NDP_NFILTERS; i++)
    if (undone_on_decode(filters[i])) last = i;   /* the lowest slot runs last */
  int lowest = NDP_NFILTERS;
  for (int i = 0; i < NDP_NFILTERS; i++)
    if (undone_on_decode(filters[i])) { lowest = i; break; }
  if (last < 0) {
    memcpy(dst, in, (size_t)n);
    return NDP_OK;
  }
  uint8_t *cur = in;
  for (int i = NDP_NFILTERS - 1; i >= 0; i--) {
    int f = filters[i];
    if (!undone_on_decode(f)) continue;
    uint8_t *o = i == lowest ? dst : (cur == in ? buf : in);
    switch (f) {
      case NDP_SHUFFLE: {
        int32_t g = group(meta[i], typesize);
        if (g <= 1) memcpy(o, cur, (size_t)n);
        else k->unshuffle((size_t)g, (size_t)n, cur, o);
        break;
      }
      case NDP_BITSHUFFLE:
        if (legacy_bitshuffle && (n / typesize) % 8 != 0) memcpy(o, cur, (size_t)n);
        else k->bitunshuffle(t, (size_t)n, cur, o);
        break;
      case NDP_DELTA:
        ndp_delta_decode(t, (size_t)offset, ref, (size_t)n, cur, o);
        break;
      case NDP_BYTEDELTA:
        k->bytedelta_decode((size_t)group(meta[i], typesize), (size_t)n, cur, o);
        break;
      case NDP_BYTEDELTA_LEGACY:
        ndp_bytedelta_legacy_decode((size_t)group(meta[i], typesize), (size_t)n, cur, o);
        break;
      case NDP_NDCELL: case NDP_NDMEAN: {
        if (o == cur) return ndp_fail(err, NDP_ERR_FILTER, "NDCELL/NDMEAN in place");
        int rc = ndp_ndcell_backward(f, meta[i], nd, typesize, cur, o, n, err);
        if (rc != NDP_OK) return rc;
        break;
      }
      default: {
        ndp_filter_fn fw, bw;
        void *ud;
        if (!ndp_user_filter(f, &fw, &bw, &ud) || bw == NULL)
          return ndp_fail(err, NDP_ERR_FILTER,
                          "chunk uses filter id %d, which is neither built in nor registered", f);
        if (bw(cur, o, n, meta[i], typesize, ud) < 0)
          return ndp_fail(err, NDP_ERR_CALLBACK, "user filter %d failed on decompression", f);
      }
    }
    cur = o;
  }
  return NDP_OK;
}

/* The per-thread n-d layout (ndp_nd_set, ndpack.h) and the dispatch of C-Blosc2's
 * n-d codecs. */
#include <string.h>

#include "ndcodecs.h"
#include "../common/internal.h"

static _Thread_local ndp_nd current;
#define ND_DEPTH 16
static _Thread_local ndp_nd saved[ND_DEPTH];
static _Thread_local int depth;

int ndp_nd_check(const ndp_nd *nd, ndp_error *err) {
  if (nd == NULL || nd->ndim == 0) return NDP_OK;
  if (nd->ndim < 0 || nd->ndim > NDP_MAXDIM)
    return ndp_fail(err, NDP_ERR_PARAM, "n-d layout of %d dimensions (1..%d)", nd->ndim,
                    NDP_MAXDIM);
  for (int d = 0; d < nd->ndim; d++)
    if (nd->blockshape[d] < 1 || nd->chunkshape[d] < nd->blockshape[d] ||
        nd->blockshape[d] > INT32_MAX)
      return ndp_fail(err, NDP_ERR_PARAM, "n-d layout: dimension %d has block %lld, chunk %lld",
                      d, (long long)nd->blockshape[d], (long long)nd->chunkshape[d]);
  return NDP_OK;
}

int ndp_nd_set(const ndp_nd *nd, ndp_error *err) {
  int rc = ndp_nd_check(nd, err);
  if (rc != NDP_OK) return rc;
  if (nd == NULL || nd->ndim == 0) current.ndim = 0;
  else current = *nd;
  return NDP_OK;
}

int ndp_nd_push(const ndp_nd *nd, ndp_error *err) {
  if (depth >= ND_DEPTH)
    return ndp_fail(err, NDP_ERR_PARAM, "n-d layouts nested more than %d deep", ND_DEPTH);
  ndp_nd keep = current;
  int rc = ndp_nd_set(nd, err);
  if (rc != NDP_OK) return rc;
  saved[depth++] = keep;
  return NDP_OK;
}

void ndp_nd_pop(void) {
  if (depth > 0) current = saved[--depth];
}

const ndp_nd *ndp_nd_get(void) { return &current; }

int ndp_codec_is_nd(int compcode) {
  return compcode >= NDP_NDLZ && compcode <= NDP_ZFP_RATE;
}

int ndp_filter_is_nd(int id) { return id == NDP_NDCELL || id == NDP_NDMEAN; }

const char *ndp_nd_codec_name(int compcode) {
  switch (compcode) {
    case NDP_NDLZ: return "NDLZ";
    case NDP_ZFP_ACC: return "ZFP_ACC";
    case NDP_ZFP_PREC: return "ZFP_PREC";
    case NDP_ZFP_RATE: return "ZFP_RATE";
    default: return NULL;
  }
}

const char *ndp_codec_missing(int compcode) {
  if (compcode >= NDP_ZFP_ACC && compcode <= NDP_ZFP_RATE && !ndp_zfp_built())
    return "libzfp not found at build time: install it (Debian/Ubuntu: apt-get install "
           "libzfp-dev; Fedora: dnf install zfp-devel; macOS: brew install zfp) and rebuild "
           "ndpack";
  return "";
}

int ndp_nd_block_check(const ndp_nd *nd, int32_t typesize, int32_t n, const char *what,
                       ndp_error *err) {
  if (nd == NULL || nd->ndim == 0)
    return ndp_fail(err, NDP_ERR_CODEC, "%s needs the block's n-d shape (the array's "
                    "\"b2nd\" metalayer): read the chunk through its array", what);
  int64_t items = 1;
  for (int d = 0; d < nd->ndim; d++) {
    items *= nd->blockshape[d];
    if (items > INT32_MAX) break;
  }
  if (typesize < 1 || items * typesize != (int64_t)n)
    return ndp_fail(err, NDP_ERR_CODEC, "%s: a block of %d bytes does not hold the %lld items "
                    "of %d bytes of the block shape in the metalayer", what, (int)n,
                    (long long)items, (int)typesize);
  return NDP_OK;
}

int32_t ndp_nd_encode(int compcode, int clevel, int meta, int32_t typesize, const ndp_nd *nd,
                      const uint8_t *src, int32_t n, uint8_t *dst, int32_t maxout,
                      ndp_error *err) {
  if (compcode == NDP_NDLZ)
    return ndp_ndlz_encode(meta, typesize, nd, src, n, dst, maxout, err);
  return ndp_zfp_encode(compcode, meta, typesize, nd, src, n, dst, maxout, err);
}

int32_t ndp_nd_decode(int compcode, int meta, int32_t typesize, const ndp_nd *nd,
                      const uint8_t *src, int32_t n, uint8_t *dst, int32_t dstlen,
                      ndp_error *err) {
  if (compcode == NDP_NDLZ) return ndp_ndlz_decode(meta, typesize, nd, src, n, dst, dstlen, err);
  return ndp_zfp_decode(compcode, meta, typesize, nd, src, n, dst, dstlen, err);
}

/* ZFP codecs of C-Blosc2 (ids 33 ZFP_ACC, 34 ZFP_PREC, 35 ZFP_RATE) through the
 * system libzfp, in C-Blosc2's stream layout (facts of its plugins/codecs/zfp):
 *
 * - a block is one zfp field of float (typesize 4) or double (typesize 8) of the
 *   block's n-d shape (1 to 4 dimensions, the last one varying fastest: zfp's nx),
 *   encoded with no zfp header: the mode and its parameter come from compcode_meta;
 * - ZFP_ACC: fixed accuracy, tolerance 10 ** (int8_t)meta;
 *   ZFP_PREC: fixed precision meta + 5, + 7, + 9, + 11 bits for 1..4 dimensions
 *   (at most 64);
 *   ZFP_RATE: fixed rate, meta percent of the type's bits per value
 *   (meta / 100 * typesize * 8 bits, unaligned);
 * - streams are zfp's bits in 64-bit little-endian words, so a stream's size is a
 *   multiple of 8 bytes (zero padding after its last bit);
 * - the encoder refuses blocks under 4 items along a dimension, and a stream not
 *   smaller than the block is stored raw (the chunk writer's rule).
 *
 * Decoding never trusts the stream: it is copied into a zero-padded buffer as large
 * as the most the field can take in that mode, so libzfp (which reads words without
 * bounds) cannot read past it, and a stream that needs more bytes than it has is
 * refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ndcodecs.h"
#include "../common/internal.h"

#ifdef NDP_HAVE_ZFP
#include <zfp.h>

int ndp_zfp_built(void) { return 1; }

const char *ndp_zfp_version(void) { return ZFP_VERSION_STRING; }

/* The mode of compcode/meta on z; the zfp type in *type.  NDP_OK or an error. */
static int set_mode(zfp_stream *z, int compcode, int meta, int32_t typesize, int ndim,
                    zfp_type *type, ndp_error *err) {
  if (typesize == 4) *type = zfp_type_float;
  else if (typesize == 8) *type = zfp_type_double;
  else
    return ndp_fail(err, NDP_ERR_CODEC, "%s: items of %d bytes (ZFP takes float32 or float64)",
                    ndp_nd_codec_name(compcode), (int)typesize);
  if (ndim < 1 || ndim > 4)
    return ndp_fail(err, NDP_ERR_CODEC, "%s: blocks of %d dimensions (ZFP takes 1 to 4)",
                    ndp_nd_codec_name(compcode), ndim);
  switch (compcode) {
    case NDP_ZFP_ACC:
      zfp_stream_set_accuracy(z, pow(10.0, (double)(int8_t)meta));
      break;
    case NDP_ZFP_PREC: {
      unsigned prec = (unsigned)(uint8_t)meta + 5u + 2u * (unsigned)(ndim - 1);
      if (prec > ZFP_MAX_PREC) prec = ZFP_MAX_PREC;
      zfp_stream_set_precision(z, prec);
      break;
    }
    default: {
      double ratio = (double)(uint8_t)meta / 100.0;
      zfp_stream_set_rate(z, ratio * (double)typesize * 8, *type, (unsigned)ndim, zfp_false);
      break;
    }
  }
  return NDP_OK;
}

/* The block's field over `data` (dimensions in zfp's order: fastest first). */
static zfp_field *make_field(void *data, zfp_type type, const ndp_nd *nd) {
  const int64_t *b = nd->blockshape;
  switch (nd->ndim) {
    case 1: return zfp_field_1d(data, type, (size_t)b[0]);
    case 2: return zfp_field_2d(data, type, (size_t)b[1], (size_t)b[0]);
    case 3: return zfp_field_3d(data, type, (size_t)b[2], (size_t)b[1], (size_t)b[0]);
    default: return zfp_field_4d(data, type, (size_t)b[3], (size_t)b[2], (size_t)b[1],
                                 (size_t)b[0]);
  }
}

int32_t ndp_zfp_encode(int compcode, int meta, int32_t typesize, const ndp_nd *nd,
                       const uint8_t *src, int32_t n, uint8_t *dst, int32_t maxout,
                       ndp_error *err) {
  const char *name = ndp_nd_codec_name(compcode);
  int rc = ndp_nd_block_check(nd, typesize, n, name, err);
  if (rc != NDP_OK) return rc;
  for (int d = 0; d < nd->ndim; d++)
    if (nd->blockshape[d] < 4)
      return ndp_fail(err, NDP_ERR_CODEC, "%s: block dimension %d holds %lld items; ZFP needs "
                      "blocks of at least 4 along every dimension", name, d,
                      (long long)nd->blockshape[d]);
  zfp_stream *z = zfp_stream_open(NULL);
  if (z == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "%s: cannot open a zfp stream", name);
  zfp_type type;
  zfp_field *f = NULL;
  bitstream *bs = NULL;
  uint8_t *buf = NULL;
  int32_t out = 0;
  if ((rc = set_mode(z, compcode, meta, typesize, nd->ndim, &type, err)) != NDP_OK) {
    out = rc;
    goto done;
  }
  f = make_field((void *)(uintptr_t)src, type, nd);
  size_t cap = f == NULL ? 0 : zfp_stream_maximum_size(z, f);
  if (f == NULL || cap == 0) {
    out = ndp_fail(err, NDP_ERR_CODEC, "%s: libzfp refused the block's field", name);
    goto done;
  }
  cap = (cap + 7) & ~(size_t)7;
  buf = (uint8_t *)malloc(cap);
  bs = buf == NULL ? NULL : stream_open(buf, cap);
  if (bs == NULL) {
    out = ndp_fail(err, NDP_ERR_MEMORY, "%s: cannot allocate %zu bytes", name, cap);
    goto done;
  }
  zfp_stream_set_bit_stream(z, bs);
  zfp_stream_rewind(z);
  size_t size = zfp_compress(z, f);
  if (size == 0) {
    out = ndp_fail(err, NDP_ERR_CODEC, "%s: libzfp failed to compress a block", name);
    goto done;
  }
  /* C-Blosc2's libzfp writes 64-bit stream words: its streams end zero-padded to 8
   * bytes (a libzfp of narrower words, as Debian's 8-bit one, ends earlier) */
  size_t padded = (size + 7) & ~(size_t)7;
  if (padded > cap) padded = cap;
  memset(buf + size, 0, padded - size);
  if (padded < (size_t)n && padded <= (size_t)maxout) {
    memcpy(dst, buf, padded);
    out = (int32_t)padded;
  }
done:
  if (bs != NULL) stream_close(bs);
  if (f != NULL) zfp_field_free(f);
  zfp_stream_close(z);
  free(buf);
  return out;
}

int32_t ndp_zfp_decode(int compcode, int meta, int32_t typesize, const ndp_nd *nd,
                       const uint8_t *src, int32_t n, uint8_t *dst, int32_t dstlen,
                       ndp_error *err) {
  const char *name = ndp_nd_codec_name(compcode);
  int rc = ndp_nd_block_check(nd, typesize, dstlen, name, err);
  if (rc != NDP_OK) return rc;
  if (n <= 0) return ndp_fail(err, NDP_ERR_FORMAT, "%s: empty stream", name);
  zfp_stream *z = zfp_stream_open(NULL);
  if (z == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "%s: cannot open a zfp stream", name);
  zfp_type type;
  zfp_field *f = NULL;
  bitstream *bs = NULL;
  uint8_t *buf = NULL;
  int32_t out;
  if ((rc = set_mode(z, compcode, meta, typesize, nd->ndim, &type, err)) != NDP_OK) {
    out = rc;
    goto done;
  }
  f = make_field(dst, type, nd);
  size_t most = f == NULL ? 0 : zfp_stream_maximum_size(z, f);
  if (f == NULL || most == 0) {
    out = ndp_fail(err, NDP_ERR_CODEC, "%s: libzfp refused the block's field", name);
    goto done;
  }
  /* room for the longest stream the field can take, and for the stream as given */
  size_t have = (size_t)n, cap = (most > have ? most : have) + 16;
  cap = (cap + 7) & ~(size_t)7;
  buf = (uint8_t *)malloc(cap);
  bs = buf == NULL ? NULL : stream_open(buf, cap);
  if (bs == NULL) {
    out = ndp_fail(err, NDP_ERR_MEMORY, "%s: cannot allocate %zu bytes", name, cap);
    goto done;
  }
  memcpy(buf, src, have);
  memset(buf + have, 0, cap - have);
  zfp_stream_set_bit_stream(z, bs);
  zfp_stream_rewind(z);
  size_t used = zfp_decompress(z, f);
  if (used == 0 || used > ((have + 7) & ~(size_t)7)) {
    out = ndp_fail(err, NDP_ERR_FORMAT, "%s: corrupt or truncated stream (%d bytes, %zu read)",
                   name, (int)n, used);
    goto done;
  }
  out = dstlen;
done:
  if (bs != NULL) stream_close(bs);
  if (f != NULL) zfp_field_free(f);
  zfp_stream_close(z);
  free(buf);
  return out;
}

#else   /* built without libzfp */

int ndp_zfp_built(void) { return 0; }

const char *ndp_zfp_version(void) { return ""; }

static int32_t missing(int compcode, ndp_error *err) {
  return ndp_fail(err, NDP_ERR_CODEC, "%s", ndp_codec_missing(compcode));
}

int32_t ndp_zfp_encode(int compcode, int meta, int32_t typesize, const ndp_nd *nd,
                       const uint8_t *src, int32_t n, uint8_t *dst, int32_t maxout,
                       ndp_error *err) {
  return missing(compcode, err);
}

int32_t ndp_zfp_decode(int compcode, int meta, int32_t typesize, const ndp_nd *nd,
                       const uint8_t *src, int32_t n, uint8_t *dst, int32_t dstlen,
                       ndp_error *err) {
  return missing(compcode, err);
}

#endif

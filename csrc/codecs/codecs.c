/* Built-in codecs and the user codec/filter registries (FORMAT.md 3). */
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <lz4hc.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>
#include <zdict.h>

#include "blosclz.h"
#include "ndcodecs.h"
#include "codecs.h"
#include "probe.h"
#include "../common/internal.h"
#include "../common/tls.h"
#include "../filters/filters.h"

typedef struct {
  int registered;
  int version;
  ndp_codec_fn encoder, decoder;
  void *userdata;
} user_codec;

typedef struct {
  int registered;
  ndp_filter_fn forward, backward;
  void *userdata;
} user_filter;

static user_codec user_codecs[256];
static user_filter user_filters[256];
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

int ndp_codec_format(int compcode) {
  switch (compcode) {
    case NDP_BLOSCLZ: return 0;
    case NDP_LZ4: case NDP_LZ4HC: return 1;
    case NDP_ZLIB: return 3;
    case NDP_ZSTD: return 4;
    default: return 6;
  }
}

int ndp_codec_from_format(int format) {
  switch (format) {
    case 0: return NDP_BLOSCLZ;
    case 1: return NDP_LZ4;
    case 3: return NDP_ZLIB;
    case 4: return NDP_ZSTD;
    default: return -1;
  }
}

int ndp_codec_available(int compcode) {
  switch (compcode) {
    case NDP_BLOSCLZ: case NDP_LZ4: case NDP_LZ4HC: case NDP_ZLIB: case NDP_ZSTD:
    case NDP_NDLZ:
      return 1;
    case NDP_ZFP_ACC: case NDP_ZFP_PREC: case NDP_ZFP_RATE:
      return ndp_zfp_built();
    default:
      if (compcode < NDP_USER_CODEC_MIN || compcode > 255) return 0;
      pthread_mutex_lock(&registry_lock);
      int r = user_codecs[compcode].registered;
      pthread_mutex_unlock(&registry_lock);
      return r;
  }
}

static int zstd_level(int clevel) {
  return clevel >= 9 ? ZSTD_maxCLevel() : 2 * clevel - 1;
}

int32_t ndp_codec_encode(int compcode, int clevel, int meta, const uint8_t *src,
                         int32_t n, uint8_t *dst, int32_t maxout) {
  if (maxout <= 0) return 0;
  ndp_tls *t = ndp_tls_get();
  if (t == NULL) return NDP_ERR_MEMORY;
  /* Slow codecs first ask the probe whether their search can pay off (zstd level 1
   * too: its pass over a noise stream costs more than the probe). */
  if (compcode == NDP_ZSTD || compcode == NDP_ZLIB || compcode == NDP_LZ4HC) {
    int verdict = ndp_probe_stream(t, src, n);
    if (verdict == NDP_PROBE_RAW) return 0;
    if (verdict == NDP_PROBE_LITERALS && compcode != NDP_LZ4HC) clevel = 1;
  }
  switch (compcode) {
    case NDP_BLOSCLZ:
      return ndp_blosclz_compress_isa(clevel, src, n, dst, maxout,
                                      ndp_filters_isa() != NDP_ISA_SCALAR);
    case NDP_LZ4: {
      if (t->lz4_state == NULL && (t->lz4_state = malloc((size_t)LZ4_sizeofState())) == NULL)
        return NDP_ERR_MEMORY;
      int accel = 10 - clevel;
      if (accel < 1) accel = 1;
      return LZ4_compress_fast_extState(t->lz4_state, (const char *)src, (char *)dst, n,
                                        maxout, accel);
    }
    case NDP_LZ4HC: {
      if (t->lz4hc_state == NULL &&
          (t->lz4hc_state = malloc((size_t)LZ4_sizeofStateHC())) == NULL)
        return NDP_ERR_MEMORY;
      return LZ4_compress_HC_extStateHC(t->lz4hc_state, (const char *)src, (char *)dst, n,
                                        maxout, clevel);
    }
    case NDP_ZLIB: {
      uLongf dlen = (uLongf)maxout;
      int rc = compress2(dst, &dlen, src, (uLong)n, clevel);
      if (rc == Z_BUF_ERROR) return 0;
      if (rc != Z_OK) return rc == Z_MEM_ERROR ? NDP_ERR_MEMORY : NDP_ERR_PARAM;
      return (int32_t)dlen;
    }
    case NDP_ZSTD: {
      if (t->zstd_cctx == NULL && (t->zstd_cctx = ZSTD_createCCtx()) == NULL)
        return NDP_ERR_MEMORY;
      size_t r = ZSTD_compressCCtx((ZSTD_CCtx *)t->zstd_cctx, dst, (size_t)maxout, src,
                                   (size_t)n, zstd_level(clevel));
      if (ZSTD_isError(r)) {
        return ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall ? 0 : NDP_ERR_CODEC;
      }
      return (int32_t)r;
    }
    default: {
      if (compcode < NDP_USER_CODEC_MIN || compcode > 255) return NDP_ERR_CODEC;
      pthread_mutex_lock(&registry_lock);
      user_codec c = user_codecs[compcode];
      pthread_mutex_unlock(&registry_lock);
      if (!c.registered || c.encoder == NULL) return NDP_ERR_CODEC;
      int r = c.encoder(src, n, dst, maxout, meta, c.userdata);
      if (r < 0) return NDP_ERR_CALLBACK;
      return r > maxout ? NDP_ERR_CALLBACK : r;
    }
  }
}

int32_t ndp_codec_decode(int compcode, int meta, const uint8_t *src, int32_t n,
                         uint8_t *dst, int32_t dstlen, const ndp_dict *dict) {
  switch (compcode) {
    case NDP_BLOSCLZ:
      return ndp_blosclz_decompress(src, n, dst, dstlen);
    case NDP_LZ4:
    case NDP_LZ4HC: {
      int r;
      if (dict != NULL && dict->data != NULL) {
        r = LZ4_decompress_safe_usingDict((const char *)src, (char *)dst, n, dstlen,
                                          (const char *)dict->data, dict->size);
      } else {
        r = LZ4_decompress_safe((const char *)src, (char *)dst, n, dstlen);
      }
      return r < 0 ? NDP_ERR_FORMAT : r;
    }
    case NDP_ZLIB: {
      uLongf dlen = (uLongf)dstlen;
      uLong slen = (uLong)n;
      int rc = uncompress2(dst, &dlen, src, &slen);
      return rc == Z_OK ? (int32_t)dlen : NDP_ERR_FORMAT;
    }
    case NDP_ZSTD: {
      ndp_tls *t = ndp_tls_get();
      if (t == NULL) return NDP_ERR_MEMORY;
      if (t->zstd_dctx == NULL && (t->zstd_dctx = ZSTD_createDCtx()) == NULL)
        return NDP_ERR_MEMORY;
      size_t r;
      if (dict != NULL && dict->zstd_ddict != NULL) {
        r = ZSTD_decompress_usingDDict((ZSTD_DCtx *)t->zstd_dctx, dst, (size_t)dstlen, src,
                                       (size_t)n, (const ZSTD_DDict *)dict->zstd_ddict);
      } else {
        r = ZSTD_decompressDCtx((ZSTD_DCtx *)t->zstd_dctx, dst, (size_t)dstlen, src,
                                (size_t)n);
      }
      return ZSTD_isError(r) ? NDP_ERR_FORMAT : (int32_t)r;
    }
    default: {
      if (compcode < NDP_USER_CODEC_MIN || compcode > 255) return NDP_ERR_CODEC;
      pthread_mutex_lock(&registry_lock);
      user_codec c = user_codecs[compcode];
      pthread_mutex_unlock(&registry_lock);
      if (!c.registered || c.decoder == NULL) return NDP_ERR_CODEC;
      int r = c.decoder(src, n, dst, dstlen, meta, c.userdata);
      return r < 0 ? NDP_ERR_CALLBACK : r;
    }
  }
}

/* zlib: inflate until `want` bytes are out (a raw deflate stream inside a zlib
 * wrapper, as uncompress2 reads it). */
static int32_t zlib_prefix(const uint8_t *src, int32_t n, uint8_t *dst, int32_t want) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit(&z) != Z_OK) return NDP_ERR_MEMORY;
  z.next_in = (Bytef *)(uintptr_t)src;
  z.avail_in = (uInt)n;
  z.next_out = dst;
  z.avail_out = (uInt)want;
  int rc = inflate(&z, Z_SYNC_FLUSH);
  int32_t out = (int32_t)(want - (int32_t)z.avail_out);
  inflateEnd(&z);
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return NDP_ERR_FORMAT;
  return out;
}

int32_t ndp_codec_decode_prefix(int compcode, int meta, const uint8_t *src, int32_t n,
                                uint8_t *dst, int32_t dstlen, int32_t want,
                                const ndp_dict *dict) {
  if (want >= dstlen || want < 0)
    return ndp_codec_decode(compcode, meta, src, n, dst, dstlen, dict);
  switch (compcode) {
    case NDP_LZ4:
    case NDP_LZ4HC: {
      int r;
      if (dict != NULL && dict->data != NULL) {
#if LZ4_VERSION_NUMBER >= 10904
        r = LZ4_decompress_safe_partial_usingDict((const char *)src, (char *)dst, n, want,
                                                  dstlen, (const char *)dict->data,
                                                  dict->size);
#else
        r = LZ4_decompress_safe_usingDict((const char *)src, (char *)dst, n, dstlen,
                                          (const char *)dict->data, dict->size);
#endif
      } else {
        r = LZ4_decompress_safe_partial((const char *)src, (char *)dst, n, want, dstlen);
      }
      return r < 0 ? NDP_ERR_FORMAT : r;
    }
    case NDP_ZLIB:
      return zlib_prefix(src, n, dst, want);
    default:
      return ndp_codec_decode(compcode, meta, src, n, dst, dstlen, dict);
  }
}

int ndp_dict_init(ndp_dict *d, int compcode, const uint8_t *data, int32_t size) {
  d->data = data;
  d->size = size;
  d->zstd_ddict = NULL;
  if (compcode == NDP_ZSTD) {
    d->zstd_ddict = ZSTD_createDDict(data, (size_t)size);
    if (d->zstd_ddict == NULL) return NDP_ERR_FORMAT;
  }
  return NDP_OK;
}

void ndp_dict_free(ndp_dict *d) {
  if (d->zstd_ddict != NULL) ZSTD_freeDDict((ZSTD_DDict *)d->zstd_ddict);
  d->zstd_ddict = NULL;
}

int ndp_cdict_init(ndp_cdict *d, int compcode, int clevel, const uint8_t *data, int32_t size) {
  d->data = data;
  d->size = size;
  d->zstd_cdict = NULL;
  if (compcode == NDP_ZSTD) {
    d->zstd_cdict = ZSTD_createCDict(data, (size_t)size, zstd_level(clevel));
    if (d->zstd_cdict == NULL) return NDP_ERR_MEMORY;
  }
  return NDP_OK;
}

void ndp_cdict_free(ndp_cdict *d) {
  if (d->zstd_cdict != NULL) ZSTD_freeCDict((ZSTD_CDict *)d->zstd_cdict);
  d->zstd_cdict = NULL;
}

int32_t ndp_codec_encode_dict(int compcode, int clevel, const ndp_cdict *d, const uint8_t *src,
                              int32_t n, uint8_t *dst, int32_t maxout) {
  if (maxout <= 0) return 0;
  ndp_tls *t = ndp_tls_get();
  if (t == NULL) return NDP_ERR_MEMORY;
  switch (compcode) {
    case NDP_ZSTD: {
      if (t->zstd_cctx == NULL && (t->zstd_cctx = ZSTD_createCCtx()) == NULL)
        return NDP_ERR_MEMORY;
      size_t r = ZSTD_compress_usingCDict((ZSTD_CCtx *)t->zstd_cctx, dst, (size_t)maxout, src,
                                          (size_t)n, (const ZSTD_CDict *)d->zstd_cdict);
      if (ZSTD_isError(r))
        return ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall ? 0 : NDP_ERR_CODEC;
      return (int32_t)r;
    }
    case NDP_LZ4: {
      if (t->lz4_state == NULL && (t->lz4_state = malloc((size_t)LZ4_sizeofState())) == NULL)
        return NDP_ERR_MEMORY;
      LZ4_stream_t *st = LZ4_initStream(t->lz4_state, (size_t)LZ4_sizeofState());
      LZ4_loadDict(st, (const char *)d->data, d->size);
      int accel = 10 - clevel;
      return LZ4_compress_fast_continue(st, (const char *)src, (char *)dst, n, maxout,
                                        accel < 1 ? 1 : accel);
    }
    case NDP_LZ4HC: {
      if (t->lz4hc_state == NULL &&
          (t->lz4hc_state = malloc((size_t)LZ4_sizeofStateHC())) == NULL)
        return NDP_ERR_MEMORY;
      LZ4_streamHC_t *st = LZ4_initStreamHC(t->lz4hc_state, (size_t)LZ4_sizeofStateHC());
      LZ4_resetStreamHC_fast(st, clevel);
      LZ4_loadDictHC(st, (const char *)d->data, d->size);
      return LZ4_compress_HC_continue(st, (const char *)src, (char *)dst, n, maxout);
    }
    default:
      return NDP_ERR_CODEC;
  }
}

int32_t ndp_dict_train(uint8_t *dict, int32_t cap, const uint8_t *samples, const size_t *sizes,
                       int32_t nsamples) {
  if (cap < 256 || nsamples < 1) return 0;
  size_t r = ZDICT_trainFromBuffer(dict, (size_t)cap, samples, sizes, (unsigned)nsamples);
  return ZDICT_isError(r) ? 0 : (int32_t)r;
}

int ndp_register_codec(int id, int format_version, ndp_codec_fn encoder,
                       ndp_codec_fn decoder, void *userdata, ndp_error *err) {
  if (id < NDP_USER_CODEC_MIN || id > 255)
    return ndp_fail(err, NDP_ERR_PARAM, "user codec ids are 160..255, got %d", id);
  pthread_mutex_lock(&registry_lock);
  user_codecs[id].registered = 1;
  user_codecs[id].version = format_version;
  user_codecs[id].encoder = encoder;
  user_codecs[id].decoder = decoder;
  user_codecs[id].userdata = userdata;
  pthread_mutex_unlock(&registry_lock);
  return NDP_OK;
}

int ndp_register_filter(int id, ndp_filter_fn forward, ndp_filter_fn backward,
                        void *userdata, ndp_error *err) {
  if (id < NDP_USER_FILTER_MIN || id > 255)
    return ndp_fail(err, NDP_ERR_PARAM, "user filter ids are 160..255, got %d", id);
  pthread_mutex_lock(&registry_lock);
  user_filters[id].registered = 1;
  user_filters[id].forward = forward;
  user_filters[id].backward = backward;
  user_filters[id].userdata = userdata;
  pthread_mutex_unlock(&registry_lock);
  return NDP_OK;
}

int ndp_user_filter(int id, ndp_filter_fn *fwd, ndp_filter_fn *bwd, void **userdata) {
  if (id < 0 || id > 255) return 0;
  pthread_mutex_lock(&registry_lock);
  user_filter f = user_filters[id];
  pthread_mutex_unlock(&registry_lock);
  if (!f.registered) return 0;
  *fwd = f.forward;
  *bwd = f.backward;
  *userdata = f.userdata;
  return 1;
}

const char *ndp_codec_library_version(int compcode) {
  static char lz4v[32], zstdv[32];
  switch (compcode) {
    case NDP_BLOSCLZ: return "ndpack-blosclz-1";
    case NDP_LZ4: case NDP_LZ4HC:
      snprintf(lz4v, sizeof lz4v, "%s", LZ4_versionString());
      return lz4v;
    case NDP_ZLIB: return zlibVersion();
    case NDP_ZSTD:
      snprintf(zstdv, sizeof zstdv, "%s", ZSTD_versionString());
      return zstdv;
    case NDP_NDLZ: return "ndpack-ndlz-1";
    case NDP_ZFP_ACC: case NDP_ZFP_PREC: case NDP_ZFP_RATE: return ndp_zfp_version();
    default: return "";
  }
}

/* ---- raw zstd frames (zarr's and numcodecs' zstd codec) ---- */

/* The sum of the content sizes the frames of src state (the stable API's
 * ZSTD_getFrameContentSize and ZSTD_findFrameCompressedSize, frame after frame; skippable
 * frames state 0): ZSTD_CONTENTSIZE_ERROR for a corrupt or truncated frame,
 * ZSTD_CONTENTSIZE_UNKNOWN when a frame does not say. */
static unsigned long long zstd_stated_size(const void *src, size_t srclen) {
  const uint8_t *p = (const uint8_t *)src;
  unsigned long long total = 0;
  int unknown = 0;
  while (srclen > 0) {
    unsigned long long one = ZSTD_getFrameContentSize(p, srclen);
    size_t used = ZSTD_findFrameCompressedSize(p, srclen);
    if (one == ZSTD_CONTENTSIZE_ERROR || ZSTD_isError(used) || used == 0 || used > srclen)
      return ZSTD_CONTENTSIZE_ERROR;
    if (one == ZSTD_CONTENTSIZE_UNKNOWN) unknown = 1;
    else if (total + one < total) return ZSTD_CONTENTSIZE_ERROR;   /* overflow */
    else total += one;
    p += used;
    srclen -= used;
  }
  return unknown ? ZSTD_CONTENTSIZE_UNKNOWN : total;
}

int64_t ndp_zstd_decompress(const void *src, int64_t srclen, void *dst, int64_t dstlen,
                            ndp_error *err) {
  if (srclen < 0 || dstlen < 0 || (src == NULL && srclen > 0) || (dst == NULL && dstlen > 0))
    return ndp_fail(err, NDP_ERR_PARAM, "zstd: negative sizes or missing buffers");
  static const uint8_t magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
  if (srclen < 4 || memcmp(src, magic, 4) != 0)
    return ndp_fail(err, NDP_ERR_FORMAT, "not a zstd frame (%lld bytes, no magic number)",
                    (long long)srclen);
  /* the sizes the frames state, all of them (a corrupt header or a frame cut short is
   * an error here, before anything is written) */
  unsigned long long stated = zstd_stated_size(src, (size_t)srclen);
  if (stated == ZSTD_CONTENTSIZE_ERROR)
    return ndp_fail(err, NDP_ERR_FORMAT, "a corrupt or truncated zstd frame (%lld bytes)",
                    (long long)srclen);
  if (stated != ZSTD_CONTENTSIZE_UNKNOWN && stated != (unsigned long long)dstlen)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "the zstd frame holds %llu bytes, not %lld",
                    stated, (long long)dstlen);
  ndp_tls *t = ndp_tls_get();
  if (t == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "zstd: no thread state");
  if (t->zstd_dctx == NULL && (t->zstd_dctx = ZSTD_createDCtx()) == NULL)
    return ndp_fail(err, NDP_ERR_MEMORY, "zstd: cannot make a decompression context");
  size_t r = ZSTD_decompressDCtx((ZSTD_DCtx *)t->zstd_dctx, dst, (size_t)dstlen, src,
                                 (size_t)srclen);
  if (ZSTD_isError(r)) {
    if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
      return ndp_fail(err, NDP_ERR_DEST_SIZE, "the zstd frame decodes to more than %lld bytes",
                      (long long)dstlen);
    if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
      return ndp_fail(err, NDP_ERR_MEMORY, "zstd: %s", ZSTD_getErrorName(r));
    return ndp_fail(err, NDP_ERR_FORMAT, "a corrupt zstd frame: %s", ZSTD_getErrorName(r));
  }
  if ((int64_t)r != dstlen)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "the zstd frame decodes to %zu bytes, not %lld", r,
                    (long long)dstlen);
  return (int64_t)r;
}

int64_t ndp_zstd_bound(int64_t srclen) {
  if (srclen < 0) return NDP_ERR_PARAM;
  size_t b = ZSTD_compressBound((size_t)srclen);
  return ZSTD_isError(b) || b > (size_t)INT64_MAX ? NDP_ERR_PARAM : (int64_t)b;
}

int64_t ndp_zstd_compress(int level, int checksum, const void *src, int64_t srclen,
                          void *dst, int64_t dstcap, ndp_error *err) {
  if (srclen < 0 || dstcap < 0 || (src == NULL && srclen > 0) || (dst == NULL && dstcap > 0))
    return ndp_fail(err, NDP_ERR_PARAM, "zstd: negative sizes or missing buffers");
  ndp_tls *t = ndp_tls_get();
  if (t == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "zstd: no thread state");
  if (t->zstd_cctx == NULL && (t->zstd_cctx = ZSTD_createCCtx()) == NULL)
    return ndp_fail(err, NDP_ERR_MEMORY, "zstd: cannot make a compression context");
  ZSTD_CCtx *c = (ZSTD_CCtx *)t->zstd_cctx;
  /* parameters set here are sticky: reset them (the Blosc2 path's ZSTD_compressCCtx
   * ignores them anyway) */
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  size_t r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum != 0);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
  if (ZSTD_isError(r))
    return ndp_fail(err, NDP_ERR_PARAM, "zstd level %d: %s", level, ZSTD_getErrorName(r));
  r = ZSTD_compress2(c, dst, (size_t)dstcap, src, (size_t)srclen);
  if (ZSTD_isError(r)) {
    ZSTD_ErrorCode code = ZSTD_getErrorCode(r);
    if (code == ZSTD_error_dstSize_tooSmall)
      return ndp_fail(err, NDP_ERR_DEST_SIZE, "the zstd frame of %lld bytes needs more than %lld",
                      (long long)srclen, (long long)dstcap);
    return ndp_fail(err, code == ZSTD_error_memory_allocation ? NDP_ERR_MEMORY : NDP_ERR_CODEC,
                    "zstd: %s", ZSTD_getErrorName(r));
  }
  return (int64_t)r;
}

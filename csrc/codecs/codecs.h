/* Codec table: the built-in codecs (through the system liblz4, libzstd and
 * zlib, and our BloscLZ) and user codecs registered at run time. */
#ifndef NDPACK_CODECS_H
#define NDPACK_CODECS_H

#include <stdint.h>

#include "ndpack.h"

typedef struct {
  const uint8_t *data;   /* dictionary bytes (inside the chunk) */
  int32_t size;
  void *zstd_ddict;      /* ZSTD_DDict*, built once per decompress call */
} ndp_dict;

/* Format code stored in flags bits 5-7 for a compcode (6 for user codecs). */
int ndp_codec_format(int compcode);
/* compcode for a format code; -1 for 6/7 (the caller reads udcodec). */
int ndp_codec_from_format(int format);

/* Encode: > 0 compressed size, 0 when the output would not fit in `maxout`
 * (store raw), < 0 on failure.  Decode: the decoded size or < 0. */
int32_t ndp_codec_encode(int compcode, int clevel, int meta, const uint8_t *src,
                         int32_t n, uint8_t *dst, int32_t maxout);
int32_t ndp_codec_decode(int compcode, int meta, const uint8_t *src, int32_t n,
                         uint8_t *dst, int32_t dstlen, const ndp_dict *dict);

/* Decode at least the first `want` bytes of a stream of `dstlen` decoded bytes (LZ4
 * and zlib stop there, the other codecs decode it all).  Returns the bytes decoded
 * (>= want unless the stream is corrupt) or < 0; `want` >= dstlen is a whole decode. */
int32_t ndp_codec_decode_prefix(int compcode, int meta, const uint8_t *src, int32_t n,
                                uint8_t *dst, int32_t dstlen, int32_t want,
                                const ndp_dict *dict);

/* Dictionary support for decoding (zstd: builds a DDict; LZ4: raw bytes). */
int ndp_dict_init(ndp_dict *d, int compcode, const uint8_t *data, int32_t size);
void ndp_dict_free(ndp_dict *d);

/* Dictionary for encoding (zstd: a CDict at the chunk's level; LZ4/LZ4HC: raw bytes). */
typedef struct {
  const uint8_t *data;
  int32_t size;
  void *zstd_cdict;      /* ZSTD_CDict* */
} ndp_cdict;

int ndp_cdict_init(ndp_cdict *d, int compcode, int clevel, const uint8_t *data, int32_t size);
void ndp_cdict_free(ndp_cdict *d);
/* As ndp_codec_encode, compressing against the dictionary. */
int32_t ndp_codec_encode_dict(int compcode, int clevel, const ndp_cdict *d, const uint8_t *src,
                              int32_t n, uint8_t *dst, int32_t maxout);
/* Train a dictionary of at most `cap` bytes from samples laid end to end in
 * `samples` (sizes in `sizes`).  Returns its size, or 0 if none can be trained. */
int32_t ndp_dict_train(uint8_t *dict, int32_t cap, const uint8_t *samples, const size_t *sizes,
                       int32_t nsamples);

/* User filters (ids 160-255), or NULL. */
int ndp_user_filter(int id, ndp_filter_fn *fwd, ndp_filter_fn *bwd, void **userdata);

/* Raw zstd frames, the stored chunks of zarr's and numcodecs' zstd codec (not Blosc2
 * chunks), through this thread's reused contexts; no locks, safe without the GIL.
 *
 * ndp_zstd_decompress: decode the frame(s) in `src` into `dst`, which they must fill
 * exactly: returns `dstlen`, NDP_ERR_FORMAT (not zstd, corrupt, truncated, checksum
 * mismatch) or NDP_ERR_DEST_SIZE (the frames state or decode to another size; a frame
 * that states no size is decoded and its size checked).  `dst` may be partly written
 * on failure.
 * ndp_zstd_compress: one frame of `src` at `level` (zstd's numbering: 0 is the
 * default level 3, negatives are the fast levels), the content size always in its
 * header, a checksum when `checksum`; returns its size, NDP_ERR_DEST_SIZE when it
 * does not fit in `dstcap` (ndp_zstd_bound(srclen) always fits) or NDP_ERR_PARAM.
 * Both report a message in `err` (may be NULL). */
int64_t ndp_zstd_decompress(const void *src, int64_t srclen, void *dst, int64_t dstlen,
                            ndp_error *err);
int64_t ndp_zstd_compress(int level, int checksum, const void *src, int64_t srclen,
                          void *dst, int64_t dstcap, ndp_error *err);
/* The most bytes ndp_zstd_compress can write for `srclen` input bytes (< 0: too big). */
int64_t ndp_zstd_bound(int64_t srclen);

#endif

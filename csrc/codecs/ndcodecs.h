/* C-Blosc2's n-d codecs (ZFP, NDLZ) and the per-thread n-d layout they read
 * (ndp_nd, ndpack.h).  Each encoder returns the stream's size (> 0), 0 when it would
 * not be smaller than the input or not fit in `maxout` (the block is stored raw, as
 * C-Blosc2 does), or a negative ndp_status with `err` filled; each decoder the decoded
 * size (== dstlen) or a negative ndp_status with `err` filled.  No call reads or
 * writes outside the buffers and lengths it is given, whatever the stream holds. */
#ifndef NDPACK_NDCODECS_H
#define NDPACK_NDCODECS_H

#include <stdint.h>

#include "ndpack.h"

/* Dispatch over the n-d codecs (compcode 32..35): typesize is the chunk's, nd the
 * layout captured by the call (NULL or ndim 0: none, an error). */
int32_t ndp_nd_encode(int compcode, int clevel, int meta, int32_t typesize, const ndp_nd *nd,
                      const uint8_t *src, int32_t n, uint8_t *dst, int32_t maxout,
                      ndp_error *err);
int32_t ndp_nd_decode(int compcode, int meta, int32_t typesize, const ndp_nd *nd,
                      const uint8_t *src, int32_t n, uint8_t *dst, int32_t dstlen,
                      ndp_error *err);
/* The block's items along each dimension, checked against a block of n bytes of
 * typesize-byte items: NDP_OK, or NDP_ERR_CODEC naming `what` (the codec). */
int ndp_nd_block_check(const ndp_nd *nd, int32_t typesize, int32_t n, const char *what,
                       ndp_error *err);

/* zfp.c: ZFP_ACC / ZFP_PREC / ZFP_RATE through the system libzfp. */
int ndp_zfp_built(void);
const char *ndp_zfp_version(void);
int32_t ndp_zfp_encode(int compcode, int meta, int32_t typesize, const ndp_nd *nd,
                       const uint8_t *src, int32_t n, uint8_t *dst, int32_t maxout,
                       ndp_error *err);
int32_t ndp_zfp_decode(int compcode, int meta, int32_t typesize, const ndp_nd *nd,
                       const uint8_t *src, int32_t n, uint8_t *dst, int32_t dstlen,
                       ndp_error *err);

/* ndlz.c: NDLZ (2-d cells of meta x meta one-byte items, meta 4 or 8).  The decoder
 * reads the block shape from the stream; a layout, when given, must agree. */
int32_t ndp_ndlz_encode(int meta, int32_t typesize, const ndp_nd *nd, const uint8_t *src,
                        int32_t n, uint8_t *dst, int32_t maxout, ndp_error *err);
int32_t ndp_ndlz_decode(int meta, int32_t typesize, const ndp_nd *nd, const uint8_t *src,
                        int32_t n, uint8_t *dst, int32_t dstlen, ndp_error *err);

/* The name C-Blosc2 gives a codec id ("zfp_rate", ...), or NULL. */
const char *ndp_nd_codec_name(int compcode);

#endif

/* NDLZ (C-Blosc2's codec 32): placeholder until the codec lands. */
#include "ndcodecs.h"
#include "../common/internal.h"

int32_t ndp_ndlz_encode(int clevel, int32_t typesize, const ndp_nd *nd, const uint8_t *src,
                        int32_t n, uint8_t *dst, int32_t maxout, ndp_error *err) {
  return ndp_fail(err, NDP_ERR_CODEC, "NDLZ is not implemented yet");
}

int32_t ndp_ndlz_decode(int32_t typesize, const ndp_nd *nd, const uint8_t *src, int32_t n,
                        uint8_t *dst, int32_t dstlen, ndp_error *err) {
  return ndp_fail(err, NDP_ERR_CODEC, "NDLZ is not implemented yet");
}

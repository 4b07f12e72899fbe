/* A cheap look at a stream before a slow codec runs on it (probe.c). */
#ifndef NDPACK_PROBE_H
#define NDPACK_PROBE_H

#include <stdint.h>

#include "../common/tls.h"

enum {
  NDP_PROBE_CODEC = 0,     /* run the codec as asked */
  NDP_PROBE_RAW = 1,       /* no redundancy the codec could use: store the stream raw */
  NDP_PROBE_LITERALS = 2   /* only order-0 redundancy: the fastest level entropy-codes it as well */
};

int ndp_probe_stream(ndp_tls *t, const uint8_t *src, int32_t n);

#endif

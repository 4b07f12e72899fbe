/* Internal helpers shared by the C core (not part of the public API). */
#ifndef NDPACK_INTERNAL_H
#define NDPACK_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "ndpack.h"

/* Record an error (first one wins when err already holds one) and return code. */
int ndp_fail(ndp_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static inline int32_t ndp_rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return (int32_t)v;
}

static inline void ndp_wr32(uint8_t *p, int32_t x) {
  uint32_t v = (uint32_t)x;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  memcpy(p, &v, 4);
}

/* ---- thread pool (pool.c) ---- */
/* Run fn(ctx, task) for task in [0, ntasks) on up to `nthreads` threads
 * (the caller included).  Returns once every task has run. */
typedef void (*ndp_task_fn)(void *ctx, int32_t task);
int ndp_parallel_for(int nthreads, int32_t ntasks, ndp_task_fn fn, void *ctx);

#endif

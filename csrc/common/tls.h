/* Per-thread state: codec contexts and scratch buffers, created on first use
 * in each thread and freed when the thread exits. */
#ifndef NDPACK_TLS_H
#define NDPACK_TLS_H

#include <stddef.h>
#include <stdint.h>

#define NDP_NSCRATCH 5   /* 4: the operand blocks of a fused evaluation (csrc/math/fused.c) */

typedef struct {
  void *zstd_cctx;     /* ZSTD_CCtx*  */
  void *zstd_dctx;     /* ZSTD_DCtx*  */
  void *lz4hc_state;   /* LZ4_streamHC_t-sized state */
  void *lz4_state;     /* LZ4_stream_t-sized state */
  uint8_t *scratch[NDP_NSCRATCH];
  size_t scratch_size[NDP_NSCRATCH];
} ndp_tls;

/* This thread's state, or NULL if it cannot be allocated. */
ndp_tls *ndp_tls_get(void);

/* A thread-local buffer of at least `size` bytes (slot 0..NDP_NSCRATCH-1),
 * valid until the next call with the same slot in this thread; NULL on OOM. */
uint8_t *ndp_scratch(int slot, size_t size);

#endif

/* Internal interface of the chunk codec (format/). */
#ifndef NDPACK_CHUNK_H
#define NDPACK_CHUNK_H

#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "ndpack.h"
#include "../codecs/codecs.h"
#include "../common/internal.h"

/* header.c */
int ndp_split_rule(const ndp_cparams *cp, int32_t typesize, int32_t bs);
int32_t ndp_auto_blocksize(const ndp_cparams *cp, int32_t nbytes);
void ndp_write_header(uint8_t *h, int version, int flags, int32_t typesize, int32_t nbytes,
                      int32_t blocksize, int32_t cbytes);
/* The n blocks of a chunk ordered by their start (`bstarts`: n little-endian int32, as
 * in the chunk; ties by block number) into `order`: blocks lie in the order a threaded
 * compressor finished them.  NDP_OK, or NDP_ERR_MEMORY. */
int ndp_blocks_by_start(const uint8_t *bstarts, int32_t n, int32_t *order);

/* pipeline.c: run the filter pipeline over one block.
 * Forward: src (raw block) -> returns a pointer to the filtered block (one of
 * the scratch buffers, or src itself when no filter changes bytes).
 * `chunk_src` is the raw chunk (DELTA's reference), `offset` the block offset. */
int ndp_pipeline_forward(const uint8_t filters[6], const uint8_t meta[6], int32_t typesize,
                         const uint8_t *chunk_src, int32_t offset, const uint8_t *src,
                         int32_t n, uint8_t *buf_a, uint8_t *buf_b, const uint8_t **out,
                         const ndp_nd *nd, ndp_error *err);
/* Backward: `in` (filtered block, may be modified) -> dst.  `ref` is the
 * decoded block 0 (DELTA), `legacy_bitshuffle` the version <= 2 rule. */
int ndp_pipeline_backward(const uint8_t filters[6], const uint8_t meta[6], int32_t typesize,
                          const uint8_t *ref, int32_t offset, uint8_t *in, int32_t n,
                          uint8_t *dst, uint8_t *buf, int legacy_bitshuffle, const ndp_nd *nd,
                          ndp_error *err);
/* Whether the backward pipeline changes any byte (0: streams decode into place). */
int ndp_pipeline_active(const uint8_t filters[6]);

/* Stream s of regular block j at *pos of a chunk of `cbytes` bytes: its csize (0:
 * zeros, < 0: a run of the byte -csize, > 0: `*data` holds csize bytes), every length
 * checked against cbytes; *pos moves past it. */
int ndp_next_stream(const uint8_t *src, int32_t cbytes, int32_t j, int s, int32_t *pos,
                    int32_t *csize, const uint8_t **data, ndp_error *err);
/* Check that every filter id is known and its parameters valid (compression). */
int ndp_pipeline_check(const uint8_t filters[6], const uint8_t meta[6], int32_t typesize,
                       const ndp_nd *nd, ndp_error *err);

/* decompress.c: decode the blocks j of a chunk (blocks of `blockbytes`, which must
 * be the chunk's blocksize unless it is special or memcpyed) for which want(ctx, j)
 * is true, one at a time in the calling thread, and pass each to visit(ctx, j,
 * data) (data: blockbytes bytes, aligned to `align`, valid until the next block).
 * Returns NDP_OK, the first error, or visit's non-zero status. */
typedef int (*ndp_want_fn)(void *ctx, int32_t j);
typedef int (*ndp_visit_fn)(void *ctx, int32_t j, const uint8_t *data, ndp_error *err);
int ndp_visit_blocks(const void *src, int32_t srcsize, int32_t blockbytes, int32_t align,
                     ndp_want_fn want, ndp_visit_fn visit, void *ctx, ndp_error *err);

/* The first error of tasks run on several threads: set it with ndp_failure_set,
 * test `failed` to stop early. */
typedef struct {
  atomic_int failed;
  ndp_error err;
  pthread_mutex_t lock;
} ndp_failure;

static inline void ndp_failure_init(ndp_failure *f) {
  atomic_init(&f->failed, 0);
  pthread_mutex_init(&f->lock, NULL);
}

static inline void ndp_failure_set(ndp_failure *f, const ndp_error *e) {
  pthread_mutex_lock(&f->lock);
  if (!atomic_load(&f->failed)) {
    f->err = *e;
    atomic_store(&f->failed, 1);
  }
  pthread_mutex_unlock(&f->lock);
}

/* decompress.c: one chunk's decoder, for reading its blocks from several threads. */
typedef struct ndp_djob {
  const uint8_t *src;
  ndp_chunk_info ci;
  ndp_dict dict;
  int has_dict;
  int32_t data_start;        /* first byte after bstarts (and dictionary) */
  int32_t typesize;
  int active;                /* the backward pipeline changes bytes */
  int has_delta;
  int plain_shuffle;         /* split streams are the planes of a SHUFFLE alone */
  int stream_out;            /* unshuffle into dst with streaming stores (big chunks) */
  const uint8_t *ref;        /* decoded block 0 (DELTA) */
  /* block list mode */
  const int32_t *blocks;
  const int32_t *needs;      /* bytes wanted of each listed block, or NULL (all) */
  uint8_t *dst;
  uint32_t *crcs;            /* whole chunks: crc32c of each block's span, or NULL */
  int32_t *span_end;         /* with crcs: where block j's span ends */
  int32_t *order;            /* with crcs: the blocks by start */
  int32_t srcsize;
  ndp_nd nd;                 /* the caller's n-d layout (ndp_nd_set), for the n-d codecs */
  ndp_failure fail;
} ndp_djob;

/* Parse `src` (and decode DELTA's reference block) for ndp_djob_block; VL-block
 * chunks are refused.  On success the caller must call ndp_djob_close. */
int ndp_djob_open(ndp_djob *job, const void *src, int32_t srcsize, ndp_error *err);
/* The first `need` bytes (at least; all when need >= the block's size) of block j
 * into out (room for a whole block), blocks being of `blockbytes` (the chunk's
 * blocksize unless the chunk is special or memcpyed: then block j is the bytes at
 * j * blockbytes).  Thread-safe for one open job. */
int ndp_djob_block(const ndp_djob *job, int32_t j, int32_t blockbytes, uint8_t *out,
                   int32_t need, ndp_error *err);
void ndp_djob_close(ndp_djob *job);

/* boxread.c: blocks of several chunks decoded into the slots of one buffer (box and
 * point reads).  Slot s is block block[s] of open chunk chunk[s], wanted up to byte
 * need[s]. */
typedef struct {
  int64_t n;              /* slots */
  int64_t blockbytes;     /* bytes of a block (a slot) */
  int32_t *block, *need, *chunk;
} ndp_slots;
/* Decode slots [s0, s1) into scratch (slot s at (s - s0) * blockbytes), on up to
 * nthreads threads (1 when little is wanted). */
int ndp_decode_slots(const ndp_slots *sl, const ndp_djob *jobs, int64_t s0, int64_t s1,
                     uint8_t *scratch, int nthreads, ndp_error *err);
/* Decode touched chunk k's slots [chunk_slot[k], chunk_slot[k + 1]) into a buffer of
 * the thread running it (slot s0 first) and pass them to emit(ctx, k, buf, s0), for
 * every k < nchunks, on up to nthreads threads (1 when little is wanted): the blocks
 * are used while they are in the thread's cache. */
typedef void (*ndp_emit_fn)(void *ctx, int32_t k, const uint8_t *buf, int64_t s0);
int ndp_decode_chunks(const ndp_slots *sl, const ndp_djob *jobs, const int64_t *chunk_slot,
                      int32_t nchunks, int nthreads, ndp_emit_fn emit, void *ctx,
                      ndp_error *err);
/* Check an array's chunking (ndim, chunk and block shapes, chunks per dimension,
 * item size); bgrid (blocks per chunk along each dimension), bitems (items of a
 * block), nblocks (blocks of a chunk), nchunks (chunks) follow. */
int ndp_grid_check(int ndim, const int64_t *chunks, const int64_t *blocks, const int64_t *grid,
                   int32_t itemsize, int64_t *bgrid, int64_t *bitems, int64_t *nblocks,
                   int64_t *nchunks, ndp_error *err);
/* Open chunks[0..n) as jobs[0..), each required to hold `nbytes` (numbers[k] names
 * chunk k in messages).  Returns how many are open (close them); *rc the status. */
int32_t ndp_open_chunks(ndp_djob *jobs, const void *const *chunks, const int32_t *sizes,
                        int32_t n, const int64_t *numbers, int64_t nbytes, int *rc,
                        ndp_error *err);

#endif

/* Orthogonal reads ("boxes") of n-dim arrays stored in chunks of blocks.
 *
 * A box is given by sorted distinct positions along every dimension.  Along
 * dimension d, position u lies in chunk u / chunks[d], block (u % chunks[d]) /
 * blocks[d] of that chunk, at offset u % chunks[d] % blocks[d] of the block; the
 * distinct (chunk, block) pairs met are the dimension's "global blocks".  The
 * touched blocks are the product of the global blocks of every dimension.  They get
 * slots of a scratch buffer chunk after chunk (C order of the touched chunks), in C
 * order inside each chunk, so each chunk's blocks are one run of slots.  Every slot
 * is decoded (in parallel, each block only up to its last wanted item), then the box
 * is gathered from the slots in C order. */
#include <stdlib.h>

#include "chunk.h"

typedef struct {
  int64_t n;          /* positions */
  int32_t *gb;        /* global block of each position */
  int64_t *off;       /* its item offset in the block (offset times the block stride) */
  int32_t ng;         /* global blocks */
  int64_t *last;      /* per global block: largest wanted item offset */
  int32_t *bb;        /* per global block: block coordinate in its chunk */
  int32_t nc;         /* touched chunks along this dimension */
  int64_t *cc;        /* their chunk coordinates */
  int32_t *count;     /* global blocks of each touched chunk */
  int32_t *first;     /* first global block of each touched chunk */
} box_dim;

struct ndp_box {
  int ndim;
  int32_t itemsize;
  int64_t bitems, nblocks;  /* items of a block, blocks per chunk */
  box_dim dim[NDP_MAXDIM];
  ndp_slots slots;         /* the blocks to decode */
  int32_t nchunks;
  int64_t *chunk_number;   /* per touched chunk (C order of the touched chunks) */
  int64_t *chunk_slot;     /* first slot of each, then the slot count */
  int32_t *table;          /* slot of each combination of global blocks (C order) */
};

void ndp_box_free(ndp_box *b) {
  if (b == NULL) return;
  for (int d = 0; d < b->ndim; d++) {
    box_dim *D = &b->dim[d];
    free(D->gb); free(D->off); free(D->last); free(D->bb); free(D->cc); free(D->count);
    free(D->first);
  }
  free(b->chunk_number); free(b->chunk_slot); free(b->slots.block); free(b->slots.need);
  free(b->slots.chunk); free(b->table);
  free(b);
}

/* The global blocks of dimension d (positions u[0..n), checked). */
static int build_dim(box_dim *D, const int64_t *u, int64_t n, int64_t chunk, int64_t block,
                     int64_t limit, int64_t bstride, int d, ndp_error *err) {
  D->n = n;
  D->gb = malloc(sizeof(int32_t) * (size_t)n);
  D->off = malloc(sizeof(int64_t) * (size_t)n);
  D->last = malloc(sizeof(int64_t) * (size_t)n);
  D->bb = malloc(sizeof(int32_t) * (size_t)n);
  D->cc = malloc(sizeof(int64_t) * (size_t)n);
  D->count = malloc(sizeof(int32_t) * (size_t)n);
  D->first = malloc(sizeof(int32_t) * (size_t)n);
  if (!D->gb || !D->off || !D->last || !D->bb || !D->cc || !D->count || !D->first)
    return ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  int64_t prev_c = -1, prev_b = -1;
  int32_t g = -1, p = -1;
  for (int64_t i = 0; i < n; i++) {
    if (u[i] < 0 || u[i] >= limit || (i > 0 && u[i] <= u[i - 1]))
      return ndp_fail(err, NDP_ERR_PARAM, "dimension %d: positions must increase within "
                      "[0, %lld) (got %lld at %lld)", d, (long long)limit, (long long)u[i],
                      (long long)i);
    int64_t c = u[i] / chunk, w = u[i] - c * chunk, bk = w / block, o = w - bk * block;
    if (c != prev_c) {                       /* a new touched chunk */
      p++;
      D->cc[p] = c;
      D->count[p] = 0;
      D->first[p] = g + 1;
    }
    if (c != prev_c || bk != prev_b) {       /* a new global block */
      g++;
      D->bb[g] = (int32_t)bk;
      D->count[p]++;
    }
    prev_c = c;
    prev_b = bk;
    D->gb[i] = g;
    D->off[i] = o * bstride;
    D->last[g] = o * bstride;
  }
  D->ng = g + 1;
  D->nc = p + 1;
  return NDP_OK;
}

/* Slots, chunk after chunk: every combination of touched chunks, then every
 * combination of their global blocks, both in C order. */
static void assign_slots(ndp_box *b, const int64_t *grid, const int64_t *bgrid) {
  int nd = b->ndim;
  int32_t p[NDP_MAXDIM] = {0}, r[NDP_MAXDIM];
  int64_t tstride[NDP_MAXDIM], slot = 0;
  tstride[nd - 1] = 1;
  for (int d = nd - 2; d >= 0; d--) tstride[d] = tstride[d + 1] * b->dim[d + 1].ng;
  for (int32_t k = 0; k < b->nchunks; k++) {
    int64_t num = 0;
    for (int d = 0; d < nd; d++) num = num * grid[d] + b->dim[d].cc[p[d]];
    b->chunk_number[k] = num;
    b->chunk_slot[k] = slot;
    for (int d = 0; d < nd; d++) r[d] = 0;
    for (;;) {
      int64_t t = 0, bn = 0, need = 0;
      for (int d = 0; d < nd; d++) {
        const box_dim *D = &b->dim[d];
        int32_t g = D->first[p[d]] + r[d];
        t += g * tstride[d];
        bn = bn * bgrid[d] + D->bb[g];
        need += D->last[g];
      }
      b->table[t] = (int32_t)slot;
      b->slots.block[slot] = (int32_t)bn;
      b->slots.need[slot] = (int32_t)((need + 1) * b->itemsize);
      b->slots.chunk[slot] = k;
      slot++;
      int d = nd - 1;
      while (d >= 0 && ++r[d] == b->dim[d].count[p[d]]) r[d--] = 0;
      if (d < 0) break;
    }
    int d = nd - 1;
    while (d >= 0 && ++p[d] == b->dim[d].nc) p[d--] = 0;
  }
  b->chunk_slot[b->nchunks] = slot;
}

int ndp_grid_check(int ndim, const int64_t *chunks, const int64_t *blocks, const int64_t *grid,
                   int32_t itemsize, int64_t *bgrid, int64_t *bitems, int64_t *nblocks,
                   int64_t *nchunks, ndp_error *err) {
  if (ndim < 1 || ndim > NDP_MAXDIM || itemsize < 1)
    return ndp_fail(err, NDP_ERR_PARAM, "array of %d dimensions, items of %d bytes", ndim,
                    (int)itemsize);
  *bitems = *nblocks = *nchunks = 1;
  for (int d = 0; d < ndim; d++) {
    if (chunks[d] < 1 || blocks[d] < 1 || blocks[d] > chunks[d] || grid[d] < 1)
      return ndp_fail(err, NDP_ERR_PARAM, "dimension %d: chunk %lld, block %lld, %lld chunks",
                      d, (long long)chunks[d], (long long)blocks[d], (long long)grid[d]);
    bgrid[d] = (chunks[d] + blocks[d] - 1) / blocks[d];
    if (__builtin_mul_overflow(*bitems, blocks[d], bitems) ||
        __builtin_mul_overflow(*nblocks, bgrid[d], nblocks) ||
        __builtin_mul_overflow(*nchunks, grid[d], nchunks) ||
        *bitems * itemsize > NDP_MAX_BUFFERSIZE || *nblocks > INT32_MAX ||
        *nchunks > ((int64_t)1 << 48) || grid[d] * chunks[d] > ((int64_t)1 << 48))
      return ndp_fail(err, NDP_ERR_PARAM, "blocks of more than %d bytes, or too many chunks",
                      NDP_MAX_BUFFERSIZE);
  }
  return NDP_OK;
}

int ndp_box_plan(int ndim, const int64_t *chunks, const int64_t *blocks, const int64_t *grid,
                 int32_t itemsize, const int64_t *const *units, const int64_t *nunits,
                 int64_t max_slots, ndp_box **out, ndp_error *err) {
  *out = NULL;
  int64_t bgrid[NDP_MAXDIM], bitems, nblocks, ngrid;
  int rc0 = ndp_grid_check(ndim, chunks, blocks, grid, itemsize, bgrid, &bitems, &nblocks,
                           &ngrid, err);
  if (rc0 != NDP_OK) return rc0;
  for (int d = 0; d < ndim; d++)
    if (nunits[d] < 1 || units[d] == NULL)
      return ndp_fail(err, NDP_ERR_PARAM, "dimension %d: no positions", d);
  ndp_box *b = calloc(1, sizeof *b);
  if (b == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  b->ndim = ndim;
  b->itemsize = itemsize;
  b->bitems = bitems;
  b->slots.blockbytes = bitems * itemsize;
  b->nblocks = nblocks;
  int rc = NDP_OK;
  int64_t bstride = bitems, nslots = 1, nchunks = 1;
  for (int d = 0; d < ndim && rc == NDP_OK; d++) {
    bstride /= blocks[d];
    rc = build_dim(&b->dim[d], units[d], nunits[d], chunks[d], blocks[d],
                   grid[d] * chunks[d], bstride, d, err);
    if (rc == NDP_OK) {
      nslots *= b->dim[d].ng;
      nchunks *= b->dim[d].nc;
      if (nslots > max_slots || nslots > INT32_MAX) {   /* declined: too large */
        ndp_box_free(b);
        return NDP_OK;
      }
    }
  }
  if (rc == NDP_OK) {
    b->slots.n = nslots;
    b->nchunks = (int32_t)nchunks;
    b->chunk_number = malloc(sizeof(int64_t) * (size_t)nchunks);
    b->chunk_slot = malloc(sizeof(int64_t) * (size_t)(nchunks + 1));
    b->slots.block = malloc(sizeof(int32_t) * (size_t)nslots);
    b->slots.need = malloc(sizeof(int32_t) * (size_t)nslots);
    b->slots.chunk = malloc(sizeof(int32_t) * (size_t)nslots);
    b->table = malloc(sizeof(int32_t) * (size_t)nslots);
    if (!b->chunk_number || !b->chunk_slot || !b->slots.block || !b->slots.need ||
        !b->slots.chunk || !b->table)
      rc = ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  }
  if (rc != NDP_OK) {
    ndp_box_free(b);
    return rc;
  }
  assign_slots(b, grid, bgrid);
  *out = b;
  return NDP_OK;
}

int64_t ndp_box_nslots(const ndp_box *b) { return b->slots.n; }
int32_t ndp_box_nchunks(const ndp_box *b) { return b->nchunks; }

int64_t ndp_box_chunk(const ndp_box *b, int32_t k, const int32_t **blocks, int32_t *nblocks) {
  if (k < 0 || k >= b->nchunks) return -1;
  *blocks = b->slots.block + b->chunk_slot[k];
  *nblocks = (int32_t)(b->chunk_slot[k + 1] - b->chunk_slot[k]);
  return b->chunk_number[k];
}

/* ---- decoding slots (shared with pointread.c through chunk.h) ---- */

typedef struct {
  const ndp_slots *sl;
  const ndp_djob *jobs;
  uint8_t *scratch;
  int64_t s0;
  atomic_int failed;
  ndp_error err;
  pthread_mutex_t lock;
} slot_job;

static void slot_task(void *ctx, int32_t i) {
  slot_job *sj = (slot_job *)ctx;
  if (atomic_load(&sj->failed)) return;
  const ndp_slots *sl = sj->sl;
  int64_t s = sj->s0 + i;
  ndp_error e = {0, {0}};
  if (ndp_djob_block(&sj->jobs[sl->chunk[s]], sl->block[s], (int32_t)sl->blockbytes,
                     sj->scratch + (size_t)i * sl->blockbytes, sl->need[s], &e) != NDP_OK) {
    pthread_mutex_lock(&sj->lock);
    if (!atomic_load(&sj->failed)) {
      sj->err = e;
      atomic_store(&sj->failed, 1);
    }
    pthread_mutex_unlock(&sj->lock);
  }
}

/* Below this many wanted bytes the calling thread decodes alone. */
#define PARALLEL_BYTES (256 << 10)

int ndp_decode_slots(const ndp_slots *sl, const ndp_djob *jobs, int64_t s0, int64_t s1,
                     uint8_t *scratch, int nthreads, ndp_error *err) {
  slot_job sj;
  memset(&sj, 0, sizeof sj);
  sj.sl = sl;
  sj.jobs = jobs;
  sj.scratch = scratch;
  sj.s0 = s0;
  int64_t want = 0;
  for (int64_t s = s0; s < s1; s++) want += sl->need[s];
  pthread_mutex_init(&sj.lock, NULL);
  atomic_init(&sj.failed, 0);
  ndp_parallel_for(want < PARALLEL_BYTES ? 1 : nthreads, (int32_t)(s1 - s0), slot_task, &sj);
  pthread_mutex_destroy(&sj.lock);
  if (atomic_load(&sj.failed)) return ndp_fail(err, sj.err.code, "%s", sj.err.msg);
  return NDP_OK;
}

int32_t ndp_open_chunks(ndp_djob *jobs, const void *const *chunks, const int32_t *sizes,
                        int32_t n, const int64_t *numbers, int64_t nbytes, int *rc,
                        ndp_error *err) {
  int32_t k = 0;
  *rc = NDP_OK;
  for (; k < n; k++) {
    *rc = ndp_djob_open(&jobs[k], chunks[k], sizes[k], err);
    if (*rc != NDP_OK) break;
    if (jobs[k].ci.nbytes != nbytes) {
      *rc = ndp_fail(err, NDP_ERR_FORMAT, "chunk %lld holds %d bytes, the array's chunks %lld",
                     (long long)numbers[k], (int)jobs[k].ci.nbytes, (long long)nbytes);
      ndp_djob_close(&jobs[k]);
      break;
    }
  }
  return k;
}

/* ---- gathering the box ---- */

#define GATHER_LOOP(T)                                                                 \
  for (int64_t i = 0; i < L->n; i++) {                                                 \
    const uint8_t *p = src + ((int64_t)table[tbase + L->gb[i]] * bitems + obase + L->off[i]) \
                                 * (int64_t)sizeof(T);                                 \
    memcpy(o, p, sizeof(T));                                                           \
    o += sizeof(T);                                                                    \
  }

/* out (C order over the positions of every dimension) from the decoded slots. */
static void gather(const ndp_box *b, const uint8_t *src, uint8_t *o) {
  int nd = b->ndim;
  int64_t idx[NDP_MAXDIM] = {0}, tstride[NDP_MAXDIM];
  tstride[nd - 1] = 1;
  for (int d = nd - 2; d >= 0; d--) tstride[d] = tstride[d + 1] * b->dim[d + 1].ng;
  const box_dim *L = &b->dim[nd - 1];
  const int32_t *table = b->table;
  int64_t bitems = b->bitems;
  size_t is = (size_t)b->itemsize;
  for (;;) {
    int64_t tbase = 0, obase = 0;
    for (int d = 0; d < nd - 1; d++) {
      tbase += b->dim[d].gb[idx[d]] * tstride[d];
      obase += b->dim[d].off[idx[d]];
    }
    switch (is) {
      case 1: GATHER_LOOP(uint8_t) break;
      case 2: GATHER_LOOP(uint16_t) break;
      case 4: GATHER_LOOP(uint32_t) break;
      case 8: GATHER_LOOP(uint64_t) break;
      default:
        for (int64_t i = 0; i < L->n; i++) {
          memcpy(o, src + ((int64_t)table[tbase + L->gb[i]] * bitems + obase + L->off[i]) * is,
                 is);
          o += is;
        }
    }
    int d = nd - 2;
    while (d >= 0 && ++idx[d] == b->dim[d].n) idx[d--] = 0;
    if (d < 0) break;
  }
}

int ndp_box_read(const ndp_box *b, const void *const *chunks, const int32_t *sizes,
                 void *scratch, int64_t scratch_len, void *out, int64_t out_len, int nthreads,
                 ndp_error *err) {
  int64_t nout = b->itemsize;
  for (int d = 0; d < b->ndim; d++) nout *= b->dim[d].n;
  if (scratch_len < b->slots.n * b->slots.blockbytes || out_len < nout)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "buffers of %lld and %lld bytes, %lld and %lld needed",
                    (long long)scratch_len, (long long)out_len,
                    (long long)(b->slots.n * b->slots.blockbytes), (long long)nout);
  ndp_djob *jobs = calloc((size_t)b->nchunks, sizeof(ndp_djob));
  if (jobs == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  int rc;
  int32_t nopen = ndp_open_chunks(jobs, chunks, sizes, b->nchunks, b->chunk_number,
                                  b->nblocks * b->slots.blockbytes, &rc, err);
  if (rc == NDP_OK)
    rc = ndp_decode_slots(&b->slots, jobs, 0, b->slots.n, (uint8_t *)scratch, nthreads, err);
  if (rc == NDP_OK) gather(b, (const uint8_t *)scratch, (uint8_t *)out);
  for (int32_t k = 0; k < nopen; k++) ndp_djob_close(&jobs[k]);
  free(jobs);
  return rc;
}

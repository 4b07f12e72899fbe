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
 * is gathered from the slots in C order, chunk by chunk.
 *
 * The output may repeat and reorder the positions: along dimension d, output index
 * i takes position maps[d][i] (identity without a map).  For the chunk-by-chunk
 * gather, each dimension's output indices are sorted by the chunk of their position
 * (a counting sort), so a chunk's part of the output is a product of ranges. */
#include <stdlib.h>

#include "chunk.h"

#include "../common/tls.h"

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
  int64_t *pstart;    /* first position in each touched chunk, then n */
  int64_t nout;       /* output indices */
  int64_t *ostart;    /* first sorted output index of each touched chunk, then nout */
  int64_t *opos;      /* output indices sorted by touched chunk */
  int32_t *ogb;       /* their positions' global blocks */
  int64_t *ooff;      /* and item offsets in the block */
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
  int64_t chunk_slots;     /* most slots of one chunk */
  int32_t *table;          /* slot of each combination of global blocks (C order) */
};

void ndp_box_free(ndp_box *b) {
  if (b == NULL) return;
  for (int d = 0; d < b->ndim; d++) {
    box_dim *D = &b->dim[d];
    free(D->gb); free(D->off); free(D->last); free(D->bb); free(D->cc); free(D->count);
    free(D->first); free(D->pstart); free(D->ostart); free(D->opos); free(D->ogb);
    free(D->ooff);
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
  D->pstart = malloc(sizeof(int64_t) * (size_t)(n + 1));
  if (!D->gb || !D->off || !D->last || !D->bb || !D->cc || !D->count || !D->first ||
      !D->pstart)
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
      D->pstart[p] = i;
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
  D->pstart[D->nc] = n;
  return NDP_OK;
}

/* The output indices of dimension d (map[0..nout) of positions, or the positions
 * in order when map is NULL), sorted by touched chunk. */
static int build_out(box_dim *D, const int64_t *map, int64_t nout, int d, ndp_error *err) {
  if (map == NULL) nout = D->n;
  D->nout = nout;
  D->ostart = calloc((size_t)D->nc + 1, sizeof(int64_t));
  D->opos = malloc(sizeof(int64_t) * (size_t)(nout > 0 ? nout : 1));
  D->ogb = malloc(sizeof(int32_t) * (size_t)(nout > 0 ? nout : 1));
  D->ooff = malloc(sizeof(int64_t) * (size_t)(nout > 0 ? nout : 1));
  int32_t *group = malloc(sizeof(int32_t) * (size_t)D->n);   /* touched chunk per position */
  int rc = NDP_OK;
  if (!D->ostart || !D->opos || !D->ogb || !D->ooff || !group)
    rc = ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  for (int32_t p = 0; rc == NDP_OK && p < D->nc; p++)
    for (int64_t i = D->pstart[p]; i < D->pstart[p + 1]; i++) group[i] = p;
  for (int64_t i = 0; rc == NDP_OK && i < nout; i++) {
    int64_t q = map != NULL ? map[i] : i;
    if (q < 0 || q >= D->n)
      rc = ndp_fail(err, NDP_ERR_PARAM, "dimension %d: output %lld takes position %lld of %lld",
                    d, (long long)i, (long long)q, (long long)D->n);
    else
      D->ostart[group[q] + 1]++;
  }
  if (rc == NDP_OK) {
    for (int32_t p = 0; p < D->nc; p++) D->ostart[p + 1] += D->ostart[p];
    int64_t *fill = malloc(sizeof(int64_t) * (size_t)D->nc);
    if (fill == NULL) {
      rc = ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
    } else {
      memcpy(fill, D->ostart, sizeof(int64_t) * (size_t)D->nc);
      for (int64_t i = 0; i < nout; i++) {
        int64_t q = map != NULL ? map[i] : i, j = fill[group[q]]++;
        D->opos[j] = i;
        D->ogb[j] = D->gb[q];
        D->ooff[j] = D->off[q];
      }
      free(fill);
    }
  }
  free(group);
  return rc;
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
    if (k > 0 && slot - b->chunk_slot[k - 1] > b->chunk_slots)
      b->chunk_slots = slot - b->chunk_slot[k - 1];
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
  if (slot - b->chunk_slot[b->nchunks - 1] > b->chunk_slots)
    b->chunk_slots = slot - b->chunk_slot[b->nchunks - 1];
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
                 const int64_t *const *maps, const int64_t *nmaps, int64_t max_slots,
                 ndp_box **out, ndp_error *err) {
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
    if (rc == NDP_OK)
      rc = build_out(&b->dim[d], maps != NULL ? maps[d] : NULL,
                     maps != NULL && maps[d] != NULL ? nmaps[d] : 0, d, err);
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
int64_t ndp_box_chunk_slots(const ndp_box *b) { return b->chunk_slots; }
int32_t ndp_box_nchunks(const ndp_box *b) { return b->nchunks; }

int64_t ndp_box_chunk(const ndp_box *b, int32_t k, const int32_t **blocks, int32_t *nblocks) {
  if (k < 0 || k >= b->nchunks) return -1;
  *blocks = b->slots.block + b->chunk_slot[k];
  *nblocks = (int32_t)(b->chunk_slot[k + 1] - b->chunk_slot[k]);
  return b->chunk_number[k];
}

/* ---- decoding slots (shared with pointread.c through chunk.h) ---- */

/* One decoding run: slots [s0, ...) into scratch (slot mode), or each touched chunk
 * into its thread's buffer then emit (chunk mode); the first failure is kept. */
typedef struct {
  const ndp_slots *sl;
  const ndp_djob *jobs;
  uint8_t *scratch;
  int64_t s0;
  const int64_t *chunk_slot;
  ndp_emit_fn emit;
  void *ctx;
  ndp_failure fail;
} decode_job;

/* Decode slot s into out. */
static int decode_slot(const decode_job *dj, int64_t s, uint8_t *out, ndp_error *e) {
  const ndp_slots *sl = dj->sl;
  return ndp_djob_block(&dj->jobs[sl->chunk[s]], sl->block[s], (int32_t)sl->blockbytes, out,
                        sl->need[s], e);
}

static void slot_task(void *ctx, int32_t i) {
  decode_job *dj = (decode_job *)ctx;
  if (atomic_load(&dj->fail.failed)) return;
  ndp_error e = {0, {0}};
  if (decode_slot(dj, dj->s0 + i, dj->scratch + (size_t)i * dj->sl->blockbytes, &e) != NDP_OK)
    ndp_failure_set(&dj->fail, &e);
}

static void chunk_task(void *ctx, int32_t k) {
  decode_job *dj = (decode_job *)ctx;
  if (atomic_load(&dj->fail.failed)) return;
  int64_t s0 = dj->chunk_slot[k], s1 = dj->chunk_slot[k + 1], bb = dj->sl->blockbytes;
  ndp_error e = {0, {0}};
  uint8_t *buf = ndp_scratch(3, (size_t)((s1 - s0) * bb));
  int rc = buf == NULL ? ndp_fail(&e, NDP_ERR_MEMORY, "cannot allocate a chunk's blocks")
                       : NDP_OK;
  for (int64_t s = s0; s < s1 && rc == NDP_OK; s++)
    rc = decode_slot(dj, s, buf + (size_t)((s - s0) * bb), &e);
  if (rc == NDP_OK) dj->emit(dj->ctx, k, buf, s0);
  else ndp_failure_set(&dj->fail, &e);
}

/* Below this many wanted bytes the calling thread decodes alone. */
#define PARALLEL_BYTES (256 << 10)

/* Run `task` for [0, ntasks) on up to nthreads threads (1 when less than
 * PARALLEL_BYTES are wanted of slots [s0, s1)); the first failure into err. */
static int run_decode(decode_job *dj, ndp_task_fn task, int32_t ntasks, int64_t s0,
                      int64_t s1, int nthreads, ndp_error *err) {
  int64_t want = 0;
  for (int64_t s = s0; s < s1; s++) want += dj->sl->need[s];
  ndp_failure_init(&dj->fail);
  ndp_parallel_for(want < PARALLEL_BYTES ? 1 : nthreads, ntasks, task, dj);
  pthread_mutex_destroy(&dj->fail.lock);
  if (atomic_load(&dj->fail.failed))
    return ndp_fail(err, dj->fail.err.code, "%s", dj->fail.err.msg);
  return NDP_OK;
}

int ndp_decode_slots(const ndp_slots *sl, const ndp_djob *jobs, int64_t s0, int64_t s1,
                     uint8_t *scratch, int nthreads, ndp_error *err) {
  decode_job dj = {.sl = sl, .jobs = jobs, .scratch = scratch, .s0 = s0};
  return run_decode(&dj, slot_task, (int32_t)(s1 - s0), s0, s1, nthreads, err);
}

int ndp_decode_chunks(const ndp_slots *sl, const ndp_djob *jobs, const int64_t *chunk_slot,
                      int32_t nchunks, int nthreads, ndp_emit_fn emit, void *ctx,
                      ndp_error *err) {
  decode_job dj = {.sl = sl, .jobs = jobs, .chunk_slot = chunk_slot, .emit = emit, .ctx = ctx};
  return run_decode(&dj, chunk_task, nchunks, 0, sl->n, nthreads, err);
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

/* Runs of the last dimension's output indices j0 <= j < j1 (sorted by chunk) that are
 * consecutive in the output and in one block: each is one memcpy. */
typedef struct {
  int64_t j, len;
} gather_run;

static int64_t last_dim_runs(const box_dim *L, int64_t j0, int64_t j1, gather_run *runs) {
  int64_t n = 0;
  for (int64_t j = j0; j < j1;) {
    int64_t e = j + 1;
    while (e < j1 && L->opos[e] == L->opos[e - 1] + 1 && L->ogb[e] == L->ogb[j] &&
           L->ooff[e] == L->ooff[e - 1] + 1)
      e++;
    runs[n].j = j;
    runs[n].len = e - j;
    n++;
    j = e;
  }
  return n;
}

#define GATHER_ONES(T)                                                                 \
  for (int64_t q = 0; q < nruns; q++) {                                                \
    int64_t j = runs[q].j;                                                             \
    memcpy(o + L->opos[j] * (int64_t)sizeof(T),                                        \
           src + ((table[tbase + L->ogb[j]] - s0) * bitems + obase + L->ooff[j])       \
                     * (int64_t)sizeof(T), sizeof(T));                                 \
  }

/* The part of the output in touched chunk k (the output indices of its chunk group
 * p along every dimension: a product of ranges of the sorted ones) from slots
 * decoded at src (slot s0 first) into out (the whole output, C order).  Along the
 * last dimension the indices are copied by runs (consecutive in the output and in a
 * block: a[..., lo:hi] copies rows of items, not items). */
static void gather_chunk(const ndp_box *b, int32_t k, const uint8_t *src, int64_t s0,
                         uint8_t *out) {
  int nd = b->ndim;
  int32_t p[NDP_MAXDIM];
  int64_t idx[NDP_MAXDIM], tstride[NDP_MAXDIM], ostride[NDP_MAXDIM];
  int64_t r = k;
  for (int d = nd - 1; d >= 0; d--) {
    p[d] = (int32_t)(r % b->dim[d].nc);
    r /= b->dim[d].nc;
    idx[d] = b->dim[d].ostart[p[d]];
    if (idx[d] == b->dim[d].ostart[p[d] + 1]) return;     /* no output in this chunk */
  }
  tstride[nd - 1] = ostride[nd - 1] = 1;
  for (int d = nd - 2; d >= 0; d--) {
    tstride[d] = tstride[d + 1] * b->dim[d + 1].ng;
    ostride[d] = ostride[d + 1] * b->dim[d + 1].nout;
  }
  const box_dim *L = &b->dim[nd - 1];
  const int32_t *table = b->table;
  int64_t bitems = b->bitems, lo = L->ostart[p[nd - 1]], hi = L->ostart[p[nd - 1] + 1];
  size_t is = (size_t)b->itemsize;
  gather_run few[64];
  gather_run *runs = hi - lo <= 64 ? few : malloc((size_t)(hi - lo) * sizeof(gather_run));
  if (runs == NULL) runs = few;           /* no memory: one item per run, below */
  int64_t nruns = runs == few && hi - lo > 64 ? 0 : last_dim_runs(L, lo, hi, runs);
  int ones = nruns == hi - lo;            /* every run one item */
  for (;;) {
    int64_t tbase = 0, obase = 0, oi = 0;
    for (int d = 0; d < nd - 1; d++) {
      const box_dim *D = &b->dim[d];
      tbase += D->ogb[idx[d]] * tstride[d];
      obase += D->ooff[idx[d]];
      oi += D->opos[idx[d]] * ostride[d];
    }
    uint8_t *o = out + (size_t)oi * is;
    if (nruns == 0) {                     /* (allocation failed) item by item */
      for (int64_t j = lo; j < hi; j++)
        memcpy(o + L->opos[j] * (int64_t)is,
               src + ((table[tbase + L->ogb[j]] - s0) * bitems + obase + L->ooff[j]) * is,
               is);
    } else if (ones) {
      switch (is) {
        case 1: GATHER_ONES(uint8_t) break;
        case 2: GATHER_ONES(uint16_t) break;
        case 4: GATHER_ONES(uint32_t) break;
        case 8: GATHER_ONES(uint64_t) break;
        default:
          for (int64_t q = 0; q < nruns; q++) {
            int64_t j = runs[q].j;
            memcpy(o + L->opos[j] * (int64_t)is,
                   src + ((table[tbase + L->ogb[j]] - s0) * bitems + obase + L->ooff[j]) * is,
                   is);
          }
      }
    } else {
      for (int64_t q = 0; q < nruns; q++) {
        int64_t j = runs[q].j;
        memcpy(o + L->opos[j] * (int64_t)is,
               src + ((table[tbase + L->ogb[j]] - s0) * bitems + obase + L->ooff[j]) * is,
               (size_t)runs[q].len * is);
      }
    }
    int d = nd - 2;
    while (d >= 0 && ++idx[d] == b->dim[d].ostart[p[d] + 1]) {
      idx[d] = b->dim[d].ostart[p[d]];
      d--;
    }
    if (d < 0) break;
  }
  if (runs != few) free(runs);
}

typedef struct {
  const ndp_box *b;
  const uint8_t *src;
  int64_t s0;
  int32_t k0;
  uint8_t *out;
} gather_job;

static void gather_task(void *ctx, int32_t i) {
  gather_job *g = (gather_job *)ctx;
  gather_chunk(g->b, g->k0 + i, g->src, g->s0, g->out);
}

static void gather_emit(void *ctx, int32_t k, const uint8_t *buf, int64_t s0) {
  gather_job *g = (gather_job *)ctx;
  gather_chunk(g->b, k, buf, s0, g->out);
}

/* Below this many bytes of box the calling thread gathers alone. */
#define GATHER_PARALLEL_BYTES (1 << 20)

int ndp_box_read(const ndp_box *b, const void *const *chunks, const int32_t *sizes,
                 void *scratch, int64_t scratch_len, void *out, int64_t out_len, int nthreads,
                 ndp_error *err) {
  int64_t nout = b->itemsize, bb = b->slots.blockbytes, cap = scratch_len / bb;
  for (int d = 0; d < b->ndim; d++) nout *= b->dim[d].nout;
  if (nout == 0) return NDP_OK;
  if (cap < b->chunk_slots || out_len < nout)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "buffers of %lld and %lld bytes: at least %lld "
                    "and %lld needed", (long long)scratch_len, (long long)out_len,
                    (long long)(b->chunk_slots * bb), (long long)nout);
  ndp_djob *jobs = calloc((size_t)b->nchunks, sizeof(ndp_djob));
  if (jobs == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  int rc;
  int32_t nopen = ndp_open_chunks(jobs, chunks, sizes, b->nchunks, b->chunk_number,
                                  b->nblocks * bb, &rc, err);
  gather_job g = {b, (const uint8_t *)scratch, 0, 0, (uint8_t *)out};
  if (rc == NDP_OK && b->nchunks >= 2 * nthreads) {
    /* many chunks: each thread decodes a chunk into its own buffer and gathers it
     * while it is in the cache; no barrier until the end */
    rc = ndp_decode_chunks(&b->slots, jobs, b->chunk_slot, b->nchunks, nthreads, gather_emit,
                           &g, err);
    for (int32_t k = 0; k < nopen; k++) ndp_djob_close(&jobs[k]);
    free(jobs);
    return rc;
  }
  /* a few chunks: their blocks decoded in parallel (batches of whole chunks whose
   * slots fit in the scratch buffer), then gathered */
  for (int32_t k0 = 0, k1; rc == NDP_OK && k0 < b->nchunks; k0 = k1) {
    k1 = k0 + 1;
    while (k1 < b->nchunks && b->chunk_slot[k1 + 1] - b->chunk_slot[k0] <= cap) k1++;
    g.s0 = b->chunk_slot[k0];
    g.k0 = k0;
    rc = ndp_decode_slots(&b->slots, jobs, g.s0, b->chunk_slot[k1], (uint8_t *)scratch,
                          nthreads, err);
    if (rc == NDP_OK)
      ndp_parallel_for(nout < GATHER_PARALLEL_BYTES ? 1 : nthreads, k1 - k0, gather_task, &g);
  }
  for (int32_t k = 0; k < nopen; k++) ndp_djob_close(&jobs[k]);
  free(jobs);
  return rc;
}

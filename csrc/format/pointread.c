/* Point reads of n-dim arrays stored in chunks of blocks: out[i] = x[coords[.][i]].
 *
 * Every point is mapped to (chunk, block, offset in the block); the points are
 * sorted by (chunk, block) with a radix sort, and each distinct block becomes a slot.
 * With many chunks, each thread decodes a chunk's slots into its own buffer and
 * copies that chunk's points.  With a few, the slots are decoded batch by batch into
 * the caller's scratch buffer, in parallel, and the points of a batch are copied out
 * before the next one.  Every block is decoded only up to its last point, and memory
 * stays at a chunk's blocks (or the scratch buffer) whatever the number of points. */
#include <stdlib.h>

#include "chunk.h"

struct ndp_points {
  int32_t itemsize;
  int64_t bitems, nblocks;   /* items of a block, blocks per chunk */
  int64_t npoints;
  ndp_slots slots;
  int32_t nchunks;
  int64_t *chunk_number;     /* per touched chunk, increasing */
  int64_t *chunk_slot;       /* first slot of each, then the slot count */
  int64_t *chunk_point;      /* first sorted point of each, then npoints */
  int64_t *order;            /* points sorted by slot: their output index */
  int64_t *pslot;            /* slot of each sorted point */
  int64_t *poff;             /* item offset in its block of each sorted point */
};

void ndp_points_free(ndp_points *p) {
  if (p == NULL) return;
  free(p->chunk_number); free(p->chunk_slot); free(p->chunk_point);
  free(p->order); free(p->pslot); free(p->poff);
  free(p->slots.block); free(p->slots.need); free(p->slots.chunk);
  free(p);
}

/* Sort idx[0..n) by key[idx] (LSD radix, 8 bits a pass, as many passes as `maxkey`
 * needs; stable).  tmp: n more entries. */
static void radix_sort(const uint64_t *key, int64_t *idx, int64_t *tmp, int64_t n,
                       uint64_t maxkey) {
  int64_t count[256];
  for (int shift = 0; shift < 64 && (maxkey >> shift) != 0; shift += 8) {
    memset(count, 0, sizeof count);
    for (int64_t i = 0; i < n; i++) count[(key[idx[i]] >> shift) & 255]++;
    int64_t sum = 0;
    for (int b = 0; b < 256; b++) {
      int64_t c = count[b];
      count[b] = sum;
      sum += c;
    }
    for (int64_t i = 0; i < n; i++) tmp[count[(key[idx[i]] >> shift) & 255]++] = idx[i];
    memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
  }
}

int ndp_points_plan(int ndim, const int64_t *chunks, const int64_t *blocks, const int64_t *grid,
                    int32_t itemsize, const int64_t *const *coords, int64_t npoints,
                    ndp_points **out, ndp_error *err) {
  *out = NULL;
  int64_t bgrid[NDP_MAXDIM], bitems, nblocks, nchunks;
  int rc = ndp_grid_check(ndim, chunks, blocks, grid, itemsize, bgrid, &bitems, &nblocks,
                          &nchunks, err);
  if (rc != NDP_OK) return rc;
  if (npoints < 1 || npoints > ((int64_t)1 << 40))
    return ndp_fail(err, NDP_ERR_PARAM, "%lld points", (long long)npoints);
  for (int d = 0; d < ndim; d++)
    if (coords[d] == NULL) return ndp_fail(err, NDP_ERR_PARAM, "no coordinates along %d", d);
  ndp_points *p = calloc(1, sizeof *p);
  uint64_t *key = malloc(sizeof(uint64_t) * (size_t)npoints);
  int64_t *tmp = malloc(sizeof(int64_t) * (size_t)npoints);
  if (p != NULL) {
    p->order = malloc(sizeof(int64_t) * (size_t)npoints);
    p->pslot = malloc(sizeof(int64_t) * (size_t)npoints);
    p->poff = malloc(sizeof(int64_t) * (size_t)npoints);
  }
  if (p == NULL || key == NULL || tmp == NULL || !p->order || !p->pslot || !p->poff) {
    ndp_points_free(p);
    free(key);
    free(tmp);
    return ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  }
  p->itemsize = itemsize;
  p->bitems = bitems;
  p->nblocks = nblocks;
  p->npoints = npoints;
  p->slots.blockbytes = bitems * itemsize;
  /* key = chunk * nblocks + block (< 2^48 * 2^31); the offsets wait in poff */
  uint64_t maxkey = 0;
  for (int64_t i = 0; i < npoints && rc == NDP_OK; i++) {
    int64_t cn = 0, bn = 0, off = 0;
    for (int d = 0; d < ndim; d++) {
      int64_t u = coords[d][i];
      if (u < 0 || u >= grid[d] * chunks[d]) {
        rc = ndp_fail(err, NDP_ERR_PARAM, "point %lld: coordinate %lld outside [0, %lld) "
                      "along dimension %d", (long long)i, (long long)u,
                      (long long)(grid[d] * chunks[d]), d);
        break;
      }
      int64_t c = u / chunks[d], w = u - c * chunks[d], b = w / blocks[d];
      cn = cn * grid[d] + c;
      bn = bn * bgrid[d] + b;
      off = off * blocks[d] + (w - b * blocks[d]);
    }
    key[i] = (uint64_t)cn * (uint64_t)nblocks + (uint64_t)bn;
    maxkey = key[i] > maxkey ? key[i] : maxkey;
    p->poff[i] = off;
    p->order[i] = i;
  }
  if (rc == NDP_OK) {
    radix_sort(key, p->order, tmp, npoints, maxkey);
    /* slots and touched chunks (counted first, then filled) */
    int64_t ns = 0, nc = 0;
    for (int64_t k = 0; k < npoints; k++) {
      uint64_t kk = key[p->order[k]];
      if (k == 0 || kk != key[p->order[k - 1]]) {
        ns++;
        if (k == 0 || kk / (uint64_t)nblocks != key[p->order[k - 1]] / (uint64_t)nblocks) nc++;
      }
    }
    p->slots.n = ns;
    p->nchunks = (int32_t)nc;
    p->slots.block = malloc(sizeof(int32_t) * (size_t)ns);
    p->slots.need = malloc(sizeof(int32_t) * (size_t)ns);
    p->slots.chunk = malloc(sizeof(int32_t) * (size_t)ns);
    p->chunk_number = malloc(sizeof(int64_t) * (size_t)nc);
    p->chunk_slot = malloc(sizeof(int64_t) * (size_t)(nc + 1));
    p->chunk_point = malloc(sizeof(int64_t) * (size_t)(nc + 1));
    if (nc > INT32_MAX || !p->slots.block || !p->slots.need || !p->slots.chunk ||
        !p->chunk_number || !p->chunk_slot || !p->chunk_point)
      rc = ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  }
  if (rc == NDP_OK) {
    int64_t s = -1, c = -1;
    for (int64_t k = 0; k < npoints; k++) {
      int64_t i = p->order[k];
      uint64_t kk = key[i];
      if (k == 0 || kk != key[p->order[k - 1]]) {
        if (k == 0 || kk / (uint64_t)nblocks != key[p->order[k - 1]] / (uint64_t)nblocks) {
          c++;
          p->chunk_number[c] = (int64_t)(kk / (uint64_t)nblocks);
          p->chunk_slot[c] = s + 1;
          p->chunk_point[c] = k;
        }
        s++;
        p->slots.block[s] = (int32_t)(kk % (uint64_t)nblocks);
        p->slots.chunk[s] = (int32_t)c;
        p->slots.need[s] = 0;
      }
      int64_t need = (p->poff[i] + 1) * itemsize;
      if (need > p->slots.need[s]) p->slots.need[s] = (int32_t)need;
      tmp[k] = p->poff[i];
      p->pslot[k] = s;
    }
    p->chunk_slot[p->nchunks] = p->slots.n;
    p->chunk_point[p->nchunks] = npoints;
    memcpy(p->poff, tmp, sizeof(int64_t) * (size_t)npoints);   /* in sorted order */
  }
  free(key);
  free(tmp);
  if (rc != NDP_OK) {
    ndp_points_free(p);
    return rc;
  }
  *out = p;
  return NDP_OK;
}

int64_t ndp_points_nslots(const ndp_points *p) { return p->slots.n; }
int32_t ndp_points_nchunks(const ndp_points *p) { return p->nchunks; }

int64_t ndp_points_chunk(const ndp_points *p, int32_t k, const int32_t **blocks,
                         int32_t *nblocks) {
  if (k < 0 || k >= p->nchunks) return -1;
  *blocks = p->slots.block + p->chunk_slot[k];
  *nblocks = (int32_t)(p->chunk_slot[k + 1] - p->chunk_slot[k]);
  return p->chunk_number[k];
}

typedef struct {
  const ndp_points *p;
  uint8_t *out;
} emit_job;

/* Copy the points of sorted positions [k0, k1) from slots decoded at src (slot s0
 * first). */
static void copy_points(const ndp_points *p, int64_t k0, int64_t k1, const uint8_t *src,
                        int64_t s0, uint8_t *dst) {
  size_t is = (size_t)p->itemsize;
  for (int64_t k = k0; k < k1; k++)
    memcpy(dst + (size_t)p->order[k] * is,
           src + (size_t)((p->pslot[k] - s0) * p->bitems + p->poff[k]) * is, is);
}

static void points_emit(void *ctx, int32_t c, const uint8_t *buf, int64_t s0) {
  emit_job *e = (emit_job *)ctx;
  copy_points(e->p, e->p->chunk_point[c], e->p->chunk_point[c + 1], buf, s0, e->out);
}

int ndp_points_read(const ndp_points *p, const void *const *chunks, const int32_t *sizes,
                    void *scratch, int64_t scratch_len, void *out, int64_t out_len, int nthreads,
                    ndp_error *err) {
  int64_t bb = p->slots.blockbytes, cap = scratch_len / bb;
  if (cap < 1 || out_len < p->npoints * p->itemsize)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "buffers of %lld and %lld bytes: at least %lld "
                    "and %lld needed", (long long)scratch_len, (long long)out_len,
                    (long long)bb, (long long)(p->npoints * p->itemsize));
  ndp_djob *jobs = calloc((size_t)p->nchunks, sizeof(ndp_djob));
  if (jobs == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  int rc;
  int32_t nopen = ndp_open_chunks(jobs, chunks, sizes, p->nchunks, p->chunk_number,
                                  p->nblocks * bb, &rc, err);
  if (rc == NDP_OK && p->nchunks >= 2 * nthreads) {
    /* many chunks: each thread decodes a chunk's blocks and copies its points */
    emit_job e = {p, (uint8_t *)out};
    rc = ndp_decode_chunks(&p->slots, jobs, p->chunk_slot, p->nchunks, nthreads, points_emit,
                           &e, err);
  } else {
    /* a few chunks: batches of blocks decoded in parallel, then their points */
    int64_t k = 0;
    for (int64_t s0 = 0; rc == NDP_OK && s0 < p->slots.n; s0 += cap) {
      int64_t s1 = s0 + cap < p->slots.n ? s0 + cap : p->slots.n, k1 = k;
      rc = ndp_decode_slots(&p->slots, jobs, s0, s1, (uint8_t *)scratch, nthreads, err);
      while (k1 < p->npoints && p->pslot[k1] < s1) k1++;
      if (rc == NDP_OK) copy_points(p, k, k1, (const uint8_t *)scratch, s0, (uint8_t *)out);
      k = k1;
    }
  }
  for (int32_t j = 0; j < nopen; j++) ndp_djob_close(&jobs[j]);
  free(jobs);
  return rc;
}

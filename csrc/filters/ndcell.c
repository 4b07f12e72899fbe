/* C-Blosc2's n-d filters NDCELL (32) and NDMEAN (33), scalar reference (facts of its
 * plugins/filters/ndcell and ndmean; our own code).
 *
 * Both see a block (the layout's block shape, C order, items of typesize bytes) as a
 * grid of cells: cell shape c[d] along dimension d, the last cell along d cut to
 * blockshape[d] % c[d] when that is not 0.  Cells are visited in C order of their
 * grid, the items of a cell in C order; cell (i_0, ..., i_n-1) starts at item
 * sum_d i_d * o_d * stride_d, where o_d = c[d] for NDCELL and o_d = c[0] for NDMEAN
 * (C-Blosc2's formula, kept: it differs only when a block dimension is smaller than
 * filters_meta).
 *
 * NDCELL (meta: the cell side, 1..127, c[d] = meta): forward writes the items cell
 * after cell (a permutation), backward puts them back.  The block must hold at least
 * meta ** ndim items.
 * NDMEAN (meta: the cell side, c[d] = min(meta, blockshape[d])): forward writes, for
 * each cell in that order, its mean repeated over the cell (float32 or float64 items,
 * summed in the cell's order in the item type, then divided by the cell's item
 * count): lossy; backward is NDCELL's backward with those cells.
 *
 * Every item index is checked against the block before it is read or written. */
#include <string.h>

#include "filters.h"
#include "../common/internal.h"

enum { GATHER, SCATTER, MEAN };

static int walk(int mode, const ndp_nd *nd, const int64_t *cs, int64_t ostep, int32_t ts,
                const uint8_t *in, uint8_t *out, int64_t nitems, const char *name,
                ndp_error *err) {
  int ndim = nd->ndim;
  const int64_t *bs = nd->blockshape;
  int64_t grid[NDP_MAXDIM], stride[NDP_MAXDIM], ii[NDP_MAXDIM], pad[NDP_MAXDIM], kk[NDP_MAXDIM];
  int64_t ncells = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    stride[d] = d == ndim - 1 ? 1 : stride[d + 1] * bs[d + 1];
    grid[d] = (bs[d] + cs[d] - 1) / cs[d];
    ncells *= grid[d];
    ii[d] = 0;
  }
  int64_t p = 0;                                    /* items in cell order so far */
  for (int64_t c = 0; c < ncells; c++) {
    int64_t origin = 0, rows = 1;
    for (int d = 0; d < ndim; d++) {
      origin += ii[d] * ostep * stride[d];
      pad[d] = (bs[d] % cs[d] != 0 && ii[d] == grid[d] - 1) ? bs[d] % cs[d] : cs[d];
      if (d < ndim - 1) rows *= pad[d];
      kk[d] = 0;
    }
    int64_t run = pad[ndim - 1], cell_items = rows * run;
    if (p + cell_items > nitems) goto outside;
    double sum_d = 0;
    float sum_f = 0;
    int64_t q = p;
    for (int64_t r = 0; r < rows; r++) {
      int64_t at = origin;
      for (int d = 0; d < ndim - 1; d++) at += kk[d] * stride[d];
      if (at < 0 || at + run > nitems) goto outside;
      if (mode == GATHER) {
        memcpy(out + q * ts, in + at * ts, (size_t)(run * ts));
      } else if (mode == SCATTER) {
        memcpy(out + at * ts, in + q * ts, (size_t)(run * ts));
      } else if (ts == 4) {
        for (int64_t i = 0; i < run; i++) {
          float v;
          memcpy(&v, in + (at + i) * 4, 4);
          sum_f += v;
        }
      } else {
        for (int64_t i = 0; i < run; i++) {
          double v;
          memcpy(&v, in + (at + i) * 8, 8);
          sum_d += v;
        }
      }
      q += run;
      for (int d = ndim - 2; d >= 0; d--) {       /* next row of the cell */
        if (++kk[d] < pad[d]) break;
        kk[d] = 0;
      }
    }
    if (mode == MEAN) {
      if (ts == 4) {
        float m = sum_f / (float)cell_items;
        for (int64_t i = 0; i < cell_items; i++) memcpy(out + (p + i) * 4, &m, 4);
      } else {
        double m = sum_d / (double)cell_items;
        for (int64_t i = 0; i < cell_items; i++) memcpy(out + (p + i) * 8, &m, 8);
      }
    }
    p += cell_items;
    for (int d = ndim - 1; d >= 0; d--) {           /* next cell */
      if (++ii[d] < grid[d]) break;
      ii[d] = 0;
    }
  }
  if (p != nitems) goto outside;
  return NDP_OK;
outside:
  return ndp_fail(err, NDP_ERR_FILTER, "%s: its cells do not tile the block of %lld items",
                  name, (long long)nitems);
}

/* The cell shape of filter `id` with `meta` over the layout's block (n bytes of
 * ts-byte items), checked as C-Blosc2 checks it; *ostep the cell origin's step. */
static int cells(int id, uint8_t meta, const ndp_nd *nd, int32_t ts, int32_t n, int64_t *cs,
                 int64_t *ostep, int64_t *nitems, int forward, ndp_error *err) {
  const char *name = id == NDP_NDCELL ? "NDCELL" : "NDMEAN";
  if (nd == NULL || nd->ndim == 0)
    return ndp_fail(err, NDP_ERR_FILTER, "%s needs the block's n-d shape (the array's \"b2nd\" "
                    "metalayer): use it through an n-d array", name);
  int64_t items = 1;
  for (int d = 0; d < nd->ndim; d++) items *= nd->blockshape[d];
  if (ts < 1 || items * ts != (int64_t)n)
    return ndp_fail(err, NDP_ERR_FILTER, "%s: a block of %d bytes does not hold the %lld items "
                    "of %d bytes of the block shape in the metalayer", name, (int)n,
                    (long long)items, (int)ts);
  int side = (int8_t)meta;
  if (side < 1)
    return ndp_fail(err, NDP_ERR_FILTER, "%s: the cell side (filters_meta) must be 1..127, "
                    "not %d", name, (int)meta);
  if (id == NDP_NDMEAN && forward && ts != 4 && ts != 8)
    return ndp_fail(err, NDP_ERR_FILTER, "NDMEAN takes float32 or float64 items, not %d-byte "
                    "items", (int)ts);
  int64_t cell_items = 1;
  for (int d = 0; d < nd->ndim; d++) {
    cs[d] = id == NDP_NDMEAN && nd->blockshape[d] < side ? nd->blockshape[d] : side;
    cell_items *= cs[d];
    if (cell_items > items) break;
  }
  if (cell_items > items)
    return ndp_fail(err, NDP_ERR_FILTER, "%s: a block of %lld items is smaller than a cell of "
                    "side %d", name, (long long)items, side);
  *ostep = id == NDP_NDCELL ? side : cs[0];
  *nitems = items;
  return NDP_OK;
}

int ndp_ndcell_check(int id, uint8_t meta, const ndp_nd *nd, int32_t ts, ndp_error *err) {
  if (nd == NULL || nd->ndim == 0)
    return ndp_fail(err, NDP_ERR_FILTER, "%s needs the blocks' n-d shape: write through an "
                    "n-d array", id == NDP_NDCELL ? "NDCELL" : "NDMEAN");
  int64_t cs[NDP_MAXDIM], ostep = 1, nitems = 0, items = 1;
  for (int d = 0; d < nd->ndim; d++) items *= nd->blockshape[d];
  if (items * ts > INT32_MAX) return NDP_OK;        /* (the chunk checks report it) */
  return cells(id, meta, nd, ts, (int32_t)(items * ts), cs, &ostep, &nitems, 1, err);
}

int ndp_ndcell_forward(int id, uint8_t meta, const ndp_nd *nd, int32_t ts, const uint8_t *in,
                       uint8_t *out, int32_t n, ndp_error *err) {
  int64_t cs[NDP_MAXDIM], ostep = 1, nitems = 0;
  int rc = cells(id, meta, nd, ts, n, cs, &ostep, &nitems, 1, err);
  if (rc != NDP_OK) return rc;
  return walk(id == NDP_NDCELL ? GATHER : MEAN, nd, cs, ostep, ts, in, out, nitems,
              id == NDP_NDCELL ? "NDCELL" : "NDMEAN", err);
}

int ndp_ndcell_backward(int id, uint8_t meta, const ndp_nd *nd, int32_t ts, const uint8_t *in,
                        uint8_t *out, int32_t n, ndp_error *err) {
  int64_t cs[NDP_MAXDIM], ostep = 1, nitems = 0;
  int rc = cells(id, meta, nd, ts, n, cs, &ostep, &nitems, 0, err);
  if (rc != NDP_OK) return rc;
  return walk(SCATTER, nd, cs, ostep, ts, in, out, nitems,
              id == NDP_NDCELL ? "NDCELL" : "NDMEAN", err);
}

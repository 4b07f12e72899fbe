/* NDLZ, C-Blosc2's codec 32: a 2-d LZ over cells of 4x4 or 8x8 one-byte items
 * (compcode_meta is the cell side: 4 or 8).  The stream format, from C-Blosc2's
 * plugins/codecs/ndlz (facts only; this is our own code):
 *
 *   u8 ndim (2), i32 blockshape[0], i32 blockshape[1] (little-endian), then one
 *   token per cell in C order of the cell grid.  A cell cut by the block's edge
 *   holds rows x cols = padding[0] x padding[1] items; full cells side x side.
 *     0x00          literal: the cell's items follow, row after row
 *     0x40          every item of the cell is the next byte
 *     0xC0, u16 off the cell equals the `rows x cols` bytes at (token position - off)
 *   4x4 cells only (rows of 4 bytes; `ref` = token position - off):
 *     0x80..0xBF, u16 off     rows i, j (0x80: 2, 3; else i = (t-128)>>5,
 *                             j = ((t-128)>>3) - 4i) are the 8 bytes at ref, the other
 *                             two rows follow
 *     0xE0..0xFF, u16 off     rows (t>>3 == 28: 1,2,3; 29: 0,1,2; 30: 0,1,3; 31: 0,2,3)
 *                             are the 12 bytes at ref, the last row follows
 *     0x28..0x3F, u16 o1, o2  rows 0 and j = (t-32)>>3 are the 8 bytes at token - o1,
 *                             the other two rows the 8 bytes at token - o2
 *   8x8 cells only (rows of 8 bytes):
 *     t>>3 == 21, u16 off     rows r..r+2 (r = t & 7) are the 24 bytes at ref, the
 *                             other five rows follow
 *     t>>3 == 17, u16 off     rows r, r+1 are the 16 bytes at ref, the others follow
 *
 * Only 2-d blocks of 1-byte items.  Our encoder writes literals, uniform cells and
 * whole-cell matches (a valid NDLZ stream C-Blosc2 decodes; its row matches are not
 * searched, so the bytes differ from C-Blosc2's).  The decoder checks every offset
 * and length against the stream and the block. */
#include <stdlib.h>
#include <string.h>

#include "ndcodecs.h"
#include "../common/internal.h"

#define NDLZ_HEADER 9
#define NDLZ_HASH_LOG 12

static int32_t rd_i32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24);
}

static void wr_i32(uint8_t *p, int32_t v) {
  uint32_t u = (uint32_t)v;
  p[0] = (uint8_t)u; p[1] = (uint8_t)(u >> 8); p[2] = (uint8_t)(u >> 16); p[3] = (uint8_t)(u >> 24);
}

static int check_layout(int32_t typesize, const ndp_nd *nd, int32_t n, ndp_error *err) {
  int rc = ndp_nd_block_check(nd, typesize, n, "NDLZ", err);
  if (rc != NDP_OK) return rc;
  if (nd->ndim != 2 || typesize != 1)
    return ndp_fail(err, NDP_ERR_CODEC, "NDLZ takes 2-d blocks of 1-byte items, not %d-d "
                    "blocks of %d-byte items", nd->ndim, (int)typesize);
  return NDP_OK;
}

static uint32_t cell_hash(const uint8_t *p, int n) {
  uint32_t h = 2166136261u;                    /* FNV-1a */
  for (int i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
  return h >> (32 - NDLZ_HASH_LOG);
}

int32_t ndp_ndlz_encode(int meta, int32_t typesize, const ndp_nd *nd, const uint8_t *src,
                        int32_t n, uint8_t *dst, int32_t maxout, ndp_error *err) {
  int rc = check_layout(typesize, nd, n, err);
  if (rc != NDP_OK) return rc;
  if (meta != 4 && meta != 8)
    return ndp_fail(err, NDP_ERR_CODEC, "NDLZ cells are 4 or 8 items wide (codec_meta), not %d",
                    meta);
  const int side = meta, csize = side * side;
  const int32_t b0 = (int32_t)nd->blockshape[0], b1 = (int32_t)nd->blockshape[1];
  int32_t limit = maxout < n ? maxout : n - 1;     /* not smaller than the block: raw */
  if (limit < NDLZ_HEADER + 1 + csize) return 0;
  uint32_t *tab = (uint32_t *)calloc((size_t)1 << NDLZ_HASH_LOG, sizeof(uint32_t));
  if (tab == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "NDLZ: out of memory");
  uint8_t cell[64];
  int32_t op = 0;
  dst[op++] = 2;
  wr_i32(dst + op, b0);
  wr_i32(dst + op + 4, b1);
  op += 8;
  int32_t g0 = (b0 + side - 1) / side, g1 = (b1 + side - 1) / side;
  for (int32_t c0 = 0; c0 < g0; c0++) {
    for (int32_t c1 = 0; c1 < g1; c1++) {
      int rows = c0 == g0 - 1 && b0 % side ? b0 % side : side;
      int cols = c1 == g1 - 1 && b1 % side ? b1 % side : side;
      const uint8_t *at = src + (size_t)c0 * side * b1 + (size_t)c1 * side;
      for (int r = 0; r < rows; r++) memcpy(cell + r * cols, at + (size_t)r * b1, (size_t)cols);
      int items = rows * cols;
      if (op + 1 + items > limit) {             /* the largest token may not fit */
        free(tab);
        return 0;
      }
      int32_t tok = op;
      if (rows < side || cols < side) {         /* edge cells: literals (as C-Blosc2) */
        dst[op++] = 0x00;
        memcpy(dst + op, cell, (size_t)items);
        op += items;
        continue;
      }
      int same = 1;
      for (int i = 1; i < csize && same; i++) same = cell[i] == cell[0];
      if (same) {
        dst[op++] = 0x40;
        dst[op++] = cell[0];
        continue;
      }
      uint32_t h = cell_hash(cell, csize);
      uint32_t ref = tab[h];                    /* 1 + the position of a literal cell */
      if (ref != 0 && (int64_t)tok - (ref - 1) < 65535 &&
          memcmp(dst + ref - 1, cell, (size_t)csize) == 0) {
        uint32_t off = (uint32_t)tok - (ref - 1);
        dst[op++] = 0xC0;
        dst[op++] = (uint8_t)off;
        dst[op++] = (uint8_t)(off >> 8);
        continue;
      }
      dst[op++] = 0x00;
      tab[h] = (uint32_t)op + 1;
      memcpy(dst + op, cell, (size_t)csize);
      op += csize;
    }
  }
  free(tab);
  return op;
}

/* Rows of a 4x4 row-pair token (0x80..0xBF): 1 and *i < *j < 4, or 0. */
static int pair_rows4(uint8_t t, int *i, int *j) {
  if (t == 0x80) { *i = 2; *j = 3; return 1; }
  *i = (t - 128) >> 5;
  *j = ((t - 128) >> 3) - (*i << 2);
  return *i < *j && *j < 4;
}

int32_t ndp_ndlz_decode(int meta, int32_t typesize, const ndp_nd *nd, const uint8_t *src,
                        int32_t n, uint8_t *dst, int32_t dstlen, ndp_error *err) {
  if (nd != NULL && nd->ndim != 0) {
    int rc = check_layout(typesize, nd, dstlen, err);
    if (rc != NDP_OK) return rc;
  }
  if (meta != 4 && meta != 8)
    return ndp_fail(err, NDP_ERR_CODEC, "NDLZ cells are 4 or 8 items wide (codec_meta), not %d",
                    meta);
  if (n < NDLZ_HEADER || src[0] != 2)
    return ndp_fail(err, NDP_ERR_FORMAT, "NDLZ: not a 2-d stream (%d bytes)", (int)n);
  int32_t b0 = rd_i32(src + 1), b1 = rd_i32(src + 5);
  if (b0 < 0 || b1 < 0 || (int64_t)b0 * b1 != dstlen ||
      (nd != NULL && nd->ndim == 2 && (b0 != nd->blockshape[0] || b1 != nd->blockshape[1])))
    return ndp_fail(err, NDP_ERR_FORMAT, "NDLZ: the stream's block (%d, %d) is not the "
                    "metalayer's block of %d items", (int)b0, (int)b1, (int)dstlen);
  const int side = meta, csize = side * side;
  int32_t g0 = (b0 + side - 1) / side, g1 = (b1 + side - 1) / side;
  int64_t ip = NDLZ_HEADER;
  uint8_t cell[64];
#define NEED(pos, len) \
  do { if ((pos) < 0 || (len) < 0 || (int64_t)(pos) > (int64_t)n - (len)) goto corrupt; } while (0)
  for (int32_t c0 = 0; c0 < g0; c0++) {
    for (int32_t c1 = 0; c1 < g1; c1++) {
      int rows = c0 == g0 - 1 && b0 % side ? b0 % side : side;
      int cols = c1 == g1 - 1 && b1 % side ? b1 % side : side;
      int items = rows * cols;
      int64_t tok = ip;
      NEED(ip, 1);
      uint8_t t = src[ip++];
      const uint8_t *from;                     /* the cell's rows, `cols` bytes apart */
      if (t == 0x00) {
        NEED(ip, items);
        from = src + ip;
        ip += items;
      } else if (t == 0xC0) {
        NEED(ip, 2);
        int64_t r = tok - (int64_t)(src[ip] | src[ip + 1] << 8);
        NEED(r, items);
        from = src + r;
        ip += 2;
      } else if (t == 0x40) {
        NEED(ip, 1);
        memset(cell, src[ip++], (size_t)csize);
        from = cell;
      } else {
        /* row matches: rows of the full cell (stride `side`), some from a reference */
        int from_ref[8] = {0}, nref = 0, rows_a[8], nrows_a = 0, rows_b[8], nrows_b = 0;
        int two = 0;
        if (side == 4 && t >= 0xE0) {
          static const int tri[4][3] = {{1, 2, 3}, {0, 1, 2}, {0, 1, 3}, {0, 2, 3}};
          for (int k = 0; k < 3; k++) rows_a[nrows_a++] = tri[(t >> 3) - 28][k];
        } else if (side == 4 && t >= 0x80 && t <= 0xBF) {
          int i, j;
          if (!pair_rows4(t, &i, &j)) goto corrupt;
          rows_a[nrows_a++] = i;
          rows_a[nrows_a++] = j;
        } else if (side == 4 && t >= 0x28 && t <= 0x3F) {
          int j = (t - 32) >> 3;
          rows_a[nrows_a++] = 0;
          rows_a[nrows_a++] = j;
          for (int k = 1; k < 4; k++)
            if (k != j) rows_b[nrows_b++] = k;
          two = 1;
        } else if (side == 8 && ((t >> 3) == 21 || (t >> 3) == 17)) {
          int r = t & 7, len = (t >> 3) == 21 ? 3 : 2;
          if (r + len > 8) goto corrupt;
          for (int k = 0; k < len; k++) rows_a[nrows_a++] = r + k;
        } else {
          goto corrupt;
        }
        NEED(ip, two ? 4 : 2);
        int64_t ra = tok - (int64_t)(src[ip] | src[ip + 1] << 8);
        ip += 2;
        NEED(ra, nrows_a * side);
        for (int k = 0; k < nrows_a; k++) {
          memcpy(cell + rows_a[k] * side, src + ra + k * side, (size_t)side);
          from_ref[rows_a[k]] = 1;
        }
        nref = nrows_a;
        if (two) {
          int64_t rb = tok - (int64_t)(src[ip] | src[ip + 1] << 8);
          ip += 2;
          NEED(rb, nrows_b * side);
          for (int k = 0; k < nrows_b; k++) {
            memcpy(cell + rows_b[k] * side, src + rb + k * side, (size_t)side);
            from_ref[rows_b[k]] = 1;
          }
          nref += nrows_b;
        }
        for (int r = 0; r < side && nref < side; r++) {
          if (from_ref[r]) continue;
          NEED(ip, side);
          memcpy(cell + r * side, src + ip, (size_t)side);
          ip += side;
        }
        from = cell;     /* (laid out full; an edge cell is read with its own stride,
                            as C-Blosc2's decoder does) */
      }
      uint8_t *at = dst + (size_t)c0 * side * b1 + (size_t)c1 * side;
      for (int r = 0; r < rows; r++) memcpy(at + (size_t)r * b1, from + r * cols, (size_t)cols);
    }
  }
#undef NEED
  return dstlen;
corrupt:
  return ndp_fail(err, NDP_ERR_FORMAT, "NDLZ: corrupt stream (%d bytes)", (int)n);
}

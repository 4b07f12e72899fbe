/* Fused decode + sum of b2nd chunks: each block is decoded into a per-thread buffer
 * (it stays in cache) and its valid elements are added into the caller's output at
 * once, so a reduction touches every decoded byte once, without a chunk-sized
 * buffer or a trip through Python per block.
 *
 * Rows (runs along the last dimension) are the unit: summed with eight independent
 * lanes (long rows in pairwise halves of at most 256 elements) when the last
 * dimension is reduced (consecutive rows that land on the same
 * output element are added together first, so the output sees one addition per
 * block and element), or added elementwise into an output row when it is kept. */
#include <stdlib.h>

#include "chunk.h"

typedef struct rctx rctx;
typedef void (*block_fn)(rctx *r, const int64_t *lo, const int64_t *n, const void *data);

struct rctx {
  const ndp_reduce_spec *s;
  int nd;
  int64_t grid[NDP_MAXDIM];      /* blocks per dimension in a chunk */
  int64_t bstride[NDP_MAXDIM];   /* element strides inside a block (C order) */
  void *out;
  block_fn fn;
  /* every dimension summed into doubles: the row sums of the whole chunk are added
   * pairwise (a binary counter: level k holds the sum of 2^k rows), so the error
   * grows like the logarithm of the number of rows */
  int pairwise;
  int depth;
  double stack[64];
  int level[64];
};

static void push_pairwise(rctx *r, double v) {
  int lv = 0;
  while (r->depth > 0 && r->level[r->depth - 1] == lv) {
    v = r->stack[--r->depth] + v;
    lv++;
  }
  r->stack[r->depth] = v;
  r->level[r->depth++] = lv;
}

static double fold_pairwise(const rctx *r) {
  double t = 0;
  for (int k = r->depth - 1; k >= 0; k--) t = r->stack[k] + t;
  return t;
}

/* Unravel stored block number j into the chunk index of its first element. */
static void block_origin(const rctx *r, int32_t j, int64_t *lo) {
  int64_t k = j;
  for (int d = r->nd - 1; d >= 0; d--) {
    lo[d] = (k % r->grid[d]) * r->s->blockshape[d];
    k /= r->grid[d];
  }
}

static int want_block(void *ctx, int32_t j) {
  const rctx *r = (const rctx *)ctx;
  int64_t lo[NDP_MAXDIM];
  block_origin(r, j, lo);
  for (int d = 0; d < r->nd; d++)
    if (lo[d] >= r->s->valid[d]) return 0;      /* padding only */
  return 1;
}

static int visit_block(void *ctx, int32_t j, const uint8_t *data, ndp_error *err) {
  (void)err;
  rctx *r = (rctx *)ctx;
  int64_t lo[NDP_MAXDIM], n[NDP_MAXDIM];
  block_origin(r, j, lo);
  for (int d = 0; d < r->nd; d++) {
    int64_t left = r->s->valid[d] - lo[d];
    n[d] = left < r->s->blockshape[d] ? left : r->s->blockshape[d];
  }
  r->fn(r, lo, n, data);
  return NDP_OK;
}

/* One block: IN elements added into ACC output elements.  CONV converts one
 * element (integer accumulators are unsigned: wrapping is defined). */
#define DEFINE_SUM(NAME, IN, ACC, CONV)                                                   \
  static ACC NAME##_row(const IN *x, int64_t n) {                                         \
    if (n > 256) {                 /* pairwise halves (NumPy's scheme for long rows) */  \
      int64_t h = (n / 2) & ~(int64_t)7;                                                  \
      return NAME##_row(x, h) + NAME##_row(x + h, n - h);                                 \
    }                                                                                     \
    ACC s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t = 0;                                          \
    int64_t k = 0;                                                                        \
    for (; k + 8 <= n; k += 8)                                                            \
      for (int u = 0; u < 8; u++) s[u] += CONV(x[k + u]);                                 \
    for (; k < n; k++) t += CONV(x[k]);                                                   \
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + t;         \
  }                                                                                       \
  static void NAME(rctx *r, const int64_t *lo, const int64_t *n, const void *d_) {        \
    const IN *data = (const IN *)d_;                                                      \
    ACC *out = (ACC *)r->out;                                                             \
    const ndp_reduce_spec *s = r->s;                                                      \
    int last = r->nd - 1;                                                                 \
    int red_last = (s->reduced >> last) & 1;                                              \
    int64_t len = n[last], os = s->ostride[last];                                         \
    int64_t i[NDP_MAXDIM] = {0};                                                          \
    ACC pend = 0;                                                                         \
    int64_t pend_o = -1;                                                                  \
    for (;;) {                                                                            \
      int64_t off = 0, o = s->out_offset;                                                 \
      for (int d = 0; d < last; d++) {                                                    \
        off += i[d] * r->bstride[d];                                                      \
        if (!((s->reduced >> d) & 1)) o += (lo[d] + i[d]) * s->ostride[d];               \
      }                                                                                   \
      const IN *x = data + off;                                                           \
      if (red_last) {                                                                     \
        ACC v = NAME##_row(x, len);                                                       \
        if (r->pairwise) {                                                                \
          push_pairwise(r, (double)v);                                                    \
        } else if (o == pend_o) {                                                         \
          pend += v;                                                                      \
        } else {                                                                          \
          if (pend_o >= 0) out[pend_o] += pend;                                           \
          pend_o = o;                                                                     \
          pend = v;                                                                       \
        }                                                                                 \
      } else {                                                                            \
        ACC *y = out + o + lo[last] * os;                                                 \
        if (os == 1)                                                                      \
          for (int64_t k = 0; k < len; k++) y[k] += CONV(x[k]);                           \
        else                                                                              \
          for (int64_t k = 0; k < len; k++) y[k * os] += CONV(x[k]);                      \
      }                                                                                   \
      int d = last - 1;                                                                   \
      while (d >= 0 && ++i[d] == n[d]) i[d--] = 0;                                        \
      if (d < 0) break;                                                                   \
    }                                                                                     \
    if (pend_o >= 0) out[pend_o] += pend;                                                 \
  }

#define AS_F(x) ((double)(x))
#define AS_U(x) ((uint64_t)(x))
#define AS_S(x) ((uint64_t)(int64_t)(x))

DEFINE_SUM(sum_f64_f, double, double, AS_F)
DEFINE_SUM(sum_f32_f, float, double, AS_F)
DEFINE_SUM(sum_i8_f, int8_t, double, AS_F)
DEFINE_SUM(sum_i16_f, int16_t, double, AS_F)
DEFINE_SUM(sum_i32_f, int32_t, double, AS_F)
DEFINE_SUM(sum_i64_f, int64_t, double, AS_F)
DEFINE_SUM(sum_u8_f, uint8_t, double, AS_F)
DEFINE_SUM(sum_u16_f, uint16_t, double, AS_F)
DEFINE_SUM(sum_u32_f, uint32_t, double, AS_F)
DEFINE_SUM(sum_u64_f, uint64_t, double, AS_F)
DEFINE_SUM(sum_i8_i, int8_t, uint64_t, AS_S)
DEFINE_SUM(sum_i16_i, int16_t, uint64_t, AS_S)
DEFINE_SUM(sum_i32_i, int32_t, uint64_t, AS_S)
DEFINE_SUM(sum_i64_i, int64_t, uint64_t, AS_S)
DEFINE_SUM(sum_u8_i, uint8_t, uint64_t, AS_U)
DEFINE_SUM(sum_u16_i, uint16_t, uint64_t, AS_U)
DEFINE_SUM(sum_u32_i, uint32_t, uint64_t, AS_U)
DEFINE_SUM(sum_u64_i, uint64_t, uint64_t, AS_U)

static const struct {
  int size;
  block_fn f, i;      /* double / integer accumulator (NULL: not supported) */
} KINDS[] = {
  [NDP_T_F64] = {8, sum_f64_f, NULL},     [NDP_T_F32] = {4, sum_f32_f, NULL},
  [NDP_T_I8] = {1, sum_i8_f, sum_i8_i},   [NDP_T_I16] = {2, sum_i16_f, sum_i16_i},
  [NDP_T_I32] = {4, sum_i32_f, sum_i32_i}, [NDP_T_I64] = {8, sum_i64_f, sum_i64_i},
  [NDP_T_U8] = {1, sum_u8_f, sum_u8_i},   [NDP_T_U16] = {2, sum_u16_f, sum_u16_i},
  [NDP_T_U32] = {4, sum_u32_f, sum_u32_i}, [NDP_T_U64] = {8, sum_u64_f, sum_u64_i},
  [NDP_T_BOOL] = {1, sum_u8_f, sum_u8_i},
};

int ndp_sum_chunk(const void *src, int32_t srcsize, const ndp_reduce_spec *s, void *out,
                  ndp_error *err) {
  if (s == NULL || out == NULL)
    return ndp_fail(err, NDP_ERR_PARAM, "spec and out are required");
  if (s->ndim < 1 || s->ndim > NDP_MAXDIM)
    return ndp_fail(err, NDP_ERR_PARAM, "ndim %d outside [1, %d]", s->ndim, NDP_MAXDIM);
  if (s->in_type < 0 || s->in_type > NDP_T_BOOL)
    return ndp_fail(err, NDP_ERR_PARAM, "unknown element type %d", s->in_type);
  rctx r;
  memset(&r, 0, sizeof r);
  r.s = s;
  r.nd = s->ndim;
  r.out = out;
  r.fn = s->acc_float ? KINDS[s->in_type].f : KINDS[s->in_type].i;
  if (r.fn == NULL)
    return ndp_fail(err, NDP_ERR_PARAM, "floating-point elements need a double accumulator");
  int64_t block_items = 1, chunk_items = 1, hi = s->out_offset;
  for (int d = r.nd - 1; d >= 0; d--) {
    int64_t c = s->chunkshape[d], b = s->blockshape[d];
    if (c < 1 || b < 1 || b > c || s->valid[d] < 1 || s->valid[d] > c)
      return ndp_fail(err, NDP_ERR_PARAM,
                      "dimension %d: chunk %lld, block %lld, valid %lld do not fit", d,
                      (long long)c, (long long)b, (long long)s->valid[d]);
    if (!((s->reduced >> d) & 1)) {
      if (s->ostride[d] < 0)
        return ndp_fail(err, NDP_ERR_PARAM, "negative output stride %lld",
                        (long long)s->ostride[d]);
      hi += (s->valid[d] - 1) * s->ostride[d];
    }
    r.grid[d] = (c + b - 1) / b;
    r.bstride[d] = block_items;
    block_items *= b;
    chunk_items *= r.grid[d] * b;
    if (chunk_items > INT32_MAX) return ndp_fail(err, NDP_ERR_PARAM, "chunk too large");
  }
  if (s->out_offset < 0 || hi >= s->out_len)
    return ndp_fail(err, NDP_ERR_PARAM, "output of %lld elements too small (needs %lld)",
                    (long long)s->out_len, (long long)hi + 1);
  int size = KINDS[s->in_type].size;
  ndp_chunk_info ci;
  int rc = ndp_chunk_parse(src, srcsize, &ci, err);
  if (rc != NDP_OK) return rc;
  if (ci.special == NDP_SPECIAL_ZERO || ci.special == NDP_SPECIAL_UNINIT)
    return NDP_OK;                                  /* adds nothing (decodes as zeros) */
  if ((int64_t)ci.nbytes != chunk_items * size)
    return ndp_fail(err, NDP_ERR_FORMAT, "chunk holds %d bytes; chunks of this array hold %lld",
                    (int)ci.nbytes, (long long)(chunk_items * size));
  r.pairwise = s->acc_float && s->reduced == (r.nd == 32 ? 0xFFFFFFFFu : (1u << r.nd) - 1u);
  rc = ndp_visit_blocks(src, srcsize, (int32_t)(block_items * size), size, want_block,
                        visit_block, &r, err);
  if (rc == NDP_OK && r.pairwise) ((double *)out)[s->out_offset] += fold_pairwise(&r);
  return rc;
}

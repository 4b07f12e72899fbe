/* Fused per-block evaluation: decode the operands' blocks, evaluate an arithmetic
 * program on them (float64 or float32) and encode the result block, one block at a
 * time, so that a block's values never leave the core's L2 cache and no interpreter
 * runs between the steps (the aligned compute path's groups paid ~12 GIL round trips).
 *
 * A program is postfix code over a stack: NDP_FOP_IN k pushes operand k, NDP_FOP_CONST
 * k pushes constant k, the binary ops pop two values and push the result, the unary
 * ones (negate, square, square root) pop one.  It runs on tiles of TILE_BYTES, so its
 * few registers stay in L1.  Every operation is the IEEE operation NumPy applies, in
 * the item type (a float32 program computes in float32, as NumPy does with float32
 * arrays and Python scalars); the file is compiled without floating-point
 * contraction (a * b + c is never fused into an FMA), so the values are NumPy's bit
 * for bit: square is x * x (NumPy's `x**2`), square root the correctly rounded one.
 */
#include <math.h>
#include <string.h>

#include "ndpack.h"
#include "../common/internal.h"
#include "../common/tls.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off", "no-math-errno")
#endif
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#define TILE_BYTES 4096
#define MAXSTACK 16

/* AVX2 where the CPU has it (4 doubles a step instead of SSE2's 2; same values) */
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(_M_X64))
#define NDP_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define NDP_CLONES
#endif

/* Check a program once: every operand and constant index in range, the stack never
 * under- or overflowing, one value left, at least one operand per result (constants
 * alone would make a scalar: the caller folds those). */
int ndp_fused_check(const int8_t *code, const int32_t *arg, int32_t ncode, int nin,
                    int nconst, ndp_error *err) {
  int depth = 0;
  int vec[MAXSTACK];
  if (ncode < 1 || ncode > 4096)
    return ndp_fail(err, NDP_ERR_PARAM, "a program of %d steps", (int)ncode);
  for (int32_t k = 0; k < ncode; k++) {
    int c = code[k];
    if (c == NDP_FOP_IN || c == NDP_FOP_CONST) {
      int lim = c == NDP_FOP_IN ? nin : nconst;
      if (arg[k] < 0 || arg[k] >= lim)
        return ndp_fail(err, NDP_ERR_PARAM, "step %d reads %d of %d", (int)k, (int)arg[k], lim);
      if (depth >= MAXSTACK)
        return ndp_fail(err, NDP_ERR_PARAM, "the program needs more than %d values at once",
                        MAXSTACK);
      vec[depth++] = c == NDP_FOP_IN;
    } else if (c == NDP_FOP_NEG || c == NDP_FOP_SQUARE || c == NDP_FOP_SQRT) {
      if (depth < 1)
        return ndp_fail(err, NDP_ERR_PARAM, "step %d has no value to take", (int)k);
      if (!vec[depth - 1])
        return ndp_fail(err, NDP_ERR_PARAM, "step %d takes a constant", (int)k);
    } else if (c >= NDP_FOP_ADD && c <= NDP_FOP_DIV) {
      if (depth < 2)
        return ndp_fail(err, NDP_ERR_PARAM, "step %d takes two values, %d are there", (int)k,
                        depth);
      if (!(vec[depth - 1] || vec[depth - 2]))
        return ndp_fail(err, NDP_ERR_PARAM, "step %d has no array operand", (int)k);
      depth--;
      vec[depth - 1] = 1;
    } else {
      return ndp_fail(err, NDP_ERR_PARAM, "unknown step code %d", c);
    }
  }
  if (depth != 1 || !vec[0])
    return ndp_fail(err, NDP_ERR_PARAM, "the program leaves %d values", depth);
  return NDP_OK;
}

/* The kernels of one item type T (suffix S, square root SQRT): the binary and unary
 * steps over n values (plain loops the compiler vectorizes; operands may be the
 * output itself), the program over one tile, and the block loop. */
#define FUSED_KERNELS(T, S, SQRT)                                                         \
  typedef struct {                                                                        \
    const T *p; /* the values (NULL: the scalar v) */                                    \
    T v;                                                                                  \
    int reg;    /* the register holding them, or -1 (an operand or a constant) */        \
  } slot_##S;                                                                             \
                                                                                          \
  NDP_CLONES                                                                              \
  static void binary_##S(int op, const slot_##S *a, const slot_##S *b, T *o, int32_t n) { \
    const T *x = a->p, *y = b->p;                                                         \
    T s = a->v, t = b->v;                                                                 \
    int32_t i;                                                                            \
    switch (op) {                                                                         \
      case NDP_FOP_ADD: LOOPS(x[i] + y[i], x[i] + t, s + y[i]) break;                     \
      case NDP_FOP_SUB: LOOPS(x[i] - y[i], x[i] - t, s - y[i]) break;                     \
      case NDP_FOP_MUL: LOOPS(x[i] * y[i], x[i] * t, s * y[i]) break;                     \
      default:          LOOPS(x[i] / y[i], x[i] / t, s / y[i]) break;                     \
    }                                                                                     \
  }                                                                                       \
                                                                                          \
  NDP_CLONES                                                                              \
  static void unary_##S(int op, const T *x, T *o, int32_t n) {                            \
    int32_t i;                                                                            \
    switch (op) {                                                                         \
      case NDP_FOP_NEG:    for (i = 0; i < n; i++) o[i] = -x[i]; break;                   \
      case NDP_FOP_SQUARE: for (i = 0; i < n; i++) o[i] = x[i] * x[i]; break;             \
      default:             for (i = 0; i < n; i++) o[i] = SQRT(x[i]); break;              \
    }                                                                                     \
  }                                                                                       \
                                                                                          \
  /* The program over n values of the operands at in[k] + off into out. */              \
  static void run_tile_##S(const int8_t *code, const int32_t *arg, int32_t ncode,         \
                           const T *const *in, const double *consts, int32_t off,         \
                           int32_t n, T *restrict out, T (*regs)[TILE_BYTES / sizeof(T)]) { \
    slot_##S st[MAXSTACK];                                                                \
    int depth = 0, used = 0; /* `used`: a bit per busy register */                       \
    for (int32_t k = 0; k < ncode; k++) {                                                 \
      int c = code[k];                                                                    \
      if (c == NDP_FOP_IN || c == NDP_FOP_CONST) {                                        \
        st[depth].p = c == NDP_FOP_IN ? in[arg[k]] + off : NULL;                          \
        st[depth].v = c == NDP_FOP_IN ? (T)0 : (T)consts[arg[k]];                         \
        st[depth++].reg = -1;                                                             \
        continue;                                                                         \
      }                                                                                   \
      int last = k == ncode - 1;                                                          \
      int unary = c == NDP_FOP_NEG || c == NDP_FOP_SQUARE || c == NDP_FOP_SQRT;           \
      slot_##S *a = &st[depth - (unary ? 1 : 2)], *b = unary ? NULL : &st[depth - 1];     \
      int r = a->reg >= 0 ? a->reg : (b != NULL ? b->reg : -1);                           \
      if (r < 0 && !last)                                                                 \
        for (r = 0; used >> r & 1; r++) {                                                 \
        }                                                                                 \
      T *o = last ? out : regs[r];                                                        \
      if (unary) {                                                                        \
        unary_##S(c, a->p, o, n);                                                         \
      } else {                                                                            \
        binary_##S(c, a, b, o, n);                                                        \
        if (a->reg >= 0 && a->reg != r) used &= ~(1 << a->reg);                           \
        if (b->reg >= 0 && b->reg != r) used &= ~(1 << b->reg);                           \
        depth--;                                                                          \
      }                                                                                   \
      if (!last) {                                                                        \
        used |= 1 << r;                                                                   \
        a->p = o;                                                                         \
        a->reg = r;                                                                       \
      }                                                                                   \
    }                                                                                     \
  }                                                                                       \
                                                                                          \
  static int32_t blocks_##S(const int8_t *code, const int32_t *arg, int32_t ncode,        \
                            const double *consts, int nin, const void *const *chunks,     \
                            const int32_t *sizes, const int32_t *blocks, int32_t nblocks, \
                            void *dst, int32_t nbytes, int32_t blocksize, ndp_cparts *enc, \
                            uint8_t *scratch, ndp_error *err) {                           \
    enum { TILE = TILE_BYTES / sizeof(T) };                                               \
    const T *in[64];                                                                      \
    size_t at = (size_t)(nin + (enc != NULL)) * (size_t)blocksize;                        \
    T (*regs)[TILE] = (T (*)[TILE])(scratch + at);                                        \
    for (int32_t j = 0; j < nblocks; j++) {                                               \
      int32_t b = blocks[j];                                                              \
      int64_t off = (int64_t)b * blocksize;                                               \
      if (b < 0 || off >= nbytes)                                                         \
        return ndp_fail(err, NDP_ERR_PARAM, "block %d of a chunk of %d bytes", (int)b,    \
                        (int)nbytes);                                                     \
      int32_t len = nbytes - off < blocksize ? (int32_t)(nbytes - off) : blocksize;       \
      for (int k = 0; k < nin; k++) {                                                     \
        uint8_t *slotk = scratch + (size_t)k * (size_t)blocksize;                         \
        int32_t r = ndp_decompress_blocks(chunks[k], sizes[k], &b, 1, slotk, blocksize,  \
                                          1, err);                                        \
        if (r < 0) return r;                                                              \
        in[k] = (const T *)slotk;                                                         \
      }                                                                                   \
      T *out = enc != NULL ? (T *)(scratch + (size_t)nin * (size_t)blocksize)             \
                           : (T *)((uint8_t *)dst + off);                                 \
      int32_t n = len / (int32_t)sizeof(T);                                               \
      for (int32_t t = 0; t < n; t += TILE)                                               \
        run_tile_##S(code, arg, ncode, in, consts, t, n - t < TILE ? n - t : TILE,        \
                     out + t, regs);                                                      \
      if (enc != NULL) {                                                                  \
        int rc = ndp_cparts_add_block(enc, out, b, err);                                  \
        if (rc < 0) return rc;                                                            \
      }                                                                                   \
    }                                                                                     \
    return 1;                                                                             \
  }

#define LOOPS(EXPR_VV, EXPR_VS, EXPR_SV)      \
  if (x != NULL && y != NULL)                 \
    for (i = 0; i < n; i++) o[i] = EXPR_VV;   \
  else if (x != NULL)                         \
    for (i = 0; i < n; i++) o[i] = EXPR_VS;   \
  else                                        \
    for (i = 0; i < n; i++) o[i] = EXPR_SV;

FUSED_KERNELS(double, f8, sqrt)
FUSED_KERNELS(float, f4, sqrtf)

#undef LOOPS

int32_t ndp_fused_blocks(const int8_t *code, const int32_t *arg, int32_t ncode,
                         const double *consts, int nin, int typesize,
                         const void *const *chunks, const int32_t *sizes,
                         const int32_t *blocks, int32_t nblocks, void *dst, int32_t nbytes,
                         int32_t blocksize, ndp_cparts *enc, ndp_error *err) {
  if (nin < 1 || nin > 64 || (typesize != 4 && typesize != 8) || blocksize <= 0 ||
      blocksize % typesize || nbytes <= 0)
    return ndp_fail(err, NDP_ERR_PARAM, "%d operands of %d-byte items, blocks of %d bytes",
                    nin, typesize, (int)blocksize);
  /* every operand chunk must hold blocks of this size of a chunk of this size, of
   * items of this size, decodable block by block: else 0 (the caller's general path) */
  for (int k = 0; k < nin; k++) {
    ndp_chunk_info ci;
    int rc = ndp_chunk_parse(chunks[k], sizes[k], &ci, err);
    if (rc < 0) return rc;
    if (ci.special || ci.vlblocks || ci.nbytes != nbytes ||
        ci.blocksize != blocksize || ci.typesize != typesize)
      return 0;
    /* C-Blosc2's n-d codecs and filters need the array's layout: the general path */
    if (!ci.memcpyed && ndp_codec_is_nd(ci.compcode)) return 0;
    for (int i = 0; i < NDP_NFILTERS; i++)
      if (ndp_filter_is_nd(ci.filters[i])) return 0;
  }
  if (enc != NULL && ndp_cparts_nd(enc)) return 0;
  /* the operands' blocks, then (with an encoder) the result block, then the
   * registers (not on the stack: 64 KB).  With an encoder each result block is made
   * in scratch (hot in L2, as the prefilter output of a Blosc2 compressor) and
   * encoded from there: dst, a chunk-sized buffer whose lines are cold by then, is
   * not written (the encoder is told: see ndp_cparts_needs_source). */
  size_t at = (size_t)(nin + (enc != NULL)) * (size_t)blocksize;
  uint8_t *scratch = ndp_scratch(4, at + (size_t)MAXSTACK * TILE_BYTES);
  if (scratch == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "cannot allocate operand blocks");
  return typesize == 8 ? blocks_f8(code, arg, ncode, consts, nin, chunks, sizes, blocks,
                                   nblocks, dst, nbytes, blocksize, enc, scratch, err)
                       : blocks_f4(code, arg, ncode, consts, nin, chunks, sizes, blocks,
                                   nblocks, dst, nbytes, blocksize, enc, scratch, err);
}

/* Fused per-block evaluation: decode the operands' blocks, evaluate a float64
 * arithmetic program on them and encode the result block, one block at a time, so
 * that a block's values never leave the core's L2 cache and no interpreter runs
 * between the steps (the aligned compute path's groups paid ~12 GIL round trips).
 *
 * A program is postfix code over a stack: NDP_FOP_IN k pushes operand k, NDP_FOP_CONST
 * k pushes constant k, the binary ops pop two values and push the result, NDP_FOP_NEG
 * pops one.  It runs on tiles of TILE doubles, so its few registers stay in L1.  Every
 * operation is the IEEE operation NumPy applies (the file is compiled without
 * floating-point contraction: a * b + c is never fused into an FMA), so the values
 * are NumPy's bit for bit.
 */
#include <string.h>

#include "ndpack.h"
#include "../common/internal.h"
#include "../common/tls.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#define TILE 512
#define MAXSTACK 16

typedef struct {
  const double *p; /* the values (NULL: the scalar v) */
  double v;
  int reg;         /* the register holding them, or -1 (an operand or a constant) */
} slot;

/* AVX2 where the CPU has it (4 doubles a step instead of SSE2's 2; same values) */
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(_M_X64))
#define NDP_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define NDP_CLONES
#endif

NDP_CLONES
static void binary(int op, const slot *a, const slot *b, double *o, int32_t n) {
  const double *x = a->p, *y = b->p;
  double s = a->v, t = b->v;
  int32_t i;
  /* each case a plain loop the compiler vectorizes; operands may be `o` itself */
#define LOOPS(EXPR_VV, EXPR_VS, EXPR_SV)                       \
  if (x != NULL && y != NULL)                                  \
    for (i = 0; i < n; i++) o[i] = EXPR_VV;                    \
  else if (x != NULL)                                          \
    for (i = 0; i < n; i++) o[i] = EXPR_VS;                    \
  else                                                         \
    for (i = 0; i < n; i++) o[i] = EXPR_SV;
  switch (op) {
    case NDP_FOP_ADD: LOOPS(x[i] + y[i], x[i] + t, s + y[i]) break;
    case NDP_FOP_SUB: LOOPS(x[i] - y[i], x[i] - t, s - y[i]) break;
    case NDP_FOP_MUL: LOOPS(x[i] * y[i], x[i] * t, s * y[i]) break;
    default:          LOOPS(x[i] / y[i], x[i] / t, s / y[i]) break;
  }
#undef LOOPS
}

/* Check a program once: every operand and constant index in range, the stack never
 * under- or overflowing, one value left, at least one operand per binary result
 * (two constants would make a scalar: the caller folds those). */
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
    } else if (c == NDP_FOP_NEG) {
      if (depth < 1)
        return ndp_fail(err, NDP_ERR_PARAM, "step %d negates nothing", (int)k);
      if (!vec[depth - 1])
        return ndp_fail(err, NDP_ERR_PARAM, "step %d negates a constant", (int)k);
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

/* The program over n <= TILE values of the operands at in[k] + off into out. */
static void run_tile(const int8_t *code, const int32_t *arg, int32_t ncode,
                     const double *const *in, const double *consts, int32_t off, int32_t n,
                     double *restrict out, double (*regs)[TILE]) {
  slot st[MAXSTACK];
  int depth = 0, used = 0; /* `used`: a bit per busy register */
  for (int32_t k = 0; k < ncode; k++) {
    int c = code[k];
    if (c == NDP_FOP_IN) {
      st[depth].p = in[arg[k]] + off;
      st[depth].v = 0;
      st[depth++].reg = -1;
      continue;
    }
    if (c == NDP_FOP_CONST) {
      st[depth].p = NULL;
      st[depth].v = consts[arg[k]];
      st[depth++].reg = -1;
      continue;
    }
    int last = k == ncode - 1;
    if (c == NDP_FOP_NEG) {
      slot *a = &st[depth - 1];
      int r = a->reg;
      if (r < 0 && !last)
        for (r = 0; used >> r & 1; r++) {
        }
      double *o = last ? out : regs[r];
      for (int32_t i = 0; i < n; i++) o[i] = -a->p[i];
      if (!last) {
        used |= 1 << r;
        a->p = o;
        a->reg = r;
      }
      continue;
    }
    slot *a = &st[depth - 2], *b = &st[depth - 1];
    int r = a->reg >= 0 ? a->reg : b->reg;
    if (r < 0 && !last)
      for (r = 0; used >> r & 1; r++) {
      }
    double *o = last ? out : regs[r];
    binary(c, a, b, o, n);
    if (a->reg >= 0 && a->reg != r) used &= ~(1 << a->reg);
    if (b->reg >= 0 && b->reg != r) used &= ~(1 << b->reg);
    depth--;
    if (!last) {
      used |= 1 << r;
      a->p = o;
      a->reg = r;
    }
  }
}

int32_t ndp_fused_blocks(const int8_t *code, const int32_t *arg, int32_t ncode,
                         const double *consts, int nin, const void *const *chunks,
                         const int32_t *sizes, const int32_t *blocks, int32_t nblocks,
                         void *dst, int32_t nbytes, int32_t blocksize, ndp_cparts *enc,
                         ndp_error *err) {
  if (nin < 1 || nin > 64 || blocksize <= 0 || blocksize % 8 || nbytes <= 0)
    return ndp_fail(err, NDP_ERR_PARAM, "%d operands, blocks of %d bytes", nin, (int)blocksize);
  /* every operand chunk must hold blocks of this size of a chunk of this size, of
   * 8-byte items, decodable block by block: else 0 (the caller's general path) */
  for (int k = 0; k < nin; k++) {
    ndp_chunk_info ci;
    int rc = ndp_chunk_parse(chunks[k], sizes[k], &ci, err);
    if (rc < 0) return rc;
    if (ci.special || ci.vlblocks || ci.nbytes != nbytes ||
        ci.blocksize != blocksize || ci.typesize != 8)
      return 0;
  }
  /* the operands' blocks, then the registers (not on the stack: 64 KB) */
  /* with an encoder, each result block is made in a block of scratch (hot in L2,
   * as the prefilter output of a Blosc2 compressor) and encoded from there: dst, a
   * chunk-sized buffer whose lines are cold by then, is not written (the encoder is
   * told: see ndp_cparts_needs_source) */
  size_t at = (size_t)(nin + (enc != NULL)) * (size_t)blocksize;
  uint8_t *scratch = ndp_scratch(4, at + sizeof(double[MAXSTACK][TILE]));
  if (scratch == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "cannot allocate operand blocks");
  const double *in[64];
  double (*regs)[TILE] = (double (*)[TILE])(scratch + at);   /* 8-byte aligned */
  for (int32_t j = 0; j < nblocks; j++) {
    int32_t b = blocks[j];
    int64_t off = (int64_t)b * blocksize;
    if (b < 0 || off >= nbytes)
      return ndp_fail(err, NDP_ERR_PARAM, "block %d of a chunk of %d bytes", (int)b, (int)nbytes);
    int32_t len = nbytes - off < blocksize ? (int32_t)(nbytes - off) : blocksize;
    for (int k = 0; k < nin; k++) {
      uint8_t *slotk = scratch + (size_t)k * (size_t)blocksize;
      int32_t r = ndp_decompress_blocks(chunks[k], sizes[k], &b, 1, slotk, blocksize, 1, err);
      if (r < 0) return r;
      in[k] = (const double *)slotk;
    }
    double *out = enc != NULL ? (double *)(scratch + (size_t)nin * (size_t)blocksize)
                              : (double *)((uint8_t *)dst + off);
    int32_t n = len / 8;
    for (int32_t t = 0; t < n; t += TILE)
      run_tile(code, arg, ncode, in, consts, t, n - t < TILE ? n - t : TILE, out + t, regs);
    if (enc != NULL) {
      int rc = ndp_cparts_add_block(enc, out, b, err);
      if (rc < 0) return rc;
    }
  }
  return 1;
}

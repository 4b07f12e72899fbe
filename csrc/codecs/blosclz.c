/* BloscLZ codec (FORMAT.md section 3.3).
 *
 * Written for ndpack from the format description only; it shares no code with
 * C-Blosc2 or FastLZ.  The streams it writes are decodable by C-Blosc2 and the
 * decoder accepts every stream C-Blosc2 writes, but the encoder output is not
 * byte-identical to C-Blosc2's (that is not needed for interoperability).
 *
 * The decoder is in blosclz_decode.c, the stream format and what both share in
 * blosclz_internal.h.
 *
 * Encoder: LZ77 over hash tables of 4-byte sequences (multiplicative hash),
 * with literal runs of up to 32 bytes, minimum match lengths per distance
 * class (near matches cost 2 bytes, far ones 4), match extension backwards
 * into pending literals, faster stepping through data that does not match,
 * and, from level 4 on, a second table hashed on 8 bytes that finds long far
 * matches, plus one-step lazy matching from level 6 on.  At every position
 * the distance of the previous match is tried first ("repeat distance"): on
 * smooth numeric data (the byte planes of shuffled floats) the same distance
 * keeps matching after a byte that breaks it, so matches are longer and fewer
 * (linspace float64, shuffled: 1.7x the ratio at level 1, 2x at level 9, and
 * faster both ways).
 *
 * Incompressible input is given up on early (return 0) as in BloscLZ.
 * Levels 1-6: BloscLZ's probe requires the bytes of the last 1/probe_div of
 * the input (at most 2^probe_log) to compress to the level's ratio.  The
 * encoder first checks that ratio on as many bytes at the head as it goes,
 * and on the whole result; only when either falls short is the tail sample
 * compressed (counting only), the input given up on if that also falls
 * short, and encoded again without the checks otherwise.  So every input
 * that the tail sample admits is compressed, an input whose head and whole
 * reach the level's ratio is compressed too, and a compressible input costs
 * no separate probe.  Counting stops as soon as the rest could not exceed
 * the limit even as literals.  Levels 7-9 (where BloscLZ probes the whole
 * input) give up early only when four samples spread over the input all fall
 * short (not at level 9), and apply the threshold to the real result.
 *
 * The last bytes of the input are always emitted as literals, so every stream
 * ends with a literal instruction.  The hash tables live on the stack (64
 * KiB).  Match lengths are counted 16 bytes at a time with SSE2 where the
 * build has it; the scalar loop is the reference (ndp_blosclz_compress_isa
 * with simd = 0 gives the same bytes; the chunk writer uses it under
 * NDPACK_ISA=scalar).
 */
#include "blosclz.h"
#include "blosclz_internal.h"

#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>
#define BLZ_HAVE_SSE2 1
#else
#define BLZ_HAVE_SSE2 0
#endif

/* ------------------------------------------------------------------------ */
/* Encoder                                                                   */

#define BLZ_HASHLOG_MAX 14
#define BLZ_HASH_MUL 2654435761u
#define BLZ_HASH_MUL64 0x9E3779B185EBCA87ULL
/* Matches start before end - BLZ_START_MARGIN (so 4- and 8-byte reads at a
 * candidate position are safe) and never cover the last BLZ_END_LITERALS
 * bytes, so every stream ends with a literal run. */
#define BLZ_START_MARGIN 12
#define BLZ_END_LITERALS 4
/* Lazy matching moves to ip + 1 only if that saves this many more bytes. */
#define BLZ_LAZY_MARGIN 6

typedef struct {
  int hashlog;     /* log2 of the hash table size (of each table in dual mode) */
  int min_near;    /* minimum match length, distance <= 8191 */
  int min_far;     /* minimum match length, distance >= 8192 */
  int skip_shift;  /* the step grows by 1 every 2^skip_shift misses (0: never) */
  int lazy;        /* > 0: for matches shorter than this, look at ip + 1 first */
  int dual;        /* second table hashed on 8 bytes (finds long far matches) */
  int probe_div;   /* the probe starts at the last 1/probe_div of the input;
                      0: four short samples, then the result must reach the ratio */
  int probe_log;   /* log2 of the maximum probe length */
  double min_ratio;
} blz_params;

/* Per-clevel settings (index 0 unused).  Hash sizes, probe placement and
 * thresholds follow FORMAT.md 3.3 (with "probe all of it" for levels 7-9
 * done exactly, on the real result); the other knobs were tuned on numeric
 * and text data so that ratios are at least those of C-Blosc2's BloscLZ. */
static const blz_params blz_levels[10] = {
    /* hashlog, min_near, min_far, skip, lazy, dual, probe_div, probe_log, min_ratio */
    {12, 4, 12, 3, 0, 0, 8, 12, 2.0},     /* unused */
    {12, 4, 12, 3, 0, 0, 8, 12, 2.0},     /* 1 */
    {13, 4, 12, 3, 0, 0, 4, 13, 1.5},     /* 2 */
    {14, 4, 12, 4, 0, 0, 4, 14, 1.2},     /* 3 */
    {13, 4, 12, 3, 0, 1, 2, 14, 1.2},     /* 4 */
    {13, 4, 12, 4, 0, 1, 2, 14, 1.2},     /* 5 */
    {13, 4, 12, 5, 1000, 1, 2, 14, 1.2},  /* 6 */
    {13, 4, 12, 5, 1000, 1, 0, 14, 1.15}, /* 7 */
    {13, 4, 12, 6, 1000, 1, 0, 14, 1.1},  /* 8 */
    {13, 4, 12, 7, 1000, 1, 0, 14, 1.0},  /* 9 */
};

BLZ_ALWAYS_INLINE uint32_t blz_hash4(const uint8_t *p, unsigned shift) {
  return (blz_read32(p) * BLZ_HASH_MUL) >> shift;
}

BLZ_ALWAYS_INLINE uint32_t blz_hash8(const uint8_t *p, unsigned shift) {
  return (uint32_t)((blz_read64(p) * BLZ_HASH_MUL64) >> (shift + 32));
}

/* Length of the common prefix of p and r, scanning p up to (excluding) pend.
 * `simd`: past the first 8 bytes, compare 16 at a time with SSE2 (long
 * matches are found in half the steps; a first 8-byte step keeps short ones
 * as cheap as in the scalar loop, which is the reference). */
BLZ_ALWAYS_INLINE size_t blz_count(const uint8_t *p, const uint8_t *r, const uint8_t *pend,
                                   const int simd) {
  const uint8_t *const p0 = p;
#if BLZ_HAVE_SSE2
  if (simd) {
    if (p + 8 <= pend) {
      uint64_t x = blz_read64(p) ^ blz_read64(r);
      if (x) return blz_equal_bytes(x);
      p += 8;
      r += 8;
    }
    while (p + 16 <= pend) {
      unsigned mk = (unsigned)_mm_movemask_epi8(
          _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)p),
                         _mm_loadu_si128((const __m128i *)(const void *)r)));
      if (mk != 0xFFFFu) return (size_t)(p - p0) + (unsigned)__builtin_ctz(~mk);
      p += 16;
      r += 16;
    }
  }
#else
  (void)simd;
#endif
  while (p + 8 <= pend) {
    uint64_t x = blz_read64(p) ^ blz_read64(r);
    if (x) return (size_t)(p - p0) + blz_equal_bytes(x);
    p += 8;
    r += 8;
  }
  while (p < pend && *p == *r) {
    p++;
    r++;
  }
  return (size_t)(p - p0);
}

/* Bytes needed to encode `n` literals. */
BLZ_ALWAYS_INLINE size_t blz_lit_cost(size_t n) { return n + (n + BLZ_MAX_LITERAL - 1) / BLZ_MAX_LITERAL; }

/* Bytes needed to encode a match (len >= 3). */
BLZ_ALWAYS_INLINE size_t blz_match_cost(size_t len, size_t dist) {
  size_t c = dist <= BLZ_NEAR_MAX ? 2 : 4;
  if (len >= 9) c += (len - 9) / 255 + 1;
  return c;
}

BLZ_ALWAYS_INLINE uint8_t *blz_emit_literals(uint8_t *op, const uint8_t *lit, size_t n) {
  while (n > BLZ_MAX_LITERAL) {
    *op++ = BLZ_MAX_LITERAL - 1;
    memcpy(op, lit, BLZ_MAX_LITERAL);
    op += BLZ_MAX_LITERAL;
    lit += BLZ_MAX_LITERAL;
    n -= BLZ_MAX_LITERAL;
  }
  if (n) {
    *op++ = (uint8_t)(n - 1);
    memcpy(op, lit, n);
    op += n;
  }
  return op;
}

BLZ_ALWAYS_INLINE uint8_t *blz_emit_match(uint8_t *op, size_t len, size_t dist) {
  const int near = dist <= BLZ_NEAR_MAX;
  const size_t hi = near ? (dist - 1) >> 8 : 31;
  if (len <= 8) {
    *op++ = (uint8_t)(((len - 2) << 5) | hi);
  } else {
    size_t rem = len - 9;
    *op++ = (uint8_t)((7u << 5) | hi);
    if (rem >= 255) {
      size_t k = rem / 255;
      memset(op, 255, k);
      op += k;
      rem -= k * 255;
    }
    *op++ = (uint8_t)rem;
  }
  if (near) {
    *op++ = (uint8_t)((dist - 1) & 255);
  } else {
    size_t fd = dist - BLZ_FAR_BASE;
    *op++ = 255;
    *op++ = (uint8_t)(fd >> 8);
    *op++ = (uint8_t)(fd & 255);
  }
  return op;
}

typedef struct {
  size_t len;  /* 0: no usable match */
  size_t dist;
  long gain;   /* bytes saved: len - cost of the match instruction */
} blz_match;

typedef struct {
  const uint8_t *src;
  const uint8_t *mlimit;
  uint32_t *ht4;
  uint32_t *ht8;
  unsigned shift;
  size_t min_near, min_far;
  size_t rep;  /* distance of the last match */
} blz_state;

/* Consider a match of `len` bytes at distance `dist` for the best one. */
BLZ_ALWAYS_INLINE void blz_consider(const blz_state *st, blz_match *m, size_t len, size_t dist) {
  long gain;
  if (len < (dist <= BLZ_NEAR_MAX ? st->min_near : st->min_far)) return;
  gain = (long)len - (long)(dist <= BLZ_NEAR_MAX ? 2 : 4);
  if (gain > m->gain || m->len == 0) {
    m->len = len;
    m->dist = dist;
    m->gain = gain;
  }
}

/* Find a match at ip (ip < end - BLZ_START_MARGIN) and, if `insert`, record
 * ip in the hash table(s).  m->len == 0: none that is worth encoding. */
BLZ_ALWAYS_INLINE void blz_find(const blz_state *st, const uint8_t *ip, const int dual,
                                const int insert, const int simd, blz_match *m) {
  const uint8_t *const src = st->src;
  const uint32_t pos = (uint32_t)(ip - src);
  const uint32_t h = blz_hash4(ip, st->shift);
  const uint8_t *ref = src + st->ht4[h];
  size_t dist = (size_t)(ip - ref);
  const size_t rep = st->rep;
  if (insert) st->ht4[h] = pos;
  m->len = 0;
  m->dist = 0;
  m->gain = 0;
  /* The distance of the last match first: on smooth numeric data the same
   * distance keeps matching after short breaks. */
  if (rep <= pos && blz_read32(ip - rep) == blz_read32(ip))
    blz_consider(st, m, 4 + blz_count(ip + 4, ip - rep + 4, st->mlimit, simd), rep);
  if (dual) {
    const uint32_t h8 = blz_hash8(ip, st->shift);
    const uint8_t *ref8 = src + st->ht8[h8];
    size_t dist8 = (size_t)(ip - ref8);
    if (insert) st->ht8[h8] = pos;
    if (dist8 != rep && dist8 - 1 < BLZ_MAX_DISTANCE && blz_read64(ref8) == blz_read64(ip)) {
      blz_consider(st, m, 8 + blz_count(ip + 8, ref8 + 8, st->mlimit, simd), dist8);
      if (m->len) return;
    }
  }
  /* (dist - 1 wraps around for dist == 0) */
  if (dist != rep && dist - 1 < BLZ_MAX_DISTANCE && blz_read32(ref) == blz_read32(ip))
    blz_consider(st, m, 4 + blz_count(ip + 4, ref + 4, st->mlimit, simd), dist);
}

/* Returned by the encoder when the head check fails. */
#define BLZ_HEAD_FAILS ((size_t)-1)

/* Whether `consumed` input bytes that cost `cost` output bytes fall short of the
 * level's ratio. */
static int blz_head_fails(const blz_params *prm, size_t cost, size_t consumed) {
  return (double)cost * prm->min_ratio > (double)consumed;
}

/* The encoder proper.  In counting mode (count_only != 0, dst unused) it only
 * computes the stream size.  Returns the stream size, or 0 when it would
 * exceed `limit`.  Requires srclen >= 16. */
BLZ_ALWAYS_INLINE size_t blz_encode(const blz_params *prm, unsigned hashlog, uint32_t *ht,
                                    const uint8_t *src, size_t srclen, uint8_t *dst,
                                    size_t limit, size_t check_at, const int count_only,
                                    const int dual, const int lazy, const int simd) {
  const uint8_t *const end = src + srclen;
  size_t check = check_at ? check_at : (size_t)-1; /* input offset of the head check */
  const uint8_t *const ip_limit = end - BLZ_START_MARGIN;
  const unsigned skip_shift = prm->skip_shift ? (unsigned)prm->skip_shift : 31u;
  const size_t lazy_max = (size_t)prm->lazy;
  const uint8_t *ip = src + 1; /* the zeroed tables refer to position 0 */
  const uint8_t *anchor = src; /* first byte not yet encoded */
  uint8_t *op = dst;
  size_t osize = 0; /* counting mode */
  size_t miss = 0;
  blz_state st;

  st.src = src;
  st.mlimit = end - BLZ_END_LITERALS;
  st.ht4 = ht;
  st.ht8 = ht + ((size_t)1 << hashlog);
  st.shift = 32 - hashlog;
  st.min_near = (size_t)prm->min_near;
  st.min_far = (size_t)prm->min_far;
  st.rep = 1u << 30;
  memset(ht, 0, (sizeof(uint32_t) << hashlog) * (dual ? 2 : 1));

  while (BLZ_LIKELY(ip < ip_limit)) {
    blz_match m;
    const uint8_t *mstart;
    size_t cost;

    blz_find(&st, ip, dual, 1, simd, &m);
    if (!m.len) {
      ip += 1 + (miss++ >> skip_shift);
      if (BLZ_UNLIKELY((size_t)(ip - src) >= check)) {
        if (blz_head_fails(prm, (size_t)(op - dst) + blz_lit_cost((size_t)(ip - anchor)),
                           (size_t)(ip - src)))
          return BLZ_HEAD_FAILS;
        check = (size_t)-1;
      }
      continue;
    }
    if (lazy && m.len < lazy_max) {
      /* Lazy evaluation: move on while the next position has a clearly
       * better match (by more than BLZ_LAZY_MARGIN bytes). */
      while (ip + 1 < ip_limit) {
        blz_match m1;
        /* (not recorded in the tables: that works better on run-structured
         * data, where the first position of a run is the best reference) */
        blz_find(&st, ip + 1, dual, 0, simd, &m1);
        if (!m1.len || m1.gain - BLZ_LAZY_MARGIN <= m.gain) break;
        ip++;
        m = m1;
      }
    }

    /* Extend backwards into the pending literals. */
    mstart = ip;
    while (mstart > anchor && mstart - m.dist > src && mstart[-1] == mstart[-1 - (ptrdiff_t)m.dist]) {
      mstart--;
      m.len++;
    }

    cost = blz_lit_cost((size_t)(mstart - anchor)) + blz_match_cost(m.len, m.dist);
    if (count_only) {
      osize += cost;
      if (BLZ_UNLIKELY(osize > limit)) return 0;
    } else {
      const size_t room = limit - (size_t)(op - dst);
      const size_t nlit = (size_t)(mstart - anchor);
      if (BLZ_LIKELY(nlit <= BLZ_MAX_LITERAL && room >= cost + BLZ_MAX_LITERAL &&
                     anchor + BLZ_MAX_LITERAL <= end)) {
        /* Short literal run: fixed-size copy (the bytes written past the
         * run are inside dst[0, limit) and get overwritten). */
        if (nlit) {
          *op = (uint8_t)(nlit - 1);
          blz_copy16(op + 1, anchor);
          blz_copy16(op + 17, anchor + 16);
          op += nlit + 1;
        }
      } else {
        if (BLZ_UNLIKELY(cost > room)) return 0;
        op = blz_emit_literals(op, anchor, nlit);
      }
      op = blz_emit_match(op, m.len, m.dist);
    }

    ip = mstart + m.len;
    anchor = ip;
    st.rep = m.dist;
    /* Counting: the rest can never cost more than as literals (every match
     * saves at least the literal-run byte it may add), so the size is known
     * to fit once this bound does. */
    if (count_only && osize + blz_lit_cost((size_t)(end - ip)) <= limit) return limit ? limit : 1;
    miss = 0;
    if (BLZ_UNLIKELY((size_t)(ip - src) >= check)) {
      if (blz_head_fails(prm, (size_t)(op - dst), (size_t)(ip - src))) return BLZ_HEAD_FAILS;
      check = (size_t)-1;
    }

    /* Record the positions just before the end of the match (ip is at most
     * end - BLZ_END_LITERALS, so the 4-byte reads stay inside the input). */
    st.ht4[blz_hash4(ip - 2, st.shift)] = (uint32_t)(ip - 2 - src);
    st.ht4[blz_hash4(ip - 1, st.shift)] = (uint32_t)(ip - 1 - src);
    if (dual && ip + 7 <= end) { /* 8-byte reads at ip - 2 and ip - 1 */
      st.ht8[blz_hash8(ip - 2, st.shift)] = (uint32_t)(ip - 2 - src);
      st.ht8[blz_hash8(ip - 1, st.shift)] = (uint32_t)(ip - 1 - src);
    }
  }

  /* Trailing literals (at least BLZ_END_LITERALS bytes). */
  {
    size_t n = (size_t)(end - anchor);
    size_t cost = blz_lit_cost(n);
    if (count_only) {
      osize += cost;
      return osize > limit ? 0 : osize;
    }
    if (cost > limit - (size_t)(op - dst)) return 0;
    op = blz_emit_literals(op, anchor, n);
  }
  dst[0] |= 0x20; /* BloscLZ marker in the first literal instruction */
  return (size_t)(op - dst);
}

/* Specialisations for the (dual, lazy) settings, the counting mode and the
 * match-length loop (SSE2 or the scalar reference). */
#define BLZ_DEFINE_ENCODER(name, count, dual, lazy, simd)                                  \
  static size_t name(const blz_params *prm, unsigned hashlog, uint32_t *ht,                \
                     const uint8_t *src, size_t srclen, uint8_t *dst, size_t limit,        \
                     size_t check_at) {                                                    \
    return blz_encode(prm, hashlog, ht, src, srclen, dst, limit, check_at, count, dual,    \
                      lazy, simd);                                                         \
  }
#define BLZ_DEFINE_ENCODERS(sfx, simd)                                                     \
  BLZ_DEFINE_ENCODER(blz_enc_00##sfx, 0, 0, 0, simd)                                       \
  BLZ_DEFINE_ENCODER(blz_enc_10##sfx, 0, 1, 0, simd)                                       \
  BLZ_DEFINE_ENCODER(blz_enc_11##sfx, 0, 1, 1, simd)                                       \
  BLZ_DEFINE_ENCODER(blz_cnt_00##sfx, 1, 0, 0, simd)                                       \
  BLZ_DEFINE_ENCODER(blz_cnt_10##sfx, 1, 1, 0, simd)                                       \
  BLZ_DEFINE_ENCODER(blz_cnt_11##sfx, 1, 1, 1, simd)                                       \
  static size_t blz_run##sfx(const blz_params *prm, unsigned hashlog, uint32_t *ht,        \
                             const uint8_t *src, size_t srclen, uint8_t *dst, size_t limit, \
                             int count_only, size_t check_at) {                            \
    if (count_only) check_at = 0;                                                          \
    if (prm->dual && prm->lazy)                                                            \
      return (count_only ? blz_cnt_11##sfx : blz_enc_11##sfx)(prm, hashlog, ht, src,       \
                                                              srclen, dst, limit, check_at); \
    if (prm->dual)                                                                         \
      return (count_only ? blz_cnt_10##sfx : blz_enc_10##sfx)(prm, hashlog, ht, src,       \
                                                              srclen, dst, limit, check_at); \
    /* (lazy without dual is not a configuration of the level table) */                    \
    return (count_only ? blz_cnt_00##sfx : blz_enc_00##sfx)(prm, hashlog, ht, src, srclen, \
                                                            dst, limit, check_at);         \
  }
BLZ_DEFINE_ENCODERS(_ref, 0)
#if BLZ_HAVE_SSE2
BLZ_DEFINE_ENCODERS(_sse2, 1)
#endif

typedef size_t (*blz_run_fn)(const blz_params *, unsigned, uint32_t *, const uint8_t *, size_t,
                             uint8_t *, size_t, int, size_t);

/* Hash table size for an input of n bytes: the level's size, but no larger
 * than needed to give every position its own slot. */
static unsigned blz_hashlog_for(const blz_params *prm, size_t n) {
  /* Both tables of the dual mode must fit in ht[1 << BLZ_HASHLOG_MAX]. */
  unsigned cap = (unsigned)prm->hashlog, hl = 8;
  if (cap > BLZ_HASHLOG_MAX - (prm->dual ? 1u : 0u)) cap = BLZ_HASHLOG_MAX - (prm->dual ? 1u : 0u);
  while (hl < cap && ((size_t)1 << hl) < n) hl++;
  return hl;
}

int ndp_blosclz_compress_isa(int clevel, const uint8_t *src, int srclen, uint8_t *dst, int maxout,
                             int simd) {
  uint32_t ht[1u << BLZ_HASHLOG_MAX]; /* 64 KiB, like C-Blosc2 */
  const blz_params *prm;
  size_t n, limit, r;
#if BLZ_HAVE_SSE2
  const blz_run_fn blz_run = simd ? blz_run_sse2 : blz_run_ref;
#else
  const blz_run_fn blz_run = blz_run_ref;
  (void)simd;
#endif

  if (src == NULL || dst == NULL || srclen < 16 || maxout <= 0) return 0;
  if (clevel < 1) clevel = 1;
  if (clevel > 9) clevel = 9;
  prm = &blz_levels[clevel];
  n = (size_t)srclen;

  /* The stream must be strictly smaller than the input. */
  limit = (size_t)maxout;
  if (limit > n - 1) limit = n - 1;

  if (prm->probe_div > 0) {
    /* Entropy probe: the sample of the last 1/probe_div of the input, at
     * most 2^probe_log bytes, must reach the level's ratio.  The encoder
     * first checks that ratio on as many bytes at the head of the input as
     * it goes, and on the whole result: when both reach it, that result
     * stands.  Otherwise the tail sample is compressed (counting only); the
     * input is given up on if it falls short, or encoded again without the
     * checks. */
    size_t start = n - n / (size_t)prm->probe_div;
    size_t plen = n - start;
    if (plen > ((size_t)1 << prm->probe_log)) plen = (size_t)1 << prm->probe_log;
    if (plen >= 16 && limit >= 2) {
      size_t wlimit = (size_t)((double)n / prm->min_ratio);
      if (wlimit > limit) wlimit = limit;
      r = blz_run(prm, blz_hashlog_for(prm, n), ht, src, n, dst, wlimit, 0, plen);
      if (r != BLZ_HEAD_FAILS && r != 0) return (int)r;
      if (r == 0 && wlimit == limit) return 0; /* no more room without the checks */
      if (!blz_run(prm, blz_hashlog_for(prm, plen), ht, src + start, plen, NULL,
                   (size_t)((double)plen / prm->min_ratio), 1, 0))
        return 0;
    }
  } else {
    /* BloscLZ probes the whole input at these levels.  We require the
     * level's ratio from the real result instead, after a quick check that
     * gives up only when four samples spread over the input all fall short
     * of it (a single sample misjudges inputs whose parts differ, such as
     * the byte planes of shuffled data).  With a threshold of 1 (level 9)
     * there is no check: only the result decides, so that redundancy the
     * short samples cannot see (long-distance repeats) is still found. */
    size_t rlimit = (size_t)((double)n / prm->min_ratio);
    size_t plen = ((size_t)1 << prm->probe_log) / 4, k;
    if (prm->min_ratio > 1.0 && n >= 8 * plen) {
      size_t plimit = (size_t)((double)plen / prm->min_ratio);
      unsigned hl = blz_hashlog_for(prm, plen);
      for (k = 0; k < 4; k++)
        if (blz_run(prm, hl, ht, src + k * ((n - plen) / 3), plen, NULL, plimit, 1, 0)) break;
      if (k == 4) return 0;
    }
    if (rlimit < limit) limit = rlimit;
  }
  if (limit < 2) return 0;

  r = blz_run(prm, blz_hashlog_for(prm, n), ht, src, n, dst, limit, 0, 0);
  return (int)r;
}

int ndp_blosclz_compress(int clevel, const uint8_t *src, int srclen, uint8_t *dst, int maxout) {
  return ndp_blosclz_compress_isa(clevel, src, srclen, dst, maxout, 1);
}

/* Probe a stream before zstd (any level), zlib or LZ4HC runs.
 *
 * Slow codec levels spend their time searching for matches.  Two kinds of
 * streams, common in shuffled floating-point data (the noisy low mantissa
 * bytes), give that search nothing to find:
 *
 *  - noise: byte values and byte-to-byte differences of a 4 KiB sample are
 *    both near-uniform, and LZ4 gains less than 1.5% on the first 8 KiB.  The
 *    codec would store it raw (or gain < 1%), so we store it raw;
 *  - match-less but skewed data (e.g. an exponent byte): no strong order-1
 *    structure, and LZ4 finds no repetition in a 4 KiB sample.  Only entropy
 *    coding helps, which the fastest level does as well as the slowest, at
 *    several times the speed (measured: zstd level 1 vs 9 on such a stream,
 *    941 vs 132 MB/s, 0.3% smaller).
 *
 * Newer libzstd releases make similar decisions inside; the system one may
 * not.  Compressible streams with clear structure pay one 512-byte histogram.
 * The cost of being wrong: a stream whose only repeats lie beyond the sampled
 * window loses them (stored raw or entropy coded only).
 */
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

#define PIECE 512
#define NPIECES 8

/* Collision count of a histogram of `n` samples relative to n uniform bytes
 * (n^2/256 + n): 1.0 for noise, up to 256 for a constant. */
static double skew(const uint32_t h[256], uint32_t n) {
  uint64_t sq = 0;
  for (int v = 0; v < 256; v++) sq += (uint64_t)h[v] * h[v];
  return (double)sq / ((double)n * n / 256.0 + n);
}

static void histogram_piece(const uint8_t *p, int32_t len, uint32_t hv[256], uint32_t hd[256]) {
  hv[p[0]]++;
  for (int32_t i = 1; i < len; i++) {
    hv[p[i]]++;
    hd[(uint8_t)(p[i] - p[i - 1])]++;
  }
}

/* 1 if LZ4 cannot shrink `len` bytes at `p` by 1.5%. */
static int lz4_finds_nothing(ndp_tls *t, const uint8_t *p, int32_t len) {
  if (t->lz4_state == NULL && (t->lz4_state = malloc((size_t)LZ4_sizeofState())) == NULL)
    return 0;
  uint8_t *out = ndp_scratch(3, (size_t)len);
  if (out == NULL) return 0;
  return LZ4_compress_fast_extState(t->lz4_state, (const char *)p, (char *)out, len,
                                    len - len / 64, 1) == 0;
}

int ndp_probe_stream(ndp_tls *t, const uint8_t *src, int32_t n) {
  if (n < 8192) return NDP_PROBE_CODEC;
  uint32_t hv[256], hd[256];
  memset(hv, 0, sizeof hv);
  memset(hd, 0, sizeof hd);
  int32_t step = n / NPIECES;
  const uint8_t *mid = src + (size_t)(NPIECES / 2) * step;
  histogram_piece(mid, PIECE, hv, hd);
  double sv = skew(hv, PIECE), sd = skew(hd, PIECE - 1);
  if (sd > 4.0) return NDP_PROBE_CODEC;     /* strong order-1 structure (ramps, runs) */
  if (sv < 1.15 && sd < 1.15) {
    for (int32_t k = 0; k < NPIECES; k++)
      if (k != NPIECES / 2) histogram_piece(src + (size_t)k * step, PIECE, hv, hd);
    if (skew(hv, PIECE * NPIECES) < 1.15 && skew(hd, (PIECE - 1) * NPIECES) < 1.15 &&
        lz4_finds_nothing(t, src, 8192))
      return NDP_PROBE_RAW;
    return NDP_PROBE_CODEC;
  }
  return lz4_finds_nothing(t, mid, 4096) ? NDP_PROBE_LITERALS : NDP_PROBE_CODEC;
}

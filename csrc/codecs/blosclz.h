/* BloscLZ: the FastLZ-derived LZ77 stream of the Blosc2 format (FORMAT.md 3.3).
 * Written from the format description; no code of other projects. */
#ifndef NDPACK_BLOSCLZ_H
#define NDPACK_BLOSCLZ_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Compress `srclen` bytes into at most `maxout` bytes.
 * Returns the stream length (> 0), or 0 when the input does not compress or
 * does not fit in `maxout` (the caller then stores the bytes raw).
 * Never writes beyond dst[maxout - 1].  clevel is 1..9. */
int ndp_blosclz_compress(int clevel, const uint8_t *src, int srclen,
                         uint8_t *dst, int maxout);

/* The same with the match-length loop chosen: simd != 0 uses SSE2 where the
 * build has it (what ndp_blosclz_compress does), 0 the scalar reference.  Both
 * give the same bytes; the chunk writer passes 0 under NDPACK_ISA=scalar. */
int ndp_blosclz_compress_isa(int clevel, const uint8_t *src, int srclen,
                             uint8_t *dst, int maxout, int simd);

/* Decompress a stream of `srclen` bytes into exactly `dstlen` bytes.
 * Returns dstlen on success, or a negative value if the stream is corrupt,
 * would write past dst[dstlen - 1], would read past src[srclen - 1], refers
 * before the start of the output, or decodes to a length other than dstlen. */
int ndp_blosclz_decompress(const uint8_t *src, int srclen, uint8_t *dst, int dstlen);

#ifdef __cplusplus
}
#endif
#endif

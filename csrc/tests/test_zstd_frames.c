/* Raw zstd frames (ndp_zstd_compress / ndp_zstd_decompress, the chunks of zarr's and
 * numcodecs' zstd codec): round trips at several levels with and without a checksum,
 * the content size always in the header, frames without one (as a streaming encoder
 * writes them) decoded and their size checked, and every failure a clean status:
 * truncated frames at every length, corrupt bytes, wrong destination sizes, bad
 * arguments.  libzstd itself reads back what is written. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "check.h"
#include "codecs.h"
#include "ndpack.h"

static void fill_data(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)            /* compressible, not trivially so */
    p[i] = (uint8_t)((i / 7) % 13 + (rng() % 4 == 0 ? rng() : 0));
}

static void round_trips(void) {
  const size_t sizes[] = {0, 1, 100, 4096, 131072 + 17, 3u << 20};
  const int levels[] = {-5, 0, 1, 3, 9, 19};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    size_t n = sizes[s];
    uint8_t *src = malloc(n + 1), *back = malloc(n + 1);
    int64_t cap = ndp_zstd_bound((int64_t)n);
    uint8_t *frame = malloc((size_t)cap);
    fill_data(src, n);
    for (size_t l = 0; l < sizeof levels / sizeof *levels; l++) {
      if (levels[l] > 9 && n > 4096) continue;            /* slow levels: small inputs */
      for (int crc = 0; crc < 2; crc++) {
        ndp_error err = {0};
        int64_t c = ndp_zstd_compress(levels[l], crc, src, (int64_t)n, frame, cap, &err);
        CHECK(c > 0 && c <= cap, "compress n=%zu level %d crc %d: %lld (%s)", n, levels[l],
              crc, (long long)c, err.msg);
        if (c <= 0) continue;
        CHECK(ZSTD_getFrameContentSize(frame, (size_t)c) == n, "content size in the header, n=%zu", n);
        /* the frame header descriptor (RFC 8878 3.1.1.1.1): bit 2, the checksum flag */
        CHECK(((frame[4] >> 2) & 1) == crc, "checksum flag %d, n=%zu", crc, n);
        memset(back, 0xAB, n + 1);
        ndp_error e2 = {0};
        int64_t d = ndp_zstd_decompress(frame, c, back, (int64_t)n, &e2);
        CHECK(d == (int64_t)n && memcmp(back, src, n) == 0, "round trip n=%zu level %d: %lld (%s)",
              n, levels[l], (long long)d, e2.msg);
        /* libzstd reads it too */
        size_t r = ZSTD_decompress(back, n + 1, frame, (size_t)c);
        CHECK(r == n && memcmp(back, src, n) == 0, "libzstd reads it back, n=%zu", n);
        /* a destination of another size: refused, before or after decoding */
        if (n > 0) {
          ndp_error e3 = {0};
          CHECK(ndp_zstd_decompress(frame, c, back, (int64_t)n - 1, &e3) == NDP_ERR_DEST_SIZE,
                "a smaller destination, n=%zu", n);
          CHECK(e3.code == NDP_ERR_DEST_SIZE && strstr(e3.msg, "holds") != NULL,
                "its message: %s", e3.msg);
        }
        ndp_error e4 = {0};
        CHECK(ndp_zstd_decompress(frame, c, back, (int64_t)n + 1, &e4) == NDP_ERR_DEST_SIZE,
              "a larger destination, n=%zu", n);
      }
    }
    /* too small an output buffer: a status, nothing written past it */
    if (n > 100) {
      ndp_error err = {0};
      uint8_t *tiny = malloc(16 + 8);
      memset(tiny + 16, 0x5A, 8);
      CHECK(ndp_zstd_compress(3, 0, src, (int64_t)n, tiny, 16, &err) == NDP_ERR_DEST_SIZE,
            "no room for the frame, n=%zu", n);
      CHECK(tiny[16] == 0x5A && tiny[23] == 0x5A, "nothing past the buffer");
      free(tiny);
    }
    free(src);
    free(back);
    free(frame);
  }
}

/* A frame without its content size (streaming, size unknown): decoded, size checked. */
static void frames_without_size(void) {
  size_t n = 200000;
  uint8_t *src = malloc(n), *back = malloc(n + 8);
  fill_data(src, n);
  size_t cap = ZSTD_compressBound(n);
  uint8_t *frame = malloc(cap);
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
  ZSTD_outBuffer out = {frame, cap, 0};
  ZSTD_inBuffer in = {src, n, 0};
  size_t rem = ZSTD_compressStream2(c, &out, &in, ZSTD_e_end);
  CHECK(rem == 0, "streaming frame made");
  ZSTD_freeCCtx(c);
  CHECK(ZSTD_getFrameContentSize(frame, out.pos) == ZSTD_CONTENTSIZE_UNKNOWN, "no size said");
  ndp_error err = {0};
  CHECK(ndp_zstd_decompress(frame, (int64_t)out.pos, back, (int64_t)n, &err) == (int64_t)n &&
        memcmp(back, src, n) == 0, "decoded without a stated size (%s)", err.msg);
  ndp_error e2 = {0};
  CHECK(ndp_zstd_decompress(frame, (int64_t)out.pos, back, (int64_t)n + 8, &e2) ==
        NDP_ERR_DEST_SIZE, "decodes to fewer bytes than the destination");
  ndp_error e3 = {0};
  CHECK(ndp_zstd_decompress(frame, (int64_t)out.pos, back, (int64_t)n - 8, &e3) ==
        NDP_ERR_DEST_SIZE, "decodes to more bytes than the destination");
  /* two frames end to end decode as one stream (what libzstd does) */
  uint8_t *two = malloc(2 * out.pos), *back2 = malloc(2 * n);
  memcpy(two, frame, out.pos);
  memcpy(two + out.pos, frame, out.pos);
  ndp_error e4 = {0};
  CHECK(ndp_zstd_decompress(two, 2 * (int64_t)out.pos, back2, 2 * (int64_t)n, &e4) ==
        2 * (int64_t)n && memcmp(back2 + n, src, n) == 0, "two frames (%s)", e4.msg);
  free(two);
  free(back2);
  free(src);
  free(back);
  free(frame);
}

/* Truncated and corrupt frames: always a status (never a crash or a silent success
 * of the wrong size); with a checksum every corruption is caught. */
static void broken_frames(void) {
  size_t n = 50000;
  uint8_t *src = malloc(n), *back = malloc(n);
  fill_data(src, n);
  int64_t cap = ndp_zstd_bound((int64_t)n);
  uint8_t *frame = malloc((size_t)cap), *bad = malloc((size_t)cap);
  ndp_error err = {0};
  int64_t c = ndp_zstd_compress(3, 1, src, (int64_t)n, frame, cap, &err);
  CHECK(c > 0, "frame made");
  int cut_ok = 1;
  for (int64_t len = 0; len < c; len++) {
    ndp_error e = {0};
    int64_t r = ndp_zstd_decompress(frame, len, back, (int64_t)n, &e);
    if (r >= 0 || (r != NDP_ERR_FORMAT && r != NDP_ERR_DEST_SIZE) || e.code != r) cut_ok = 0;
  }
  CHECK(cut_ok, "every truncation is refused with a status and a message");
  int flips_ok = 1, caught = 0, trials = 3000;
  for (int t = 0; t < trials; t++) {
    memcpy(bad, frame, (size_t)c);
    int64_t pos = (int64_t)(rng() % (uint64_t)c);
    bad[pos] ^= (uint8_t)(1u << (rng() % 8));
    ndp_error e = {0};
    int64_t r = ndp_zstd_decompress(bad, c, back, (int64_t)n, &e);
    if (r < 0) {
      caught++;
      if (e.code != r || e.msg[0] == 0) flips_ok = 0;
    } else if (r != (int64_t)n || memcmp(back, src, n) != 0) {
      flips_ok = 0;                       /* checksummed: a wrong result must not pass */
    }
  }
  CHECK(flips_ok, "corrupt frames: a status, or (a flip zstd ignores) the right bytes");
  CHECK(caught > trials / 2, "most flips caught (%d of %d)", caught, trials);
  ndp_error e = {0};
  const uint8_t junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(ndp_zstd_decompress(junk, 8, back, 8, &e) == NDP_ERR_FORMAT && strstr(e.msg, "magic"),
        "not a frame: %s", e.msg);
  free(src);
  free(back);
  free(frame);
  free(bad);
}

static void bad_arguments(void) {
  uint8_t b[16];
  ndp_error e = {0};
  CHECK(ndp_zstd_decompress(NULL, 10, b, 16, &e) == NDP_ERR_PARAM, "no source");
  CHECK(ndp_zstd_decompress(b, -1, b, 16, NULL) == NDP_ERR_PARAM, "negative size, no err");
  CHECK(ndp_zstd_compress(3, 0, b, 16, NULL, 100, NULL) == NDP_ERR_PARAM, "no destination");
  CHECK(ndp_zstd_compress(3, 0, b, -2, b, 16, NULL) == NDP_ERR_PARAM, "negative source");
  CHECK(ndp_zstd_bound(-1) == NDP_ERR_PARAM, "negative bound");
  CHECK(ndp_zstd_bound(0) > 0, "an empty frame has a size");
  /* an out-of-range level is clamped by zstd, as numcodecs lets it */
  int64_t cap = ndp_zstd_bound(16);
  uint8_t *f = malloc((size_t)cap);
  memset(b, 7, sizeof b);
  CHECK(ndp_zstd_compress(99, 0, b, 16, f, cap, NULL) > 0, "level 99 clamped");
  free(f);
}

int main(void) {
  round_trips();
  frames_without_size();
  broken_frames();
  bad_arguments();
  return check_summary();
}

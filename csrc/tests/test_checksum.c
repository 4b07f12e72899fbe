/* crc32c: known answers, pieces, and the SSE4.2 kernel equal to the scalar reference
 * on random ragged sizes and alignments (three-stream rounds, short rounds, tails).
 *
 * Every kernel the CPU has (SSE4.2 streams, AVX-512 folding) is compared.
 *
 * `test_checksum --bench [MiB]` also times the candidates of the checksum record
 * (docs/storage.md): our kernels and reference, zlib's crc32 and an xxh32 written from
 * its specification here (for the measurement only), one thread, min of 7 runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "check.h"
#include "ndpack.h"

static void known_answers(void) {
  uint8_t b[32];
  const char *s = "123456789";
  CHECK(ndp_crc32c_scalar(0, s, 9) == 0xE3069283u, "scalar '123456789'");
  CHECK(ndp_crc32c_hw(0, s, 9) == 0xE3069283u, "hw '123456789'");
  CHECK(ndp_crc32c(0, s, 9) == 0xE3069283u, "dispatch '123456789'");
  CHECK(ndp_crc32c(0, s, 0) == 0 && ndp_crc32c(7, NULL, 0) == 7, "empty input");
  /* RFC 3720 (iSCSI) B.4 */
  struct { int kind; uint32_t want; } rfc[] = {
    {0, 0x8A9136AAu}, {1, 0x62A8AB43u}, {2, 0x46DD794Eu}, {3, 0x113FDB5Cu}};
  for (int k = 0; k < 4; k++) {
    for (int i = 0; i < 32; i++)
      b[i] = (uint8_t)(rfc[k].kind == 0 ? 0 : rfc[k].kind == 1 ? 0xFF
                       : rfc[k].kind == 2 ? i : 31 - i);
    CHECK(ndp_crc32c_scalar(0, b, 32) == rfc[k].want, "scalar RFC 3720 vector %d", k);
    CHECK(ndp_crc32c_hw(0, b, 32) == rfc[k].want, "hw RFC 3720 vector %d", k);
  }
  /* a long buffer: the rounds of both lengths against the bytewise definition */
  size_t n = 3 * 4096 * 2 + 3 * 256 + 77;
  uint8_t *big = malloc(n);
  for (size_t i = 0; i < n; i++) big[i] = (uint8_t)(rng() >> 13);
  uint32_t r = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    r ^= big[i];
    for (int j = 0; j < 8; j++) r = (r & 1) ? (r >> 1) ^ 0x82F63B78u : r >> 1;
  }
  CHECK(ndp_crc32c_scalar(0, big, n) == ~r, "scalar vs bitwise definition");
  CHECK(ndp_crc32c_hw(0, big, n) == ~r, "hw vs bitwise definition");
  free(big);
}

static void ragged(void) {
  const size_t cap = 3 * 4096 * 3 + 4096;
  uint8_t *buf = malloc(cap + 16);
  for (size_t i = 0; i < cap + 16; i++) buf[i] = (uint8_t)(rng() >> 7);
  int bad = 0, runs = 0;
  for (int t = 0; t < 3000; t++) {
    size_t off = rng() % 16;
    size_t len;
    switch (t % 4) {                          /* around every boundary of the kernel */
      case 0: len = rng() % 64; break;
      case 1: len = rng() % 2048; break;
      case 2: len = (t & 8 ? 512 : 3 * 256) * (1 + rng() % 4) + rng() % 24 - 12; break;
      default: len = rng() % cap; break;
    }
    if (len > cap) len = cap;
    uint32_t seed = (t & 1) ? (uint32_t)rng() : 0;
    uint32_t a = ndp_crc32c_scalar(seed, buf + off, len);
    size_t cut = len ? rng() % (len + 1) : 0;  /* two pieces give the whole */
    for (int k = NDP_CRC_SSE42; k <= NDP_CRC_FOLD256; k++) {
      if (!ndp_crc32c_has(k)) continue;
      uint32_t b = ndp_crc32c_with(k, seed, buf + off, len);
      uint32_t c = ndp_crc32c_with(k, ndp_crc32c_with(k, seed, buf + off, cut), buf + off + cut,
                                   len - cut);
      bad += (a != b) + (a != c);
      runs++;
      if (a != b || a != c) printf("kernel %d: off %zu len %zu cut %zu\n", k, off, len, cut);
    }
  }
  CHECK(bad == 0, "%d of %d ragged cases differ", bad, runs);
  /* one flipped bit anywhere changes the value */
  size_t len = 20000;
  uint32_t base = ndp_crc32c(0, buf, len);
  int same = 0;
  for (int t = 0; t < 2000; t++) {
    size_t i = rng() % len;
    uint8_t bit = (uint8_t)(1u << (rng() % 8));
    buf[i] ^= bit;
    same += ndp_crc32c(0, buf, len) == base;
    buf[i] ^= bit;
  }
  CHECK(same == 0, "%d single-bit flips kept the checksum", same);
  free(buf);
}

/* crc(A || B) joined from crc(A) and crc(B), at every split of ragged inputs
 * (lengths 0 and past 2^32 bits included). */
static void combine(void) {
  uint8_t buf[3000];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rng();
  int bad = 0;
  for (int t = 0; t < 500; t++) {
    size_t n = rng() % sizeof buf, k = n ? rng() % (n + 1) : 0;
    uint32_t whole = ndp_crc32c(0, buf, n);
    uint32_t a = ndp_crc32c(0, buf, k), b = ndp_crc32c(0, buf + k, n - k);
    bad += ndp_crc32c_combine(a, b, n - k) != whole;
  }
  CHECK(bad == 0, "%d of 500 joined checksums differ", bad);
  CHECK(ndp_crc32c_combine(0x12345678u, 0, 0) == 0x12345678u, "join with an empty piece");
  /* a long run of zeros: crc(A || 0^n) joined == crc continued over the zeros */
  static uint8_t zeros[1 << 20];
  uint32_t a = ndp_crc32c(0, buf, 100);
  CHECK(ndp_crc32c_combine(a, ndp_crc32c(0, zeros, sizeof zeros), sizeof zeros) ==
            ndp_crc32c(a, zeros, sizeof zeros), "join over 1 MiB of zeros");
}

/* ---- --bench ---------------------------------------------------------------- */

static uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint32_t rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
#define P1 0x9E3779B1u
#define P2 0x85EBCA77u
#define P3 0xC2B2AE3Du
#define P4 0x27D4EB2Fu
#define P5 0x165667B1u
static uint32_t xxh32(const uint8_t *p, size_t n, uint32_t seed) {
  const uint8_t *end = p + n;
  uint32_t h;
  if (n >= 16) {
    uint32_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
    for (; end - p >= 16; p += 16) {
      v1 = rotl(v1 + rd32(p) * P2, 13) * P1;
      v2 = rotl(v2 + rd32(p + 4) * P2, 13) * P1;
      v3 = rotl(v3 + rd32(p + 8) * P2, 13) * P1;
      v4 = rotl(v4 + rd32(p + 12) * P2, 13) * P1;
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
  } else {
    h = seed + P5;
  }
  h += (uint32_t)n;
  for (; end - p >= 4; p += 4) h = rotl(h + rd32(p) * P3, 17) * P4;
  for (; p < end; p++) h = rotl(h + *p * P5, 11) * P1;
  h ^= h >> 15;
  h *= P2;
  h ^= h >> 13;
  h *= P3;
  return h ^ (h >> 16);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile uint32_t sink;

static void bench(size_t mib) {
  size_t n = mib << 20;
  uint8_t *buf = malloc(n), *dst = malloc(n);
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)(rng() >> 11);
  memcpy(dst, buf, n);
  printf("xxh32('') = %08x (spec: 02cc5d05)\n", xxh32(buf, 0, 0));
  const char *names[] = {"crc32c sse4.2 (ours, 3 streams)", "crc32c scalar (ours, slice-8)",
                         "crc32 zlib " ZLIB_VERSION, "xxh32 (from the spec)", "memcpy",
                         "crc32c avx512 vpclmul (ours, fold)", "crc32c avx2 vpclmul (ours, fold)"};
  for (int k = 0; k < 7; k++) {
    if (k == 5 && !ndp_crc32c_has(NDP_CRC_FOLD)) continue;
    if (k == 6 && !ndp_crc32c_has(NDP_CRC_FOLD256)) continue;
    double best = 1e9;
    for (int rep = 0; rep < 7; rep++) {
      double t0 = now();
      switch (k) {
        case 0: sink = ndp_crc32c_with(NDP_CRC_SSE42, 0, buf, n); break;
        case 5: sink = ndp_crc32c_with(NDP_CRC_FOLD, 0, buf, n); break;
        case 6: sink = ndp_crc32c_with(NDP_CRC_FOLD256, 0, buf, n); break;
        case 1: sink = ndp_crc32c_scalar(0, buf, n); break;
        case 2: sink = (uint32_t)crc32(0, buf, (uInt)n); break;
        case 3: sink = xxh32(buf, n, 0); break;
        case 4: memcpy(dst, buf, n); sink = dst[n / 2]; break;
      }
      double dt = now() - t0;
      if (dt < best) best = dt;
    }
    printf("%-34s %6.2f GB/s\n", names[k], (double)n / best / 1e9);
  }
  free(buf);
  free(dst);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    bench(argc > 2 ? (size_t)atoi(argv[2]) : 64);
    return 0;
  }
  known_answers();
  ragged();
  combine();
  for (int k = NDP_CRC_SSE42; k <= NDP_CRC_FOLD256; k++)
    if (ndp_crc32c_has(k)) {
      CHECK(ndp_crc32c_with(k, 0, "123456789", 9) == 0xE3069283u, "kernel %d '123456789'", k);
      uint8_t big[4096];
      for (int i = 0; i < 4096; i++) big[i] = (uint8_t)(i * 7 + 3);
      CHECK(ndp_crc32c_with(k, 0, big, 4096) == ndp_crc32c_scalar(0, big, 4096), "kernel %d", k);
    }
  printf("crc32c kernel: %s (hw %d, fold %d, fold256 %d)\n", ndp_crc32c_kernel(),
         ndp_crc32c_hw_available(), ndp_crc32c_has(NDP_CRC_FOLD), ndp_crc32c_has(NDP_CRC_FOLD256));
  return check_summary();
}

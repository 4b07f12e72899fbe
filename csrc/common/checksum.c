/* crc32c (Castagnoli): the scalar reference, the shift operators that join
 * streams, and the choice between the reference and the SSE4.2 kernel.
 *
 * The reference reads 8 bytes per step through eight 256-entry tables ("slicing by
 * 8": table k gives the register contribution of a byte followed by k zero bytes);
 * it runs at ~2 GB/s.  The SSE4.2 kernel (checksum_sse42.c) uses the crc32
 * instruction on three interleaved streams, ~8 bytes per cycle; the folding kernel
 * (checksum_avx512.c, checksum_avx2.c) carry-less multiplications on AVX-512 or AVX2
 * registers.  The fastest
 * kernel the CPU has is used unless the filters' ISA is lowered (NDPACK_ISA,
 * ndpack.codecs.set_isa: "scalar" gives the reference, "sse2" the SSE4.2 streams): all
 * give the same value on every input (csrc/tests/test_checksum.c checks ragged sizes
 * and alignments).
 */
#include <pthread.h>
#include <string.h>

#include "checksum.h"
#include "ndpack.h"
#include "../filters/filters.h"

static uint32_t slice[8][256];
static ndp_crc_shift shifts[2];
static ndp_crc_fold fold;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
static int hw = 0, hw512 = 0, hw256 = 0;

static void init(void);

/* The register after n zero bytes, bytewise (building the shift tables only). */
static uint32_t zeros(uint32_t r, size_t n) {
  for (size_t i = 0; i < n; i++) r = (r >> 8) ^ slice[0][r & 0xff];
  return r;
}

static void build_shift(ndp_crc_shift *s, size_t n) {
  uint32_t basis[32];
  for (int j = 0; j < 32; j++) basis[j] = zeros((uint32_t)1 << j, n);
  for (int k = 0; k < 4; k++)
    for (int b = 0; b < 256; b++) {
      uint32_t v = 0;
      for (int j = 0; j < 8; j++)
        if (b >> j & 1) v ^= basis[8 * k + j];
      s->t[k][b] = v;
    }
}

#if !(defined(__x86_64__) || defined(_M_X64))
uint32_t ndp_crc32c_sse42_raw(uint32_t r, const uint8_t *p, size_t n) {
  return ndp_crc32c_scalar_raw(r, p, n);
}
#endif
#if !(defined(__x86_64__) || defined(_M_X64)) || defined(NDP_NO_CRC_FOLD)
#define HAVE_FOLD 0                  /* no checksum_avx512.c in this build */
uint32_t ndp_crc32c_avx512_raw(uint32_t r, const uint8_t *p, size_t n) {
  return ndp_crc32c_sse42_raw(r, p, n);
}
#else
#define HAVE_FOLD 1
#endif
#if !(defined(__x86_64__) || defined(_M_X64)) || defined(NDP_NO_CRC_FOLD256)
#define HAVE_FOLD256 0               /* no checksum_avx2.c in this build */
uint32_t ndp_crc32c_avx2_raw(uint32_t r, const uint8_t *p, size_t n) {
  return ndp_crc32c_sse42_raw(r, p, n);
}
#else
#define HAVE_FOLD256 1
#endif

/* x^n mod P in the reflected order (bit j is the coefficient of x^(31-j)). */
static uint64_t xpow(int n) {
  uint32_t r = 0x80000000u;                     /* x^0 */
  for (int i = 0; i < n; i++) r = (r >> 1) ^ ((r & 1) ? NDP_CRC32C_POLY : 0);
  return r;
}

static void build_fold(void) {
  const int d[5] = {128, 256, 512, 1024, 2048};
  uint64_t *k[5] = {fold.k128, fold.k256, fold.k512, fold.k1024, fold.k2048};
  for (int i = 0; i < 5; i++) {
    k[i][0] = xpow(d[i] + 31);
    k[i][1] = xpow(d[i] - 33);
  }
}

const ndp_crc_fold *ndp_crc32c_fold(void) {
  init();
  return &fold;
}

static int cpu_fold(void) {
#if HAVE_FOLD && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
         __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
#else
  return 0;
#endif
}

static int cpu_fold256(void) {
#if HAVE_FOLD256 && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq") &&
         __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
#else
  return 0;
#endif
}

static int cpu_sse42(void) {
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
#else
  return 0;
#endif
}

static void build_tables(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ NDP_CRC32C_POLY : c >> 1;
    slice[0][i] = c;
  }
  for (int k = 1; k < 8; k++)
    for (int i = 0; i < 256; i++)
      slice[k][i] = (slice[k - 1][i] >> 8) ^ slice[0][slice[k - 1][i] & 0xff];
  build_shift(&shifts[0], NDP_CRC_LONG);
  build_shift(&shifts[1], NDP_CRC_SHORT);
  build_fold();
  hw = cpu_sse42();
  hw512 = hw && cpu_fold();
  hw256 = hw && cpu_fold256();
}

static void init(void) { pthread_once(&tables_once, build_tables); }

const ndp_crc_shift *ndp_crc32c_shift(int which) {
  init();
  return &shifts[which ? 1 : 0];
}

uint32_t ndp_crc32c_scalar_raw(uint32_t r, const uint8_t *p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    r = (r >> 8) ^ slice[0][(r ^ *p++) & 0xff];
    n--;
  }
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                  (uint32_t)p[3] << 24;
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                  (uint32_t)p[7] << 24;
    lo ^= r;
    r = slice[7][lo & 0xff] ^ slice[6][(lo >> 8) & 0xff] ^ slice[5][(lo >> 16) & 0xff] ^
        slice[4][lo >> 24] ^ slice[3][hi & 0xff] ^ slice[2][(hi >> 8) & 0xff] ^
        slice[1][(hi >> 16) & 0xff] ^ slice[0][hi >> 24];
  }
  while (n--) r = (r >> 8) ^ slice[0][(r ^ *p++) & 0xff];
  return r;
}

uint32_t ndp_crc32c_scalar(uint32_t crc, const void *buf, size_t len) {
  init();
  return ~ndp_crc32c_scalar_raw(~crc, (const uint8_t *)buf, len);
}

int ndp_crc32c_hw_available(void) {
  init();
  return hw;
}

int ndp_crc32c_has(int kernel) {
  init();
  return kernel == NDP_CRC_SCALAR || (kernel == NDP_CRC_SSE42 && hw) ||
         (kernel == NDP_CRC_FOLD && hw512) || (kernel == NDP_CRC_FOLD256 && hw256);
}

uint32_t ndp_crc32c_with(int kernel, uint32_t crc, const void *buf, size_t len) {
  init();
  const uint8_t *p = (const uint8_t *)buf;
  if (kernel == NDP_CRC_FOLD && hw512) return ~ndp_crc32c_avx512_raw(~crc, p, len);
  if (kernel == NDP_CRC_FOLD256 && hw256) return ~ndp_crc32c_avx2_raw(~crc, p, len);
  if (kernel == NDP_CRC_SSE42 && hw) return ~ndp_crc32c_sse42_raw(~crc, p, len);
  return ~ndp_crc32c_scalar_raw(~crc, p, len);
}

uint32_t ndp_crc32c_hw(uint32_t crc, const void *buf, size_t len) {
  init();
  return ndp_crc32c_with(hw512 ? NDP_CRC_FOLD : hw256 ? NDP_CRC_FOLD256 : NDP_CRC_SSE42, crc,
                         buf, len);
}

/* The kernel for the filters' ISA: scalar -> the reference, sse2 -> the SSE4.2
 * streams, avx2 (the top level) -> the best the CPU has (AVX-512 folding, else AVX2
 * folding, else the SSE4.2 streams). */
static int current(void) {
  init();
  int isa = ndp_filters_isa();
  if (isa == NDP_ISA_SCALAR || !hw) return NDP_CRC_SCALAR;
  if (isa != NDP_ISA_AVX2) return NDP_CRC_SSE42;
  return hw512 ? NDP_CRC_FOLD : hw256 ? NDP_CRC_FOLD256 : NDP_CRC_SSE42;
}

uint32_t ndp_crc32c(uint32_t crc, const void *buf, size_t len) {
  return ndp_crc32c_with(current(), crc, buf, len);
}

const char *ndp_crc32c_kernel(void) {
  static const char *const names[] = {"scalar", "sse4.2", "avx512-vpclmul", "avx2-vpclmul"};
  return names[current()];
}

/* ---- joining checksums of consecutive pieces ---- */

/* a * b mod P, both in the reflected order (bit 31 is the coefficient of x^0). */
static uint32_t mulmod(uint32_t a, uint32_t b) {
  uint32_t p = 0;
  for (uint32_t m = 0x80000000u; m; m >>= 1) {
    if (a & m) p ^= b;
    b = (b >> 1) ^ ((b & 1) ? NDP_CRC32C_POLY : 0);
  }
  return p;
}

static uint32_t squares[64];              /* x^(2^k) mod P */
static pthread_once_t squares_once = PTHREAD_ONCE_INIT;

static void build_squares(void) {
  squares[0] = 0x40000000u;                /* x^1 */
  for (int k = 1; k < 64; k++) squares[k] = mulmod(squares[k - 1], squares[k - 1]);
}

/* x^(8 n) mod P, multiplying the squares picked by the bits of 8 n. */
static uint32_t x8n(uint64_t n) {
  pthread_once(&squares_once, build_squares);
  uint32_t r = 0x80000000u;                /* x^0 */
  for (int k = 3; n && k < 64; k++, n >>= 1)
    if (n & 1) r = mulmod(squares[k], r);
  return r;
}

uint32_t ndp_crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2) {
  return mulmod(x8n(len2), crc1) ^ crc2;
}

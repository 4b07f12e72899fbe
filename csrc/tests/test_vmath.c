/* Vector sin/cos: the AVX2 kernel gives the scalar reference's bits on every length
 * (tails included), both stay within 2 ulp of the C library, special values match. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters.h"
#include "math/vmath.h"
#include "ndpack.h"

static int failures = 0;
#define CHECK(c, ...)                        \
  do {                                       \
    if (!(c)) {                              \
      failures++;                            \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);          \
      fputc('\n', stderr);                   \
    }                                        \
  } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static double uniform(double lo, double hi) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static int64_t ulps(double a, double b) {
  int64_t ia, ib;
  memcpy(&ia, &a, 8);
  memcpy(&ib, &b, 8);
  if (ia < 0) ia = INT64_MIN - ia;
  if (ib < 0) ib = INT64_MIN - ib;
  return ia > ib ? ia - ib : ib - ia;
}

int main(void) {
  enum { N = 20011 };
  double *x = malloc(N * sizeof *x), *ys = malloc(N * sizeof *ys), *yv = malloc(N * sizeof *yv);
  const double ranges[][2] = {{-1, 1}, {0, 10}, {-1e3, 1e3}, {-1e5, 1e5}, {1e5, 1e12}};
  int have_avx2 = ndp_cpu_has_isa(NDP_ISA_AVX2) && __builtin_cpu_supports("fma");
  for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
    for (int i = 0; i < N; i++) x[i] = uniform(ranges[r][0], ranges[r][1]);
    for (int c = 0; c < 2; c++) {
      ndp_vm_scalar(x, ys, N, c);
      int64_t worst = 0;
      for (int i = 0; i < N; i++) {
        int64_t u = ulps(ys[i], c ? cos(x[i]) : sin(x[i]));
        if (u > worst) worst = u;
      }
      CHECK(worst <= 2, "range %zu %s: %lld ulp", r, c ? "cos" : "sin", (long long)worst);
      if (!have_avx2) continue;
      for (int n = 0; n < 9; n++) {                     /* every tail length */
        memset(yv, 0, N * sizeof *yv);
        ndp_vm_avx2(x, yv, N - n, c);
        CHECK(memcmp(yv, ys, (size_t)(N - n) * sizeof *yv) == 0,
              "range %zu %s length %d: kernel differs from the reference", r,
              c ? "cos" : "sin", N - n);
      }
    }
  }
  const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e300, -5e-324, 3.141592653589793};
  double out[8];
  for (int c = 0; c < 2; c++) {
    c ? ndp_vcos(sp, out, 8) : ndp_vsin(sp, out, 8);
    for (int i = 0; i < 8; i++) {
      double want = c ? cos(sp[i]) : sin(sp[i]);
      CHECK((isnan(want) && isnan(out[i])) || memcmp(&want, &out[i], 8) == 0 ||
                ulps(want, out[i]) <= 1,
            "special %d %s: %g vs %g", i, c ? "cos" : "sin", out[i], want);
    }
  }
  ndp_vm_scalar(x, ys, N, 0);
  ndp_vsin(x, x, N);                                     /* in place */
  CHECK(memcmp(x, ys, N * sizeof *x) == 0, "in place differs");
  free(x);
  free(ys);
  free(yv);
  if (failures) return 1;
  printf("vmath: ok\n");
  return 0;
}

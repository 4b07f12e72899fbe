/* Vector sin/cos: the AVX2 kernel gives the scalar reference's bits on every length
 * (tails included), both stay within 2 ulp of the C library, special values match. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters.h"
#include "math/vmath.h"
#include "math/vmath_fns.h"
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

/* inputs across every exponent (random bit patterns) and special values, mixed */
static void fill_mixed(double *x, int n) {
  static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 5e-324,
                              -5e-324, 0x1p-1022, 708.0, -709.5, 1e5, 0.5, 22.0, -40.0};
  for (int i = 0; i < n; i++) {
    uint64_t b;
    double u = uniform(0, 1);
    if (u < 0.3) {
      rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
      b = rng_state;
      memcpy(&x[i], &b, 8);
    } else if (u < 0.4) {
      x[i] = sp[(int)(uniform(0, 16)) & 15];
    } else {
      x[i] = uniform(-12, 12);
    }
  }
}

static int same(double a, double b) { return memcmp(&a, &b, 8) == 0 || (isnan(a) && isnan(b)); }

/* every ISA the CPU runs gives the reference's bits: lengths 0..37, in place */
static void check_isas(void) {
  enum { M = 4099 };
  double *a = malloc(M * sizeof *a), *b = malloc(M * sizeof *b);
  double *ref = malloc(M * sizeof *ref), *got = malloc(M * sizeof *got);
  double *cp = malloc(M * sizeof *cp);
  fill_mixed(a, M);
  fill_mixed(b, M);
  for (int isa = 0; isa < NDP_VM_ISA_COUNT; isa++) {
    if (!ndp_vmath_has_isa(isa)) continue;
    for (int fn = 0; fn < NDP_VM_NUNARY + NDP_VM_NBINARY; fn++) {
      int bin = fn >= NDP_VM_NUNARY, f = bin ? fn - NDP_VM_NUNARY : fn;
      for (int n = 0; n <= 38; n++) {
        int len = n == 38 ? M : n;                      /* 0..37 and a long one */
        memset(got, 0x55, M * sizeof *got);
        if (bin) {
          ndp_vm_binary_ref[f](a, b, ref, len);
          CHECK(ndp_vmath_binary(f, a, b, got, len, isa) == 0, "binary %d isa %d", f, isa);
        } else {
          ndp_vm_unary_ref[f](a, ref, len);
          CHECK(ndp_vmath_unary(f, a, got, len, isa) == 0, "unary %d isa %d", f, isa);
        }
        int bad = -1;
        for (int i = 0; i < len && bad < 0; i++)
          if (!same(ref[i], got[i])) bad = i;
        CHECK(bad < 0, "fn %d isa %s length %d: item %d differs (x=%.17g: %.17g vs %.17g)",
              fn, ndp_vmath_isa_name(isa), len, bad, bad < 0 ? 0 : a[bad],
              bad < 0 ? 0 : got[bad], bad < 0 ? 0 : ref[bad]);
        uint64_t past = 0x5555555555555555ULL;
        if (len < M) memcpy(&past, &got[len], 8);
        CHECK(past == 0x5555555555555555ULL, "fn %d wrote past the end", fn);
      }
      if (bin) {                                           /* one b for every a */
        double bs[5] = {1.2, -0.5, 3.0, 0.0, NAN};
        for (int j = 0; j < 5; j++) {
          for (int i = 0; i < M; i++) cp[i] = bs[j];
          ndp_vm_binary_ref[f](a, cp, ref, M);
          for (int n = 0; n <= 38; n++) {
            int len = n == 38 ? M : n;
            CHECK(ndp_vmath_binary_s(f, a, bs[j], got, len, isa) == 0, "binary_s");
            int ok = 1;
            for (int i = 0; i < len; i++) ok &= same(ref[i], got[i]);
            CHECK(ok, "fn %d isa %s b=%g length %d: scalar-b differs", f,
                  ndp_vmath_isa_name(isa), bs[j], len);
          }
        }
      }
      memcpy(cp, a, M * sizeof *cp);                      /* in place: y == x */
      if (bin) {
        ndp_vm_binary_ref[f](a, b, ref, M);
        ndp_vmath_binary(f, cp, b, cp, M, isa);
      } else {
        ndp_vm_unary_ref[f](a, ref, M);
        ndp_vmath_unary(f, cp, cp, M, isa);
      }
      int ok = 1;
      for (int i = 0; i < M; i++) ok &= same(ref[i], cp[i]);
      CHECK(ok, "fn %d isa %s: in place differs", fn, ndp_vmath_isa_name(isa));
    }
  }
  /* libm's values on the special inputs, exactly */
  static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 5e-324, -5e-324, 1e300,
                              -1e300, 710.0, -745.5, -1.0};
  double (*lib[NDP_VM_NUNARY])(double) = {exp, log, expm1, log1p, atan, tanh, sinh, cosh, tan};
  for (int fn = 0; fn < NDP_VM_NUNARY; fn++)
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
      double got1, want = lib[fn](sp[i]);
      ndp_vmath_unary(fn, &sp[i], &got1, 1, -1);
      CHECK(same(got1, want), "fn %d special %g: %.17g vs libm %.17g", fn, sp[i], got1, want);
    }
  for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
    for (size_t j = 0; j < sizeof sp / sizeof sp[0]; j++) {
      int atan2_lane = isfinite(sp[i]) && isfinite(sp[j]) && sp[i] != 0 && sp[j] != 0;
      int pow_lane = sp[i] >= 0x1p-1022 && isfinite(sp[i]) && isfinite(sp[j]) &&
                     fabs(sp[j] * log(sp[i])) <= 64;      /* the kernels' lanes */
      double yy[8], xx[8], out[8], want;
      for (int l = 0; l < 8; l++) yy[l] = sp[i], xx[l] = sp[j];
      if (!atan2_lane) {
        ndp_vmath_binary(NDP_VM_ATAN2, yy, xx, out, 8, -1);
        want = atan2(sp[i], sp[j]);
        CHECK(same(out[7], want), "atan2(%g, %g): %.17g vs %.17g", sp[i], sp[j], out[7], want);
      }
      if (!pow_lane) {
        ndp_vmath_binary(NDP_VM_POWER, yy, xx, out, 8, -1);
        want = pow(sp[i], sp[j]);
        CHECK(same(out[7], want), "pow(%g, %g): %.17g vs %.17g", sp[i], sp[j], out[7], want);
      }
    }
  printf("vmath isas:");
  for (int isa = 0; isa < NDP_VM_ISA_COUNT; isa++)
    if (ndp_vmath_has_isa(isa)) printf(" %s", ndp_vmath_isa_name(isa));
  printf(" (chosen %s)\n", ndp_vmath_isa_name(ndp_vmath_isa()));
  free(a);
  free(b);
  free(ref);
  free(got);
  free(cp);
}

int main(void) {
  check_isas();
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

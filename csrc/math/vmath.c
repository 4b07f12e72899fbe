/* Scalar reference of the vectorized sin/cos (see vmath.h) and the dispatch. */
#include <math.h>

#include "ndpack.h"
#include "vmath.h"
#include "../filters/filters.h"

static double poly_sin(double r, double z) {
  double p = fma(z, NDP_VM_S6, NDP_VM_S5);
  p = fma(z, p, NDP_VM_S4);
  p = fma(z, p, NDP_VM_S3);
  p = fma(z, p, NDP_VM_S2);
  p = fma(z, p, NDP_VM_S1);
  return fma(r * z, p, r);
}

static double poly_cos(double z) {
  double p = fma(z, NDP_VM_C6, NDP_VM_C5);
  p = fma(z, p, NDP_VM_C4);
  p = fma(z, p, NDP_VM_C3);
  p = fma(z, p, NDP_VM_C2);
  p = fma(z, p, NDP_VM_C1);
  double hz = 0.5 * z, w = 1.0 - hz;
  /* w + (the rounding error of 1 - hz) + z^2 p */
  return w + (((1.0 - w) - hz) + (z * z) * p);
}

double ndp_vm_one(double x, int cos_shift) {
  double ax = fabs(x);
  if (!(ax <= NDP_VM_MAX_ARG)) return cos_shift ? cos(x) : sin(x); /* NaN, inf, big */
  if (ax < NDP_VM_TINY) return cos_shift ? 1.0 : x;
  double k = nearbyint(x * NDP_VM_TWO_OVER_PI);
  double r = x - k * NDP_VM_PIO2_HI;
  r = r - k * NDP_VM_PIO2_MID;
  r = r - k * NDP_VM_PIO2_LO;
  double z = r * r;
  int64_t q = (int64_t)k + cos_shift;
  if (!(q & 1) && k != 0.0 && fabs(r) < NDP_VM_RTINY) return cos_shift ? cos(x) : sin(x);
  double res = (q & 1) ? poly_cos(z) : poly_sin(r, z);
  return (q & 2) ? -res : res;
}

void ndp_vm_scalar(const double *x, double *y, int64_t n, int cos_shift) {
  for (int64_t i = 0; i < n; i++) y[i] = ndp_vm_one(x[i], cos_shift);
}

#if !(defined(__x86_64__) || defined(_M_X64))
void ndp_vm_avx2(const double *x, double *y, int64_t n, int cos_shift) {
  ndp_vm_scalar(x, y, n, cos_shift);
}
#endif

static int fma_ok(void) {
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("fma") != 0;
#else
  return 0;
#endif
}

static void vm(const double *x, double *y, int64_t n, int cos_shift) {
  static int fma = -1;
  if (fma < 0) fma = fma_ok();
  if (ndp_filters_isa() == NDP_ISA_AVX2 && fma)
    ndp_vm_avx2(x, y, n, cos_shift);
  else
    ndp_vm_scalar(x, y, n, cos_shift);
}

void ndp_vsin(const double *x, double *y, int64_t n) { vm(x, y, n, 0); }
void ndp_vcos(const double *x, double *y, int64_t n) { vm(x, y, n, 1); }

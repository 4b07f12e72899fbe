/* Scalar reference of the float64 kernels (vmath_fns.h): vmath_body.h at one lane,
 * the C library on the lanes it does not serve; and the choice of ISA. */
#include <pthread.h>
#include <stdlib.h>
#include <strings.h>

#define NDP_VW1 1
#include "vmath_simd.h"
#include "vmath_body.h"
#include "vmath_fns.h"
#include "../filters/filters.h"

#define ONE1(name, libm)                              \
  double ndp_vm1_##name(double x) {                   \
    vm ok;                                            \
    double r = K_##name(x, &ok);                      \
    return ok ? r : libm(x);                          \
  }                                                   \
  static void name##_ref(const double *x, double *y, int64_t n) { \
    for (int64_t i = 0; i < n; i++) y[i] = ndp_vm1_##name(x[i]);  \
  }

/* log of a negative number: NumPy's quiet NaN (positive; glibc's has the sign bit) */
static double log_numpy(double x) { return x < 0 ? (double)NAN : log(x); }

ONE1(exp, exp)
ONE1(log, log_numpy)
ONE1(expm1, expm1)
ONE1(log1p, log1p)
ONE1(atan, atan)
ONE1(tanh, tanh)
ONE1(sinh, sinh)
ONE1(cosh, cosh)
ONE1(tan, tan)

double ndp_vm1_atan2(double y, double x) {
  vm ok;
  double r = K_atan2(y, x, &ok);
  return ok ? r : atan2(y, x);
}

double ndp_vm1_power(double x, double y) {
  vm ok;
  double r = K_power(x, y, &ok);
  return ok ? r : pow(x, y);
}

static void atan2_ref(const double *a, const double *b, double *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = ndp_vm1_atan2(a[i], b[i]);
}
static void power_ref(const double *a, const double *b, double *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = ndp_vm1_power(a[i], b[i]);
}
static void atan2_s_ref(const double *a, double b, double *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = ndp_vm1_atan2(a[i], b);
}
static void power_s_ref(const double *a, double b, double *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = ndp_vm1_power(a[i], b);
}

const ndp_vm_unary_fn ndp_vm_unary_ref[NDP_VM_NUNARY] = {
    exp_ref, log_ref, expm1_ref, log1p_ref, atan_ref, tanh_ref, sinh_ref, cosh_ref, tan_ref};
const ndp_vm_binary_fn ndp_vm_binary_ref[NDP_VM_NBINARY] = {atan2_ref, power_ref};
const ndp_vm_binary_s_fn ndp_vm_binary_s_ref[NDP_VM_NBINARY] = {atan2_s_ref, power_s_ref};

/* ---- choice of ISA ------------------------------------------------------- */

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define NDP_VM_X86 1
#else
#define NDP_VM_X86 0
#endif

#if !NDP_VM_X86 /* no vector builds: the tables are the reference's */
const ndp_vm_unary_fn ndp_vm_unary_x4[NDP_VM_NUNARY] = {
    exp_ref, log_ref, expm1_ref, log1p_ref, atan_ref, tanh_ref, sinh_ref, cosh_ref, tan_ref};
const ndp_vm_binary_fn ndp_vm_binary_x4[NDP_VM_NBINARY] = {atan2_ref, power_ref};
const ndp_vm_binary_s_fn ndp_vm_binary_s_x4[NDP_VM_NBINARY] = {atan2_s_ref, power_s_ref};
#endif
#if !NDP_VM_X86 || defined(NDP_NO_VM_AVX512)
const ndp_vm_unary_fn ndp_vm_unary_x8[NDP_VM_NUNARY] = {
    exp_ref, log_ref, expm1_ref, log1p_ref, atan_ref, tanh_ref, sinh_ref, cosh_ref, tan_ref};
const ndp_vm_binary_fn ndp_vm_binary_x8[NDP_VM_NBINARY] = {atan2_ref, power_ref};
const ndp_vm_binary_s_fn ndp_vm_binary_s_x8[NDP_VM_NBINARY] = {atan2_s_ref, power_s_ref};
#endif

static int has[NDP_VM_ISA_COUNT] = {1, 0, 0};
static int env_cap = NDP_VM_ISA_AVX512; /* NDPACK_ISA=avx2 keeps AVX-512 off */
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect_now(void) {
#if NDP_VM_X86
  __builtin_cpu_init();
  int fma3 = __builtin_cpu_supports("fma") != 0;
  has[NDP_VM_ISA_AVX2] = fma3 && __builtin_cpu_supports("avx2") != 0;
#ifndef NDP_NO_VM_AVX512
  has[NDP_VM_ISA_AVX512] = fma3 && __builtin_cpu_supports("avx512f") != 0;
#endif
#endif
  const char *env = getenv("NDPACK_ISA");
  if (env != NULL && strcasecmp(env, "avx2") == 0) env_cap = NDP_VM_ISA_AVX2;
}

static void detect(void) { pthread_once(&detect_once, detect_now); }

int ndp_vmath_has_isa(int isa) {
  if (isa < 0 || isa >= NDP_VM_ISA_COUNT) return 0;
  detect();
  return has[isa] > 0;
}

int ndp_vmath_isa(void) {
  detect();
  if (ndp_filters_isa() != NDP_ISA_AVX2) return NDP_VM_ISA_SCALAR;
  if (has[2] > 0 && env_cap >= NDP_VM_ISA_AVX512) return NDP_VM_ISA_AVX512;
  return has[1] > 0 ? NDP_VM_ISA_AVX2 : NDP_VM_ISA_SCALAR;
}

const char *ndp_vmath_isa_name(int isa) {
  static const char *const names[NDP_VM_ISA_COUNT] = {"scalar", "avx2", "avx512"};
  return isa >= 0 && isa < NDP_VM_ISA_COUNT ? names[isa] : "?";
}

int ndp_vmath_unary(int fn, const double *x, double *y, int64_t n, int isa) {
  if (fn < 0 || fn >= NDP_VM_NUNARY) return -1;
  if (isa < 0) isa = ndp_vmath_isa();
  else if (!ndp_vmath_has_isa(isa)) return -1;
  const ndp_vm_unary_fn *t = isa == NDP_VM_ISA_AVX512 ? ndp_vm_unary_x8
                             : isa == NDP_VM_ISA_AVX2 ? ndp_vm_unary_x4 : ndp_vm_unary_ref;
  t[fn](x, y, n);
  return 0;
}

int ndp_vmath_binary(int fn, const double *a, const double *b, double *y, int64_t n,
                     int isa) {
  if (fn < 0 || fn >= NDP_VM_NBINARY) return -1;
  if (isa < 0) isa = ndp_vmath_isa();
  else if (!ndp_vmath_has_isa(isa)) return -1;
  const ndp_vm_binary_fn *t = isa == NDP_VM_ISA_AVX512 ? ndp_vm_binary_x8
                              : isa == NDP_VM_ISA_AVX2 ? ndp_vm_binary_x4 : ndp_vm_binary_ref;
  t[fn](a, b, y, n);
  return 0;
}

int ndp_vmath_binary_s(int fn, const double *a, double b, double *y, int64_t n, int isa) {
  if (fn < 0 || fn >= NDP_VM_NBINARY) return -1;
  if (isa < 0) isa = ndp_vmath_isa();
  else if (!ndp_vmath_has_isa(isa)) return -1;
  const ndp_vm_binary_s_fn *t = isa == NDP_VM_ISA_AVX512 ? ndp_vm_binary_s_x8
                                : isa == NDP_VM_ISA_AVX2 ? ndp_vm_binary_s_x4
                                                         : ndp_vm_binary_s_ref;
  t[fn](a, b, y, n);
  return 0;
}
